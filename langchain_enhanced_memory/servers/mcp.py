"""The memory as an MCP server (``enhanced-memory mcp``), on the official SDK's FastMCP.

Tools, each answering the JSON the command line prints (built by
:mod:`..analysis.tool_json`, the builder the LangChain tools use):

- ``memory_search``: OpenClaw's arguments (``query``, ``maxResults``,
  ``minScore``, ``corpus``) plus the filters ``since``, ``until``, ``path``,
  ``kind``; answers ``search --json``.
- ``memory_get``: OpenClaw's ``path``, ``from``, ``lines``; answers ``get --json``.
- ``memory_salience``: ``salience --json``.
- ``memory_related``: cross-references of a file, or of one result
  (``path`` and ``startLine``), or the graph overview.
- ``memory_status``: ``status --json`` (and ``write``).
- ``memory_append``: only with ``allow_write`` (``--allow-write``).

``memory_search``, ``memory_get`` and ``memory_append`` take a ``scope``: on a
server started with scopes (``mcp --scope``), the scope(s) to search (default:
all) or the one to read or write (needed when there are several); on a
single workspace's server any scope is refused. A server over scopes offers
those three and not the tools of one workspace's index (salience, related,
status).

All but ``memory_append`` carry ``readOnlyHint``. Every refusal is a tool
error (``isError``) of one line per problem, ``<tool>: <argument>: <problem>``
in the words ``serve`` and the command line use: a bad or unknown argument
(each tool's schema says ``additionalProperties: false``), a malformed filter,
a refused, missing or unreadable ``memory_get`` path, a refused write. Transports:
stdio (the default) or streamable HTTP bound to 127.0.0.1. Calls run one at a
time on the server's event loop (the engine keeps per-process caches).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any

from mcp.server.fastmcp import FastMCP
from mcp.server.fastmcp.exceptions import ToolError
from mcp.types import Tool, ToolAnnotations
from pydantic import Field, ValidationError, WithJsonSchema

from ..analysis import tool_json
from ..core.errors import EnhancedMemoryError, one_line
from ..core.filters import KIND_SCHEMA
from ..core.request import SearchRequest, argument_errors, check_corpus
from ..core.version import __version__
from ..engine.scoped import ScopedSearch, narrowed, one_scope

if TYPE_CHECKING:
    from ..engine import MemorySearch

__all__ = ["SERVER_NAME", "build_server"]

SERVER_NAME = "enhanced-memory"
_READ = ToolAnnotations(readOnlyHint=True, destructiveHint=False, openWorldHint=False)
_WRITE = ToolAnnotations(
    readOnlyHint=False, destructiveHint=False, idempotentHint=False, openWorldHint=False
)

# Filters and corpus are checked by SearchRequest, not by the schema, so that a bad
# value is a one-line tool error in our words (as on the command line and in serve).
Corpus = Annotated[
    str, Field(description="'memory' (notes), 'sessions' (transcripts) or 'all' (both).")
]
Scope = Annotated[
    str | None, Field(description="The scope to read or write (servers started with scopes).")
]
Scopes = Annotated[
    str | list[str] | None,
    Field(description="Scopes to search: a name or a list (default: all the server's)."),
]
Kinds = Annotated[
    Any,
    WithJsonSchema(KIND_SCHEMA),
    Field(description="Kinds of file: core, daily, topic (one or a list)."),
]


class _Server(FastMCP):
    """FastMCP whose tools refuse unknown arguments and say each problem in one line.

    The SDK ignores arguments a tool does not take and answers pydantic's own text
    (lines per error, with URLs); ``serve`` refuses the first and words the second.
    """

    async def list_tools(self) -> list[Tool]:
        """The tools, each schema closed to other arguments."""
        tools = await super().list_tools()
        for tool in tools:
            tool.inputSchema["additionalProperties"] = False
        return tools

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> Any:
        """Call a tool; any failure is a :class:`ToolError` of one line per problem."""
        schemas = {tool.name: tool.inputSchema for tool in await super().list_tools()}
        known = schemas.get(name, {}).get("properties", {})
        unknown = sorted(arguments.keys() - known.keys()) if name in schemas else []
        if unknown:  # in the words of pydantic's own refusal, as argument_errors says it
            extra = [{"type": "extra_forbidden", "loc": (k,)} for k in unknown]
            raise ToolError(_lines(name, argument_errors(extra)))
        try:
            return await super().call_tool(name, arguments)
        except ToolError as exc:
            raise ToolError(_failure(name, exc)) from None


def _failure(tool: str, exc: ToolError) -> str:
    """What went wrong in a call, without the SDK's wrapping (``Error executing tool``)."""
    cause = exc.__cause__
    if cause is None:  # the SDK's own refusal (an unknown tool)
        return one_line(str(exc))
    if isinstance(cause, ValidationError):
        return _lines(tool, argument_errors(cause.errors(include_url=False)))
    if isinstance(cause, EnhancedMemoryError):
        return _lines(tool, [cause])
    return _lines(tool, [f"{type(cause).__name__}: {cause}"])


def _lines(tool: str, problems: Sequence[object]) -> str:
    return "\n".join(one_line(f"{tool}: {problem}") for problem in problems)


def build_server(
    engine: MemorySearch | ScopedSearch,
    *,
    allow_write: bool = False,
    now: datetime | None = None,
    host: str = "127.0.0.1",
    port: int = 8766,
) -> FastMCP:
    """An MCP server over one engine.

    Args:
        engine: The workspace's engine (the lead's resident engine can be passed here).
        allow_write: Offer ``memory_append``.
        now: Fixed clock for searches and "today" (replays, tests); default the real one.
        host: Where streamable HTTP binds (loopback unless told otherwise).
        port: Its port.
    """
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
    )
    # FastMCP takes no version, and its server would report the MCP SDK's as its own.
    server._mcp_server.version = __version__

    @server.tool(annotations=_READ)
    def memory_search(
        query: Annotated[str, Field(description="What to look for; dates allowed ('last week').")],
        maxResults: Annotated[int, Field(ge=1, le=100, description="How many results.")] = 6,  # noqa: N803
        minScore: Annotated[  # noqa: N803
            float | None, Field(ge=0, le=1, description="Drop results scoring below (0..1).")
        ] = None,
        corpus: Corpus = "all",
        since: Annotated[str | None, Field(description="First day: ISO date or words.")] = None,
        until: Annotated[str | None, Field(description="Last day: ISO date or words.")] = None,
        path: Annotated[str | None, Field(description="Glob or prefix: memory/topics/**")] = None,
        kind: Kinds = None,
        scope: Scopes = None,
    ) -> dict[str, Any]:
        """Search the agent's memory (hybrid keywords + vectors, date-aware).

        Returns OpenClaw's memory_search JSON: results with path, startLine, endLine,
        score (0..1, the chance of answering), snippet and citation (and scope).
        """
        body = {"query": query, "maxResults": maxResults, "minScore": minScore, "corpus": corpus}
        body |= {"since": since, "until": until, "path": path, "kind": kind}
        request = SearchRequest.from_body(body, now=now)
        return tool_json.search(narrowed(engine, scope), request)[1]

    @server.tool(annotations=_READ)
    def memory_get(
        path: Annotated[str, Field(description="A memory file, e.g. memory/2026-02-08.md")],
        from_line: Annotated[
            int, Field(validation_alias="from", ge=1, description="First line (1-based).")
        ] = 1,
        lines: Annotated[int | None, Field(ge=1, description="How many lines.")] = None,
        corpus: Corpus = "all",
        scope: Scope = None,
    ) -> dict[str, Any]:
        """Read lines of a memory file (OpenClaw's memory_get: text, truncated, nextFrom)."""
        check_corpus(corpus)
        return tool_json.read(one_scope(engine, scope), path, from_line, lines)

    if allow_write:

        @server.tool(annotations=_WRITE)
        def memory_append(
            text: Annotated[str, Field(description="What to remember, in plain words.")],
            section: Annotated[
                str | None, Field(description="A header to file it under, e.g. Decisions.")
            ] = None,
            file: Annotated[
                str | None, Field(description="MEMORY.md or memory/...md instead of today's.")
            ] = None,
            scope: Scope = None,
        ) -> dict[str, Any]:
            """Remember: append a bullet to today's daily note or a memory file (atomic)."""
            target = one_scope(engine, scope)
            return tool_json.append(target, text, section=section, file=file, now=now)

    if isinstance(engine, ScopedSearch):  # the tools below read one workspace's index
        return server

    @server.tool(annotations=_READ)
    def memory_salience(
        top: Annotated[int, Field(ge=1, le=50, description="How many files to list.")] = 3,
    ) -> dict[str, Any]:
        """Which memory files need attention: stale topics, unreviewed daily notes, gaps."""
        return tool_json.salience(engine, top, now)

    @server.tool(annotations=_READ)
    def memory_related(
        path: Annotated[str | None, Field(description="A memory file; omit for overview.")] = None,
        startLine: Annotated[  # noqa: N803
            int | None, Field(ge=1, description="A result's startLine: only its chunk's refs.")
        ] = None,
    ) -> dict[str, Any]:
        """Cross-references: files and sections related to a file or one search result."""
        return tool_json.related(engine, path, line=startLine)

    @server.tool(annotations=_READ)
    def memory_status() -> dict[str, Any]:
        """The index: files, chunks and share embedded per corpus, stale files, the embedder."""
        return tool_json.status(engine, allow_write=allow_write)

    return server
