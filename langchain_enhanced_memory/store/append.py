r"""Writing memory: add one bullet to a daily note or a memory file (``memory_append``).

The only module that writes a note. What it guarantees:

* **Text another program writes is kept.** A bullet that goes at the end of the
  note (a daily note, a new section, the last section: nearly every call) is
  appended in place: ``O_APPEND``, one ``write`` of the whole block, ``fsync``;
  the note is never rewritten, so lines an editor, a sync client or the agent's
  own file tool append at the same moment land before or after the block. A
  bullet inside an earlier section needs a rewrite: the new content goes to a
  temporary file beside the note, and just before the rename the note is read
  again and must be byte-for-byte what the new content was made from (else it
  is read again and the bullet placed again, at most five times, then a
  one-line error). Bytes appended to the old file after that check and before
  the rename returns are copied to the end of the new one. What remains against
  a writer that takes no lock: one that opened the note before the rename and
  writes after the copy (microseconds), or that replaces the whole file (an
  editor's save), can still lose its text or ours; the rewrite is only for an
  earlier section.
* **A long note is not read back.** A note this writer appended to last, its
  inode, size, mtime and ctime unchanged since, gets the bullet at its end from
  its kept outline (:mod:`.outlines`); any other note is read whole.
* **One remember at a time.** Both run under an exclusive ``fcntl`` lock on
  ``memory/.enhanced-memory-notes.lock``; the note is read and written through
  one descriptor opened under it.
* **A kill leaves no torn line.** An append is one ``write`` of the whole
  block; a rewrite is a rename. A rewrite's temporary file
  (``.<name>.XXXXXXXX.tmp``) is deleted on any failure; one a kill left behind
  is deleted by the next write of that note, under the lock. A full disk
  neither: the bytes of a short or failed append are cut off again, and a note
  the failed call created is deleted.
* **A note stays the user's file.** A new note is created with mode ``0666``
  less the umask, as an editor creates it; an existing one keeps its inode,
  owner and mode. A symlink is written through (its target must be a ``.md``
  file inside the workspace, not in a hidden folder), never replaced; a
  hard-linked note, or one whose owner the writer cannot give back, is
  appended to but not rewritten. Anything but a regular file (a FIFO, a
  device) is refused before it is read.
* **The text cannot change the note's structure.** Multi-line text is one
  bullet with indented continuation lines; a line that would start a header, a
  code fence or a setext underline is escaped with ``\``. Lines end as the
  note's do (CRLF stays CRLF). A note that ends inside an open code fence gets
  a closing fence line of the same marker before the bullet.
* **A section is found once.** With ``section``, the bullet goes at the end of
  the first header of that name (any level, letter case ignored, headers in
  fences and front matter do not count); a ``## section`` is added at the end
  the first time.
* **Only memory files.** Today's daily note (``memory/YYYY-MM-DD.md``, created
  with a ``# YYYY-MM-DD`` header) or a ``.md`` file under ``memory/`` (at most
  four folders deep, names up to 200 bytes) or ``MEMORY.md``; paths are checked
  as ``memory_get`` checks them (no ``..``, no absolute paths, no hidden folders,
  no symlink out of the workspace).

A read-only workspace or note (no write permission, or no write bit at all, which
holds even for root) is refused with a one-line :class:`WriteError`.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from datetime import date, datetime
from pathlib import Path
from typing import Any

from ..core.errors import NoteError, WriteError
from ..core.outline import Outline, outline
from ..core.text import clean_text
from .db import writable
from .notefile import (
    ATTEMPTS,
    PATHS,
    append_block,
    edit_note,
    open_note,
    read_all,
    real_target,
    remove_if_empty,
    remove_leftovers,
    replace_note,
)
from .notes import normalize_path
from .outlines import forget_outline, keep_outline, known_outline

__all__ = [
    "NOTES_LOCK",
    "AppendResult",
    "Planned",
    "append_block",
    "append_memory",
    "daily_path",
    "folder_lock",
    "placed",
    "plan",
    "read_all",
    "rewrite_note",
    "target",
    "today",
]

NOTES_LOCK = ".enhanced-memory-notes.lock"  # in memory/: every writer of the notes takes it
_MAX_TEXT = 4000
_MAX_DEPTH = 4  # folders below memory/
_MAX_NAME = 200  # bytes of one file or folder name (the file system allows 255)
_BAD_CHARS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
# A line start that would open a header, a code fence or underline a setext header.
# A tag (#todo) is none of these and stays as it is.
_STRUCTURE = re.compile(r"#{1,6}(?:[ \t]|$)|`{3}|~{3}|[-=]+[ \t]*$")


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


def today(now: datetime | date | None) -> date:
    """The day ``now`` falls on (default: today on the local clock)."""
    return (now.date() if isinstance(now, datetime) else now) or date.today()


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
        section: A header to put the bullet under (matched in any case; ``##``, created once).
        file: A memory file (``memory/topics/x.md`` or ``MEMORY.md``) instead of today's note.
        now: The clock for "today" (default: the current local time).

    Raises:
        WriteError: Empty or oversized text, a path outside the memory files, a
            read-only workspace or note, a file that is not a regular UTF-8 file,
            or a note that kept changing during a rewrite.
    """
    todo = plan(text, section=section, file=file, now=now)
    rel = todo.rel
    root = Path(workspace).expanduser().resolve()
    try:
        real = real_target(root, rel)
        memory = root / "memory"
        if not writable(memory if memory.is_dir() else root):
            raise WriteError(f"the workspace is read-only: cannot write {rel}")
        with folder_lock(memory, NOTES_LOCK):
            remove_leftovers(real)
            fd, created = open_note(real, rel)
            try:
                line, name = _add(fd, real, memory, todo)
            except BaseException:
                if created:  # a failed call leaves no note behind that it made
                    remove_if_empty(fd, real)
                raise
            finally:
                os.close(fd)
    except OSError as exc:
        if exc.errno == errno.EROFS:
            raise WriteError(f"the workspace is read-only: cannot write {rel}") from None
        raise WriteError(f"cannot write {rel}: {exc.strerror or type(exc).__name__}") from None
    return todo.result(line, created, name)


@dataclass(frozen=True)
class Planned:
    """A checked bullet and where it goes (every store of notes places it the same way).

    Attributes:
        rel: The note's workspace-relative path.
        header: What a new (empty) note starts with (a daily note's ``# YYYY-MM-DD``).
        bullet: The bullet's lines.
        heading: The section to put it under, None for the end of the note.
    """

    rel: str
    header: str
    bullet: list[str]
    heading: str | None

    def result(self, line: int, created: bool, name: str | None) -> AppendResult:
        """The answer once the bullet landed at ``line`` (under section ``name``)."""
        return AppendResult(self.rel, line, created, name, "\n".join(self.bullet)[2:])


def plan(
    text: str,
    *,
    section: str | None = None,
    file: str | None = None,
    now: datetime | date | None = None,
) -> Planned:
    """Check ``text``, ``section`` and ``file`` as :func:`append_memory` does, nothing written.

    Raises:
        WriteError: As :func:`append_memory`, for everything but the file system.
    """
    bullet = _bullet(text)
    heading = _section(section)
    day = today(now)
    rel = _target(file) if file is not None else daily_path(day)
    header = f"# {day.isoformat()}\n" if file is None else ""
    return Planned(rel, header, bullet, heading)


def placed(old: str, todo: Planned) -> tuple[str, int, str | None]:
    """The note ``old`` (empty: a new note) with the bullet placed, its line and section.

    The placement :func:`append_memory` makes, as a new text: for a store that
    keeps notes as values (the database's notes), not files.
    """
    old = old or todo.header
    eol, ends, lines = _lines(old)
    end = _at_end(Outline.of(lines), todo.bullet, todo.heading)
    if end is not None:
        block, line, name = end
        return (
            old + (eol if old and not old.endswith("\n") else "") + _joined(block, eol),
            line,
            name,
        )
    offset, line, title = _inside(ends, lines, todo.heading or "")
    return old[:offset] + _joined(todo.bullet, eol) + old[offset:], line, title


def _bullet(text: str) -> list[str]:
    """The bullet's lines: ``- first`` and indented continuation lines, structure escaped."""
    if not isinstance(text, str) or not text.strip():
        raise WriteError("give the text to remember")
    text = clean_text(text)
    if len(text) > _MAX_TEXT:
        raise WriteError(f"the text is {len(text)} characters; at most {_MAX_TEXT} at a time")
    if _BAD_CHARS.search(text):
        raise WriteError("the text contains control characters")
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    lines = ["\\" + line if _STRUCTURE.match(line) else line for line in lines]
    return ["- " + lines[0]] + ["  " + line for line in lines[1:]]


def _section(section: str | None) -> str | None:
    if section is None:
        return None
    name = " ".join(clean_text(str(section)).split()).lstrip("#").strip()
    if not name or _BAD_CHARS.search(name) or len(name) > 200:
        raise WriteError("the section must be a short one-line name, e.g. Decisions")
    return name


def target(file: str) -> str:
    """``file`` as a checked workspace-relative memory file path (as ``--file`` is checked).

    Raises:
        WriteError: A path outside the memory files.
    """
    return _target(file)


def _target(file: str) -> str:
    try:
        rel = normalize_path(file)
    except NoteError as exc:
        raise WriteError(str(exc), PATHS) from None
    parts = rel.split("/")
    shown = rel if len(rel) <= 80 else f"{rel[:60]}...{rel[-16:]}"
    if not (rel == "MEMORY.md" or (parts[0] == "memory" and len(parts) > 1)):
        raise WriteError(f"refused: {rel} is not MEMORY.md or a file under memory/", PATHS)
    if any(p.startswith(".") for p in parts):
        raise WriteError(f"refused: {shown} is in a hidden folder", PATHS)
    if len(parts) - 2 > _MAX_DEPTH:
        raise WriteError(
            f"refused: {shown} is {len(parts) - 2} folders below memory/; at most {_MAX_DEPTH}",
            PATHS,
        )
    if clean_text(rel) != rel:
        raise WriteError(f"refused: {clean_text(shown)} is not a UTF-8 name", PATHS)
    if any(len(p.encode("utf-8")) > _MAX_NAME for p in parts):
        raise WriteError(f"refused: {shown} has a name over {_MAX_NAME} bytes", PATHS)
    return rel


@contextlib.contextmanager
def folder_lock(folder: Path, name: str) -> Iterator[None]:
    """Hold an exclusive ``fcntl`` lock on ``folder/name`` (both made when missing).

    Raises:
        WriteError: The folder cannot be written.
    """
    import fcntl

    try:
        folder.mkdir(parents=True, exist_ok=True)
        fh = open(folder / name, "a+")  # noqa: SIM115 (held for the block)
    except OSError as exc:
        raise WriteError(f"cannot write to {folder.name}/: {exc.strerror or exc}") from None
    with fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _add(fd: int, real: Path, memory: Path, todo: Planned) -> tuple[int, str | None]:
    """Put the bullet into the open note; its 1-based line and the section's name.

    A note this writer appended to last, unchanged since (:mod:`.outlines`), is
    not read: the bullet goes at its end from what is known of it. Otherwise it
    is read whole; ``todo.header`` starts a note that is empty (new, or left
    empty by a kill between its creation and the write).
    """
    known = known_outline(memory, real, os.fstat(fd))
    end = known and _at_end(known[0], todo.bullet, todo.heading)
    if known and end:
        return _append(fd, real, memory, known[0], "", end, known[1])
    rel = todo.rel
    for attempt in range(ATTEMPTS):
        raw = read_all(fd)
        first = "" if raw else todo.header
        try:
            old = first + raw.decode("utf-8")
        except UnicodeDecodeError:
            raise WriteError(f"refused: {rel} is not UTF-8 text; it is left as it is") from None
        eol, ends, lines = _lines(old)
        note = Outline.of(lines)
        end = _at_end(note, todo.bullet, todo.heading)
        if end is not None:
            if os.fstat(fd).st_size != len(raw) and attempt + 1 < ATTEMPTS:
                continue  # it grew since the read: place again against the new end
            return _append(fd, real, memory, note, first, end, eol)
        offset, at, name = _inside(ends, lines, todo.heading or "")
        new = (old[:offset] + _joined(todo.bullet, eol) + old[offset:]).encode("utf-8")
        if replace_note(fd, real, rel, raw, new):
            forget_outline(memory, real)
            return at, name
    raise WriteError(
        f"{rel} kept changing while the bullet was added; nothing was written",
        "try again when the other program has finished writing it",
    )


def _append(
    fd: int,
    real: Path,
    memory: Path,
    note: Outline,
    first: str,
    end: tuple[list[str], int, str | None],
    eol: str,
) -> tuple[int, str | None]:
    """Append the block at the note's end, and keep the note's outline for the next append."""
    block, line, name = end
    data = (first + _joined(block, eol)).encode("utf-8")
    size = os.fstat(fd).st_size
    append_block(fd, data, eol.encode())
    st = os.fstat(fd)
    if st.st_size - size in (len(data), len(data) + len(eol)):  # no one else's bytes in it
        keep_outline(memory, real, st, note.extended(block), eol)
    return line, name


def _lines(old: str) -> tuple[str, list[str], list[str]]:
    r"""The note's line ending, its lines with their ``\r``s and without."""
    eol = "\r\n" if old.find("\n") > 0 and old[old.find("\n") - 1] == "\r" else "\n"
    ends = old.split("\n")
    if ends[-1] == "":
        ends.pop()
    return eol, ends, [end.removesuffix("\r") for end in ends]


def _at_end(
    note: Outline, bullet: list[str], heading: str | None
) -> tuple[list[str], int, str | None] | None:
    """The lines to append for the bullet, its line and section; None: it goes inside."""
    closing = [note.run] if note.run else []  # the note ends inside a fence: close it first
    if heading is not None:
        found = note.first.get(heading.casefold())
        if found is not None:
            if found not in note.open:
                return None  # the first section of that name ends before the note does
            return closing + bullet, note.lines + len(closing) + 1, found[2]
        block = closing + (["", f"## {heading}", ""] if note.lines else [f"## {heading}", ""])
    else:
        # A blank line after a paragraph or header; none within a list (a bullet or its tail).
        block = closing + ([""] if closing or note.gap else [])
    return block + bullet, note.lines + len(block) + 1, heading


def _inside(ends: list[str], lines: list[str], heading: str) -> tuple[int, int, str]:
    """Where a bullet goes in an earlier section: character offset, line, section name."""
    headers, _ = outline(lines)
    key = heading.casefold()
    k, level, title = next((k, h[1], h[2]) for k, h in enumerate(headers) if h[2].casefold() == key)
    end = next(h[0] for h in headers[k + 1 :] if h[1] <= level)
    while not lines[end - 1].strip():
        end -= 1  # after the section's last text, before its trailing blank lines
    return sum(len(e) + 1 for e in ends[:end]), end + 1, title


def _joined(lines: list[str], eol: str) -> str:
    return "".join(line + eol for line in lines)


def rewrite_note(
    workspace: str | Path, rel: str, edit: Callable[[str], str | None], *, create: bool = False
) -> bool:
    """Replace the note ``rel`` by ``edit(its text)``, under the lock ``remember`` takes.

    The note is read, ``edit`` makes the new text (None: nothing to change), and
    the rewrite of a section's bullet replaces it (:func:`.notefile.replace_note`): only if the
    note is still byte for byte what was read, else it is read and edited again
    (up to five times). Bytes another writer appends during the rename are kept.
    With ``create``, a missing note is made (``edit`` reads it as empty).

    Returns:
        Whether the note was rewritten.

    Raises:
        WriteError: A path outside the memory files, a missing, read-only,
            hard-linked, foreign or non-UTF-8 note, or one that kept changing.
    """
    rel = _target(rel)
    root = Path(workspace).expanduser().resolve()
    try:
        real = real_target(root, rel)
        memory = root / "memory"
        if not writable(memory if memory.is_dir() else root):
            raise WriteError(f"the workspace is read-only: cannot write {rel}")
        if not create and not real.is_file():
            raise WriteError(f"no such memory file: {rel}", PATHS)
        with folder_lock(memory, NOTES_LOCK):
            remove_leftovers(real)
            fd, made = open_note(real, rel)
            try:
                return edit_note(fd, real, rel, edit)
            finally:
                if made:
                    remove_if_empty(fd, real)
                os.close(fd)
                forget_outline(memory, real)
    except OSError as exc:
        if exc.errno == errno.EROFS:
            raise WriteError(f"the workspace is read-only: cannot write {rel}") from None
        raise WriteError(f"cannot write {rel}: {exc.strerror or type(exc).__name__}") from None
