"""Hybrid, date-aware memory search over markdown notes for LangChain and OpenClaw agents.

Public names load on first use, so ``import langchain_enhanced_memory`` stays
cheap for a process that answers one query and exits.
"""

from __future__ import annotations

import importlib

from .core.version import __version__

# Not `from typing import TYPE_CHECKING`: typing costs a one-shot call ~10 ms to import,
# and type checkers read a TYPE_CHECKING constant the same way.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from .core.filters import SearchFilter
    from .core.settings import FusionWeights, MemorySettings
    from .engine import EngineConfig, MemorySearch
    from .loader import MemoryDirectoryLoader
    from .retriever import EnhancedMemoryRetriever
    from .store.index import MemoryIndex
    from .threads import save_thread
    from .tools import create_memory_tools


_EXPORTS = {
    "EngineConfig": ".engine",
    "EnhancedMemoryRetriever": ".retriever",
    "FusionWeights": ".core.settings",
    "MemoryDirectoryLoader": ".loader",
    "MemoryIndex": ".store.index",
    "MemorySearch": ".engine",
    "MemorySettings": ".core.settings",
    "SearchFilter": ".core.filters",
    "create_memory_tools": ".tools",
    "save_thread": ".threads",
}

__all__ = [
    "EngineConfig",
    "EnhancedMemoryRetriever",
    "FusionWeights",
    "MemoryDirectoryLoader",
    "MemoryIndex",
    "MemorySearch",
    "MemorySettings",
    "SearchFilter",
    "__version__",
    "create_memory_tools",
    "save_thread",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value
