"""Searching one scope of a PostgreSQL database: :class:`DatabaseSearch`.

The scope's generation is checked on every search (one query,
:meth:`..store.database.Database.snapshot`): a publish or an append committed
on any host before a search starts is in that search. Ranking is
:func:`.answer.ranked_hits` over the scope's snapshot, the code
:class:`~.search.MemorySearch` answers with, so the same notes rank the same.
While the database cannot be reached, a scope this process has read before is
answered from that generation, marked ``stale``; one it has not, from this
host's copies of the generation last loaded here (``Database.held``).
"""

from __future__ import annotations

import logging
import time
from datetime import date, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from ..core.errors import DatabaseError
from ..core.request import SearchRequest
from ..core.results import SearchResponse
from ..core.scopes import validate_scope
from ..core.settings import MemorySettings
from ..core.snapshot import Snapshot
from ..store.append import AppendResult
from ..store.forget import Forgotten
from .answer import finish, ms_since, ranked_hits
from .config import Embedder, EngineConfig
from .embedder import QueryEmbedder

log = logging.getLogger("langchain_enhanced_memory")

if TYPE_CHECKING:
    from langchain_core.embeddings import Embeddings

    from ..store.database import Database, Embedding

__all__ = ["DatabaseSearch"]


class DatabaseSearch:
    """A search engine over one scope of a database (thread-safe, like ``MemorySearch``).

    Args:
        database: The connected database (:meth:`~..store.database.Database.connect`).
        scope: The scope searched (and written by :meth:`remember`).
        settings: The recipe; chunking settings apply to what :meth:`remember` writes.
        embedder: As ``MemorySearch``'s; a scope whose vectors are of another
            model (or that has none) is searched keyword-only, with ``fallback`` set.
        model: Ollama embedding model.
        ollama_url: Ollama's base URL.
        embeddings: Any LangChain ``Embeddings``; overrides ``embedder``.

    Raises:
        ScopeError: A bad scope name.
    """

    def __init__(
        self,
        database: Database,
        scope: str,
        *,
        settings: MemorySettings | None = None,
        embedder: Embedder = "auto",
        model: str | None = None,
        ollama_url: str | None = None,
        embeddings: Embeddings | None = None,
    ) -> None:
        self.database = database
        self.scope = validate_scope(scope)
        # The embedder's fields only: a database scope has no workspace.
        config = EngineConfig(
            workspace=Path(),
            settings=settings or database.settings,
            embedder=embedder,
            model=model,
            ollama_url=ollama_url,
            embeddings=embeddings,
        )
        self.settings = config.settings
        self.embedder = QueryEmbedder(config, self._stored_dim)
        self._last: Snapshot | None = None  # the generation the last search read

    @classmethod
    def from_config(cls, database: Database, scope: str, config: EngineConfig) -> DatabaseSearch:
        """The engine of ``scope`` with ``config``'s recipe and embedder (its workspace unused)."""
        return cls(
            database,
            scope,
            settings=config.settings,
            embedder=config.embedder,
            model=config.model,
            ollama_url=config.ollama_url,
            embeddings=config.embeddings,
        )

    @property
    def model_id(self) -> str | None:
        """Key of this engine's embedder (``provider/model``), None without one."""
        return self.embedder.model_id

    def _stored_dim(self, model_id: str) -> int | None:
        # From the generation this engine last read: no query of its own.
        snap = self._last
        ok = snap is not None and snap.vectors is not None and snap.model == model_id
        return snap.vectors.dim if ok and snap is not None and snap.vectors is not None else None

    def search(self, query: str, k: int = 5, now: datetime | date | None = None) -> SearchResponse:
        """Rank the scope's chunks for ``query`` (see ``MemorySearch.search``)."""
        return self.run(SearchRequest.parse(query=query, k=k, now=now))

    def run(self, request: SearchRequest) -> SearchResponse:
        """Answer one validated request over the scope's committed generation.

        Each hit's ``scope`` is this scope. When the database fails, the answer
        comes from the generation this process last read (else, when no server
        answers, the one this host last loaded, from its copies), with ``stale``
        naming the scope (newer writes may be missing).

        Raises:
            RequestError: A filter's date words name no date.
            EmbeddingError: The embedder is unavailable or failed, and the config's
                ``on_embedder_error`` is ``fail``.
            DatabaseError: The database failed and no generation of the scope is held
                (none read by this process, no copies of one here; one line; the next
                call reconnects).
        """
        started = time.perf_counter()
        timings: dict[str, float] = {}
        now = request.now or datetime.now()
        choice = self.embedder.required()
        fallback = choice.fallback
        model_id = self.model_id
        snap, stale = self._snapshot(model_id)
        self._last = snap
        timings["syncMs"] = ms_since(started)
        qvec = None
        if model_id is not None and len(snap):
            if snap.has_vector is None or not snap.has_vector.all():
                fallback = "keyword-only"  # the scope's vectors are of another model, or none
            else:
                try:
                    qvec = self.embedder.embed_query(request.query)
                except Exception as exc:  # any embedder failure: keyword-only, or fail
                    self.embedder.failed(exc)
                    fallback = "keyword-only"
        if qvec is None and snap.vectors is not None:
            snap = snap.with_vectors(None, None)
        timings["embedMs"] = ms_since(started) - timings["syncMs"]
        embed_q = self.embedder.embed_query if qvec is not None else None
        answer = ranked_hits(snap, request, now, self.settings, qvec, embed_q)
        for hit in answer.hits:
            hit.scope = self.scope
        response = SearchResponse(
            hits=answer.hits,
            provider=choice.provider,
            model=choice.model,
            fallback=fallback,
            temporal_dates=answer.ranking.temporal_dates,
            prf_terms=answer.ranking.prf_terms,
            mode=answer.mode,
            stale=[self.scope] if stale else [],
        )
        return finish(response, request, answer, started, timings)

    def _snapshot(self, model_id: str | None) -> tuple[Snapshot, bool]:
        """The scope's committed generation; else the one held here (stale: True).

        Raises:
            DatabaseError: The database failed and no generation is held (``Database.held``).
        """
        try:
            return self.database.snapshot(self.scope, model_id), False
        except DatabaseError as exc:
            held = self.database.held(self.scope, model_id, copies=exc.unreachable)
            if held is None:
                raise
            log.warning(
                "scope %s answered from generation %d held here (newer writes may be missing): %s",
                self.scope,
                held.generation,
                exc,
            )
            return held, True

    def remember(
        self,
        text: str,
        *,
        section: str | None = None,
        file: str | None = None,
        now: datetime | date | None = None,
    ) -> AppendResult:
        """Append a bullet to the (database-backed) scope, indexed with this engine's embedder.

        Raises:
            WriteError: Bad text, section or file.
            ScopeError: A folder-backed scope, or one with vectors of another model.
            DatabaseError: The database failed (nothing was written).
        """
        return self.database.append(
            self.scope, text, section=section, file=file, now=now, embed=self.embedding()
        )

    def forget(
        self,
        *,
        path: str | None = None,
        line: int | None = None,
        match: str | None = None,
        dry_run: bool = False,
        allow_many: bool = False,
    ) -> list[Forgotten]:
        """Remove lines from the (database-backed) scope's notes (as :func:`..store.forget.forget`).

        The notes changed are indexed again with this engine's embedder, and every
        segment that held their old rows is deleted, in one transaction.

        Raises:
            WriteError: Bad arguments, a missing note, several matches without ``allow_many``.
            ScopeError: A folder-backed scope, or one with vectors of another model.
            DatabaseError: The database failed (nothing was changed).
        """
        return self.database.forget(
            self.scope,
            path=path,
            line=line,
            match=match,
            dry_run=dry_run,
            allow_many=allow_many,
            embed=self.embedding(),
        )

    def embedding(self) -> Embedding | None:
        """This engine's embedder as a write indexes with it (None: keyword-only)."""
        from ..store.database import Embedding

        model_id = self.model_id
        return None if model_id is None else Embedding(model_id, self.embedder.run_embedder())
