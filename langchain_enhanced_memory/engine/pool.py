"""The resident engine's engines, kept warm between requests: workspaces' and scopes'."""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from .config import EngineConfig
from .search import MemorySearch

if TYPE_CHECKING:
    from ..store.database import Database
    from .database import DatabaseSearch

__all__ = ["SearchPool"]


class SearchPool:
    """Warm engines for the resident engine: one per workspace configuration, one per scope.

    A database is connected once per URL (and replica, pool size and recipe): its
    connection pool and the generations it read serve every later search of its
    scopes, and answer them while it is down (stale). Its key holds the URL as
    given, password included: it stays in this process, never printed or logged
    (:meth:`status` shows the URL masked).

    A long-lived resident engine is asked for many workspaces, scopes and URLs
    over its life: each kind is kept to its most recently used ``max_*``, and
    what falls out is closed (a workspace engine's watcher and embedding thread,
    a database's connection pools, with its scopes' engines). A scope's last
    generation, which its database holds to answer it while the server is down,
    is let go with the scope's last engine (one URL may serve thousands of scopes).

    Args:
        overrides: Config fields every pooled workspace engine gets (``watch=True``, ...).
    """

    #: Warm workspace engines kept (an eval over many workspaces asks for more).
    max_engines = 16
    #: Warm scope engines kept, over all databases (an agent fleet's scopes).
    max_scopes = 64
    #: Databases kept connected (each key's connection pools: its own connections).
    max_databases = 4

    def __init__(self, **overrides: Any) -> None:
        self.overrides = overrides
        self.engines: dict[str, MemorySearch] = {}
        self.folders: dict[str, tuple[int, int]] = {}  # index folder -> (device, inode)
        self.databases: dict[str, Database] = {}
        self.scopes: dict[tuple[str, str, str], DatabaseSearch] = {}
        # Shared by the searches over several scopes: no threads of their own per request.
        self.threads = ThreadPoolExecutor(8, thread_name_prefix="scope")

    def database(self, key: str, connect: Callable[[], Database]) -> Database:
        """The database of ``key`` (its URL and options), connected on first use."""
        database = self.databases.pop(key, None)
        if database is None:
            database = connect()
            while len(self.databases) >= self.max_databases:
                self._drop_database(next(iter(self.databases)))
        self.databases[key] = database  # most recently used last
        return database

    def scope(
        self, key: str, name: str, config: EngineConfig, build: Callable[[], DatabaseSearch]
    ) -> DatabaseSearch:
        """The warm engine of scope ``name`` of database ``key`` with ``config`` (built once)."""
        at = (key, name, repr(replace(config, embeddings=None)))
        engine = self.scopes.pop(at, None)
        if engine is None:
            engine = build()
        self.scopes[at] = engine  # most recently used last
        while len(self.scopes) > max(self.max_scopes, 1):  # never the one just asked for
            self._drop_scope(next(iter(self.scopes)))
        return engine

    def get(self, config: EngineConfig) -> MemorySearch:
        """The warm engine of ``config`` (built on first use)."""
        # Absolute paths: the pool serves callers from any folder, and its threads
        # (watcher, background embedding) outlive the request's folder.
        update = {"workspace": config.workspace.absolute(), **self.overrides}
        if config.index_path is not None:
            update["index_path"] = config.index_path.absolute()
        config = replace(config, **update)
        key = repr(replace(config, embeddings=None))
        engine = self.engines.pop(key, None)
        if engine is None:
            engine = MemorySearch.from_config(config)
            while len(self.engines) >= self.max_engines:
                self._drop_engine(next(iter(self.engines)))
        self.engines[key] = engine  # most recently used last
        return engine

    def _drop_engine(self, key: str) -> None:
        """Close the workspace engine of ``key``; forget its folder unless another reads it."""
        engine = self.engines.pop(key)
        engine.close()
        folder = str(engine.index_path.parent)
        if all(str(e.index_path.parent) != folder for e in self.engines.values()):
            self.folders.pop(folder, None)

    def _drop_scope(self, at: tuple[str, str, str]) -> None:
        """Close the scope engine at ``at``; the scope is let go unless another engine reads it."""
        engine = self.scopes.pop(at)
        engine.close()
        if not any(other[:2] == at[:2] for other in self.scopes):
            engine.database.let_go(engine.scope)

    def _drop_database(self, key: str) -> None:
        """Close the database of ``key`` (its connection pools) and its scopes' engines."""
        for at in [at for at in self.scopes if at[0] == key]:
            self.scopes.pop(at).close()
        self.databases.pop(key).close()

    def busy(self) -> bool:
        """Whether an engine is still embedding in the background."""
        return any(
            e.embedding_job is not None and e.embedding_job.running for e in self.engines.values()
        )

    def moved(self) -> str | None:
        """An index folder deleted or replaced under a warm engine (which holds the old files).

        A folder is known from the first call that finds it; None when none moved.
        """
        for engine in self.engines.values():
            folder = str(engine.index_path.parent)
            try:
                st = os.stat(folder)
            except OSError:
                if folder in self.folders:
                    return folder
                continue
            if self.folders.setdefault(folder, (st.st_dev, st.st_ino)) != (st.st_dev, st.st_ino):
                return folder
        return None

    def served_scopes(self) -> list[dict[str, Any]]:
        """One line per scope served: its name, its database (masked), what it last read."""
        out = []
        for engine in self.scopes.values():
            facts = engine.facts()
            out.append(
                {
                    "scope": engine.scope,
                    "database": engine.database.shown,
                    "generation": facts.generation,
                    "chunks": facts.chunks,
                    "stale": facts.stale,
                }
            )
        return out

    def status(self) -> list[dict[str, Any]]:
        """One line per engine: index, embedder (when resolved), freshness, embedding."""
        out = []
        for e in self.engines.values():
            job = e.embedding_job
            out.append(
                {
                    "index": str(e.index_path),
                    "profile": e.settings.profile,
                    "provider": e.choice.provider,
                    "freshness": e.freshness.mode,
                    "embedding": None
                    if job is None
                    else {"running": job.running, "done": job.done, "total": job.total},
                }
            )
        return out

    def close(self) -> None:
        """Close every engine and database."""
        for engine in self.engines.values():
            engine.close()
        self.engines.clear()
        self.threads.shutdown(wait=False)
        self.scopes.clear()
        for database in self.databases.values():
            database.close()
        self.databases.clear()
