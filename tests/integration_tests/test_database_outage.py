"""PostgreSQL down under the tools, the retriever and ``serve`` (issue 36, items 2, 3 and 12).

A scope the process has read before is answered from that generation, marked
stale (``stale``/``staleScopes`` in the JSON, ``metadata["stale"]`` in
Documents); anything else is the tool's error JSON (what failed, what to do),
the retriever's one documented ``DatabaseError``, or ``serve``'s 503. Never an
exception out of a tool, and the pool's reconnect warnings stay out of stderr.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from psycopg import sql

from langchain_enhanced_memory import EnhancedMemoryRetriever
from langchain_enhanced_memory.config import load
from langchain_enhanced_memory.core.errors import DatabaseError
from langchain_enhanced_memory.engine.database import DatabaseSearch
from langchain_enhanced_memory.store.database import Database
from langchain_enhanced_memory.tools import MemorySearchTool, create_memory_tools
from tests.cli_run import cli_env, run_cli
from tests.integration_tests.test_database_security import _role
from tests.integration_tests.test_database_serve_faults import found, serving_scope
from tests.postgres import PgServer
from tests.reliability.db_driver import DAY


def _call(tool: Any, args: dict[str, Any]) -> ToolMessage:
    return tool.invoke({"name": tool.name, "args": args, "id": "1", "type": "tool_call"})


def _team(pg: PgServer, name: str) -> str:
    """A database whose scope ``team`` holds one keyword-only note: its URL.

    Its scope ``birds`` holds one too, and is never searched before a test does.
    """
    url = pg.create_database(name)
    with Database.connect(url) as db:
        db.append("team", "kestrel seen at the lake", now=DAY)
        db.append("birds", "kestrel over the birds' field", now=DAY)
    return url


def _no_secret(pg: PgServer, *texts: str) -> None:
    for text in texts:
        assert pg.password not in text


def test_the_tools_answer_stale_or_an_error_while_the_database_is_down(
    pg_private: PgServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    url = _team(pg_private, "tools")
    tools = {
        t.name: t
        for t in create_memory_tools(
            scopes=["team"], database_url=url, embedder="none", allow_write=True
        )
    }
    fresh = _call(tools["memory_search"], {"query": "kestrel"})
    assert "stale" not in fresh.artifact and "Database unreachable" not in fresh.content
    assert [r["scope"] for r in fresh.artifact["results"]] == ["team"]
    # A tool built before the outage of a scope not read on this host yet (no copies of it).
    unread = MemorySearchTool(scopes=["birds"], database_url=url, embedder="none")
    pg_private.stop()

    stale = _call(tools["memory_search"], {"query": "kestrel"})
    assert stale.artifact["stale"] is True and stale.artifact["staleScopes"] == ["team"]
    assert [r["scope"] for r in stale.artifact["results"]] == ["team"]
    assert stale.content.startswith("(Database unreachable: scope team answered from an older")
    assert "kestrel seen at the lake" in stale.content

    failed = {
        "memory_search": _call(unread, {"query": "kestrel"}),
        "memory_append": _call(tools["memory_append"], {"text": "written while down"}),
        "memory_get": _call(tools["memory_get"], {"path": "memory/2026-12-09.md"}),
    }
    for name, msg in failed.items():
        assert msg.content.startswith("Error: database postgresql://"), (name, msg.content)
        assert "\n" not in msg.content and "***" in msg.content
        assert msg.content.endswith("; check --database and that the server runs"), msg.content
        assert msg.artifact["error"] in msg.content
        assert msg.artifact["action"] == "check --database and that the server runs"
        _no_secret(pg_private, msg.content, json.dumps(msg.artifact))
    assert failed["memory_search"].artifact["unavailable"] is True  # OpenClaw's failure shape
    assert failed["memory_search"].artifact["results"] == []
    assert failed["memory_get"].artifact["text"] == ""
    # psycopg_pool's reconnect warnings (two lines each) are not passed on.
    assert "error connecting in" not in caplog.text

    pg_private.start()
    back = _call(tools["memory_search"], {"query": "kestrel"})
    assert "stale" not in back.artifact and back.artifact["results"]
    wrote = _call(tools["memory_append"], {"text": "written once it was back"})
    assert wrote.content.startswith("Remembered in"), wrote.content


class _AppendThenAnswer(GenericFakeChatModel):
    """Calls ``memory_append`` once, then answers with what the tool said."""

    messages: Any = iter(())

    def bind_tools(self, tools: Any, **kwargs: Any) -> _AppendThenAnswer:
        return self

    def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any):
        said = [m for m in messages if isinstance(m, ToolMessage)]
        if not said:
            call = {"name": "memory_append", "args": {"text": "the heron is back"}, "id": "a1"}
            msg = AIMessage("", tool_calls=[call])
        else:
            msg = AIMessage(f"I could not remember that: {said[0].content}")
        return ChatResult(generations=[ChatGeneration(message=msg)])


def test_an_agent_whose_role_may_only_read_is_told_not_crashed(
    pg_server: PgServer, database_url: str
) -> None:
    with Database.connect(database_url) as db:
        db.append("team", "kestrel seen at the lake", now=DAY)
    reader = _role(pg_server, database_url, "agent")
    tools = create_memory_tools(
        scopes=["team"], database_url=reader, embedder="none", allow_write=True
    )
    agent = create_agent(_AppendThenAnswer(), tools)
    out = agent.invoke({"messages": [("user", "remember that the heron is back")]})
    told = out["messages"][-1].content
    assert told.startswith("I could not remember that: Error: database postgresql://")
    assert "permission denied" in told and "may not" in told
    tool_msg = next(m for m in out["messages"] if isinstance(m, ToolMessage))
    assert tool_msg.artifact["action"].startswith("this database role may not")
    _no_secret(pg_server, json.dumps(tool_msg.artifact))


def test_the_retriever_answers_stale_or_raises_one_database_error(pg_private: PgServer) -> None:
    url = _team(pg_private, "retriever")
    retriever = EnhancedMemoryRetriever(scopes=["team"], database_url=url, embedder="none")
    (doc,) = retriever.invoke("kestrel")
    assert doc.metadata["scope"] == "team" and "stale" not in doc.metadata
    unread = EnhancedMemoryRetriever(scopes=["birds"], database_url=url, embedder="none")
    assert unread.engine  # connected, nothing read yet
    pg_private.stop()

    (doc,) = retriever.invoke("kestrel")
    assert doc.metadata["stale"] is True and doc.page_content.endswith("kestrel seen at the lake")
    with pytest.raises(DatabaseError) as down:
        unread.invoke("kestrel")
    assert "\n" not in str(down.value) and "***" in str(down.value)
    _no_secret(pg_private, str(down.value))
    with pytest.raises(DatabaseError):  # the same type when nothing connected yet
        EnhancedMemoryRetriever(scopes=["birds"], database_url=url, embedder="none").invoke("x")

    pg_private.start()
    (doc,) = retriever.invoke("kestrel")
    assert "stale" not in doc.metadata


def test_serve_says_the_database_is_down_in_health_and_answers_stale(
    pg_private: PgServer, tmp_path: Path
) -> None:
    url = _team(pg_private, "served")
    with serving_scope(url, tmp_path) as server:
        assert server.request("GET", "/health") == (
            200,
            {"status": "ok", "scopes": ["team"], "database": "ok"},
        )
        assert found(server) == ["team"]
        pg_private.stop()
        status, health = server.request("GET", "/health")
        assert status == 503, health
        assert health["status"] == "unavailable" and health["database"] == "unreachable"
        assert "\n" not in health["error"] and "***" in health["error"]
        status, doc = server.search(query="kestrel")
        assert status == 200 and doc["stale"] is True and doc["staleScopes"] == ["team"]
        assert [row["scope"] for row in doc["results"]] == ["team"]
        for _ in range(4):  # a burst of requests while it is down
            assert server.search(query="kestrel")[1]["stale"] is True
        _no_secret(pg_private, json.dumps(health), json.dumps(doc))
        pg_private.start()
        assert server.request("GET", "/health")[1]["database"] == "ok"
        status, doc = server.search(query="kestrel")
        assert status == 200 and "stale" not in doc
    # One line per request that met the outage (a health check, five stale searches),
    # none of psycopg_pool's own.
    lines = server.stderr.strip().splitlines()
    serving = "enhanced-memory: serving scopes team on http://127.0.0.1:"
    outage = lines[[line.startswith(serving) for line in lines].index(True) + 1 :]
    assert len(outage) == 6, server.stderr
    assert outage[0].startswith("serve: health: database postgresql://em_test:***@")
    for line in outage[1:]:
        assert line.startswith("scope team answered from generation 1 held here"), line
        assert "reading scope team: cannot connect: connection failed:" in line
    _no_secret(pg_private, server.stderr)


@pytest.mark.slow
def test_after_a_long_outage_serve_is_back_at_the_first_request(
    pg_private: PgServer, tmp_path: Path
) -> None:
    """psycopg_pool retries with a doubling backoff: after 40 s down its next try can be 20 s
    after the server is back. The first request after it must not wait for that."""
    url = _team(pg_private, "long")
    with serving_scope(url, tmp_path) as server:
        assert found(server) == ["team"]
        pg_private.stop()
        down_since = time.monotonic()
        while time.monotonic() - down_since < 40:  # a load balancer's checks meanwhile
            assert server.request("GET", "/health")[0] == 503
            time.sleep(1)
        pg_private.start()
        assert server.request("GET", "/health") == (
            200,
            {"status": "ok", "scopes": ["team"], "database": "ok"},
        )
        status, doc = server.search(query="kestrel")
        assert status == 200 and "stale" not in doc and doc["results"]


def test_the_pool_warnings_come_back_when_debugging(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the pools of this package log is dropped, not another pool's, and not when debugging."""
    pool_log = logging.getLogger("psycopg.pool")

    def passes(pool: str, thread: str) -> bool:
        record = pool_log.makeRecord(
            pool_log.name, logging.WARNING, "pool.py", 680, "error connecting in %r: %s",
            (pool, "connection refused"), None,
        )  # fmt: skip
        record.threadName = thread
        return bool(pool_log.filter(record))

    with Database.connect(database_url):
        assert not passes("enhanced-memory", "enhanced-memory-worker-0")
        assert passes("orders", "orders-worker-0")  # the application's own pool
        monkeypatch.setenv("ENHANCED_MEMORY_DEBUG", "1")
        load()  # as an entry point does
        assert passes("enhanced-memory", "enhanced-memory-worker-0")


_FRESH_RETRIEVER = """
import json, sys
from langchain_enhanced_memory import EnhancedMemoryRetriever
from langchain_enhanced_memory.core.errors import DatabaseError
from langchain_enhanced_memory.engine.database import DatabaseSearch
retriever = EnhancedMemoryRetriever(scopes=[sys.argv[1]], embedder="none")
try:
    docs = retriever.invoke("kestrel")
except DatabaseError as exc:
    print(json.dumps({"error": str(exc)}))
else:
    print(json.dumps([[d.page_content.splitlines()[-1], d.metadata.get("stale")] for d in docs]))
"""


def test_a_fresh_process_answers_from_this_hosts_copies_while_the_database_is_down(
    pg_private: PgServer, tmp_path: Path
) -> None:
    """Issue 36 item 2: a one-shot search (a new worker) has no generation of its own in
    memory, but this host's copies of the scope's segments, and what they made, are on disk."""
    url = _team(pg_private, "fresh")
    cache = tmp_path / "copies"
    env = {"ENHANCED_MEMORY_DATABASE_URL": url, "ENHANCED_MEMORY_DATABASE_CACHE": str(cache)}

    def search(scope: str) -> subprocess.CompletedProcess[str]:
        return run_cli("search", "kestrel", "--scope", scope, "--json", "--embedder", "none", **env)

    def retrieve(scope: str) -> Any:
        child = subprocess.run(
            [sys.executable, "-c", _FRESH_RETRIEVER, scope],
            capture_output=True, text=True, env=cli_env(**env), timeout=120,
        )  # fmt: skip
        assert child.returncode == 0, child.stderr
        return json.loads(child.stdout)

    live = search("team")
    assert live.returncode == 0, live.stderr
    read = json.loads(live.stdout)
    assert "stale" not in read and [r["scope"] for r in read["results"]] == ["team"]
    pg_private.stop()

    down = search("team")
    assert down.returncode == 0, down.stderr
    stale = json.loads(down.stdout)
    assert stale["stale"] is True and stale["staleScopes"] == ["team"]
    assert stale["results"] == read["results"]
    # The long-lived path's one warning line, its error as that path says it.
    (warning,) = down.stderr.strip().splitlines()
    assert "scope team answered from generation" in warning and "held here" in warning
    assert "reading scope team: cannot connect" in warning and "***" in warning
    assert retrieve("team") == [["- kestrel seen at the lake", True]]

    for never in (search("birds"), retrieve("birds")):  # no copies of it here: an error as today
        said = never.stderr if isinstance(never, subprocess.CompletedProcess) else never["error"]
        assert "reading scope birds: cannot connect" in said and "***" in said
        assert len(said.strip().splitlines()) == 1 and "Traceback" not in said
    assert search("birds").returncode == 2

    texts = [p.read_bytes() for p in cache.rglob("*") if p.is_file()]
    assert texts and all(pg_private.password.encode() not in t for t in texts)
    for path in cache.rglob("*"):
        assert path.stat().st_mode & 0o777 == (0o700 if path.is_dir() else 0o600), path
    copies = list(cache.rglob("*.emseg"))
    hidden = copies[0].rename(copies[0].with_suffix(".gone"))
    missing = search("team")  # a copy it was made of is gone: an error as today
    assert missing.returncode == 2 and "reading scope team: cannot connect" in missing.stderr
    hidden.rename(copies[0])

    pg_private.start()
    back = search("team")
    assert back.returncode == 0 and "stale" not in json.loads(back.stdout), back.stderr
    assert json.loads(back.stdout)["results"] == read["results"]
    assert retrieve("team") == [["- kestrel seen at the lake", None]]


def test_a_refusal_the_server_makes_is_not_answered_from_copies(
    pg_server: PgServer, database_url: str
) -> None:
    """Copies stand in for a server that cannot be reached, never for one that said no."""
    with Database.connect(database_url) as db:
        db.append("team", "kestrel seen at the lake", now=DAY)
        assert len(DatabaseSearch(db, "team", embedder="none").search("kestrel").hits) == 1
    reader = _role(pg_server, database_url, "nofiles")
    database = database_url.rsplit("/", 1)[1]
    role = sql.Identifier(f"nofiles_{database}"[:63])  # as _role names it
    with pg_server.connect(database) as conn:  # it may find its copies, not the scope's files
        conn.execute(sql.SQL("GRANT SELECT ON em_identity TO {}").format(role))
        conn.execute(sql.SQL("REVOKE SELECT ON em_files FROM {}").format(role))
    with Database.connect(reader) as db, pytest.raises(DatabaseError, match="permission denied"):
        DatabaseSearch(db, "team", embedder="none").search("kestrel")
