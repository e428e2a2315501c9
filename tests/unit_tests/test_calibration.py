"""The calibrated score: 0..1, non-increasing down the list, ranking unchanged, comparable."""

from __future__ import annotations

from datetime import datetime

import numpy as np

from langchain_enhanced_memory.core.calibration import calibrate, evidence, features
from langchain_enhanced_memory.core.scoring import Postings
from langchain_enhanced_memory.engine import MemorySearch

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
