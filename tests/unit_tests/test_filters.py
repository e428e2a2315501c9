"""Search filters (since/until/path/kind) through the request model, the engine, the retriever
and the LangChain tools: a mask before ranking, empty and malformed filters, date words."""

from __future__ import annotations

from dataclasses import replace
from datetime import date, datetime
from pathlib import Path

import numpy as np
import pytest

from langchain_enhanced_memory import EnhancedMemoryRetriever
from langchain_enhanced_memory.core.errors import RequestError
from langchain_enhanced_memory.core.filters import SearchFilter, filter_mask, resolve_day
from langchain_enhanced_memory.core.request import SearchRequest
from langchain_enhanced_memory.engine import MemorySearch
from langchain_enhanced_memory.tools import MemorySearchTool
from tests.workspaces import write_workspace

NOW = datetime(2026, 2, 9, 9)  # a Monday


@pytest.fixture
def many(tmp_path: Path) -> Path:
    """Ten daily notes about the boiler; the topic file says "boiler" far more often."""
    files = {
        f"memory/2026-01-{day:02d}.md": f"# 2026-01-{day:02d}\n\n## Log\n\nChecked the boiler.\n"
        for day in range(20, 30)
    }
    files["memory/topics/boiler.md"] = "# Boiler\n\n" + "".join(
        f"## Part {i}\n\nboiler boiler boiler pressure valve {i}.\n\n" for i in range(8)
    )
    files["MEMORY.md"] = "# House\n\nThe boiler is serviced every autumn.\n"
    return write_workspace(tmp_path / "ws", files)


def engine(ws: Path) -> MemorySearch:
    return MemorySearch(ws, embedder="none")


def search(ws: Path, query: str, k: int = 5, **flt: object):
    return engine(ws).run(SearchRequest.parse(query=query, k=k, now=NOW, filter=flt))


# ------------------------------------------------------------------ the model
def test_resolve_day_takes_iso_dates_and_date_words() -> None:
    assert resolve_day("2026-01-05", NOW, last=False) == date(2026, 1, 5)
    assert resolve_day("2026-01-05T18:00", NOW, last=True) == date(2026, 1, 5)
    assert resolve_day("last week", NOW, last=False) == date(2026, 2, 2)
    assert resolve_day("last week", NOW, last=True) == date(2026, 2, 8)
    assert resolve_day("上个月", NOW, last=False) == date(2026, 1, 1)
    assert resolve_day("past 3 days", NOW, last=False) == date(2026, 2, 6)


@pytest.mark.parametrize(
    ("flt", "field", "fragment"),
    [
        ({"since": "someday"}, "since", "not an ISO date or date words"),
        ({"until": "2026-02-30"}, "until", "not a valid date"),
        ({"since": "2026-02-01", "until": "2026-01-01"}, "since", "is after until"),
        ({"kind": "diary"}, "kind", "must be core, daily or topic"),
        ({"kind": []}, "kind", "must be core, daily or topic"),
        ({"path": "../secrets"}, "path", "'..'"),
        ({"path": "/etc"}, "path", "relative to the workspace"),
        ({"path": "  "}, "path", "glob or a path prefix"),
        ({"colour": "red"}, "colour", "not a known field"),
    ],
)
def test_malformed_filters_are_one_line_request_errors(flt, field, fragment) -> None:
    with pytest.raises(RequestError) as err:
        SearchRequest.parse(query="boiler", now=NOW, filter=flt)
    assert err.value.field == field and fragment in err.value.problem
    assert "\n" not in str(err.value)


def test_from_body_reads_openclaw_names_and_top_level_filters() -> None:
    req = SearchRequest.from_body(
        {"query": "q", "maxResults": 3, "minScore": 0.2, "since": "last week", "kind": "daily"},
        now=NOW,
    )
    assert (req.k, req.min_score) == (3, 0.2)
    assert req.filter == SearchFilter(since="last week", kind=("daily",))
    assert SearchRequest.from_body({"query": "q", "corpus": "all"}).filter == SearchFilter()
    sessions = SearchRequest.from_body({"query": "q", "corpus": "sessions"}).filter
    assert sessions == SearchFilter(corpus="sessions")
    with pytest.raises(RequestError, match="corpus"):
        SearchRequest.from_body({"query": "q", "corpus": "chats"})


def test_mask_rows(many: Path) -> None:
    index = engine(many).index
    index.sync()
    snap = index.snapshot(None)
    paths = np.array(snap.paths)

    def kept(**flt: object) -> set[str]:
        mask = filter_mask(snap, SearchFilter(**flt), NOW)
        assert mask is not None
        return set(paths[mask])

    assert filter_mask(snap, SearchFilter(), NOW) is None
    assert kept(path="memory/topics") == {"memory/topics/boiler.md"}
    assert kept(path="memory/topics/**") == {"memory/topics/boiler.md"}
    assert kept(path="memory/2026-01-2?.md") == {f"memory/2026-01-{d}.md" for d in range(20, 30)}
    assert kept(kind=["core"]) == {"MEMORY.md"}
    assert kept(kind=["core", "topic"]) == {"MEMORY.md", "memory/topics/boiler.md"}
    # A date filter keeps dated notes only, inclusive at both ends.
    assert kept(since="2026-01-27") == {"memory/2026-01-27.md", "memory/2026-01-28.md",
                                        "memory/2026-01-29.md"}  # fmt: skip
    assert kept(since="2026-01-21", until="2026-01-22") == {
        "memory/2026-01-21.md",
        "memory/2026-01-22.md",
    }


# ---------------------------------------------------------------- the engine
def test_filter_applies_before_ranking_so_k_results_come_back(many: Path) -> None:
    unfiltered = search(many, "boiler", k=5)
    assert all(h.path == "memory/topics/boiler.md" for h in unfiltered.hits)  # the topic wins
    daily = search(many, "boiler", k=5, kind=["daily"])
    assert len(daily.hits) == 5 and all(h.kind == "daily" for h in daily.hits)
    assert daily.filter_note is None


def test_empty_filter_result_says_why(many: Path) -> None:
    none_match = search(many, "boiler", since="2030-01-01")
    assert none_match.hits == [] and "no memory chunk matches the filter" in none_match.filter_note
    no_query_match = search(many, "zebra", path="memory/topics/**")
    assert no_query_match.hits == []
    assert "match the filter" in no_query_match.filter_note and "none matches the query" in (
        no_query_match.filter_note
    )


def test_date_filter_combined_with_a_date_word_in_the_query(many: Path) -> None:
    # The query names Jan 25 (a boost); the filter keeps Jan 24..26: the named day leads,
    # and nothing outside the filter comes back even though the query matches it.
    got = search(many, "boiler on January 25", k=10, since="2026-01-24", until="2026-01-26")
    assert [h.path for h in got.hits][0] == "memory/2026-01-25.md"
    assert {h.path for h in got.hits} == {f"memory/2026-01-{d}.md" for d in (24, 25, 26)}
    # A date word in the query outside the filter's period: no result from that day.
    outside = search(many, "boiler on January 21", since="2026-01-27")
    assert "memory/2026-01-21.md" not in {h.path for h in outside.hits}
    assert outside.hits and {h.path for h in outside.hits} <= {
        "memory/2026-01-27.md",
        "memory/2026-01-28.md",
        "memory/2026-01-29.md",
    }


def test_filter_date_words_resolve_against_the_request_now(many: Path) -> None:
    now = datetime(2026, 1, 29, 12)
    got = engine(many).run(
        SearchRequest.parse(query="boiler", k=10, now=now, filter={"since": "past 2 days"})
    )
    assert {h.path for h in got.hits} == {f"memory/2026-01-{d}.md" for d in (27, 28, 29)}


# ------------------------------------------------------- retriever and tools
def test_retriever_filter_argument_and_field(many: Path) -> None:
    retriever = EnhancedMemoryRetriever(workspace=many, embedder="none", k=3)
    docs = retriever.invoke("boiler", filter={"kind": ["core"]})
    assert [d.metadata["path"] for d in docs] == ["MEMORY.md"]
    scoped = EnhancedMemoryRetriever(
        workspace=many, embedder="none", k=3, filter=SearchFilter(path="memory/2026-*")
    )
    docs = scoped.invoke("boiler")
    assert len(docs) == 3 and all(d.metadata["kind"] == "daily" for d in docs)
    assert [d.metadata["path"] for d in scoped.invoke("boiler", filter={"kind": "topic"})] == [
        "memory/topics/boiler.md"
    ] * 3
    with pytest.raises(RequestError, match="since"):
        retriever.invoke("boiler", filter={"since": "the day the music died"})
    assert retriever.invoke("boiler", filter={"since": "2030-01-01"}) == []
    # A date word in the query (Jan 25) with a date filter around it.
    docs = retriever.invoke(
        "boiler on January 25", now=NOW, filter={"since": "2026-01-24", "until": "2026-01-26"}
    )
    assert docs[0].metadata["path"] == "memory/2026-01-25.md"
    assert {d.metadata["path"] for d in docs} <= {f"memory/2026-01-{d}.md" for d in (24, 25, 26)}


def test_search_tool_filter_arguments(many: Path) -> None:
    tool = MemorySearchTool(workspace=many, embedder="none", now=NOW)
    props = tool.tool_call_schema.model_json_schema()["properties"]
    assert {"since", "until", "path", "kind", "minScore"} <= set(props)
    out = tool.invoke(
        {"type": "tool_call", "id": "1", "name": "memory_search",
         "args": {"query": "boiler", "kind": ["daily"], "since": "2026-01-28"}}
    )  # fmt: skip
    paths = {r["path"] for r in out.artifact["results"]}
    assert paths == {"memory/2026-01-28.md", "memory/2026-01-29.md"}
    empty = tool.invoke({"query": "boiler", "since": "2031-01-01"})
    assert empty.startswith("No memory matches") and "no memory chunk matches" in empty
    dated = tool.invoke(
        {"type": "tool_call", "id": "2", "name": "memory_search",
         "args": {"query": "boiler on January 25", "since": "2026-01-25", "until": "last week"}}
    )  # fmt: skip
    rows = dated.artifact["results"]
    assert rows[0]["path"] == "memory/2026-01-25.md"
    assert all("2026-01-25" <= r["path"][7:17] <= "2026-02-08" for r in rows)
    bad = tool.invoke({"query": "boiler", "since": "whenever"})
    assert bad.startswith("Error: since:") and "\n" not in bad


def test_normalisation_runs_over_the_kept_rows(many: Path) -> None:
    from tests.fakes import WordEmbeddings

    engine = MemorySearch(many, embeddings=WordEmbeddings())
    engine.update_index()
    request = SearchRequest.parse(query="boiler pressure valve", k=3, now=NOW)
    top = engine.run(request).hits[0]
    assert top.path == "memory/topics/boiler.md"  # the global best, filtered out below
    kept = engine.run(replace(request, filter=SearchFilter(kind=("daily",))))
    # The best kept chunk has the top of each signal, as in a workspace of daily notes only.
    assert kept.hits and kept.hits[0].signals["keyword"] == 1.0
    assert max(h.signals["vector"] for h in kept.hits) == 1.0
