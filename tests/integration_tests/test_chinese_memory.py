"""Chinese and mixed-language memory end to end: the benchmark set and the CLI process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from langchain_enhanced_memory.analysis.evaluation import first_hit, load_queries, summarize
from langchain_enhanced_memory.commands.common import parse_now
from langchain_enhanced_memory.engine import MemorySearch
from langchain_enhanced_memory.openclaw.response import result_row
from tests.cli_run import run_cli
from tests.workspaces import copy_workspace

ZH = Path(__file__).resolve().parents[2] / "benchmarks" / "zh"
DATE_CATEGORIES = ("zh-date-relative", "zh-date-absolute")


@pytest.fixture(scope="module")
def zh_workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the Chinese workspace (search writes logs next to the notes)."""
    return copy_workspace(ZH / "linxiao", tmp_path_factory.mktemp("zh") / "linxiao")


def run(*args: str) -> subprocess.CompletedProcess:
    return run_cli(*args, ENHANCED_MEMORY_EMBEDDER="none")


def test_gold_lines_match_the_workspace() -> None:
    r = subprocess.run(
        [sys.executable, str(ZH / "zhbench.py"), "check"], capture_output=True, text=True
    )
    assert r.returncode == 0, r.stderr
    queries = load_queries(ZH / "queries.jsonl")
    assert len(queries) >= 40
    assert sum(q["category"] in DATE_CATEGORIES for q in queries) >= 20


def test_keyword_only_search_on_the_chinese_set(zh_workspace: Path, tmp_path: Path) -> None:
    queries = load_queries(ZH / "queries.jsonl")
    engine = MemorySearch(zh_workspace, embedder="none", index_path=tmp_path / "i.sqlite")
    results = {}
    wrong_day = []
    for q in queries:
        hits = engine.search(q["query"], k=10, now=parse_now(q["now"])).hits
        results[q["id"]] = [result_row(h, 200) for h in hits]
        if q["category"] in DATE_CATEGORIES:
            days = {g["path"] for g in q["gold"]}
            if not hits or hits[0].path not in days:
                wrong_day.append(q["query"])
    # every Chinese date query puts a chunk of the right day's note first
    assert wrong_day == []
    table = summarize(queries, results)["categories"]
    # keyword-only cannot bridge English questions to Chinese notes; all else must hold
    assert table["ALL"]["mrr@10"] >= 0.85, table
    for cat in ("mixed", "zh-path", "zh-date-relative", "zh-date-absolute"):
        assert table[cat]["hit@1"] >= 0.9, (cat, table[cat])
    mixed = next(q for q in queries if q["query"] == "星河项目 p99 latency 上线")
    assert first_hit(mixed["gold"], results[mixed["id"]]) == 1


def test_cli_finds_a_chinese_file_name_and_keeps_cjk_intact(zh_workspace: Path) -> None:
    r = run("index", "--workspace", str(zh_workspace), "--json")
    assert r.returncode == 0, r.stderr
    r = run("search", "项目-星河 的里程碑", "--workspace", str(zh_workspace), "--json", "--k", "3")
    assert r.returncode == 0, r.stderr
    assert "\\u" not in r.stdout  # JSON keeps CJK as text, not escapes
    top = json.loads(r.stdout)["results"][0]
    assert top["path"] == "memory/topics/项目-星河.md"
    lines = (zh_workspace / top["path"]).read_text(encoding="utf-8").split("\n")
    assert top["snippet"] == "\n".join(lines[top["startLine"] - 1 : top["endLine"]])
    assert "9月10日：项目启动" in top["snippet"]


def test_cli_path_signal_matches_a_chinese_name_without_the_dash(zh_workspace: Path) -> None:
    r = run("search", "健身计划", "--workspace", str(zh_workspace), "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["results"][0]["path"] == "memory/topics/健身计划.md"


def test_cli_chinese_relative_date(zh_workspace: Path) -> None:
    r = run(
        "search", "上礼拜五晚上去了哪里", "--now", "2026-10-23T09:00",
        "--workspace", str(zh_workspace), "--json",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    top = json.loads(r.stdout)["results"][0]
    assert top["path"] == "memory/2026-10-16.md"
    assert "家长会" in top["snippet"]
