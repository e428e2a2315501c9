"""A long-lived ``serve`` of a database scope while PostgreSQL restarts or crashes under it."""

from __future__ import annotations

import contextlib
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cli_run import CLI, run_cli, stop
from tests.integration_tests.test_serve import Server, _serve_env
from tests.postgres import PgServer


@contextlib.contextmanager
def serving_scope(url: str, cwd: Path, *more: str) -> Iterator[Server]:
    """``serve --database URL --scope team`` (and each of ``more``); its stderr kept on exit."""
    scopes = [arg for name in ("team", *more) for arg in ("--scope", name)]
    proc = subprocess.Popen(
        [*CLI, "serve", "--port", "0", "--embedder", "none", "--json", "--database", url,
         *scopes],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_serve_env(), cwd=cwd,
    )  # fmt: skip
    server = None
    try:
        line = proc.stdout.readline() if proc.stdout else ""
        assert line, proc.stderr.read() if proc.stderr else ""
        server = Server(proc, json.loads(line)["port"])
        yield server
    finally:
        stop(proc, timeout=20)
        if server is not None and proc.stderr:
            server.stderr = proc.stderr.read()


def found(server: Server, **body: Any) -> list[str]:
    status, doc = server.search(query="kestrel", **body)
    assert status == 200, doc
    return [row["scope"] for row in doc["results"]]


@pytest.fixture
def team(pg_private: PgServer) -> str:
    url = pg_private.create_database("served")
    r = run_cli("remember", "kestrel seen at the lake", "--database", url, "--scope", "team",
                "--embedder", "none")  # fmt: skip
    assert r.returncode == 0, r.stderr
    return url


def test_serve_answers_a_restart_a_crash_and_a_stopped_database(
    pg_private: PgServer, team: str, tmp_path: Path
) -> None:
    with serving_scope(team, tmp_path, "other") as server:
        assert found(server, scope="team") == ["team"]
        pg_private.restart()
        assert found(server, scope="team") == ["team"]  # the next search reconnects: no error
        pg_private.kill()
        pg_private.start()  # crash recovery
        assert found(server, scope="team") == ["team"]
        pg_private.stop()
        # A scope it has not read yet: nothing to answer from (one it has: stale, in
        # test_database_outage.py).
        status, doc = server.search(query="kestrel", scope="other")
        assert status == 503 and doc["results"] == [] and doc["unavailable"]
        assert "\n" not in doc["error"] and "***" in doc["error"]
        assert pg_private.password not in json.dumps(doc)
        pg_private.start()
        assert found(server) == ["team"]
    # What the server logged meanwhile (the pool's reconnect warnings too).
    assert pg_private.password not in server.stderr
