"""Searching one scope of a PostgreSQL database: :class:`DatabaseSearch`.

The scope's generation is checked on every search (one query,
:meth:`..store.database.Database.snapshot`): a publish or an append committed
on any host before a search starts is in that search. It is the one engine
(:class:`~.run.SearchEngine`) over :class:`~.storage.ScopeStorage`, the code
:class:`~.search.MemorySearch` answers with, so the same notes rank the same.
While the database cannot be reached, a scope this process has read before is
answered from that generation, marked ``stale``; one it has not, from this
host's copies of the generation last loaded here (``Database.held``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..core.errors import ScopeError
from ..core.settings import MemorySettings
from .config import Embedder, EngineConfig
from .embedder import QueryEmbedder
from .run import SearchEngine
from .storage import ScopeStorage

if TYPE_CHECKING:
    from langchain_core.embeddings import Embeddings

    from ..store.database import Database
    from .search import MemorySearch

__all__ = ["DatabaseSearch"]


class DatabaseSearch(SearchEngine):
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
        self._storage: ScopeStorage = ScopeStorage(database, scope)
        self.database = database
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

    @property
    def scope(self) -> str:
        """The scope searched (and written by :meth:`remember`)."""
        return self._storage.scope

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

    def workspace_engine(self, tool: str = "this tool") -> MemorySearch:
        """Refused: ``tool`` reads one workspace's index (salience, cross-references, status).

        Raises:
            ScopeError: Always.
        """
        raise ScopeError(f"{tool} reads one workspace's index, not scopes")

    def check_databases(self) -> bool:
        """Read the scope's generation (one query).

        Raises:
            DatabaseError: The database cannot be reached or read.
        """
        self.database.generations([self.scope])
        return True

    def _stored_dim(self, model_id: str) -> int | None:
        # From the generation this engine last read: no query of its own.
        snap = self._storage.last
        ok = snap is not None and snap.vectors is not None and snap.model == model_id
        return snap.vectors.dim if ok and snap is not None and snap.vectors is not None else None
