"""Cross-references between memory files, built from the index's vectors.

The original ``crossref_memories.py`` compared 5 representative chunks per file
(the 5 longest) with every other file's representatives, linked pairs with
cosine >= 0.75, kept 5 refs per chunk and the 10 strongest linked files per
file, and never used the result. Ours builds the same graph from the vectors
already in the index (nothing is re-embedded), stores it in the index's SQLite
file (tables ``crossref_*``, created here), updates it incrementally and feeds
it back into search (``related`` chunks of every hit, and optional
graph-neighbour candidates).

Representatives: a file with at most 5 chunks is represented by all of them
(most daily notes). A longer file gets 5 chunks chosen for *coverage* instead
of length: first the chunk closest to the file's centroid, then repeatedly the
chunk least similar to those already chosen (farthest-point selection), among
chunks of at least 80 characters when there are enough of them. The 5 longest
chunks of a long topic file are often 5 paragraphs about one sub-topic; this
picks one per sub-topic, so links reach every part of the file.

Threshold: 0.75 is the original's value for ``nomic-embed-text``, whose
unrelated texts sit around 0.4-0.6. Anisotropic embedders such as e5 put
*every* pair at 0.8-0.9, where 0.75 links everything to everything. So the
threshold is ``max(0.75, median + z * 1.4826 * MAD)`` over the cosines between
representatives of different files (all pairs, or 20,000 sampled with a fixed
seed), ``z = settings.crossref_calibrate`` (2): the level an unrelated pair
rarely reaches for *this* embedder. Median and MAD are robust, so a small
workspace whose few strong links would dominate a mean or a top quantile
still keeps 0.75; for nomic it stays 0.75, for e5 on LoCoMo (median 0.92,
MAD 0.011) it rises to about 0.955, near the 95th percentile.
``crossref_calibrate=None`` keeps 0.75 as is.

Speed: similarities come from one matrix product per block of 1024
representatives (BLAS), the top refs from the pairs above the threshold; a 5,000-file
workspace builds in seconds (``benchmarks/crossref_build.py``). Incremental
rebuilds recompute only the rows of changed files and of unchanged chunks whose
refs pointed at them or that gain a ref to them, which is exact.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import time
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .index import IndexUnavailableError
from .settings import MemorySettings

if TYPE_CHECKING:
    from .index import MemoryIndex, Snapshot
    from .search import Hit

__all__ = [
    "BuildReport",
    "CrossrefError",
    "add_graph_neighbors",
    "attach_related",
    "build",
    "choose_representatives",
    "format_show",
    "format_summary",
    "export_crossrefs_json",
    "file_graph",
    "graph_summary",
    "show",
]

log = logging.getLogger("langchain_enhanced_memory")

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
_BLOCK = 1024
_DENSE_ROW = 256  # above-threshold pairs per row beyond which rows are partitioned
_MIN_REP_CHARS = 80
_SAMPLE_PAIRS = 20_000
_THRESHOLD_SLACK = 0.01


class CrossrefError(RuntimeError):
    """The graph cannot be built or read (one-line message)."""


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


# ------------------------------------------------------------------ choosing
def choose_representatives(vectors: np.ndarray, lengths: np.ndarray, r: int) -> np.ndarray:
    """Pick up to ``r`` rows of one file's chunk ``vectors`` that cover its topics.

    Args:
        vectors: ``(n, d)`` L2-normalised chunk vectors of one file.
        lengths: Character length of each chunk.
        r: How many to pick.

    Returns:
        Row indices, sorted ascending (all rows when ``n <= r``).
    """
    n = vectors.shape[0]
    if n <= r:
        return np.arange(n)
    pool = np.flatnonzero(lengths >= _MIN_REP_CHARS)
    if pool.size < r:
        pool = np.arange(n)
    v = vectors[pool]
    first = int(np.argmax(v @ v.sum(axis=0)))
    chosen = [first]
    nearest = v @ v[first]
    for _ in range(r - 1):
        nearest[chosen] = np.inf
        nxt = int(np.argmin(nearest))
        chosen.append(nxt)
        nearest = np.maximum(nearest, v @ v[nxt])
    return np.sort(pool[chosen])


def _unit(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return (vectors / np.where(norms == 0, 1.0, norms)).astype(np.float32, copy=False)


def calibrated_threshold(
    vectors: np.ndarray, file_ids: np.ndarray, base: float, z: float | None
) -> float:
    """``max(base, median + z * 1.4826 * MAD)`` of cross-file cosines (see the module doc)."""
    n = vectors.shape[0]
    if z is None or n < 2 or len(np.unique(file_ids)) < 2:
        return float(base)
    if n * n <= 4 * _SAMPLE_PAIRS:  # small: every pair, exactly
        s = vectors @ vectors.T
        sims = s[file_ids[:, None] != file_ids[None, :]]
    else:
        rng = np.random.default_rng(0)
        i = rng.integers(0, n, _SAMPLE_PAIRS)
        j = rng.integers(0, n, _SAMPLE_PAIRS)
        keep = file_ids[i] != file_ids[j]
        sims = np.einsum("ij,ij->i", vectors[i[keep]], vectors[j[keep]])
    if sims.size == 0:
        return float(base)
    median = float(np.median(sims))
    spread = 1.4826 * float(np.median(np.abs(sims - median)))
    return round(max(float(base), median + z * spread), 4)


def _top_refs(
    rows: np.ndarray, vectors: np.ndarray, file_ids: np.ndarray, threshold: float, k: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For representative ``rows``: (source row, target row, sim) of their top-``k`` links.

    One matrix product per block of rows. Links above the threshold are usually
    sparse, so the top ``k`` are taken from the pairs above it (``nonzero`` and
    one sort), not from whole rows; only when nearly everything clears the
    threshold does it fall back to ``argpartition`` over the rows.
    """
    src, dst, sim = [], [], []
    n = vectors.shape[0]
    for lo in range(0, rows.size, _BLOCK):
        block = rows[lo : lo + _BLOCK]
        s = vectors[block] @ vectors.T
        r, c = np.nonzero(s >= threshold)
        if r.size > block.size * _DENSE_ROW:
            s[file_ids[block][:, None] == file_ids[None, :]] = -np.inf
            kk = min(k, n)
            c = np.argpartition(-s, kk - 1, axis=1)[:, :kk] if kk < n else np.argsort(-s, axis=1)
            r = np.repeat(np.arange(block.size), kk)
            c = c.ravel()
        keep = file_ids[block[r]] != file_ids[c]
        r, c = r[keep], c[keep]
        v = s[r, c]
        keep = v >= threshold
        r, c, v = r[keep], c[keep], v[keep]
        order = np.lexsort((c, -v, r))  # by row, strongest first, ties by target
        r, c, v = r[order], c[order], v[order]
        rank = np.arange(r.size) - np.searchsorted(r, r, side="left")
        keep = rank < k
        src.append(block[r[keep]])
        dst.append(c[keep])
        sim.append(v[keep])
    if not src:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, np.zeros(0, dtype=np.float32)
    return np.concatenate(src), np.concatenate(dst), np.concatenate(sim)


def _top_refs_all(
    vectors: np.ndarray, file_ids: np.ndarray, threshold: float, k: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`_top_refs` for every row, computing each pair once (half the products).

    Cosine is symmetric, so block ``i`` is multiplied only with the columns from
    its own start on, and every pair above the threshold is counted for both
    ends. Falls back to :func:`_top_refs` when the pairs are dense.
    """
    n = vectors.shape[0]
    rs, cs, vs = [], [], []
    for lo in range(0, n, _BLOCK):
        hi = min(n, lo + _BLOCK)
        s = vectors[lo:hi] @ vectors[lo:].T
        r, c = np.nonzero(s >= threshold)
        if r.size > (hi - lo) * _DENSE_ROW:
            return _top_refs(np.arange(n), vectors, file_ids, threshold, k)
        v = s[r, c]
        r, c = r + lo, c + lo
        keep = (c > r) & (file_ids[r] != file_ids[c])
        rs.append(r[keep])
        cs.append(c[keep])
        vs.append(v[keep])
    if not rs:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, np.zeros(0, dtype=np.float32)
    a, b, v = np.concatenate(rs), np.concatenate(cs), np.concatenate(vs)
    r, c, v = np.concatenate([a, b]), np.concatenate([b, a]), np.concatenate([v, v])
    order = np.lexsort((c, -v, r))
    r, c, v = r[order], c[order], v[order]
    keep = np.arange(r.size) - np.searchsorted(r, r, side="left") < k
    return r[keep], c[keep], v[keep]


# ------------------------------------------------------------------ storage
def _ensure_tables(conn: sqlite3.Connection) -> None:
    conn.executescript(_TABLES)


def _has_tables(conn: sqlite3.Connection) -> bool:
    row = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type='table' AND name='crossref_refs'"
    ).fetchone()
    return row is not None


def _meta(conn: sqlite3.Connection) -> dict[str, str]:
    return dict(conn.execute("SELECT key, value FROM crossref_meta").fetchall())


def pick_model(index: MemoryIndex) -> str | None:
    """The model whose cached vectors cover the most chunks (None when there are none)."""
    with index._open() as conn:
        row = conn.execute(
            "SELECT e.model, count(*) n FROM chunks c JOIN embed_cache e"
            " ON e.text_hash = c.embed_hash GROUP BY e.model ORDER BY n DESC LIMIT 1"
        ).fetchone()
    return row[0] if row else None


def _signature(settings: MemorySettings, model: str) -> str:
    return json.dumps(
        [
            model,
            settings.crossref_representatives,
            settings.crossref_threshold,
            settings.crossref_calibrate,
            settings.crossref_refs_per_chunk,
            settings.crossref_files_per_file,
        ]
    )


# -------------------------------------------------------------------- build
def build(
    index: MemoryIndex,
    model: str | None = None,
    settings: MemorySettings | None = None,
    *,
    full: bool = False,
) -> BuildReport:
    """Build or update the cross-reference graph from the index's vectors.

    Args:
        index: The (synced, embedded) index.
        model: Whose vectors to use; defaults to the best-covered model in the cache.
        settings: Representatives, threshold and caps (defaults to the index's).
        full: Rebuild everything even when an incremental update would do.

    Raises:
        CrossrefError: No vectors, or some chunks lack a vector for ``model``.
    """
    t0 = time.perf_counter()
    settings = settings or index.settings
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
    with index._open() as conn:
        hashes = dict(conn.execute("SELECT path, hash FROM files").fetchall())
    paths = np.asarray(snap.paths, dtype=object)
    uniq: np.ndarray
    file_ids: np.ndarray
    if len(snap):
        uniq, file_ids = np.unique(paths, return_inverse=True)
    else:
        uniq, file_ids = np.zeros(0, dtype=object), np.zeros(0, dtype=np.int64)
    vectors = _unit(snap.vectors) if len(snap) else np.zeros((0, 1), dtype=np.float32)
    lengths = np.fromiter((len(t) for t in snap.texts), dtype=np.int64, count=len(snap))
    order = np.argsort(file_ids, kind="stable")
    bounds = np.searchsorted(file_ids[order], np.arange(len(uniq) + 1))
    reps_of: dict[str, np.ndarray] = {}
    for f, path in enumerate(uniq):
        rows = order[bounds[f] : bounds[f + 1]]
        pick = choose_representatives(
            vectors[rows], lengths[rows], settings.crossref_representatives
        )
        reps_of[str(path)] = rows[pick]
    rep_rows = np.concatenate(list(reps_of.values())) if reps_of else np.zeros(0, dtype=np.int64)
    rep_vecs = vectors[rep_rows]
    rep_fids = file_ids[rep_rows]
    threshold = calibrated_threshold(
        rep_vecs, rep_fids, settings.crossref_threshold, settings.crossref_calibrate
    )

    with index.writer_lock(), index._open() as conn:
        _ensure_tables(conn)
        meta = _meta(conn)
        stored = {p: h for p, h in conn.execute("SELECT path, hash FROM crossref_files").fetchall()}
        changed = [p for p in reps_of if stored.get(p) != hashes.get(p)]
        deleted = [p for p in stored if p not in reps_of]
        same_params = meta.get("signature") == _signature(settings, model)
        old_thr = float(meta.get("threshold", "nan"))
        drift = abs(old_thr - threshold)
        incremental = not full and same_params and bool(stored) and drift <= _THRESHOLD_SLACK
        if incremental:
            threshold = old_thr
        pos = {int(r): i for i, r in enumerate(rep_rows)}  # chunk row -> representative slot
        if incremental and not changed and not deleted:
            mode, todo = "unchanged", np.zeros(0, dtype=np.int64)
        elif incremental:
            mode = "incremental"
            todo = _rows_to_redo(
                conn, snap, reps_of, pos, rep_vecs, rep_fids, threshold, changed, deleted
            )
        else:
            mode, todo = "full", np.arange(rep_rows.size)
        if mode == "full":
            src, dst, sim = _top_refs_all(
                rep_vecs, rep_fids, threshold, settings.crossref_refs_per_chunk
            )
        else:
            src, dst, sim = _top_refs(
                todo, rep_vecs, rep_fids, threshold, settings.crossref_refs_per_chunk
            )
        conn.execute("BEGIN IMMEDIATE")
        try:
            if mode == "full":
                conn.execute("DELETE FROM crossref_refs")
                conn.execute("DELETE FROM crossref_files")
            else:
                gone = set(changed) | set(deleted)
                conn.executemany(
                    "DELETE FROM crossref_refs WHERE src_path=? OR dst_path=?",
                    [(p, p) for p in gone],
                )
                conn.executemany(
                    "DELETE FROM crossref_refs WHERE src_path=? AND src_line=?",
                    [
                        (snap.paths[rep_rows[i]], int(snap.start[rep_rows[i]]))
                        for i in todo
                        if snap.paths[rep_rows[i]] not in gone
                    ],
                )
                conn.executemany("DELETE FROM crossref_files WHERE path=?", [(p,) for p in gone])
            redo_files = set(reps_of) if mode == "full" else set(changed)
            conn.executemany(
                "INSERT INTO crossref_files VALUES (?,?,?,?,?)",
                [
                    (
                        p,
                        hashes.get(p, ""),
                        snap.kinds[int(reps_of[p][0])],
                        int(bounds[i + 1] - bounds[i]),
                        json.dumps([int(snap.start[r]) for r in reps_of[p]]),
                    )
                    for i, p in enumerate(uniq)
                    if p in redo_files
                ],
            )
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
                    for a, b, s in zip(
                        rep_rows[src].tolist(), rep_rows[dst].tolist(), sim.tolist(), strict=True
                    )
                ],
            )
            _write_graph(conn, settings.crossref_files_per_file)
            conn.executemany(
                "INSERT OR REPLACE INTO crossref_meta VALUES (?,?)",
                [
                    ("signature", _signature(settings, model)),
                    ("threshold", repr(threshold)),
                    ("model", model),
                    ("built_at", time.strftime("%Y-%m-%dT%H:%M:%S")),
                    ("build_id", str(time.time_ns())),
                    ("total_chunks", str(len(snap))),
                ],
            )
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        refs, with_refs = conn.execute(
            "SELECT count(*), count(DISTINCT src_path || ':' || src_line) FROM crossref_refs"
        ).fetchone()
    _RELATED_CACHE.clear()
    return BuildReport(
        mode=mode,
        model=model,
        files=len(reps_of),
        representatives=int(rep_rows.size),
        refs=int(refs),
        chunks_with_refs=int(with_refs),
        threshold=threshold,
        recomputed=int(todo.size),
        changed=changed if mode != "full" else [],
        deleted=deleted,
        seconds=round(time.perf_counter() - t0, 3),
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
def _read(index: MemoryIndex) -> sqlite3.Connection:
    conn = index._open_checked()
    if not _has_tables(conn):
        conn.close()
        raise CrossrefError("no cross-reference graph yet: run `enhanced-memory crossref build`")
    return conn


def _target(path: str, line: int) -> str:
    return f"{path}:{line}"


def file_graph(index: MemoryIndex) -> dict[str, list[dict[str, Any]]]:
    """``{path: [{file, strength}]}``, strongest first (the original's ``file_graph``)."""
    conn = _read(index)
    try:
        out: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for path, target, strength in conn.execute(
            "SELECT path, target, strength FROM crossref_graph ORDER BY path, strength DESC"
        ):
            out[path].append({"file": target, "strength": strength})
        return dict(out)
    finally:
        conn.close()


def export_crossrefs_json(index: MemoryIndex) -> dict[str, Any]:
    """The graph in the original's ``memory/crossrefs.json`` shape."""
    conn = _read(index)
    try:
        meta = _meta(conn)
        chunk_refs: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for sp, sl, dp, dl, dh, s in conn.execute(
            "SELECT src_path, src_line, dst_path, dst_line, dst_header, sim FROM crossref_refs"
            " ORDER BY src_path, src_line, sim DESC"
        ):
            chunk_refs[_target(sp, sl)].append(
                {"target": _target(dp, dl), "sim": s, "header": dh, "file": dp}
            )
    finally:
        conn.close()
    return {
        "total_chunks": int(meta.get("total_chunks", "0")),
        "total_crossrefs": sum(len(v) for v in chunk_refs.values()),
        "chunks_with_refs": len(chunk_refs),
        "chunk_refs": dict(chunk_refs),
        "file_graph": file_graph(index),
    }


def show(index: MemoryIndex, path: str) -> dict[str, Any]:
    """One file's linked files, outgoing chunk refs and up to 20 incoming refs."""
    conn = _read(index)
    try:
        if conn.execute("SELECT 1 FROM crossref_files WHERE path=?", (path,)).fetchone() is None:
            raise CrossrefError(f"{path} is not in the graph (is it a memory file? rebuild?)")
        linked = [
            {"file": t, "strength": s, "refs": n}
            for t, s, n in conn.execute(
                "SELECT target, strength, refs FROM crossref_graph WHERE path=?"
                " ORDER BY strength DESC",
                (path,),
            )
        ]
        outgoing: dict[str, dict[str, Any]] = {}
        for sl, se, sh, dp, dl, dh, s in conn.execute(
            "SELECT src_line, src_end, src_header, dst_path, dst_line, dst_header, sim"
            " FROM crossref_refs WHERE src_path=? ORDER BY src_line, sim DESC",
            (path,),
        ):
            entry = outgoing.setdefault(
                _target(path, sl),
                {"chunk": _target(path, sl), "endLine": se, "header": sh, "refs": []},
            )
            entry["refs"].append({"target": _target(dp, dl), "sim": s, "header": dh, "file": dp})
        incoming = [
            {"source": _target(sp, sl), "header": sh, "target": _target(path, dl), "sim": s}
            for sp, sl, sh, dl, s in conn.execute(
                "SELECT src_path, src_line, src_header, dst_line, sim FROM crossref_refs"
                " WHERE dst_path=? ORDER BY sim DESC LIMIT 20",
                (path,),
            )
        ]
    finally:
        conn.close()
    return {
        "path": path,
        "linked_files": linked,
        "outgoing": list(outgoing.values()),
        "incoming": incoming,
    }


def graph_summary(index: MemoryIndex, top: int = 15) -> dict[str, Any]:
    """Totals and the ``top`` most connected files (links in either direction)."""
    conn = _read(index)
    try:
        meta = _meta(conn)
        refs, with_refs = conn.execute(
            "SELECT count(*), count(DISTINCT src_path || ':' || src_line) FROM crossref_refs"
        ).fetchone()
        files = conn.execute("SELECT count(*) FROM crossref_files").fetchone()[0]
        links = conn.execute("SELECT count(*) FROM crossref_graph").fetchone()[0]
        ranked = conn.execute(
            "SELECT f, count(DISTINCT o), round(sum(s), 4) FROM ("
            " SELECT path f, target o, strength s FROM crossref_graph"
            " UNION ALL SELECT target, path, strength FROM crossref_graph)"
            " GROUP BY f ORDER BY 2 DESC, 3 DESC, f LIMIT ?",
            (top,),
        ).fetchall()
    finally:
        conn.close()
    return {
        "total_chunks": int(meta.get("total_chunks", "0")),
        "total_crossrefs": int(refs),
        "chunks_with_refs": int(with_refs),
        "files": int(files),
        "file_links": int(links),
        "threshold": float(meta.get("threshold", "nan")),
        "model": meta.get("model"),
        "built_at": meta.get("built_at"),
        "most_connected": [{"file": f, "linked_files": n, "strength": s} for f, n, s in ranked],
    }


# ---------------------------------------------------------- use in search
# (index path, generation, build id) -> {(path, line): [(dst_path, dst_line, dst_end,
# dst_header, sim)]}; line -1 holds the whole file's refs.
_RELATED_CACHE: dict[tuple[str, int, str], dict[tuple[str, int], list[tuple]]] = {}


def _current_refs(index: MemoryIndex, generation: int) -> dict[tuple[str, int], list[tuple]]:
    """Stored refs whose two files are unchanged since the build (stale ones are skipped)."""
    refs: dict[tuple[str, int], list[tuple]] = defaultdict(list)
    try:
        conn = index._open_checked()
        try:
            if _has_tables(conn):
                row = conn.execute(
                    "SELECT value FROM crossref_meta WHERE key='build_id'"
                ).fetchone()
                key = (str(index.path), generation, row[0] if row else "")
                cached = _RELATED_CACHE.get(key)
                if cached is not None:
                    return cached
                rows = conn.execute(
                    "SELECT r.src_path, r.src_line, r.dst_path, r.dst_line, r.dst_end,"
                    " r.dst_header, r.sim FROM crossref_refs r"
                    " JOIN crossref_files a ON a.path = r.src_path"
                    " JOIN files fa ON fa.path = a.path AND fa.hash = a.hash"
                    " JOIN crossref_files b ON b.path = r.dst_path"
                    " JOIN files fb ON fb.path = b.path AND fb.hash = b.hash"
                    " ORDER BY r.sim DESC"
                ).fetchall()
                for sp, sl, dp, dl, de, dh, s in rows:
                    refs[(sp, sl)].append((dp, dl, de, dh, s))
                    refs[(sp, -1)].append((dp, dl, de, dh, s))
                _RELATED_CACHE.clear()
                _RELATED_CACHE[key] = refs
        finally:
            conn.close()
    except (sqlite3.Error, IndexUnavailableError) as exc:
        # `related` is optional: a busy index must not fail the search itself.
        log.debug("cross-references unavailable: %s", exc)
    return refs


def _related_of(refs: dict, path: str, line: int, n: int) -> list[tuple]:
    """The chunk's own refs when it is a representative, else its file's strongest refs."""
    own = refs.get((path, line))
    pool = own if own else refs.get((path, -1), [])
    out, seen = [], set()
    for r in pool:
        if (r[0], r[1]) not in seen:
            seen.add((r[0], r[1]))
            out.append(r)
            if len(out) == n:
                break
    return out


def attach_related(index: MemoryIndex, generation: int, hits: list[Hit], n: int) -> None:
    """Fill each hit's ``related`` with its ``n`` strongest cross-referenced chunks."""
    refs = _current_refs(index, generation)
    if not refs:
        return
    for h in hits:
        h.related = [
            {"path": dp, "startLine": dl, "endLine": de, "header": dh, "similarity": s}
            for dp, dl, de, dh, s in _related_of(refs, h.path, h.start_line, n)
        ]


def add_graph_neighbors(
    index: MemoryIndex, snap: Snapshot, scores: np.ndarray, settings: MemorySettings
) -> None:
    """Give graph neighbours of the top hits a score (in place).

    A neighbour ``j`` of hit ``i`` scores at least ``score[i] * sim * weight``,
    so a chunk linked to a strong hit enters the candidate pool even when the
    query shares no word with it.
    """
    refs = _current_refs(index, snap.generation)
    if not refs or not len(snap):
        return
    where = {(p, int(s)): i for i, (p, s) in enumerate(zip(snap.paths, snap.start, strict=True))}
    top = np.argsort(-scores, kind="stable")[: settings.graph_neighbor_top]
    for i in top:
        base = float(scores[i])
        if base <= 0:
            continue
        for dp, dl, _de, _dh, s in _related_of(
            refs, snap.paths[i], int(snap.start[i]), settings.crossref_refs_per_chunk
        ):
            j = where.get((dp, dl))
            if j is not None:
                scores[j] = max(float(scores[j]), base * s * settings.graph_neighbor_weight)


def format_summary(s: dict[str, Any]) -> str:
    """The graph overview as text: totals, then the most connected files."""
    lines = [
        f"{s['files']} files, {s['total_chunks']} chunks, {s['total_crossrefs']} cross-references"
        f" from {s['chunks_with_refs']} chunks, {s['file_links']} file links"
        f" (threshold {s['threshold']:.3f}, {s['model']})",
        "Most connected:",
    ]
    lines += [
        f"  {f['file']}: {f['linked_files']} linked files, strength {f['strength']:.2f}"
        for f in s["most_connected"]
    ]
    return "\n".join(lines)


def format_show(s: dict[str, Any]) -> str:
    """One file's links as text."""
    lines = [f"{s['path']} is linked to:"]
    lines += [f"  {f['file']} (strength {f['strength']:.2f})" for f in s["linked_files"]] or [
        "  nothing above the threshold"
    ]
    for out in s["outgoing"]:
        lines.append(f"{out['chunk']}-{out['endLine']} {out['header']}:")
        lines += [f"  -> {r['target']} {r['header']} ({r['sim']:.2f})" for r in out["refs"]]
    if s["incoming"]:
        lines.append("Referenced by:")
        lines += [f"  <- {r['source']} {r['header']} ({r['sim']:.2f})" for r in s["incoming"]]
    return "\n".join(lines)


# ------------------------------------------------------------------------ CLI
def add_cli_arguments(p: Any) -> None:
    """Arguments of ``enhanced-memory crossref build|show PATH|graph``."""
    from .cli import add_common_arguments

    sub = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    b = sub.add_parser("build", help="build or update the graph from the index's vectors")
    add_common_arguments(b)
    b.add_argument("--full", action="store_true", help="rebuild everything")
    s = sub.add_parser("show", help="a file's linked files, outgoing and incoming refs")
    add_common_arguments(s)
    s.add_argument("path", help="memory file, relative to the workspace")
    g = sub.add_parser("graph", help="totals and the 15 most connected files")
    add_common_arguments(g)
    g.add_argument("--top", type=int, default=15, help="files to list (default 15)")
    g.add_argument("--html", metavar="FILE", help="write a self-contained picture of the graph")
    g.add_argument("--dot", metavar="FILE", help="write the graph as Graphviz DOT")


def run_cli(args: Any) -> int:
    """Run one crossref action."""
    from .cli import CliError, dump, make_engine, report_embedder

    engine = make_engine(args)
    index = engine.index
    try:
        if args.action == "build":
            engine.update_index()
            report = build(index, engine.model_id, engine.settings, full=args.full)
            if args.json:
                dump(report.as_dict())
            else:
                report_embedder(engine)
                print(
                    f"crossref {report.mode}: {report.files} files, {report.representatives}"
                    f" representatives, {report.refs} refs from {report.chunks_with_refs} chunks"
                    f" (threshold {report.threshold:.3f}, {report.model},"
                    f" {report.recomputed} rows computed) in {report.seconds:.2f} s"
                )
            return 0
        if args.action == "show":
            from .memget import MemoryGetError, normalize_path

            try:
                rel = normalize_path(args.path)
            except MemoryGetError as exc:
                raise CliError(str(exc)) from None
            shown = show(index, rel)
            if args.json:
                dump(shown)
            else:
                print(format_show(shown))
            return 0
        summary = graph_summary(index, top=max(1, args.top))
        if args.html or args.dot:
            from . import graphview

            data = graphview.collect(index, engine.settings)
            try:
                if args.html:
                    Path(args.html).write_text(graphview.to_html(data), encoding="utf-8")
                if args.dot:
                    Path(args.dot).write_text(graphview.to_dot(data), encoding="utf-8")
            except OSError as exc:
                raise CliError(f"cannot write the picture: {exc.strerror or exc}") from None
        if args.json:
            dump(summary)
        else:
            print(format_summary(summary))
        return 0
    except CrossrefError as exc:
        raise CliError(str(exc), "run `enhanced-memory crossref build`") from None
