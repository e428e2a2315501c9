"""Signals to one score: normalisation, fusion, the date boost. Pure numpy, no I/O.

A query's signals (BM25 and the other lexical fields of :mod:`.scoring`, the
vector cosines of :mod:`.vectorset`) are each scaled to [0, 1], then fused
linearly (:func:`fuse_lexical` once, :func:`fuse_vector` per pass) or by
reciprocal rank (:func:`rrf`), and multiplied by the date boost
(:func:`date_multiplier`); :mod:`.ranking` runs them in that order.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from .settings import FusionWeights

__all__ = [
    "blend_group_max",
    "date_multiplier",
    "fuse_lexical",
    "fuse_vector",
    "max_normalize",
    "minmax_bounds",
    "minmax_normalize",
    "no_boost",
    "rrf",
    "without_vector",
]


def max_normalize(
    scores: np.ndarray, mask: np.ndarray | None = None, out: np.ndarray | None = None
) -> np.ndarray:
    """Scale to [0, 1] by the maximum (all zeros stay zeros).

    With ``mask``, the maximum of the masked rows (a filtered search ranks only those).
    ``out`` receives the result (it may be ``scores``: in place); a new array when None.
    """
    kept = scores if mask is None else scores[mask]
    top = float(kept.max()) if kept.size else 0.0
    return np.divide(scores, np.float32(top), out=out) if top > 0 else scores


def minmax_bounds(scores: np.ndarray, mask: np.ndarray | None = None) -> tuple[float, float] | None:
    """The min and max :func:`minmax_normalize` scales by (of the masked rows); None: no rows."""
    kept = scores if mask is None else scores[mask]
    return (float(kept.min()), float(kept.max())) if kept.size else None


def minmax_normalize(
    scores: np.ndarray,
    mask: np.ndarray | None = None,
    out: np.ndarray | None = None,
    bounds: tuple[float, float] | None = None,
) -> np.ndarray:
    """Scale to [0, 1] by min and max; a constant array becomes zeros.

    With ``mask``, the min and max of the masked rows (the others fall outside [0, 1]).
    ``out`` receives the result (it may be ``scores``: in place); a new array when None.
    ``bounds``: :func:`minmax_bounds` taken already (of a larger array these rows are
    some of: each row comes out as it would there).
    """
    if bounds is None:
        bounds = minmax_bounds(scores, mask)
    if bounds is None:
        return np.zeros_like(scores) if mask is not None else scores
    lo, hi = bounds
    if hi - lo < 1e-12:
        if out is None:
            return np.zeros_like(scores)
        out.fill(0.0)
        return out
    out = np.subtract(scores, np.float32(lo), out=out, dtype=np.float32)
    out /= np.float32(hi - lo)
    return out


def fuse_lexical(
    weights: FusionWeights, keyword: np.ndarray, header: np.ndarray, filepath: np.ndarray
) -> np.ndarray:
    """The lexical part of the linear fusion: the weighted keyword, header and path signals.

    Float32, summed in this order in one new array (at 1M rows each new array is 4 MB).
    """
    out = np.multiply(keyword, weights.keyword, dtype=np.float32)
    part: np.ndarray | None = None
    for signal, weight in ((header, weights.header), (filepath, weights.filepath)):
        if weight and not _zero_view(signal):  # adding zeros leaves the sum as it is
            part = np.empty_like(out) if part is None else part
            out += np.multiply(signal, weight, out=part, dtype=np.float32)
    return out


def _zero_view(signal: np.ndarray) -> bool:
    """Whether ``signal`` is :func:`.scoring.match_fraction`'s no-match zeros (a read-only view)."""
    return signal.ndim == 1 and signal.strides == (0,) and not (signal.size and signal[0])


def fuse_vector(
    weight: float, vector: np.ndarray, lexical: np.ndarray, out: np.ndarray | None = None
) -> np.ndarray:
    """The linear fusion: ``weight * vector + lexical`` (:func:`fuse_lexical`), float32.

    ``out`` receives it (a new array when None; it may not be ``lexical``).
    """
    out = np.multiply(vector, weight, out=out, dtype=np.float32)
    out += lexical
    return out


def rrf(signals: Sequence[tuple[np.ndarray, np.ndarray]], k: float = 60.0) -> np.ndarray:
    """Reciprocal rank fusion: the sum of ``1 / (k + rank)`` over the signals.

    Args:
        signals: ``(scores, retrieved)`` pairs; a document adds nothing for a
            signal that did not retrieve it (a keyword signal that it does not match).
        k: The RRF constant (60 in Cormack et al., 2009).
    """
    n = signals[0][0].shape[0] if signals else 0
    out = np.zeros(n, dtype=np.float32)
    for scores, retrieved in signals:
        ranks = np.empty(n, dtype=np.float32)
        ranks[np.argsort(-scores, kind="stable")] = np.arange(1, n + 1, dtype=np.float32)
        out += np.where(retrieved, 1.0 / (k + ranks), 0.0).astype(np.float32)
    return out


@lru_cache(maxsize=16)  # every keyword-only search asks, and weights are frozen
def without_vector(weights: FusionWeights) -> FusionWeights:
    """Weights for keyword-only search: the vector share spread over the other three."""
    rest = weights.keyword + weights.header + weights.filepath
    if rest <= 0:
        return FusionWeights(vector=0.0, keyword=1.0, header=0.0, filepath=0.0)
    scale = (rest + weights.vector) / rest
    return FusionWeights(
        vector=0.0,
        keyword=weights.keyword * scale,
        header=weights.header * scale,
        filepath=weights.filepath * scale,
    )


def blend_group_max(
    values: np.ndarray, groups: np.ndarray, base: np.ndarray, share: float
) -> np.ndarray:
    """``base``, where a group has values ``share * (its best value) + (1 - share) * base``.

    A new array; ``base`` is not written to.

    Args:
        values: One value per member (e.g. the cosine of each line).
        groups: Group of each member (e.g. the chunk a line belongs to), in
            non-decreasing order so each group's members are contiguous.
        base: One value per group (e.g. each chunk's own cosine).
        share: The best member's share where a group has members.
    """
    out = np.array(base, dtype=np.float32, copy=True)
    if values.size:
        starts = np.flatnonzero(np.r_[True, groups[1:] != groups[:-1]])
        rows = groups[starts]
        out[rows] = share * np.maximum.reduceat(values, starts) + (1 - share) * out[rows]
    return out


def no_boost(n: int) -> np.ndarray:
    """A date boost of 1 for each of ``n`` chunks: a read-only view of one value, not n of them."""
    return np.broadcast_to(np.float32(1.0), (n,))


def date_multiplier(
    chunk_days: np.ndarray,
    days: Sequence[int],
    ranges: Sequence[tuple[int, int]],
    day_boost: float,
    range_boost: float,
) -> np.ndarray:
    """Per-chunk boost for chunks of daily notes on the query's dates.

    Args:
        chunk_days: Date ordinal of each chunk's daily note, ``-1`` when undated.
        days: Ordinals of single days named by the query (strongest boost).
        ranges: Inclusive ordinal ranges (a weaker boost: a week is vaguer than a day).
        day_boost: Multiplier for a named day.
        range_boost: Multiplier inside a range.

    Without days or ranges: ones, as a read-only view of one value (nothing to
    boost, so no array of a million rows to allocate and fill per query).
    """
    if not days and not ranges:
        return no_boost(chunk_days.shape[0])
    mult = np.ones(chunk_days.shape[0], dtype=np.float32)
    for lo, hi in ranges:
        mult[(chunk_days >= lo) & (chunk_days <= hi)] = range_boost
    if days:
        # A compare per day for a few days: isin builds a table first, slower for so few.
        if len(days) <= 3:
            named = chunk_days == days[0]
            for day in days[1:]:
                named |= chunk_days == day
        else:
            named = np.isin(chunk_days, np.asarray(days, dtype=chunk_days.dtype))
        mult[named] = day_boost
    return mult
