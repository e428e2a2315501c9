"""The resident engine serves scopes as it serves its workspace (issue 38, item 2).

A one-shot ``search --scope`` run in a workspace whose resident engine runs is
answered there: a database scope over the engine's one connection pool per URL
(no new connection per search), a folder scope over its warm engine; the
answers are the in-process ones, and an outage answers stale through it too.
The URL's password reaches neither the engine's status nor any output.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from langchain_enhanced_memory.store.database import Database
from tests.cli_run import run_cli
from tests.postgres import PgServer
from tests.reliability.db_driver import DAY

ON = {"ENHANCED_MEMORY_DAEMON": "1"}
OFF = {"ENHANCED_MEMORY_DAEMON": "0"}


@pytest.fixture
def resident(workspace: Path) -> Iterator[dict]:
    r = run_cli("daemon", "start", "--workspace", str(workspace), "--json", **ON)
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)
    try:
        yield info
    finally:
        run_cli("daemon", "stop", "--workspace", str(workspace), **ON)
        with contextlib.suppress(ProcessLookupError):
            os.kill(info["pid"], signal.SIGKILL)


def _status(ws: Path) -> dict:
    r = run_cli("daemon", "status", "--workspace", str(ws), "--json", **ON)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def _search(ws: Path, url: str, *args: str, **env: str) -> dict:
    """``search kestrel --scope ... --json`` run in ``ws``: its JSON, timings left out."""
    r = run_cli(
        "search", "kestrel", "--embedder", "none", "--now", "2026-12-10T09:00", "--json",
        *args, cwd=ws, ENHANCED_MEMORY_DATABASE_URL=url, **env,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    doc["debug"] = {k: v for k, v in doc["debug"].items() if k not in ("searchMs", "timings")}
    return doc


def _backends(url: str) -> set[int]:
    """The server processes of the other connections to ``url``'s database."""
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pid FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        ).fetchall()
    return {pid for (pid,) in rows}


def test_a_scope_search_is_answered_by_the_resident_engine(
    pg_server: PgServer, database_url: str, workspace: Path, resident: dict
) -> None:
    with Database.connect(database_url) as db:
        db.append("team", "kestrel seen at the lake", now=DAY)
    local = _search(workspace, database_url, "--scope", "team", **OFF)
    assert [r["scope"] for r in local["results"]] == ["team"]

    first = _search(workspace, database_url, "--scope", "team", **ON)
    held = _backends(database_url)
    second = _search(workspace, database_url, "--scope", "team", **ON)
    assert first == local and second == local
    # Both answered by the engine, over the connection it keeps: none opened for the second.
    assert held and _backends(database_url) == held
    status = _status(workspace)
    assert status["requests"] == 2
    [served] = status["scopes"]
    assert served["scope"] == "team" and served["generation"] >= 1 and served["chunks"] == 1
    assert "***" in served["database"]
    assert pg_server.password not in json.dumps(status)


def test_a_folder_scope_is_answered_by_its_warm_engine(
    database_url: str, workspace: Path, resident: dict
) -> None:
    spec = f"notes={workspace}"
    args = ("--scope", spec, "--scope", "team")
    with Database.connect(database_url) as db:
        db.append("team", "kestrel seen at the lake", now=DAY)
    (workspace / "memory" / "2026-12-09.md").write_text("# Birds\n\n- a kestrel nested here\n")
    local = _search(workspace, database_url, *args, **OFF)
    assert {r["scope"] for r in local["results"]} == {"notes", "team"}
    assert _search(workspace, database_url, *args, **ON) == local
    status = _status(workspace)
    assert status["requests"] == 1
    assert [e["index"] for e in status["engines"]] == [
        str(workspace.resolve() / ".enhanced-memory" / "index.sqlite")
    ]


def test_a_scope_answers_stale_through_the_resident_engine(
    pg_private: PgServer, workspace: Path, resident: dict
) -> None:
    url = pg_private.create_database("outage")
    with Database.connect(url) as db:
        db.append("team", "kestrel seen at the lake", now=DAY)
    fresh = _search(workspace, url, "--scope", "team", **ON)
    assert "stale" not in fresh and fresh["results"]
    pg_private.stop()
    r = run_cli(
        "search", "kestrel", "--scope", "team", "--embedder", "none", "--json",
        cwd=workspace, ENHANCED_MEMORY_DATABASE_URL=url, **ON,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    stale = json.loads(r.stdout)
    assert stale["stale"] is True and stale["staleScopes"] == ["team"]
    assert [x["snippet"] for x in stale["results"]] == [x["snippet"] for x in fresh["results"]]
    assert pg_private.password not in r.stdout + r.stderr
    assert _status(workspace)["requests"] == 2  # the engine answered, not this process
    pg_private.start()
    back = _search(workspace, url, "--scope", "team", **ON)
    assert "stale" not in back and back["results"]
    log = workspace / ".enhanced-memory" / "resident.log"  # the engine's own output
    assert pg_private.password not in log.read_text(encoding="utf-8")


def test_a_caller_with_libpq_variables_searches_scopes_itself(
    database_url: str, workspace: Path, resident: dict
) -> None:
    # libpq reads PGPASSWORD, PGUSER... from the process that connects: the caller's own
    # then, never the resident engine's, which another shell may have started.
    with Database.connect(database_url) as db:
        db.append("team", "kestrel seen at the lake", now=DAY)
    local = _search(workspace, database_url, "--scope", "team", **OFF)
    libpq = {"PGCONNECT_TIMEOUT": "10"}
    assert _search(workspace, database_url, "--scope", "team", **libpq, **ON) == local
    assert _status(workspace)["requests"] == 0
