"""The cross-reference graph's mathematics: representatives, threshold, top links (pure numpy).

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
seed), ``z = settings.crossref.crossref_calibrate`` (2): the level an unrelated pair
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

import numpy as np

__all__ = ["calibrated_threshold", "choose_representatives", "top_refs", "top_refs_all", "unit"]

_BLOCK = 1024
_DENSE_ROW = 256  # above-threshold pairs per row beyond which rows are partitioned
_MIN_REP_CHARS = 80
_SAMPLE_PAIRS = 20_000


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


def unit(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to length 1 (zero rows stay zero), float32."""
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


def top_refs(
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


def top_refs_all(
    vectors: np.ndarray, file_ids: np.ndarray, threshold: float, k: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`top_refs` for every row, computing each pair once (half the products).

    Cosine is symmetric, so block ``i`` is multiplied only with the columns from
    its own start on, and every pair above the threshold is counted for both
    ends. Falls back to :func:`top_refs` when the pairs are dense.
    """
    n = vectors.shape[0]
    rs, cs, vs = [], [], []
    for lo in range(0, n, _BLOCK):
        hi = min(n, lo + _BLOCK)
        s = vectors[lo:hi] @ vectors[lo:].T
        r, c = np.nonzero(s >= threshold)
        if r.size > (hi - lo) * _DENSE_ROW:
            return top_refs(np.arange(n), vectors, file_ids, threshold, k)
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
