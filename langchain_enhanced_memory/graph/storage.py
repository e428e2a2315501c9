"""Cross-references between memory files: building and storing the graph.

The original ``crossref_memories.py`` compared 5 representative chunks per file
(the 5 longest) with every other file's representatives, linked pairs with
cosine >= 0.75, kept 5 refs per chunk and the 10 strongest linked files per
file, and never used the result. Ours builds the same graph from the vectors
already in the index (nothing is re-embedded), stores it in the index's SQLite
file (tables ``crossref_*``, created here), updates it incrementally and feeds
it back into search (``related`` chunks of every hit, and optional
graph-neighbour candidates).

How representatives and the threshold are chosen, and the top links found,
is :mod:`.compute`; reading it back is :mod:`.queries`, using it in search
:mod:`.related`. Incremental
rebuilds recompute only the rows of changed files and of unchanged chunks whose
refs pointed at them or that gain a ref to them, which is exact.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..core.errors import CrossrefError
from ..core.settings import MemorySettings
from ..core.snapshot import Snapshot
from .compute import calibrated_threshold, choose_representatives, top_refs, top_refs_all, unit

if TYPE_CHECKING:
    from .host import GraphHost

__all__ = ["BuildReport", "build", "has_tables", "pick_model"]

_TABLES = """
CREATE TABLE IF NOT EXISTS crossref_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS crossref_files (
    path TEXT PRIMARY KEY, hash TEXT NOT NULL, kind TEXT NOT NULL, chunks INTEGER NOT NULL,
    reps TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS crossref_refs (
    src_path TEXT NOT NULL, src_line INTEGER NOT NULL, src_end INTEGER NOT NULL,
    src_header TEXT NOT NULL, dst_path TEXT NOT NULL, dst_line INTEGER NOT NULL,
    dst_end INTEGER NOT NULL, dst_header TEXT NOT NULL, sim REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS crossref_refs_src ON crossref_refs(src_path, src_line);
CREATE INDEX IF NOT EXISTS crossref_refs_dst ON crossref_refs(dst_path);
CREATE TABLE IF NOT EXISTS crossref_graph (
    path TEXT NOT NULL, target TEXT NOT NULL, strength REAL NOT NULL, refs INTEGER NOT NULL,
    PRIMARY KEY (path, target)
) WITHOUT ROWID;
"""
_THRESHOLD_SLACK = 0.01


@dataclass
class BuildReport:
    """What one build did."""

    mode: str  # full, incremental or unchanged
    model: str
    files: int
    representatives: int
    refs: int
    chunks_with_refs: int
    threshold: float
    recomputed: int
    changed: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return asdict(self)


def _ensure_tables(conn: sqlite3.Connection) -> None:
    conn.executescript(_TABLES)


def has_tables(conn: sqlite3.Connection) -> bool:
    """Whether the graph tables exist in this index."""
    row = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type='table' AND name='crossref_refs'"
    ).fetchone()
    return row is not None


def _meta(conn: sqlite3.Connection) -> dict[str, str]:
    return dict(conn.execute("SELECT key, value FROM crossref_meta").fetchall())


def pick_model(index: GraphHost) -> str | None:
    """The model whose cached vectors cover the most chunks (None when there are none)."""
    with index.connect() as conn:
        hashes = [h for (h,) in conn.execute("SELECT embed_hash FROM chunks")]
    counts = {m: int(index.with_vector(m, hashes).sum()) for m in index.vector_models()}
    best = max(counts, key=lambda m: counts[m], default=None)
    return best if best is not None and counts[best] else None


def _signature(settings: MemorySettings, model: str) -> str:
    return json.dumps(
        [
            model,
            settings.crossref.crossref_representatives,
            settings.crossref.crossref_threshold,
            settings.crossref.crossref_calibrate,
            settings.crossref.crossref_refs_per_chunk,
            settings.crossref.crossref_files_per_file,
        ]
    )


# -------------------------------------------------------------------- build
def build(
    index: GraphHost,
    model: str | None,
    settings: MemorySettings,
    *,
    full: bool = False,
) -> BuildReport:
    """Build or update the cross-reference graph from the index's vectors.

    Args:
        index: The (synced, embedded) index.
        model: Whose vectors to use; None: the best-covered model in the cache.
        settings: Representatives, threshold and caps.
        full: Rebuild everything even when an incremental update would do.

    Raises:
        CrossrefError: No vectors, or some chunks lack a vector for ``model``.
    """
    t0 = time.perf_counter()
    model, snap = _embedded_snapshot(index, model)
    with index.connect() as conn:
        hashes = dict(conn.execute("SELECT path, hash FROM files").fetchall())
    reps = _representatives(snap, settings)
    with index.writer_lock(), index.connect() as conn:
        _ensure_tables(conn)
        plan = _plan(conn, snap, reps, hashes, settings, model, full)
        src, dst, sim = (
            top_refs_all(
                reps.vecs, reps.fids, plan.threshold, settings.crossref.crossref_refs_per_chunk
            )
            if plan.mode == "full"
            else top_refs(
                plan.todo,
                reps.vecs,
                reps.fids,
                plan.threshold,
                settings.crossref.crossref_refs_per_chunk,
            )
        )
        conn.execute("BEGIN IMMEDIATE")
        try:
            _forget_stale(conn, snap, reps, plan)
            _insert_files(conn, snap, reps, plan, hashes)
            pairs = zip(reps.rows[src].tolist(), reps.rows[dst].tolist(), sim.tolist(), strict=True)
            _insert_refs(conn, snap, pairs)
            _write_graph(conn, settings.crossref.crossref_files_per_file)
            _write_meta(conn, settings, model, plan.threshold, len(snap))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        refs, with_refs = conn.execute(
            "SELECT count(*), count(DISTINCT src_path || ':' || src_line) FROM crossref_refs"
        ).fetchone()
    return BuildReport(
        mode=plan.mode,
        model=model,
        files=len(reps.of),
        representatives=int(reps.rows.size),
        refs=int(refs),
        chunks_with_refs=int(with_refs),
        threshold=plan.threshold,
        recomputed=int(plan.todo.size),
        changed=plan.changed if plan.mode != "full" else [],
        deleted=plan.deleted,
        seconds=round(time.perf_counter() - t0, 3),
    )


def _embedded_snapshot(index: GraphHost, model: str | None) -> tuple[str, Snapshot]:
    """The model (the best-covered one when None) and a snapshot where every chunk has its vector.

    Raises:
        CrossrefError: No vectors, or some chunks lack one.
    """
    model = model or pick_model(index)
    if model is None:
        raise CrossrefError(
            "the index holds no vectors: run `enhanced-memory index` with an embedder first"
        )
    snap = index.snapshot(model)
    if snap.vectors is None or snap.has_vector is None:
        raise CrossrefError(f"no vectors for model {model}")
    if len(snap) and not snap.has_vector.all():
        missing = int((~snap.has_vector).sum())
        raise CrossrefError(
            f"{missing} of {len(snap)} chunks have no {model} vector:"
            " run `enhanced-memory index` with that embedder first"
        )
    return model, snap


@dataclass(frozen=True)
class _Representatives:
    """Each file's representative chunks, and the threshold calibrated over them.

    Attributes:
        files: The files, sorted (``np.unique`` of the chunks' paths).
        bounds: ``bounds[f]:bounds[f + 1]`` are file ``f``'s chunks in path order.
        of: Each file's representative rows.
        rows: Every representative's row, file by file (a slot is an index into it).
        vecs: Their unit vectors.
        fids: Their file numbers (into ``files``).
        threshold: The calibrated link threshold.
    """

    files: np.ndarray
    bounds: np.ndarray
    of: dict[str, np.ndarray]
    rows: np.ndarray
    vecs: np.ndarray
    fids: np.ndarray
    threshold: float


def _representatives(snap: Snapshot, settings: MemorySettings) -> _Representatives:
    """Pick each file's representatives from ``snap``'s vectors and calibrate the threshold."""
    paths = np.asarray(snap.paths, dtype=object)
    uniq: np.ndarray
    file_ids: np.ndarray
    if len(snap):
        uniq, file_ids = np.unique(paths, return_inverse=True)
    else:
        uniq, file_ids = np.zeros(0, dtype=object), np.zeros(0, dtype=np.int64)
    dense = snap.dense_vectors()
    vectors = unit(dense) if len(snap) and dense is not None else np.zeros((0, 1), np.float32)
    lengths = np.fromiter((len(t) for t in snap.texts), dtype=np.int64, count=len(snap))
    order = np.argsort(file_ids, kind="stable")
    bounds = np.searchsorted(file_ids[order], np.arange(len(uniq) + 1))
    reps_of: dict[str, np.ndarray] = {}
    for f, path in enumerate(uniq):
        rows = order[bounds[f] : bounds[f + 1]]
        pick = choose_representatives(
            vectors[rows], lengths[rows], settings.crossref.crossref_representatives
        )
        reps_of[str(path)] = rows[pick]
    rep_rows = np.concatenate(list(reps_of.values())) if reps_of else np.zeros(0, dtype=np.int64)
    rep_vecs = vectors[rep_rows]
    rep_fids = file_ids[rep_rows]
    threshold = calibrated_threshold(
        rep_vecs,
        rep_fids,
        settings.crossref.crossref_threshold,
        settings.crossref.crossref_calibrate,
    )
    return _Representatives(uniq, bounds, reps_of, rep_rows, rep_vecs, rep_fids, threshold)


@dataclass(frozen=True)
class _Plan:
    """What a build redoes: ``mode`` (full, incremental or unchanged) and its slots."""

    mode: str
    todo: np.ndarray  # the representative slots whose refs are computed again
    threshold: float
    changed: list[str]
    deleted: list[str]


def _plan(
    conn: sqlite3.Connection,
    snap: Snapshot,
    reps: _Representatives,
    hashes: dict[str, str],
    settings: MemorySettings,
    model: str,
    full: bool,
) -> _Plan:
    """Full, incremental (the stored threshold kept while it drifts little) or unchanged."""
    meta = _meta(conn)
    stored = {p: h for p, h in conn.execute("SELECT path, hash FROM crossref_files").fetchall()}
    changed = [p for p in reps.of if stored.get(p) != hashes.get(p)]
    deleted = [p for p in stored if p not in reps.of]
    same_params = meta.get("signature") == _signature(settings, model)
    old_thr = float(meta.get("threshold", "nan"))
    drift = abs(old_thr - reps.threshold)
    incremental = not full and same_params and bool(stored) and drift <= _THRESHOLD_SLACK
    if not incremental:
        return _Plan("full", np.arange(reps.rows.size), reps.threshold, changed, deleted)
    if not changed and not deleted:
        return _Plan("unchanged", np.zeros(0, dtype=np.int64), old_thr, changed, deleted)
    pos = {int(r): i for i, r in enumerate(reps.rows)}  # chunk row -> representative slot
    todo = _rows_to_redo(conn, snap, reps.of, pos, reps.vecs, reps.fids, old_thr, changed, deleted)
    return _Plan("incremental", todo, old_thr, changed, deleted)


def _forget_stale(
    conn: sqlite3.Connection, snap: Snapshot, reps: _Representatives, plan: _Plan
) -> None:
    """Delete the rows the plan writes again: all of them, or those of its files and slots."""
    if plan.mode == "full":
        conn.execute("DELETE FROM crossref_refs")
        conn.execute("DELETE FROM crossref_files")
        return
    gone = set(plan.changed) | set(plan.deleted)
    conn.executemany(
        "DELETE FROM crossref_refs WHERE src_path=? OR dst_path=?", [(p, p) for p in gone]
    )
    conn.executemany(
        "DELETE FROM crossref_refs WHERE src_path=? AND src_line=?",
        [
            (snap.paths[reps.rows[i]], int(snap.start[reps.rows[i]]))
            for i in plan.todo
            if snap.paths[reps.rows[i]] not in gone
        ],
    )
    conn.executemany("DELETE FROM crossref_files WHERE path=?", [(p,) for p in gone])


def _insert_files(
    conn: sqlite3.Connection,
    snap: Snapshot,
    reps: _Representatives,
    plan: _Plan,
    hashes: dict[str, str],
) -> None:
    """A ``crossref_files`` row for each file the plan redoes (every file when full)."""
    redo_files = set(reps.of) if plan.mode == "full" else set(plan.changed)
    conn.executemany(
        "INSERT INTO crossref_files VALUES (?,?,?,?,?)",
        [
            (
                p,
                hashes.get(p, ""),
                snap.kinds[int(reps.of[p][0])],
                int(reps.bounds[i + 1] - reps.bounds[i]),
                json.dumps([int(snap.start[r]) for r in reps.of[p]]),
            )
            for i, p in enumerate(reps.files)
            if p in redo_files
        ],
    )


def _insert_refs(
    conn: sqlite3.Connection, snap: Snapshot, pairs: Iterable[tuple[int, int, float]]
) -> None:
    """A ``crossref_refs`` row for each ``(source row, target row, similarity)``."""
    conn.executemany(
        "INSERT INTO crossref_refs VALUES (?,?,?,?,?,?,?,?,?)",
        [
            (
                snap.paths[a],
                int(snap.start[a]),
                int(snap.end[a]),
                snap.header[a],
                snap.paths[b],
                int(snap.start[b]),
                int(snap.end[b]),
                snap.header[b],
                round(float(s), 4),
            )
            for a, b, s in pairs
        ],
    )


def _write_meta(
    conn: sqlite3.Connection, settings: MemorySettings, model: str, threshold: float, total: int
) -> None:
    """What the next build compares against: the signature, the threshold, the model."""
    conn.executemany(
        "INSERT OR REPLACE INTO crossref_meta VALUES (?,?)",
        [
            ("signature", _signature(settings, model)),
            ("threshold", repr(threshold)),
            ("model", model),
            ("built_at", time.strftime("%Y-%m-%dT%H:%M:%S")),
            ("build_id", str(time.time_ns())),
            ("total_chunks", str(total)),
        ],
    )


def _rows_to_redo(
    conn: sqlite3.Connection,
    snap: Snapshot,
    reps_of: dict[str, np.ndarray],
    pos: dict[int, int],
    rep_vecs: np.ndarray,
    rep_fids: np.ndarray,
    threshold: float,
    changed: list[str],
    deleted: list[str],
) -> np.ndarray:
    """Representative slots whose refs may differ after ``changed``/``deleted`` files."""
    redo = {pos[int(r)] for p in changed for r in reps_of[p]}
    if redo:
        # Unchanged chunks that now reach a changed file's chunk above the threshold.
        ch = np.fromiter(sorted(redo), dtype=np.int64)
        s = rep_vecs[ch] @ rep_vecs.T
        s[rep_fids[ch][:, None] == rep_fids[None, :]] = -np.inf
        redo.update(np.flatnonzero((s >= threshold).any(axis=0)).tolist())
    gone = set(changed) | set(deleted)
    if gone:
        slot = {(snap.paths[r], int(snap.start[r])): i for r, i in pos.items()}
        marks = ",".join("?" * len(gone))
        for path, line in conn.execute(
            f"SELECT DISTINCT src_path, src_line FROM crossref_refs WHERE dst_path IN ({marks})",
            list(gone),
        ):
            i = slot.get((path, line))
            if i is not None:
                redo.add(i)
    return np.fromiter(sorted(redo), dtype=np.int64, count=len(redo))


def _write_graph(conn: sqlite3.Connection, per_file: int) -> None:
    """File links: strength = sum of the similarities of the refs between two files."""
    conn.execute("DELETE FROM crossref_graph")
    conn.execute(
        "INSERT INTO crossref_graph SELECT path, target, strength, refs FROM ("
        " SELECT src_path path, dst_path target, round(sum(sim), 4) strength, count(*) refs,"
        "  row_number() OVER (PARTITION BY src_path ORDER BY sum(sim) DESC, dst_path) rn"
        " FROM crossref_refs GROUP BY src_path, dst_path) WHERE rn <= ?",
        (per_file,),
    )


# --------------------------------------------------------------------- read
