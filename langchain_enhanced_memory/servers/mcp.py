"""The memory as an MCP server (``enhanced-memory mcp``), on the official SDK's FastMCP.

Tools, each answering the JSON the command line prints (built by
:mod:`..analysis.tool_json`, the builder the LangChain tools use), with the
LangChain tools' names and arguments (one schema each,
:mod:`..analysis.tool_args`):

- ``memory_search``: OpenClaw's arguments (``query``, ``maxResults``,
  ``minScore``, ``corpus``) plus the filters ``since``, ``until``, ``path``,
  ``kind``; answers ``search --json``.
- ``memory_get``: OpenClaw's ``path``, ``from``, ``lines``; answers ``get --json``.
- ``memory_salience``: ``salience --json``.
- ``memory_crossref``: cross-references of a file, or of one result
  (``path`` and ``startLine``), or the graph overview.
- ``memory_status``: ``status --json`` (and ``write``).
- ``memory_append`` and ``memory_forget``: only with ``allow_write`` (``--allow-write``).

On a server started with scopes (``mcp --scope``), ``memory_search``,
``memory_get``, ``memory_append`` and ``memory_forget`` take a ``scope``: the scope(s) to search
(default: all) or the one to read or write (needed when there are several). A
server over scopes offers those three and not the tools of one workspace's
index (salience, crossref, status).

All but ``memory_append`` and ``memory_forget`` carry ``readOnlyHint``
(``memory_forget`` also ``destructiveHint``). Every refusal is a tool
error (``isError``) of one line per problem, ``<tool>: <argument>: <problem>``
in the words ``serve`` and the command line use: a bad or unknown argument
(each tool's schema says ``additionalProperties: false``), a malformed filter,
a refused, missing or unreadable ``memory_get`` path, a refused write. Transports:
stdio (the default) or streamable HTTP bound to 127.0.0.1. Calls run one at a
time on the server's event loop (the engine keeps per-process caches).

Over HTTP a guard in front of the SDK's app answers what ``serve`` answers: a
``Host`` of 127.0.0.1, localhost, [::1], the bound host or an ``allow_hosts``
name (else 421); no ``Origin`` or one of the exact ``http://NAME:PORT`` of those
names and the bound port (else 403; the SDK's own check takes any port of
localhost, another web page); a POST body of at most the SDK's limit (413) that
Python's JSON parser can read to the end (nested too deeply: 400, where the SDK
answered 500 and printed a traceback). Each refusal is one line of JSON-RPC
error.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Union

import anyio
from mcp.server.fastmcp import FastMCP
from mcp.server.fastmcp.exceptions import ToolError
from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE, TransportSecuritySettings
from mcp.types import Tool, ToolAnnotations
from pydantic import BaseModel, ValidationError
from starlette.datastructures import Headers
from starlette.responses import JSONResponse

from ..analysis import tool_json
from ..analysis.tool_args import (
    RENAMED,
    MemoryAppendInput,
    MemoryAppendScopedInput,
    MemoryCrossrefInput,
    MemoryForgetInput,
    MemoryForgetScopedInput,
    MemoryGetInput,
    MemoryGetScopedInput,
    MemorySalienceInput,
    MemorySearchInput,
    MemorySearchScopedInput,
    MemoryStatusInput,
)
from ..core.errors import EnhancedMemoryError, one_line
from ..core.request import SearchRequest, argument_errors, check_corpus
from ..core.version import __version__
from ..engine.scoped import ScopedSearch, narrowed, one_scope
from .http import BadRequest, allowed_hosts, allowed_origins, check_origin, parse_json

if TYPE_CHECKING:
    from starlette.applications import Starlette
    from starlette.types import ASGIApp, Message, Receive, Send
    from starlette.types import Scope as Connection

    from ..engine import MemorySearch

__all__ = ["SERVER_NAME", "build_server"]

SERVER_NAME = "enhanced-memory"
#: What the server answers over: one workspace's engine, or scopes.
Searcher = Union["MemorySearch", ScopedSearch]
_READ = ToolAnnotations(readOnlyHint=True, destructiveHint=False, openWorldHint=False)
_WRITE = ToolAnnotations(
    readOnlyHint=False, destructiveHint=False, idempotentHint=False, openWorldHint=False
)
_ERASE = ToolAnnotations(
    readOnlyHint=False, destructiveHint=True, idempotentHint=False, openWorldHint=False
)

# JSON-RPC's error codes: a body that is not JSON, a request refused as it is.
_PARSE_ERROR = -32700
_INVALID_REQUEST = -32600


# The SDK's loggers of streamable HTTP, which log a failure with its traceback.
_HTTP_LOGGERS = ("mcp.server.streamable_http", "mcp.server.streamable_http_manager")


class _OneLine(logging.Filter):
    """The SDK's HTTP failures as one line each; a client that left is no failure (as in serve)."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, anyio.ClosedResourceError | anyio.BrokenResourceError):
            return False  # the client closed its stream: nothing went wrong here
        if exc is not None:
            record.msg = one_line(f"{record.getMessage()}: {type(exc).__name__}: {exc}")
            record.args = ()
            record.exc_info = None
            record.exc_text = None
        return True


class _Guard:
    """ASGI middleware in front of streamable HTTP: ``serve``'s Host, Origin and body checks."""

    def __init__(self, app: ASGIApp, hosts: frozenset[str], origins: frozenset[str]) -> None:
        self.app = app
        self.hosts = hosts
        self.origins = origins

    async def __call__(self, scope: Connection, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # lifespan: the SDK's session manager starts there
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        try:
            check_origin(headers.get("host"), headers.get("origin"), self.hosts, self.origins)
            if scope["method"] != "POST":
                await self.app(scope, receive, send)
                return
            body = await _read_body(headers, receive)
            if body is None:  # the client left
                return
            parse_json(body)  # what the SDK's parser cannot read ends here, not in a 500
        except BadRequest as exc:
            message = one_line(f"{exc} ({exc.action})" if exc.action else str(exc))
            code = _PARSE_ERROR if exc.status == 400 else _INVALID_REQUEST
            error = {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}
            await JSONResponse(error, exc.status)(scope, receive, send)
            return
        await self.app(scope, _replay(body, receive), send)


async def _read_body(headers: Headers, receive: Receive) -> bytes | None:
    """The whole request body, at most the SDK's limit (raises :class:`BadRequest`, 413)."""
    too_big = BadRequest(413, f"request body over {DEFAULT_MAX_REQUEST_BODY_SIZE} bytes")
    length = headers.get("content-length", "")
    if length.isascii() and length.isdigit() and int(length) > DEFAULT_MAX_REQUEST_BODY_SIZE:
        raise too_big
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > DEFAULT_MAX_REQUEST_BODY_SIZE:
            raise too_big
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


def _replay(body: bytes, receive: Receive) -> Receive:
    """``receive`` that first gives the body already read, then what the client sends next."""
    given = False

    async def replay() -> Message:
        nonlocal given
        if given:
            return await receive()
        given = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replay


class _Server(FastMCP):
    """FastMCP whose tools take the LangChain tools' arguments and say each problem in one line.

    Each tool's schema is its model of :mod:`..analysis.tool_args` (``arguments``),
    shown as it is and checked here, so that a model's call means the same on both
    faces; the SDK's own model of a tool's function is one field, that model. The
    SDK ignores arguments a tool does not take and answers pydantic's own text
    (lines per error, with URLs); ``serve`` refuses the first and words the second.
    Its HTTP app has the :class:`_Guard` in front.
    """

    guard: tuple[frozenset[str], frozenset[str]] = (frozenset(), frozenset())
    """The Host names and the Origins answered over HTTP."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.arguments: dict[str, type[BaseModel]] = {}
        """Each tool's arguments."""

    def add(
        self,
        fn: Callable[[Any], dict[str, Any]],
        name: str,
        model: type[BaseModel],
        annotations: ToolAnnotations,
    ) -> None:
        """Offer ``fn`` (called with the model of the arguments) as the tool ``name``."""
        self.add_tool(fn, name=name, description=fn.__doc__, annotations=annotations)
        self.arguments[name] = model

    def streamable_http_app(self) -> Starlette:
        """The SDK's app behind the guard, its failures logged in one line."""
        for name in _HTTP_LOGGERS:
            logger = logging.getLogger(name)
            if not any(isinstance(f, _OneLine) for f in logger.filters):
                logger.addFilter(_OneLine())
        app = super().streamable_http_app()
        app.add_middleware(_Guard, hosts=self.guard[0], origins=self.guard[1])
        return app

    def sse_app(self, mount_path: str | None = None) -> Starlette:
        """The SDK's SSE app (the command line serves streamable HTTP) behind the guard too."""
        app = super().sse_app(mount_path)
        app.add_middleware(_Guard, hosts=self.guard[0], origins=self.guard[1])
        return app

    async def list_tools(self) -> list[Tool]:
        """The tools, each with its arguments' schema (closed to other arguments)."""
        tools = await super().list_tools()
        for tool in tools:
            tool.inputSchema = self.arguments[tool.name].model_json_schema()
        return tools

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> Any:
        """Call a tool; any failure is a :class:`ToolError` of one line per problem."""
        model = self.arguments.get(name)
        if model is not None:
            try:
                arguments = {"args": model.model_validate(arguments)}
            except ValidationError as exc:
                errors = argument_errors(exc.errors(include_url=False), RENAMED)
                raise ToolError(_lines(name, errors)) from None
        try:
            return await super().call_tool(name, arguments)
        except ToolError as exc:
            raise ToolError(_failure(name, exc)) from None


def _failure(tool: str, exc: ToolError) -> str:
    """What went wrong in a call, without the SDK's wrapping (``Error executing tool``)."""
    cause = exc.__cause__
    if cause is None:  # the SDK's own refusal (an unknown tool)
        return one_line(str(exc))
    if isinstance(cause, EnhancedMemoryError):
        return _lines(tool, [cause])
    return _lines(tool, [f"{type(cause).__name__}: {cause}"])


def _lines(tool: str, problems: Sequence[object]) -> str:
    return "\n".join(one_line(f"{tool}: {problem}") for problem in problems)


def build_server(
    engine: Searcher,
    *,
    allow_write: bool = False,
    now: datetime | None = None,
    host: str = "127.0.0.1",
    port: int = 8766,
    allow_hosts: Iterable[str] = (),
) -> FastMCP:
    """An MCP server over one engine.

    Args:
        engine: The workspace's engine (the lead's resident engine can be passed here).
        allow_write: Offer ``memory_append`` and ``memory_forget``.
        now: Fixed clock for searches and "today" (replays, tests); default the real one.
        host: Where streamable HTTP binds (loopback unless told otherwise).
        port: Its port.
        allow_hosts: Other names clients reach it by (``Host``; their origins on ``port``).

    Raises:
        ValueError: ``host`` or an ``allow_hosts`` value is not a host name.
    """
    hosts = allowed_hosts(host, allow_hosts)
    server = _Server(
        SERVER_NAME,
        instructions=(
            "Long-term memory of this agent: markdown notes (MEMORY.md, memory/YYYY-MM-DD.md, "
            "topic files). Call memory_search before answering about prior work, decisions, "
            "dates, people or preferences; cite results as path#Lx-Ly; read more with memory_get."
        ),
        host=host,
        port=port,
        log_level="WARNING",
        # The guard checks Host and Origin, exactly; the SDK's check would take any port.
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    server.guard = (hosts, allowed_origins(hosts, port))
    # FastMCP takes no version, and its server would report the MCP SDK's as its own.
    server._mcp_server.version = __version__

    scoped = bool(engine.scopes)

    def memory_search(args: MemorySearchInput) -> dict[str, Any]:
        """Search the agent's memory (hybrid keywords + vectors, date-aware).

        Returns OpenClaw's memory_search JSON: results with path, startLine, endLine,
        score (0..1, the chance of answering), snippet and citation (and scope).
        """
        body = {"query": args.query, "k": args.max_results, "min_score": args.min_score}
        body |= {"corpus": args.corpus, "since": args.since, "until": args.until}
        body |= {"path": args.path, "kind": args.kind}
        request = SearchRequest.from_body(body, now=now)
        return tool_json.search(narrowed(engine, getattr(args, "scope", None)), request)[1]

    def memory_get(args: MemoryGetInput) -> dict[str, Any]:
        """Read lines of a memory file (OpenClaw's memory_get: text, truncated, nextFrom)."""
        check_corpus(args.corpus)
        target = one_scope(engine, getattr(args, "scope", None))
        return tool_json.read(target, args.path, args.from_line, args.lines)

    search_model = MemorySearchScopedInput if scoped else MemorySearchInput
    server.add(memory_search, "memory_search", search_model, _READ)
    server.add(memory_get, "memory_get", MemoryGetScopedInput if scoped else MemoryGetInput, _READ)
    if allow_write:
        _add_writers(server, engine, now)
    if engine.workspace is not None:  # the tools of one workspace's index
        _add_index_tools(server, engine.workspace_engine(), now, allow_write)
    return server


def _add_writers(server: _Server, engine: Searcher, now: datetime | None) -> None:
    """Offer ``memory_append`` and ``memory_forget`` (each with ``scope`` over scopes)."""
    scoped = bool(engine.scopes)

    def memory_append(args: MemoryAppendInput) -> dict[str, Any]:
        """Remember: append a bullet to today's daily note or a memory file (atomic)."""
        target = one_scope(engine, getattr(args, "scope", None))
        return tool_json.append(target, args.text, section=args.section, file=args.file, now=now)

    model = MemoryAppendScopedInput if scoped else MemoryAppendInput
    server.add(memory_append, "memory_append", model, _WRITE)

    def memory_forget(args: MemoryForgetInput) -> dict[str, Any]:
        """Forget: remove a remembered bullet (path, line) or every line holding a text.

        From the notes and the index; dryRun lists what would go; several
        matches need all=true. Answers {forgotten: [{path, line, text}], dry_run}.
        """
        target = one_scope(engine, getattr(args, "scope", None))
        return tool_json.forget(
            target,
            path=args.path,
            line=args.line,
            match=args.match,
            dry_run=args.dry_run,
            allow_many=args.all_matches,
        )

    forget_model = MemoryForgetScopedInput if scoped else MemoryForgetInput
    server.add(memory_forget, "memory_forget", forget_model, _ERASE)


def _add_index_tools(
    server: _Server, engine: MemorySearch, now: datetime | None, allow_write: bool
) -> None:
    """Offer the tools that read one workspace's index: salience, crossref, status."""

    def memory_salience(args: MemorySalienceInput) -> dict[str, Any]:
        """Which memory files need attention: stale topics, unreviewed daily notes, gaps."""
        return tool_json.salience(engine, args.top, now)

    def memory_crossref(args: MemoryCrossrefInput) -> dict[str, Any]:
        """Cross-references: files and sections related to a file or one search result."""
        return tool_json.related(engine, args.path, line=args.start_line)

    def memory_status(args: MemoryStatusInput) -> dict[str, Any]:
        """The index: files, chunks and share embedded per corpus, stale files, the embedder."""
        return tool_json.status(engine, allow_write=allow_write)

    server.add(memory_salience, "memory_salience", MemorySalienceInput, _READ)
    server.add(memory_crossref, "memory_crossref", MemoryCrossrefInput, _READ)
    server.add(memory_status, "memory_status", MemoryStatusInput, _READ)
