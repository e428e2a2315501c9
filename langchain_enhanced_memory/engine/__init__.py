"""The engine: :class:`EngineConfig` describes one, :class:`MemorySearch` is one.

``config`` (what makes an engine), ``search`` (index upkeep and searches),
``pool`` (engines kept warm by the resident engine). Importing this package
loads no LangChain and no embedder, so a keyword-only query in a fresh
process starts fast.
"""

from ..store.locations import resolve_workspace
from .config import EMBEDDERS, Embedder, EngineConfig
from .pool import EnginePool
from .search import MemorySearch

__all__ = [
    "EMBEDDERS",
    "Embedder",
    "EngineConfig",
    "EnginePool",
    "MemorySearch",
    "resolve_workspace",
]
