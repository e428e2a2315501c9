"""The package's public names, as LangChain partner packages pin theirs."""

from __future__ import annotations

import subprocess
import sys

import langchain_enhanced_memory
from langchain_enhanced_memory import __all__

EXPECTED_ALL = [
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


def test_all_imports() -> None:
    assert sorted(EXPECTED_ALL) == sorted(__all__)
    for name in __all__:
        assert getattr(langchain_enhanced_memory, name) is not None


def test_unknown_name_is_an_attribute_error() -> None:
    try:
        langchain_enhanced_memory.NotAThing  # noqa: B018
    except AttributeError as exc:
        assert "NotAThing" in str(exc)
    else:
        raise AssertionError("no AttributeError")


def test_import_loads_nothing_heavy() -> None:
    # A one-shot process pays only for what it uses: the names load on first use.
    code = (
        "import sys, langchain_enhanced_memory; "
        "print(sorted(m for m in ('numpy', 'pydantic', 'langchain_core', 'sqlite3') "
        "if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
