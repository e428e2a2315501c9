"""Local scopes (several workspaces searched as one) through every face.

The command line as a process, ``serve`` over HTTP, the MCP server through the
SDK client, the retriever and the tools: each hit says its scope, and a search
never returns a scope it did not name.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from langchain_enhanced_memory import EnhancedMemoryRetriever
from langchain_enhanced_memory.tools import create_memory_tools
from tests.cli_run import CLI, run_cli, stop
from tests.integration_tests.test_mcp import error_of, stdio_session
from tests.integration_tests.test_openclaw_json import validate
from tests.integration_tests.test_serve import Server, _serve_env
from tests.workspaces import write_workspace

ALPHA = {"MEMORY.md": "# Alpha\n\nThe alpha team migrates billing to Postgres.\n"}
TEAM = {
    "MEMORY.md": "# Team\n\nThe team chose Postgres for analytics.\n",
    "memory/2026-02-08.md": "# 2026-02-08\n\nPostgres vacuum settings tuned by the team.\n",
}


@pytest.fixture
def scopes(tmp_path: Path) -> dict[str, Path]:
    return {
        "alpha": write_workspace(tmp_path / "alpha", ALPHA),
        "team": write_workspace(tmp_path / "team", TEAM),
    }


def scope_args(scopes: dict[str, Path], **weights: float) -> list[str]:
    args = []
    for name, folder in scopes.items():
        weight = f":{weights[name]}" if name in weights else ""
        args += ["--scope", f"{name}{weight}={folder}"]
    return args


def search(*args: str) -> dict[str, Any]:
    r = run_cli("search", "--json", "--embedder", "none", *args)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    validate(doc, "success")
    return doc


def test_cli_one_ranking_over_scopes_each_result_tagged(scopes: dict[str, Path]) -> None:
    doc = search("Postgres", "--k", "10", *scope_args(scopes))
    assert {row["scope"] for row in doc["results"]} == {"alpha", "team"}
    assert len(doc["results"]) == 3
    # A weight scales a scope's scores in the merge: team's rows fall behind alpha's.
    doc = search("Postgres", "--k", "10", *scope_args(scopes, team=0.01))
    assert doc["results"][0]["scope"] == "alpha"


def test_cli_a_scope_alone_never_returns_another(scopes: dict[str, Path]) -> None:
    doc = search(
        "Postgres team analytics vacuum", "--k", "10", *scope_args({"alpha": scopes["alpha"]})
    )
    assert doc["results"] and {row["scope"] for row in doc["results"]} == {"alpha"}


def test_cli_workspace_alone_has_no_scope(scopes: dict[str, Path]) -> None:
    doc = search("Postgres", "--workspace", str(scopes["team"]))
    assert doc["results"] and all("scope" not in row for row in doc["results"])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--scope", "Bad Name=."], "is not a valid name"),
        (["--scope", "team"], "names no folder and no database"),
        (["--scope", "team:0=."], "weight must be a positive number"),
        (["--scope", "a=.", "--scope", "a=."], "named twice"),
        (["--scope", "a=.", "--workspace", "."], "--workspace and --scope"),
        (["--database", "postgresql://u:secret@127.0.0.1:1/x"], "--database needs --scope"),
    ],
)
def test_cli_bad_scopes_are_one_line_exit_2(args: list[str], message: str) -> None:
    r = run_cli("search", "q", "--embedder", "none", *args)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0] and "secret" not in r.stderr, r.stderr


def test_serve_daemon_is_for_one_workspace(scopes: dict[str, Path]) -> None:
    r = run_cli("serve", "--daemon", *scope_args(scopes))
    assert r.returncode == 2 and "--daemon serves one workspace" in r.stderr


def test_cli_batch_lines_pick_scopes(scopes: dict[str, Path], tmp_path: Path) -> None:
    batch = tmp_path / "q.jsonl"
    lines = [
        {"id": 1, "query": "Postgres"},
        {"id": 2, "query": "Postgres", "scope": "team"},
        {"id": 3, "query": "Postgres", "scope": ["alpha"]},
        {"id": 4, "query": "Postgres", "scope": "nope"},
    ]
    batch.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    r = run_cli(
        "search", "--json", "--embedder", "none", "--batch", str(batch), *scope_args(scopes)
    )
    assert r.returncode == 1, r.stderr
    out = [json.loads(line) for line in r.stdout.splitlines()]
    assert {row["scope"] for row in out[0]["results"]} == {"alpha", "team"}
    assert {row["scope"] for row in out[1]["results"]} == {"team"}
    assert {row["scope"] for row in out[2]["results"]} == {"alpha"}
    assert "scope 'nope' is not one of" in out[3]["error"] and out[3]["line"] == 4


@contextlib.contextmanager
def serving(*args: str) -> Iterator[Server]:
    """``serve ARGS`` (no workspace: its scopes) on a free port; stopped on exit."""
    proc = subprocess.Popen(
        [*CLI, "serve", "--port", "0", "--embedder", "none", "--json", *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_serve_env(),
    )  # fmt: skip
    try:
        line = proc.stdout.readline() if proc.stdout else ""
        assert line, proc.stderr.read() if proc.stderr else ""
        yield Server(proc, json.loads(line)["port"])
    finally:
        stop(proc, timeout=20)


def test_serve_searches_its_scopes_and_refuses_others(scopes: dict[str, Path]) -> None:
    with serving(*scope_args(scopes)) as server:
        status, doc = server.search(query="Postgres", k=10)
        assert status == 200 and {row["scope"] for row in doc["results"]} == {"alpha", "team"}
        status, doc = server.search(query="Postgres", k=10, scope="team")
        assert status == 200 and {row["scope"] for row in doc["results"]} == {"team"}
        status, doc = server.search(query="Postgres", k=10, scope=["alpha"])
        assert status == 200 and {row["scope"] for row in doc["results"]} == {"alpha"}
        for bad in ("secret-scope", 5, [], "Bad"):
            status, doc = server.search(query="Postgres", scope=bad)
            assert status == 400 and "\n" not in doc["error"] and "scope" in doc["error"]
        status, doc = server.request("GET", "/health")
        assert status == 200 and doc["scopes"] == ["alpha", "team"]


def test_mcp_scope_argument(scopes: dict[str, Path]) -> None:
    args = ["mcp", "--embedder", "none", "--allow-write", *scope_args(scopes)]
    folders = {name: str(folder) for name, folder in scopes.items()}
    made = create_memory_tools(scopes=folders, embedder="none", allow_write=True)
    langchain = {t.name: t for t in made}

    async def main() -> None:
        async with stdio_session(args) as session:
            tools = {t.name: t for t in (await session.list_tools()).tools}
            assert set(tools) == {"memory_search", "memory_get", "memory_append", "memory_forget"}
            for tool in tools.values():
                assert tool.inputSchema["additionalProperties"] is False
                assert "scope" in tool.inputSchema["properties"]
                # The LangChain tool over the same scopes takes the same arguments.
                chain = langchain[tool.name].tool_call_schema.model_json_schema()
                assert chain == tool.inputSchema, tool.name
            result = await session.call_tool(
                "memory_search", {"query": "Postgres", "scope": "team"}
            )
            doc = json.loads(result.content[0].text)
            assert doc["results"] and {row["scope"] for row in doc["results"]} == {"team"}
            got = await session.call_tool("memory_get", {"path": "MEMORY.md", "scope": "alpha"})
            assert "alpha team" in json.loads(got.content[0].text)["text"]
            line = await error_of(session, "memory_get", path="MEMORY.md")
            assert "name one of alpha, team" in line
            line = await error_of(session, "memory_search", query="q", scope="nope")
            assert "scope 'nope' is not one of" in line
            done = await session.call_tool(
                "memory_append", {"text": "Chose pgvector.", "scope": "team", "file": "MEMORY.md"}
            )
            assert not done.isError, done.content

    asyncio.run(main())
    assert "Chose pgvector." in (scopes["team"] / "MEMORY.md").read_text(encoding="utf-8")
    assert "Chose pgvector." not in (scopes["alpha"] / "MEMORY.md").read_text(encoding="utf-8")


def test_retriever_documents_say_their_scope(scopes: dict[str, Path]) -> None:
    weighted = {"alpha": scopes["alpha"], "team:0.5": scopes["team"]}
    retriever = EnhancedMemoryRetriever(scopes=weighted, embedder="none", watch=False)
    docs = retriever.invoke("Postgres", k=10)
    assert {d.metadata["scope"] for d in docs} == {"alpha", "team"}
    single = EnhancedMemoryRetriever(workspace=scopes["alpha"], embedder="none", watch=False)
    assert all("scope" not in d.metadata for d in single.invoke("Postgres"))
    with pytest.raises(ValueError, match="workspace and scopes"):
        EnhancedMemoryRetriever(workspace=scopes["alpha"], scopes=["team"]).invoke("q")


def test_tools_take_a_scope(scopes: dict[str, Path]) -> None:
    tools = {
        t.name: t
        for t in create_memory_tools(
            scopes={k: str(v) for k, v in scopes.items()}, embedder="none", allow_write=True
        )  # fmt: skip
    }
    assert set(tools) == {"memory_search", "memory_get", "memory_append", "memory_forget"}
    message = tools["memory_search"].invoke(
        {"type": "tool_call", "id": "1", "name": "memory_search",
         "args": {"query": "Postgres", "scope": "alpha", "maxResults": 10}}
    )  # fmt: skip
    assert {row["scope"] for row in message.artifact["results"]} == {"alpha"}
    assert "alpha: MEMORY.md:1-3" in message.content
    assert "name one of" in tools["memory_get"].invoke({"path": "MEMORY.md"})
    assert "vacuum" in tools["memory_get"].invoke({"path": "memory/2026-02-08.md", "scope": "team"})
    out = tools["memory_append"].invoke({"text": "Use pgvector.", "scope": "alpha"})
    assert out.startswith("Remembered in alpha: memory/")
