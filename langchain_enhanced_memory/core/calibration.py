"""A ``score`` comparable across queries: the chance that a result answers the query.

Ranking fuses signals rescaled per query (the best BM25 of a query is 1 however
weak it is), so the fused score of the top result is about the same for every
query and a ``minScore`` threshold keeps or drops all results alike. The
calibrated score adds what rescaling hides, the absolute evidence of a hit:
the share of query terms the chunk holds (``coverage``) and whether a date of
the query matched its note, and maps them with ranking's fused score through
a logistic fitted on locomo-dev (``benchmarks/calibrate.py`` fits and prints the
coefficients below, and the precision and recall of thresholds).

The ranking is not changed: scores are made non-increasing down the ranked
list (each is at most the one above it), so ``minScore`` cuts the list at one
place and the order of results is the order ranking chose.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

__all__ = ["COEFFICIENTS", "FEATURES", "calibrate", "features"]

#: The inputs of the logistic, in order (``fused`` is ranking's score). The raw
#: cosine is left out on purpose: its scale is the embedder's (e5's cosines sit
#: near 0.8, nomic's near 0.5), so weights fitted on one model would mislead on another.
FEATURES = ("fused", "coverage", "dated")

#: Intercept then one weight per feature, for searches with and without a query vector.
#: Fitted by ``benchmarks/calibrate.py`` on locomo-dev (default recipe, local embedder).
COEFFICIENTS: dict[str, tuple[float, ...]] = {
    "hybrid": (-6.218, 5.865, 3.357, -2.012),
    "keyword": (-5.828, 6.175, 3.371, -0.814),
}


def features(fused: float, signals: Mapping[str, float]) -> tuple[float, ...]:
    """The logistic's inputs of one hit (see :data:`FEATURES`)."""
    return (
        fused,
        signals.get("coverage", 0.0),
        1.0 if signals.get("date_boost", 1.0) > 1.0 else 0.0,
    )


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
