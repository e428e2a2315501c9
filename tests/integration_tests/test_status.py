"""``enhanced-memory status``, ``--version`` and ``memory_status`` on every face.

``status`` says per corpus (notes, session transcripts) what is indexed, the
share embedded and the files changed since; the embedder, the index's size and
generation, the resident engine's pid and, with ``--database``, each scope's
generation. It only reads: the index is byte for byte the same after it, a
folder without one gets none, and no resident engine is started. The MCP
server's ``serverInfo.version`` and the command's ``--version`` are the
package's.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
from importlib.metadata import version
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from langchain_enhanced_memory.store.index import MemoryIndex
from langchain_enhanced_memory.tools import create_memory_tools
from tests.cli_run import CLI, cli_env, run_cli
from tests.fake_ollama import FakeOllama
from tests.unit_tests.test_snapshots import index_state
from tests.workspaces import SMALL_WORKSPACE, write_workspace

PACKAGE_VERSION = version("langchain-enhanced-memory")
TURN = {"role": "user", "content": "meet at the lighthouse", "timestamp": "2026-02-09T10:00Z"}


def ok(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    r = run_cli(*args, **env)
    assert r.returncode == 0, r.stderr
    return r


def status_json(ws: Path, *args: str) -> dict[str, Any]:
    return json.loads(ok("status", "--workspace", str(ws), "--json", *args).stdout)


def unwritten(state: tuple[dict[str, tuple[int, int]], int]) -> Any:
    """An index's files and data, less the empty WAL file SQLite opens for any reader."""
    files, data = state
    wal = files.pop("index.sqlite-wal", (0, 0))
    assert wal[0] == 0, "a reader never writes the WAL"
    return files, data


def notes_and_a_transcript(root: Path) -> Path:
    ws = write_workspace(root, SMALL_WORKSPACE)
    (ws / "sessions").mkdir()
    (ws / "sessions" / "s1.jsonl").write_text(json.dumps(TURN) + "\n", encoding="utf-8")
    return ws


def test_version_is_the_package_version() -> None:
    r = ok("--version")
    assert r.stdout == f"enhanced-memory {PACKAGE_VERSION}\n"


def test_a_folder_without_an_index_is_said_so_and_left_as_it_is(tmp_path: Path) -> None:
    ws = write_workspace(tmp_path / "ws", SMALL_WORKSPACE)
    r = ok("status", "--workspace", str(ws), "--embedder", "none")
    assert "no index yet: run `enhanced-memory index`" in r.stdout
    assert "resident engine: none" in r.stdout
    got = status_json(ws, "--embedder", "none")
    assert got["indexed"] is False and got["stale"] is True and got["chunks"] == 0
    assert sorted(p.name for p in ws.iterdir()) == ["MEMORY.md", "memory"]  # nothing written


def test_per_corpus_counts_share_embedded_and_stale_files_read_only(
    tmp_path: Path, fake_ollama: FakeOllama
) -> None:
    ws = notes_and_a_transcript(tmp_path / "ws")
    ollama = ("--embedder", "ollama", "--ollama-url", fake_ollama.url)
    ok("index", "--workspace", str(ws), *ollama)
    got = status_json(ws, *ollama)
    memory, sessions = got["corpora"]["memory"], got["corpora"]["sessions"]
    assert (memory["files"], memory["embedded"], memory["stale"]) == (4, 1.0, 0)
    assert (sessions["files"], sessions["chunks"], sessions["embedded"]) == (1, 1, 1.0)
    assert got["chunks"] == memory["chunks"] + 1 == got["vectors"]
    assert (got["provider"], got["model"], got["generation"]) == ("ollama", "nomic-embed-text", 1)
    assert got["indexed_at"] and got["disk_bytes"] > 0 and got["resident_pid"] is None
    assert got["index"] == str(ws / ".enhanced-memory" / "index.sqlite")

    # New text indexed without vectors: a share below 1. Then edits not indexed: stale.
    write_workspace(ws, {"memory/2026-02-10.md": "# 2026-02-10\n\nKestrel migration notes.\n"})
    ok("index", "--workspace", str(ws), "--embedder", "none")
    (ws / "MEMORY.md").write_text("# Preferences\n\nTea now.\n", encoding="utf-8")
    with (ws / "sessions" / "s1.jsonl").open("a", encoding="utf-8") as fh:
        fh.write(json.dumps({**TURN, "content": "bring the kayak"}) + "\n")
    before = index_state(MemoryIndex(ws))
    got = status_json(ws, *ollama)
    assert unwritten(index_state(MemoryIndex(ws))) == unwritten(before)
    memory, sessions = got["corpora"]["memory"], got["corpora"]["sessions"]
    assert 0 < memory["embedded"] < 1 and memory["stale"] == 1 and memory["files"] == 5
    assert sessions["embedded"] == 1.0 and sessions["stale"] == 1 and got["stale"] is True
    text = ok("status", "--workspace", str(ws), *ollama).stdout
    assert "memory: 5 files," in text and "% embedded, 1 stale files" in text
    assert "sessions: 1 files, 1 chunks, 100% embedded, 1 stale files" in text


def test_an_index_of_another_schema_is_reported_not_set_aside(tmp_path: Path) -> None:
    ws = write_workspace(tmp_path / "ws", SMALL_WORKSPACE)
    index = ws / ".enhanced-memory" / "index.sqlite"
    index.parent.mkdir()
    with sqlite3.connect(index) as conn:
        conn.execute("PRAGMA user_version = 3")
    data = index.read_bytes()
    got = status_json(ws, "--embedder", "none")
    assert got["indexed"] is False and "schema 3, not 7" in got["problem"]
    assert sorted(p.name for p in index.parent.iterdir()) == ["index.sqlite"]
    assert index.read_bytes() == data


def test_the_resident_engine_serving_the_workspace_is_named(tmp_path: Path) -> None:
    ws = write_workspace(tmp_path / "ws", SMALL_WORKSPACE)
    ok("index", "--workspace", str(ws), "--embedder", "none")
    started = json.loads(ok("daemon", "start", "--workspace", str(ws), "--json").stdout)
    try:
        assert status_json(ws, "--embedder", "none")["resident_pid"] == started["pid"]
        text = ok("status", "--workspace", str(ws), "--embedder", "none").stdout
        assert f"resident engine: pid {started['pid']}\n" in text
    finally:
        ok("daemon", "stop", "--workspace", str(ws))
    assert status_json(ws, "--embedder", "none")["resident_pid"] is None


def test_database_scopes_and_their_generations(database_url: str, tmp_path: Path) -> None:
    ws = write_workspace(tmp_path / "ws", SMALL_WORKSPACE)
    db = ("--database", database_url)
    ok("remember", "Chose pgvector.", *db, "--scope", "status-team", "--embedder", "none")
    ok("remember", "And kept BM25.", *db, "--scope", "status-team", "--embedder", "none")
    got = status_json(ws, "--embedder", "none", *db, "--scope", "status-team")
    assert [(s["name"], s["backing"], s["generation"]) for s in got["scopes"]] == [
        ("status-team", "database", 2)
    ]
    assert got["scopes"][0]["chunks"] >= 1
    text = ok("status", "--workspace", str(ws), "--embedder", "none", *db).stdout
    assert "scope status-team: generation 2," in text
    r = run_cli("status", "--workspace", str(ws), "--scope", "x", ENHANCED_MEMORY_DATABASE_URL="")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "--database" in r.stderr


def test_the_langchain_tool_answers_the_same_status(tmp_path: Path) -> None:
    ws = notes_and_a_transcript(tmp_path / "ws")
    ok("index", "--workspace", str(ws), "--embedder", "none")
    tools = {t.name: t for t in create_memory_tools(ws, embedder="none")}
    message = tools["memory_status"].invoke(
        {"name": "memory_status", "args": {}, "id": "1", "type": "tool_call"}
    )
    cli = status_json(ws, "--embedder", "none")
    assert message.artifact == cli
    assert "memory: 4 files" in message.content and "sessions: 1 files" in message.content


def test_mcp_reports_the_package_version_and_the_same_status(tmp_path: Path) -> None:
    ws = notes_and_a_transcript(tmp_path / "ws")
    ok("index", "--workspace", str(ws), "--embedder", "none")
    args = ["mcp", "--workspace", str(ws), "--embedder", "none"]
    params = StdioServerParameters(command=CLI[0], args=[*CLI[1:], *args], env=cli_env())

    async def session() -> tuple[Any, dict[str, Any]]:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
            init = await s.initialize()
            result = await s.call_tool("memory_status", {})
            return init.serverInfo, json.loads(result.content[0].text)

    info, got = anyio.run(session)
    assert (info.name, info.version) == ("enhanced-memory", PACKAGE_VERSION)
    assert got == status_json(ws, "--embedder", "none") | {"write": False}


def test_a_named_file_that_is_not_an_index_is_refused_as_search_refuses_it(
    tmp_path: Path,
) -> None:
    ws = write_workspace(tmp_path / "ws", SMALL_WORKSPACE)
    notes = tmp_path / "notes.yaml"
    notes.write_text("password_file: /etc/secret\n", encoding="utf-8")
    data = notes.read_bytes()
    for command in ("status", "search"):
        args = ("--workspace", str(ws), "--index", str(notes), "--embedder", "none")
        r = run_cli(command, *(["ramen"] if command == "search" else []), *args)
        assert (r.returncode, r.stdout, r.stderr.count("\n")) == (2, "", 1), r.stderr
        assert f"{notes} is not an enhanced-memory index: refused" in r.stderr
    assert notes.read_bytes() == data and sorted(p.name for p in tmp_path.iterdir()) == [
        "notes.yaml",
        "ws",
    ]
    tool = create_memory_tools(ws, embedder="none", index_path=notes)[-1]
    message = tool.invoke({"name": "memory_status", "args": {}, "id": "1", "type": "tool_call"})
    assert tool.name == "memory_status" and message.content.startswith("Error: ")
    assert f"{notes} is not an enhanced-memory index: refused" in message.content
    assert set(message.artifact) == {"error", "action"} and notes.read_bytes() == data


def test_the_tool_text_escapes_control_characters(tmp_path: Path) -> None:
    ws = write_workspace(tmp_path / "ws\x1b]0;pwned\x07", SMALL_WORKSPACE)
    tool = create_memory_tools(ws, embedder="none")[-1]
    message = tool.invoke({"name": "memory_status", "args": {}, "id": "1", "type": "tool_call"})
    assert "\\x1b]0;pwned\\x07" in message.content and "\x1b" not in message.content
    assert message.content.count("\n") >= 2  # its lines kept
    assert message.artifact["workspace"] == str(ws)
