"""The calibrated score: 0..1, non-increasing down the list, ranking unchanged, comparable."""

from __future__ import annotations

from datetime import datetime

from langchain_enhanced_memory.core.calibration import calibrate, features
from langchain_enhanced_memory.engine import MemorySearch

NOW = datetime(2026, 2, 9, 9)


def test_scores_are_probabilities_and_never_rise_down_the_list() -> None:
    rows = [(1.2, 1.0, 0.0), (0.4, 0.2, 0.0), (0.9, 1.0, 1.0), (0.1, 0.0, 0.0)]
    for mode in ("hybrid", "keyword"):
        got = calibrate(rows, mode)
        assert all(0.0 <= s <= 1.0 for s in got)
        assert got == sorted(got, reverse=True)
        assert got[2] <= got[1]  # clamped: the third is better evidence but ranked lower


def test_more_evidence_scores_higher() -> None:
    strong, weak = calibrate([(1.0, 1.0, 0.0)], "keyword"), calibrate([(1.0, 0.2, 0.0)], "keyword")
    assert strong[0] > weak[0]


def test_features_read_the_signals() -> None:
    assert features(0.7, {"coverage": 0.5, "date_boost": 1.4}) == (0.7, 0.5, 1.0)
    assert features(0.7, {}) == (0.7, 0.0, 0.0)


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
