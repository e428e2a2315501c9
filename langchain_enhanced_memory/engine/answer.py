"""From a snapshot and a request to calibrated hits: the ranking every engine shares.

:class:`~.search.MemorySearch` (a workspace's index) and
:class:`~.database.DatabaseSearch` (a database scope) load their snapshot
differently and answer with this one path, so the same notes rank the same.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from functools import lru_cache

import numpy as np

from ..core import scoring
from ..core.calibration import calibrate, evidence, features
from ..core.filters import filter_mask, why_empty
from ..core.ranking import rank
from ..core.request import SearchRequest
from ..core.results import Hit, Ranking, SearchResponse
from ..core.settings import MemorySettings
from ..core.snapshot import Snapshot

__all__ = ["Answer", "finish", "ranked_hits", "scan_thread"]

Neighbors = Callable[[Snapshot, np.ndarray], None]


def scan_thread() -> ThreadPoolExecutor:
    """The thread a large vector scan runs on beside the keyword signals (one per process).

    ``rank(..., beside=scan_thread())``. At 1M chunks the scan and the keyword
    signals take about the same time, so a hybrid query takes a tenth less
    (docs/benchmarks.md, "One million chunks"); smaller snapshots do not use it.
    """
    return _scan_thread(os.getpid())


@lru_cache(maxsize=1)
def _scan_thread(pid: int) -> ThreadPoolExecutor:
    # Keyed by process: a forked child has none of its parent's threads.
    return ThreadPoolExecutor(1, thread_name_prefix="vector-scan")


class Answer:
    """What :func:`ranked_hits` found: the hits, the ranking and the filter's mask."""

    __slots__ = ("hits", "mask", "mode", "ranking")

    def __init__(
        self, hits: list[Hit], ranking: Ranking, mask: np.ndarray | None, mode: str
    ) -> None:
        self.hits, self.ranking, self.mask, self.mode = hits, ranking, mask, mode


def ranked_hits(
    snap: Snapshot,
    request: SearchRequest,
    now: datetime,
    settings: MemorySettings,
    qvec: np.ndarray | None,
    embed_query: Callable[[str], np.ndarray] | None,
    neighbors: Neighbors | None = None,
    keep: np.ndarray | None = None,
) -> Answer:
    """Rank ``snap`` for ``request`` and build its best hits with calibrated scores.

    Args:
        snap: The generation searched (with vectors when ``qvec`` is given).
        request: The validated request (its filter, ``k``).
        now: When the query is asked.
        settings: The recipe.
        qvec: The query vector (None: keyword-only).
        embed_query: Embeds an expanded query (PRF), None without a vector.
        neighbors: Adds graph neighbours' scores in place (a workspace's graph).
        keep: The rows the caller keeps (a LangGraph store's item filter), with the
            request's filter a mask applied before top-k; None: every row.
    """
    mask = filter_mask(snap, request.filter, now)
    if keep is not None:
        mask = keep if mask is None else mask & keep
    ranking = rank(snap, request.query, now, settings, qvec, embed_query, mask, scan_thread())
    if neighbors is not None:
        neighbors(snap, ranking.scores)
        if mask is not None:
            ranking.scores[~mask] = 0.0
    order = scoring.top_k(ranking.scores, request.k)
    # A chunk that no signal matched is noise, not a result.
    rows = order[ranking.scores[order] > 0]
    hits = [_hit(snap, int(i), ranking) for i in rows]
    mode = "hybrid" if qvec is not None else "keyword"
    # How much of the query each hit holds, in both modes: the fused score is rescaled
    # per query, so a stop word's best hit fuses about as high as a full match's.
    dated = ranking.signals["date_boost"][rows] > 1.0
    held = evidence(snap.text_post, ranking.terms, rows, dated, bool(ranking.temporal_dates))
    for hit, e in zip(hits, held, strict=True):
        hit.signals["evidence"] = round(float(e), 6)
    for hit, score in zip(
        hits,
        calibrate([features(h.score, h.signals, mode, hits[0].score) for h in hits], mode),
        strict=True,
    ):
        hit.signals["fused"], hit.score = hit.score, score
    return Answer(hits, ranking, mask, mode)


def finish(
    response: SearchResponse,
    request: SearchRequest,
    answer: Answer,
    started: float,
    timings: dict[str, float],
) -> SearchResponse:
    """Apply ``min_score``, say why a filter found nothing, and record the timings."""
    if answer.mask is not None:
        response.filter_note = why_empty(request.filter, int(answer.mask.sum()), len(answer.hits))
    if request.min_score is not None:
        response.hits = [h for h in answer.hits if h.score >= request.min_score]
        response.filtered = len(answer.hits) - len(response.hits)
    timings["rankMs"] = ms_since(started) - timings["syncMs"] - timings["embedMs"]
    response.timings = {name: round(ms, 2) for name, ms in timings.items()}
    response.timings["searchMs"] = round(ms_since(started), 2)
    return response


def ms_since(started: float) -> float:
    """Milliseconds since ``started`` (a ``time.perf_counter()``)."""
    return (time.perf_counter() - started) * 1000


def _hit(snap: Snapshot, i: int, ranking: Ranking) -> Hit:
    return Hit(
        path=snap.paths[i],
        start_line=int(snap.start[i]),
        end_line=int(snap.end[i]),
        header=snap.header[i],
        headers=snap.headers[i],
        text=snap.texts[i],
        score=round(float(ranking.scores[i]), 6),
        signals={name: round(float(v[i]), 6) for name, v in ranking.signals.items()},
        kind=snap.kinds[i],
        date=snap.dates[i],
    )
