"""Query and access logs, in the original skill's file formats.

Every search appends ``{query, top_score, timestamp, results, embedder}`` to
``query_log.json`` (a JSON list, newest last, capped at
``settings.logs.query_log_max`` entries) and adds one to ``access_log.json``
(``{path: count}``) for each distinct file it returned; ``get`` counts an
access too. These are the files the original ``memory_salience.py`` reads and
nothing in the original wrote, so its "accesses" and "gap" signals never
fired; :mod:`.salience` reads them here.

Where: in the workspace's private folder (:func:`.db.index_folder`:
``.enhanced-memory/``, or the cache folder of a read-only workspace), beside
the index and as private as it (folder 0700, files 0600, whatever the umask):
the queries are the user's words, and the notes may be private. Never among the
notes. Logs an earlier version kept in ``memory/`` are moved there by the next
write (their entries first, the counts added up); until then the readers read
both, so no history is lost. One that cannot be removed (immutable, another
user's) is left there and still read, not merged in again on every write.

Why files and not the index: the formats stay readable by the original's
scripts and by a human, and deleting the index never loses the history
(``.enhanced-memory/index.sqlite`` is the index; the logs beside it are kept).

Off the request path: a search queues its entry and returns; the process's
writer thread writes what has queued once the searches pause (``FLUSH_DELAY_S``), in one
read-modify-write per file for the whole batch, and whatever is left is written
at exit. The readers here flush this process's queue first, so a search is in
the log its own process reads next.

Safety: a read-modify-write runs under an exclusive ``fcntl`` lock on
``logs.lock`` in the same folder and each file is replaced atomically
(temporary file, ``os.replace``; no fsync: a crash loses at most the last
batch, never the file), so two processes searching at once lose no entry. A
file that is not valid JSON is set aside (``*.corrupt-<time>``) and started
afresh.

Switching off: ``MemorySettings(log_queries=False)`` or env ``ENHANCED_MEMORY_LOG=0``.
A read-only workspace (no write bit on ``memory/``, which even root honours
here) is not logged unless ``ENHANCED_MEMORY_LOG=1`` forces it. Logging never
fails a search: errors are logged at warning level (a full disk, which the
search says already, at debug level) and ignored.
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import json
import logging
import os
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator
from datetime import date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.text import clean_text
from . import process
from .db import index_folder
from .locations import make_private, open_private, writable

if TYPE_CHECKING:
    from ..core.results import SearchResponse
    from ..core.settings import MemorySettings

__all__ = [
    "ACCESS_LOG",
    "FLUSH_DELAY_S",
    "QUERY_LOG",
    "flush",
    "forget_queries",
    "log_path",
    "logging_enabled",
    "read_access_log",
    "read_query_log",
    "record_access",
    "record_search",
]

log = logging.getLogger("langchain_enhanced_memory")

QUERY_LOG = "query_log.json"
ACCESS_LOG = "access_log.json"
_LOCK_NAME = "logs.lock"
# Where versions before 0.2 kept them: in the notes' folder, readable by anyone the notes were.
_OLD_FOLDER = "memory"
_OLD_LOCK = ".enhanced-memory-logs.lock"
#: How long the searches must pause before the queued entries are written.
FLUSH_DELAY_S = 0.5


def logging_enabled(workspace: str | Path, settings: MemorySettings | None = None) -> bool:
    """Whether searches of ``workspace`` are logged.

    The process's setting wins (``ENHANCED_MEMORY_LOG``: ``0`` off, ``1`` on); else
    the setting, and only for a workspace whose ``memory/`` folder (or root, before
    it exists) is writable.
    """
    forced = process.current().log
    if forced is not None:
        return forced
    if settings is not None and not settings.logs.log_queries:
        return False
    ws = Path(workspace)
    mem = ws / "memory"
    return writable(mem if mem.exists() else ws)


def log_path(workspace: str | Path, name: str) -> Path:
    """Where the log ``name`` (:data:`QUERY_LOG`, :data:`ACCESS_LOG`) of ``workspace`` lives."""
    return index_folder(Path(workspace)) / name


@contextlib.contextmanager
def _locked(folder: Path) -> Iterator[None]:
    import fcntl

    make_private(folder)
    fd = open_private(folder / _LOCK_NAME, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield  # closing the descriptor releases the lock
    finally:
        os.close(fd)


def _load(path: Path, kind: type) -> Any:
    """The file's JSON value, or an empty ``kind`` when missing; set aside when corrupt."""
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return kind()
    try:
        value = json.loads(raw) if raw.strip() else kind()
    except json.JSONDecodeError:
        value = None
    if not isinstance(value, kind):
        aside = path.with_name(f"{path.name}.corrupt-{time.strftime('%Y%m%d-%H%M%S')}")
        log.warning("%s is not a JSON %s: moved to %s", path, kind.__name__, aside.name)
        with contextlib.suppress(OSError):
            path.replace(aside)
        return kind()
    return value


def _save(path: Path, value: Any) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")  # 0600
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(value, fh, ensure_ascii=False, indent=1)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _merged(kind: type, old: Any, new: Any) -> Any:
    """An earlier version's log ``old`` and this one's ``new`` as one value."""
    if kind is list:
        return [*old, *new]  # the old entries are the older ones
    counts: dict[str, int] = {}
    for value in (old, new):
        for path, n in value.items():
            if isinstance(n, int | float):
                counts[path] = counts.get(path, 0) + int(n)
    return counts


# The old logs found not removable, by path: the file as it was then (see _signature).
_STUCK: dict[Path, tuple[int, int, int]] = {}


def _signature(path: Path) -> tuple[int, int, int]:
    st = path.stat()
    return st.st_ino, st.st_size, st.st_mtime_ns


def _move_old(ws: Path, folder: Path) -> None:
    """Move the logs an earlier version kept in ``memory/`` into ``folder`` (lock held).

    Merged into what is there: an earlier version may have logged meanwhile. One
    that cannot be read or removed (another user's, an immutable file) stays where
    it is, out of the new log, and is still read (:func:`_read` reads both places):
    its entries are neither lost nor counted twice, and this write goes on.
    """
    for name, kind in ((QUERY_LOG, list), (ACCESS_LOG, dict)):
        old = ws / _OLD_FOLDER / name
        if not old.exists() or not writable(old.parent):
            continue
        try:
            if _STUCK.get(old) == _signature(old):
                continue  # tried: it cannot be removed, and has not changed since
            value = _load(old, kind)
        except OSError as exc:
            log.debug("left %s where it is: %s", old, exc)
            continue
        new = folder / name
        had = _load(new, kind)
        _save(new, _merged(kind, value, had))
        try:
            old.unlink(missing_ok=True)  # only once its entries are saved
        except OSError as exc:
            _save(new, had)  # its entries stay in one place only: the old file
            with contextlib.suppress(OSError):
                _STUCK[old] = _signature(old)
            log.debug("left %s where it is: %s", old, exc)
    with contextlib.suppress(OSError):
        (ws / _OLD_FOLDER / _OLD_LOCK).unlink()


def append_entry(
    workspace: str | Path,
    entry: dict[str, Any] | None,
    paths: Iterable[str] = (),
    *,
    max_entries: int = 1000,
) -> None:
    """Append one query-log entry and count accesses of ``paths``, atomically, now.

    Args:
        workspace: The workspace root.
        entry: The query-log entry, or None to count accesses only.
        paths: Workspace-relative paths that were returned or read.
        max_entries: How many newest entries the query log keeps.

    Raises:
        OSError: The logs cannot be written.
    """
    _write(Path(workspace), [(entry, list(paths), max_entries)])


# (entry or None, paths, max_entries) of one search or read
_Item = tuple["dict[str, Any] | None", "list[str]", int]


def _write(ws: Path, items: list[_Item]) -> None:
    entries = [entry for entry, _, _ in items if entry is not None]
    paths = [p for _, item_paths, _ in items for p in dict.fromkeys(item_paths)]
    folder = index_folder(ws)
    with _locked(folder):
        _move_old(ws, folder)
        if entries:
            qlog = _load(folder / QUERY_LOG, list)
            qlog.extend(entries)
            keep = min(m for entry, _, m in items if entry is not None)
            _save(folder / QUERY_LOG, qlog[-keep:])
        if paths:
            access = _load(folder / ACCESS_LOG, dict)
            for p in paths:
                old = access.get(p)
                access[p] = (old if isinstance(old, int) else 0) + 1
            _save(folder / ACCESS_LOG, access)


class _Queue:
    """This process's unwritten entries, written by one writer thread or at exit.

    One thread for the process's life, not a timer per search: starting a
    thread costs a search a sizeable share of its scoring at 10k chunks.
    """

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.pending: dict[Path, list[_Item]] = {}
        self.last_put = 0.0
        self.writer: threading.Thread | None = None

    def put(self, ws: Path, item: _Item) -> None:
        with self.cond:
            was_empty = not self.pending
            self.pending.setdefault(ws, []).append(item)
            self.last_put = time.monotonic()
            if self.writer is None or not self.writer.is_alive():  # first, or after a fork
                self.writer = threading.Thread(
                    target=self._write_when_idle, name="enhanced-memory-logs", daemon=True
                )  # daemon: never keeps a process alive; exit flushes
                self.writer.start()
            elif was_empty:
                self.cond.notify()

    def _write_when_idle(self) -> None:
        while True:
            with self.cond:
                while not self.pending:
                    self.cond.wait()
                wait = self.last_put + FLUSH_DELAY_S - time.monotonic()
                if wait > 0:  # still busy: write once the searches pause
                    self.cond.wait(wait)
                    continue
            self.flush()

    def flush(self) -> None:
        with self.cond:
            pending, self.pending = self.pending, {}
        for ws, items in pending.items():
            try:
                _write(ws, items)
            except (OSError, ValueError) as exc:
                full = isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT)
                (log.debug if full else log.warning)("could not write the logs of %s: %s", ws, exc)


_QUEUE = _Queue()
atexit.register(_QUEUE.flush)


def flush() -> None:
    """Write every entry this process has queued (the readers here call it first)."""
    _QUEUE.flush()


def record_search(
    workspace: str | Path,
    settings: MemorySettings,
    query: str,
    response: SearchResponse,
    now: datetime | date | None = None,
) -> bool:
    """Queue one search for the log (when enabled); never raises. Returns whether it was.

    ``timestamp`` is the moment the query was asked (``now``, default the clock), so
    salience resolves "yesterday" in a logged query against the right day.
    """
    if not logging_enabled(workspace, settings):
        return False
    hits = response.hits
    entry = {
        "query": clean_text(query),  # a lone surrogate cannot be written as UTF-8 JSON
        "top_score": round(hits[0].score, 4) if hits else 0.0,
        "timestamp": _stamp(now),
        "results": len(hits),
        "embedder": response.provider + (f"/{response.model}" if response.model else ""),
    }
    if response.fallback:
        entry["fallback"] = response.fallback
    _QUEUE.put(Path(workspace), (entry, [h.path for h in hits], settings.logs.query_log_max))
    return True


def _stamp(now: datetime | date | None) -> str:
    if now is None:
        return datetime.now().isoformat(timespec="seconds")
    if isinstance(now, datetime):
        return now.replace(tzinfo=None).isoformat(timespec="seconds")
    return datetime(now.year, now.month, now.day).isoformat(timespec="seconds")


def record_access(
    workspace: str | Path, settings: MemorySettings | None, paths: Iterable[str]
) -> bool:
    """Queue a count of reads of ``paths`` (``get``) when logging is enabled; never raises."""
    if not logging_enabled(workspace, settings):
        return False
    _QUEUE.put(Path(workspace), (None, list(paths), 0))
    return True


def forget_queries(workspace: str | Path, texts: Iterable[str]) -> int:
    """Remove the query-log entries that hold one of ``texts``, or that one of them holds.

    Letter case is ignored; this process's queue is written first, and the file
    is rewritten under the logs' lock (set-aside ``*.corrupt-*`` files too).

    Returns:
        How many entries were removed.

    Raises:
        OSError: The log cannot be written.
    """
    flush()
    keys = [t.casefold() for t in texts if t.strip()]
    ws = Path(workspace)
    if not keys or not (index_folder(ws).is_dir() or (ws / _OLD_FOLDER / QUERY_LOG).exists()):
        return 0

    def held(entry: Any) -> bool:
        query = entry.get("query") if isinstance(entry, dict) else None
        if not isinstance(query, str):
            return any(k in json.dumps(entry, ensure_ascii=False).casefold() for k in keys)
        q = query.casefold().strip()
        return any(k in q or (len(q) >= 3 and q in k) for k in keys)

    removed = 0
    folder = index_folder(ws)
    with _locked(folder):
        _move_old(ws, folder)
        for log_file in (folder / QUERY_LOG, ws / _OLD_FOLDER / QUERY_LOG):
            corrupt = sorted(log_file.parent.glob(f"{log_file.name}.corrupt-*"))
            for path in [log_file, *corrupt]:
                if not path.exists():
                    continue
                if path != log_file:  # set aside as corrupt: its text is unknown, so it goes
                    raw = path.read_bytes().decode("utf-8", "replace").casefold()
                    if any(k in raw for k in keys):
                        path.unlink()
                        removed += 1
                    continue
                entries = _load(path, list)
                kept = [e for e in entries if not held(e)]
                if len(kept) != len(entries):
                    _save(path, kept)
                    removed += len(entries) - len(kept)
    return removed


def read_query_log(workspace: str | Path) -> list[dict[str, Any]]:
    """The query log's entries (oldest first); ``[]`` when missing or unreadable."""
    value = _read(Path(workspace), QUERY_LOG, list)
    return [e for e in value if isinstance(e, dict)]


def read_access_log(workspace: str | Path) -> dict[str, int]:
    """The access counts by path; ``{}`` when missing or unreadable."""
    value = _read(Path(workspace), ACCESS_LOG, dict)
    return {str(k): int(v) for k, v in value.items() if isinstance(v, int | float)}


def _read(ws: Path, name: str, kind: type) -> Any:
    """The log ``name``, with what an earlier version left in ``memory/``; nothing written."""
    flush()
    values = []
    for path in (ws / _OLD_FOLDER / name, log_path(ws, name)):
        try:
            value = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            value = None
        values.append(value if isinstance(value, kind) else kind())
    return _merged(kind, *values)
