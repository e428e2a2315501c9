"""The resident engine's :class:`MemorySearch` objects, kept warm between requests."""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Any

from .config import EngineConfig
from .search import MemorySearch

__all__ = ["SearchPool"]


class SearchPool:
    """Warm :class:`MemorySearch` objects, one per configuration, for the resident engine.

    Args:
        overrides: Config fields every pooled engine gets (``watch=True``, ...).
    """

    max_engines = 16

    def __init__(self, **overrides: Any) -> None:
        self.overrides = overrides
        self.engines: dict[str, MemorySearch] = {}
        self.folders: dict[str, tuple[int, int]] = {}  # index folder -> (device, inode)

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
            folder = str(engine.index.path.parent)
            try:
                st = os.stat(folder)
            except OSError:
                if folder in self.folders:
                    return folder
                continue
            if self.folders.setdefault(folder, (st.st_dev, st.st_ino)) != (st.st_dev, st.st_ino):
                return folder
        return None

    def status(self) -> list[dict[str, Any]]:
        """One line per engine: index, embedder (when resolved), freshness, embedding."""
        out = []
        for e in self.engines.values():
            job = e.embedding_job
            out.append(
                {
                    "index": str(e.index.path),
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
        """Close every engine."""
        for engine in self.engines.values():
            engine.close()
        self.engines.clear()
