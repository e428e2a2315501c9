"""``EnhancedMemoryRetriever``: the hybrid memory search as a LangChain retriever."""

from __future__ import annotations

import asyncio
import threading
from datetime import date, datetime
from typing import Annotated, Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import BeforeValidator, ConfigDict, InstanceOf, PrivateAttr, model_validator

from .core.filters import SearchFilter
from .core.request import SearchRequest
from .core.results import Hit, SearchResponse
from .core.transcripts import session_id, transcript_time
from .engine import MemorySearch
from .engine.scoped import ScopedSearch
from .options import MemoryOptions

#: ``search_kwargs`` keys: the retriever's own fields.
_SEARCH_KWARGS = ("k", "filter", "min_score")
#: A vector store retriever's key, and what says the same here.
_SEARCH_KWARGS_INSTEAD = {"score_threshold": "min_score (0..1, the calibrated score)"}


def hit_to_document(hit: Hit, response: SearchResponse) -> Document:
    """A search hit as a ``Document`` whose metadata an agent can cite."""
    metadata: dict[str, Any] = {
        "path": hit.path,
        "startLine": hit.start_line,
        "endLine": hit.end_line,
        "header": hit.header,
        "headers": hit.headers,
        "kind": hit.kind,
        "date": hit.date,
        "score": hit.score,
        "signals": hit.signals,
        "provider": response.provider,
        "model": response.model,
        "fallback": response.fallback,
        "related": hit.related,
    }
    if response.temporal_dates:
        metadata["temporal_dates"] = response.temporal_dates
    if response.prf_terms:
        metadata["prf_terms"] = response.prf_terms
    if hit.scope is not None:  # a search over scopes: which one it came from
        metadata["scope"] = hit.scope
        if hit.scope in response.stale:  # its database unreachable: an older generation's
            metadata["stale"] = True
    if hit.kind == "session":  # a transcript's turns: whose session, said when
        metadata["sessionId"] = session_id(hit.path)
        metadata["timestamp"] = transcript_time(hit.header)
    return Document(page_content=hit.text, metadata=metadata)


class EnhancedMemoryRetriever(BaseRetriever, MemoryOptions):
    """Hybrid, date-aware search over an agent's markdown memory.

    Fuses vector similarity, keyword (BM25), header and file-path matches,
    boosts the daily notes of dates named in the query ("yesterday", "Feb 8",
    "上周一") and keeps a persistent incremental index in the workspace.

    Example:
        .. code-block:: python

            from datetime import datetime
            from langchain_enhanced_memory import EnhancedMemoryRetriever

            retriever = EnhancedMemoryRetriever(workspace="~/.openclaw/workspace", k=5)
            docs = retriever.invoke("what did we decide yesterday?", now=datetime(2026, 2, 9))
            for d in docs:
                print(d.metadata["path"], d.metadata["startLine"], d.metadata["score"])
            # Filters apply before ranking: k results come back when k match.
            docs = retriever.invoke("decisions", filter={"since": "last week", "kind": "daily"})

            # Several memories as one ranking; each Document says its metadata["scope"].
            shared = EnhancedMemoryRetriever(
                scopes={"me": "~/.openclaw/workspace", "team:0.5": "/srv/team-notes"}
            )

    Args:
        workspace: Folder holding ``MEMORY.md`` and ``memory/`` (or give ``scopes``).
        scopes: Scopes searched as one ranking: ``{"NAME[:WEIGHT]": folder}``, a
            folder of None (or a list of names) for scopes of ``database_url``.
        database_url: PostgreSQL holding the database scopes (default:
            ``$ENHANCED_MEMORY_DATABASE_URL``).
        read_url: A streaming replica of ``database_url`` searches read from (default:
            ``$ENHANCED_MEMORY_READ_URL``).
        pool_size: The most connections to each database server (default:
            ``$ENHANCED_MEMORY_POOL_SIZE``, else 8).
        embeddings: Any LangChain ``Embeddings``; when set, ``embedder`` is ignored.
        embedder: ``auto`` (Ollama, then the local model, then keyword-only),
            ``ollama``, ``local`` or ``none``.
        model: Ollama model name (default ``nomic-embed-text``).
        ollama_url: Ollama base URL.
        k: Number of documents to return.
        min_score: Drop documents scoring below this (0..1, the calibrated ``score``).
        search_kwargs: LangChain's ``as_retriever`` convention: ``{"k", "filter",
            "min_score"}``, the same as those fields (any other key is refused, naming
            the field to use).
        settings: Weights, thresholds and the scoring profile.
        index_path: Where the SQLite index lives (default: inside the workspace).
        auto_index: Update a stale index before searching.
        watch: Learn of edits from file-system events instead of a scan per query.
        check_interval_s: Without a watcher, scan at most this often (0: every query).
        background_embedding: Embed missing vectors on a thread (answers are
            keyword-only, and say so, until they are in).
        filter: Default filter of every search (``since``, ``until``, ``path``,
            ``kind``; see :class:`~.core.filters.SearchFilter`); a ``filter`` passed to
            ``invoke`` replaces it.

    Errors: a bad query or filter raises :class:`~.core.errors.RequestError`; a
    database that cannot be reached or refuses raises
    :class:`~.core.errors.DatabaseError` (both :class:`~.core.errors.EnhancedMemoryError`,
    one line, no password), except for a database scope this retriever has
    searched before: it is answered from the generation it read then, each of
    its Documents with ``metadata["stale"] = True``.

    Raises:
        IndexUnavailableError: ``workspace`` is not a folder (when constructed).
        ScopeError: A scope's folder is not a folder, a bad scope name or weight,
            or both ``workspace`` and ``scopes`` (when constructed).

    Threads: safe to call from many threads and tasks at once (``batch``,
    ``abatch``, ``ainvoke``): one engine is built on first use and is itself
    thread-safe (:class:`~.engine.MemorySearch`); ``ainvoke`` runs it off the
    event loop.
    """

    # A misspelt field (``kk=1``) is refused: ignored, it would search with the default.
    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    k: int = 5
    min_score: float | None = None
    # A dataclass, built by its own checks, not pydantic's.
    filter: Annotated[InstanceOf[SearchFilter], BeforeValidator(SearchFilter.of)] | None = None

    @model_validator(mode="before")
    @classmethod
    def _search_kwargs(cls, data: Any) -> Any:
        """``search_kwargs`` (``as_retriever``'s habit) as the fields it names."""
        if not isinstance(data, dict) or "search_kwargs" not in data:
            return data
        fields = dict(data)
        given = fields.pop("search_kwargs") or {}
        if not isinstance(given, dict):
            raise ValueError("search_kwargs must be a dict of k, filter and min_score")
        for key, value in given.items():
            if key not in _SEARCH_KWARGS:
                use = _SEARCH_KWARGS_INSTEAD.get(key, "k, filter or min_score")
                raise ValueError(f"search_kwargs: {key!r} is not taken here; use {use}")
            if key in fields and fields[key] != value:
                raise ValueError(f"search_kwargs: {key!r} is also given as a field; give one")
            fields[key] = value
        return fields

    _engine: MemorySearch | ScopedSearch | None = PrivateAttr(default=None)
    _engine_lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    @property
    def engine(self) -> MemorySearch | ScopedSearch:
        """The underlying search (created on first use): a workspace's, or the scopes'."""
        with self._engine_lock:  # batch's threads: one engine, not one each
            if self._engine is None:
                self._engine = self.build_search()
            return self._engine

    def _request(
        self,
        query: str,
        k: int | None,
        now: datetime | date | None,
        flt: SearchFilter | dict[str, Any] | None,
    ) -> SearchRequest:
        chosen = self.filter if flt is None else flt
        return SearchRequest.parse(
            query=query,
            k=self.k if k is None else k,
            now=now,
            filter=chosen,
            min_score=self.min_score,
        )

    def _get_relevant_documents(
        self,
        query: str,
        *,
        run_manager: CallbackManagerForRetrieverRun,
        k: int | None = None,
        now: datetime | date | None = None,
        filter: SearchFilter | dict[str, Any] | None = None,  # noqa: A002 (LangChain's name)
    ) -> list[Document]:
        response = self.engine.run(self._request(query, k, now, filter))
        return [hit_to_document(h, response) for h in response.hits]

    async def _aget_relevant_documents(
        self,
        query: str,
        *,
        run_manager: AsyncCallbackManagerForRetrieverRun,
        k: int | None = None,
        now: datetime | date | None = None,
        filter: SearchFilter | dict[str, Any] | None = None,  # noqa: A002 (LangChain's name)
    ) -> list[Document]:
        # The engine is CPU-bound numpy plus SQLite: run it off the event loop.
        request = self._request(query, k, now, filter)
        response = await asyncio.to_thread(self.engine.run, request)
        return [hit_to_document(h, response) for h in response.hits]
