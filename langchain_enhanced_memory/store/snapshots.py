"""Loading a generation as a :class:`..core.snapshot.Snapshot`: texts, postings and matrices.

The chunk rows and postings are the segment files ``catalog`` names
(:mod:`.postings`, :mod:`.chunkrows`), and once every chunk has a vector the
vectors are the model's segment files (:mod:`.folding`, :mod:`.vector_segments`):
opened, not read, so a fresh process searches without re-tokenizing or
re-assembling anything and holds no private copy of them (texts and headers
decoded when shown; chunk vectors mapped read-only; posting columns of a large
segment and line rows read with ``pread`` as a query needs them). A loaded snapshot is
kept until the generation changes.

Loading writes nothing and takes no lock: rows no vector segment covers yet
(an embedding run not yet folded, or killed before its fold) are gathered by
text hash from the spool's committed records and the named segments. Only
:meth:`SnapshotCache.seal`, under the writer lock, folds them into a segment.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import numpy as np

from ..core.errors import IndexUnavailableError
from ..core.settings import MemorySettings
from ..core.snapshot import Snapshot, file_facts
from . import heap
from .chunkrows import ChunkRows, used_paths
from .db import IndexDB, chunk_ids, generation_of
from .folding import Coverage, GenerationVectors, assemble, coverage, fold, mapped
from .postings import SegmentsMoved, live_ids, load_postings, named_segments
from .segment import snapshot_of
from .spool import SpoolState, spool_state
from .vector_segments import Layout, current_layouts, side_folder

__all__ = ["SnapshotCache"]

log = logging.getLogger("langchain_enhanced_memory")
T = TypeVar("T")


class _Moved(Exception):
    """The side file named in our read transaction went away: read again."""


def _again(read: Callable[[], T]) -> T:
    """``read()``, again when a side file it named moved on or was forgotten (up to 4 tries)."""
    for _ in range(3):
        try:
            return read()
        except _Moved:  # a writer switched files, or a lost file was dropped: read anew
            continue
    return read()


class SnapshotCache:
    """This process's copy of the current generation (and its matrices, per model).

    Safe to share between threads: loads and the cache's updates hold one lock,
    so a generation is loaded once, and what :meth:`get` hands out is immutable.
    """

    def __init__(self, db: IndexDB, settings: MemorySettings) -> None:
        self.db = db
        self.settings = settings
        self.folder = side_folder(db.path)
        self._text: Snapshot | None = None  # the generation, without vectors
        self._views: dict[str, Snapshot] = {}  # model -> the generation with its vectors
        self._vector_cache: dict[str, tuple[int, GenerationVectors]] = {}
        self._lock = threading.Lock()

    def get(self, model: str | None) -> Snapshot:
        """The current generation, with ``model``'s vectors (none when ``model`` is None)."""
        with self._lock:
            return _again(lambda: self._get(model))

    def _get(self, model: str | None) -> Snapshot:
        with self.db.reader() as conn:
            conn.execute("BEGIN")
            try:
                generation = generation_of(conn)
                text = self._text
                if text is None or text.generation != generation:
                    try:
                        text = _load_text(conn, generation, self.folder, self._segments_moved)
                    except SegmentsMoved:
                        raise _Moved from None
                    self._text, self._views = text, {}
                    if len(text) >= heap.LARGE_ROWS and heap.wanted():
                        heap.keep_freed_memory()  # each query's arrays are megabytes from here
                if model is None:
                    return text
                snap = self._views.get(model)
                if snap is None:
                    vec = self._vectors(conn, model, generation, text.ids)
                    snap = self._views[model] = text.with_vectors(vec.vectors, model)
            finally:
                conn.execute("COMMIT")
        return snap

    def seal(self, model: str, full: bool = False) -> None:
        """Write the current generation's side file for ``model`` when complete (lock held).

        The one place vectors are folded: the embedding run calls it last, after
        its vectors are committed, and ``index --compact`` with ``full`` (every
        segment merged into one), so the run ends with the vectors in their one
        place and the rows no generation uses collected. Both forget lost files
        first (:func:`.folding.forget_lost`); one lost since is read past, and
        the fold refused (the files named are not the ones read) until the next
        run forgets it.
        """
        with self.db.open() as conn:
            conn.execute("BEGIN")
            try:
                generation = generation_of(conn)
                cov = coverage(conn, self.folder, model, self.settings, chunk_ids(conn))
                vec = mapped(cov) if cov.uncovered.size == 0 else None
                if vec is None or (full and not vec.merged):
                    vec = assemble(conn, model, self.settings, cov, full)
                    wants_lines = bool(self.settings.vectors.line_vector_share)
                    whole = vec.complete and (vec.lines_complete or not wants_lines)
                    # A merge folds what it has: the rows of texts no chunk holds (a forget's) go
                    # now, and the chunks still lacking a vector are planned by the next run.
                    if vec.vectors.dim and (whole or full):
                        vec = self._fold(model, generation, vec, cov, whole, strict=full)
            finally:
                conn.execute("COMMIT")
        with self._lock:
            self._vector_cache[model] = (generation, vec)

    def forget_text(self) -> None:
        """Drop the text snapshot: a sync wrote a new generation."""
        with self._lock:
            self._text, self._views = None, {}

    def forget_vectors(self, model: str) -> None:
        """Drop ``model``'s matrices: new vectors were stored."""
        with self._lock:
            self._vector_cache.pop(model, None)
            self._views.pop(model, None)

    def _vectors(
        self, conn: sqlite3.Connection, model: str, generation: int, live_ids: np.ndarray
    ) -> GenerationVectors:
        """What the generation names, read: the segments, and the rows they leave gathered.

        The read path: it writes nothing. Rows no segment covers (a run not yet
        folded, or killed before its fold) are gathered by text hash from the
        spool's committed records and the segments; a lost file's rows are read
        as lacking a vector.
        """
        cached = self._vector_cache.get(model)
        if cached and cached[0] == generation:
            return cached[1]
        cov = coverage(conn, self.folder, model, self.settings, live_ids)
        if cov.lost:
            self._moved_on(model, cov.lost)
        vec = mapped(cov) if cov.uncovered.size == 0 else assemble(conn, model, self.settings, cov)
        self._vector_cache[model] = (generation, vec)
        return vec

    def _fold(
        self,
        model: str,
        generation: int,
        vec: GenerationVectors,
        cov: Coverage,
        complete: bool,
        strict: bool,
    ) -> GenerationVectors:
        """Write the generation's delta segment (writer lock held), and map it.

        Raises:
            IndexUnavailableError: ``strict`` (a merge, which a forget relies on to drop
                the forgotten texts' vectors) and the files could not be written.
        """
        try:
            layouts = fold(self.db, self.folder, model, generation, vec, complete)
        except (OSError, sqlite3.Error) as exc:  # read-only index: gathered again next time
            if strict:
                raise IndexUnavailableError(f"could not rewrite the vector files: {exc}") from exc
            log.debug("could not write the vector file: %s", exc)
            return vec
        if not layouts:
            if strict:
                raise IndexUnavailableError("the vector files changed while they were merged")
            return vec
        with self.db.open() as conn:
            again = coverage(conn, self.folder, model, self.settings, cov.live_ids)
        if not again.lost and again.uncovered.size == 0:
            return mapped(again)
        return vec

    def _segments_moved(self, seen: list[str]) -> bool:
        """Whether the postings segments named now differ from a read's (a writer moved on)."""
        with self.db.open() as fresh:
            now = named_segments(fresh)
        return now is None or now[0] != seen

    def _moved_on(self, model: str, lost: list[Layout | SpoolState]) -> None:
        """Raise :class:`_Moved` when the files a read named are no longer the named ones.

        Else they are lost (deleted by hand, damaged): read without them until a
        writer forgets them (:meth:`seal`).
        """
        with self.db.open() as fresh:
            now = current_layouts(fresh, model)
            spool = spool_state(fresh, model)
        for gone in lost:
            if gone != spool and (now is None or gone not in now[1]):
                raise _Moved


def _load_text(
    conn: sqlite3.Connection,
    generation: int,
    folder: Path,
    moved: Callable[[list[str]], bool],
) -> Snapshot:
    # Files apart, not joined per chunk, and each file's path, kind and date one
    # object shared by its chunks.
    files = {row[0]: file_facts(*row) for row in conn.execute("SELECT path, kind, date FROM files")}
    ids = live_ids(conn)
    posts, rows = load_postings(conn, folder, ids, moved)
    used = [] if rows is None else used_paths(rows.path, len(rows.names)).tolist()
    if rows is None or not all(rows.names[u] in files for u in used):
        # Segments missing or damaged (or a row of no file, never after a
        # committed sync): the rows from SQLite.
        selected, rows = _select_rows(conn, files)
        if not np.array_equal(selected, ids):
            ids = selected
            posts = load_postings(conn, folder, ids, moved)[0]
    # A segment's table also names files only replaced rows had (none of these rows).
    table = [files.get(name, (name, "", None, -1)) for name in rows.names]
    return snapshot_of(generation, ids, rows, table, posts)


def _select_rows(conn: sqlite3.Connection, files: dict[str, tuple]) -> tuple[np.ndarray, ChunkRows]:
    """The ids and rows of every chunk of a file in ``files``, from SQLite."""
    rows = conn.execute(
        "SELECT id, path, start_line, end_line, header, headers, text FROM chunks ORDER BY id"
    ).fetchall()
    rows = [row for row in rows if row[1] in files]
    cols = list(zip(*rows, strict=False)) if rows else [()] * 7
    names = list(dict.fromkeys(cols[1]))
    at = {name: i for i, name in enumerate(names)}
    return np.asarray(cols[0], dtype=np.int64), ChunkRows(
        start=np.asarray(cols[2], dtype=np.int32),
        end=np.asarray(cols[3], dtype=np.int32),
        path=np.fromiter((at[p] for p in cols[1]), np.int32, count=len(rows)),
        names=names,
        header=list(cols[4]),
        headers=list(cols[5]),
        texts=list(cols[6]),
    )
