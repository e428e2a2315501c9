"""A real full disk under ``remember``, ``index`` and ``search``: whole or absent, never torn.

The workspace lives on a small file system of its own (a 2 MB tmpfs, or a
loop-mounted ext4 image where tmpfs cannot be mounted), filled with a filler
file until a write gets ``ENOSPC``; then a few pages are freed or not. Mounting
needs root: without it, or without either file system, :func:`small_disk`
raises, and the test fails rather than skips.

``remember`` on a full disk must leave the note byte for byte as it was (no
part of the bullet, no new daily note), and with room again write the whole
bullet. ``index`` must fail with one line and keep the previous index, a
``search`` must answer from it with one line saying it could not update it,
and with room again both must catch up.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import sqlite3
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tests.cli_run import run_cli

DAY = "2026-12-09"
#: The bullet of the report that found the torn note: 3,856 bytes.
TEXT = ("disk full check " + "x" * 60 + " ") * 50 + "ending"


@contextlib.contextmanager
def small_disk(where: Path, size_mb: int = 2) -> Iterator[Path]:
    """A fresh file system of ``size_mb`` mounted at ``where`` (unmounted after).

    Raises:
        RuntimeError: Neither a tmpfs nor a loop-mounted image could be mounted.
    """
    where.mkdir(parents=True, exist_ok=True)
    tried = []
    for how in ("tmpfs", "loop"):
        if how == "tmpfs":
            cmd = ["mount", "-t", "tmpfs", "-o", f"size={size_mb}m,mode=0755", "tmpfs", str(where)]
        else:
            image = where.with_name(where.name + ".img")
            with open(image, "wb") as fh:
                fh.truncate(size_mb << 20)
            made = subprocess.run(
                ["mkfs.ext4", "-q", "-F", "-m", "0", str(image)], capture_output=True, text=True
            )
            if made.returncode:
                tried.append(f"mkfs.ext4: {made.stderr.strip()}")
                continue
            cmd = ["mount", "-o", "loop", str(image), str(where)]
        try:
            r = subprocess.run(cmd, capture_output=True, text=True)
        except OSError as exc:
            tried.append(f"{how}: {exc}")
            continue
        if r.returncode == 0:
            break
        tried.append(f"{how}: {r.stderr.strip() or r.returncode}")
    else:
        raise RuntimeError(
            "cannot mount a small file system to fill (the full-disk tests need root): "
            + "; ".join(tried)
        )
    try:
        yield where
    finally:
        subprocess.run(["umount", str(where)], check=True)


def fill(disk: Path, leave: int = 0) -> None:
    """Fill ``disk`` until a write fails, then free ``leave`` bytes (whole blocks)."""
    filler = disk / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        block = b"\0" * 4096
        while True:
            try:
                os.write(fd, block)
            except OSError as exc:
                if exc.errno != errno.ENOSPC:
                    raise
                break
        with contextlib.suppress(OSError):  # the last bytes that fit
            while os.write(fd, b"\0"):
                pass
    finally:
        os.close(fd)
    if leave:
        size = filler.stat().st_size
        os.truncate(filler, max(0, size - leave))


def unfill(disk: Path) -> None:
    """Give back the room the filler took."""
    (disk / "filler").unlink(missing_ok=True)


@dataclass
class FullDiskReport:
    """What was tried on a full disk and what held."""

    remembers: int = 0  # `remember` calls on a full disk
    remembers_held: int = 0  # note unchanged, no file left, one line, exit 2
    remembers_after: int = 0  # the same call with room again: the whole bullet
    indexes: int = 0  # `index` + `search` on a full disk after an edit
    indexes_held: int = 0  # one-line failure, search answers from the last index, then catches up
    problems: list[str] = field(default_factory=list)


def _one_line_failure(r: subprocess.CompletedProcess[str]) -> str | None:
    """Why ``r`` is not a one-line failure with exit 2, or None."""
    if r.returncode != 2:
        return f"exit {r.returncode}: {r.stderr.strip()[:200]}"
    if "Traceback" in r.stderr or r.stderr.count("\n") != 1:
        return f"not one line: {r.stderr.strip()[:300]}"
    return None


def remember_on_a_full_disk(disk: Path, report: FullDiskReport, slack: int) -> None:
    """``remember`` into an existing note and into a new daily note, the disk full.

    ``slack``: bytes of the note's last page left free (a short write fills them);
    under the bullet's 3,859 bytes, else it fits.
    """
    ws = disk / "ws"
    shutil.rmtree(ws, ignore_errors=True)
    unfill(disk)
    note = ws / "memory" / "notes.md"
    note.parent.mkdir(parents=True)
    # A note whose last page has `slack` bytes free: a short write lands there first.
    body = "# Notes\n\n" + "".join(f"- line {n} of the note\n" for n in range(400))
    body += "y" * ((4096 - slack - 1 - len(body.encode())) % 4096) + "\n"
    note.write_text(body, encoding="utf-8")
    before = note.read_bytes()
    fill(disk)
    for args, rel in (
        (["--file", "memory/notes.md"], "memory/notes.md"),
        ([], f"memory/{DAY}.md"),
    ):
        report.remembers += 1
        r = run_cli("remember", TEXT, "--workspace", str(ws), "--now", DAY, *args)
        why = _one_line_failure(r)
        if why is not None:
            report.problems.append(f"remember {rel} (slack {slack}): {why}")
            continue
        if note.read_bytes() != before:
            tail = note.read_bytes()[len(before) :]
            report.problems.append(f"{rel} (slack {slack}): changed, {len(tail)} bytes added")
            continue
        daily = ws / rel
        if rel != "memory/notes.md" and daily.exists():
            report.problems.append(f"{rel} (slack {slack}): left behind")
            continue
        report.remembers_held += 1
    unfill(disk)
    r = run_cli("remember", TEXT, "--workspace", str(ws), "--now", DAY, "--file", "memory/notes.md")
    after = note.read_bytes()
    if r.returncode == 0 and after.startswith(before) and after.endswith(f"- {TEXT}\n".encode()):
        report.remembers_after += 1
    else:
        report.problems.append(f"with room again (slack {slack}): {r.stderr.strip()[:200]}")


def index_on_a_full_disk(disk: Path, report: FullDiskReport, leave: int) -> None:
    """An edit, then ``index`` and ``search`` with ``leave`` bytes free, then with room again."""
    ws = disk / "ws"
    shutil.rmtree(ws, ignore_errors=True)
    unfill(disk)
    (ws / "memory").mkdir(parents=True)
    (ws / "MEMORY.md").write_text("# Memory\n\n- the harbour project uses Postgres\n")
    for n in range(20):
        (ws / "memory" / f"2026-11-{n + 1:02d}.md").write_text(
            f"# 2026-11-{n + 1:02d}\n\n" + "".join(f"- note {n}.{k} about lighthouse {k * n}\n"
                                                   for k in range(60))
        )  # fmt: skip
    env = {"ENHANCED_MEMORY_EMBEDDER": "none"}
    r = run_cli("index", "--workspace", str(ws), **env)
    if r.returncode:
        report.problems.append(f"first index: {r.stderr.strip()[:200]}")
        return
    report.indexes += 1
    # An edit big enough that its sync needs room: a new note of fresh words.
    (ws / "memory" / f"{DAY}.md").write_text(
        f"# {DAY}\n\n" + "".join(f"- zeppelin {n} manifest {n * 7}\n" for n in range(2000))
    )
    fill(disk, leave)
    problems = []
    r = run_cli("index", "--workspace", str(ws), **env)
    if r.returncode == 0:
        problems.append(f"index with {leave} bytes free went through")  # too much room
    elif (why := _one_line_failure(r)) is not None or "no space left" not in r.stderr:
        problems.append(f"index with {leave} bytes free: {why or r.stderr.strip()[:200]}")
    r = run_cli("search", "harbour project", "--workspace", str(ws), **env)
    said = [line for line in r.stderr.splitlines() if not line.startswith("embedder:")]
    if (
        r.returncode
        or "MEMORY.md" not in r.stdout
        or len(said) != 1
        or "cannot update" not in said[0]
    ):
        problems.append(f"search with {leave} bytes free: exit {r.returncode}: {r.stderr[:300]}")
    unfill(disk)
    r = run_cli("search", "zeppelin manifest", "--workspace", str(ws), **env)
    if r.returncode or f"memory/{DAY}.md" not in r.stdout or r.stderr.count("cannot update"):
        problems.append(f"search with room again: {r.stderr.strip()[:200]}")
    r = run_cli("index", "--workspace", str(ws), **env)
    if r.returncode:
        problems.append(f"index with room again: {r.stderr.strip()[:200]}")
    with contextlib.closing(sqlite3.connect(ws / ".enhanced-memory" / "index.sqlite")) as conn:
        check = conn.execute("PRAGMA integrity_check").fetchone()[0]
    if check != "ok":
        problems.append(f"integrity after a full disk ({leave} bytes free): {check}")
    if list((ws / ".enhanced-memory").glob("index.sqlite.*")):
        problems.append(f"the index was set aside ({leave} bytes free)")
    report.problems += problems
    report.indexes_held += not problems
