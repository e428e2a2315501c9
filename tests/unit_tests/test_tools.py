from __future__ import annotations

import json
from datetime import datetime

import pytest
from langchain_core.messages import ToolMessage
from langchain_tests.unit_tests import ToolsUnitTests

from langchain_enhanced_memory.config import load
from langchain_enhanced_memory.core.settings import MemorySettings
from langchain_enhanced_memory.retriever import EnhancedMemoryRetriever
from langchain_enhanced_memory.store import logs
from langchain_enhanced_memory.tools import (
    MemoryAppendTool,
    MemoryCrossrefTool,
    MemoryGetTool,
    MemorySalienceTool,
    MemorySearchTool,
    create_memory_tools,
)
from tests.fakes import WordEmbeddings
from tests.workspaces import TempWorkspace

NOW = datetime(2026, 2, 9, 9, 0)
LOOSE = MemorySettings(crossref_calibrate=None, crossref_threshold=0.2)


class TestSearchToolStandard(TempWorkspace, ToolsUnitTests):
    @property
    def tool_constructor(self):
        return MemorySearchTool

    @property
    def tool_constructor_params(self):
        return {"workspace": self.ws, "embedder": "none"}

    @property
    def tool_invoke_params_example(self):
        return {
            "query": "postgres migration",
            "maxResults": 3,
            "since": "2026-02-01",
            "kind": ["daily"],
        }


class TestAppendToolStandard(TempWorkspace, ToolsUnitTests):
    @property
    def tool_constructor(self):
        return MemoryAppendTool

    @property
    def tool_constructor_params(self):
        return {"workspace": self.ws, "embedder": "none", "now": NOW}

    @property
    def tool_invoke_params_example(self):
        return {"text": "The standard suite was here.", "section": "Tests"}


class TestGetToolStandard(TempWorkspace, ToolsUnitTests):
    @property
    def tool_constructor(self):
        return MemoryGetTool

    @property
    def tool_constructor_params(self):
        return {"workspace": self.ws, "embedder": "none"}

    @property
    def tool_invoke_params_example(self):
        return {"path": "memory/2026-02-08.md", "from": 3, "lines": 2}


class TestSalienceToolStandard(TempWorkspace, ToolsUnitTests):
    @property
    def tool_constructor(self):
        return MemorySalienceTool

    @property
    def tool_constructor_params(self):
        return {"workspace": self.ws, "embedder": "none"}

    @property
    def tool_invoke_params_example(self):
        return {"top": 2}


class TestCrossrefToolStandard(TempWorkspace, ToolsUnitTests):
    @property
    def tool_constructor(self):
        return MemoryCrossrefTool

    @property
    def tool_constructor_params(self):
        return {"workspace": self.ws, "embeddings": WordEmbeddings()}

    @property
    def tool_invoke_params_example(self):
        return {"path": "memory/2026-02-08.md"}


def _call(tool, args):
    msg = tool.invoke({"type": "tool_call", "id": "c1", "name": tool.name, "args": args})
    assert isinstance(msg, ToolMessage)
    return msg


@pytest.fixture
def tools(workspace, monkeypatch):
    monkeypatch.delenv("ENHANCED_MEMORY_LOG", raising=False)
    load()
    return {
        t.name: t
        for t in create_memory_tools(
            workspace, embeddings=WordEmbeddings(), settings=LOOSE, now=NOW
        )
    }


def test_search_tool_cites_and_returns_json(tools, workspace):
    msg = _call(tools["memory_search"], {"query": "what did we decide yesterday?", "maxResults": 2})
    first = msg.content.splitlines()[0]
    assert first.startswith("[1] memory/2026-02-08.md:")
    assert "Decisions" in first
    art = msg.artifact
    assert set(art) == {"results", "provider", "model", "fallback", "citations", "mode", "debug"}
    row = art["results"][0]
    assert row["path"] == "memory/2026-02-08.md" and row["source"] == "memory"
    assert {"startLine", "endLine", "score", "snippet", "header", "related"} <= set(row)
    assert f"{row['path']}:{row['startLine']}-{row['endLine']}" in msg.content
    assert logs.read_query_log(workspace)[-1]["query"] == "what did we decide yesterday?"


def test_search_tool_no_match(workspace):
    tool = MemorySearchTool(workspace=workspace, embedder="none")
    msg = _call(tool, {"query": "zzzqqq"})
    assert msg.content.startswith("No memory matches") and msg.artifact["results"] == []


def test_get_tool_numbers_lines_and_counts_access(tools, workspace):
    msg = _call(tools["memory_get"], {"path": "memory/2026-02-08.md", "from": 3, "lines": 3})
    lines = msg.content.splitlines()
    assert lines[0] == "memory/2026-02-08.md:3-5"
    assert lines[1].split(None, 1) == ["3", "## Decisions"]
    assert "continue with from=6" in msg.content
    assert msg.artifact["from"] == 3 and msg.artifact["to"] == 5
    assert logs.read_access_log(workspace)["memory/2026-02-08.md"] == 1


def test_get_tool_refusal_is_a_message_not_an_exception(tools):
    msg = _call(tools["memory_get"], {"path": "../../etc/passwd"})
    assert msg.content.startswith("Error: refused:")
    # OpenClaw's memory_get refusal shape, the same `get --json` prints.
    assert msg.artifact == {
        "path": "../../etc/passwd",
        "text": "",
        "disabled": True,
        "error": msg.content.removeprefix("Error: "),
    }


def test_salience_tool(tools):
    msg = _call(tools["memory_salience"], {"top": 2})
    assert "Daily notes from 2026-02-07 haven't been reviewed" in msg.content
    assert len(msg.artifact["items"]) == 2 and msg.artifact["total_items"] == 4


def test_crossref_tool_builds_on_first_use_then_shows(tools):
    overview = _call(tools["memory_crossref"], {})
    assert "Most connected" in overview.content and overview.artifact["files"] == 4
    shown = _call(tools["memory_crossref"], {"path": "memory/2026-02-07.md"})
    assert shown.content.startswith("memory/2026-02-07.md is linked to:")
    assert shown.artifact["path"] == "memory/2026-02-07.md"
    bad = _call(tools["memory_crossref"], {"path": "/etc/passwd"})
    assert bad.content.startswith("Error: refused")


def test_crossref_tool_without_vectors_says_what_to_do(workspace):
    tool = MemoryCrossrefTool(workspace=workspace, embedder="none")
    msg = _call(tool, {})
    assert msg.content.startswith("Error:") and "embedder" in msg.content


def test_tool_without_workspace_fails_clearly():
    with pytest.raises(ValueError, match="workspace"):
        MemorySearchTool().get_engine()


def test_search_tool_takes_one_kind_or_a_list(tools):
    one = _call(tools["memory_search"], {"query": "Postgres", "kind": "daily"})
    many = _call(tools["memory_search"], {"query": "Postgres", "kind": ["daily"]})
    paths = [r["path"] for r in one.artifact["results"]]
    assert paths and all(p.startswith("memory/2026-02-0") for p in paths)
    assert [r["path"] for r in many.artifact["results"]] == paths
    core = _call(tools["memory_search"], {"query": "coffee", "kind": "core"})
    assert {r["path"] for r in core.artifact["results"]} == {"MEMORY.md"}


def test_search_tool_refuses_a_huge_query_without_echoing_it(tools, workspace):
    msg = _call(tools["memory_search"], {"query": "q" * 1_000_000})
    assert msg.content == "Error: query: must be at most 131072 characters, got 1000000"
    assert msg.artifact == {"error": msg.content.removeprefix("Error: ")}
    assert not logs.read_query_log(workspace)  # refused before it ran, so not logged


def test_search_tool_no_match_quotes_a_long_query_by_its_prefix(workspace):
    tool = MemorySearchTool(workspace=workspace, embedder="none")
    msg = _call(tool, {"query": "zzqx " * 1500})
    assert msg.content.startswith("No memory matches 'zzqx zzqx") and len(msg.content) < 100


def test_bad_arguments_are_one_line_errors_not_exceptions(tools):
    msg = _call(tools["memory_search"], {"query": "x", "maxResults": 500, "max_results": 3})
    assert msg.status == "error"
    assert msg.content.split("\n") == [
        "Error: maxResults: must be at most 100, got 500",
        "Error: max_results: is not a known field",
    ]
    msg = _call(tools["memory_search"], {"query": "x", "kind": "journal"})
    assert msg.content == "Error: kind: must be core, daily or topic, got 'journal'"
    msg = _call(tools["memory_get"], {"path": "MEMORY.md", "from": 0})
    assert msg.content == "Error: from: must be at least 1, got 0"
    assert _call(tools["memory_salience"], {"top": "many"}).content == (
        "Error: top: must be an integer, got 'many'"
    )
    assert _call(tools["memory_crossref"], {}).status == "success"  # no path: the overview
    assert _call(tools["memory_crossref"], {"file": "x.md"}).content == (
        "Error: file: is not a known field"
    )


@pytest.mark.parametrize("path", ["p" * 100_000, "memory/" + "p" * 100_000 + ".md"])
def test_get_tool_quotes_a_huge_path_by_its_prefix(tools, path):
    msg = _call(tools["memory_get"], {"path": path})
    assert msg.content.startswith("Error: refused:") and len(msg.content) <= 310
    assert len(msg.artifact["path"]) <= 300 and len(msg.artifact["error"]) <= 300


def test_search_tool_and_retriever_take_a_corpus(tools, workspace):
    turn = {"role": "user", "content": "Postgres it is, said Ana", "timestamp": "2026-02-07T10:00Z"}
    (workspace / "sessions").mkdir()
    (workspace / "sessions" / "s1.jsonl").write_text(json.dumps(turn) + "\n")
    for corpus, sources in (("sessions", {"sessions"}), ("memory", {"memory"})):
        got = _call(tools["memory_search"], {"query": "Postgres", "corpus": corpus})
        assert {r["source"] for r in got.artifact["results"]} == sources
    both = _call(tools["memory_search"], {"query": "Postgres"}).artifact["results"]
    assert {r["source"] for r in both} == {"memory", "sessions"}
    bad = _call(tools["memory_search"], {"query": "Postgres", "corpus": "chats"})
    assert bad.content == "Error: corpus: must be memory, sessions or all, got 'chats'"
    retriever = EnhancedMemoryRetriever(workspace=workspace, embedder="none")
    docs = retriever.invoke("Postgres", filter={"corpus": "sessions"})
    assert [d.metadata["path"] for d in docs] == ["sessions/s1.jsonl"]


def test_tool_text_escapes_control_characters_of_the_notes(tmp_path):
    # A note can hold an escape sequence or a bidirectional override (pasted, or planted to
    # steer the model); the text the model reads shows them escaped, as the terminal does.
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    planted = "# Vault \x1b]0;pwned\x07\n\nThe vault code is 1234 \u202e4321 \x1b[2J done.\n"
    (ws / "memory" / "2026-02-08.md").write_text(planted, encoding="utf-8")
    tools = {t.name: t for t in create_memory_tools(ws, embedder="none", now=NOW)}
    found = _call(tools["memory_search"], {"query": "vault code"}).content
    read = _call(tools["memory_get"], {"path": "memory/2026-02-08.md"}).content
    for text in (found, read):
        assert not {"\x1b", "\x07", "\u202e"} & set(text)
        assert "\\x1b]0;pwned\\x07" in text and "\\u202e4321 \\x1b[2J" in text
    assert read.splitlines()[3].split(None, 1) == [
        "3",
        "The vault code is 1234 \\u202e4321 \\x1b[2J done.",
    ]
    # The artifact is the JSON for code: the note's own characters.
    art = _call(tools["memory_get"], {"path": "memory/2026-02-08.md"}).artifact
    assert "\u202e4321" in art["text"]


def test_the_old_argument_names_are_refused_naming_the_new_ones(tools):
    # The tools take OpenClaw's names, as the MCP server does; k, min_score and
    # from_line were the LangChain tools' own.
    msg = _call(tools["memory_search"], {"query": "x", "k": 2, "min_score": 0.5})
    assert msg.status == "error" and msg.content.split("\n") == [
        "Error: k: is not a known field; use maxResults",
        "Error: min_score: is not a known field; use minScore",
    ]
    msg = _call(tools["memory_get"], {"path": "MEMORY.md", "from_line": 2})
    assert msg.content == "Error: from_line: is not a known field; use from"
    found = _call(tools["memory_search"], {"query": "Postgres", "maxResults": 1, "minScore": 0})
    assert len(found.artifact["results"]) == 1
    got = _call(tools["memory_get"], {"path": "memory/2026-02-08.md", "from": 3, "lines": 1})
    assert got.artifact["text"] == "## Decisions"


def test_crossref_tool_takes_a_results_start_line(tools):
    # As memory_crossref on MCP: the links of one search result's chunk.
    whole = _call(tools["memory_crossref"], {"path": "memory/2026-02-08.md"}).artifact
    one = _call(tools["memory_crossref"], {"path": "memory/2026-02-08.md", "startLine": 3})
    assert one.status == "success", one.content
    assert all(
        int(c["chunk"].rsplit(":", 1)[1]) <= 3 <= c["endLine"] for c in one.artifact["outgoing"]
    )
    assert 0 < len(one.artifact["outgoing"]) < len(whole["outgoing"])


def test_crossref_tool_refuses_a_folder_with_no_memory_writing_nothing(tmp_path):
    # Building the graph indexes first; a folder with no memory is refused before that,
    # as memory_search refuses it, and nothing (no .enhanced-memory/) is written there.
    empty = tmp_path / "empty"
    empty.mkdir()
    msg = _call(MemoryCrossrefTool(workspace=empty, embeddings=WordEmbeddings()), {})
    assert msg.content.startswith("Error: no memory in ") and "\n" not in msg.content
    assert msg.artifact["error"] and list(empty.iterdir()) == []


def test_crossref_tool_answers_an_embedder_failure_as_its_error(workspace):
    # Building the graph embeds the notes; told to fail, the embedder's failure is the
    # tool's answer (what failed; what to do), not an exception.
    tool = MemoryCrossrefTool(
        workspace=workspace,
        embedder="ollama",
        ollama_url="http://127.0.0.1:9",
        on_embedder_error="fail",
    )
    msg = _call(tool, {})
    assert msg.content.startswith("Error: ") and "\n" not in msg.content, msg.content
    assert set(msg.artifact) == {"error", "action"}


@pytest.mark.parametrize("name", ["memory_salience", "memory_status"])
def test_salience_and_status_tools_refuse_a_folder_with_no_memory(tmp_path, name):
    # As memory_search does: not "Nothing needs attention." or "no index yet: run index".
    empty = tmp_path / "empty"
    empty.mkdir()
    tool = {t.name: t for t in create_memory_tools(empty, embedder="none")}[name]
    msg = _call(tool, {})
    assert msg.content.startswith(f"Error: no memory in {empty} "), msg.content
    assert "\n" not in msg.content and list(empty.iterdir()) == []
