"""The search engine: index upkeep, query embedding, profiles and ranking.

This module does not import LangChain, so the command line can answer a query
in a fresh process quickly; :mod:`.retriever` wraps it as a ``BaseRetriever``.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from . import scoring
from .dates import parse_dates
from .index import MemoryIndex, Snapshot
from .logs import record_search
from .settings import MemorySettings
from .text import (
    STOPWORDS_EN,
    STOPWORDS_QUERY,
    original_query_words,
    phrases,
    query_terms,
    tokenize,
)

if TYPE_CHECKING:
    from langchain_core.embeddings import Embeddings

log = logging.getLogger("langchain_enhanced_memory")
_WORD_RE = re.compile(r"\w+")


@dataclass
class Hit:
    """One ranked chunk."""

    path: str
    start_line: int
    end_line: int
    header: str
    headers: str
    text: str
    score: float
    signals: dict[str, float]
    kind: str
    date: str | None
    related: list[dict[str, Any]] = field(default_factory=list)  # see crossref.attach_related


@dataclass
class SearchResponse:
    """Ranked hits plus what produced them."""

    hits: list[Hit]
    provider: str
    model: str | None
    fallback: str | None = None
    temporal_dates: list[str] = field(default_factory=list)
    prf_terms: list[str] = field(default_factory=list)


@dataclass
class Ranking:
    """Scores of every chunk for one query (pure result of :func:`rank`)."""

    scores: np.ndarray
    signals: dict[str, np.ndarray]
    temporal_dates: list[str]
    prf_terms: list[str]


def _strip_spans(query: str, spans: tuple[tuple[int, int], ...]) -> str:
    for lo, hi in sorted(spans, reverse=True):
        query = query[:lo] + " " + query[hi:]
    return query


def rank(
    snap: Snapshot,
    query: str,
    now: datetime | date,
    settings: MemorySettings,
    qvec: np.ndarray | None,
    embed_query: Any = None,
) -> Ranking:
    """Score every chunk of ``snap`` for ``query``.

    The recipe follows the settings' switches (``lexical``, ``date_parser``,
    ``vector_norm``, ...), so each profile and each ablation runs this one path.

    Args:
        snap: The index snapshot (with vectors when ``qvec`` is given).
        query: The user's query.
        now: The moment the query is asked; relative dates resolve against it.
        settings: Weights, thresholds and switches.
        qvec: The L2-normalised query vector, or None for keyword-only.
        embed_query: Embeds an expanded query, for PRF with ``prf_reembed``.
    """
    original = settings.date_parser == "original"
    dq = parse_dates(query, now, original=original)
    if not settings.date_routing:
        dq = type(dq)((), (), ())
    # Date words name a day, not a topic: the original kept them as keywords.
    text = query if original else _strip_spans(query, dq.spans)
    mult = _date_multiplier(snap, dq, settings)
    prior = (mult - 1.0) * settings.date_prior
    lexical = _Lexical(snap, settings)

    def score(terms: list[str], qv: np.ndarray | None) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        sig = lexical.signals(terms)
        coverage = sig.pop("_coverage")
        weights = settings.weights if qv is not None else scoring.without_vector(settings.weights)
        if (
            qv is not None
            and float(coverage.max(initial=0.0)) < settings.adaptive_keyword_threshold
        ):
            weights = settings.adaptive_weights

        def fused(vector: np.ndarray) -> np.ndarray:
            if settings.fusion == "rrf":
                named = {**sig, "vector": vector}
                f = scoring.rrf(
                    [
                        # Every chunk has a cosine; a lexical signal retrieves only its matches.
                        (
                            named[name],
                            np.ones(len(snap), bool) if name == "vector" else named[name] > 0,
                        )
                        for name, w in weights.model_dump().items()
                        if w > 0 and (name != "vector" or qv is not None)
                    ],
                    settings.rrf_k,
                )
            else:
                f = scoring.fuse(weights, vector, sig["keyword"], sig["header"], sig["filepath"])
            return f * mult + prior

        cos = _cosines(snap, qv)
        sig["vector"] = _normalize(cos, settings)
        out = fused(sig["vector"])
        lines = _line_cosines(snap, qv, settings, out)
        if lines is not None:
            # Only the best candidates' lines are scored: one fact in a long
            # chunk lifts that chunk, and the cost stays flat as the index grows.
            share = settings.line_vector_share
            sig["vector"] = _normalize(
                share * scoring.group_max(*lines, cos) + (1 - share) * cos, settings
            )
            out = fused(sig["vector"])
        return out, sig

    terms = lexical.terms(text)
    scores, signals = score(terms, qvec)
    signals["date_boost"] = mult
    dates = [d.isoformat() for d in dq.days] + [
        f"{a.isoformat()}..{b.isoformat()}" for a, b in dq.ranges
    ]
    expansion: list[str] = []
    if (
        settings.prf_enabled
        and not dq
        and len(snap)
        and float(scores.max()) < settings.prf_threshold
    ):
        top = [int(i) for i in scoring.top_k(scores, settings.prf_top_docs) if scores[i] > 0]
        expansion = scoring.feedback_terms(
            [lexical.feedback_source(i) for i in top],
            set(terms) | STOPWORDS_EN,
            max_terms=settings.prf_max_terms,
            min_len=settings.prf_min_term_len,
            min_count=settings.prf_min_count,
        )
        if expansion:
            wide_vec = qvec
            if settings.prf_reembed and embed_query is not None and qvec is not None:
                wide_vec = embed_query(text + " " + " ".join(expansion))
            rescored, _ = score(terms + expansion, wide_vec)
            scores = np.maximum(scores, rescored)
    return Ranking(scores, signals, dates, expansion)


def _date_multiplier(snap: Snapshot, dq: Any, settings: MemorySettings) -> np.ndarray:
    if settings.date_parser == "original":
        # The original boosted any chunk whose path contains the date string.
        isos = [d.isoformat() for d in dq.days]
        return np.asarray(
            [settings.temporal_boost if any(d in p for d in isos) else 1.0 for p in snap.paths],
            dtype=np.float32,
        )
    return scoring.date_multiplier(
        snap.day,
        [d.toordinal() for d in dq.days],
        [(a.toordinal(), b.toordinal()) for a, b in dq.ranges],
        settings.temporal_boost,
        settings.range_boost,
    )


def _cosines(snap: Snapshot, qvec: np.ndarray | None) -> np.ndarray:
    if qvec is None or snap.vectors is None or snap.vectors.shape[0] == 0:
        return np.zeros(len(snap), dtype=np.float32)
    # einsum stays on one thread: `@` wakes OpenBLAS's pool, which costs more than
    # the product itself on a busy 2-core machine (benchmarks/speed.py).
    return np.einsum("ij,j->i", snap.vectors, qvec.astype(np.float32))


def _line_cosines(
    snap: Snapshot, qvec: np.ndarray | None, settings: MemorySettings, first_pass: np.ndarray
) -> tuple[np.ndarray, np.ndarray] | None:
    """Cosine and chunk row of each line of the best chunks of ``first_pass``.

    None when line vectors are off or absent.
    """
    lines, owner = snap.line_vectors, snap.line_owner
    if qvec is None or not settings.line_vector_share or lines is None or owner is None:
        return None
    rows = scoring.group_rows(owner, np.sort(scoring.top_k(first_pass, settings.line_candidates)))
    if rows.size == 0:
        return None
    vectors = lines[rows].astype(np.float32)  # stored as float16
    return np.einsum("ij,j->i", vectors, qvec.astype(np.float32)), owner[rows]


def _normalize(cos: np.ndarray, settings: MemorySettings) -> np.ndarray:
    return scoring.minmax_normalize(cos) if settings.vector_norm == "minmax" else cos


class _Lexical:
    """The keyword, header and path signals under ``settings.lexical``."""

    def __init__(self, snap: Snapshot, settings: MemorySettings) -> None:
        self.snap = snap
        self.settings = settings
        self.substring = settings.lexical == "substring"
        self.pairs: list[str] = []

    def terms(self, text: str) -> list[str]:
        if self.substring:
            return original_query_words(text)
        # Pairs come from the query as written (repeats and order kept), terms are unique.
        self.pairs = phrases(tokenize(text))
        return query_terms(text)

    def signals(self, terms: list[str]) -> dict[str, np.ndarray]:
        snap = self.snap
        if self.substring:
            keyword = scoring.substring_fraction(snap.lower_texts, terms)
            return {
                "keyword": keyword,
                "header": scoring.substring_fraction(snap.lower_headers, terms),
                "filepath": scoring.substring_fraction(snap.lower_paths, terms),
                "_coverage": keyword,
            }
        s = self.settings
        keyword = scoring.bm25(snap.text_post, terms, s.bm25_k1, s.bm25_b)
        if s.phrase_weight and self.pairs:
            keyword += s.phrase_weight * scoring.bm25(
                snap.phrase_post, self.pairs, s.bm25_k1, s.bm25_b
            )
        return {
            "keyword": scoring.max_normalize(keyword),
            "header": scoring.match_fraction(snap.header_post, terms),
            "filepath": scoring.match_fraction(snap.path_post, terms),
            "_coverage": scoring.match_fraction(snap.text_post, terms),
        }

    def feedback_source(self, i: int) -> list[str]:
        """Terms PRF may take from chunk ``i``: the original also read its path (a flaw we drop)."""
        if self.substring:
            return _WORD_RE.findall((self.snap.texts[i] + " " + self.snap.paths[i]).lower())
        return tokenize(self.snap.texts[i], stopwords=STOPWORDS_QUERY)


class MemorySearch:
    """Searches one workspace: keeps its index fresh and ranks chunks.

    Args:
        workspace: The workspace folder.
        settings: Scoring and indexing settings.
        embedder: ``auto``, ``ollama``, ``local`` or ``none``.
        model: Embedding model name (Ollama), defaults to ``nomic-embed-text``.
        ollama_url: Ollama's base URL (or the original's full ``/api/embed`` URL).
        embeddings: Any LangChain ``Embeddings``; overrides ``embedder``.
        index_path: Where the SQLite index lives.
        auto_index: Bring a stale index up to date before searching.
    """

    def __init__(
        self,
        workspace: str | Path,
        *,
        settings: MemorySettings | None = None,
        embedder: str = "auto",
        model: str | None = None,
        ollama_url: str | None = None,
        embeddings: Embeddings | None = None,
        index_path: str | Path | None = None,
        auto_index: bool = True,
    ) -> None:
        self.settings = settings or MemorySettings()
        self.index = MemoryIndex(workspace, self.settings, index_path)
        self.embedder_kind = embedder
        self.model_name = model
        self.ollama_url = ollama_url
        self.custom_embeddings = embeddings
        self.auto_index = auto_index
        self._choice: Any = None

    # --------------------------------------------------------------- embedder
    @property
    def choice(self) -> Any:
        """The resolved :class:`~.embeddings.EmbedderChoice` (resolved once, lazily)."""
        if self._choice is None:
            if self.embedder_kind == "none" and self.custom_embeddings is None:
                from types import SimpleNamespace

                # Skip importing the embeddings module: keyword-only must start fast.
                self._choice = SimpleNamespace(
                    embeddings=None, provider="none", model=None, fallback=None, reason=None
                )
            else:
                from .embeddings import resolve_embedder

                self._choice = resolve_embedder(
                    self.embedder_kind,
                    model=self.model_name,
                    ollama_url=self.ollama_url,
                    timeout_s=self.settings.embed_timeout_s,
                    embeddings=self.custom_embeddings,
                )
                if self._choice.reason:
                    log.warning("%s", self._choice.reason)
        return self._choice

    @property
    def model_id(self) -> str | None:
        """Key of this embedder's vectors in the embedding cache."""
        c = self.choice
        return f"{c.provider}/{c.model}" if c.embeddings is not None else None

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        """Embed documents with retries and validation (raises ``EmbeddingError``)."""
        from .embeddings import embed_with_retry

        emb = self.choice.embeddings
        return embed_with_retry(
            emb.embed_documents,
            texts,
            retries=self.settings.embed_retries,
            source=emb,
            expected_dim=self._cached_dim(),
        )

    def _cached_dim(self) -> int | None:
        # A server that switches dimension mid-run must not mix sizes in the cache.
        model_id = self.model_id
        return self.index.vector_dim(model_id) if model_id is not None else None

    def embed_query(self, text: str) -> np.ndarray:
        """Embed one query (raises ``EmbeddingError``)."""
        from .embeddings import embed_with_retry

        emb = self.choice.embeddings
        return embed_with_retry(
            lambda t: [emb.embed_query(t[0])],
            [text],
            retries=0,
            source=emb,
            expected_dim=self._cached_dim(),
        )[0]

    # ----------------------------------------------------------------- index
    def update_index(self, *, wait: bool = True, progress: Any = None) -> tuple[Any, int]:
        """Sync the text state, then embed what lacks a vector.

        Returns:
            The sync report and the number of texts embedded. Raises
            ``EmbeddingError`` when the embedder fails (text state is kept).
        """
        report = self.index.sync(wait=wait)
        embedded = 0
        if self.model_id is not None:
            embedded = self.index.embed_missing(
                self.model_id, self.embed_documents, progress=progress
            )
        return report, embedded

    # ---------------------------------------------------------------- search
    def search(self, query: str, k: int = 5, now: datetime | date | None = None) -> SearchResponse:
        """Rank the workspace's chunks for ``query``.

        Args:
            query: What to look for.
            k: How many hits to return.
            now: When the query is asked (defaults to the current local time).
        """
        now = now or datetime.now()
        choice = self.choice
        fallback = choice.fallback
        model_id = self.model_id
        if self.auto_index and self.index.is_stale():
            self.index.sync(wait=False)
        qvec = None
        if model_id is not None:
            try:
                has_vector = self.index.snapshot(model_id).has_vector
                if self.auto_index and (has_vector is None or not has_vector.all()):
                    # An index run holding the lock is embedding already: do not wait.
                    self.index.embed_missing(model_id, self.embed_documents, wait=False)
                qvec = self.embed_query(query)
            except Exception as exc:  # any embedder failure: answer keyword-only
                log.warning("embedder failed, answering keyword-only: %s", exc)
                fallback, model_id = "keyword-only", None
        snap = self.index.snapshot(model_id)
        if qvec is not None and snap.has_vector is not None and not snap.has_vector.all():
            fallback, qvec = "keyword-only", None
            snap = self.index.snapshot(None)
        embed_q = self.embed_query if qvec is not None else None
        ranking = rank(snap, query, now, self.settings, qvec, embed_q)
        if self.settings.graph_neighbors:
            from .crossref import add_graph_neighbors

            add_graph_neighbors(self.index, snap, ranking.scores, self.settings)
        order = scoring.top_k(ranking.scores, k)
        # A chunk that no signal matched is noise, not a result.
        hits = [self._hit(snap, int(i), ranking) for i in order if ranking.scores[i] > 0]
        if self.settings.related_per_hit and hits:
            from .crossref import attach_related

            attach_related(self.index, snap.generation, hits, self.settings.related_per_hit)
        response = SearchResponse(
            hits=hits,
            provider=choice.provider,
            model=choice.model,
            fallback=fallback,
            temporal_dates=ranking.temporal_dates,
            prf_terms=ranking.prf_terms,
        )
        record_search(self.index.workspace, self.settings, query, response, now)
        return response

    @staticmethod
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
