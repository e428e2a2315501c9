"""What the retriever and the tools are given is what their engine gets, field by field."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest

from langchain_enhanced_memory import EnhancedMemoryRetriever
from langchain_enhanced_memory.core.settings import MemorySettings
from langchain_enhanced_memory.engine import EngineConfig, MemorySearch
from langchain_enhanced_memory.tools import MemoryGetTool, MemorySearchTool
from tests.fakes import WordEmbeddings


def _given(workspace: Path) -> dict[str, Any]:
    """A value for every engine field, none the default (a dropped one shows)."""
    return {
        "workspace": workspace,
        "settings": MemorySettings(profile="original", bm25_k1=1.7, embed_inline_max=3),
        "embedder": "none",
        "model": "some-model",
        "ollama_url": "http://127.0.0.1:9",
        "embeddings": WordEmbeddings(),
        "on_embedder_error": "fail",
        "index_path": workspace / "elsewhere.sqlite",
        "auto_index": False,
        "watch": False,
        "check_interval_s": 2.5,
        "background_embedding": False,
    }


def _engine(face: str, given: dict[str, Any]) -> MemorySearch:
    if face == "retriever":
        return EnhancedMemoryRetriever(**given).engine
    # The tools check for edits as a search does: no interval, no auto_index switch.
    tool_fields = {k: v for k, v in given.items() if k not in ("auto_index", "check_interval_s")}
    tool = (MemorySearchTool if face == "search tool" else MemoryGetTool)(**tool_fields)
    return tool.get_engine()


@pytest.mark.parametrize("face", ["retriever", "search tool", "get tool"])
def test_every_engine_field_reaches_the_engine(workspace: Path, face: str) -> None:
    given = _given(workspace)
    engine = _engine(face, given)
    assert {f.name for f in fields(EngineConfig)} == set(given)
    for f in fields(EngineConfig):
        want = given[f.name]
        if face != "retriever" and f.name in ("auto_index", "check_interval_s"):
            want = f.default
        assert getattr(engine.config, f.name) == want, f.name
    assert engine.settings == given["settings"]  # every one of its fields
    engine.close()
