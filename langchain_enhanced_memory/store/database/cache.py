"""A host's copy of the segments it read: a fresh process maps them instead of fetching them.

On by default (:func:`default_cache_folder`; ``Database.connect(..., cache=None)``
or ``ENHANCED_MEMORY_DATABASE_CACHE=0`` turns it off): a stateless worker whose
disk goes with it loses nothing but the copies. A segment never changes once
written, so a copy keyed by the database's identity (a UUID its first
migration made), the scope and the segment id is that segment for as long as
the database lives. Files are written under a temporary name and renamed
(0600, in folders of 0700: they hold the notes' text), read as read-only maps
(the page cache is shared between processes, as the local store's segment
files are), and a scope's files its current generation no longer names are
removed when it is loaded. A copy that will not read is removed and fetched again.
"""

from __future__ import annotations

import contextlib
import mmap
import os
from pathlib import Path

from ..db import cache_root
from ..locations import make_private, open_private

__all__ = ["CACHE_ENV", "SegmentCache", "default_cache_folder"]

#: Where a host keeps its copies (a folder), or ``0`` for none.
CACHE_ENV = "ENHANCED_MEMORY_DATABASE_CACHE"

_SUFFIX = ".emseg"


def default_cache_folder() -> Path | None:
    """``$ENHANCED_MEMORY_DATABASE_CACHE`` (``0``: none), else the user's cache folder's."""
    chosen = os.environ.get(CACHE_ENV, "").strip()
    if chosen == "0":
        return None
    if chosen:
        return Path(chosen).expanduser()
    return cache_root() / "segments"


class SegmentCache:
    """Segment blobs of one database under ``root/<database id>/<scope>/<id>.emseg``."""

    def __init__(self, root: str | Path, database_id: str) -> None:
        self.folder = Path(root).expanduser() / database_id

    def _path(self, scope: str, seg_id: int) -> Path:
        return self.folder / scope / f"{seg_id}{_SUFFIX}"

    def get(self, scope: str, seg_id: int) -> mmap.mmap | None:
        """The segment's blob as a read-only map, None when this host has no copy."""
        try:
            with open(self._path(scope, seg_id), "rb") as fh:
                return mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError):  # missing, or empty (mmap refuses)
            return None

    def put(self, scope: str, seg_id: int, blob: bytes) -> None:
        """Keep a copy (best effort: a read-only or full disk only costs the next fetch)."""
        path = self._path(scope, seg_id)
        tmp = path.with_name(f".tmp-{os.getpid()}-{path.name}")
        try:
            make_private(path.parent)
            with os.fdopen(open_private(tmp, os.O_WRONLY | os.O_TRUNC), "wb") as fh:
                fh.write(blob)
            os.replace(tmp, path)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(tmp)

    def drop(self, scope: str, seg_id: int) -> None:
        """Remove a copy that did not read back."""
        with contextlib.suppress(OSError):
            os.unlink(self._path(scope, seg_id))

    def keep(self, scope: str, ids: set[int]) -> None:
        """Remove ``scope``'s copies of segments not in ``ids`` (merged or replaced since)."""
        try:
            entries = list(os.scandir(self.folder / scope))
        except OSError:
            return
        for entry in entries:
            stem = entry.name.removesuffix(_SUFFIX)
            if entry.name.endswith(_SUFFIX) and stem.isdigit() and int(stem) not in ids:
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)
