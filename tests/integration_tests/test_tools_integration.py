"""``langchain_tests`` integration suites: each tool invoked for real (tool calls, async)."""

from __future__ import annotations

import tempfile
from pathlib import Path

from conftest import SMALL_WORKSPACE, write_workspace
from fakes import WordEmbeddings
from langchain_tests.integration_tests import ToolsIntegrationTests

from langchain_enhanced_memory.core.settings import MemorySettings
from langchain_enhanced_memory.tools import (
    MemoryCrossrefTool,
    MemoryGetTool,
    MemorySalienceTool,
    MemorySearchTool,
)

LOOSE = MemorySettings(crossref_calibrate=None, crossref_threshold=0.2)


def _params() -> dict:
    ws = write_workspace(Path(tempfile.mkdtemp(prefix="em-itools-")) / "ws", SMALL_WORKSPACE)
    return {"workspace": ws, "embeddings": WordEmbeddings(), "settings": LOOSE}


class TestSearchTool(ToolsIntegrationTests):
    @property
    def tool_constructor(self):
        return MemorySearchTool

    @property
    def tool_constructor_params(self):
        return _params()

    @property
    def tool_invoke_params_example(self):
        return {"query": "postgres migration", "k": 3}


class TestGetTool(ToolsIntegrationTests):
    @property
    def tool_constructor(self):
        return MemoryGetTool

    @property
    def tool_constructor_params(self):
        return _params()

    @property
    def tool_invoke_params_example(self):
        return {"path": "memory/2026-02-08.md", "from": 3, "lines": 2}


class TestSalienceTool(ToolsIntegrationTests):
    @property
    def tool_constructor(self):
        return MemorySalienceTool

    @property
    def tool_constructor_params(self):
        return _params()

    @property
    def tool_invoke_params_example(self):
        return {"top": 3}


class TestCrossrefTool(ToolsIntegrationTests):
    @property
    def tool_constructor(self):
        return MemoryCrossrefTool

    @property
    def tool_constructor_params(self):
        return _params()

    @property
    def tool_invoke_params_example(self):
        return {"path": "memory/2026-02-07.md"}
