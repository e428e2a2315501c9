"""``enhanced-memory serve`` as a process, answering real HTTP requests on 127.0.0.1."""

from __future__ import annotations

import http.client
import json
import os
import subprocess
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tests.cli_run import CLI, NO_DAEMON, stop

SCHEMA = json.loads(
    resources.files("langchain_enhanced_memory")
    .joinpath("openclaw/schema/memory_search.schema.json")
    .read_text(encoding="utf-8")
)


def validate(doc: Any, shape: str) -> None:
    sub = {"$defs": SCHEMA["$defs"], "$ref": f"#/$defs/{shape}"}
    jsonschema.validate(doc, sub, cls=jsonschema.Draft202012Validator)


class Server:
    def __init__(self, proc: subprocess.Popen, port: int) -> None:
        self.proc = proc
        self.port = port

    def request(
        self, method: str, path: str, body: bytes | None = None, headers: dict | None = None
    ) -> tuple[int, Any]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            conn.request(method, path, body=body, headers=headers or {})
            resp = conn.getresponse()
            return resp.status, json.loads(resp.read().decode("utf-8"))
        finally:
            conn.close()

    def search(self, **body: Any) -> tuple[int, Any]:
        return self.request(
            "POST",
            "/search",
            json.dumps(body).encode(),
            {"Content-Type": "application/json"},
        )


@pytest.fixture
def server(workspace: Path) -> Iterator[Server]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ENHANCED_MEMORY_")}
    env.update(NO_DAEMON)
    env.pop("OPENCLAW_WORKSPACE_DIR", None)
    proc = subprocess.Popen(
        [*CLI, "serve", "--workspace", str(workspace), "--port", "0", "--embedder", "none",
         "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    try:
        line = proc.stdout.readline() if proc.stdout else ""
        assert line, proc.stderr.read() if proc.stderr else ""
        info = json.loads(line)
        assert info["url"].startswith("http://127.0.0.1:")
        yield Server(proc, info["port"])
    finally:
        stop(proc, timeout=20)


def test_search_answers_memory_search_json(server: Server) -> None:
    status, doc = server.search(query="billing database Postgres", k=3)
    assert status == 200
    validate(doc, "success")
    assert doc["results"][0]["path"] == "memory/2026-02-08.md" and len(doc["results"]) <= 3


def test_now_routes_dates_and_min_score_filters(server: Server) -> None:
    status, doc = server.search(query="what did we review yesterday?", now="2026-02-08T10:00")
    assert status == 200
    validate(doc, "success")
    assert doc["results"][0]["path"] == "memory/2026-02-07.md"
    status, doc = server.search(query="what did we review yesterday?", now="2026-02-08T10:00",
                                min_score=10.0)  # fmt: skip
    assert status == 200 and doc["results"] == [] and doc["filtered"] > 0
    validate(doc, "success")


def test_health(server: Server) -> None:
    status, doc = server.request("GET", "/health")
    assert status == 200
    assert doc["status"] == "ok" and doc["files"] == 4 and doc["provider"] == "none"


def test_edits_show_up_in_the_next_answer(server: Server, workspace: Path) -> None:
    status, doc = server.search(query="lighthouse")
    assert status == 200 and doc["results"] == []
    (workspace / "memory" / "2026-02-09.md").write_text(
        "# 2026-02-09\n\n## Offsite\n\nThe team offsite is at the old lighthouse.\n",
        encoding="utf-8",
    )
    status, doc = server.search(query="lighthouse")
    assert status == 200
    assert doc["results"][0]["path"] == "memory/2026-02-09.md"


@pytest.mark.parametrize(
    ("body", "status", "fragment"),
    [
        (b"{not json", 400, "not JSON"),
        (b"[1, 2]", 400, "JSON object"),
        (json.dumps({"k": 3}).encode(), 400, "query"),
        (json.dumps({"query": "x", "k": "many"}).encode(), 400, '"k"'),
        (json.dumps({"query": "x", "k": 0}).encode(), 400, '"k" must be at least 1'),
        (json.dumps({"query": "  "}).encode(), 400, '"query" must be a non-empty string'),
        (json.dumps({"query": "x", "kk": 3}).encode(), 400, '"kk" is not a known field'),
        (json.dumps({"query": "x", "now": "yesterday-ish"}).encode(), 400, "ISO"),
        (json.dumps({"query": "x", "min_score": "high"}).encode(), 400, "min_score"),
        (b"\xff\xfe", 400, "not JSON"),
    ],
)
def test_bad_requests_get_a_one_line_json_400(
    server: Server, body: bytes, status: int, fragment: str
) -> None:
    got, doc = server.request("POST", "/search", body, {"Content-Type": "application/json"})
    assert got == status
    validate(doc, "failure")
    assert fragment in doc["error"] and "\n" not in doc["error"]


def test_oversized_body_is_refused_and_server_keeps_serving(server: Server) -> None:
    status, doc = server.search(query="x" * 70_000)
    assert status == 413
    validate(doc, "failure")
    status, doc = server.search(query="ramen")
    assert status == 200 and doc["results"]


def test_unknown_endpoint_is_404_json(server: Server) -> None:
    status, doc = server.request("GET", "/nope")
    assert status == 404
    validate(doc, "failure")


def test_concurrent_requests(server: Server) -> None:
    from concurrent.futures import ThreadPoolExecutor

    queries = ["ramen", "Postgres", "Alice payments", "cache warmup", "vim"] * 4
    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda q: server.search(query=q), queries))
    assert all(status == 200 for status, _ in answers)

    def without_timings(doc: dict) -> dict:
        return {k: v for k, v in doc.items() if k != "debug"}

    for (_, doc), q in zip(answers, queries, strict=True):
        validate(doc, "success")
        assert without_timings(doc) == without_timings(answers[queries.index(q)][1])


def test_port_in_use_is_one_line(server: Server, workspace: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ENHANCED_MEMORY_")}
    env.update(NO_DAEMON)
    r = subprocess.run(
        [*CLI, "serve", "--workspace", str(workspace), "--port", str(server.port),
         "--embedder", "none", "--json"],
        capture_output=True, text=True, env=env, timeout=60,
    )  # fmt: skip
    assert r.returncode == 2
    assert "cannot listen" in r.stderr and "Traceback" not in r.stderr
    validate(json.loads(r.stdout), "failure")


def test_filters_and_openclaw_names_in_the_body(server: Server) -> None:
    status, doc = server.search(query="Postgres", maxResults=1, since="2026-02-08")
    assert status == 200
    validate(doc, "success")
    assert [r["path"] for r in doc["results"]] == ["memory/2026-02-08.md"]
    status, doc = server.search(query="latency cache", path="memory/topics/**", kind=["topic"])
    assert status == 200 and doc["results"]
    assert {r["path"] for r in doc["results"]} == {"memory/topics/project-alpha.md"}
    status, doc = server.search(query="Postgres", minScore=0.999)
    assert status == 200 and doc["results"] == [] and doc["filtered"] > 0
    status, doc = server.search(query="Postgres", until="2020-01-01")
    assert status == 200 and doc["results"] == []
    validate(doc, "success")
    assert "no memory chunk matches the filter" in doc["warning"]
    # A date filter with a date word in the query: yesterday (Feb 7) is outside since.
    status, doc = server.search(
        query="what did we review yesterday?", now="2026-02-08T10:00", since="2026-02-08"
    )
    assert status == 200 and all(r["path"] != "memory/2026-02-07.md" for r in doc["results"])


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ({"query": "x", "since": "once upon a time"}, '"since"'),
        ({"query": "x", "kind": "journal"}, '"kind" must be core, daily or topic'),
        ({"query": "x", "path": "../../etc"}, '"path"'),
        ({"query": "x", "since": "2026-03-01", "until": "2026-01-01"}, "is after until"),
        ({"query": "x", "corpus": "sessions"}, '"corpus"'),
    ],
)
def test_malformed_filters_get_a_400(server: Server, body: dict, fragment: str) -> None:
    status, doc = server.search(**body)
    assert status == 400
    validate(doc, "failure")
    assert fragment in doc["error"] and "\n" not in doc["error"]
