"""Searches over HTTP from one warm process (``enhanced-memory serve``).

For agents that want to skip process start altogether. Endpoints:

- ``POST /search`` with ``{"query": str, "k"?: int, "now"?: ISO datetime,
  "min_score"?: float, "since"?, "until"?, "path"?, "kind"?}`` (or OpenClaw's
  ``maxResults``/``minScore``) answers the same JSON as ``search --json``
  (OpenClaw ``memory_search``); a bad request, a malformed filter included, gets
  status 400 and the failure object with a one-line ``error``.
- ``GET /health`` answers ``{"status": "ok", ...}`` with the index's counts.

The engine follows file-system events (a watcher; a scan per search where
events are unavailable) and re-indexes what changed, so an edit to the notes
is in the next answer; missing vectors are embedded on a thread meanwhile.
It binds 127.0.0.1 unless ``--host`` says otherwise; request bodies over
64 KiB are refused. Searches run one at a time (the engine keeps
per-process caches), connections are handled on threads.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

from ..core.errors import EnhancedMemoryError, RequestError
from ..core.request import SearchRequest
from ..openclaw.response import failure_json, response_json

if TYPE_CHECKING:
    from ..engine import MemorySearch

__all__ = ["MAX_BODY", "BadRequest", "SearchServer", "body_size", "decode_body"]

MAX_BODY = 64 * 1024


class BadRequest(Exception):
    """A request this server refuses: an HTTP status and a one-line message."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def decode_body(raw: bytes) -> dict[str, Any]:
    """A ``/search`` body as a JSON object (raises :class:`BadRequest`, 400)."""
    try:
        body = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BadRequest(400, f"body is not JSON ({exc})".splitlines()[0]) from None
    if not isinstance(body, dict):
        raise BadRequest(400, 'body must be a JSON object {"query", "k"?, "now"?}')
    return body


def body_size(length: str | None) -> int:
    """The ``Content-Length`` to read (raises :class:`BadRequest`: 411, 400 or 413)."""
    if length is None:
        raise BadRequest(411, "Content-Length is required")
    try:
        size = int(length)
    except ValueError:
        raise BadRequest(400, "Content-Length is not a number") from None
    if size < 0 or size > MAX_BODY:
        raise BadRequest(413, f"request body over {MAX_BODY} bytes")
    return size


def request_error_text(exc: RequestError) -> str:
    """A request error in a JSON body's words (``"k" must be at least 1, got 0``)."""
    return f'"{exc.field}" {exc.problem}' if exc.field else exc.problem


class SearchServer(ThreadingHTTPServer):
    """A threading HTTP server holding one search engine."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int], engine: MemorySearch) -> None:
        super().__init__(address, _Handler)
        self.engine = engine
        self.lock = threading.Lock()

    def search(self, body: dict[str, Any]) -> dict[str, Any]:
        """Answer one ``/search`` request body (raises ``RequestError`` on a bad one)."""
        request = SearchRequest.from_body(body)
        with self.lock:
            response = self.engine.run(request)
        return response_json(response, self.engine.settings.snippet_chars)

    def health(self) -> dict[str, Any]:
        """Counts of the index and the active embedder."""
        with self.lock:
            stats = self.engine.index.stats()
            choice = self.engine.choice
        return {
            "status": "ok",
            "workspace": str(self.engine.index.workspace),
            "files": stats["files"],
            "chunks": stats["chunks"],
            "provider": choice.provider,
            "model": choice.model,
        }


class _Handler(BaseHTTPRequestHandler):
    server: SearchServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass  # one process per agent: request logs would only fill the terminal

    def _send(self, status: int, payload: Any) -> None:
        body = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _fail(self, status: int, message: str, action: str = "") -> None:
        self._send(status, failure_json(message.splitlines()[0] if message else "error", action))

    def do_GET(self) -> None:  # noqa: N802
        if self.path.split("?", 1)[0] == "/health":
            try:
                self._send(200, self.server.health())
            except Exception as exc:  # an unreadable index: say so, keep serving
                self._fail(503, f"{type(exc).__name__}: {exc}")
            return
        self._fail(404, f"no such endpoint: GET {self.path[:100]}", "use POST /search")

    def do_POST(self) -> None:  # noqa: N802
        if self.path.split("?", 1)[0] != "/search":
            self._fail(404, f"no such endpoint: POST {self.path[:100]}", "use POST /search")
            return
        try:
            body = self._read_body()
            self._send(200, self.server.search(body))
        except BadRequest as exc:
            self._fail(exc.status, str(exc))
        except RequestError as exc:
            self._fail(400, request_error_text(exc), exc.action)
        except EnhancedMemoryError as exc:
            self._fail(503, str(exc), exc.action)
        except Exception as exc:  # never a traceback to the client; keep serving
            self._fail(500, f"{type(exc).__name__}: {exc}")

    def _read_body(self) -> dict[str, Any]:
        try:
            size = body_size(self.headers.get("Content-Length"))
        except BadRequest:
            self.close_connection = True  # an unread body must not be parsed as a request
            raise
        return decode_body(self.rfile.read(size))
