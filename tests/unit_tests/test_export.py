"""Exports of the original's files: vectors.json rows and atomic writes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from langchain_enhanced_memory.core.errors import CrossrefError, ExportError
from langchain_enhanced_memory.core.settings import MemorySettings
from langchain_enhanced_memory.engine import MemorySearch
from langchain_enhanced_memory.openclaw.export import crossrefs_json, vectors_json, write_json
from tests.fakes import WordEmbeddings
from tests.workspaces import SMALL_WORKSPACE, write_workspace

QUIET = MemorySettings(log_queries=False)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    return write_workspace(tmp_path / "ws", SMALL_WORKSPACE)


def test_vectors_json_has_one_row_per_chunk_in_the_original_shape(ws: Path) -> None:
    engine = MemorySearch(ws, embeddings=WordEmbeddings(dim=16), settings=QUIET)
    rows = vectors_json(engine)
    assert len(rows) == engine.index.stats()["chunks"]
    for row in rows:
        assert set(row) == {"file", "header", "line", "text", "embedding"}
        assert len(row["embedding"]) == 16 and row["line"] >= 1
        lines = (ws / row["file"]).read_text().split("\n")
        assert lines[row["line"] - 1] == row["text"].split("\n")[0]


def test_vectors_json_without_an_embedder_says_so(ws: Path) -> None:
    with pytest.raises(ExportError, match="needs an embedder"):
        vectors_json(MemorySearch(ws, embedder="none", settings=QUIET))


def test_crossrefs_json_needs_a_graph(ws: Path) -> None:
    with pytest.raises(CrossrefError, match="crossref build"):
        crossrefs_json(MemorySearch(ws, embedder="none", settings=QUIET))


def test_write_json_is_atomic_and_relative_to_the_workspace(ws: Path) -> None:
    target = write_json({"a": "数据"}, "", ws, "memory/out.json")
    assert target == ws / "memory/out.json"
    assert json.loads(target.read_text(encoding="utf-8")) == {"a": "数据"}
    assert not list(target.parent.glob("*.tmp"))
    with pytest.raises(ExportError, match="cannot write"):
        write_json({}, str(ws / "MEMORY.md" / "x.json"), ws, "unused")
