"""The calibrated score: 0..1, non-increasing down the list, ranking unchanged, comparable."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from langchain_enhanced_memory.core.calibration import calibrate, evidence, features
from langchain_enhanced_memory.core.scoring import Postings
from langchain_enhanced_memory.engine import MemorySearch
from tests.cli_run import run_cli
from tests.workspaces import copy_workspace

NOW = datetime(2026, 2, 9, 9)


def test_scores_are_probabilities_and_never_rise_down_the_list() -> None:
    rows = {
        "hybrid": [(1.0, 1.2, 0.0), (0.2, 0.4, 0.0), (1.0, 0.9, 0.0), (0.0, 0.1, 0.0)],
        "keyword": [(1.0,), (0.2,), (0.9,), (0.0,)],
    }
    for mode, ranked in rows.items():
        got = calibrate(ranked, mode)
        assert all(0.0 <= s <= 1.0 for s in got)
        assert got == sorted(got, reverse=True)
        assert got[2] <= got[1]  # clamped: the third is better evidence but ranked lower


def test_more_evidence_scores_higher() -> None:
    hybrid = calibrate([(1.0, 1.0, 0.0)], "hybrid"), calibrate([(0.2, 1.0, 0.0)], "hybrid")
    keyword = calibrate([(1.0,)], "keyword"), calibrate([(0.3,)], "keyword")
    assert hybrid[0][0] > hybrid[1][0] and keyword[0][0] > keyword[1][0]


def test_features_read_the_signals() -> None:
    # The evidence, times the hit's fused score's share of the best hit's; with a query
    # vector the fused score and a matched date too.
    hit = {"evidence": 0.8, "date_boost": 1.4}
    assert features(0.35, hit, "hybrid", 0.7) == (0.4, 0.35, 1.0)
    assert features(0.7, {}, "hybrid") == (0.0, 0.7, 0.0)
    assert features(0.35, {"evidence": 0.8}, "keyword", 0.7) == (0.4,)
    assert features(0.35, {}, "keyword") == (0.0,)


def test_evidence_weighs_terms_by_idf_and_counts_a_named_date() -> None:
    # "of" is in every chunk, "ramen" in one: holding "of" alone is little evidence.
    post = Postings.build([["of", "ramen"], ["of"], ["of", "coffe"], ["of"]])
    rows = np.arange(4)
    undated = np.zeros(4, bool)
    common = evidence(post, ["of"], rows, undated, asked=False)
    rare = evidence(post, ["ramen"], rows, undated, asked=False)
    assert common.max() < 0.2 and rare[0] == 1.0 and rare[1:].tolist() == [0.0, 0.0, 0.0]
    # A query of a date only ("what did I do yesterday"): its note holds all of it.
    dated = np.array([False, True, True, False])
    assert evidence(post, [], rows, dated, asked=True).tolist() == [0.0, 1.0, 1.0, 0.0]
    # The date and a word: the dated chunk without the word holds part of the query.
    both = evidence(post, ["ramen"], rows, dated, asked=True)
    assert 0.0 < both[1] < both[0] + both[1] and both[3] == 0.0


def test_engine_keeps_ranking_order_and_scores_compare_across_queries(workspace) -> None:
    engine = MemorySearch(workspace, embedder="none")
    full = engine.search("billing database Postgres migration", k=5, now=NOW)
    fused = [h.signals["fused"] for h in full.hits]
    assert fused == sorted(fused, reverse=True)  # the order ranking chose
    assert [h.score for h in full.hits] == sorted((h.score for h in full.hits), reverse=True)
    # Each signal is rescaled per query, so both top hits fuse to about the same score;
    # the calibrated score tells the query whose words the note holds from the one it does not.
    partial = engine.search("billing quarterly forecast spreadsheet", k=5, now=NOW)
    assert full.hits[0].score > partial.hits[0].score


# Keyword-only through the CLI on a copy of the demo workspace: without vectors (``--embedder
# none``, or Ollama down) ``score`` must still tell a real match from a stop word.
DEMO = Path(__file__).resolve().parents[2] / "examples" / "workspace"
DEMO_NOW = "2026-12-02T09:00:00"
QUERIES = {
    "full": "pg_upgrade downtime",
    "lunch": "Hanoi Deli team lunch",
    "yesterday": "what did I do yesterday",
    "of": "of",
}


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return copy_workspace(DEMO, tmp_path_factory.mktemp("demo") / "workspace")


def _batch(ws: Path, embedder: str, mode: str) -> dict[str, list[dict[str, Any]]]:
    """Each query's results from one ``search --batch`` process, all answered in ``mode``."""
    batch = ws / "batch.jsonl"
    batch.write_text(
        "".join(
            json.dumps({"id": i, "query": q, "now": DEMO_NOW}) + "\n" for i, q in QUERIES.items()
        )
    )
    done = run_cli(
        "search", "--workspace", str(ws), "--embedder", embedder, "--json", "--batch", str(batch)
    )
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert {row["mode"] for row in lines} == {mode}
    return {row["id"]: row["results"] for row in lines}


@pytest.fixture(scope="module")
def keyword_only(demo: Path) -> dict[str, list[dict[str, Any]]]:
    return _batch(demo, "none", "keyword")


@pytest.fixture(scope="module")
def hybrid(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[dict[str, Any]]]:
    """The same queries with the offline model's vectors (indexed first: a search answers
    keyword-only while they are still coming)."""
    ws = copy_workspace(DEMO, tmp_path_factory.mktemp("demo-local") / "workspace")
    done = run_cli("index", "--workspace", str(ws), "--embedder", "local")
    assert done.returncode == 0, done.stderr
    return _batch(ws, "local", "hybrid")


def test_keyword_only_full_match_scores_high(keyword_only: dict[str, list[dict[str, Any]]]) -> None:
    for name, path in (("full", "memory/2026-11-18.md"), ("lunch", "memory/2026-11-13.md")):
        top = keyword_only[name][0]
        assert top["path"] == path
        assert top["score"] >= 0.7, (name, top["score"])


def test_keyword_only_date_routed_note_scores_high(
    keyword_only: dict[str, list[dict[str, Any]]],
) -> None:
    results = keyword_only["yesterday"]
    assert {r["path"] for r in results} == {"memory/2026-12-01.md"}
    assert results[0]["score"] >= 0.7


def test_keyword_only_common_word_scores_low(keyword_only: dict[str, list[dict[str, Any]]]) -> None:
    top_of = keyword_only["of"][0]["score"]
    assert top_of < 0.2
    assert top_of < min(keyword_only[n][0]["score"] for n in ("full", "lunch", "yesterday"))


def test_hybrid_scores_mean_what_keyword_only_scores_mean(
    hybrid: dict[str, list[dict[str, Any]]],
) -> None:
    # With vectors as without: a full keyword match scores high, a stop word low.
    full = hybrid["full"][0]
    assert full["path"] == "memory/2026-11-18.md"
    assert full["score"] >= 0.7, full["score"]
    top_of = hybrid["of"][0]["score"]
    assert top_of < 0.3
    assert top_of < min(hybrid[n][0]["score"] for n in ("full", "lunch", "yesterday"))


def test_human_output_says_results_were_filtered(demo: Path) -> None:
    common = ("search", "--workspace", str(demo), "--embedder", "none", "--now", DEMO_NOW)
    done = run_cli(*common, "--min-score", "0.5", "of")
    assert done.returncode == 0, done.stderr
    assert "no results above --min-score 0.5 (5 below)" in done.stdout
    # Some kept, some dropped: the list says how many it left out.
    done = run_cli(*common, "--min-score", "0.5", "PgBouncer pool mode")
    kept = [line for line in done.stdout.splitlines() if line[:1].isdigit()]
    assert kept and "below --min-score 0.5" in done.stdout.splitlines()[-1]
