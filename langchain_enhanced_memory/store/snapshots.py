"""Loading a generation as a :class:`..core.snapshot.Snapshot`: texts, postings and matrices.

The postings and, once every chunk has a vector, the chunk and line-vector
matrices are stored in ``derived`` as ready-to-load numpy blobs, so a fresh
process searches without re-tokenizing or re-assembling anything. A loaded
snapshot is kept until the generation changes.
"""

from __future__ import annotations

import logging
import sqlite3
from datetime import date

import numpy as np

from ..core.scoring import Postings
from ..core.settings import MemorySettings
from ..core.snapshot import Snapshot
from .db import IndexDB, generation_of
from .sync import POSTINGS_FIELDS, unpack_postings
from .vectors import line_hashes

__all__ = ["SnapshotCache"]

log = logging.getLogger("langchain_enhanced_memory")


class SnapshotCache:
    """This process's copy of the current generation (and its matrices, per model)."""

    def __init__(self, db: IndexDB, settings: MemorySettings) -> None:
        self.db = db
        self.settings = settings
        self._snapshot: Snapshot | None = None
        self._vector_cache: dict[str, tuple[int, np.ndarray, np.ndarray]] = {}
        self._line_cache: dict[str, tuple[int, np.ndarray, np.ndarray]] = {}

    def get(self, model: str | None) -> Snapshot:
        """The current generation, with ``model``'s vectors (none when ``model`` is None)."""
        with self.db.reader() as conn:
            conn.execute("BEGIN")
            try:
                generation = generation_of(conn)
                snap = self._snapshot
                if snap is None or snap.generation != generation:
                    snap = _load_text(conn, generation)
                    self._snapshot = snap
                if model is not None and snap.model != model:
                    snap.vectors, snap.has_vector = self._vectors(conn, model, generation)
                    snap.line_vectors = snap.line_owner = None
                    if self.settings.line_vector_share:
                        snap.line_vectors, snap.line_owner = self._lines(
                            conn, model, generation, snap.vectors.shape[1]
                        )
                    snap.model = model
                elif model is None:
                    snap.vectors = snap.has_vector = snap.model = None
                    snap.line_vectors = snap.line_owner = None
            finally:
                conn.execute("COMMIT")
        return snap

    def forget_text(self) -> None:
        """Drop the text snapshot: a sync wrote a new generation."""
        self._snapshot = None

    def forget_vectors(self, model: str) -> None:
        """Drop ``model``'s matrices: new vectors were stored."""
        self._vector_cache.pop(model, None)
        self._line_cache.pop(model, None)
        if self._snapshot is not None and self._snapshot.model == model:
            self._snapshot.model = None

    def _vectors(
        self, conn: sqlite3.Connection, model: str, generation: int
    ) -> tuple[np.ndarray, np.ndarray]:
        cached = self._vector_cache.get(model)
        if cached and cached[0] == generation:
            return cached[1], cached[2]
        # Raw float32 rows, read without a copy (the matrix is the biggest thing in memory).
        name = f"matrix:{model}"
        row = conn.execute("SELECT generation, data FROM derived WHERE name=?", (name,)).fetchone()
        if row and row[0] == generation:
            n = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
            flat = np.frombuffer(row[1], dtype=np.float32)
            vectors = flat.reshape(n, -1) if n else np.zeros((0, 0), np.float32)
            mask = np.ones(n, dtype=bool)
        else:
            vectors, mask = _assemble_vectors(conn, model)
        if mask.all() and not (row and row[0] == generation):
            self._save(name, generation, vectors)
        self._vector_cache[model] = (generation, vectors, mask)
        return vectors, mask

    def _lines(
        self, conn: sqlite3.Connection, model: str, generation: int, dim: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """Line vectors and the chunk row of each; lines not embedded yet are left out."""
        cached = self._line_cache.get(model)
        if cached and cached[0] == generation:
            return cached[1], cached[2]
        names = (f"lines:{model}", f"line-owner:{model}")
        stored = dict(
            conn.execute(
                "SELECT name, data FROM derived WHERE name IN (?, ?) AND generation=?",
                (*names, generation),
            ).fetchall()
        )
        owner = np.frombuffer(stored.get(names[1], b""), dtype=np.int32)
        flat = np.frombuffer(stored.get(names[0], b""), dtype=np.float16)
        if len(stored) == 2 and flat.size == owner.size * dim:
            vectors = flat.reshape(owner.size, dim)
        else:  # not stored yet for this generation (or by an older version)
            vectors, owner, complete = _assemble_lines(conn, model, self.settings)
            if complete:
                self._save(names[0], generation, vectors)
                self._save(names[1], generation, owner)
        self._line_cache[model] = (generation, vectors, owner)
        return vectors, owner

    def _save(self, name: str, generation: int, array: np.ndarray) -> None:
        """Persist a complete array (kept in its dtype) so the next process loads it in one read."""
        try:
            with self.db.open() as conn:
                conn.execute(
                    "INSERT OR REPLACE INTO derived VALUES (?, ?, ?)",
                    (name, generation, np.ascontiguousarray(array).tobytes()),
                )
        except sqlite3.Error as exc:  # read-only index: fine, we assemble again next time
            log.debug("could not cache the vector matrix: %s", exc)


def _load_text(conn: sqlite3.Connection, generation: int) -> Snapshot:
    rows = conn.execute(
        "SELECT c.id, c.path, c.start_line, c.end_line, c.header, c.headers, c.text,"
        " f.kind, f.date FROM chunks c JOIN files f ON f.path = c.path ORDER BY c.id"
    ).fetchall()
    blob = conn.execute("SELECT data FROM derived WHERE name='postings'").fetchone()
    if blob is None:
        empty = Postings.build([])
        posts = {name: empty for name in POSTINGS_FIELDS}
    else:
        posts = unpack_postings(blob[0])
    cols = list(zip(*rows, strict=False)) if rows else [()] * 9
    dates = list(cols[8])
    return Snapshot(
        generation=generation,
        ids=np.asarray(cols[0], dtype=np.int64),
        paths=list(cols[1]),
        start=np.asarray(cols[2], dtype=np.int32),
        end=np.asarray(cols[3], dtype=np.int32),
        header=list(cols[4]),
        headers=list(cols[5]),
        texts=list(cols[6]),
        kinds=list(cols[7]),
        dates=dates,
        day=np.asarray(
            [date.fromisoformat(d).toordinal() if d else -1 for d in dates], dtype=np.int64
        ),
        text_post=posts["text"],
        phrase_post=posts["phrase"],
        header_post=posts["header"],
        path_post=posts["path"],
    )


def _assemble_vectors(conn: sqlite3.Connection, model: str) -> tuple[np.ndarray, np.ndarray]:
    rows = conn.execute(
        "SELECT e.vector FROM chunks c LEFT JOIN embed_cache e"
        " ON e.model=? AND e.text_hash=c.embed_hash ORDER BY c.id",
        (model,),
    ).fetchall()
    dim = next((len(r[0]) // 4 for r in rows if r[0] is not None), 0)
    vectors = np.zeros((len(rows), dim), dtype=np.float32)
    mask = np.zeros(len(rows), dtype=bool)
    for i, (blob,) in enumerate(rows):
        if blob is not None and len(blob) == dim * 4:
            vectors[i] = np.frombuffer(blob, dtype=np.float32)
            mask[i] = True
    return vectors, mask


def _assemble_lines(
    conn: sqlite3.Connection, model: str, settings: MemorySettings
) -> tuple[np.ndarray, np.ndarray, bool]:
    lines = line_hashes(conn, settings)
    found: dict[str, bytes] = {}
    wanted = sorted({h for _, h, _ in lines})
    for lo in range(0, len(wanted), 500):
        part = wanted[lo : lo + 500]
        found.update(
            conn.execute(
                "SELECT text_hash, vector FROM embed_cache WHERE model=?"
                f" AND text_hash IN ({','.join('?' * len(part))})",
                (model, *part),
            ).fetchall()
        )
    dim = next((len(b) // 4 for b in found.values()), 0)
    kept = [(row, found[h]) for row, h, _ in lines if len(found.get(h, b"")) == dim * 4 > 0]
    # Half precision: lines outnumber chunks several times over, and a cosine
    # needs no more than three digits to rank.
    vectors = np.zeros((len(kept), dim), dtype=np.float16)
    for i, (_, blob) in enumerate(kept):
        vectors[i] = np.frombuffer(blob, dtype=np.float32)
    owner = np.asarray([row for row, _ in kept], dtype=np.int32)
    return vectors, owner, len(kept) == len(lines)
