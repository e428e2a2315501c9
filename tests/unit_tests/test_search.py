"""Ranking (``core.ranking.rank``) on hand-built snapshots, and the engine's request handling.

The snapshots are built here from a few texts (no index, no I/O), so every
expected score can be computed by hand from the signals.
"""

from __future__ import annotations

from datetime import date, datetime
from pathlib import Path

import numpy as np
import pytest

from langchain_enhanced_memory.core.errors import RequestError
from langchain_enhanced_memory.core.fusion import without_vector
from langchain_enhanced_memory.core.ranking import rank
from langchain_enhanced_memory.core.request import MAX_K, SearchRequest
from langchain_enhanced_memory.core.scoring import Postings
from langchain_enhanced_memory.core.settings import FusionWeights, MemorySettings
from langchain_enhanced_memory.core.snapshot import Snapshot
from langchain_enhanced_memory.core.text import path_text, phrases, tokenize
from langchain_enhanced_memory.core.vectorset import VectorSet
from langchain_enhanced_memory.engine import MemorySearch
from tests.workspaces import SMALL_WORKSPACE, write_workspace

NOW = datetime(2026, 2, 9, 9, 0)
DOCS = [  # (path, header, text)
    ("MEMORY.md", "Preferences", "The user prefers dark roast coffee."),
    ("memory/2026-02-08.md", "Decisions", "We decided to migrate billing to Postgres."),
    ("memory/2026-02-07.md", "Standup", "Reviewed the Postgres migration plan with Bob."),
    ("memory/topics/coffee.md", "Beans", "Ordered beans from the roastery."),
]


def snapshot(vectors: np.ndarray | None = None) -> Snapshot:
    terms = [tokenize(h + "\n" + t) for _, h, t in DOCS]
    dates = [p[7:17] if p[7:11].isdigit() else None for p, _, _ in DOCS]
    n = len(DOCS)
    return Snapshot(
        generation=1,
        ids=np.arange(n),
        paths=[p for p, _, _ in DOCS],
        start=np.ones(n, np.int32),
        end=np.ones(n, np.int32),
        header=[h for _, h, _ in DOCS],
        headers=[h for _, h, _ in DOCS],
        texts=[t for _, _, t in DOCS],
        kinds=["core", "daily", "daily", "topic"],
        dates=dates,
        day=np.asarray([date.fromisoformat(d).toordinal() if d else -1 for d in dates]),
        text_post=Postings.build(terms),
        phrase_post=Postings.build(phrases(t) for t in terms),
        header_post=Postings.build(tokenize(h) for _, h, _ in DOCS),
        path_post=Postings.build(tokenize(path_text(p)) for p, _, _ in DOCS),
        vectors=None if vectors is None else VectorSet.of(vectors),
        has_vector=None if vectors is None else np.ones(n, bool),
    )


def test_keyword_only_fuses_the_lexical_signals_with_the_vector_share_spread() -> None:
    settings = MemorySettings()
    r = rank(snapshot(), "postgres migration", NOW, settings, None)
    w = without_vector(settings.ranking.weights)
    s = r.signals
    expected = w.keyword * s["keyword"] + w.header * s["header"] + w.filepath * s["filepath"]
    assert np.allclose(r.scores, expected, atol=1e-6)
    assert s["keyword"].max() == pytest.approx(1.0)  # max-normalised BM25
    # Both Postgres notes match; the one holding both words (and the phrase) wins.
    assert set(np.flatnonzero(r.scores > 0)) == {1, 2}
    assert r.scores[2] > r.scores[1]


def test_common_terms_are_kept_per_generation_and_rank_the_same(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Large workspaces keep the BM25 of terms in many chunks (a pass saved per query);
    # here every size counts as large, and a term in half the chunks as common.
    from langchain_enhanced_memory.core import recipe

    settings = MemorySettings()
    vectors = np.eye(len(DOCS), 4, dtype=np.float32)
    qvec = np.asarray([0.5, 0.5, 0.5, 0.5], np.float32)
    want = rank(snapshot(vectors), "postgres migration plan", NOW, settings, qvec)
    monkeypatch.setattr(recipe, "COMMON_MIN_ROWS", 1)
    monkeypatch.setattr(recipe, "COMMON_SHARE", 2)
    snap = snapshot(vectors)
    for _ in range(2):  # the second query reads the kept arrays
        got = rank(snap, "postgres migration plan", NOW, settings, qvec)
        assert np.array_equal(got.scores, want.scores)
        for name in ("keyword", "header", "filepath", "coverage"):
            assert np.array_equal(got.signals[name], want.signals[name])
    kept = snap.memo[f"bm25_common:{settings.ranking.bm25_k1}:{settings.ranking.bm25_b}"]
    assert set(kept) == {"postgr", "migrat"}  # in 2 of the 4 chunks; "plan" is in one
    monkeypatch.setattr(recipe, "COMMON_TERMS", 0)  # full: nothing more is kept
    fresh = snapshot(vectors)
    rank(fresh, "postgres", NOW, settings, qvec)
    assert not fresh.memo[f"bm25_common:{settings.ranking.bm25_k1}:{settings.ranking.bm25_b}"]


def test_a_named_day_boosts_its_daily_note_and_is_not_a_keyword() -> None:
    settings = MemorySettings()
    r = rank(snapshot(), "what did we decide yesterday about postgres", NOW, settings, None)
    assert r.temporal_dates == ["2026-02-08"]
    boost = r.signals["date_boost"]
    assert boost[1] == settings.ranking.temporal_boost and boost[[0, 2, 3]].tolist() == [1, 1, 1]
    assert int(np.argmax(r.scores)) == 1
    # "yesterday" was stripped: a chunk containing the word would not gain from it.
    plain = rank(snapshot(), "what did we decide about postgres", NOW, settings, None)
    assert np.allclose(plain.signals["keyword"], r.signals["keyword"])


def test_a_range_boosts_less_than_a_day() -> None:
    settings = MemorySettings()
    r = rank(snapshot(), "postgres this month", NOW, settings, None)
    assert r.temporal_dates == ["2026-02-01..2026-02-09"]
    assert r.signals["date_boost"].tolist() == [
        1.0,
        settings.ranking.range_boost,
        settings.ranking.range_boost,
        1.0,
    ]
    assert settings.ranking.range_boost < settings.ranking.temporal_boost


def test_vectors_join_the_fusion_min_max_scaled() -> None:
    vectors = np.eye(4, dtype=np.float32)
    qvec = np.asarray([0.0, 0.0, 0.0, 1.0], np.float32)  # closest to the coffee topic
    settings = MemorySettings(line_vector_share=0.0)
    r = rank(snapshot(vectors), "roast coffee", NOW, settings, qvec)
    assert r.signals["vector"].tolist() == [0.0, 0.0, 0.0, 1.0]
    w = settings.ranking.weights
    s = r.signals
    expected = (
        w.vector * s["vector"]
        + w.keyword * s["keyword"]
        + w.header * s["header"]
        + w.filepath * s["filepath"]
    )
    assert np.allclose(r.scores, expected, atol=1e-6)


def test_adaptive_weights_take_over_when_no_keyword_matches() -> None:
    vectors = np.eye(4, dtype=np.float32)
    qvec = np.asarray([1.0, 0.0, 0.0, 0.0], np.float32)
    settings = MemorySettings(line_vector_share=0.0, weights=FusionWeights(vector=0.1))
    r = rank(snapshot(vectors), "zebra quokka", NOW, settings, qvec)
    assert r.scores[0] == pytest.approx(settings.ranking.adaptive_weights.vector)


def test_the_original_profile_matches_substrings() -> None:
    # "art" is inside "start": the original's known flaw, replayed on purpose.
    original = MemorySettings(profile="original")
    r = rank(snapshot(), "roast", NOW, original, None)
    assert r.signals["keyword"][[0, 3]].tolist() == [1.0, 1.0]  # "roast" in "roastery" too
    default = rank(snapshot(), "roast", NOW, MemorySettings(), None)
    assert default.signals["keyword"][3] == 0.0  # whole stemmed terms only


@pytest.fixture
def engine(tmp_path: Path) -> MemorySearch:
    ws = write_workspace(tmp_path / "ws", SMALL_WORKSPACE)
    return MemorySearch(ws, embedder="none", settings=MemorySettings(log_queries=False))


def test_run_returns_k_hits_and_drops_unmatched_chunks(engine: MemorySearch) -> None:
    response = engine.run(SearchRequest(query="Postgres migration", k=2, now=NOW))
    assert len(response.hits) == 2
    assert all(h.score > 0 for h in response.hits)
    assert response.hits[0].score >= response.hits[1].score
    assert engine.search("zebra quokka", k=5, now=NOW).hits == []


def test_min_score_filters_and_counts(engine: MemorySearch) -> None:
    every = engine.run(SearchRequest(query="Postgres migration", k=10, now=NOW)).hits
    cut = every[0].score
    response = engine.run(SearchRequest(query="Postgres migration", k=10, now=NOW, min_score=cut))
    assert [h.path for h in response.hits] == [h.path for h in every if h.score >= cut]
    assert response.filtered == len(every) - len(response.hits)


@pytest.mark.parametrize(
    ("fields", "field", "problem"),
    [
        ({"query": ""}, "query", "must be a non-empty string"),
        ({"query": " \t"}, "query", "must be a non-empty string"),
        ({"query": 3}, "query", "must be a string"),
        ({"query": "x", "k": 0}, "k", "must be at least 1, got 0"),
        ({"query": "x", "k": True}, "k", "must be an integer"),
        ({"query": "x", "k": "5"}, "k", "must be an integer"),
        ({"query": "x", "now": "soon"}, "now", "ISO date or datetime"),
        ({"query": "x", "now": 12}, "now", "ISO date or datetime"),
        ({"query": "x", "min_score": "high"}, "min_score", "must be a number"),
        ({"query": "x", "min_score": float("nan")}, "min_score", "finite"),
        ({"query": "x", "kk": 1}, "kk", "is not a known field"),
        ({}, "query", "is required"),
    ],
)
def test_one_request_model_says_what_is_wrong(fields: dict, field: str, problem: str) -> None:
    with pytest.raises(RequestError) as err:
        SearchRequest.parse(**fields)
    assert err.value.field == field and problem in err.value.problem
    assert "\n" not in str(err.value)


def test_request_normalises_what_it_accepts() -> None:
    r = SearchRequest.parse(query="caf\udcff", k=10**12, now="2026-02-09T09:00+02:00")
    assert r.query == "caf\ufffd" and r.k == MAX_K
    assert r.now == datetime(2026, 2, 9, 9, 0) and r.now.tzinfo is None
    assert SearchRequest.parse(query="x", now=date(2026, 2, 9)).now == datetime(2026, 2, 9)


def test_engine_search_refuses_a_blank_query(engine: MemorySearch) -> None:
    with pytest.raises(RequestError, match="non-empty"):
        engine.search("   ")


def test_a_folder_without_memory_is_refused_by_the_retriever_and_tools(tmp_path: Path) -> None:
    from langchain_enhanced_memory import EnhancedMemoryRetriever
    from langchain_enhanced_memory.core.errors import NoMemoryError
    from langchain_enhanced_memory.tools import create_memory_tools

    with pytest.raises(NoMemoryError, match="no memory in .* --workspace DIR"):
        EnhancedMemoryRetriever(workspace=tmp_path, embedder="none").invoke("hello")
    tools = {t.name: t for t in create_memory_tools(workspace=tmp_path, embedder="none")}
    answer = tools["memory_search"].invoke({"query": "hello"})
    assert answer.startswith(f"Error: no memory in {tmp_path} (no MEMORY.md, memory/ or sessions/)")
    assert list(tmp_path.iterdir()) == []  # nothing written: no index, no log
