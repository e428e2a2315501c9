"""Hybrid, date-aware memory search over markdown notes for LangChain and OpenClaw agents.

Public names load on first use, so ``import langchain_enhanced_memory`` stays
cheap for a process that answers one query and exits. They are what the public
functions and methods take, return and raise; storage (the index, a database)
stays behind them.
"""

from __future__ import annotations

import importlib

from .core.version import __version__

# Not `from typing import TYPE_CHECKING`: typing costs a one-shot call ~10 ms to import,
# and type checkers read a TYPE_CHECKING constant the same way.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from .core.errors import (
        DatabaseError,
        EmbeddingError,
        EnhancedMemoryError,
        IndexUnavailableError,
        ItemError,
        NoMemoryError,
        RequestError,
        ScopeError,
        SettingsError,
        WriteError,
    )
    from .core.filters import SearchFilter
    from .core.request import SearchRequest
    from .core.results import Hit, SearchResponse
    from .core.settings import FusionWeights, MemorySettings
    from .engine import EngineConfig, MemorySearch
    from .langgraph_store import EnhancedMemoryStore
    from .loader import MemoryDirectoryLoader
    from .retriever import EnhancedMemoryRetriever
    from .threads import save_thread
    from .tools import create_memory_tools


_EXPORTS = {
    "DatabaseError": ".core.errors",
    "EmbeddingError": ".core.errors",
    "EngineConfig": ".engine",
    "EnhancedMemoryError": ".core.errors",
    "IndexUnavailableError": ".core.errors",
    "ItemError": ".core.errors",
    "NoMemoryError": ".core.errors",
    "EnhancedMemoryRetriever": ".retriever",
    "EnhancedMemoryStore": ".langgraph_store",
    "FusionWeights": ".core.settings",
    "Hit": ".core.results",
    "MemoryDirectoryLoader": ".loader",
    "MemorySearch": ".engine",
    "MemorySettings": ".core.settings",
    "RequestError": ".core.errors",
    "ScopeError": ".core.errors",
    "SearchFilter": ".core.filters",
    "SearchRequest": ".core.request",
    "SearchResponse": ".core.results",
    "SettingsError": ".core.errors",
    "WriteError": ".core.errors",
    "create_memory_tools": ".tools",
    "save_thread": ".threads",
}

__all__ = [
    "DatabaseError",
    "EmbeddingError",
    "EngineConfig",
    "EnhancedMemoryError",
    "EnhancedMemoryRetriever",
    "EnhancedMemoryStore",
    "FusionWeights",
    "Hit",
    "IndexUnavailableError",
    "ItemError",
    "MemoryDirectoryLoader",
    "MemorySearch",
    "MemorySettings",
    "NoMemoryError",
    "RequestError",
    "ScopeError",
    "SearchFilter",
    "SearchRequest",
    "SearchResponse",
    "SettingsError",
    "WriteError",
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
