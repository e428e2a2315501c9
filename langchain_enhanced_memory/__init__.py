"""Hybrid, date-aware memory search over markdown notes for LangChain and OpenClaw agents.

Public names load on first use, so ``import langchain_enhanced_memory`` stays
cheap for a process that answers one query and exits.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .index import MemoryIndex
    from .loader import MemoryDirectoryLoader
    from .retriever import EnhancedMemoryRetriever
    from .search import MemorySearch
    from .settings import FusionWeights, MemorySettings

__version__ = "0.1.0"

_EXPORTS = {
    "EnhancedMemoryRetriever": ".retriever",
    "MemoryDirectoryLoader": ".loader",
    "MemoryIndex": ".index",
    "MemorySearch": ".search",
    "MemorySettings": ".settings",
    "FusionWeights": ".settings",
}

__all__ = [
    "EnhancedMemoryRetriever",
    "FusionWeights",
    "MemoryDirectoryLoader",
    "MemoryIndex",
    "MemorySearch",
    "MemorySettings",
    "__version__",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value
