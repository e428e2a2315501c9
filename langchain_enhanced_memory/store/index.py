"""The persistent, incremental index of one workspace: one SQLite file.

Layout: ``files`` (path, size, mtime, hash), ``chunks`` (spans, headers, text,
terms, line hashes) and ``catalog`` (the names of the generation's postings
segments, of each model's vector segments and of its spool). Beside it,
``index.vectors/`` holds those side files, opened read-only by searchers.
The work is split by concern: :mod:`.db` opens the file and holds the writer
lock, :mod:`.sync` brings the text state up to date, :mod:`.postings` keeps
the postings segments, :mod:`.embed_cache` the embedding cache, :mod:`.spool` the
vectors embedded since the last segment, :mod:`.vector_segments` and :mod:`.folding`
the vector segments, and :mod:`.snapshots` loads a generation for
scoring. :class:`MemoryIndex` is the one public face of them.

Safety: every sync commits in one transaction, so a crash leaves the previous
state; readers use WAL and see a consistent snapshot while a writer runs; an
advisory file lock serializes writers; a file that is not a valid index is set
aside and rebuilt from the markdown, which is never written.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from ..core.errors import IndexUnavailableError
from ..core.settings import MemorySettings
from ..core.snapshot import Snapshot
from . import embed_cache
from .db import (
    INDEX_FILENAME,
    ORIGINAL_INDEX_FILENAME,
    IndexDB,
    default_index_path,
    disk_full,
    generation_of,
    get_meta,
    rollback,
)
from .folding import (
    cached_vectors,
    forget_lost,
    held_keys,
    kept_files,
    missing_plan,
    vector_dim,
    vector_models,
)
from .postings import compact_postings, sweep_segments
from .snapshots import SnapshotCache
from .spool import SUFFIX as SPOOL
from .spool import spool_state
from .sync import SyncReport, chunker_signature, is_stale, sync_text
from .vector_segments import hash_keys, side_folder, sweep

__all__ = ["MemoryIndex", "SyncReport"]


class MemoryIndex:
    """The on-disk index of one workspace.

    Args:
        workspace: The workspace folder (holds ``MEMORY.md`` and ``memory/``).
        settings: Discovery, chunking and embedding settings.
        path: Where the SQLite file lives; see :func:`.db.default_index_path`.
    """

    def __init__(
        self,
        workspace: str | Path,
        settings: MemorySettings | None = None,
        path: str | Path | None = None,
    ) -> None:
        self.workspace = Path(workspace).expanduser()
        if not self.workspace.is_dir():
            raise IndexUnavailableError(
                f"workspace not found: {self.workspace}",
                "pass --workspace DIR or set OPENCLAW_WORKSPACE_DIR",
            )
        self.settings = settings or MemorySettings()
        # The original profile chunks differently: its own file, so switching
        # profiles never re-chunks (and thrashes) the other one's index.
        name = (
            ORIGINAL_INDEX_FILENAME
            if self.settings.chunker.chunking == "original"
            else INDEX_FILENAME
        )
        self.path = Path(path) if path else default_index_path(self.workspace, name)
        self.db = IndexDB(self.path)
        self._snapshots = SnapshotCache(self.db, self.settings)

    @property
    def chunker_signature(self) -> str:
        """Settings that change what the chunks are; a change forces a re-chunk."""
        return chunker_signature(self.settings)

    @contextlib.contextmanager
    def connect(self) -> Iterator[sqlite3.Connection]:
        """A checked connection to the index file, for modules keeping tables of their own."""
        with self.db.open() as conn:
            yield conn

    def reader(self) -> contextlib.AbstractContextManager[sqlite3.Connection]:
        """This thread's kept-open connection for short reads on the search path."""
        return self.db.reader()

    def writer_lock(self, wait: bool = True) -> contextlib.AbstractContextManager[bool]:
        """The writer lock (yields False when ``wait`` is off and another writer holds it)."""
        return self.db.writer_lock(wait)

    def embed_lock(self, wait: bool = True) -> contextlib.AbstractContextManager[bool]:
        """The lock of embedding runs (yields False when ``wait`` is off and it is busy)."""
        return self.db.embed_lock(wait)

    def meta(self, key: str, default: str = "") -> str:
        """A value of the index's ``meta`` table."""
        with self.db.open() as conn:
            return get_meta(conn, key, default)

    def set_meta(self, key: str, value: str) -> None:
        """Set a value of the index's ``meta`` table."""
        with self.db.open() as conn:
            conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    def generation(self) -> int:
        """The committed generation of the text state (0 when never synced)."""
        with self.db.open() as conn:
            return generation_of(conn)

    # ------------------------------------------------------------------- text
    def is_stale(self) -> bool:
        """Cheap check (one ``scandir`` pass, a stat per file) for unindexed changes."""
        try:
            with self.db.open() as conn:
                return is_stale(conn, self.workspace, self.settings)
        except sqlite3.Error:
            return True

    def sync(self, wait: bool = True) -> SyncReport:
        """Bring the text state (files, chunks, postings) up to date in one transaction.

        Args:
            wait: Block on another writer; when False and one is busy, return at once.

        Raises:
            DiskFullError: The disk had no room for it (the last index stays as it was).
        """
        report = SyncReport()
        try:
            with self.db.writer_lock(wait) as locked:
                if not locked:
                    return report
                with self.db.open() as conn:
                    sync_text(conn, self.workspace, self.settings, report, side_folder(self.path))
        except (sqlite3.OperationalError, OSError) as exc:
            if not disk_full(exc, self.path.parent):
                raise
            raise self.db.full() from None
        self._snapshots.forget_text()
        return report

    # -------------------------------------------------------------- embedding
    def missing_embeddings(self, model: str) -> embed_cache.Missing:
        """The texts to embed for ``model``, and the chunks whose vector is their lines' mean."""
        with self.db.open() as conn:
            plan = missing_plan(conn, side_folder(self.path), model, self.settings)
            return plan.whole(conn, self.settings)

    def missing_plan(self, model: str) -> embed_cache.MissingPlan:
        """What lacks a vector for ``model``, its texts not read yet (:meth:`missing_parts`)."""
        with self.db.open() as conn:
            return missing_plan(conn, side_folder(self.path), model, self.settings)

    def missing_parts(self, plan: embed_cache.MissingPlan) -> Iterator[embed_cache.Missing]:
        """``plan``'s texts, :data:`.embed_cache.PART_ROWS` chunk rows' at a time."""
        for lo in range(0, plan.rows, embed_cache.PART_ROWS):
            with self.db.open() as conn:
                part = plan.part(conn, self.settings, lo, lo + embed_cache.PART_ROWS)
            yield part

    def forget_lost(self, model: str) -> None:
        """Forget ``model``'s side files that are gone or damaged: their vectors get embedded."""
        forget_lost(self.db, model)
        self.forget_vectors(model)

    def cached_vectors(self, model: str, hashes: list[str]) -> dict[str, np.ndarray]:
        """Hash -> float32 vector of those of ``hashes`` with a vector for ``model``."""
        with self.db.open() as conn:
            return cached_vectors(conn, side_folder(self.path), model, hashes)

    def store_embeddings(self, model: str, hashes: list[str], matrix: np.ndarray) -> None:
        """Add vectors to the embedding cache (one transaction; survives a later failure)."""
        with self.db.open() as conn:
            embed_cache.store_vectors(conn, side_folder(self.path), model, hashes, matrix)
        self.forget_vectors(model)

    @contextlib.contextmanager
    def embedding_writer(self, model: str) -> Iterator[embed_cache.CacheWriter]:
        """One connection for a run of :meth:`store_embeddings` (batches committed together).

        The caller holds the embedding lock. What the writer holds is committed
        when the run ends, also by an error (the batches embedded before it are
        kept); when the run ends complete, the generation's vectors are written
        to their side file, under the writer lock (a text sync must not change
        the generation while it is sealed).
        """
        try:
            with self.db.open() as conn:
                writer = embed_cache.CacheWriter(conn, side_folder(self.path), model)
                try:
                    yield writer
                finally:
                    writer.flush()
        finally:
            self.forget_vectors(model)
        with self.db.writer_lock():
            self._snapshots.seal(model)
            # What the run wrote is in the file now: its WAL need not stay on disk.
            self.db.truncate_wal()

    def vector_models(self) -> list[str]:
        """The models with vectors in the index."""
        with self.db.open() as conn:
            return vector_models(conn)

    def with_vector(self, model: str, hashes: list[str]) -> np.ndarray:
        """Whether ``model`` has a vector of each of ``hashes``."""
        with self.db.open() as conn:
            keys = held_keys(conn, side_folder(self.path), model)
        return np.isin(hash_keys(hashes), keys)

    def vector_dim(self, model: str) -> int | None:
        """Dimension of the vectors cached for ``model``, None when there are none."""
        with self.db.reader() as conn:
            return vector_dim(conn, model)

    def forget_vectors(self, model: str) -> None:
        """Drop this process's copy of ``model``'s matrices (new vectors were stored)."""
        self._snapshots.forget_vectors(model)

    # ---------------------------------------------------------------- reading
    def snapshot(self, model: str | None = None) -> Snapshot:
        """The current generation as arrays (cached until the generation changes)."""
        return self._snapshots.get(model)

    def disk_bytes(self) -> int:
        """Bytes the index takes on disk: the SQLite file, its WAL and the side files."""
        files = [Path(str(self.path) + s) for s in ("", "-wal", "-shm")]
        folder = side_folder(self.path)
        files += list(folder.iterdir()) if folder.is_dir() else []
        return sum(p.stat().st_size for p in files if p.is_file())

    def compact(self) -> tuple[int, int]:
        """Merge the postings' segments, reclaim deleted rows and unused side files (``VACUUM``).

        Waits for the embedding lock (a run spooling vectors meanwhile would keep the
        merge from dropping a forgotten text's) and the writer lock; searchers keep
        reading meanwhile (WAL).

        Returns:
            Bytes on disk before and after.
        """
        before = self.disk_bytes()
        with self.db.embed_lock():
            models = self.vector_models()
            for model in models:  # as an embedding run does first: their vectors get embedded
                self.forget_lost(model)
            with self.db.writer_lock():
                with self.db.open() as conn:
                    conn.execute("BEGIN IMMEDIATE")
                    try:
                        compact_postings(conn, side_folder(self.path))
                        conn.execute("COMMIT")
                    except BaseException:
                        rollback(conn)
                        raise
                for model in models:
                    self._snapshots.seal(model, full=True)
                self._vacuum(models)
        return before, self.disk_bytes()

    def _vacuum(self, models: list[str]) -> None:
        """Remove unused side files, rewrite the SQLite file compactly (both locks held).

        A spool no row names (a crash after its fold, a damaged one forgotten)
        may hold vectors of forgotten texts: it goes too.
        """
        with self.db.open() as conn:
            folder = side_folder(self.path)
            sweep(folder, kept_files(conn))
            spools = {s.file for s in (spool_state(conn, m) for m in models) if s is not None}
            sweep(folder, spools, SPOOL)
            sweep_segments(conn, folder)
            conn.execute("VACUUM")
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def stats(self) -> dict[str, int]:
        """Counts of files, chunks and cached vectors (of every model)."""
        with self.db.open() as conn:
            folder = side_folder(self.path)
            held = sum(held_keys(conn, folder, m).size for m in vector_models(conn))
            return {
                "files": conn.execute("SELECT count(*) FROM files").fetchone()[0],
                "chunks": conn.execute("SELECT count(*) FROM chunks").fetchone()[0],
                "cached_vectors": int(held),
                "generation": generation_of(conn),
            }
