"""A ``score`` comparable across queries: the chance that a result answers the query.

Ranking fuses signals rescaled per query (the best BM25 of a query is 1 however
weak it is), so the fused score of the top result is about the same for every
query, a stop word's ("of") as much as a full match's, and a ``minScore``
threshold keeps or drops all results alike. The calibrated score adds what
rescaling hides, the absolute evidence of a hit: its ``support``, the chunk's
:func:`evidence` (the share of the query's IDF mass it holds, a date the query
names counting as a word) times its fused score's share of the best hit's. One
logistic per mode maps it, fitted on locomo-dev (``benchmarks/calibrate.py``
fits and prints the coefficients below, and the precision and recall of
thresholds):

- with a query vector, ``support``, ranking's fused score (which holds the
  cosine) and whether a date of the query matched the note;
- keyword-only (no embedder, or it failed), ``support`` alone: without the
  cosine the fused score says little more.

Both weigh the same evidence, so a score means the same with and without
vectors: a full keyword match or a note the query's date routes to scores high,
a stop word low.

The ranking is not changed: scores are made non-increasing down the ranked
list (each is at most the one above it), so ``minScore`` cuts the list at one
place and the order of results is the order ranking chose.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from .scoring import PostingLists

__all__ = ["COEFFICIENTS", "FEATURES", "calibrate", "evidence", "features"]

#: The inputs of each mode's logistic, in order (``fused`` is ranking's score;
#: ``support`` is :func:`evidence` times ``fused`` over the best hit's; ``dated``
#: whether a date of the query matched the note). The raw
#: cosine is left out on purpose: its scale is the embedder's (e5's cosines sit
#: near 0.8, nomic's near 0.5), so weights fitted on one model would mislead on another.
FEATURES = {"hybrid": ("support", "fused", "dated"), "keyword": ("support",)}

#: Intercept then one weight per feature, for searches with and without a query vector.
#: Fitted by ``benchmarks/calibrate.py`` on locomo-dev (default recipe, local embedder).
COEFFICIENTS: dict[str, tuple[float, ...]] = {
    "hybrid": (-4.554, 4.935, 3.336, -1.492),
    "keyword": (-3.67, 6.407),
}


def features(
    fused: float, signals: Mapping[str, float], mode: str, best: float | None = None
) -> tuple[float, ...]:
    """The logistic's inputs of one hit in ``mode`` (see :data:`FEATURES`).

    Args:
        fused: Ranking's score of the hit.
        signals: The hit's signals (``evidence``, ``date_boost``).
        mode: ``hybrid`` or ``keyword``.
        best: Ranking's score of the query's first hit (None: this hit's).
    """
    support = signals.get("evidence", 0.0) * (fused / best if best else 1.0)
    if mode == "keyword":
        return (support,)
    return (support, fused, 1.0 if signals.get("date_boost", 1.0) > 1.0 else 0.0)


def calibrate(rows: Sequence[tuple[float, ...]], mode: str) -> list[float]:
    """Calibrated scores of ranked hits (best first), rounded to 4 places.

    Args:
        rows: :func:`features` of each hit, in rank order.
        mode: ``hybrid`` (a query vector was used) or ``keyword``.
    """
    b0, *weights = COEFFICIENTS[mode]
    out: list[float] = []
    ceiling = 1.0
    for row in rows:
        z = b0 + sum(w * x for w, x in zip(weights, row, strict=True))
        p = 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))
        ceiling = min(ceiling, p)  # never above a better-ranked hit
        out.append(round(ceiling, 4))
    return out


def evidence(
    post: PostingLists, terms: Sequence[str], rows: np.ndarray, dated: np.ndarray, asked: bool
) -> np.ndarray:
    """How much of the query each of ``rows`` holds, by IDF mass: 0..1.

    A query's date counts as one term as specific as a word of a single chunk
    (the chunks of its notes hold it). The share of the query's IDF mass a
    chunk holds is scaled by that mass against such a word's, capped at 1: a
    word most chunks hold ("of") is little evidence even when it is the whole query.

    Args:
        post: The text postings the query's terms are looked up in.
        terms: The query's keyword terms (without its date words).
        rows: The chunks to weigh.
        dated: For each of ``rows``, whether its note has a date the query named.
        asked: Whether the query named a date.
    """
    n_docs = post.n_docs
    unit = math.log1p((n_docs - 0.5) / 1.5)  # Lucene's IDF of a term in one chunk
    held = np.where(dated, unit, 0.0) if asked else np.zeros(len(rows))
    asked_mass = unit if asked else 0.0
    for term in terms:
        docs = post.column(term)[0]
        idf = math.log1p((n_docs - docs.size + 0.5) / (docs.size + 0.5))
        asked_mass += idf
        if docs.size:
            at = np.minimum(np.searchsorted(docs, rows), docs.size - 1)
            held += np.where(docs[at] == rows, idf, 0.0)
    if asked_mass <= 0.0:
        return np.zeros(len(rows))
    return (held / asked_mass) * np.minimum(held / unit, 1.0)
