"""LangChain tools over one memory workspace: search, get, salience, cross-references, append.

Each tool is a ``BaseTool`` with a pydantic ``args_schema``; all return
``content_and_artifact``: a compact text an LLM can read and cite
(``memory/2026-02-08.md:7-12``), plus the full JSON as the ``ToolMessage``
artifact for code. Refused or failed calls (a path outside the memory, no graph
yet, an argument the schema refuses or does not know) come back as one line per
problem, ``Error: <argument>: <problem>`` in the words ``serve`` and the MCP
server use, never an exception, quoting at most a short prefix of what was given.
A call that could not be done (a database down, or a role that may not write)
answers ``Error: <what failed>; <what to do>`` and its failure JSON (``error``,
``action``); a search over a scope it has read before answers from that copy
instead, marked ``stale``.

:func:`create_memory_tools` builds the four read tools sharing one search engine
and index, plus ``memory_append`` when ``allow_write=True`` (memory is read-only
unless asked). The JSON each tool returns comes from :mod:`.analysis.tool_json`,
the builder the MCP server uses too.

Threads: every tool is safe to call from many threads at once (an agent's
parallel tool calls): a tool builds its engine once, the engine is thread-safe
(:class:`~.engine.MemorySearch`), and ``memory_append`` holds a file lock on the
notes while it writes.
"""

# No ``from __future__ import annotations``: LangChain resolves ``_run``'s type
# hints on every call, and string annotations were compiled again each time
# (0.2 ms of a 2 ms search).
import threading
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

from langchain_core.callbacks import CallbackManagerForToolRun
from langchain_core.embeddings import Embeddings
from langchain_core.tools import BaseTool
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    WithJsonSchema,
    model_validator,
)

from .analysis import salience, tool_json
from .core.errors import (
    CrossrefError,
    EnhancedMemoryError,
    NoteError,
    RequestError,
    ScopeError,
    WriteError,
    one_line,
    shown,
)
from .core.filters import KIND_SCHEMA
from .core.request import SearchRequest, argument_errors
from .core.settings import MemorySettings
from .engine import MemorySearch
from .engine.scoped import ScopedSearch, narrowed, one_scope
from .graph import views
from .openclaw.response import failure_json, get_failure_json
from .options import MemoryOptions

__all__ = [
    "MemoryAppendTool",
    "MemoryCrossrefTool",
    "MemoryGetTool",
    "MemorySalienceTool",
    "MemorySearchTool",
    "create_memory_tools",
]


def _refused(exc: ValidationError) -> str:
    return "\n".join(f"Error: {e}" for e in argument_errors(exc.errors(include_url=False)))


class _MemoryTool(BaseTool, MemoryOptions):
    """Shared configuration: which workspace or scopes, which embedder, or a ready engine.

    A tool over scopes (``scopes``, or a :class:`~.engine.scoped.ScopedSearch`
    engine) takes a ``scope`` argument: the scopes to search, or the one to read
    or write (needed when there are several).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    engine: MemorySearch | ScopedSearch | None = None
    """A shared engine (see :func:`create_memory_tools`); the other fields then do not count."""
    scoped_schema: ClassVar[type[BaseModel] | None] = None
    """The arguments with ``scope``, for a tool over scopes."""
    response_format: Literal["content", "content_and_artifact"] = "content_and_artifact"
    handle_validation_error: Any = _refused
    """Arguments the schema refuses: one line each, for the model to act on (not raised)."""
    _engine_lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    @model_validator(mode="after")
    def _scope_argument(self) -> "_MemoryTool":
        scoped = self.scopes is not None or isinstance(self.engine, ScopedSearch)
        if scoped and self.scoped_schema is not None:
            self.args_schema = self.scoped_schema
        return self

    def get_engine(self) -> MemorySearch | ScopedSearch:
        """The engine, created on first use (once, when threads call at once)."""
        with self._engine_lock:
            if self.engine is None:
                if self.workspace is None and self.scopes is None:
                    raise ValueError("give the tool a workspace, scopes or an engine")
                self.engine = self.build_search()
            return self.engine

    def workspace_engine(self) -> MemorySearch:
        """The engine of the one workspace a tool of the index (salience, crossref) reads.

        Raises:
            ScopeError: The tool searches scopes.
        """
        engine = self.get_engine()
        if isinstance(engine, ScopedSearch):
            raise ScopeError(f"{self.name} reads one workspace's index, not scopes")
        return engine

    @staticmethod
    def _error(message: str) -> tuple[str, dict[str, Any]]:
        line = one_line(message)
        return f"Error: {line}", {"error": line}

    @staticmethod
    def _failed(exc: EnhancedMemoryError, artifact: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        """A call that could not be done (the database down or refusing): what failed, what to do.

        ``artifact`` is the tool's failure JSON, holding ``error`` and ``action``.
        """
        then = f"; {exc.action}" if exc.action else ""
        return f"Error: {artifact['error']}{then}", artifact


class _Input(BaseModel):
    """Tool arguments: an argument the tool does not take is refused, as in ``serve``."""

    model_config = ConfigDict(extra="forbid")


# ------------------------------------------------------------------ search
class MemorySearchInput(_Input):
    """Arguments of ``memory_search``."""

    query: str = Field(description="What to look for, in natural language; dates allowed.")
    k: int = Field(5, ge=1, le=50, description="How many results to return.")
    min_score: float | None = Field(
        None,
        ge=0,
        le=1,
        description="Drop results scoring below this (0..1, the chance of answering).",
    )
    since: str | None = Field(
        None, description="Only notes from this day on: ISO date or words ('last week', '上个月')."
    )
    until: str | None = Field(None, description="Only notes up to this day: ISO date or words.")
    path: str | None = Field(
        None, description="Only files matching this glob or prefix, e.g. memory/topics/**."
    )
    # Checked by SearchRequest, in the words every entry point uses.
    kind: Annotated[Any, WithJsonSchema(KIND_SCHEMA)] = Field(
        None, description="Only these kinds of file, one or a list: core (MEMORY.md), daily, topic."
    )
    corpus: str | None = Field(
        None, description="memory (notes), sessions (past conversations) or all (default)."
    )


class MemorySearchScopedInput(MemorySearchInput):
    """Arguments of ``memory_search`` over scopes."""

    scope: str | list[str] | None = Field(
        None, description="The scope(s) to search: a name or a list (default: all of them)."
    )


class MemorySearchTool(_MemoryTool):
    """Hybrid, date-aware search over the agent's markdown memory.

    Content: one block per result, ``[n] path:start-end (score) header``
    followed by the snippet and the related chunks from the cross-reference
    graph. Artifact: the OpenClaw ``memory_search`` JSON (``results``,
    ``provider``, ``model``, ``fallback``), each row with ``related`` (and
    ``scope`` over scopes, also before each cited path in the content).
    """

    name: str = "memory_search"
    description: str = (
        "Search the agent's long-term memory (MEMORY.md, daily notes, topic files). "
        "Understands dates like 'yesterday' or 'Feb 8'. Returns cited snippets as "
        "path:startLine-endLine; read more of a file with memory_get."
    )
    args_schema: type[BaseModel] = MemorySearchInput
    scoped_schema: ClassVar[type[BaseModel] | None] = MemorySearchScopedInput
    snippet_chars: int = 400
    now: datetime | None = None
    """Fixed clock for relative dates (tests, replays); default the real clock."""

    def _run(
        self,
        query: str,
        k: int = 5,
        min_score: float | None = None,
        since: str | None = None,
        until: str | None = None,
        path: str | None = None,
        kind: str | list[str] | None = None,
        corpus: str | None = None,
        scope: str | list[str] | None = None,
        run_manager: CallbackManagerForToolRun | None = None,
    ) -> tuple[str, dict[str, Any]]:
        flt = {"since": since, "until": until, "path": path, "kind": kind, "corpus": corpus}
        try:
            request = SearchRequest.from_body(
                {"query": query, "k": k, "min_score": min_score, **flt}, now=self.now
            )
            engine = narrowed(self.get_engine(), scope)
            response, artifact = tool_json.search(engine, request)
        except (RequestError, ScopeError) as exc:
            return self._error(str(exc))
        except EnhancedMemoryError as exc:  # the database down with nothing held to answer from
            return self._failed(exc, failure_json(one_line(str(exc)), exc.action))
        blocks = []
        for n, h in enumerate(response.hits, 1):
            body = " ".join(h.text.split())
            if len(body) > self.snippet_chars:
                body = body[: self.snippet_chars] + "..."
            cite = f"{h.path}:{h.start_line}-{h.end_line}"
            if h.scope is not None:
                cite = f"{h.scope}: {cite}"
            block = f"[{n}] {cite} ({h.score:.2f}) {h.headers or h.header}\n{body}"
            if h.related:
                refs = ", ".join(f"{r['path']}:{r['startLine']}-{r['endLine']}" for r in h.related)
                block += f"\n    related: {refs}"
            blocks.append(block)
        stale = ""
        if response.stale:
            stale = (
                f"(Database unreachable: scope {', '.join(response.stale)} answered from an"
                " older copy; newer notes may be missing.)\n\n"
            )
        if not blocks:
            why = f" ({response.filter_note})" if response.filter_note else ""
            return f"{stale}No memory matches {shown(query)}{why}.", artifact
        return stale + "\n\n".join(blocks), artifact


# --------------------------------------------------------------------- get
class MemoryGetInput(_Input):
    """Arguments of ``memory_get``."""

    path: str = Field(description="Memory file path as search shows it: memory/2026-02-08.md")
    from_line: int = Field(1, ge=1, alias="from", description="First line to read (1-based).")
    lines: int | None = Field(None, ge=1, description="How many lines (default: to the end).")

    model_config = ConfigDict(populate_by_name=True)  # and _Input's extra="forbid"


class MemoryGetScopedInput(MemoryGetInput):
    """Arguments of ``memory_get`` over scopes."""

    scope: str | None = Field(
        None, description="The scope the file is in, as search gave it (needed if several)."
    )


class MemoryGetTool(_MemoryTool):
    """Read lines of one memory file (confined to the workspace's memory files)."""

    name: str = "memory_get"
    description: str = (
        "Read lines of a memory file found by memory_search, e.g. path='memory/2026-02-08.md', "
        "from=12, lines=20. Only the workspace's markdown memory files can be read."
    )
    args_schema: type[BaseModel] = MemoryGetInput
    scoped_schema: ClassVar[type[BaseModel] | None] = MemoryGetScopedInput

    def _run(
        self,
        path: str,
        from_line: int = 1,
        lines: int | None = None,
        scope: str | None = None,
        run_manager: CallbackManagerForToolRun | None = None,
    ) -> tuple[str, dict[str, Any]]:
        try:
            engine = one_scope(self.get_engine(), scope)
            got = tool_json.get(engine, path, from_line, lines)
        except ScopeError as exc:
            return self._error(str(exc))
        except EnhancedMemoryError as exc:  # the database down or refusing
            failed = get_failure_json(str(path), one_line(str(exc)))
            return self._failed(exc, failed | {"action": exc.action})
        if got.get("disabled"):
            return f"Error: {got['error']}", got
        if "from" not in got:
            return f"No such memory file: {got['path']} (search first).", got
        if not got["lines"]:
            return f"{got['path']} is empty.", got
        numbered = "\n".join(
            f"{n:>5}  {line}" for n, line in enumerate(got["text"].split("\n"), got["from"])
        )
        more = (
            f"\n[lines {got['from']}-{got['to']} of {got['totalLines']};"
            f" continue with from={got['to'] + 1}]"
            if got["to"] < got["totalLines"]
            else ""
        )
        return f"{got['path']}:{got['from']}-{got['to']}\n{numbered}{more}", got


# ---------------------------------------------------------------- salience
class MemorySalienceInput(_Input):
    """Arguments of ``memory_salience``."""

    top: int = Field(3, ge=1, le=50, description="How many files needing attention to list.")


class MemorySalienceTool(_MemoryTool):
    """Which memory files need review: stale topics, unreviewed daily notes, search gaps."""

    name: str = "memory_salience"
    description: str = (
        "List the memory files that most need attention (stale topics, daily notes not yet "
        "reviewed into MEMORY.md, files recent searches could not find) with a prompt for each."
    )
    args_schema: type[BaseModel] = MemorySalienceInput
    now: datetime | None = None

    def _run(
        self, top: int = 3, run_manager: CallbackManagerForToolRun | None = None
    ) -> tuple[str, dict[str, Any]]:
        try:
            engine = self.workspace_engine()
        except ScopeError as exc:
            return self._error(str(exc))
        result = tool_json.salience(engine, top, self.now)
        return salience.format_text(result), result


# ---------------------------------------------------------------- crossref
class MemoryCrossrefInput(_Input):
    """Arguments of ``memory_crossref``."""

    path: str | None = Field(
        None,
        description="A memory file to show links of; omit for the graph overview.",
    )


class MemoryCrossrefTool(_MemoryTool):
    """Cross-references between memory files (built from the index's vectors)."""

    name: str = "memory_crossref"
    description: str = (
        "Show which memory files and sections are related to a file (path=...), or, "
        "without a path, the most connected files of the memory."
    )
    args_schema: type[BaseModel] = MemoryCrossrefInput
    build_if_missing: bool = True
    """Build the graph on first use when vectors are available."""

    def _run(
        self, path: str | None = None, run_manager: CallbackManagerForToolRun | None = None
    ) -> tuple[str, dict[str, Any]]:
        try:
            engine = self.workspace_engine()
            shown = tool_json.related(engine, path, build=self.build_if_missing)
        except (CrossrefError, NoteError, ScopeError) as exc:
            return self._error(str(exc))
        if path is None:
            return views.format_summary(shown), shown
        return views.format_show(shown), shown


# ------------------------------------------------------------------ append
class MemoryAppendInput(_Input):
    """Arguments of ``memory_append``."""

    text: str = Field(description="What to remember, one fact or decision in plain words.")
    section: str | None = Field(
        None, description="A header to file it under (created once), e.g. 'Decisions'."
    )
    file: str | None = Field(
        None,
        description="A memory file (MEMORY.md or memory/...md) instead of today's daily note.",
    )


class MemoryAppendScopedInput(MemoryAppendInput):
    """Arguments of ``memory_append`` over scopes."""

    scope: str | None = Field(None, description="The scope to write to (needed if several).")


class MemoryAppendTool(_MemoryTool):
    """Write memory: append a bullet to today's daily note or a memory file (atomic)."""

    name: str = "memory_append"
    description: str = (
        "Remember something: append it as a bullet to today's daily note "
        "(memory/YYYY-MM-DD.md), optionally under a section header, or to a named memory "
        "file (MEMORY.md, memory/topics/x.md). Never edits or removes existing text."
    )
    args_schema: type[BaseModel] = MemoryAppendInput
    scoped_schema: ClassVar[type[BaseModel] | None] = MemoryAppendScopedInput
    now: datetime | None = None
    """Fixed clock for "today" (tests, replays); default the real clock."""

    def _run(
        self,
        text: str,
        section: str | None = None,
        file: str | None = None,
        scope: str | None = None,
        run_manager: CallbackManagerForToolRun | None = None,
    ) -> tuple[str, dict[str, Any]]:
        try:
            engine = one_scope(self.get_engine(), scope)
            done = tool_json.append(engine, text, section=section, file=file, now=self.now)
        except (WriteError, ScopeError) as exc:
            return self._error(str(exc))
        except EnhancedMemoryError as exc:  # the database down, or a role that may not write
            return self._failed(exc, {"error": one_line(str(exc)), "action": exc.action})
        where = f" under '{done['section']}'" if done["section"] else ""
        into = f"{scope}: " if scope else ""
        return f"Remembered in {into}{done['path']}:{done['line']}{where}.", done


def create_memory_tools(
    workspace: str | Path | None = None,
    *,
    scopes: dict[str, str | Path | None] | list[str] | None = None,
    database_url: str | None = None,
    embedder: Literal["auto", "ollama", "local", "none"] = "auto",
    model: str | None = None,
    ollama_url: str | None = None,
    embeddings: Embeddings | None = None,
    settings: MemorySettings | None = None,
    index_path: str | Path | None = None,
    now: datetime | None = None,
    allow_write: bool = False,
) -> list[BaseTool]:
    """The four memory tools sharing one engine (one index, one embedder), and the writer.

    Over ``scopes`` the toolkit is ``memory_search`` and ``memory_get`` (and
    ``memory_append``), each with a ``scope`` argument; salience and
    cross-references read one workspace's index, so they come with a workspace.

    Args:
        workspace: The workspace folder (or give ``scopes``).
        scopes: Scopes searched as one: ``{"NAME[:WEIGHT]": folder or None}`` or
            database scopes' names (see :class:`~.options.MemoryOptions`).
        database_url: PostgreSQL of the database scopes (default:
            ``$ENHANCED_MEMORY_DATABASE_URL``).
        embedder: ``auto``, ``ollama``, ``local`` or ``none``.
        model: Ollama embedding model (default ``nomic-embed-text``).
        ollama_url: Ollama's base URL.
        embeddings: Any LangChain embeddings; overrides ``embedder``.
        settings: Search, log and graph settings.
        index_path: Where the index lives.
        now: Fixed clock for search dates, salience ages and "today" (default: real time).
        allow_write: Add ``memory_append`` (off: many users want read-only memory).
    """
    settings = settings or MemorySettings()
    engine = MemoryOptions(
        workspace=workspace,
        scopes=scopes,
        database_url=database_url,
        embedder=embedder,
        model=model,
        ollama_url=ollama_url,
        embeddings=embeddings,
        settings=settings,
        index_path=index_path,
    ).build_search()
    common: dict[str, Any] = {"engine": engine, "settings": settings}
    tools: list[BaseTool] = [MemorySearchTool(now=now, **common), MemoryGetTool(**common)]
    if isinstance(engine, MemorySearch):
        tools += [MemorySalienceTool(now=now, **common), MemoryCrossrefTool(**common)]
    if allow_write:
        tools.append(MemoryAppendTool(now=now, **common))
    return tools
