"""``enhanced-memory serve`` as a process, answering real HTTP requests on 127.0.0.1."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import socket
import struct
import subprocess
import threading
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
        self.stderr = ""  # what it printed, once stopped

    def request(
        self, method: str, path: str, body: bytes | None = None, headers: dict | None = None
    ) -> tuple[int, Any]:
        status, _, doc = self.exchange(method, path, body, headers)
        return status, doc

    def exchange(
        self, method: str, path: str, body: bytes | None = None, headers: dict | None = None
    ) -> tuple[int, http.client.HTTPResponse, Any]:
        """Status, response (for its headers) and JSON body (None when there is none)."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            headers = headers or {}
            conn.putrequest(method, path, skip_host="Host" in headers)
            for name, value in headers.items():
                conn.putheader(name, value)
            if body is not None:
                conn.putheader("Content-Length", str(len(body)))
            conn.endheaders(body)
            resp = conn.getresponse()
            raw = resp.read()
            return resp.status, resp, json.loads(raw.decode("utf-8")) if raw else None
        finally:
            conn.close()

    def raw(self, data: bytes) -> bytes:
        """Send ``data`` as it is on a new connection; everything the server answers."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=30) as s:
            s.sendall(data)
            s.shutdown(socket.SHUT_WR)
            chunks = []
            while chunk := s.recv(1 << 16):
                chunks.append(chunk)
        return b"".join(chunks)

    def search(self, **body: Any) -> tuple[int, Any]:
        return self.request(
            "POST",
            "/search",
            json.dumps(body).encode(),
            {"Content-Type": "application/json"},
        )


def _serve_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ENHANCED_MEMORY_")}
    env.update(NO_DAEMON)
    env.pop("OPENCLAW_WORKSPACE_DIR", None)
    return env


@contextlib.contextmanager
def serving(workspace: Path, *args: str) -> Iterator[Server]:
    """``serve`` on a free port of 127.0.0.1; stopped (and its stderr kept) on exit."""
    proc = subprocess.Popen(
        [*CLI, "serve", "--workspace", str(workspace), "--port", "0", "--embedder", "none",
         "--json", *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_serve_env(),
    )  # fmt: skip
    server = None
    try:
        line = proc.stdout.readline() if proc.stdout else ""
        assert line, proc.stderr.read() if proc.stderr else ""
        info = json.loads(line)
        assert info["url"].startswith("http://127.0.0.1:")
        server = Server(proc, info["port"])
        yield server
    finally:
        stop(proc, timeout=20)
        if server is not None and proc.stderr:
            server.stderr = proc.stderr.read()


@pytest.fixture
def server(workspace: Path) -> Iterator[Server]:
    with serving(workspace) as s:
        yield s


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


def test_a_live_transcript_is_searched_by_corpus(server: Server, workspace: Path) -> None:
    (workspace / "sessions").mkdir()
    live = workspace / "sessions" / "s1.jsonl"
    turn = {"role": "user", "content": "meet at the lighthouse", "timestamp": "2026-02-09T10:00Z"}
    live.write_text(json.dumps(turn) + "\n", encoding="utf-8")
    status, doc = server.search(query="lighthouse", corpus="sessions")
    assert status == 200 and [r["path"] for r in doc["results"]] == ["sessions/s1.jsonl"]
    with live.open("a", encoding="utf-8") as fh:  # the agent writes on: seen by the watcher
        fh.write(json.dumps({**turn, "content": "bring the kayak"}) + "\n")
    status, doc = server.search(query="kayak", corpus="sessions")
    assert [(r["startLine"], r["endLine"], r["source"]) for r in doc["results"]] == [
        (1, 2, "sessions")
    ]
    status, doc = server.search(query="lighthouse kayak", corpus="memory")
    assert status == 200 and doc["results"] == []


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


def test_deeply_nested_json_is_a_one_line_400_and_no_traceback(workspace: Path) -> None:
    # 60 KB of brackets: under the size limit, deeper than Python's JSON parser goes.
    nested = b"[" * 30_000 + b"]" * 30_000
    with serving(workspace) as s:
        status, doc = s.request("POST", "/search", nested, JSON)
        assert status == 400
        validate(doc, "failure")
        assert doc["error"] == "body is JSON nested too deeply"
        assert s.search(query="ramen")[0] == 200
    assert "Traceback" not in s.stderr and "RecursionError" not in s.stderr, s.stderr


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
    r = subprocess.run(
        [*CLI, "serve", "--workspace", str(workspace), "--port", str(server.port),
         "--embedder", "none", "--json"],
        capture_output=True, text=True, env=_serve_env(), timeout=60,
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
        ({"query": "x", "corpus": "chats"}, '"corpus" must be memory, sessions or all'),
    ],
)
def test_malformed_filters_get_a_400(server: Server, body: dict, fragment: str) -> None:
    status, doc = server.search(**body)
    assert status == 400
    validate(doc, "failure")
    assert fragment in doc["error"] and "\n" not in doc["error"]


# DNS rebinding: a web page whose name resolves to 127.0.0.1 must not read the notes.
SEARCH = json.dumps({"query": "Postgres", "k": 1}).encode()
JSON = {"Content-Type": "application/json"}


@pytest.mark.parametrize(
    ("headers", "status", "fragment"),
    [
        (
            {
                "Host": "attacker.example.com",
                "Origin": "http://attacker.example.com",
                "Content-Type": "text/plain",
            },
            421,
            "Invalid Host header",
        ),  # fmt: skip
        ({"Host": "attacker.example.com:{port}", **JSON}, 421, "Invalid Host header"),
        ({"Host": "localhost.attacker.example.com", **JSON}, 421, "Invalid Host header"),
        ({"Host": "127.0.0.1.nip.io:{port}", **JSON}, 421, "Invalid Host header"),
        ({"Host": "", **JSON}, 421, "Invalid Host header"),
        (
            {"Host": "127.0.0.1:{port}", "Origin": "http://attacker.example.com", **JSON},
            403,
            "Invalid Origin header",
        ),  # fmt: skip
        ({"Host": "127.0.0.1:{port}", "Origin": "null", **JSON}, 403, "Invalid Origin header"),
        (
            {"Host": "localhost:{port}", "Origin": "http://localhost:1", **JSON},
            403,
            "Invalid Origin header",
        ),  # fmt: skip
        (
            {"Host": "127.0.0.1:{port}", "Origin": "http://localhost:3000", **JSON},
            403,
            "Invalid Origin header",
        ),  # fmt: skip
        ({"Host": "127.0.0.1:{port}", "Content-Type": "text/plain"}, 415, "application/json"),
        (
            {"Host": "127.0.0.1:{port}", "Content-Type": "application/x-www-form-urlencoded"},
            415,
            "application/json",
        ),  # fmt: skip
        ({"Host": "127.0.0.1:{port}"}, 415, "application/json"),
        (
            {"Host": "127.0.0.1:{port}", "Content-Type": "application/jsonx"},
            415,
            "application/json",
        ),  # fmt: skip
    ],
)
def test_foreign_hosts_origins_and_simple_requests_are_refused(
    server: Server, headers: dict, status: int, fragment: str
) -> None:
    headers = {k: v.format(port=server.port) for k, v in headers.items()}
    got, doc = server.request("POST", "/search", SEARCH, headers)
    assert got == status
    validate(doc, "failure")
    assert fragment in doc["error"] and "\n" not in doc["error"]
    assert "Postgres" not in json.dumps(doc)


@pytest.mark.parametrize(
    "headers",
    [
        {"Host": "127.0.0.1:{port}", **JSON},
        {"Host": "127.0.0.1", **JSON},
        {"Host": "localhost:{port}", "Origin": "http://localhost:{port}", **JSON},
        {"Host": "LOCALHOST", "Content-Type": "application/json; charset=utf-8"},
        {"Host": "[::1]:{port}", "Origin": "http://[::1]:{port}", **JSON},
        {"Host": "[::1]", **JSON},
        # Another of its own names, on its own port: the same server.
        {"Host": "127.0.0.1:{port}", "Origin": "http://localhost:{port}", **JSON},
    ],
)
def test_the_servers_own_names_and_origin_are_answered(server: Server, headers: dict) -> None:
    headers = {k: v.format(port=server.port) for k, v in headers.items()}
    status, doc = server.request("POST", "/search", SEARCH, headers)
    assert status == 200, doc
    validate(doc, "success")


def test_a_refused_origin_is_told_the_exact_origins_answered(server: Server) -> None:
    headers = {"Origin": "http://localhost:3000", **JSON}
    status, doc = server.request("POST", "/search", SEARCH, headers)
    assert status == 403
    port = server.port
    assert doc["action"] == (
        f"this server answers the origins http://127.0.0.1:{port}, http://[::1]:{port},"
        f" http://localhost:{port} only"
    )


def test_health_also_refuses_a_foreign_host(server: Server) -> None:
    status, doc = server.request("GET", "/health", headers={"Host": "attacker.example.com"})
    assert status == 421 and "workspace" not in doc
    status, doc = server.request("GET", "/health", headers={"Origin": "http://evil.test"})
    assert status == 403 and "workspace" not in doc


def test_allow_host_adds_a_name(workspace: Path) -> None:
    with serving(workspace, "--allow-host", "mybox.lan", "--allow-host", "10.0.0.7:9000") as s:
        for host in ("mybox.lan:{port}", "MyBox.lan", "10.0.0.7", "127.0.0.1:{port}"):
            headers = {"Host": host.format(port=s.port), **JSON}
            assert s.request("POST", "/search", SEARCH, headers)[0] == 200, host
        assert s.request("POST", "/search", SEARCH, {"Host": "other.lan", **JSON})[0] == 421


def test_a_non_loopback_bind_is_warned_about(workspace: Path) -> None:
    # 192.0.2.1 (TEST-NET-1) is no address of this machine: the bind fails, after the warning.
    r = subprocess.run(
        [*CLI, "serve", "--workspace", str(workspace), "--port", "0", "--embedder", "none",
         "--host", "192.0.2.1"],
        capture_output=True, text=True, env=_serve_env(), timeout=60,
    )  # fmt: skip
    assert r.returncode == 2 and "Traceback" not in r.stderr
    warning = next(line for line in r.stderr.splitlines() if "warning" in line)
    assert "192.0.2.1" in warning and "not a loopback" in warning
    with serving(workspace, "--host", "localhost") as s:
        pass
    assert "warning" not in s.stderr


def test_fifty_concurrent_clients_are_all_answered(server: Server) -> None:
    # Every client connects at once: a listen backlog of 5 reset some of them.
    n = 50
    barrier = threading.Barrier(n)

    def client(i: int) -> int:
        barrier.wait()
        return server.search(query=["ramen", "Postgres", "vim"][i % 3], k=2)[0]

    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(n) as pool:
        statuses = list(pool.map(client, range(n)))
    assert statuses == [200] * n


@pytest.mark.parametrize("method", ["PUT", "DELETE", "PATCH", "OPTIONS", "TRACE", "BREW"])
def test_other_methods_get_a_json_405_with_allow(server: Server, method: str) -> None:
    status, resp, doc = server.exchange(method, "/search", b'{"query": "x"}', JSON)
    assert status == 405
    assert resp.getheader("Allow") == "GET, POST"
    validate(doc, "failure")
    assert method in doc["error"] and "\n" not in doc["error"]


def test_head_gets_a_405_without_a_body(server: Server) -> None:
    status, resp, doc = server.exchange("HEAD", "/health")
    assert status == 405 and resp.getheader("Allow") == "GET, POST" and doc is None


@pytest.mark.parametrize(
    ("length", "status", "fragment"),
    [
        ("-5", 400, "Content-Length"),
        ("1_0", 400, "Content-Length"),
        ("0x10", 400, "Content-Length"),
        ("", 400, "Content-Length"),
        (None, 411, "Content-Length is required"),
        ("70000", 413, "over 65536 bytes"),
    ],
)
def test_content_length_is_checked(
    server: Server, length: str | None, status: int, fragment: str
) -> None:
    head = f"POST /search HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n"
    head += "Content-Type: application/json\r\n"
    if length is not None:
        head += f"Content-Length: {length}\r\n"
    reply = server.raw(head.encode() + b"\r\n" + b'{"query": "x"}')
    status_line, _, rest = reply.partition(b"\r\n")
    assert status_line.split()[1] == str(status).encode()
    doc = json.loads(rest.split(b"\r\n\r\n", 1)[1])
    validate(doc, "failure")
    assert fragment in doc["error"] and "\n" not in doc["error"]


@pytest.mark.parametrize(
    "request_bytes",
    [b"NONSENSE\r\n\r\n", b"GET /health HTTP/9.9\r\nHost: 127.0.0.1\r\n\r\n"],
)
def test_a_malformed_request_gets_one_line_of_json(server: Server, request_bytes: bytes) -> None:
    reply = server.raw(request_bytes)
    head, _, body = reply.partition(b"\r\n\r\n")
    assert b"application/json" in head
    validate(json.loads(body), "failure")


def _reset(sock: socket.socket) -> None:
    """Close with a TCP reset, as a client that crashed or was killed."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


def test_clients_that_leave_mid_request_print_no_traceback(workspace: Path) -> None:
    with serving(workspace) as s:
        head = (
            f"POST /search HTTP/1.1\r\nHost: 127.0.0.1:{s.port}\r\n"
            "Content-Type: application/json\r\n"
        )
        for _ in range(5):
            # Mid-body: the body promised 1000 bytes, 10 came.
            sock = socket.create_connection(("127.0.0.1", s.port), timeout=30)
            sock.sendall(f"{head}Content-Length: 1000\r\n\r\n".encode() + b'{"query":')
            _reset(sock)
            # A whole request, then gone before the answer.
            sock = socket.create_connection(("127.0.0.1", s.port), timeout=30)
            sock.sendall(f"{head}Content-Length: {len(SEARCH)}\r\n\r\n".encode() + SEARCH)
            _reset(sock)
            # Mid-body, closed politely.
            sock = socket.create_connection(("127.0.0.1", s.port), timeout=30)
            sock.sendall(f"{head}Content-Length: 1000\r\n\r\n".encode() + b'{"query":')
            sock.close()
        assert s.search(query="ramen")[0] == 200
    assert "Traceback" not in s.stderr and "Error" not in s.stderr, s.stderr
