"""What a process holds of a database: decoded segments and each scope's last generation.

Segments are immutable, so a segment fetched once (from the database, or
mapped from this host's copy, :mod:`.cache`) is kept decoded by id and
shared by every scope's snapshot and every write that merges it. A scope's
last assembled generation is kept until the scope moves on, or until a process
serving many scopes lets it go (:meth:`Held.let_go`); the segments no held
generation uses are let go.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from typing import TYPE_CHECKING

from ...core.errors import DatabaseError
from ...core.snapshot import Snapshot
from ..segment import Segment, assemble, decode, live_rows
from .cache import Recorded, SegmentCache
from .connect import Pool
from .publish import Fetch

if TYPE_CHECKING:
    import psycopg

__all__ = ["FETCH_THREADS", "Held", "of_model"]

#: Segments read at once on a cold load (on the pool's free connections only).
FETCH_THREADS = 4
FETCH_WAIT_S = 0.2  # for a free connection to read one on, else it is read in the caller's


class Held:
    """A process's decoded segments and each scope's last assembled generation (thread-safe).

    Args:
        cache: This host's copies of segments (None: fetch every segment it lacks).
        shown: The database's URL as messages show it.
    """

    def __init__(self, cache: SegmentCache | None, shown: str) -> None:
        self.cache = cache
        self._shown = shown
        self._lock = threading.Lock()
        self._segments: dict[int, Segment] = {}  # decoded, by id (immutable)
        self._snapshots: dict[str, Snapshot] = {}  # scope -> its last assembled generation
        self._uses: dict[str, list[int]] = {}  # scope -> the segments of that snapshot

    def connected(self, copies: SegmentCache | None) -> None:
        """The database is reached (again), its copies kept in ``copies``."""
        with self._lock:
            if copies is None or self.cache is None or copies.folder != self.cache.folder:
                # Another database behind the same URL now: nothing held is of it.
                self._snapshots.clear()
                self._uses.clear()
                self._segments.clear()
            self.cache = copies

    def last(self, scope: str) -> Snapshot | None:
        """The generation of ``scope`` this process assembled last (None: none)."""
        with self._lock:
            return self._snapshots.get(scope)

    def keep(self, scope: str, ids: set[int]) -> None:
        """Let go of the segments, and this host's copies of ``scope``'s, not in ``ids``."""
        with self._lock:
            self._segments = {i: s for i, s in self._segments.items() if i in ids}
        if self.cache is not None:
            self.cache.keep(scope, ids)

    def let_go(self, scope: str) -> None:
        """Forget ``scope``'s last generation and the decoded segments no other scope holds.

        This host's copies stay: :meth:`recorded` assembles the scope from them again.
        """
        with self._lock:
            self._snapshots.pop(scope, None)
            self._uses.pop(scope, None)
            self._drop_unused()

    def recorded(self, scope: str) -> Snapshot | None:
        """The generation of ``scope`` this host last loaded, from its copies (None: not all)."""
        cache = self.cache
        loaded = None if cache is None else cache.recorded(scope)
        if loaded is None:
            return None
        ids = sorted({seg for _, seg in loaded.files})
        with self._lock:
            segments = {i: self._segments[i] for i in ids if i in self._segments}
        segments |= self._copies(scope, [i for i in ids if i not in segments])
        if len(segments) < len(ids):
            return None
        return self.hold(scope, loaded, segments)

    def hold(self, scope: str, loaded: Recorded, segments: dict[int, Segment]) -> Snapshot:
        """Assemble ``loaded`` of ``segments`` and hold it as the scope's last read generation."""
        ids = sorted({seg for _, seg in loaded.files})
        live: dict[int, set[str]] = {i: set() for i in ids}
        for path, seg_id in loaded.files:
            live[seg_id].add(path)
        segs = [segments[i] for i in ids]
        rows = [live_rows(s, live[i]) for s, i in zip(segs, ids, strict=True)]
        snap = assemble(loaded.generation, segs, rows, loaded.model)
        with self._lock:
            self._snapshots[scope], self._uses[scope] = snap, ids
            self._segments.update(segments)  # those mapped from copies too
            self._drop_unused()
        return snap

    def _drop_unused(self) -> None:
        """Let go of the decoded segments no held generation uses (under the lock)."""
        keep = {i for used in self._uses.values() for i in used}
        self._segments = {i: s for i, s in self._segments.items() if i in keep}

    def load(self, conn: psycopg.Connection, scope: str, pool: Pool) -> Snapshot:
        """Read the scope's generation, its files and segments as of one moment; assemble it."""
        with conn.transaction():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            generation, model = generation_of(conn, scope)
            files = conn.execute(
                "SELECT path, segment FROM em_files WHERE scope = %s AND segment > 0",
                (scope,),
            ).fetchall()
            ids = sorted({int(s) for _, s in files})
            segments = self.fetcher(conn, scope, pool)(ids)
        loaded = Recorded(generation, model, [(str(path), int(seg)) for path, seg in files])
        snap = self.hold(scope, loaded, segments)
        if self.cache is not None:
            self.cache.keep(scope, set(ids))
            self.cache.record(scope, loaded)  # what a process that cannot connect answers from
        return snap

    def fetcher(self, conn: psycopg.Connection, scope: str, pool: Pool | None = None) -> Fetch:
        """Segments by id: those this process holds decoded, the others read from the database.

        With ``pool``, several are read at once on its other connections (a cold
        load of a large scope takes about half the time); any those do not see
        (a merge removed it since, or this transaction wrote it) is read in ``conn``.
        """

        def fetch(ids: list[int]) -> dict[int, Segment]:
            with self._lock:
                out = {i: self._segments[i] for i in ids if i in self._segments}
            missing = [i for i in ids if i not in out]
            if self.cache is not None and missing:
                out |= self._copies(scope, missing)
                missing = [i for i in missing if i not in out]
            if pool is not None and len(missing) > 1:
                for got in _fetch_threads().map(lambda i: self._read(pool, scope, [i]), missing):
                    out |= got
                missing = [i for i in missing if i not in out]
            if missing:
                out |= self._read_in(conn, scope, missing)
            if len(out) < len(ids):
                raise DatabaseError(
                    f"database {self._shown}: a segment of scope {scope} is missing"
                )
            with self._lock:
                self._segments.update(out)
            return out

        return fetch

    def _read(self, pool: Pool, scope: str, ids: list[int]) -> dict[int, Segment]:
        """``_read_in`` on another connection of ``pool``; none when none is free at once."""
        try:
            with pool.connection(f"reading scope {scope}", False, FETCH_WAIT_S) as conn:
                return self._read_in(conn, scope, ids)
        except DatabaseError:
            return {}  # many cold loads at once: the caller reads them in its own connection

    def _read_in(self, conn: psycopg.Connection, scope: str, ids: list[int]) -> dict[int, Segment]:
        """The segments ``ids`` of ``scope`` that ``conn`` sees, decoded."""
        rows = conn.execute(
            "SELECT id, data FROM em_segments WHERE scope = %s AND id = ANY(%s)",
            (scope, ids),
            binary=True,  # blobs as they are, not as hex text to decode
        ).fetchall()
        out = {}
        for seg_id, blob in rows:
            try:
                out[int(seg_id)] = decode(bytes(blob))
            except ValueError as exc:
                raise DatabaseError(
                    f"database {self._shown}: segment {seg_id} of scope {scope} is damaged ({exc})",
                    "publish the scope again",
                ) from None
            if self.cache is not None:
                self.cache.put(scope, int(seg_id), bytes(blob))
        return out

    def _copies(self, scope: str, ids: list[int]) -> dict[int, Segment]:
        """The segments of ``ids`` this host keeps a copy of, mapped."""
        cache = self.cache
        assert cache is not None
        out = {}
        for seg_id in ids:
            blob = cache.get(scope, seg_id)
            if blob is None:
                continue
            try:
                out[seg_id] = decode(blob)
            except ValueError:
                cache.drop(scope, seg_id)  # damaged: fetched again
        return out


def generation_of(conn: psycopg.Connection, scope: str) -> tuple[int, str | None]:
    """The scope's generation and model ((0, None): no such scope yet)."""
    row = conn.execute(
        "SELECT generation, model FROM em_scopes WHERE name = %s", (scope,)
    ).fetchone()
    return (int(row[0]), row[1]) if row else (0, None)


def of_model(snap: Snapshot, model_id: str | None) -> Snapshot:
    """``snap`` without its vectors when they are of another model than ``model_id``."""
    if snap.model is not None and snap.model != model_id:
        return snap.with_vectors(None, None)
    return snap


def _fetch_threads() -> ThreadPoolExecutor:
    """The threads segments are read on (one set per process, like the engine's scan thread)."""
    return _threads(os.getpid())


@lru_cache(maxsize=1)
def _threads(pid: int) -> ThreadPoolExecutor:
    # Keyed by process: a forked child has none of its parent's threads.
    return ThreadPoolExecutor(FETCH_THREADS, thread_name_prefix="segment-fetch")
