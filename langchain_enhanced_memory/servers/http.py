"""Searches over HTTP from one warm process (``enhanced-memory serve``).

For agents that want to skip process start altogether. Endpoints:

- ``POST /search`` with ``{"query": str, "k"?: int, "now"?: ISO datetime,
  "min_score"?: float, "since"?, "until"?, "path"?, "kind"?, "scope"?}`` (or
  OpenClaw's ``maxResults``/``minScore``) answers the same JSON as ``search --json``
  (OpenClaw ``memory_search``); a bad request, a malformed filter included, gets
  status 400 and the failure object with a one-line ``error``. A server started
  with scopes (``serve --scope``) searches them all, or those ``scope`` names (a
  name or a list of the server's own; another is a 400).
- ``GET /health`` answers ``{"status": "ok", ...}`` with the index's counts. A
  server of database scopes reads their generations: ``"database": "ok"``, or
  status 503 with ``{"status": "unavailable", "database": "unreachable",
  "error", "action"}`` while the database cannot be read (searches meanwhile
  answer from the generation the server read last, marked ``stale``).

The engine follows file-system events (a watcher; a scan per search where
events are unavailable) and re-indexes what changed, so an edit to the notes
is in the next answer; missing vectors are embedded on a thread meanwhile.
Searches run one at a time (the engine keeps per-process caches), connections
are handled on threads.

What it accepts, so that a web page cannot read the notes (DNS rebinding, as
``mcp --http`` guards against): a ``Host`` naming 127.0.0.1, localhost,
[::1], the bound ``--host`` or an ``--allow-host`` name, any port (else 421);
no ``Origin``, or one of the server's own: ``http://NAME:PORT`` of those names
and the port it listens on, nothing else (another local port is another web
page; else 403); a POST body of ``Content-Type: application/json`` (else 415:
no CORS "simple request" gets through), with a ``Content-Length`` (411) that is
a decimal number (400) of at most 64 KiB (413), of JSON that Python can parse
(nested too deeply: 400). Other methods get 405 with ``Allow``.
Every refusal is one line of JSON (the failure object) and closes the
connection; a client that leaves mid-request is forgotten without a word.
"""

from __future__ import annotations

import ipaddress
import json
import logging
import socket
import sys
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

from ..core.errors import DatabaseError, EnhancedMemoryError, RequestError, ScopeError
from ..core.request import SearchRequest
from ..core.text import clean_json
from ..engine.scoped import ScopedSearch, narrowed
from ..openclaw.response import failure_json, response_json

if TYPE_CHECKING:
    from collections.abc import Iterable

    from ..engine import MemorySearch

__all__ = [
    "LOOPBACK_NAMES",
    "MAX_BODY",
    "BadRequest",
    "SearchServer",
    "allowed_hosts",
    "allowed_origins",
    "body_size",
    "check_origin",
    "parse_json",
    "decode_body",
    "host_name",
    "is_loopback",
]

log = logging.getLogger("langchain_enhanced_memory")

MAX_BODY = 64 * 1024
#: The names every ``serve`` answers to, whatever it binds.
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")
_WILDCARDS = ("", "0.0.0.0", "::")  # every interface: no name of its own
_ALLOW = "GET, POST"
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789.-_:%")


class BadRequest(Exception):
    """A request this server refuses: an HTTP status, a one-line message, what to do."""

    def __init__(self, status: int, message: str, action: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.action = action


def host_name(value: str) -> str | None:
    """The name in a ``Host`` value (``[::1]:8765`` -> ``::1``), lowercased; None if malformed.

    An IPv6 address may come bare (``::1``, as ``--host`` takes it) or in brackets.
    """
    value = value.strip().lower()
    if value.startswith("["):
        name, closed, rest = value[1:].partition("]")
        if not closed or (rest and not rest.startswith(":")):
            return None
        port = rest[1:]
    elif value.count(":") > 1:  # a bare IPv6 address
        name, port = value, ""
    else:
        name, _, port = value.partition(":")
    if port and not (port.isascii() and port.isdigit()):
        return None
    if not name or not set(name) <= _NAME_CHARS:
        return None
    return name


def is_loopback(host: str) -> bool:
    """Whether binding ``host`` reaches this machine only (a name other than localhost: no)."""
    name = host_name(host)
    if name == "localhost":
        return True
    try:
        return name is not None and ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def allowed_hosts(bound: str, extra: Iterable[str] = ()) -> frozenset[str]:
    """The ``Host`` names a server bound to ``bound`` answers (raises ``ValueError``)."""
    names = set(LOOPBACK_NAMES)
    for value in ([] if bound in _WILDCARDS else [bound]) + list(extra):
        name = host_name(value)
        if name is None:
            raise ValueError(f"not a host name: {value!r}")
        names.add(name)
    return frozenset(names)


def allowed_origins(names: Iterable[str], port: int) -> frozenset[str]:
    """The ``Origin`` values a server on ``port`` answers: ``http://NAME:PORT`` of each name."""
    return frozenset(f"http://[{n}]:{port}" if ":" in n else f"http://{n}:{port}" for n in names)


def parse_json(raw: bytes) -> Any:
    """A body's JSON (raises :class:`BadRequest`, 400: not UTF-8 JSON, or nested too deeply)."""
    try:
        return clean_json(json.loads(raw.decode("utf-8")))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BadRequest(400, f"body is not JSON ({exc})".splitlines()[0]) from None
    except RecursionError:  # ``[[[[...`` deeper than Python's parser goes
        raise BadRequest(400, "body is JSON nested too deeply") from None


def decode_body(raw: bytes) -> dict[str, Any]:
    """A ``/search`` body as a JSON object (raises :class:`BadRequest`, 400)."""
    body = parse_json(raw)
    if not isinstance(body, dict):
        raise BadRequest(400, 'body must be a JSON object {"query", "k"?, "now"?}')
    return body


def body_size(length: str | None) -> int:
    """The ``Content-Length`` to read (raises :class:`BadRequest`: 411, 400 or 413)."""
    if length is None:
        raise BadRequest(411, "Content-Length is required")
    digits = length.strip()
    if not (digits.isascii() and digits.isdigit()):  # int() takes "-5", "+5" and "1_0"
        raise BadRequest(400, f"Content-Length is not a byte count: {length[:40]!r}")
    if int(digits) > MAX_BODY:
        raise BadRequest(413, f"request body over {MAX_BODY} bytes")
    return int(digits)


def check_origin(
    host: str | None, origin: str | None, allowed: frozenset[str], origins: frozenset[str]
) -> None:
    """Refuse a ``Host`` not in ``allowed`` (421) and an ``Origin`` not in ``origins`` (403).

    A page that rebinds its own name to 127.0.0.1 still sends that name as the
    ``Host``, and a browser names the page's origin in ``Origin``: a page served
    on another port of this machine is another origin, refused too.

    Raises:
        BadRequest: The status and a message naming what is answered.
    """
    if host is None or host_name(host) not in allowed:
        shown = (host or "")[:100]
        raise BadRequest(
            421,
            f"Invalid Host header: {shown!r}",
            "this server answers 127.0.0.1, localhost, [::1] and the --host it binds;"
            " name another with --allow-host",
        )
    if origin is not None and origin.strip().lower() not in origins:
        raise BadRequest(
            403,
            f"Invalid Origin header: {origin[:100]!r}",
            f"this server answers the origins {', '.join(sorted(origins))} only",
        )


def check_content_type(value: str | None) -> None:
    """Refuse a body that is not JSON (415): a browser sends those cross-origin unasked."""
    if (value or "").split(";", 1)[0].strip().lower() != "application/json":
        raise BadRequest(
            415,
            f"Content-Type must be application/json, got {(value or '')[:60]!r}",
            "send the body with Content-Type: application/json",
        )


def request_error_text(exc: RequestError | ScopeError) -> str:
    """A request error in a JSON body's words (``"k" must be at least 1, got 0``)."""
    if isinstance(exc, ScopeError):
        return str(exc)  # it names the scope
    return f'"{exc.field}" {exc.problem}' if exc.field else exc.problem


class SearchServer(ThreadingHTTPServer):
    """A threading HTTP server holding one search engine."""

    daemon_threads = True
    request_queue_size = socket.SOMAXCONN  # a burst of clients waits instead of being reset

    def __init__(
        self,
        address: tuple[str, int],
        engine: MemorySearch | ScopedSearch,
        allowed: frozenset[str] = frozenset(LOOPBACK_NAMES),
    ) -> None:
        """Bind ``address`` (raises ``OSError``), answering the ``Host`` names ``allowed``."""
        self.allowed = allowed
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        super().__init__(address, _Handler)
        self.origins = allowed_origins(allowed, int(self.server_address[1]))  # the port bound
        self.engine = engine
        self.lock = threading.Lock()

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that left is no error; anything else is one line, never a traceback."""
        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionError, TimeoutError)):
            return
        text = str(exc).splitlines()[0] if str(exc) else ""
        log.warning("serve: a request failed: %s: %s", type(exc).__name__, text)

    def search(self, body: dict[str, Any]) -> dict[str, Any]:
        """Answer one ``/search`` request body (raises ``RequestError`` or ``ScopeError``)."""
        fields = dict(body)
        searcher = narrowed(self.engine, fields.pop("scope", None))
        request = SearchRequest.from_body(fields)
        with self.lock:
            response = searcher.run(request)
        return response_json(response, self.engine.settings.output.snippet_chars)

    def health(self) -> tuple[int, dict[str, Any]]:
        """The status and answer of ``/health``: the index's counts and the active embedder.

        Over scopes: the scopes, and whether their database answers (503 when not).
        """
        if self.engine.scopes:
            out: dict[str, Any] = {"status": "ok", "scopes": self.engine.scopes}
            try:
                if self.engine.check_databases():
                    out["database"] = "ok"
            except DatabaseError as exc:
                log.warning("serve: health: %s", exc)
                out |= {"status": "unavailable", "database": "unreachable"}
                return 503, out | {"error": str(exc), "action": exc.action}
            return 200, out
        with self.lock:
            local = self.engine.workspace_engine("health")
            stats = local.stats()
            choice = local.choice
        return 200, {
            "status": "ok",
            "workspace": str(local.workspace),
            "files": stats["files"],
            "chunks": stats["chunks"],
            "provider": choice.provider,
            "model": choice.model,
        }


class _Handler(BaseHTTPRequestHandler):
    server: SearchServer
    protocol_version = "HTTP/1.1"
    default_request_version = "HTTP/1.0"  # so that even a garbled request line gets headers

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass  # one process per agent: request logs would only fill the terminal

    def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        body = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _fail(
        self, status: int, message: str, action: str = "", headers: dict[str, str] | None = None
    ) -> None:
        # The request's body may be unread: it must not be parsed as the next request.
        self.close_connection = True
        self._send(
            status, failure_json(message.splitlines()[0] if message else "error", action), headers
        )

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """Python's own refusals (a malformed request, a method without a handler) as ours."""
        if code == HTTPStatus.NOT_IMPLEMENTED:  # http.server's answer to a method it lacks
            self._fail(
                405,
                f"method {self.command[:20]} is not allowed",
                "use GET /health or POST /search",
                {"Allow": _ALLOW},
            )
            return
        self._fail(code, message or HTTPStatus(code).phrase)

    def _check(self) -> None:
        headers = self.headers
        check_origin(headers["Host"], headers["Origin"], self.server.allowed, self.server.origins)

    def do_GET(self) -> None:  # noqa: N802
        try:
            self._check()
        except BadRequest as exc:
            self._fail(exc.status, str(exc), exc.action)
            return
        if self.path.split("?", 1)[0] == "/health":
            try:
                self._send(*self.server.health())
            except Exception as exc:  # an unreadable index: say so, keep serving
                self._fail(503, f"{type(exc).__name__}: {exc}")
            return
        self._fail(404, f"no such endpoint: GET {self.path[:100]}", "use POST /search")

    def do_POST(self) -> None:  # noqa: N802
        try:
            self._check()
            if self.path.split("?", 1)[0] != "/search":
                raise BadRequest(
                    404, f"no such endpoint: POST {self.path[:100]}", "use POST /search"
                )
            check_content_type(self.headers.get("Content-Type"))
            body = self._read_body()
        except BadRequest as exc:
            self._fail(exc.status, str(exc), exc.action)
            return
        try:
            answer = self.server.search(body)
        except (RequestError, ScopeError) as exc:
            self._fail(400, request_error_text(exc), exc.action)
        except EnhancedMemoryError as exc:
            log.warning("serve: a search failed: %s", exc)  # the one line of a failed request
            self._fail(503, str(exc), exc.action)
        except Exception as exc:  # never a traceback to the client; keep serving
            self._fail(500, f"{type(exc).__name__}: {exc}")
        else:
            self._send(200, answer)

    def _read_body(self) -> dict[str, Any]:
        size = body_size(self.headers.get("Content-Length"))
        raw = self.rfile.read(size)
        if len(raw) < size:  # the client closed mid-body: there is no one to answer
            raise ConnectionAbortedError("the client left mid-body")
        return decode_body(raw)
