"""``remember`` processes and a plain appender writing one note at once: nothing may be lost.

The appender stands for an editor, the agent's own file tool or a sync client: it
takes no lock and appends a line with ``open(..., "a")`` and one ``write``, over
and over, until every ``remember`` has finished (and at least ``min_lines``
times). Afterwards every line of both must be in the note exactly once. Shared by
the fast test in ``tests/integration_tests/test_remember.py`` and the slow round
in ``tests/reliability`` that ``benchmarks/reliability.py`` reports.
"""

from __future__ import annotations

import subprocess
import sys
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
