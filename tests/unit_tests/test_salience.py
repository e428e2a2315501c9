from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path

import pytest

from langchain_enhanced_memory.analysis import salience
from langchain_enhanced_memory.config import load
from langchain_enhanced_memory.core.settings import MemorySettings
from langchain_enhanced_memory.engine import MemorySearch
from langchain_enhanced_memory.store import logs
from tests.workspaces import write_workspace

NOW = datetime(2026, 2, 20, 12, 0)


@pytest.fixture(autouse=True)
def _no_env(monkeypatch):
    monkeypatch.delenv("ENHANCED_MEMORY_LOG", raising=False)
    load()


def _age(path: Path, days: float) -> None:
    t = NOW.timestamp() - days * 86400
    os.utime(path, (t, t))


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = write_workspace(
        tmp_path / "ws",
        {
            "MEMORY.md": "# Facts\n\n" + "x" * 10000 + "\n",
            "AGENTS.md": "# Rules\n\nBe terse.\n",
            "memory/2026-02-08.md": "# Standup\n\nShipped the billing migration.\n",
            "memory/2026-02-19.md": "# Standup\n\nFixed the flaky deploy test.\n",
            "memory/topics/project-alpha.md": "# Project Alpha\n\nLatency goals.\n",
            "memory/people/alice.md": "# Alice\n\nLeads payments.\n",
        },
    )
    _age(root / "MEMORY.md", 2)
    _age(root / "memory/topics/project-alpha.md", 10)
    _age(root / "memory/people/alice.md", 1 / 24)
    return root


def _by_path(result):
    return {i["path"]: i for i in result["items"]}


def test_formula_kinds_and_ages(ws):
    result = salience.compute(ws, now=NOW, top=None)
    items = _by_path(result)
    assert set(items) == {
        "MEMORY.md",
        "memory/2026-02-08.md",
        "memory/2026-02-19.md",
        "memory/topics/project-alpha.md",
        "memory/people/alice.md",
    }, "core files other than MEMORY.md are not memory to review"
    assert result["total_items"] == 5
    core = items["MEMORY.md"]
    assert core["type"] == "core"
    size = (ws / "MEMORY.md").stat().st_size
    assert core["importance"] == pytest.approx(min(1, 0.8 + min(0.1, size / 50000)), abs=1e-4)
    assert core["staleness"] == pytest.approx(2 / 5, abs=1e-3)
    daily = items["memory/2026-02-08.md"]
    assert daily["type"] == "daily" and daily["age_days"] == 12.0 and daily["staleness"] == 1.0
    assert items["memory/2026-02-19.md"]["staleness"] == pytest.approx(1 / 7, abs=1e-4)
    topic = items["memory/topics/project-alpha.md"]
    assert topic["type"] == "topic" and topic["name"] == "project-alpha"
    assert topic["staleness"] == 1.0
    assert topic["salience"] == pytest.approx(topic["importance"] * topic["staleness"], abs=1e-4)
    assert items["memory/people/alice.md"]["type"] == "topic"
    # Highest salience first; the original's JSON keys are all there.
    sal = [i["salience"] for i in result["items"]]
    assert sal == sorted(sal, reverse=True)
    assert set(result) == {"timestamp", "items", "prompts", "total_items"}
    assert {
        "path",
        "type",
        "name",
        "age_days",
        "size",
        "importance",
        "staleness",
        "salience",
        "accesses",
    } <= set(core)


def test_top_and_prompts(ws):
    result = salience.compute(ws, now=NOW, top=2)
    assert len(result["items"]) == 2 and result["total_items"] == 5
    assert result["timestamp"] == "2026-02-20T12:00:00"
    prompts = " ".join(result["prompts"])
    assert "Topic 'project-alpha' hasn't been updated in 10 days." in prompts
    assert "Daily notes from 2026-02-08 haven't been reviewed for MEMORY.md." in prompts
    full = salience.compute(ws, now=NOW, top=None)
    assert "MEMORY.md last updated 2 days ago." in full["prompts"]
    # A file touched an hour ago is not nagged about.
    assert not any("alice" in p for p in full["prompts"])


def test_accesses_lower_importance_capped(ws):
    logs.append_entry(ws, None, ["memory/topics/project-alpha.md"] * 1)
    for _ in range(9):
        logs.append_entry(ws, None, ["memory/topics/project-alpha.md"])
    item = _by_path(salience.compute(ws, now=NOW, top=None))["memory/topics/project-alpha.md"]
    assert item["accesses"] == 10
    base = 0.7 + min(0.1, item["size"] / 50000)
    assert item["importance"] == pytest.approx(base - 0.2, abs=1e-4)  # 0.03 * 10 capped at 0.2


def test_gap_from_logged_low_scoring_queries(ws):
    logs.append_entry(ws, {"query": "Project Alpha budget?", "top_score": 0.12})
    logs.append_entry(ws, {"query": "alice", "top_score": 0.9})  # found fine: no gap
    logs.append_entry(
        ws,
        {"query": "what happened yesterday?", "top_score": 0.2, "timestamp": "2026-02-09T10:00:00"},
    )
    items = _by_path(salience.compute(ws, now=NOW, top=None))
    topic = items["memory/topics/project-alpha.md"]
    assert topic["gap"] is True
    assert topic["importance"] == pytest.approx(
        min(1, 0.7 + min(0.1, topic["size"] / 50000) + salience.GAP_BONUS), abs=1e-4
    )
    assert items["memory/2026-02-08.md"]["gap"] is True, "'yesterday' asked on Feb 9"
    assert items["memory/people/alice.md"]["gap"] is False
    assert items["memory/2026-02-19.md"]["gap"] is False


def test_only_the_last_50_queries_count(ws):
    logs.append_entry(ws, {"query": "project alpha", "top_score": 0.1})
    for n in range(50):
        logs.append_entry(ws, {"query": f"unrelated {n}", "top_score": 0.1})
    items = _by_path(salience.compute(ws, now=NOW, top=None))
    assert items["memory/topics/project-alpha.md"]["gap"] is False


def test_real_searches_give_accesses_and_a_gap(ws):
    engine = MemorySearch(ws, settings=MemorySettings(), embedder="none")
    found = engine.search("billing migration", now=datetime(2026, 2, 9, 9))
    assert found.hits[0].path == "memory/2026-02-08.md"
    miss = engine.search("what did we say about kubernetes yesterday", now=datetime(2026, 2, 9, 9))
    assert logs.read_query_log(ws)[-1]["top_score"] < 0.4
    assert miss.hits[0].path == "memory/2026-02-08.md"
    item = _by_path(salience.compute(ws, now=NOW, top=None))["memory/2026-02-08.md"]
    assert item["accesses"] >= 2
    assert item["gap"] is True


def test_empty_workspace(tmp_path):
    (tmp_path / "memory").mkdir()
    result = salience.compute(tmp_path, now=NOW)
    assert result["items"] == [] and result["total_items"] == 0
    assert "Nothing needs attention." in salience.format_text(result)
