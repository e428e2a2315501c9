"""``langchain_tests`` integration suites: each tool invoked for real (tool calls, async)."""

from __future__ import annotations

from langchain_tests.integration_tests import ToolsIntegrationTests

from langchain_enhanced_memory.core.settings import MemorySettings
from langchain_enhanced_memory.tools import (
    MemoryAppendTool,
    MemoryCrossrefTool,
    MemoryGetTool,
    MemorySalienceTool,
    MemorySearchTool,
)
from tests.fakes import WordEmbeddings
from tests.workspaces import TempWorkspace

LOOSE = MemorySettings(crossref_calibrate=None, crossref_threshold=0.2)


class TestSearchTool(TempWorkspace, ToolsIntegrationTests):
    @property
    def tool_constructor(self):
        return MemorySearchTool

    @property
    def tool_constructor_params(self):
        return {"workspace": self.ws, "embeddings": WordEmbeddings(), "settings": LOOSE}

    @property
    def tool_invoke_params_example(self):
        # One kind as a string (the unit suite passes a list).
        return {
            "query": "postgres migration",
            "maxResults": 3,
            "since": "2026-02-01",
            "kind": "daily",
        }


class TestGetTool(TempWorkspace, ToolsIntegrationTests):
    @property
    def tool_constructor(self):
        return MemoryGetTool

    @property
    def tool_constructor_params(self):
        return {"workspace": self.ws, "embeddings": WordEmbeddings(), "settings": LOOSE}

    @property
    def tool_invoke_params_example(self):
        return {"path": "memory/2026-02-08.md", "from": 3, "lines": 2}


class TestSalienceTool(TempWorkspace, ToolsIntegrationTests):
    @property
    def tool_constructor(self):
        return MemorySalienceTool

    @property
    def tool_constructor_params(self):
        return {"workspace": self.ws, "embeddings": WordEmbeddings(), "settings": LOOSE}

    @property
    def tool_invoke_params_example(self):
        return {"top": 3}


class TestCrossrefTool(TempWorkspace, ToolsIntegrationTests):
    @property
    def tool_constructor(self):
        return MemoryCrossrefTool

    @property
    def tool_constructor_params(self):
        return {"workspace": self.ws, "embeddings": WordEmbeddings(), "settings": LOOSE}

    @property
    def tool_invoke_params_example(self):
        return {"path": "memory/2026-02-07.md"}


class TestAppendTool(TempWorkspace, ToolsIntegrationTests):
    @property
    def tool_constructor(self):
        return MemoryAppendTool

    @property
    def tool_constructor_params(self):
        return {"workspace": self.ws, "embeddings": WordEmbeddings(), "settings": LOOSE}

    @property
    def tool_invoke_params_example(self):
        return {"text": "The standard suite was here.", "section": "Tests"}
