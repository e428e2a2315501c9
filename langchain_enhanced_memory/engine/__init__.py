"""The engine: :class:`EngineConfig` describes one, :class:`MemorySearch` is one.

``config`` (what makes an engine), ``storage`` (the :class:`~.storage.Storage`
protocol: a workspace's index, a database scope), ``run`` (the one engine over it),
``search`` (a workspace's: index upkeep), ``database`` (a scope's), ``scoped``
(several as one), ``pool`` (:class:`SearchPool`: what the resident engine keeps warm).
Importing this package loads no LangChain and no embedder, so a keyword-only
query in a fresh process starts fast.
"""

from ..store.locations import resolve_workspace
from .config import EMBEDDERS, Embedder, EngineConfig
from .pool import SearchPool
from .search import MemorySearch

__all__ = [
    "EMBEDDERS",
    "Embedder",
    "EngineConfig",
    "MemorySearch",
    "SearchPool",
    "resolve_workspace",
]
