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

So that a fresh process can answer while the database is down, each load also
records beside the copies what its generation was assembled from
(:meth:`SegmentCache.record`: the generation, the model and the live files'
segments), and each connect records which database a URL reached
(:func:`remember_identity`: a hash of its host, port, database and user, never
its password, to the database's UUID).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import mmap
import os
from dataclasses import dataclass
from pathlib import Path

from ..db import cache_root
from ..locations import make_private, open_private

__all__ = [
    "Recorded",
    "SegmentCache",
    "default_cache_folder",
    "known_identity",
    "remember_identity",
]

_SUFFIX = ".emseg"
_RECORD = "generation.json"  # in a scope's folder, beside its copies
_IDENTITIES = "identities"  # in the root: one file per URL fingerprint, holding the UUID
#: What tells apart the databases URLs reach: libpq's keys.
_NAMED = ("host", "hostaddr", "port", "dbname", "user")


@dataclass(frozen=True)
class Recorded:
    """What a scope's last load on this host was assembled from (:meth:`SegmentCache.record`)."""

    generation: int
    model: str | None
    files: list[tuple[str, int]]  # each live file's path and segment


def _write_private(path: Path, data: bytes) -> None:
    """Write ``path`` (0600, in 0700 folders) as a temporary file renamed (best effort)."""
    tmp = path.with_name(f".tmp-{os.getpid()}-{path.name}")
    try:
        make_private(path.parent)
        with os.fdopen(open_private(tmp, os.O_WRONLY | os.O_TRUNC), "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(tmp)


def _fingerprint(url: str) -> str | None:
    """A hash of the server, database and user ``url`` reaches (no password); None: unread."""
    try:
        from psycopg import conninfo, pq

        parts = conninfo.conninfo_to_dict(url)
        # What the URL leaves out, libpq takes from its defaults (PGHOST, ..., as it reads them).
        found = {o.keyword.decode(): o.val for o in pq.Conninfo.get_defaults()}
    except Exception:  # noqa: BLE001 (libpq's parse errors come in several kinds; no psycopg)
        return None
    named = [str(parts.get(key) or (found.get(key) or b"").decode()) for key in _NAMED]
    return hashlib.sha256(json.dumps(named).encode()).hexdigest()


def remember_identity(root: str | Path, url: str, database_id: str) -> None:
    """Record that ``url`` reached the database ``database_id`` (on each connect)."""
    key = _fingerprint(url)
    if key is not None and known_identity(root, url) != database_id:
        _write_private(Path(root).expanduser() / _IDENTITIES / key, database_id.encode())


def known_identity(root: str | Path, url: str) -> str | None:
    """The identity of the database ``url`` last reached from this host, None if unknown."""
    key = _fingerprint(url)
    if key is None:
        return None
    try:
        found = (Path(root).expanduser() / _IDENTITIES / key).read_text("ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return found if found and all(c in "0123456789abcdef-" for c in found.lower()) else None


def default_cache_folder() -> Path:
    """The user's cache folder's ``segments``, where copies go unless the caller chose.

    The entry points read ``$ENHANCED_MEMORY_DATABASE_CACHE`` and pass it as
    ``Database.connect(..., cache=)``.
    """
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
        _write_private(self._path(scope, seg_id), blob)

    def record(self, scope: str, loaded: Recorded) -> None:
        """Record what ``scope``'s generation was assembled from (best effort)."""
        doc = {"generation": loaded.generation, "model": loaded.model, "files": loaded.files}
        _write_private(self.folder / scope / _RECORD, json.dumps(doc).encode())

    def recorded(self, scope: str) -> Recorded | None:
        """What ``scope``'s last load here was assembled from, None if none (or unreadable)."""
        try:
            doc = json.loads((self.folder / scope / _RECORD).read_bytes())
            files = [(str(path), int(seg)) for path, seg in doc["files"]]
            model = doc["model"]
            return Recorded(int(doc["generation"]), None if model is None else str(model), files)
        except (OSError, ValueError, KeyError, TypeError):
            return None

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
