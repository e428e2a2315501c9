"""The one engine: a request, a store's snapshot, :func:`.answer.ranked_hits`, logs and stale marks.

:class:`SearchEngine` answers over any :class:`~.storage.Storage`;
:class:`~.search.MemorySearch` is it over a workspace, :class:`~.database.DatabaseSearch`
over a database scope, so the same notes rank the same wherever they are kept.
The faces call its methods (:meth:`~SearchEngine.read`, :meth:`~SearchEngine.remember`,
:meth:`~SearchEngine.forget`, :meth:`~SearchEngine.facts`), never the store's.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import numpy as np

from ..core.request import SearchRequest
from ..core.results import Hit, SearchResponse
from ..core.settings import MemorySettings
from ..core.snapshot import Snapshot
from .answer import finish, ms_since, ranked_hits
from .embedder import QueryEmbedder
from .storage import Storage, StorageFacts

if TYPE_CHECKING:
    from ..embeddings.choice import EmbedderChoice
    from ..store.append import AppendResult
    from ..store.forget import Forgotten
    from ..store.index import SyncReport
    from ..store.notes import MemoryLines
    from ..store.upkeep import ProgressFactory

__all__ = ["SearchEngine"]

Neighbors = Callable[[Snapshot, np.ndarray], None]
_Engine = TypeVar("_Engine", bound="SearchEngine")


class SearchEngine:
    """Ranks one store's chunks; reads and writes its notes (thread-safe when its store is).

    Subclasses set ``storage``, ``settings`` and ``embedder``, and may add what
    their store offers besides (a workspace's embedding run and graph).
    """

    _storage: Storage
    settings: MemorySettings
    embedder: QueryEmbedder

    # ------------------------------------------------------------ what it is
    @property
    def scopes(self) -> list[str]:
        """The scopes it searches (none for a workspace's own engine)."""
        scope = self._storage.scope
        return [] if scope is None else [scope]

    @property
    def workspace(self) -> Path | None:
        """The one workspace whose index it reads (None: a database scope)."""
        return None

    @property
    def choice(self) -> EmbedderChoice:
        """The resolved embedder (resolved once, lazily)."""
        return self.embedder.choice

    @property
    def model_id(self) -> str | None:
        """Key of this embedder's vectors (``provider/model``), None without one."""
        return self.embedder.model_id

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        """Embed documents with retries and validation (raises ``EmbeddingError``)."""
        return self.embedder.embed_documents(texts)

    def embed_query(self, text: str) -> np.ndarray:
        """Embed one query (raises ``EmbeddingError``)."""
        return self.embedder.embed_query(text)

    def update_index(
        self, *, wait: bool = True, progress: ProgressFactory | None = None
    ) -> tuple[SyncReport | None, int]:
        """Sync and embed what lacks a vector: nothing here (a scope's writer embeds it).

        Returns:
            No sync report, and 0 texts embedded.
        """
        return None, 0

    def check_databases(self) -> bool:
        """Read its database scope's generation (one query); False when it has none."""
        return False

    def facts(self) -> StorageFacts:
        """Its store's chunks and generation (a scope's: as last read)."""
        return self._storage.facts()

    def close(self) -> None:
        """Release what its store holds."""
        self._storage.close()

    def __enter__(self: _Engine) -> _Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --------------------------------------------------------------- search
    def search(self, query: str, k: int = 5, now: datetime | date | None = None) -> SearchResponse:
        """Rank the store's chunks for ``query``.

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

        Each hit of a scope is tagged with it; ``stale`` names the scope when its
        database failed and the answer came from the generation held here.

        Raises:
            RequestError: A filter's date words name no date (checked against ``now``).
            EmbeddingError: The embedder is unavailable or failed, and the config's
                ``on_embedder_error`` is ``fail``.
            NoMemoryError: A workspace that holds no memory.
            DatabaseError: The database failed and no generation of the scope is held.
        """
        self._storage.require()
        started = time.perf_counter()
        timings: dict[str, float] = {}
        now = request.now or datetime.now()
        choice = self.embedder.required()
        fallback = choice.fallback
        model_id = self.model_id
        self._storage.refresh()
        embedded = None
        if model_id is not None:
            try:
                embedded = self._vectors_coming(model_id)
            except Exception as exc:  # an inline embedding failed: keyword-only, or fail
                self.embedder.failed(exc)
                fallback, model_id = "keyword-only", None
        if embedded is not None:  # vectors still coming: keyword-only, and say how far
            fallback, model_id = "keyword-only", None
        snap, stale = self._storage.snapshot(model_id)
        timings["syncMs"] = ms_since(started)
        qvec = None
        if model_id is not None and len(snap):
            if snap.has_vector is None or not snap.has_vector.all():
                fallback = "keyword-only"  # vectors of another model, or some missing
            else:
                try:
                    qvec = self.embed_query(request.query)
                except Exception as exc:  # any embedder failure: keyword-only, or fail
                    self.embedder.failed(exc)
                    fallback = "keyword-only"
        if qvec is None and snap.vectors is not None:
            snap = snap.with_vectors(None, None)
        timings["embedMs"] = ms_since(started) - timings["syncMs"]
        embed_q = self.embed_query if qvec is not None else None
        answer = ranked_hits(
            snap, request, now, self.settings, qvec, embed_q, self._neighbors(snap)
        )
        self._enrich(snap, answer.hits)
        response = SearchResponse(
            hits=answer.hits,
            provider=choice.provider,
            model=choice.model,
            fallback=fallback,
            temporal_dates=answer.ranking.temporal_dates,
            prf_terms=answer.ranking.prf_terms,
            embedded=None if embedded is None else round(embedded, 4),
            mode=answer.mode,
            stale=self.scopes if stale else [],
        )
        self._storage.log_search(request.query, response, now)
        return finish(response, request, answer, started, timings)

    def _vectors_coming(self, model_id: str) -> float | None:
        """The share of chunks with a vector while more are being embedded; None: ready."""
        return None

    def _neighbors(self, snap: Snapshot) -> Neighbors | None:
        """What adds graph neighbours to a ranking (None: no graph)."""
        return None

    def _enrich(self, snap: Snapshot, hits: list[Hit]) -> None:
        """Tag each hit with its scope (a workspace adds its related notes)."""
        scope = self._storage.scope
        if scope is not None:
            for hit in hits:
                hit.scope = scope

    # ------------------------------------------------------- reads, writes
    def read(self, path: str, from_line: int = 1, lines: int | None = None) -> MemoryLines:
        """Lines of one note (``memory_get``).

        Raises:
            MissingNoteError: No such note.
            NoteError: A refused path or range, or an unreadable file.
        """
        return self._storage.read(path, from_line, lines)

    def remember(
        self,
        text: str,
        *,
        section: str | None = None,
        file: str | None = None,
        now: datetime | date | None = None,
    ) -> AppendResult:
        """Append a bullet to today's daily note or ``file`` (``memory_append``).

        Raises:
            WriteError: Bad text, section or file, or a failed write.
            ScopeError: A database scope with vectors of another model.
            DatabaseError: The database failed (nothing was written).
        """
        return self._storage.append(
            text, section=section, file=file, now=now, embedder=self.embedder
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
        """Remove remembered lines from the notes and their text from the store.

        Raises:
            WriteError: Bad arguments, a missing note, several matches without ``allow_many``.
            ScopeError: A database scope with vectors of another model.
            DatabaseError: The database failed (nothing was changed).
        """
        return self._storage.delete(
            path=path,
            line=line,
            match=match,
            dry_run=dry_run,
            allow_many=allow_many,
            embedder=self.embedder,
        )
