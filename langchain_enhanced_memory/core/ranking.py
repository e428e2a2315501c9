"""Rank every chunk of a snapshot for one query: the fusion of the four signals.

Pure: numpy over the snapshot's arrays, no I/O. The recipe's strategies
(:mod:`.recipe`) supply the date routing and the lexical signals; this module
fuses them with the vector signal, applies the date boost, and runs PRF when
it is on. Given an executor, a large snapshot's vector scan runs on it while
the caller computes the keyword signals (SimSIMD and numpy release the GIL).
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Executor, Future
from dataclasses import asdict, dataclass
from datetime import date, datetime

import numpy as np

from . import fusion, scoring
from .recipe import Lexical, recipe
from .results import Ranking
from .settings import FusionWeights, MemorySettings
from .snapshot import Snapshot
from .text import STOPWORDS_EN, query_terms
from .vectorset import THREADED_ROWS

__all__ = ["rank"]


def rank(
    snap: Snapshot,
    query: str,
    now: datetime | date,
    settings: MemorySettings,
    qvec: np.ndarray | None,
    embed_query: Callable[[str], np.ndarray] | None = None,
    mask: np.ndarray | None = None,
    beside: Executor | None = None,
) -> Ranking:
    """Score every chunk of ``snap`` for ``query``.

    Every profile and every ablation runs this one path; the settings' recipe
    decides how dates and keywords are read.

    Args:
        snap: The index snapshot (with vectors when ``qvec`` is given).
        query: The user's query.
        now: The moment the query is asked; relative dates resolve against it.
        settings: Weights, thresholds and switches.
        qvec: The L2-normalised query vector, or None for keyword-only.
        embed_query: Embeds an expanded query, for PRF with ``prf_reembed``.
        mask: Rows a filter keeps (:func:`.filters.filter_mask`): the per-query
            normalisations run over those rows and the others score 0, so the kept
            rows rank as they would in a workspace of only them (BM25's statistics
            aside) and top-k picks among them. None keeps every row.
        beside: Runs the vector scan of a snapshot of :data:`.vectorset.THREADED_ROWS`
            rows or more while this thread computes the keyword signals (one
            thread is enough); None: everything on this thread.
    """
    strategies = recipe(settings)
    dq = strategies.dates.parse(query, now)
    text = strategies.dates.keyword_text(query, dq)
    mult = strategies.dates.multiplier(snap, dq, settings.ranking)
    terms, pairs = strategies.lexical.terms(text)
    # Without a date in the query every multiplier is 1 and the prior 0: nothing to apply.
    # With one, only the rows of its dates move (a day is a few dozen rows of a million).
    boosted = np.flatnonzero(mult != 1.0) if dq else None
    q = _Query(snap, settings, mask, beside, strategies.lexical, pairs, mult, boosted)
    scores, signals = _score(q, terms, qvec)
    signals["date_boost"] = mult
    dates = [d.isoformat() for d in dq.days] + [
        f"{a.isoformat()}..{b.isoformat()}" for a, b in dq.ranges
    ]
    expansion: list[str] = []
    if (
        settings.ranking.prf_enabled
        and not dq
        and len(snap)
        and float(scores.max()) < settings.ranking.prf_threshold
    ):
        scores, expansion = _feedback(q, scores, text, terms, qvec, embed_query)
    if settings.transcripts.session_prior != 1.0:
        scores = scores.copy()
        scores[_session_rows(snap)] *= settings.transcripts.session_prior
    # The index's own terms, whatever the recipe's lexical strategy reads: the calibrated
    # score weighs them against the text postings.
    return Ranking(scores, signals, dates, expansion, query_terms(text))


@dataclass(slots=True)  # not frozen: a frozen dataclass's __init__ costs each query microseconds
class _Query:
    """What every pass over one query shares: the rows, the filter, the date boost."""

    snap: Snapshot
    settings: MemorySettings
    mask: np.ndarray | None
    beside: Executor | None
    lexical: Lexical
    pairs: list[str]
    mult: np.ndarray
    boosted: np.ndarray | None  # the rows whose multiplier is not 1; None: no date asked


def _score(
    q: _Query, terms: list[str], qv: np.ndarray | None
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """One pass: the fused score of every row for ``terms`` (and ``qv``), and the signals."""
    vector = _vector_signal(q.snap, qv, q.settings, q.mask, q.beside)
    sig = q.lexical.signals(q.snap, terms, q.pairs, q.mask)
    coverage = sig.pop("_coverage")
    fuser = _Fuser(q, sig, _weights(q, qv, coverage), qv is not None)
    cos, sig["vector"], bounds = vector.result()
    out = fuser.fused(sig["vector"])
    second = _second_look(q.snap, qv, q.settings, out, cos)
    if second is not None:
        out = _fuse_again(fuser, second, cos, bounds, out)
    # Shown with each hit, unrescaled: the share of query terms it holds, its raw cosine.
    sig["coverage"], sig["cosine"] = coverage, cos
    return out, sig


def _weights(q: _Query, qv: np.ndarray | None, coverage: np.ndarray) -> FusionWeights:
    """The fusion's weights: without a vector share keyword-only, adaptive when few terms match."""
    settings = q.settings
    if qv is None:
        return fusion.without_vector(settings.ranking.weights)
    kept_coverage = coverage if q.mask is None else coverage[q.mask]
    if float(kept_coverage.max(initial=0.0)) < settings.ranking.adaptive_keyword_threshold:
        return settings.ranking.adaptive_weights
    return settings.ranking.weights


class _Fuser:
    """One pass's fusion of its signals into a score, the date boost and the filter applied."""

    __slots__ = ("hybrid", "lexical_part", "q", "sig", "weights")

    def __init__(
        self, q: _Query, sig: dict[str, np.ndarray], weights: FusionWeights, hybrid: bool
    ) -> None:
        self.q, self.sig, self.weights, self.hybrid = q, sig, weights, hybrid
        # The lexical part of a linear fusion is the same in both passes: summed once.
        self.lexical_part = (
            None
            if q.settings.ranking.fusion == "rrf"
            else fusion.fuse_lexical(weights, sig["keyword"], sig["header"], sig["filepath"])
        )

    def fused(
        self, vector: np.ndarray, out: np.ndarray | None = None, rows: np.ndarray | None = None
    ) -> np.ndarray:
        """The fused scores of every row, or of ``rows`` (``vector`` then holds theirs)."""
        q = self.q
        if self.lexical_part is None:
            f = self._rrf(vector)
        elif not self.hybrid:
            # Keyword-only: no vector share, and one pass (nothing reads it after).
            f = self.lexical_part
        else:
            part = self.lexical_part if rows is None else self.lexical_part[rows]
            f = fusion.fuse_vector(self.weights.vector, vector, part, out)
        if q.boosted is not None:  # f * mult + (mult - 1) * prior, at the rows it changes
            here = q.mult if rows is None else q.mult[rows]
            at = q.boosted if rows is None else np.flatnonzero(here != 1.0)
            factor = here[at]
            moved = f[at]
            moved *= factor
            moved += (factor - 1.0) * q.settings.ranking.date_prior
            f[at] = moved
        # A filter's rows only: the others score 0 and top-k never sees them.
        return f if q.mask is None else np.where(q.mask, f, np.float32(0.0))

    def _rrf(self, vector: np.ndarray) -> np.ndarray:
        q = self.q
        keep = np.ones(len(q.snap), bool) if q.mask is None else q.mask
        named = {**self.sig, "vector": vector}
        return fusion.rrf(
            [
                # Every chunk has a cosine; a lexical signal retrieves only its matches.
                (named[name], keep if name == "vector" else (named[name] > 0) & keep)
                for name, w in asdict(self.weights).items()
                if w > 0 and (name != "vector" or self.hybrid)
            ],
            q.settings.ranking.rrf_k,
        )


def _fuse_again(
    fuser: _Fuser,
    second: tuple[np.ndarray, np.ndarray],
    cos: np.ndarray,
    bounds: tuple[float, float] | None,
    out: np.ndarray,
) -> np.ndarray:
    """The scores again once the best candidates' cosines are redone (``second``)."""
    rows, values = second
    q, sig = fuser.q, fuser.sig
    if (
        q.mask is None
        and fuser.lexical_part is not None
        and _bounds_hold(bounds, values, sig["vector"][rows])
    ):
        # Only the candidates' cosines moved and the min-max held: every other
        # row's vector signal, and so its score, is what the first pass made.
        sig["vector"][rows] = shown = fusion.minmax_normalize(values, bounds=bounds)
        out[rows] = fuser.fused(shown, rows=rows)
        return out
    again = cos.copy()
    again[rows] = values
    if q.settings.vectors.vector_norm == "minmax":
        again = fusion.minmax_normalize(again, q.mask, out=again)
    sig["vector"] = again
    # The first pass's scores are spent once its candidates are chosen.
    return fuser.fused(again, out if q.mask is None else None)


def _feedback(
    q: _Query,
    scores: np.ndarray,
    text: str,
    terms: list[str],
    qvec: np.ndarray | None,
    embed_query: Callable[[str], np.ndarray] | None,
) -> tuple[np.ndarray, list[str]]:
    """Pseudo-relevance feedback: the scores with the top chunks' frequent terms, and the terms."""
    settings = q.settings
    top = [int(i) for i in scoring.top_k(scores, settings.ranking.prf_top_docs) if scores[i] > 0]
    expansion = scoring.feedback_terms(
        [q.lexical.feedback_source(q.snap, i) for i in top],
        set(terms) | STOPWORDS_EN,
        max_terms=settings.ranking.prf_max_terms,
        min_len=settings.ranking.prf_min_term_len,
        min_count=settings.ranking.prf_min_count,
    )
    if not expansion:
        return scores, expansion
    wide_vec = qvec
    if settings.ranking.prf_reembed and embed_query is not None and qvec is not None:
        wide_vec = embed_query(text + " " + " ".join(expansion))
    rescored, _ = _score(q, terms + expansion, wide_vec)
    return np.maximum(scores, rescored), expansion


def _session_rows(snap: Snapshot) -> np.ndarray:
    """The rows of session transcripts (kept with the generation)."""
    if "session_rows" not in snap.memo:
        kinds = snap.kinds
        snap.memo["session_rows"] = np.flatnonzero([k == "session" for k in kinds])
    rows: np.ndarray = snap.memo["session_rows"]
    return rows


def _vector_signal(
    snap: Snapshot,
    qvec: np.ndarray | None,
    settings: MemorySettings,
    mask: np.ndarray | None,
    beside: Executor | None,
) -> Future[tuple[np.ndarray, np.ndarray, tuple[float, float] | None]]:
    """The cosines, the vector signal and its min-max bounds, on ``beside`` when the scan is large.

    At 1M chunks the scan and the keyword signals take about the same time, so
    together they lower a hybrid query's p50 (docs/design.md, "The vector scan
    beside the keyword signals"). Below :data:`THREADED_ROWS` the handover costs
    more than the scan.
    """
    alongside = beside is not None and qvec is not None and len(snap) >= THREADED_ROWS
    threads = settings.vectors.scan_threads
    vectors = snap.vectors
    if (
        alongside
        and not threads
        and vectors is not None
        and vectors.approximates(settings.vectors.approximate_rows)
    ):
        # The sign-bit scan is shorter than the keyword signals beside it: a second
        # kernel thread only contends with them (docs/design.md has the paired runs).
        # The exact scan is longer and keeps every core.
        threads = 1

    def vector() -> tuple[np.ndarray, np.ndarray, tuple[float, float] | None]:
        cos = _cosines(snap, qvec, settings, threads)
        if qvec is None or settings.vectors.vector_norm != "minmax":
            return cos, cos, None  # zeros without a query vector
        bounds = fusion.minmax_bounds(cos, mask)
        return cos, fusion.minmax_normalize(cos, mask, bounds=bounds), bounds

    if beside is not None and alongside:
        try:
            return beside.submit(vector)
        except RuntimeError:  # shut down (the interpreter is exiting): run it here
            pass
    done: Future[tuple[np.ndarray, np.ndarray, tuple[float, float] | None]] = Future()
    done.set_result(vector())
    return done


def _cosines(
    snap: Snapshot, qvec: np.ndarray | None, settings: MemorySettings, threads: int
) -> np.ndarray:
    if qvec is None or snap.vectors is None or not snap.vectors.parts:
        return np.zeros(len(snap), dtype=np.float32)
    return snap.vectors.cosines(qvec, threads, settings.vectors.approximate_rows)


def _second_look(
    snap: Snapshot,
    qvec: np.ndarray | None,
    settings: MemorySettings,
    first_pass: np.ndarray,
    cos: np.ndarray,
) -> tuple[np.ndarray, np.ndarray] | None:
    """The best chunks of ``first_pass`` (ascending) and their cosines again; None: none redone.

    Only the best candidates get a second look, so its cost stays flat as the
    index grows: their lines are scored (one fact in a long chunk lifts that
    chunk), and where an approximate scan estimated the cosines from sign bits
    they get exact ones (``cos`` is corrected in place).
    """
    vectors = snap.vectors
    if qvec is None or vectors is None:
        return None
    approximated = vectors.approximates(settings.vectors.approximate_rows)
    if not (approximated or (settings.vectors.line_vector_share and vectors.has_lines)):
        return None
    rows = np.sort(scoring.top_k(first_pass, settings.vectors.line_candidates))
    if approximated:
        vectors.rescore(cos, rows, qvec, settings.vectors.approximate_rows)
    lines = vectors.line_cosines(rows, qvec) if settings.vectors.line_vector_share else None
    if lines is None:
        return (rows, cos[rows]) if approximated else None
    values, owners = lines
    return rows, fusion.blend_group_max(
        values, np.searchsorted(rows, owners), cos[rows], settings.vectors.line_vector_share
    )


def _bounds_hold(
    bounds: tuple[float, float] | None, values: np.ndarray, before: np.ndarray
) -> bool:
    """Whether a min-max over the rows ``values`` replaced keeps ``bounds``.

    The new values must lie within the bounds, and each bound must still be
    reached: by a new value equal to it, or by a row not replaced (no replaced
    row held it: their normalised values ``before`` stay off 0, or off 1).
    """
    if bounds is None or not values.size:
        return False
    lo, hi = bounds
    low, high = float(values.min()), float(values.max())
    return (
        lo <= low
        and high <= hi
        and (low == lo or float(before.min()) > 0.0)
        and (high == hi or float(before.max()) < 1.0)
    )
