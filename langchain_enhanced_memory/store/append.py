"""Writing memory: append one bullet to a daily note or a memory file (``memory_append``).

The only module that writes a note. What it guarantees:

* **Never loses text.** The new file content is the old content with one block
  inserted; it is written to a temporary file beside the target, flushed to
  disk and renamed over it, so a crash leaves the old file or the new one,
  never a truncated one. A file that is not UTF-8 text is refused, not rewritten.
* **One writer at a time.** The read-modify-write runs under an exclusive
  ``fcntl`` lock on ``memory/.enhanced-memory-notes.lock``, so two concurrent
  writers both land, one after the other.
* **Only memory files.** The target is today's daily note
  (``memory/YYYY-MM-DD.md``, created with a ``# YYYY-MM-DD`` header) or a
  ``.md`` file under ``memory/`` or ``MEMORY.md``; paths are checked as
  ``memory_get`` checks them (no ``..``, no absolute paths, no hidden folders,
  no symlink out of the workspace).
* **A section is created once.** With ``section``, the bullet goes at the end
  of the section of that name (a header of any level), and a ``## section`` is
  appended the first time.

A read-only workspace or file (no write permission, or no write bit at all, which
holds even for root) is refused with a one-line :class:`WriteError`.
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from datetime import date, datetime
from pathlib import Path
from typing import Any

from ..core.errors import NoteError, WriteError
from .db import writable
from .notes import normalize_path
from .workspace import places

__all__ = ["AppendResult", "append_memory", "daily_path"]

_LOCK_NAME = ".enhanced-memory-notes.lock"
_MAX_TEXT = 4000
_BAD_CHARS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_HEADER = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


@dataclass
class AppendResult:
    """Where the new bullet landed (``line`` is 1-based)."""

    path: str
    line: int
    created: bool
    section: str | None
    text: str

    def as_dict(self) -> dict[str, Any]:
        """JSON form (``{path, line, created, section, text}``)."""
        return asdict(self)


def daily_path(day: date) -> str:
    """The daily note of ``day``: ``memory/YYYY-MM-DD.md``."""
    return f"memory/{day.isoformat()}.md"


def append_memory(
    workspace: str | Path,
    text: str,
    *,
    section: str | None = None,
    file: str | None = None,
    now: datetime | date | None = None,
) -> AppendResult:
    """Append ``text`` as a bullet to today's daily note, or to ``file``.

    Args:
        workspace: The workspace root.
        text: What to remember (one or more lines; continuation lines are indented).
        section: A ``##`` header to put the bullet under (created once).
        file: A memory file (``memory/topics/x.md`` or ``MEMORY.md``) instead of today's note.
        now: The clock for "today" (default: the current local time).

    Raises:
        WriteError: Empty or oversized text, a path outside the memory files, a
            read-only workspace or file, or a file that is not UTF-8 text.
    """
    bullet = _bullet(text)
    heading = _section(section)
    today = (now.date() if isinstance(now, datetime) else now) or date.today()
    root = Path(workspace).expanduser().resolve()
    rel = _target(file) if file is not None else daily_path(today)
    target = root / rel
    _check_inside(root, target, rel)
    memory = root / "memory"
    if not writable(memory if memory.is_dir() else root) or (
        target.exists() and not writable(target)
    ):
        raise WriteError(f"the workspace is read-only: cannot write {rel}")
    with _locked(memory):
        old = _read(target, rel)
        created = old is None
        if old is None:
            old = f"# {today.isoformat()}\n" if file is None else ""
        new, line = _insert(old, bullet, heading)
        _replace(target, new, rel)
    return AppendResult(rel, line, created, heading, bullet[2:])


def _bullet(text: str) -> str:
    if not isinstance(text, str) or not text.strip():
        raise WriteError("give the text to remember")
    if len(text) > _MAX_TEXT:
        raise WriteError(f"the text is {len(text)} characters; at most {_MAX_TEXT} at a time")
    if _BAD_CHARS.search(text):
        raise WriteError("the text contains control characters")
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return "- " + "\n  ".join(lines)


def _section(section: str | None) -> str | None:
    if section is None:
        return None
    name = " ".join(str(section).split()).lstrip("#").strip()
    if not name or _BAD_CHARS.search(name) or len(name) > 200:
        raise WriteError("the section must be a short one-line name, e.g. Decisions")
    return name


def _target(file: str) -> str:
    try:
        rel = normalize_path(file)
    except NoteError as exc:
        raise WriteError(str(exc)) from None
    parts = rel.split("/")
    if not (rel == "MEMORY.md" or (parts[0] == "memory" and len(parts) > 1)):
        raise WriteError(f"refused: {rel} is not MEMORY.md or a file under memory/")
    if any(p.startswith(".") for p in parts):
        raise WriteError(f"refused: {rel} is in a hidden folder")
    return rel


def _check_inside(root: Path, target: Path, rel: str) -> None:
    # A symlinked folder or file must not carry the write out of the workspace's places.
    if not places(root, warn=False).holds(target):
        raise WriteError(f"refused: {rel} leads outside the workspace")


def _read(target: Path, rel: str) -> str | None:
    try:
        raw = target.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise WriteError(f"cannot read {rel}: {exc.strerror or exc}") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise WriteError(f"refused: {rel} is not UTF-8 text; it is left as it is") from None


def _insert(old: str, bullet: str, heading: str | None) -> tuple[str, int]:
    """``old`` with the bullet added, and the bullet's 1-based line."""
    body = old if not old or old.endswith("\n") else old + "\n"
    lines = body.split("\n")[:-1]
    if heading is not None:
        at = _section_end(lines, heading)
        if at is not None:
            while at > 0 and not lines[at - 1].strip():
                at -= 1  # after the section's last text, before its trailing blank lines
            new_lines = lines[:at] + bullet.split("\n") + lines[at:]
            return "\n".join(new_lines) + "\n", at + 1
        block = ["", f"## {heading}", ""] if lines else [f"## {heading}", ""]
    else:
        block = [""] if lines and lines[-1].strip() and not lines[-1].startswith("- ") else []
    block += bullet.split("\n")
    return "\n".join(lines + block) + "\n", len(lines) + len(block) - bullet.count("\n")


def _section_end(lines: list[str], heading: str) -> int | None:
    """Index just past the section headed ``heading`` (any level), or None when there is none.

    The section ends at the next header of the same or a higher level.
    """
    for start, line in enumerate(lines):
        m = _HEADER.match(line)
        if m and m[2].strip() == heading:
            level = len(m[1])
            for i in range(start + 1, len(lines)):
                n = _HEADER.match(lines[i])
                if n and len(n[1]) <= level:
                    return i
            return len(lines)
    return None


@contextlib.contextmanager
def _locked(memory: Path) -> Iterator[None]:
    import fcntl

    try:
        memory.mkdir(parents=True, exist_ok=True)
        fh = open(memory / _LOCK_NAME, "a+")  # noqa: SIM115 (held for the block)
    except OSError as exc:
        raise WriteError(f"cannot write to {memory.name}/: {exc.strerror or exc}") from None
    with fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _replace(target: Path, text: str, rel: str) -> None:
    """Write ``text`` to a temporary file beside ``target``, then rename it over ``target``."""
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        mode = target.stat().st_mode & 0o777 if target.exists() else 0o644
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as exc:
        raise WriteError(f"cannot write {rel}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise WriteError(f"cannot write {rel}: {exc.strerror or exc}") from None
