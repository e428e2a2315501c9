"""The graph's views: the HTML page and DOT file are self-contained and repeatable."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from langchain_enhanced_memory.core.errors import CrossrefError
from langchain_enhanced_memory.core.settings import MemorySettings
from langchain_enhanced_memory.engine import MemorySearch
from langchain_enhanced_memory.graph import storage, views
from langchain_enhanced_memory.graph.views import GraphData, layout, to_dot, to_html
from tests.fakes import WordEmbeddings
from tests.workspaces import SMALL_WORKSPACE, write_workspace

DATA = GraphData(
    nodes=[
        {"path": "MEMORY.md", "kind": "core", "chunks": 2, "links": 2, "salience": 0.5},
        {
            "path": "memory/2026-02-08.md",
            "kind": "daily",
            "chunks": 3,
            "links": 1,
            "salience": None,
        },
        {
            "path": "memory/topics/<b>&.md",
            "kind": "topic",
            "chunks": 1,
            "links": 1,
            "salience": 0.25,
        },
    ],  # fmt: skip
    edges=[(0, 1, 1.2), (0, 2, 0.8)],
    totals={"files": 3, "links": 2},
)


def test_layout_is_seeded_and_in_the_unit_square() -> None:
    a, b = layout(3, DATA.edges), layout(3, DATA.edges)
    assert np.array_equal(a, b)
    assert a.min() >= 0 and a.max() <= 1
    assert layout(1, []).tolist() == [[0.5, 0.5]] and layout(0, []).shape == (0, 2)


def test_html_is_one_self_contained_page() -> None:
    page = to_html(DATA)
    assert page.startswith("<!DOCTYPE html>") and page == to_html(DATA)
    assert "<script" not in page and not re.search(r"(src|href)=\"https?:", page)
    assert page.count("<circle") >= 3 and page.count('class="link"') == 2
    assert "&lt;b&gt;&amp;.md" in page and "<b>&.md" not in page  # paths are escaped
    assert "salience: 0.500" in page and "salience: n/a" in page


def test_dot_lists_every_node_and_edge() -> None:
    dot = to_dot(DATA)
    assert dot.startswith("graph") and dot.rstrip().endswith("}")
    assert dot.count(" -- ") == 2 and "MEMORY.md" in dot


def test_collect_reads_the_stored_graph(tmp_path: Path) -> None:
    ws = write_workspace(tmp_path / "ws", SMALL_WORKSPACE)
    loose = MemorySettings(crossref_calibrate=None, crossref_threshold=0.1, log_queries=False)
    engine = MemorySearch(ws, embeddings=WordEmbeddings(), settings=loose)
    with pytest.raises(CrossrefError, match="crossref build"):
        views.collect(engine.index)
    engine.update_index()
    storage.build(engine.index, engine.model_id, loose)
    data = views.collect(engine.index, {"MEMORY.md": 0.9})
    paths = [n["path"] for n in data.nodes]
    assert paths == sorted(paths) and "MEMORY.md" in paths
    assert next(n for n in data.nodes if n["path"] == "MEMORY.md")["salience"] == 0.9
    assert all(0 <= a < len(paths) and 0 <= b < len(paths) for a, b, _ in data.edges)


def test_a_transcript_node_has_a_colour_of_its_own() -> None:
    node = {"path": "sessions/s1.jsonl", "kind": "session", "chunks": 4, "links": 1}
    data = GraphData(nodes=[*DATA.nodes, {**node, "salience": None}], edges=DATA.edges, totals={})
    assert views.COLORS["session"] in to_html(data) and views.COLORS["session"] in to_dot(data)
