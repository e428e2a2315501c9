"""A note file as the writer opens, appends to and replaces it (see :mod:`.append`).

The checks on where a write lands (links followed, still a memory file), the
note opened once under the lock (a regular file, writable, created ``0666``
less the umask), an append of one block that a failure takes back, and the
replacement of a note by rename only while it is byte for byte what was read.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path

from ..core.errors import WriteError
from .workspace import places

__all__ = [
    "ATTEMPTS",
    "PATHS",
    "append_block",
    "edit_note",
    "open_note",
    "read_all",
    "real_target",
    "remove_if_empty",
    "remove_leftovers",
    "replace_note",
]

ATTEMPTS = 5  # reads of a note that keeps changing under a rewrite
PATHS = "give MEMORY.md or a .md file under memory/, e.g. memory/topics/people.md"
_RANDOM = re.compile(r"[a-z0-9_]{8}")  # the part tempfile.mkstemp makes up


def real_target(root: Path, rel: str) -> Path:
    """The file a write of ``rel`` lands in: links followed, still a memory file of ``root``.

    A followed ``memory/`` link or top-level note link (``workspace.places``) counts as inside.
    """
    real = (root / rel).resolve()
    where = places(root, warn=False)
    if not where.holds(real):
        raise WriteError(f"refused: {rel} leads outside the workspace", PATHS)
    if where.memory is not None and real.is_relative_to(where.memory):
        real_rel = f"memory/{real.relative_to(where.memory).as_posix()}"
    elif real.is_relative_to(where.root):
        real_rel = real.relative_to(where.root).as_posix()
    else:
        real_rel = real.name  # a top-level note link's target
    if real_rel != rel and (
        not real_rel.lower().endswith(".md") or any(p.startswith(".") for p in real_rel.split("/"))
    ):
        raise WriteError(f"refused: {rel} links to {real_rel}, which is not a markdown note", PATHS)
    return real


def remove_leftovers(real: Path) -> None:
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


def open_note(real: Path, rel: str) -> tuple[int, bool]:
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
            raise WriteError(f"refused: {rel} is not a regular file", PATHS) from None
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            os.close(fd)
            raise WriteError(f"refused: {rel} is not a regular file", PATHS)
        if not st.st_mode & 0o222:  # root may open it, but the user marked it read-only
            os.close(fd)
            raise WriteError(f"{rel} is read-only: nothing was written", _writable(rel))
        return fd, created


def _writable(rel: str) -> str:
    return f"make it writable (chmod u+w {rel}) or remember it in another file"


def read_all(fd: int) -> bytes:
    """The whole file behind ``fd``, read from its start (its offset left where it was)."""
    chunks, pos = [], 0
    while chunk := os.pread(fd, max(os.fstat(fd).st_size - pos, 1 << 16), pos):
        chunks.append(chunk)
        pos += len(chunk)
    return b"".join(chunks)


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


def remove_if_empty(fd: int, real: Path) -> None:
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


def replace_note(fd: int, real: Path, rel: str, raw: bytes, new: bytes) -> bool:
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


def edit_note(fd: int, real: Path, rel: str, edit: Callable[[str], str | None]) -> bool:
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
    for _ in range(ATTEMPTS):
        raw = read_all(fd)
        try:
            new = edit(raw.decode("utf-8"))
        except UnicodeDecodeError:
            raise WriteError(f"refused: {rel} is not UTF-8 text; it is left as it is") from None
        if new is None:
            return False
        if replace_note(fd, real, rel, raw, new.encode("utf-8")):
            return True
    raise WriteError(
        f"{rel} kept changing while it was rewritten; nothing was changed",
        "try again when the other program has finished writing it",
    )
