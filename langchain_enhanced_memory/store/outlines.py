"""What the note writer knows of a note's end between two writes, so it need not read it again.

``memory/.enhanced-memory-outlines.json`` (``0600``: it names headers) maps a
note's real path to the :class:`..core.outline.Outline` of its text and the
stamp (device, inode, size, mtime, ctime) it had right after the writer's last
append. The next append uses it only while the note's stamp is exactly that,
else it reads the note whole, as before. A rename, an edit that changes the
size, or any write in a later timestamp tick shows; a same-size write in place
within the same tick of a filesystem with coarse timestamps does not (the
outline is then used as if the note were unchanged). The writer holds the
notes' lock throughout; a rewrite (``forget``, a bullet inside an earlier
section) or a deleted item drops the note's entry, an entry whose note is gone
or changed is dropped at the next write (its headers with it), and a damaged or
missing file is only a cache miss.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

from ..core.outline import Outline

__all__ = ["forget_outline", "known_outline", "keep_outline"]

_NAME = ".enhanced-memory-outlines.json"
_KEEP = 64  # notes remembered (the ones written last)


def _stamp(st: os.stat_result) -> list[int]:
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def _load(folder: Path) -> dict[str, list]:
    with contextlib.suppress(OSError, ValueError):
        data = json.loads((folder / _NAME).read_text(encoding="utf-8"))
        if isinstance(data, dict):
            return data
    return {}


def known_outline(folder: Path, real: Path, st: os.stat_result) -> tuple[Outline, str] | None:
    """The note's outline and line ending, when it is still exactly as the writer left it."""
    entry = _load(folder).get(str(real))
    try:
        stamp, eol, text = entry  # type: ignore[misc]
    except (TypeError, ValueError):
        return None
    if stamp != _stamp(st) or eol not in ("\n", "\r\n"):
        forget_outline(folder, real)  # changed since: no use, and its headers go
        return None
    note = Outline.loads(text)
    return (note, eol) if note is not None and note.front else None


def keep_outline(folder: Path, real: Path, st: os.stat_result, note: Outline, eol: str) -> None:
    """Remember the note's outline at stamp ``st`` (best effort: a failure is a later miss)."""
    _store(folder, str(real), [_stamp(st), eol, note.dumps()])


def forget_outline(folder: Path, real: Path) -> None:
    """Drop the note's entry (it was rewritten)."""
    if str(real) in _load(folder):
        _store(folder, str(real), None)


def _current(key: str, entry: object) -> bool:
    """Whether ``entry`` still describes the note at ``key`` (no note, no entry)."""
    try:
        return isinstance(entry, list) and entry[0] == _stamp(os.stat(key))
    except (OSError, IndexError):
        return False


def _store(folder: Path, key: str, entry: list | None) -> None:
    notes = {k: v for k, v in _load(folder).items() if _current(k, v)}
    notes.pop(key, None)
    if entry is not None:
        notes[key] = entry  # last: the newest
    kept = dict(list(notes.items())[-_KEEP:])
    tmp = folder / f"{_NAME}.{os.getpid()}.tmp"
    with contextlib.suppress(OSError):
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(kept, fh)
        os.replace(tmp, folder / _NAME)
    with contextlib.suppress(OSError):
        tmp.unlink()
