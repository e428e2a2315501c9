"""What the retriever and the tools search: one set of fields, one place that builds the search.

:class:`MemoryOptions` holds the fields both take (a workspace or scopes, the
embedder, the recipe, how the index is kept fresh) and :meth:`MemoryOptions.build_search`
builds the :class:`~.engine.MemorySearch` of one workspace or the
:class:`~.engine.scoped.ScopedSearch` of several scopes from them.
"""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path
from typing import Annotated, Any, Literal

from langchain_core.embeddings import Embeddings
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, InstanceOf

from .config import load, with_sessions
from .core.errors import IndexUnavailableError, ScopeError
from .core.settings import MemorySettings
from .engine import EngineConfig, MemorySearch
from .engine.scoped import ScopedSearch, scope_specs, scoped_search

__all__ = ["MemoryOptions"]


class MemoryOptions(BaseModel):
    """The fields that make a memory search (the retriever's and every tool's)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    workspace: str | Path | None = None
    """Folder holding ``MEMORY.md`` and ``memory/`` (or give ``scopes``)."""
    scopes: dict[str, str | Path | None] | list[str] | None = None
    """Scopes searched as one: ``{"NAME[:WEIGHT]": folder, or None for a database scope}``,
    or database scopes' names (``["alice", "team:0.5"]``). Each hit then says its ``scope``."""
    database_url: str | None = None
    """PostgreSQL holding the database scopes (default: ``$ENHANCED_MEMORY_DATABASE_URL``;
    this host's copies of their segments: ``$ENHANCED_MEMORY_DATABASE_CACHE``)."""
    read_url: str | None = None
    """A streaming replica of ``database_url`` that searches read from (default:
    ``$ENHANCED_MEMORY_READ_URL``); writes, and reads of this process's own writes, go to
    ``database_url``."""
    pool_size: int | None = Field(default=None, ge=1)
    """The most connections this process opens to each database server (default:
    ``$ENHANCED_MEMORY_POOL_SIZE``, else 8)."""
    embeddings: Embeddings | None = None
    """Any LangChain ``Embeddings``; when set, ``embedder`` is ignored."""
    embedder: Literal["auto", "ollama", "local", "none"] = "auto"
    """``auto`` (Ollama, then the local model, then keyword-only), ``ollama``, ``local``
    or ``none``."""
    model: str | None = None
    """Ollama embedding model (default ``nomic-embed-text``)."""
    ollama_url: str | None = None
    """Ollama's base URL."""
    on_embedder_error: Literal["keyword", "fail"] = "keyword"
    """When the embedder is unavailable or fails: answer keyword-only (``fallback`` set),
    or ``fail`` (raise ``EmbeddingError``)."""
    # A dataclass, built by its own checks (a profile's preset included), not pydantic's.
    settings: Annotated[InstanceOf[MemorySettings], BeforeValidator(MemorySettings.of)] = Field(
        default_factory=MemorySettings
    )
    """Weights, thresholds and the scoring profile."""
    index_path: str | Path | None = None
    """Where the workspace's SQLite index lives (default: inside it; not with ``scopes``)."""
    auto_index: bool = True
    """Bring a stale index up to date before searching."""
    watch: bool = True
    """Learn of edits from file-system events instead of a scan per call."""
    check_interval_s: float = 0.0
    """Without a watcher, scan for edits at most this often (0: every call)."""
    background_embedding: bool = True
    """Embed missing vectors on a thread, answering keyword-only (and saying so) meanwhile."""

    def __init__(self, **data: Any) -> None:
        # Not a pydantic validator: it would wrap a ScopeError (a ValueError) in a
        # ValidationError of several lines. A missing folder is refused here, when the
        # retriever or tool is made, instead of by a traceback at its first search.
        super().__init__(**data)
        self.check_folders()

    def check_folders(self) -> None:
        """Refuse what can be told without opening anything: a folder that does not exist.

        Raises:
            IndexUnavailableError: ``workspace`` is not a folder.
            ScopeError: Both ``workspace`` and ``scopes``, ``index_path`` with scopes, a bad
                scope name or weight, or a scope's folder that is not a folder.
        """
        if self.scopes is None:
            if self.workspace is not None and not Path(self.workspace).expanduser().is_dir():
                raise IndexUnavailableError(
                    f"workspace not found: {Path(self.workspace).expanduser()}",
                    "give the folder holding MEMORY.md and memory/",
                )
            return
        for name, value in (("workspace", self.workspace), ("index_path", self.index_path)):
            if value is not None:
                raise ScopeError(
                    f"{name} and scopes: name each folder as a scope ({{'NAME': folder}})"
                )
        for ref, folder in scope_specs(self.scopes):
            if folder is not None and not folder.expanduser().is_dir():
                raise ScopeError(
                    f"scope {ref.name}: folder not found: {folder.expanduser()}",
                    "give an existing folder, or None for a scope of the database",
                )

    def build_search(self) -> MemorySearch | ScopedSearch:
        """A new search over the workspace, or over the scopes.

        Raises:
            ValueError: Neither a workspace nor scopes.
            ScopeError: Both, ``index_path`` with scopes, or a bad scope.
            DatabaseError: The database cannot be reached.
        """
        # The engine's fields are EngineConfig's (one list); this face's values are arguments,
        # the environment adds what no argument names (transcript folders, the database).
        env = load()
        given = {f.name: getattr(self, f.name) for f in fields(EngineConfig)}
        config = EngineConfig(
            **{
                **given,
                "workspace": Path(self.workspace or "."),
                "settings": with_sessions(self.settings, env.session_dirs),
            }
        )
        if self.scopes is None:
            if self.workspace is None:
                raise ValueError("give a workspace or scopes")
            return MemorySearch.from_config(config)
        self.check_folders()
        return scoped_search(
            config,
            scope_specs(self.scopes),
            self.database_url or env.database_url,
            read_url=self.read_url or env.read_url,
            pool_size=env.pool_size if self.pool_size is None else self.pool_size,
            cache=env.database_cache,
        )
