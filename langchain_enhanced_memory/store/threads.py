"""Writing a conversation thread as a transcript: ``sessions/<thread id>.jsonl``.

A thread (what a LangGraph checkpointer holds for one ``thread_id``) is kept as
a plain chat JSONL transcript, one ``{"id", "role", "content", "timestamp",
"name"?}`` object a line, that the index reads like any other transcript.
What it guarantees:

* **Appends only.** The file is opened with ``O_APPEND`` and the new lines go in
  one ``write`` and an ``fsync``; nothing written before, by this module or by
  another program, is ever rewritten.
* **Each message once.** A message is known by its ``id``; one without an id by
  its place in the thread (``#0``, ``#1``, ...), so a caller that saves the
  whole thread after every turn appends only the new turns. Two savers of one
  thread are serialised by an ``fcntl`` lock on the folder's
  ``.enhanced-memory-sessions.lock``.
* **Only a transcript in the folder.** A thread id is a file name (letters,
  digits, ``.``, ``_``, ``-``, ``:``; not starting with ``.``; at most 200
  characters); the file must be a regular file, never a symlink.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..core.errors import WriteError
from ..core.text import clean_text
from ..core.transcripts import TRANSCRIPT_SUFFIX
from .append import append_block, folder_lock, read_all

__all__ = ["append_thread", "thread_file"]

_LOCK_NAME = ".enhanced-memory-sessions.lock"
_THREAD_ID = re.compile(r"[A-Za-z0-9_:-][A-Za-z0-9._:-]{0,199}")


def thread_file(folder: Path, thread_id: str) -> Path:
    """The transcript of ``thread_id`` in ``folder``.

    Raises:
        WriteError: The thread id is not a safe file name.
    """
    if not isinstance(thread_id, str) or not _THREAD_ID.fullmatch(thread_id):
        raise WriteError(
            f"refused: thread id {thread_id!r} is not a file name",
            "use letters, digits, '.', '_', '-' or ':' (not starting with '.'; at most 200)",
        )
    return folder / f"{thread_id}{TRANSCRIPT_SUFFIX}"


def append_thread(folder: Path, thread_id: str, records: Sequence[dict[str, Any]]) -> int:
    """Append the records not yet in ``thread_id``'s transcript; how many were appended.

    Args:
        folder: The transcript folder (made when missing).
        thread_id: The thread (the file's name without ``.jsonl``).
        records: The thread's messages in order, each a JSON object with ``role``
            and ``content``; one with an ``id`` is written once by it, one without
            by its place in ``records``.

    Raises:
        WriteError: A bad thread id, a transcript that is not a regular file, or
            the folder cannot be written.
    """
    path = thread_file(folder, thread_id)
    keyed = [{**r, "id": clean_text(str(r.get("id") or f"#{i}"))} for i, r in enumerate(records)]
    with folder_lock(folder, _LOCK_NAME):
        fd = _open(path)
        try:
            seen = _ids(read_all(fd))
            new = []
            for record in keyed:
                if record["id"] not in seen:
                    seen.add(record["id"])
                    new.append(clean_text(json.dumps(record, ensure_ascii=False)) + "\n")
            if new:
                append_block(fd, "".join(new).encode("utf-8"), b"\n")
            return len(new)
        finally:
            os.close(fd)


def _ids(raw: bytes) -> set[str]:
    """The ids of the messages a transcript holds (other lines are left as they are)."""
    ids = set()
    for line in raw.splitlines():
        with contextlib.suppress(ValueError):
            obj = json.loads(line)
            if isinstance(obj, dict) and isinstance(obj.get("id"), str):
                ids.add(clean_text(obj["id"]))
    return ids


def _open(path: Path) -> int:
    """The transcript opened for reading and appending (created with mode 0666 less the umask)."""
    flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(path, flags, 0o666)
    except PermissionError:
        raise WriteError(f"{path} is read-only: nothing was written") from None
    except OSError as exc:
        if exc.errno not in (errno.ELOOP, errno.ENXIO, errno.EISDIR):
            raise WriteError(f"cannot write {path}: {exc.strerror or exc}") from None
        raise WriteError(f"refused: {path} is not a regular file") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise WriteError(f"refused: {path} is not a regular file")
    return fd
