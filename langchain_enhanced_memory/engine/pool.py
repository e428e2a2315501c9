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

    Args:
        overrides: Config fields every pooled workspace engine gets (``watch=True``, ...).
    """

    max_engines = 16

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
        database = self.databases.get(key)
        if database is None:
            database = self.databases[key] = connect()
        return database

    def scope(
        self, key: str, name: str, config: EngineConfig, build: Callable[[], DatabaseSearch]
    ) -> DatabaseSearch:
        """The warm engine of scope ``name`` of database ``key`` with ``config`` (built once)."""
        at = (key, name, repr(replace(config, embeddings=None)))
        engine = self.scopes.get(at)
        if engine is None:
            engine = self.scopes[at] = build()
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
            if len(self.engines) >= self.max_engines:  # an eval over many workspaces
                oldest = next(iter(self.engines))
                self.engines.pop(oldest).close()
        self.engines[key] = engine  # most recently used last
        return engine

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
