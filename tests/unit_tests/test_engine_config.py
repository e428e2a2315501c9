"""What the retriever and the tools are given is what their engine gets, field by field."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from langchain_enhanced_memory import EnhancedMemoryRetriever
from langchain_enhanced_memory.core.errors import IndexUnavailableError, ScopeError
from langchain_enhanced_memory.core.settings import MemorySettings
from langchain_enhanced_memory.engine import EngineConfig, MemorySearch
from langchain_enhanced_memory.tools import MemoryGetTool, MemorySearchTool, create_memory_tools
from tests.fakes import WordEmbeddings


def _given(workspace: Path) -> dict[str, Any]:
    """A value for every engine field, none the default (a dropped one shows)."""
    return {
        "workspace": workspace,
        "settings": MemorySettings(profile="original", bm25_k1=1.7, embed_inline_max=3),
        "embedder": "none",
        "model": "some-model",
        "ollama_url": "http://127.0.0.1:9",
        "embeddings": WordEmbeddings(),
        "on_embedder_error": "fail",
        "index_path": workspace / "elsewhere.sqlite",
        "auto_index": False,
        "watch": False,
        "check_interval_s": 2.5,
        "background_embedding": False,
    }


def _engine(face: str, given: dict[str, Any]) -> MemorySearch:
    if face == "retriever":
        return EnhancedMemoryRetriever(**given).engine
    # The tools check for edits as a search does: no interval, no auto_index switch.
    tool_fields = {k: v for k, v in given.items() if k not in ("auto_index", "check_interval_s")}
    tool = (MemorySearchTool if face == "search tool" else MemoryGetTool)(**tool_fields)
    return tool.get_engine()


@pytest.mark.parametrize("face", ["retriever", "search tool", "get tool"])
def test_every_engine_field_reaches_the_engine(workspace: Path, face: str) -> None:
    given = _given(workspace)
    engine = _engine(face, given)
    assert {f.name for f in fields(EngineConfig)} == set(given)
    for f in fields(EngineConfig):
        want = given[f.name]
        if face != "retriever" and f.name in ("auto_index", "check_interval_s"):
            want = f.default
        assert getattr(engine.config, f.name) == want, f.name
    assert engine.settings == given["settings"]  # every one of its fields
    engine.close()


# A folder that does not exist is refused when the retriever or the tools are made, in one
# line of the package's own, not by a traceback out of the first search.
_MADE = {
    "retriever": lambda **kw: EnhancedMemoryRetriever(**kw),
    "search tool": lambda **kw: MemorySearchTool(**kw),
    "toolkit": lambda workspace=None, **kw: create_memory_tools(workspace, **kw),
}


@pytest.mark.parametrize("face", list(_MADE))
def test_a_missing_workspace_is_refused_when_made(tmp_path: Path, face: str) -> None:
    with pytest.raises(IndexUnavailableError) as caught:
        _MADE[face](workspace=tmp_path / "nope", embedder="none")
    assert str(caught.value) == f"workspace not found: {tmp_path / 'nope'}"
    assert caught.value.action


@pytest.mark.parametrize("face", list(_MADE))
def test_a_missing_scope_folder_is_refused_when_made(
    tmp_path: Path, workspace: Path, face: str
) -> None:
    scopes = {"mine": str(tmp_path / "notes"), "team:0.5": None, "ok": str(workspace)}
    with pytest.raises(ScopeError) as caught:
        _MADE[face](scopes=scopes, embedder="none")
    assert str(caught.value) == f"scope mine: folder not found: {tmp_path / 'notes'}"
    assert "\n" not in str(caught.value)


def test_a_home_folder_is_expanded_before_it_is_checked(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(workspace.parent))
    retriever = EnhancedMemoryRetriever(scopes={"mine": f"~/{workspace.name}"}, embedder="none")
    assert retriever.invoke("decisions")[0].metadata["scope"] == "mine"
    with pytest.raises(ScopeError, match=r"scope mine: folder not found: .*/nope$"):
        EnhancedMemoryRetriever(scopes={"mine": "~/nope"}, embedder="none")


def test_the_retriever_refuses_a_field_it_does_not_know(workspace: Path) -> None:
    with pytest.raises(ValidationError, match="kk") as refused:
        EnhancedMemoryRetriever(workspace=workspace, embedder="none", kk=1)
    assert refused.value.errors()[0]["type"] == "extra_forbidden"


def test_search_kwargs_are_the_retrievers_own_fields(workspace: Path) -> None:
    # LangChain's as_retriever habit: search_kwargs={"k": ..., "filter": ...}.
    retriever = EnhancedMemoryRetriever(
        workspace=workspace,
        embedder="none",
        search_kwargs={"k": 1, "filter": {"kind": "daily"}, "min_score": 0.0},
    )
    docs = retriever.invoke("Postgres migration")
    assert len(docs) == 1 and docs[0].metadata["kind"] == "daily"
    assert retriever.min_score == 0.0
    high = EnhancedMemoryRetriever(
        workspace=workspace, embedder="none", search_kwargs={"min_score": 1.0}
    )
    assert high.invoke("Postgres migration") == []  # no score reaches 1: the floor counts
    retriever.engine.close()
    high.engine.close()


@pytest.mark.parametrize(
    ("search_kwargs", "says"),
    [
        ({"score_threshold": 0.5}, "'score_threshold' is not taken here; use min_score"),
        ({"kk": 1}, "'kk' is not taken here; use k, filter or min_score"),
        ([("k", 1)], "search_kwargs must be a dict"),
    ],
)
def test_search_kwargs_refuse_what_they_cannot_honour(
    workspace: Path, search_kwargs: Any, says: str
) -> None:
    with pytest.raises(ValidationError, match=says):
        EnhancedMemoryRetriever(workspace=workspace, search_kwargs=search_kwargs)


def test_search_kwargs_and_the_same_field_must_agree(workspace: Path) -> None:
    with pytest.raises(ValidationError, match="'k' is also given as a field"):
        EnhancedMemoryRetriever(workspace=workspace, k=3, search_kwargs={"k": 1})
