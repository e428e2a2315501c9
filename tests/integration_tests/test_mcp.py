"""``enhanced-memory mcp`` as a real subprocess, driven by the MCP SDK's own clients.

Over stdio and over streamable HTTP on 127.0.0.1: list the tools, call each one,
check every answer against the JSON schemas (memory_search, memory_get) and
against what the command line prints; filters, malformed and unknown arguments
and refused paths (tool errors of one line each) and the write tool (off by
default, then on: the next search finds the new line).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from importlib import resources
from pathlib import Path
from typing import Any
from unittest.mock import ANY

import anyio
import httpx
import jsonschema
import pytest
from langchain_core.utils.function_calling import convert_to_openai_tool
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from langchain_enhanced_memory.tools import create_memory_tools
from tests.cli_run import CLI, cli_env, run_cli, stop
from tests.fake_ollama import FakeOllama, unused_port

NOW = "2026-02-09T10:00:00"
READ_TOOLS = {"memory_search", "memory_get", "memory_salience", "memory_crossref", "memory_status"}


def schema(name: str) -> dict[str, Any]:
    return json.loads(
        resources.files("langchain_enhanced_memory")
        .joinpath(f"openclaw/schema/{name}.schema.json")
        .read_text(encoding="utf-8")
    )


def validate(doc: Any, name: str, shape: str) -> None:
    full = schema(name)
    jsonschema.validate(doc, full, cls=jsonschema.Draft202012Validator)
    sub = {"$defs": full["$defs"], "$ref": f"#/$defs/{shape}"}
    jsonschema.validate(doc, sub, cls=jsonschema.Draft202012Validator)


def server_args(ws: Path, ollama: FakeOllama, *extra: str) -> list[str]:
    return [
        "mcp", "--workspace", str(ws), "--embedder", "ollama", "--ollama-url", ollama.url,
        "--now", NOW, *extra,
    ]  # fmt: skip


@asynccontextmanager
async def stdio_session(args: list[str]) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(command=CLI[0], args=[*CLI[1:], *args], env=cli_env())
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


async def call(session: ClientSession, name: str, **arguments: Any) -> dict[str, Any]:
    result = await session.call_tool(name, arguments)
    assert not result.isError, result.content
    return json.loads(result.content[0].text)


async def error_lines(session: ClientSession, name: str, **arguments: Any) -> list[str]:
    """A tool error's lines: one per problem, each "<tool>: ...", short, no URL."""
    result = await session.call_tool(name, arguments)
    assert result.isError, result.content
    lines = result.content[0].text.split("\n")
    for line in lines:
        assert line.startswith(f"{name}: ") and len(line) <= 300 and "http" not in line, line
    return lines


async def error_of(session: ClientSession, name: str, **arguments: Any) -> str:
    (line,) = await error_lines(session, name, **arguments)
    return line


async def exercise(session: ClientSession, ws: Path, ollama_url: str) -> None:
    """Every read tool, checked against the schemas and the CLI."""
    tools = {t.name: t for t in (await session.list_tools()).tools}
    assert set(tools) == READ_TOOLS  # no write tool unless --allow-write
    assert all(t.annotations and t.annotations.readOnlyHint for t in tools.values())
    props = tools["memory_search"].inputSchema["properties"]
    assert {"query", "maxResults", "minScore", "corpus", "since", "until", "path", "kind"} <= set(
        props
    )
    assert "from" in tools["memory_get"].inputSchema["properties"]

    doc = await call(session, "memory_search", query="billing database Postgres", maxResults=3)
    validate(doc, "memory_search", "success")
    assert doc["results"][0]["path"] == "memory/2026-02-08.md" and len(doc["results"]) <= 3
    assert doc["mode"] == "hybrid" and "vectorScore" in doc["results"][0]
    assert doc["results"][0]["citation"].startswith("Source: memory/2026-02-08.md#L")
    # The same JSON the CLI prints (timings aside).
    cli = run_cli(
        "search", "--json", "--workspace", str(ws), "--embedder", "ollama", "--ollama-url",
        ollama_url, "--now", NOW, "--max-results", "3", "billing database Postgres",
    )  # fmt: skip
    assert cli.returncode == 0, cli.stderr
    printed = json.loads(cli.stdout)
    assert [r["path"] for r in printed["results"]] == [r["path"] for r in doc["results"]]
    assert [r["score"] for r in printed["results"]] == [r["score"] for r in doc["results"]]

    # Filters: a period, a path, a kind; an empty one says why; a malformed one is an error.
    doc = await call(session, "memory_search", query="Postgres", since="2026-02-08")
    validate(doc, "memory_search", "success")
    assert {r["path"] for r in doc["results"]} == {"memory/2026-02-08.md"}
    doc = await call(session, "memory_search", query="latency", path="memory/topics/**")
    assert doc["results"] and {r["path"] for r in doc["results"]} == {
        "memory/topics/project-alpha.md"
    }
    doc = await call(session, "memory_search", query="coffee", kind=["core"])
    assert {r["path"] for r in doc["results"]} == {"MEMORY.md"}
    # A date word in the query ("yesterday" = Feb 8) and a filter that ends before it.
    doc = await call(
        session, "memory_search", query="Postgres plans yesterday?", until="2026-02-07"
    )
    validate(doc, "memory_search", "success")
    assert doc["results"] and {r["path"] for r in doc["results"]} == {"memory/2026-02-07.md"}
    doc = await call(session, "memory_search", query="Postgres", since="2030-01-01")
    validate(doc, "memory_search", "success")
    assert doc["results"] == [] and "no memory chunk matches the filter" in doc["warning"]
    assert "not an ISO date" in await error_of(
        session, "memory_search", query="Postgres", since="someday soon"
    )
    assert "must be memory, sessions or all" in await error_of(
        session, "memory_search", query="Postgres", corpus="chats"
    )

    got = await call(session, "memory_get", path="memory/2026-02-08.md", **{"from": 3}, lines=2)
    validate(got, "memory_get", "lines")
    assert got["from"] == 3 and got["lines"] == 2 and got["text"].startswith("## Decisions")
    assert got["truncated"] is False
    assert "no such memory file: memory/2020-01-01.md" in await error_of(
        session, "memory_get", path="memory/2020-01-01.md"
    )
    assert "leaves the workspace" in await error_of(
        session, "memory_get", path="../../etc/passwd.md"
    )

    sal = await call(session, "memory_salience", top=2)
    assert len(sal["items"]) <= 2 and {"path", "salience"} <= set(sal["items"][0])
    status = await call(session, "memory_status")
    assert status["files"] == 4 and status["provider"] == "ollama" and status["write"] is False
    assert status["stale"] is False and status["vectors"] == status["chunks"]
    overview = await call(session, "memory_crossref")
    assert overview["files"] >= 1
    shown = await call(session, "memory_crossref", path="memory/2026-02-08.md")
    assert shown["path"] == "memory/2026-02-08.md" and "linked_files" in shown
    one = await call(session, "memory_crossref", path="memory/2026-02-08.md", startLine=3)
    assert all(int(c["chunk"].rsplit(":", 1)[1]) <= 3 <= c["endLine"] for c in one["outgoing"])

    # A session transcript the agent writes: searched by corpus, read as turns.
    turn = {"role": "user", "content": "the failover drill", "timestamp": "2026-02-08T10:00Z"}
    (ws / "sessions").mkdir()
    (ws / "sessions" / "s1.jsonl").write_text(json.dumps(turn) + "\n", encoding="utf-8")
    doc = await call(session, "memory_search", query="failover drill", corpus="sessions")
    validate(doc, "memory_search", "success")
    assert [(r["path"], r["source"]) for r in doc["results"]] == [("sessions/s1.jsonl", "sessions")]
    doc = await call(session, "memory_search", query="failover drill", corpus="memory")
    assert all(r["source"] == "memory" for r in doc["results"])
    got = await call(session, "memory_get", path="sessions/s1.jsonl")
    assert got["text"] == "user: the failover drill"


@pytest.fixture
def ws(workspace: Path) -> Path:
    return workspace


@pytest.mark.timeout(240)
def test_stdio_server_answers_every_tool(ws: Path, fake_ollama: FakeOllama) -> None:
    async def main() -> None:
        async with stdio_session(server_args(ws, fake_ollama)) as session:
            await exercise(session, ws, fake_ollama.url)

    anyio.run(main)


@pytest.mark.timeout(240)
def test_stdio_write_tool_only_when_enabled(ws: Path, fake_ollama: FakeOllama) -> None:
    async def main() -> None:
        async with stdio_session(server_args(ws, fake_ollama, "--allow-write")) as session:
            tools = {t.name: t for t in (await session.list_tools()).tools}
            assert set(tools) == READ_TOOLS | {"memory_append", "memory_forget"}
            assert tools["memory_append"].annotations.readOnlyHint is False
            assert tools["memory_forget"].annotations.destructiveHint is True
            done = await call(
                session, "memory_append", text="The kayak trip is on the 21st.", section="Plans"
            )
            assert done["path"] == "memory/2026-02-09.md" and done["created"] is True
            doc = await call(session, "memory_search", query="kayak trip")
            validate(doc, "memory_search", "success")
            top = doc["results"][0]
            assert top["path"] == "memory/2026-02-09.md"
            assert top["startLine"] <= done["line"] <= top["endLine"]
            assert "leaves the workspace" in await error_of(
                session, "memory_append", text="x", file="memory/../../escape.md"
            )
            status = await call(session, "memory_status")
            assert status["write"] is True
            # The same day again: appended under the existing section, not created.
            again = await call(
                session, "memory_append", text="Bring the dry bags.", section="Plans"
            )
            assert again["created"] is False and again["line"] == done["line"] + 1
            # A second writer (another process) at the same time as this one.
            other = subprocess.Popen(
                [*CLI, "remember", "--workspace", str(ws), "--now", NOW, "--section", "Plans",
                 "Written by the other process."],
                env=cli_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            )  # fmt: skip
            await call(session, "memory_append", text="Written over MCP.", section="Plans")
            assert other.wait(timeout=120) == 0
            # A read-only workspace: a one-line tool error, nothing written.
            (ws / "memory").chmod(0o555)
            try:
                assert "read-only" in await error_of(session, "memory_append", text="nope")
            finally:
                (ws / "memory").chmod(0o755)

    anyio.run(main)
    text = (ws / "memory/2026-02-09.md").read_text(encoding="utf-8")
    assert text.startswith(
        "# 2026-02-09\n\n## Plans\n\n- The kayak trip is on the 21st.\n- Bring the dry bags.\n"
    )
    assert sorted(text.splitlines()[6:]) == [
        "- Written by the other process.",
        "- Written over MCP.",
    ]
    assert "nope" not in text


@pytest.mark.timeout(240)
def test_refusals_are_tool_errors_of_one_line_each(ws: Path) -> None:
    """Bad, unknown or oversized arguments and refused paths: isError, one line per problem."""
    args = ["mcp", "--workspace", str(ws), "--embedder", "none", "--now", NOW, "--allow-write"]

    async def main() -> None:
        async with stdio_session(args) as session:
            tools = (await session.list_tools()).tools
            assert all(t.inputSchema["additionalProperties"] is False for t in tools)
            needed = {"memory_search": {"query": "x"}, "memory_get": {"path": "MEMORY.md"},
                      "memory_append": {"text": "Never written."}}  # fmt: skip
            for tool in tools:  # an unknown argument is refused, not ignored (as in serve)
                assert (
                    await error_of(session, tool.name, **needed.get(tool.name, {}), maxResult=3)
                    == f"{tool.name}: maxResult: is not a known field"
                )
            assert await error_of(session, "memory_search", query="x", maxResults=500) == (
                "memory_search: maxResults: must be at most 100, got 500"
            )
            assert await error_of(session, "memory_search") == "memory_search: query: is required"
            assert await error_lines(
                session, "memory_search", query="x", maxResults="lots", minScore=3
            ) == [
                "memory_search: maxResults: must be an integer, got 'lots'",
                "memory_search: minScore: must be at most 1, got 3",
            ]
            huge = "q" * 1_000_000  # refused in the words of serve, quoting only its length
            assert await error_of(session, "memory_search", query=huge) == (
                "memory_search: query: must be at most 131072 characters, got 1000000"
            )
            assert "must be core, daily or topic, got 'journal'" in await error_of(
                session, "memory_search", query="Postgres", kind="journal"
            )
            # One kind as a string, as the README says, or a list.
            one = await call(session, "memory_search", query="Postgres", kind="daily")
            assert one["results"] and {r["path"] for r in one["results"]} <= {
                "memory/2026-02-07.md", "memory/2026-02-08.md"
            }  # fmt: skip
            assert await call(session, "memory_search", query="Postgres", kind=["daily"]) == {
                **one,
                "debug": ANY,
            }
            # memory_get refusals are tool errors too, not answers with isError=false.
            assert await error_of(session, "memory_get", path="memory/2026-02-08.md", **{
                "from": 0
            }) == "memory_get: from: must be at least 1, got 0"  # fmt: skip
            assert "not a markdown memory file" in await error_of(
                session, "memory_get", path="notes.txt"
            )
            assert "cannot be read" in await error_of(
                session, "memory_get", path="memory/" + "p" * 100_000 + ".md"
            )
            assert "must be memory, sessions or all" in await error_of(
                session, "memory_get", path="MEMORY.md", corpus="chats"
            )
            await error_of(session, "memory_crossref", path="../x.md")  # no vectors: one line

    anyio.run(main)
    assert not (ws / "memory/2026-02-09.md").exists()  # the refused append wrote nothing


def wait_for_http(url: str, proc: subprocess.Popen[str], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(proc.stderr.read() if proc.stderr else "server exited")
        try:
            httpx.get(url, timeout=1)
            return
        except httpx.HTTPError:
            time.sleep(0.2)
    raise AssertionError("MCP HTTP server did not start")


def with_http_server(ws: Path, ollama: FakeOllama, body: Callable[[str], Any]) -> None:
    port = unused_port()
    proc = subprocess.Popen(
        [*CLI, *server_args(ws, ollama, "--http", "--port", str(port))],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=cli_env(),
    )  # fmt: skip
    try:
        url = f"http://127.0.0.1:{port}/mcp"
        wait_for_http(url, proc)
        anyio.run(body, url)
    finally:
        stop(proc, timeout=20)
    assert proc.returncode is not None


@pytest.mark.timeout(240)
def test_streamable_http_on_loopback(ws: Path, fake_ollama: FakeOllama) -> None:
    async def main(url: str) -> None:
        async with (
            streamable_http_client(url) as (read, write, _),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            await exercise(session, ws, fake_ollama.url)

    with_http_server(ws, fake_ollama, main)


def test_bad_port_is_one_line_exit_2(ws: Path) -> None:
    r = run_cli("mcp", "--workspace", str(ws), "--embedder", "none", "--http", "--port", "0")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "--port" in r.stderr


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"},
    },
}


@pytest.mark.timeout(120)
def test_http_refuses_foreign_origins_and_unreadable_bodies_in_one_line(ws: Path) -> None:
    port = unused_port()
    proc = subprocess.Popen(
        [*CLI, "mcp", "--workspace", str(ws), "--embedder", "none", "--http",
         "--port", str(port), "--allow-host", "mybox.lan"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=cli_env(),
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}/mcp"
    accept = {"Accept": "application/json, text/event-stream"}

    def post(body: bytes, **headers: str) -> httpx.Response:
        headers = {"Content-Type": "application/json", **accept, **headers}
        return httpx.post(url, content=body, headers=headers, timeout=30)

    def refused(response: httpx.Response, status: int) -> str:
        assert response.status_code == status, response.text
        assert "\n" not in response.text.strip()
        doc = response.json()
        assert doc["jsonrpc"] == "2.0" and doc["id"] is None
        return str(doc["error"]["message"])

    hello = json.dumps(INITIALIZE).encode()
    try:
        wait_for_http(url, proc)
        # 60 KB of brackets: the SDK answered 500 and printed a 60-line traceback.
        nested = post(b"[" * 30_000 + b"]" * 30_000)
        assert refused(nested, 400) == "body is JSON nested too deeply"
        assert nested.json()["error"]["code"] == -32700
        # A page on another port of localhost is another origin (the SDK took localhost:*).
        message = refused(post(hello, Origin="http://localhost:3000"), 403)
        assert message.startswith("Invalid Origin header: 'http://localhost:3000'")
        origins = [f"http://{n}:{port}" for n in ("127.0.0.1", "[::1]", "localhost", "mybox.lan")]
        assert f"answers the origins {', '.join(origins)} only" in message
        assert refused(post(hello, Host="attacker.example:80"), 421).startswith(
            "Invalid Host header"
        )
        assert refused(post(b" " * (4 * 1024 * 1024 + 1)), 413).startswith("request body over")
        # The server's own origins, and a name it was told of, are answered: still serving.
        for host, origin in [
            (f"127.0.0.1:{port}", f"http://localhost:{port}"),
            (f"mybox.lan:{port}", f"http://mybox.lan:{port}"),
            (f"127.0.0.1:{port}", None),
        ]:
            extra = {"Host": host} | ({"Origin": origin} if origin else {})
            answer = post(hello, **extra)
            assert answer.status_code == 200, (host, origin, answer.text)
            assert '"serverInfo"' in answer.text

        async def session_opened_and_closed() -> None:
            # Its close ended the SDK's event stream with a traceback on stderr.
            async with (
                streamable_http_client(url) as (read, write, _),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                assert "memory_search" in {t.name for t in (await session.list_tools()).tools}

        anyio.run(session_opened_and_closed)
        time.sleep(1)  # the server notices the closed stream
    finally:
        stop(proc, timeout=20)
    stderr = proc.stderr.read() if proc.stderr else ""
    assert "Traceback" not in stderr and "ERROR" not in stderr, stderr


def test_langchain_and_mcp_tools_have_one_set_of_names_and_schemas(ws: Path) -> None:
    # A model's prompt written for one face must work on the other: the same tools, and
    # each tool's arguments the same JSON schema (OpenClaw's names), as each face shows it.
    chain = {t.name: t for t in create_memory_tools(ws, embedder="none", allow_write=True)}

    async def main() -> dict[str, dict[str, Any]]:
        args = ["mcp", "--workspace", str(ws), "--embedder", "none", "--allow-write"]
        async with stdio_session(args) as session:
            return {t.name: t.inputSchema for t in (await session.list_tools()).tools}

    mcp = anyio.run(main)
    # Both faces have every tool: losing one on either side (memory_status) fails here.
    assert set(chain) == set(mcp) == {
        "memory_search", "memory_get", "memory_salience", "memory_crossref", "memory_append",
        "memory_forget", "memory_status",
    }  # fmt: skip
    for name, tool in chain.items():
        assert tool.tool_call_schema.model_json_schema() == mcp[name], name
        # What a chat model is given (OpenAI's tool format) names the same arguments.
        shown = convert_to_openai_tool(tool)["function"]["parameters"]
        assert shown["properties"].keys() == mcp[name]["properties"].keys(), name
        assert shown.get("required", []) == mcp[name].get("required", []), name
    search = mcp["memory_search"]["properties"]
    assert {"query", "maxResults", "minScore", "corpus", "since", "until", "path", "kind"} == set(
        search
    )
    assert set(mcp["memory_get"]["properties"]) == {"path", "from", "lines", "corpus"}
    assert set(mcp["memory_crossref"]["properties"]) == {"path", "startLine"}
    assert set(mcp["memory_forget"]["properties"]) == {"path", "line", "match", "dryRun", "all"}
    assert all(schema["additionalProperties"] is False for schema in mcp.values())


def test_a_new_agents_empty_folder_takes_its_first_note(tmp_path: Path) -> None:
    folder = tmp_path / "new-agent"
    folder.mkdir()
    args = ["mcp", "--workspace", str(folder), "--embedder", "none", "--now", NOW]

    async def main() -> None:
        async with stdio_session([*args, "--allow-write"]) as session:
            line = await error_of(session, "memory_search", query="who am I")
            assert line.startswith(f"memory_search: no memory in {folder} (no MEMORY.md")
            await call(session, "memory_append", text="I am Ada, a new agent.")
            doc = await call(session, "memory_search", query="who am I Ada")
            assert doc["results"][0]["path"] == "memory/2026-02-09.md"

    anyio.run(main)
    shutil.rmtree(folder / "memory")
    r = run_cli(*args)  # without --allow-write, a folder without memory is the wrong one
    assert r.returncode == 2 and "no memory in" in r.stderr and r.stderr.count("\n") == 1
