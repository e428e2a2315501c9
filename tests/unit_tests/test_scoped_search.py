"""ScopedSearch: one ranking over several scopes' searchers, each hit tagged with its scope."""

from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path

import pytest

from langchain_enhanced_memory.core.errors import ScopeError
from langchain_enhanced_memory.core.request import SearchRequest
from langchain_enhanced_memory.core.results import Hit, SearchResponse
from langchain_enhanced_memory.core.scopes import ScopeRef
from langchain_enhanced_memory.core.settings import MemorySettings
from langchain_enhanced_memory.engine import EngineConfig, MemorySearch
from langchain_enhanced_memory.engine.scoped import (
    ScopedSearch,
    narrowed,
    one_scope,
    parse_scope_arg,
    scope_specs,
    scoped_search,
)
from tests.fakes import WordEmbeddings
from tests.workspaces import SMALL_WORKSPACE, write_workspace


class Fake:
    """A scope's searcher answering fixed hits, and saying on which thread it ran."""

    settings = MemorySettings()

    def __init__(self, scores: list[float], *, mode: str = "hybrid", fallback: str | None = None):
        self.scores, self.mode, self.fallback = scores, mode, fallback
        self.threads: list[str] = []

    def run(self, request: SearchRequest) -> SearchResponse:
        self.threads.append(threading.current_thread().name)
        hits = [
            Hit(f"n{i}.md", 1, 1, "", "", "t", s, {}, "topic", None)
            for i, s in enumerate(self.scores[: request.k])
        ]
        return SearchResponse(
            hits=hits, provider="p", model="m", fallback=self.fallback, mode=self.mode,
            timings={"rankMs": 2.0, "searchMs": 3.0},
        )  # fmt: skip


def request(k: int = 5) -> SearchRequest:
    return SearchRequest(query="q", k=k)


def test_merges_by_weight_times_score_and_tags_each_hit() -> None:
    search = ScopedSearch(
        [(ScopeRef("alpha"), Fake([0.9, 0.5])), (ScopeRef("team", 0.5), Fake([0.95, 0.8]))]
    )
    hits = search.run(request(3)).hits
    assert [(h.scope, h.score) for h in hits] == [("alpha", 0.9), ("alpha", 0.5), ("team", 0.95)]


def test_never_returns_a_scope_it_was_not_named() -> None:
    search = ScopedSearch(
        [(ScopeRef("alpha"), Fake([0.1])), (ScopeRef("team"), Fake([0.99, 0.98, 0.97]))]
    )
    assert {h.scope for h in search.only(["alpha"]).run(request(10)).hits} == {"alpha"}
    assert {h.scope for h in narrowed(search, "alpha").run(request(10)).hits} == {"alpha"}
    assert {h.scope for h in search.run(request(10)).hits} == {"alpha", "team"}


def test_unknown_or_invalid_scope_is_refused_in_one_line() -> None:
    search = ScopedSearch([(ScopeRef("alpha"), Fake([0.5]))])
    for bad in ("team", "Bad Name", 3):
        with pytest.raises(ScopeError) as err:
            search.only([bad])
        assert "\n" not in str(err.value)
    with pytest.raises(ScopeError):
        narrowed(search, [])
    with pytest.raises(ScopeError):  # a single workspace's engine has no scopes
        narrowed(Fake([0.5]), "alpha")


def test_one_scope_of_several_must_be_named() -> None:
    a, b = Fake([0.5]), Fake([0.5])
    search = ScopedSearch([(ScopeRef("alpha"), a), (ScopeRef("team"), b)])
    assert one_scope(search, "team") is b
    with pytest.raises(ScopeError, match="name one of alpha, team"):
        one_scope(search, None)
    assert one_scope(ScopedSearch([(ScopeRef("alpha"), a)]), None) is a


def test_a_keyword_only_member_is_said_and_stage_times_are_the_slowest() -> None:
    search = ScopedSearch(
        [(ScopeRef("alpha"), Fake([0.5])), (ScopeRef("team"), Fake([0.4], mode="keyword",
                                                                   fallback="keyword-only"))]
    )  # fmt: skip
    response = search.run(request())
    assert response.mode == "hybrid" and response.fallback == "keyword-only"
    assert response.timings["rankMs"] == 2.0 and "searchMs" in response.timings


def test_members_run_on_threads_when_several() -> None:
    a, b = Fake([0.5]), Fake([0.4])
    ScopedSearch([(ScopeRef("alpha"), a), (ScopeRef("team"), b)]).run(request())
    assert a.threads[0].startswith("scope") and b.threads[0].startswith("scope")


def test_scope_arguments() -> None:
    assert parse_scope_arg("team") == (ScopeRef("team"), None)
    assert parse_scope_arg("team:0.5=/srv/a=b:c") == (ScopeRef("team", 0.5), Path("/srv/a=b:c"))
    for bad in ("team=", "Team=/x", "team:x=/y"):
        with pytest.raises(ScopeError):
            parse_scope_arg(bad)
    assert scope_specs(["alice", "team:0.5"]) == [
        (ScopeRef("alice"), None),
        (ScopeRef("team", 0.5), None),
    ]
    assert scope_specs({"me": "/w", "team": None}) == [
        (ScopeRef("me"), Path("/w")),
        (ScopeRef("team"), None),
    ]
    with pytest.raises(ScopeError, match="named twice"):
        scope_specs(["team", "team:2"])


def test_a_database_scope_needs_a_database(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("ENHANCED_MEMORY_DATABASE_URL", raising=False)
    config = EngineConfig(workspace=tmp_path, embedder="none")
    with pytest.raises(ScopeError, match="no database"):
        scoped_search(config, scope_specs(["team"]))


def test_local_scopes_search_their_own_workspaces(tmp_path: Path) -> None:
    a = write_workspace(tmp_path / "a", SMALL_WORKSPACE)
    b = write_workspace(tmp_path / "b", {"MEMORY.md": "# B\n\nThe ramen place closed.\n"})
    config = EngineConfig(workspace=tmp_path, embedder="none")
    with scoped_search(config, scope_specs({"alpha": a, "beta": b})) as search:
        hits = search.run(SearchRequest(query="ramen", k=10)).hits
        assert {h.scope for h in hits} == {"alpha", "beta"}
        assert [h.path for h in hits if h.scope == "beta"] == ["MEMORY.md"]
        assert {h.scope for h in search.only(["beta"]).run(request(10)).hits} <= {"beta"}


def test_update_index_over_scopes_answers_as_one_engine_does(tmp_path: Path) -> None:
    # The same (sync report, texts embedded) as SearchEngine.update_index: no one report
    # over several folders, and the texts embedded over all of them.
    notes = {"a": SMALL_WORKSPACE, "b": {"MEMORY.md": "# B\n\nThe ramen place closed.\n"}}
    config = EngineConfig(workspace=tmp_path, embeddings=WordEmbeddings(dim=32))
    each = 0
    for name, files in notes.items():  # each folder alone, in a copy of its own
        alone = replace(config, workspace=write_workspace(tmp_path / f"alone-{name}", files))
        with MemorySearch.from_config(alone) as engine:
            each += engine.update_index()[1]
    folders = {name: write_workspace(tmp_path / name, files) for name, files in notes.items()}
    with scoped_search(config, scope_specs(folders)) as search:
        assert search.update_index() == (None, each)
        assert search.update_index() == (None, 0)
