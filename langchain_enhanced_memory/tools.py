"""LangChain tools over one memory workspace: search, get, salience, crossref, status, append.

Each tool's ``args_schema`` comes from :mod:`.analysis.tool_args`, the schema the MCP
server shows too (the same names, OpenClaw's argument names: ``maxResults``,
``minScore``, ``from``), so a prompt written for one face works on the other. All
return ``content_and_artifact``: a compact text an LLM can read and cite
(``memory/2026-02-08.md:7-12``), plus the full JSON (:mod:`.analysis.tool_json`,
the MCP server's builder too) as the ``ToolMessage`` artifact. A refused call (a
path outside the memory, no graph yet, an argument the schema refuses) answers one
line per problem, ``Error: <argument>: <problem>``, never an exception; one that
could not be done (a database down, a role that may not write) answers
``Error: <what failed>; <what to do>`` and its failure JSON (``error``, ``action``);
a search over a scope read before (or copied to this host) answers from that copy,
marked ``stale``.

:func:`create_memory_tools` builds the read tools sharing one engine, plus
``memory_append`` and ``memory_forget`` when ``allow_write=True``.

Threads: every tool is safe to call from many threads at once (an agent's parallel
tool calls): a tool builds its engine once, the engine is thread-safe, and
``memory_append`` holds a file lock on the notes while it writes.
"""

# No ``from __future__ import annotations``: LangChain resolves ``_run``'s type
# hints on every call, and string annotations were compiled again each time
# (a noticeable share of a search).
import threading
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar, Literal

from langchain_core.callbacks import CallbackManagerForToolRun
from langchain_core.embeddings import Embeddings
from langchain_core.tools import BaseTool
from langchain_core.tools.base import ArgsSchema
from pydantic import BaseModel, ConfigDict, PrivateAttr, ValidationError, model_validator

from .analysis import salience, status, tool_json
from .analysis.tool_args import (
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
from .core.errors import (
    CrossrefError,
    EnhancedMemoryError,
    NoMemoryError,
    NoteError,
    RequestError,
    ScopeError,
    WriteError,
    one_line,
)
from .core.request import SearchRequest, argument_errors, check_corpus
from .core.settings import MemorySettings
from .core.text import escape_controls
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
    "MemoryForgetTool",
    "MemoryStatusTool",
    "create_memory_tools",
]


def _refused(exc: ValidationError) -> str:
    errors = argument_errors(exc.errors(include_url=False), RENAMED)
    return "\n".join(f"Error: {e}" for e in errors)


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
        scoped = self.scopes is not None or bool(self.engine and self.engine.scopes)
        if scoped and self.scoped_schema is not None:
            self.args_schema = self.scoped_schema
        return self

    @property
    def tool_call_schema(self) -> ArgsSchema:
        """The arguments a model is shown: the schema itself, in OpenClaw's names (its aliases).

        LangChain's default rebuilds it from the fields' Python names (``max_results``),
        which the schema does not take; the MCP server shows this same schema.
        """
        return self.args_schema or super().tool_call_schema

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
        return self.get_engine().workspace_engine(self.name)

    @staticmethod
    def _error(message: str) -> tuple[str, dict[str, Any]]:
        line = one_line(message)
        return f"Error: {escape_controls(line)}", {"error": line}

    @staticmethod
    def _failed(
        exc: EnhancedMemoryError, artifact: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        """A call that could not be done (the database down or refusing): what failed, what to do.

        ``artifact`` is the tool's failure JSON, holding ``error`` and ``action`` (default: those).
        """
        if artifact is None:
            artifact = {"error": one_line(str(exc)), "action": exc.action}
        then = f"; {exc.action}" if exc.action else ""
        return escape_controls(f"Error: {artifact['error']}{then}"), artifact


# ------------------------------------------------------------------ search
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
        max_results: int = 6,
        min_score: float | None = None,
        corpus: str = "all",
        since: str | None = None,
        until: str | None = None,
        path: str | None = None,
        kind: str | list[str] | None = None,
        scope: str | list[str] | None = None,
        run_manager: CallbackManagerForToolRun | None = None,
    ) -> tuple[str, dict[str, Any]]:
        flt = {"since": since, "until": until, "path": path, "kind": kind, "corpus": corpus}
        try:
            request = SearchRequest.from_body(
                {"query": query, "k": max_results, "min_score": min_score, **flt}, now=self.now
            )
            engine = narrowed(self.get_engine(), scope)
            response, artifact = tool_json.search(engine, request)
        except (RequestError, ScopeError, NoMemoryError) as exc:
            return self._error(str(exc))
        except EnhancedMemoryError as exc:  # the database down with nothing held to answer from
            return self._failed(exc, failure_json(one_line(str(exc)), exc.action))
        return tool_json.search_text(response, query, self.snippet_chars), artifact


# --------------------------------------------------------------------- get
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
        corpus: str = "all",
        scope: str | None = None,
        run_manager: CallbackManagerForToolRun | None = None,
    ) -> tuple[str, dict[str, Any]]:
        try:
            check_corpus(corpus)
            engine = one_scope(self.get_engine(), scope)
            got = tool_json.get(engine, path, from_line, lines)
        except (RequestError, ScopeError) as exc:
            return self._error(str(exc))
        except EnhancedMemoryError as exc:  # the database down or refusing
            failed = get_failure_json(str(path), one_line(str(exc)))
            return self._failed(exc, failed | {"action": exc.action})
        if got.get("disabled"):
            return escape_controls(f"Error: {got['error']}"), got
        if "from" not in got:
            return escape_controls(f"No such memory file: {got['path']} (search first)."), got
        if not got["lines"]:
            return escape_controls(f"{got['path']} is empty."), got
        numbered = "\n".join(
            f"{n:>5}  {line}" for n, line in enumerate(got["text"].split("\n"), got["from"])
        )
        more = (
            f"\n[lines {got['from']}-{got['to']} of {got['totalLines']};"
            f" continue with from={got['to'] + 1}]"
            if got["to"] < got["totalLines"]
            else ""
        )
        # Cleaned as ``get`` prints it: the note's own lines and tabs, no control characters.
        text = f"{got['path']}:{got['from']}-{got['to']}\n{numbered}{more}"
        return escape_controls(text, keep="\n\t"), got


# ---------------------------------------------------------------- salience
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
            result = tool_json.salience(self.workspace_engine(), top, self.now)
        except (ScopeError, NoMemoryError) as exc:
            return self._error(str(exc))
        return salience.format_text(result), result


# ---------------------------------------------------------------- crossref
class MemoryCrossrefTool(_MemoryTool):
    """Cross-references between memory files (built from the index's vectors)."""

    name: str = "memory_crossref"  # the command line's crossref, on MCP too
    description: str = (
        "Show which memory files and sections are related to a file (path=...), or to one "
        "search result (path and its startLine), or, without a path, the most connected "
        "files of the memory."
    )
    args_schema: type[BaseModel] = MemoryCrossrefInput
    build_if_missing: bool = True
    """Build the graph on first use when vectors are available."""

    def _run(
        self,
        path: str | None = None,
        start_line: int | None = None,
        run_manager: CallbackManagerForToolRun | None = None,
    ) -> tuple[str, dict[str, Any]]:
        try:
            engine = self.workspace_engine()
            shown = tool_json.related(engine, path, line=start_line, build=self.build_if_missing)
        except (CrossrefError, NoteError, ScopeError, NoMemoryError) as exc:
            return self._error(str(exc))
        except EnhancedMemoryError as exc:  # building the graph: the embedder or the index failed
            return self._failed(exc)
        if path is None:
            return views.format_summary(shown), shown
        return views.format_show(shown), shown


# ------------------------------------------------------------------ status
class MemoryStatusTool(_MemoryTool):
    """What the memory's index holds: files, chunks, the share embedded, stale files."""

    name: str = "memory_status"
    description: str = (
        "Say what the memory index holds (files, chunks and the share embedded, for notes and "
        "session transcripts), how many files changed since it was indexed, and the embedder."
    )
    args_schema: type[BaseModel] = MemoryStatusInput

    def _run(
        self, run_manager: CallbackManagerForToolRun | None = None
    ) -> tuple[str, dict[str, Any]]:
        try:
            got = status.status(self.workspace_engine())
        except (ScopeError, NoMemoryError) as exc:
            return self._error(str(exc))
        except EnhancedMemoryError as exc:  # the index refused (not ours) or unreadable
            return self._failed(exc)
        # Cleaned as every tool's text: paths and reasons reach the model escaped.
        return escape_controls(status.format_text(got), keep="\n"), got.as_dict()


# ------------------------------------------------------------------ append
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
            return self._failed(exc)
        where = f" under '{done['section']}'" if done["section"] else ""
        into = f"{scope}: " if scope else ""
        return escape_controls(f"Remembered in {into}{done['path']}:{done['line']}{where}."), done


# ------------------------------------------------------------------ forget
class MemoryForgetTool(_MemoryTool):
    """Write memory: remove remembered lines, and their text from the index."""

    name: str = "memory_forget"
    description: str = (
        "Forget something: remove a remembered bullet (path and line, as memory_get numbers "
        "them) or every line holding a text (match), from the notes and the index. Use "
        "dryRun first to see what would go; several matches need all=true."
    )
    args_schema: type[BaseModel] = MemoryForgetInput
    scoped_schema: ClassVar[type[BaseModel] | None] = MemoryForgetScopedInput

    def _run(
        self,
        path: str | None = None,
        line: int | None = None,
        match: str | None = None,
        dry_run: bool = False,
        all_matches: bool = False,
        scope: str | None = None,
        run_manager: CallbackManagerForToolRun | None = None,
    ) -> tuple[str, dict[str, Any]]:
        try:
            engine = one_scope(self.get_engine(), scope)
            done = tool_json.forget(
                engine,
                path=path,
                line=line,
                match=match,
                dry_run=dry_run,
                allow_many=all_matches,
            )
        except (WriteError, ScopeError) as exc:
            return self._error(str(exc))
        into = f"{scope}: " if scope else ""
        verb = "Would forget" if dry_run else "Forgot"
        gone = done["forgotten"]
        if not gone:
            return "Nothing to forget: no line matched.", done
        lines = [f"{verb} {into}{g['path']}:{g['line']}: {g['text']}" for g in gone]
        return escape_controls("\n".join(lines), keep="\n"), done


def create_memory_tools(
    workspace: str | Path | None = None,
    *,
    scopes: dict[str, str | Path | None] | list[str] | None = None,
    database_url: str | None = None,
    read_url: str | None = None,
    pool_size: int | None = None,
    embedder: Literal["auto", "ollama", "local", "none"] = "auto",
    model: str | None = None,
    ollama_url: str | None = None,
    embeddings: Embeddings | None = None,
    settings: MemorySettings | None = None,
    index_path: str | Path | None = None,
    now: datetime | None = None,
    allow_write: bool = False,
) -> list[BaseTool]:
    """The five memory tools sharing one engine (one index, one embedder), and the writer.

    Over ``scopes`` the toolkit is ``memory_search`` and ``memory_get`` (and
    ``memory_append``), each with a ``scope`` argument; salience and
    cross-references read one workspace's index, so they come with a workspace.

    Args:
        workspace: The workspace folder (or give ``scopes``).
        scopes: Scopes searched as one: ``{"NAME[:WEIGHT]": folder or None}`` or
            database scopes' names (see :class:`~.options.MemoryOptions`).
        database_url: PostgreSQL of the database scopes (default:
            ``$ENHANCED_MEMORY_DATABASE_URL``).
        read_url: A streaming replica searches read from (default:
            ``$ENHANCED_MEMORY_READ_URL``).
        pool_size: The most connections to each database server (default:
            ``$ENHANCED_MEMORY_POOL_SIZE``, else 8).
        embedder: ``auto``, ``ollama``, ``local`` or ``none``.
        model: Ollama embedding model (default ``nomic-embed-text``).
        ollama_url: Ollama's base URL.
        embeddings: Any LangChain embeddings; overrides ``embedder``.
        settings: Search, log and graph settings.
        index_path: Where the index lives.
        now: Fixed clock for search dates, salience ages and "today" (default: real time).
        allow_write: Add ``memory_append`` and ``memory_forget`` (off: many users want
            read-only memory).

    Raises:
        IndexUnavailableError: ``workspace`` is not a folder.
        ScopeError: A scope's folder is not a folder, or a bad scope.
        DatabaseError: The database of the scopes cannot be reached.
    """
    settings = settings or MemorySettings()
    engine = MemoryOptions(
        workspace=workspace,
        scopes=scopes,
        database_url=database_url,
        read_url=read_url,
        pool_size=pool_size,
        embedder=embedder,
        model=model,
        ollama_url=ollama_url,
        embeddings=embeddings,
        settings=settings,
        index_path=index_path,
    ).build_search()
    common: dict[str, Any] = {"engine": engine, "settings": settings}
    tools: list[BaseTool] = [MemorySearchTool(now=now, **common), MemoryGetTool(**common)]
    if engine.workspace is not None:  # the tools of one workspace's index
        tools += [MemorySalienceTool(now=now, **common), MemoryCrossrefTool(**common)]
        tools.append(MemoryStatusTool(**common))
    if allow_write:
        tools.append(MemoryAppendTool(now=now, **common))
        tools.append(MemoryForgetTool(**common))
    return tools
