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
import stat
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from datetime import date, datetime
from pathlib import Path
from typing import Any

from ..core.chunking import outline
from ..core.errors import NoteError, WriteError
from ..core.text import clean_text
from .db import writable
from .notes import normalize_path
from .workspace import places

__all__ = [
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

_LOCK_NAME = ".enhanced-memory-notes.lock"
_MAX_TEXT = 4000
_MAX_DEPTH = 4  # folders below memory/
_MAX_NAME = 200  # bytes of one file or folder name (the file system allows 255)
_ATTEMPTS = 5  # reads of a note that keeps changing under a rewrite
_BAD_CHARS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
# A line start that would open a header, a code fence or underline a setext header.
# A tag (#todo) is none of these and stays as it is.
_STRUCTURE = re.compile(r"#{1,6}(?:[ \t]|$)|`{3}|~{3}|[-=]+[ \t]*$")
_RANDOM = re.compile(r"[a-z0-9_]{8}")  # the part tempfile.mkstemp makes up
_PATHS = "give MEMORY.md or a .md file under memory/, e.g. memory/topics/people.md"


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
    rel, bullet, heading = todo.rel, todo.bullet, todo.heading
    root = Path(workspace).expanduser().resolve()
    try:
        real = _real_target(root, rel)
        memory = root / "memory"
        if not writable(memory if memory.is_dir() else root):
            raise WriteError(f"the workspace is read-only: cannot write {rel}")
        with folder_lock(memory, _LOCK_NAME):
            _remove_leftovers(real)
            fd, created = _open(real, rel)
            try:
                line, name = _add(fd, real, rel, todo.header, bullet, heading)
            except BaseException:
                if created:  # a failed call leaves no note behind that it made
                    _remove_if_empty(fd, real)
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
    offset, block, line, name = _place(old, todo.bullet, todo.heading)
    if offset is None:
        eol = "\r\n" if "\r\n" in block else "\n"
        return old + (eol if old and not old.endswith("\n") else "") + block, line, name
    return old[:offset] + block + old[offset:], line, name


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
        raise WriteError(str(exc), _PATHS) from None
    parts = rel.split("/")
    shown = rel if len(rel) <= 80 else f"{rel[:60]}...{rel[-16:]}"
    if not (rel == "MEMORY.md" or (parts[0] == "memory" and len(parts) > 1)):
        raise WriteError(f"refused: {rel} is not MEMORY.md or a file under memory/", _PATHS)
    if any(p.startswith(".") for p in parts):
        raise WriteError(f"refused: {shown} is in a hidden folder", _PATHS)
    if len(parts) - 2 > _MAX_DEPTH:
        raise WriteError(
            f"refused: {shown} is {len(parts) - 2} folders below memory/; at most {_MAX_DEPTH}",
            _PATHS,
        )
    if clean_text(rel) != rel:
        raise WriteError(f"refused: {clean_text(shown)} is not a UTF-8 name", _PATHS)
    if any(len(p.encode("utf-8")) > _MAX_NAME for p in parts):
        raise WriteError(f"refused: {shown} has a name over {_MAX_NAME} bytes", _PATHS)
    return rel


def _real_target(root: Path, rel: str) -> Path:
    """The file a write of ``rel`` lands in: links followed, still a memory file of ``root``.

    A followed ``memory/`` link or top-level note link (``workspace.places``) counts as inside.
    """
    real = (root / rel).resolve()
    where = places(root, warn=False)
    if not where.holds(real):
        raise WriteError(f"refused: {rel} leads outside the workspace", _PATHS)
    if where.memory is not None and real.is_relative_to(where.memory):
        real_rel = f"memory/{real.relative_to(where.memory).as_posix()}"
    elif real.is_relative_to(where.root):
        real_rel = real.relative_to(where.root).as_posix()
    else:
        real_rel = real.name  # a top-level note link's target
    if real_rel != rel and (
        not real_rel.lower().endswith(".md") or any(p.startswith(".") for p in real_rel.split("/"))
    ):
        raise WriteError(
            f"refused: {rel} links to {real_rel}, which is not a markdown note", _PATHS
        )
    return real


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


def _remove_leftovers(real: Path) -> None:
    """Delete the temporary files a killed rewrite of this note left (the lock is held)."""
    prefix = f".{real.name}."
    with contextlib.suppress(FileNotFoundError), os.scandir(real.parent) as entries:
        for entry in entries:
            name = entry.name
            if (
                name.startswith(prefix)
                and name.endswith(".tmp")
                and _RANDOM.fullmatch(name[len(prefix) : -4])
                and entry.is_file(follow_symlinks=False)
            ):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(entry.path)


def _open(real: Path, rel: str) -> tuple[int, bool]:
    """The note opened for reading and appending, and whether this call created it.

    A new note gets mode 0666 less the umask. Refused: a note without write
    permission, anything but a regular file (checked before any read, so a FIFO
    cannot block), a symlink put in the resolved path's place.
    """
    flags = os.O_RDWR | os.O_APPEND | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC
    while True:
        try:
            fd = os.open(real, flags)
            created = False
        except FileNotFoundError:
            real.parent.mkdir(parents=True, exist_ok=True)
            try:
                fd = os.open(real, flags | os.O_CREAT | os.O_EXCL, 0o666)
                created = True
            except FileExistsError:  # another writer made it meanwhile: open theirs
                continue
        except PermissionError:
            raise WriteError(f"{rel} is read-only: nothing was written", _writable(rel)) from None
        except OSError as exc:
            if exc.errno not in (errno.ELOOP, errno.ENXIO, errno.EISDIR):
                raise
            raise WriteError(f"refused: {rel} is not a regular file", _PATHS) from None
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            os.close(fd)
            raise WriteError(f"refused: {rel} is not a regular file", _PATHS)
        if not st.st_mode & 0o222:  # root may open it, but the user marked it read-only
            os.close(fd)
            raise WriteError(f"{rel} is read-only: nothing was written", _writable(rel))
        return fd, created


def _writable(rel: str) -> str:
    return f"make it writable (chmod u+w {rel}) or remember it in another file"


def _add(
    fd: int, real: Path, rel: str, header: str, bullet: list[str], heading: str | None
) -> tuple[int, str | None]:
    """Put the bullet into the open note; its 1-based line and the section's name.

    ``header`` starts a note that is empty (new, or left empty by a kill between
    its creation and the write).
    """
    for attempt in range(_ATTEMPTS):
        raw = read_all(fd)
        first = "" if raw else header
        try:
            old = first + raw.decode("utf-8")
        except UnicodeDecodeError:
            raise WriteError(f"refused: {rel} is not UTF-8 text; it is left as it is") from None
        offset, block, line, name = _place(old, bullet, heading)
        if offset is None:
            if os.fstat(fd).st_size != len(raw) and attempt + 1 < _ATTEMPTS:
                continue  # it grew since the read: place again against the new end
            append_block(fd, (first + block).encode("utf-8"), b"\r\n" if "\r\n" in block else b"\n")
            return line, name
        new = (old[:offset] + block + old[offset:]).encode("utf-8")
        if _rewrite(fd, real, rel, raw, new):
            return line, name
    raise WriteError(
        f"{rel} kept changing while the bullet was added; nothing was written",
        "try again when the other program has finished writing it",
    )


def read_all(fd: int) -> bytes:
    """The whole file behind ``fd``, read from its start (its offset left where it was)."""
    chunks, pos = [], 0
    while chunk := os.pread(fd, max(os.fstat(fd).st_size - pos, 1 << 16), pos):
        chunks.append(chunk)
        pos += len(chunk)
    return b"".join(chunks)


def _place(
    old: str, bullet: list[str], heading: str | None
) -> tuple[int | None, str, int, str | None]:
    """Where the bullet goes in ``old``: ``(offset, block, line, section name)``.

    ``offset`` None: ``block`` is appended at the end (after a line end when the
    note lacks one); otherwise it is inserted at that character offset.
    """
    eol = "\r\n" if old.find("\n") > 0 and old[old.find("\n") - 1] == "\r" else "\n"
    ends = old.split("\n")
    if ends[-1] == "":
        ends.pop()
    lines = [end.removesuffix("\r") for end in ends]
    headers, fence = outline(lines)
    closing = [fence] if fence else []  # the note ends inside a fence: close it first
    if heading is not None:
        key = heading.casefold()
        for k, (_, level, title) in enumerate(headers):
            if title.casefold() != key:
                continue
            end = next((h[0] for h in headers[k + 1 :] if h[1] <= level), len(lines))
            if end == len(lines):
                block = closing + bullet
                return None, _joined(block, eol), len(lines) + len(closing) + 1, title
            while not lines[end - 1].strip():
                end -= 1  # after the section's last text, before its trailing blank lines
            offset = sum(len(e) + 1 for e in ends[:end])
            return offset, _joined(bullet, eol), end + 1, title
        block = closing + (["", f"## {heading}", ""] if lines else [f"## {heading}", ""])
    else:
        last = (closing or lines or [""])[-1]
        # A blank line after a paragraph or header; none within a list (a bullet or its tail).
        block = closing + ([""] if last.strip() and not last.startswith(("- ", "  ")) else [])
    return None, _joined(block + bullet, eol), len(lines) + len(block) + 1, heading


def _joined(lines: list[str], eol: str) -> str:
    return "".join(line + eol for line in lines)


def append_block(fd: int, data: bytes, eol: bytes) -> None:
    """Append ``data`` with one ``write``, after a line end when the note lacks one.

    A write that fails or falls short (a full disk), or an ``fsync`` that fails,
    takes back the bytes that landed, so the note holds the whole block or none
    of it; unless another program appended after them meanwhile: its text stays.
    """
    size = os.fstat(fd).st_size
    if size and os.pread(fd, 1, size - 1) != b"\n":
        data = eol + data
    view = memoryview(data)
    start = end = -1  # where this call's bytes lie (``O_APPEND``: at the end of each write)
    try:
        while view:
            n = os.write(fd, view)
            end = os.lseek(fd, 0, os.SEEK_CUR)
            start = end - n if start < 0 else start
            view = view[n:]
        os.fsync(fd)
    except OSError:
        if start >= 0 and os.fstat(fd).st_size == end == start + len(data) - len(view):
            os.ftruncate(fd, start)
        raise


def _remove_if_empty(fd: int, real: Path) -> None:
    """Delete the note this call created, still empty and still at ``real`` (best effort)."""
    with contextlib.suppress(OSError):
        st, now = os.fstat(fd), os.stat(real, follow_symlinks=False)
        if st.st_size == 0 and (st.st_dev, st.st_ino) == (now.st_dev, now.st_ino):
            os.unlink(real)


def _write_all(fd: int, data: bytes) -> None:
    """Write and flush ``data``: one ``write`` for a regular file (the loop covers a short one)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
    os.fsync(fd)


def _rewrite(fd: int, real: Path, rel: str, raw: bytes, new: bytes) -> bool:
    """Replace the note by ``new`` if it still holds exactly ``raw``; False when it changed."""
    st = os.fstat(fd)
    if st.st_nlink > 1:
        raise WriteError(
            f"refused: {rel} has other hard links, and a bullet inside an earlier section"
            " would replace it and split them",
            "leave out --section, or name the last section, to append at the end",
        )
    tmp_fd, tmp = tempfile.mkstemp(prefix=f".{real.name}.", suffix=".tmp", dir=real.parent)
    renamed = False
    try:
        made = os.fstat(tmp_fd)
        if (made.st_uid, made.st_gid) != (st.st_uid, st.st_gid):
            try:  # root writing another user's note: the note stays theirs
                os.fchown(tmp_fd, st.st_uid, st.st_gid)
            except PermissionError:
                raise WriteError(
                    f"refused: {rel} belongs to another user, and a bullet inside an earlier"
                    " section would replace it with a file of yours",
                    "leave out --section, or name the last section, to append at the end",
                ) from None
        os.fchmod(tmp_fd, stat.S_IMODE(st.st_mode))
        _write_all(tmp_fd, new)
        if os.fstat(fd).st_size != len(raw) or read_all(fd) != raw:
            return False
        os.replace(tmp, real)
        renamed = True
    finally:
        os.close(tmp_fd)
        if not renamed:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
    # Appended to the old file by a writer without the lock since the check: keep it.
    late = read_all(fd)[len(raw) :]
    if late:
        out = os.open(real, os.O_RDWR | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            append_block(out, late, b"\n")
        finally:
            os.close(out)
    folder = os.open(real.parent, os.O_RDONLY | os.O_CLOEXEC)
    try:
        os.fsync(folder)  # the rename itself survives a crash
    finally:
        os.close(folder)
    return True


def rewrite_note(
    workspace: str | Path, rel: str, edit: Callable[[str], str | None], *, create: bool = False
) -> bool:
    """Replace the note ``rel`` by ``edit(its text)``, under the lock ``remember`` takes.

    The note is read, ``edit`` makes the new text (None: nothing to change), and
    the rewrite of a section's bullet replaces it (:func:`_rewrite`): only if the
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
        real = _real_target(root, rel)
        memory = root / "memory"
        if not writable(memory if memory.is_dir() else root):
            raise WriteError(f"the workspace is read-only: cannot write {rel}")
        if not create and not real.is_file():
            raise WriteError(f"no such memory file: {rel}", _PATHS)
        with folder_lock(memory, _LOCK_NAME):
            _remove_leftovers(real)
            fd, made = _open(real, rel)
            try:
                return _edit(fd, real, rel, edit)
            finally:
                if made:
                    _remove_if_empty(fd, real)
                os.close(fd)
    except OSError as exc:
        if exc.errno == errno.EROFS:
            raise WriteError(f"the workspace is read-only: cannot write {rel}") from None
        raise WriteError(f"cannot write {rel}: {exc.strerror or type(exc).__name__}") from None


def _edit(fd: int, real: Path, rel: str, edit: Callable[[str], str | None]) -> bool:
    """:func:`rewrite_note`'s loop on the open note (the lock held)."""
    st = os.fstat(fd)
    if st.st_nlink > 1:
        raise WriteError(
            f"refused: {rel} has other hard links, and a rewrite would split them",
            "edit it by hand, or remove the other links first",
        )
    if st.st_uid != os.geteuid() and os.geteuid() != 0:
        raise WriteError(
            f"refused: {rel} belongs to another user, and a rewrite would make it yours",
            "run this as its owner",
        )
    for _ in range(_ATTEMPTS):
        raw = read_all(fd)
        try:
            new = edit(raw.decode("utf-8"))
        except UnicodeDecodeError:
            raise WriteError(f"refused: {rel} is not UTF-8 text; it is left as it is") from None
        if new is None:
            return False
        if _rewrite(fd, real, rel, raw, new.encode("utf-8")):
            return True
    raise WriteError(
        f"{rel} kept changing while it was rewritten; nothing was changed",
        "try again when the other program has finished writing it",
    )
