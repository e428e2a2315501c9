"""``remember`` beside a plain appender, and killed mid-write: nothing may be lost or torn.

The appender stands for an editor, the agent's own file tool or a sync client: it
takes no lock and appends a line with ``open(..., "a")`` and one ``write``, over
and over, until every ``remember`` has finished (and at least ``min_lines``
times). Afterwards every line of both must be in the note exactly once. Shared by
the fast test in ``tests/integration_tests/test_remember.py`` and the slow round
in ``tests/reliability`` that ``benchmarks/reliability.py`` reports.
"""

from __future__ import annotations

import fcntl
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from tests.cli_run import CLI, cli_env

DAY = "2026-12-09"

# Appends `- editor line N` until the stop file exists and at least MIN lines are written.
_APPENDER = """
import os, sys, time
note, stop, least = sys.argv[1], sys.argv[2], int(sys.argv[3])
n = 0
while n < least or not os.path.exists(stop):
    with open(note, "a", encoding="utf-8") as fh:
        fh.write(f"- editor line {n}\\n")
    n += 1
    time.sleep(0.002)
print(n)
"""


@dataclass
class WritersReport:
    """What the rounds wrote and what the note held afterwards."""

    rounds: int = 0
    remembered: int = 0  # lines `remember` reported written
    appended: int = 0  # lines the plain appender wrote
    lost: int = 0  # lines of either missing from the note
    doubled: int = 0  # lines of either there more than once
    problems: list[str] = field(default_factory=list)


def writers_round(ws: Path, report: WritersReport, rememberers: int, min_lines: int) -> None:
    """One round on a fresh daily note in ``ws``: ``rememberers`` processes and the appender."""
    note = ws / "memory" / f"{DAY}.md"
    note.parent.mkdir(parents=True, exist_ok=True)
    note.write_text(f"# {DAY}\n\n- first line\n", encoding="utf-8")
    stop = ws / "stop-appending"
    appender = subprocess.Popen(
        [sys.executable, "-c", _APPENDER, str(note), str(stop), str(min_lines)],
        stdout=subprocess.PIPE,
        text=True,
    )
    procs = [
        subprocess.Popen(
            [
                *CLI,
                "remember",
                "--workspace",
                str(ws),
                "--now",
                f"{DAY}T10:00",
                f"tool line {n}",
                *(["--section", "Log"] if n % 2 else []),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=cli_env(),
        )  # fmt: skip
        for n in range(rememberers)
    ]
    wrote = []
    for n, p in enumerate(procs):
        _, err = p.communicate(timeout=300)
        if p.returncode == 0:
            wrote.append(f"- tool line {n}")
        else:
            report.problems.append(f"round {report.rounds}: remember {n} failed: {err.strip()}")
    stop.touch()
    out, _ = appender.communicate(timeout=300)
    stop.unlink()
    appended = [f"- editor line {i}" for i in range(int(out))]
    counts = Counter(note.read_text(encoding="utf-8").splitlines())
    for line in wrote + appended:
        if counts[line] != 1:
            report.problems.append(f"round {report.rounds}: {line!r} is there {counts[line]}x")
    report.lost += sum(1 for line in wrote + appended if counts[line] == 0)
    report.doubled += sum(1 for line in wrote + appended if counts[line] > 1)
    leftovers = [p.name for p in note.parent.iterdir() if p.name.endswith(".tmp")]
    if leftovers:
        report.problems.append(f"round {report.rounds}: temporary files left: {leftovers}")
    report.rounds += 1
    report.remembered += len(wrote)
    report.appended += len(appended)


def concurrent_writers(
    root: Path, rounds: int = 1, rememberers: int = 10, min_lines: int = 100
) -> WritersReport:
    """``rounds`` rounds of :func:`writers_round`, each in a fresh workspace under ``root``."""
    report = WritersReport()
    for r in range(rounds):
        writers_round(root / f"ws{r}", report, rememberers, min_lines)
    return report


@dataclass
class RememberKillReport:
    """SIGKILLs of ``remember`` and what the note held after each."""

    kills: int = 0  # processes killed while still running
    landed: int = 0  # of those, how many had written their bullet
    survived: int = 0  # notes holding only whole bullets afterwards
    problems: list[str] = field(default_factory=list)


def remember_kills(root: Path, kills: int = 30, seed: int = 11) -> RememberKillReport:
    """SIGKILL ``remember``, half appending, half rewriting a section.

    Half the kills land as soon as the process holds the notes lock (reading or
    writing the note), the rest at a random moment.

    After each kill the note must hold its old lines and, per call, the whole
    two-line bullet or none of it; after the next ``remember`` of the note no
    temporary file may be left.
    """
    rng = random.Random(seed)
    report = RememberKillReport()
    ws = root / "ws"
    note = ws / "memory" / f"{DAY}.md"
    note.parent.mkdir(parents=True)
    note.write_text(f"# {DAY}\n\n## Plans\n\n- plan\n\n## Log\n\n- first line\n", encoding="utf-8")
    expected = note.read_text(encoding="utf-8").splitlines()
    for n in range(kills * 3):
        if report.kills == kills:
            break
        section = ["--section", "Plans"] if n % 2 else []
        proc = subprocess.Popen(
            [*CLI, "remember", "--workspace", str(ws), "--now", f"{DAY}T10:00",
             f"kill {n} first\nkill {n} second", *section],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=cli_env(),
        )  # fmt: skip
        if n % 4 < 2:
            _until_it_holds_the_lock(proc, note.parent / ".enhanced-memory-notes.lock")
        else:
            time.sleep(rng.uniform(0.05, 0.8))
        bullet = [f"- kill {n} first", f"  kill {n} second"]
        if proc.poll() is not None:  # finished before the kill: not a kill
            expected += bullet if proc.returncode == 0 else []
            continue
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        report.kills += 1
        lines = note.read_text(encoding="utf-8").splitlines()
        mine = [line for line in lines if f"kill {n} " in line]
        if mine == bullet:
            report.landed += 1
            expected += bullet
        elif mine:
            report.problems.append(f"kill {n}: part of the bullet: {mine}")
            continue
        if sorted(filter(None, lines)) == sorted(filter(None, expected)):
            report.survived += 1
        else:
            report.problems.append(f"kill {n}: the note's lines changed beyond the bullet")
    r = subprocess.run(
        [*CLI, "remember", "--workspace", str(ws), "--now", f"{DAY}T10:00", "after the kills",
         "--section", "Plans"],
        capture_output=True, text=True, env=cli_env(), timeout=120,
    )  # fmt: skip
    if r.returncode != 0:
        report.problems.append(f"remember after the kills failed: {r.stderr.strip()}")
    leftovers = [p.name for p in note.parent.iterdir() if p.name.endswith(".tmp")]
    if leftovers:
        report.problems.append(f"temporary files left after the next remember: {leftovers}")
    return report


def _until_it_holds_the_lock(proc: subprocess.Popen[bytes], lock: Path) -> None:
    """Return as soon as ``proc`` holds the notes lock (it is writing), or has ended."""
    while proc.poll() is None:
        with open(lock, "a+") as fh:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return
            fcntl.flock(fh, fcntl.LOCK_UN)
