"""Kills around the writes of a database scope: the writer, or the PostgreSQL server itself.

A publish (``index --database``) or an append (``remember --database``) runs in a
child process (tests/reliability/db_driver.py) and is SIGKILLed, or the server is,
at one of three moments:

* ``inside the transaction``: the child has written (segments, files) and waits for
  a note row this harness holds locked: killed there, it never commits;
* ``at a random moment`` of its run;
* ``server killed``: the postmaster and its children SIGKILLed at a random moment,
  then started again (crash recovery).

After each kill the scope must be exactly the previous generation or exactly the
new one: every chunk of the snapshot quotes the lines of one version of its file,
that file's stored note is that version, no segment is left that no file names,
and a note holds each appended bullet whole or not at all. Then the next write
must go through. Shared by the fast tests (tests/integration_tests/test_database_faults.py)
and the slow campaign in tests/reliability.
"""

from __future__ import annotations

import itertools
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import psycopg

from langchain_enhanced_memory.store.database import Database
from tests.postgres import PgServer
from tests.reliability.db_driver import MODEL
from tests.reliability.harness import Workspace

MODES = ("inside the transaction", "at a random moment", "server killed")
_APP = "em-kill-target"  # the child's application_name, to find its backend


@dataclass
class DbKillReport:
    """What a campaign did and found."""

    kills: int = 0
    survived: int = 0  # kills after which the scope was one whole generation
    landed: int = 0  # kills that came after the commit (the new generation was there)
    full_run_s: float = 0.0
    final_ok: bool = False
    phases: dict[str, int] = field(default_factory=lambda: dict.fromkeys(MODES, 0))
    problems: list[str] = field(default_factory=list)


_made = itertools.count()


def _fresh_name(what: str) -> str:
    return f"{what}_{os.getpid()}_{next(_made)}"


def _driver(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.reliability.db_driver", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PGAPPNAME": _APP},
    )


def _finish(proc: subprocess.Popen[str], secret: str) -> tuple[int, str, list[str]]:
    """Wait for ``proc``: its exit status, stdout, and problems with what it printed."""
    out, err = proc.communicate(timeout=300)
    problems = [
        f"the password in the writer's output: {line}"
        for line in (out + err).splitlines()
        if secret in line
    ]
    return proc.returncode, out, problems


def _wait_blocked(server: PgServer, database: str, proc: subprocess.Popen[str]) -> bool:
    """Wait until the child's backend waits for a lock this harness holds (False: it ended)."""
    with server.connect(database) as conn:
        while proc.poll() is None:
            row = conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s"
                " AND wait_event_type = 'Lock'",
                (_APP,),
            ).fetchone()
            if row and row[0]:
                return True
            time.sleep(0.01)
    return False


def _kill(
    mode: str,
    proc: subprocess.Popen[str],
    server: PgServer,
    database: str,
    lock_sql: str,
    lock_args: tuple[str, ...],
    rng: random.Random,
    full_s: float,
) -> bool:
    """Kill ``proc`` (or the server) at the moment ``mode`` names; False if it ended first."""
    if mode == "inside the transaction":
        with server.connect(database, autocommit=False) as holder:
            holder.execute(lock_sql, lock_args)
            if not _wait_blocked(server, database, proc):
                return False
            proc.send_signal(signal.SIGKILL)
            proc.wait()
        return True
    time.sleep(rng.uniform(0.2, 1.0) * full_s)
    if proc.poll() is not None:
        return False
    if mode == "at a random moment":
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    else:
        server.kill()
        server.start()
    return True


def scope_problems(url: str, scope: str, expected: dict[str, list[str]]) -> list[str]:
    """What differs between the scope's committed state and ``expected`` (path -> lines).

    Every chunk of the snapshot must quote its note's lines, every note be stored
    as expected, every file be there, and no segment be left that no file names.
    """
    problems: list[str] = []
    with Database.connect(url) as db:
        snap = db.snapshot(scope, MODEL)
        notes = {path: note_lines(db, scope, path) for path in expected}
    for path, lines in expected.items():
        if notes[path] != lines:
            problems.append(f"{scope}: note {path} is not the expected version")
    for i in range(len(snap)):
        path, start, end = snap.paths[i], int(snap.start[i]), int(snap.end[i])
        lines = expected.get(path)
        if lines is None:
            problems.append(f"{scope}: a chunk of {path}, which the scope should not hold")
        elif "\n".join(lines[start - 1 : end]) != snap.texts[i]:
            problems.append(f"{scope}: chunk {path}:{start}-{end} quotes no line of its version")
    missing = set(expected) - set(snap.paths)
    if missing:
        problems.append(f"{scope}: no chunk of {sorted(missing)[:3]}")
    if snap.vectors is None:
        problems.append(f"{scope}: the snapshot has no vectors")
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT count(*) FROM em_segments s WHERE s.scope = %s AND NOT EXISTS"
            " (SELECT 1 FROM em_files f WHERE f.scope = s.scope AND f.segment = s.id)",
            (scope,),
        ).fetchone()
    if row and row[0]:
        problems.append(f"{scope}: {row[0]} segments no file names")
    return problems


def note_lines(db: Database, scope: str, path: str) -> list[str]:
    """The lines of a note of ``scope`` as stored (``get``)."""
    return db.read(scope, path).text.splitlines()


def _generation(url: str, scope: str) -> int:
    with Database.connect(url) as db:
        return db.generations([scope]).get(scope, 0)


def publish_kills(
    root: Path, server: PgServer, kills: int, modes: Sequence[str] = MODES, seed: int = 31
) -> DbKillReport:
    """Publish a 20-file workspace again and again, 3 files changed each time, killed each time."""
    rng = random.Random(seed)
    report = DbKillReport()
    database = _fresh_name("publish_kills")
    url = server.create_database(database)
    wsp = Workspace(root / "ws", files=20, sections=24)

    def lines_of(current: dict[str, int]) -> dict[str, list[str]]:
        return {rel: wsp.versions[rel][v] for rel, v in current.items()}

    started = time.monotonic()
    code, _, problems = _finish(_driver("publish", url, "alpha", str(wsp.root)), server.password)
    report.full_run_s = time.monotonic() - started
    report.problems += problems
    if code != 0:
        report.problems.append("the first publish failed")
        return report
    published, generation = dict(wsp.current), _generation(url, "alpha")
    for n in range(kills * 4):
        if report.kills == kills:
            break
        mode = min(modes, key=lambda m: report.phases[m])  # the moment killed least so far
        before = dict(wsp.current)
        wsp.modify(rng, 3)
        changed = sorted(rel for rel in wsp.current if wsp.current[rel] != before[rel])
        proc = _driver("publish", url, "alpha", str(wsp.root))
        killed = _kill(
            mode,
            proc,
            server,
            database,
            "SELECT 1 FROM em_notes WHERE scope = 'alpha' AND path = %s FOR UPDATE",
            (changed[0],),
            rng,
            report.full_run_s,
        )
        code, _, problems = _finish(proc, server.password)
        report.problems += problems
        if not killed:  # it ended before the kill: no kill
            if code == 0:
                published, generation = dict(wsp.current), _generation(url, "alpha")
            continue
        report.kills += 1
        report.phases[mode] += 1
        now = _generation(url, "alpha")
        # Generations only grow (a killed write may have drawn a number it never used).
        if now > generation:
            report.landed += 1
            published, generation = dict(wsp.current), now
        elif now != generation:
            report.problems.append(f"kill {n}: generation {now} after {generation}")
            continue
        found = scope_problems(url, "alpha", lines_of(published))
        report.problems += [f"kill {n} ({mode}): {p}" for p in found]
        report.survived += not found
    code, _, problems = _finish(_driver("publish", url, "alpha", str(wsp.root)), server.password)
    report.problems += problems
    found = scope_problems(url, "alpha", lines_of(dict(wsp.current)))
    report.problems += [f"after the kills: {p}" for p in found]
    report.final_ok = code == 0 and not found
    server.drop_database(database)
    return report


def append_kills(
    server: PgServer, kills: int, modes: Sequence[str] = MODES, seed: int = 37
) -> DbKillReport:
    """Append two-line bullets to a database-backed scope's note, each writer killed."""
    rng = random.Random(seed)
    report = DbKillReport()
    database = _fresh_name("append_kills")
    url = server.create_database(database)
    started = time.monotonic()
    code, out, problems = _finish(_driver("append", url, "team", "first line"), server.password)
    report.full_run_s = time.monotonic() - started
    report.problems += problems
    if code != 0:
        report.problems.append("the first append failed")
        return report
    with Database.connect(url) as db:
        (note,) = {p for p in db.snapshot("team", MODEL).paths}
        expected = note_lines(db, "team", note)
    for n in range(kills * 4):
        if report.kills == kills:
            break
        mode = min(modes, key=lambda m: report.phases[m])  # the moment killed least so far
        proc = _driver("append", url, "team", f"kill {n} first\nkill {n} second")
        killed = _kill(
            mode,
            proc,
            server,
            database,
            "SELECT 1 FROM em_notes WHERE scope = 'team' AND path = %s FOR UPDATE",
            (note,),
            rng,
            report.full_run_s,
        )
        code, _, problems = _finish(proc, server.password)
        report.problems += problems
        bullet = [f"- kill {n} first", f"  kill {n} second"]
        with Database.connect(url) as db:
            lines = note_lines(db, "team", note)
        mine = [line for line in lines if f"kill {n} " in line]
        if not killed:
            expected += bullet if code == 0 else []
            continue
        report.kills += 1
        report.phases[mode] += 1
        if mine == bullet:
            report.landed += 1
            expected += bullet
        elif mine:
            report.problems.append(f"kill {n} ({mode}): part of the bullet: {mine}")
            continue
        found = (
            []
            if sorted(filter(None, lines)) == sorted(filter(None, expected))
            else ["the note's lines changed beyond the bullet"]
        )
        found += scope_problems(url, "team", {note: lines})
        report.problems += [f"kill {n} ({mode}): {p}" for p in found]
        report.survived += not found
    code, _, problems = _finish(_driver("append", url, "team", "after the kills"), server.password)
    report.problems += problems
    with Database.connect(url) as db:
        lines = note_lines(db, "team", note)
    found = scope_problems(url, "team", {note: lines})
    report.problems += [f"after the kills: {p}" for p in found]
    report.final_ok = code == 0 and "- after the kills" in lines and not found
    server.drop_database(database)
    return report
