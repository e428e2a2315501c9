"""The search engine of one workspace: keeps its index fresh, embeds, ranks, logs.

:class:`MemorySearch` is built from an :class:`~.config.EngineConfig`. It imports
no LangChain and no embedder until one is needed, so a keyword-only query in
a fresh process starts fast.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import weakref
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import fields
from datetime import date, datetime
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..core import scoring
from ..core.calibration import calibrate, evidence, features
from ..core.filters import filter_mask, why_empty
from ..core.ranking import rank
from ..core.request import SearchRequest
from ..core.results import Hit, Ranking, SearchResponse
from ..core.settings import MemorySettings
from ..core.snapshot import Snapshot
from ..store.freshness import Freshness
from ..store.index import MemoryIndex, SyncReport
from ..store.logs import record_search
from .config import Embedder, EngineConfig

if TYPE_CHECKING:
    from langchain_core.embeddings import Embeddings

    from ..embeddings.choice import EmbedderChoice
    from ..store.upkeep import EmbedJob, ProgressFactory

__all__ = ["MemorySearch", "scan_thread"]

log = logging.getLogger("langchain_enhanced_memory")


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
        watch: Follow file-system events instead of scanning before each search.
        check_interval_s: Without a watcher, scan at most this often (0: every search).
        background_embedding: Embed missing vectors on a thread, answering meanwhile.

    An engine that watches holds a watcher thread: :meth:`close` (or ``with``)
    stops it, as does garbage collection.

    Threads: one engine is safe to call from many threads at once (:meth:`search`,
    :meth:`run`; the retriever's ``batch`` and ``ainvoke`` do). What it keeps
    between calls is serialised inside: the embedder is resolved once, one
    thread at a time checks the notes for edits and syncs them, and a loaded
    generation is an immutable snapshot shared by the searches that read it,
    which then rank in parallel. A search sees the notes as of some moment
    during the call; an edit made meanwhile is in the next one. Several
    processes may search and index one workspace at once (the index's locks).
    """

    def __init__(
        self,
        workspace: str | Path,
        *,
        settings: MemorySettings | None = None,
        embedder: Embedder = "auto",
        model: str | None = None,
        ollama_url: str | None = None,
        embeddings: Embeddings | None = None,
        index_path: str | Path | None = None,
        auto_index: bool = True,
        watch: bool = False,
        check_interval_s: float = 0.0,
        background_embedding: bool = False,
    ) -> None:
        self.config = EngineConfig(
            workspace=Path(workspace),
            settings=settings or MemorySettings(),
            embedder=embedder,
            model=model,
            ollama_url=ollama_url,
            embeddings=embeddings,
            index_path=Path(index_path) if index_path else None,
            auto_index=auto_index,
            watch=watch,
            check_interval_s=check_interval_s,
            background_embedding=background_embedding,
        )
        self.settings = self.config.settings
        self.index = MemoryIndex(workspace, self.settings, index_path)
        self.auto_index = auto_index
        self._choice: EmbedderChoice | None = None
        self._freshness: Freshness | None = None
        self._job: EmbedJob | None = None
        # Serialises the state kept between calls (embedder, freshness, the embedding job).
        self._lock = threading.RLock()

    @property
    def freshness(self) -> Freshness:
        """How this engine learns of edits (the watcher starts on first use)."""
        with self._lock:
            if self._freshness is None:
                c = self.config
                fresh = Freshness(self.index, watch=c.watch, interval_s=c.check_interval_s)
                weakref.finalize(self, fresh.close)
                self._freshness = fresh
            return self._freshness

    @property
    def embedding_job(self) -> EmbedJob | None:
        """The background embedding run, once one was started."""
        return self._job

    def close(self) -> None:
        """Stop the watcher and wait for a background embedding run to end."""
        if self._freshness is not None:
            self._freshness.close()
        if self._job is not None:
            self._job.join()

    def __enter__(self) -> MemorySearch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @classmethod
    def from_config(cls, config: EngineConfig) -> MemorySearch:
        """The engine a config describes."""
        return cls(**{f.name: getattr(config, f.name) for f in fields(config)})

    # --------------------------------------------------------------- embedder
    @property
    def choice(self) -> EmbedderChoice:
        """The resolved :class:`~.embeddings.resolve.EmbedderChoice` (resolved once, lazily)."""
        with self._lock:
            if self._choice is None:
                from ..embeddings.choice import EmbedderChoice

                c = self.config
                if c.embedder == "none" and c.embeddings is None:
                    # Keyword-only must start fast: no embedder module (nor LangChain) is loaded.
                    self._choice = EmbedderChoice(None, "none", None)
                else:
                    from ..embeddings.resolve import resolve_embedder

                    self._choice = resolve_embedder(
                        c.embedder,
                        model=c.model,
                        ollama_url=c.ollama_url,
                        timeout_s=self.settings.embed_timeout_s,
                        embeddings=c.embeddings,
                        local_threads=self.settings.local_threads,
                    )
                    if self._choice.reason:
                        log.warning("%s", self._choice.reason)
            return self._choice

    @property
    def model_id(self) -> str | None:
        """Key of this embedder's vectors in the embedding cache."""
        c = self.choice
        return f"{c.provider}/{c.model}" if c.available else None

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        """Embed documents with retries and validation (raises ``EmbeddingError``)."""
        return self._embed(texts, self._cached_dim())

    def _embed(self, texts: list[str], dim: int | None) -> np.ndarray:
        from ..embeddings.policy import embed_with_retry

        emb = self.choice.embeddings
        retries = self.settings.embed_retries
        return embed_with_retry(
            emb.embed_documents, texts, retries=retries, source=emb, expected_dim=dim
        )

    def _run_embedder(self) -> Callable[[list[str]], np.ndarray]:
        """:meth:`embed_documents` for one run: the cached size read once, then the first batch's.

        Reading it from the index for every batch of 20 cost about 0.3 ms a
        batch, 40 s of a million-chunk cold index. The first batch of a run
        with nothing cached runs alone (:func:`..store.upkeep.embed_missing`), so
        the batches after it are held to its size.
        """
        dims = [self._cached_dim()]

        def embed(texts: list[str]) -> np.ndarray:
            out = self._embed(texts, dims[0])
            dims[0] = dims[0] or int(out.shape[1])
            return out

        return embed

    def _cached_dim(self) -> int | None:
        # A server that switches dimension mid-run must not mix sizes in the cache.
        model_id = self.model_id
        return self.index.vector_dim(model_id) if model_id is not None else None

    def embed_query(self, text: str) -> np.ndarray:
        """Embed one query (raises ``EmbeddingError``)."""
        from ..embeddings.policy import embed_with_retry

        emb = self.choice.embeddings
        return embed_with_retry(
            lambda t: [emb.embed_query(t[0])],
            [text],
            retries=0,
            source=emb,
            expected_dim=self._cached_dim(),
        )[0]

    # ----------------------------------------------------------------- index
    def embed_missing(self, *, wait: bool = True, progress: ProgressFactory | None = None) -> int:
        """Embed every chunk and line lacking a vector (0 without an embedder).

        Raises:
            EmbeddingError: The embedder failed (batches already embedded are kept).
        """
        model_id = self.model_id
        if model_id is None:
            return 0
        from ..store.upkeep import embed_missing  # only when embedding: not a keyword search's

        return embed_missing(
            self.index, model_id, self._run_embedder(), progress=progress, wait=wait
        )

    def update_index(
        self, *, wait: bool = True, progress: ProgressFactory | None = None
    ) -> tuple[SyncReport, int]:
        """Sync the text state, then embed what lacks a vector.

        Args:
            wait: Block on another writer; when False and one is busy, skip.
            progress: Given the number of texts to embed, a callback per batch.

        Returns:
            The sync report and the number of texts embedded. Raises
            ``EmbeddingError`` when the embedder fails (text state is kept).
        """
        report = self.index.sync(wait=wait)
        return report, self.embed_missing(wait=wait, progress=progress)

    # ---------------------------------------------------------------- search
    def search(self, query: str, k: int = 5, now: datetime | date | None = None) -> SearchResponse:
        """Rank the workspace's chunks for ``query``.

        Args:
            query: What to look for.
            k: How many hits to return.
            now: When the query is asked (defaults to the current local time).

        Raises:
            RequestError: An empty query or a ``k`` below 1.
        """
        return self.run(SearchRequest.parse(query=query, k=k, now=now))

    def run(self, request: SearchRequest) -> SearchResponse:
        """Answer one validated request.

        Raises:
            RequestError: A filter's date words name no date (checked against ``now``).
        """
        started = time.perf_counter()
        timings: dict[str, float] = {}
        now = request.now or datetime.now()
        choice = self.choice
        fallback = choice.fallback
        model_id = self.model_id
        if self.auto_index:
            with self._lock:  # one thread checks for edits; the others then see its sync
                self.freshness.refresh()
        timings["syncMs"] = _ms_since(started)
        qvec, embedded = None, None
        if model_id is not None:
            try:
                embedded = self._vector_share(model_id)
                if embedded is None:
                    qvec = self.embed_query(request.query)
            except Exception as exc:  # any embedder failure: answer keyword-only
                log.warning("embedder failed, answering keyword-only: %s", exc)
                fallback, model_id = "keyword-only", None
            if embedded is not None:  # vectors still coming: keyword-only, and say how far
                fallback, model_id = "keyword-only", None
        snap = self.index.snapshot(model_id)
        if qvec is not None and snap.has_vector is not None and not snap.has_vector.all():
            fallback, qvec = "keyword-only", None
            snap = self.index.snapshot(None)
        timings["embedMs"] = _ms_since(started) - timings["syncMs"]
        mask = filter_mask(snap, request.filter, now)
        embed_q = self.embed_query if qvec is not None else None
        ranking = rank(snap, request.query, now, self.settings, qvec, embed_q, mask, scan_thread())
        if self.settings.graph_neighbors:
            from ..graph.related import add_graph_neighbors

            add_graph_neighbors(self.index, snap, ranking.scores, self.settings)
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
        if self.settings.related_per_hit and hits:
            from ..graph.related import attach_related

            attach_related(self.index, snap.generation, hits, self.settings.related_per_hit)
        response = SearchResponse(
            hits=hits,
            provider=choice.provider,
            model=choice.model,
            fallback=fallback,
            temporal_dates=ranking.temporal_dates,
            prf_terms=ranking.prf_terms,
            embedded=None if embedded is None else round(embedded, 4),
            mode=mode,
        )
        if mask is not None:
            response.filter_note = why_empty(request.filter, int(mask.sum()), len(hits))
        record_search(self.index.workspace, self.settings, request.query, response, now)
        if request.min_score is not None:
            response.hits = [h for h in hits if h.score >= request.min_score]
            response.filtered = len(hits) - len(response.hits)
        timings["rankMs"] = _ms_since(started) - timings["syncMs"] - timings["embedMs"]
        response.timings = {name: round(ms, 2) for name, ms in timings.items()}
        response.timings["searchMs"] = round(_ms_since(started), 2)
        return response

    def _vector_share(self, model_id: str) -> float | None:
        """None when every chunk has a vector; else the share that has one.

        A few missing texts (``settings.embed_inline_max``) are embedded before
        answering; more are left to a background run (``background_embedding``)
        or to ``enhanced-memory index``, so a first query never waits minutes.
        """
        job = self._job
        if job is not None and job.running:
            return job.done / job.total if job.total else 0.0
        has = self.index.snapshot(model_id).has_vector
        if has is None or has.all():
            return None
        if self.auto_index:
            inline_max = self.settings.embed_inline_max
            # Chunks alone over the limit: no need to list every missing line to know.
            few = int((~has).sum()) <= inline_max and (
                len(self.index.missing_embeddings(model_id)) <= inline_max
            )
            if few:
                self.embed_missing(wait=False)  # another run embedding already: do not wait
                has = self.index.snapshot(model_id).has_vector
                if has is None or has.all():
                    return None
            elif self.config.background_embedding:
                with self._lock:
                    job = self._job
                    if job is None:
                        from ..store.upkeep import EmbedJob

                        job = self._job = EmbedJob(self.index, model_id, self.embed_documents)
                    if job.due():
                        job.start()
        return float(has.mean())


def _ms_since(started: float) -> float:
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
