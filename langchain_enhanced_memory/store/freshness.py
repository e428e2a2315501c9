"""Knowing when the index is behind the notes, without a walk per query.

A long-lived engine (the retriever, the tools, ``serve``, the resident engine,
a batch) follows file-system events with ``watchdog`` (inotify, FSEvents,
ReadDirectoryChangesW) and re-syncs only after something changed. A one-shot
process, or an engine whose watcher cannot start (inotify limits, a network
file system, a platform where watchdog would only poll, a read-only
workspace), runs the cheap check instead: one ``scandir`` pass with a stat per
file (:func:`.discovery.scan`), before every search or at most once per
``interval_s``; a watcher that fails says so once, in the log. So does a
workspace whose ``memory/`` or top-level note links lead outside it (a synced
folder, a vault): a watch of another folder delivers its events on a thread
of its own, in no order with the barrier's, so only the scan is exact there.

The guarantee: an edit that finished before a search began is in that search.
File-system events reach the watcher's thread a moment after the write, so
before each search the engine touches a barrier file in the index folder and
waits for that event to come through: events arrive in order, so every earlier
edit has been counted by then (docs/engine.md has its cost). Each watcher has a barrier file
of its own: another process's barrier, touched a moment earlier, would
otherwise end the wait before an edit made in between was counted. A note
moved out of the workspace is the one exception: watchdog holds such a move up
to 0.5 s to pair it with its destination.
"""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.errors import DiskFullError
from ..core.transcripts import TRANSCRIPT_SUFFIX
from .locations import make_private
from .workspace import MEMORY_LINK, Places, places

if TYPE_CHECKING:
    from .index import MemoryIndex

__all__ = ["BARRIER_PREFIX", "ChangeWatcher", "Freshness"]

log = logging.getLogger("langchain_enhanced_memory")

#: Each watcher's barrier file in the index folder starts with this (a random rest).
BARRIER_PREFIX = ".watch-barrier-"
#: How long a search waits for its barrier event before giving up on the watcher.
BARRIER_TIMEOUT_S = 2.0
# Events that change nothing a search reads.
_QUIET = frozenset({"opened", "closed_no_write"})


def _inside(path: str, folder: str) -> bool:
    return path.startswith(folder + os.sep)


class ChangeWatcher:
    """Counts file-system events under a workspace that may change its memory files.

    Only the workspace is watched (:class:`Freshness` does not start one when
    links lead outside it); a link re-pointed while it runs makes the engine
    fall back to the scan.

    Args:
        where: The workspace's places (its folder is watched recursively).
        barrier_dir: The folder inside the workspace where :meth:`start` makes the
            file :meth:`settle` touches (and :meth:`stop` removes).
    """

    def __init__(self, where: Places, barrier_dir: Path) -> None:
        self.root = str(where.root)
        self.barrier_dir = str(barrier_dir)
        self.barrier = ""  # made by start()
        self.places = where
        self.changes = 0  # relevant events seen so far
        self._barriers = 0
        self._cond = threading.Condition()
        self._observer: Any = None

    def start(self) -> str | None:
        """Start watching; returns why it could not (None when it runs)."""
        try:
            from watchdog.events import FileSystemEventHandler
            from watchdog.observers import Observer
            from watchdog.observers.polling import PollingObserver
        except ImportError:
            return "watchdog is not installed"
        if Observer is PollingObserver:
            # A polling observer walks the tree every second: the scan is cheaper and exact.
            return "no native file-system events on this platform"
        watcher = self

        class _Handler(FileSystemEventHandler):
            def on_any_event(self, event: Any) -> None:
                watcher._event(event)

        try:
            make_private(self.barrier_dir)
            fd, self.barrier = tempfile.mkstemp(prefix=BARRIER_PREFIX, dir=self.barrier_dir)
            os.close(fd)
            observer = Observer()
            observer.daemon = True
            observer.schedule(_Handler(), self.root, recursive=True)
            observer.start()
        except OSError as exc:  # inotify limits, a read-only or vanished folder
            self.stop()
            return f"cannot watch {self.root}: {exc.strerror or exc}"
        self._observer = observer
        return None

    def _event(self, event: Any) -> None:
        if event.event_type in _QUIET:
            return
        paths = [event.src_path, getattr(event, "dest_path", "") or ""]
        if paths[0] == self.barrier:
            with self._cond:
                self._barriers += 1
                self._cond.notify_all()
            return
        if any(self._relevant(p, event.is_directory) for p in paths if p):
            with self._cond:
                self.changes += 1

    def _relevant(self, path: str, is_dir: bool) -> bool:
        rel = path[len(self.root) + 1 :] if _inside(path, self.root) else ""
        if not rel or any(part.startswith(".") for part in rel.split(os.sep)):
            return False  # the index folder, editors' swap files, hidden folders
        # The memory link itself: re-pointed, it changes what is watched (see Freshness).
        return is_dir or rel.endswith((".md", TRANSCRIPT_SUFFIX)) or rel == MEMORY_LINK

    def settle(self) -> bool:
        """Wait until every event of an edit finished before this call has been counted.

        Returns:
            False when the watcher is stopped or its barrier did not come through.
        """
        if self._observer is None or not self._observer.is_alive():
            return False
        with self._cond:
            seen = self._barriers
            try:
                os.utime(self.barrier)
            except OSError:
                return False
            deadline = time.monotonic() + BARRIER_TIMEOUT_S
            while self._barriers == seen:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(left)
        return True

    def stop(self) -> None:
        """Stop the observer thread (idempotent)."""
        observer, self._observer = self._observer, None
        if observer is not None:
            observer.stop()
            observer.join(timeout=5)
        if self.barrier:
            with contextlib.suppress(OSError):
                os.unlink(self.barrier)


class Freshness:
    """Brings an index up to date before a search, as cheaply as the engine allows.

    Args:
        index: The index to keep fresh.
        watch: Follow file-system events (falls back to the scan when they fail).
        interval_s: Without a watcher, scan at most this often (0: before every search).
    """

    def __init__(self, index: MemoryIndex, *, watch: bool, interval_s: float = 0.0) -> None:
        self.index = index
        self.interval_s = interval_s
        self.watcher: ChangeWatcher | None = None
        self.reason: str | None = None  # why there is no watcher, when one was asked for
        self._synced_at: int | None = None  # watcher's change count the index reflects
        self._checked = -float("inf")
        if watch:
            self._start_watcher()

    def _start_watcher(self) -> None:
        ws = self.index.workspace.resolve()
        where = places(ws, warn=False, settings=self.index.settings)
        if where.outside():
            # Their events would come on other threads, in no order with the barrier's.
            self.reason = "notes or transcripts outside the workspace are checked with a scan"
            log.debug("no file watcher: %s", self.reason)
            return
        watcher = ChangeWatcher(where, ws / ".enhanced-memory")
        reason = watcher.start()
        if reason is None:
            self.watcher = watcher
        else:
            self._fall_back(reason)

    def _fall_back(self, reason: str) -> None:
        self.reason = reason
        if self.watcher is not None:
            self.watcher.stop()
            self.watcher = None
        log.warning("no file watcher (%s): checking for changes with a scan instead", reason)

    @property
    def mode(self) -> str:
        """``watch`` (file-system events) or ``scan``."""
        return "watch" if self.watcher is not None else "scan"

    def refresh(self) -> None:
        """Sync the index when the notes may have changed since it was last synced."""
        w = self.watcher
        if w is not None:
            if not w.settle():
                self._fall_back("the watcher stopped answering")
                return self.refresh()
            seen = w.changes
            if seen == self._synced_at:
                return
            where = places(w.root, warn=False, settings=self.index.settings)
            # A link re-pointed, or a transcript folder outside the workspace named or gone
            # (a sessions/ folder made inside it is watched already).
            if (where.memory, where.files, where.outside()) != (
                w.places.memory,
                w.places.files,
                w.places.outside(),
            ):
                self._fall_back("a memory/, MEMORY.md or transcript folder link changed")
                return self.refresh()
            # Unknown changes (first search) or new events: the exact check decides.
            if self.index.is_stale() and not self._synced():
                return
            self._synced_at = seen
            return
        now = time.monotonic()
        if self.interval_s > 0 and now - self._checked < self.interval_s:
            return
        if self.index.is_stale() and not self._synced():
            return
        self._checked = now

    def _synced(self) -> bool:
        """Sync; False when the disk had no room (the search answers from the last index)."""
        try:
            self.index.sync(wait=True)  # the writer lock is held for text syncs only
        except DiskFullError as exc:
            log.warning("%s, and answers this search", exc)
            return False
        return True

    def close(self) -> None:
        """Stop the watcher."""
        if self.watcher is not None:
            self.watcher.stop()
            self.watcher = None
