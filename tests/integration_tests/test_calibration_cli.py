"""The calibrated score as users see it: ``search`` processes on a copy of the demo workspace.

Keyword-only and with the offline model's vectors (``--embedder local``: the
model loads in the child), ``score`` tells a real match from a stop word.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.cli_run import run_cli
from tests.workspaces import copy_workspace

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
