"""Database scopes through the Python faces and the servers, against a real PostgreSQL.

Workers that share one database-backed scope per user and a team scope (the
docs' LangGraph deployment): each writes with ``memory_append`` and every
worker's next search finds it, tagged with its scope, never another's.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from langchain_enhanced_memory import EnhancedMemoryRetriever
from langchain_enhanced_memory.tools import create_memory_tools
from tests.integration_tests.test_mcp import error_of, stdio_session
from tests.integration_tests.test_scopes_faces import serving
from tests.workspaces import write_workspace


def worker_tools(url: str, user: str) -> dict:
    """One stateless worker's tools: its user's scope and the team's, no folder."""
    tools = create_memory_tools(
        scopes=[user, "team:0.8"], database_url=url, embedder="none", allow_write=True
    )
    return {tool.name: tool for tool in tools}


def test_workers_share_user_and_team_scopes(database_url: str) -> None:
    a, b = worker_tools(database_url, "alice"), worker_tools(database_url, "bob")
    assert "Remembered in alice: memory/" in a["memory_append"].invoke(
        {"text": "Alice prefers the window seat.", "scope": "alice"}
    )
    b["memory_append"].invoke({"text": "The team offsite is in Lisbon.", "scope": "team"})
    # Another worker, another instance: both writes are in its next search.
    message = a["memory_search"].invoke(
        {"type": "tool_call", "id": "1", "name": "memory_search",
         "args": {"query": "window seat Lisbon offsite", "maxResults": 10}}
    )  # fmt: skip
    assert {row["scope"] for row in message.artifact["results"]} == {"alice", "team"}
    # Bob's worker never sees alice's scope: it did not name it.
    message = b["memory_search"].invoke(
        {"type": "tool_call", "id": "2", "name": "memory_search",
         "args": {"query": "window seat Lisbon offsite", "maxResults": 10}}
    )  # fmt: skip
    assert {row["scope"] for row in message.artifact["results"]} == {"team"}
    got = a["memory_get"].invoke(
        {"type": "tool_call", "id": "3", "name": "memory_get",
         "args": {"path": message.artifact["results"][0]["path"], "scope": "team"}}
    )  # fmt: skip
    assert "Lisbon" in got.artifact["text"]
    assert "name one of alice, team" in a["memory_append"].invoke({"text": "x"})


def test_retriever_reads_the_database_from_the_environment(
    database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    worker_tools(database_url, "alice")["memory_append"].invoke(
        {"text": "The deploy freeze starts Monday.", "scope": "team"}
    )
    monkeypatch.setenv("ENHANCED_MEMORY_DATABASE_URL", database_url)
    mine = write_workspace(tmp_path / "mine", {"MEMORY.md": "# Me\n\nMy deploy checklist.\n"})
    retriever = EnhancedMemoryRetriever(scopes={"me": mine, "team": None}, embedder="none")
    docs = retriever.invoke("deploy", k=10)
    assert {d.metadata["scope"] for d in docs} == {"me", "team"}


def test_serve_and_mcp_over_database_scopes(database_url: str) -> None:
    worker_tools(database_url, "alice")["memory_append"].invoke(
        {"text": "Rotate the API keys quarterly.", "scope": "team"}
    )
    db = ["--database", database_url, "--scope", "team", "--scope", "alice"]
    with serving(*db) as server:
        status, doc = server.search(query="API keys", scope="team")
        assert status == 200 and {row["scope"] for row in doc["results"]} == {"team"}
        status, doc = server.search(query="API keys", scope="bob")
        assert status == 400 and "scope 'bob' is not one of" in doc["error"]

    async def main() -> None:
        args = ["mcp", "--embedder", "none", "--allow-write", *db]
        async with stdio_session(args) as session:
            done = await session.call_tool(
                "memory_append", {"text": "Alice is on call.", "scope": "alice"}
            )
            assert not done.isError, done.content
            result = await session.call_tool("memory_search", {"query": "on call API keys"})
            rows = json.loads(result.content[0].text)["results"]
            assert {row["scope"] for row in rows} == {"alice", "team"}
            line = await error_of(session, "memory_get", path="MEMORY.md", scope="bob")
            assert "scope 'bob' is not one of" in line

    asyncio.run(main())
