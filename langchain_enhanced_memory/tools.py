"""LangChain tools over one memory workspace: search, get, salience and cross-references.

Each tool is a ``BaseTool`` with a pydantic ``args_schema``; all return
``content_and_artifact``: a compact text an LLM can read and cite
(``memory/2026-02-08.md:7-12``), plus the full JSON as the ``ToolMessage``
artifact for code. Refused or failed calls (a path outside the memory, no graph
yet) come back as a one-line error the model can act on, not an exception.

:func:`create_memory_tools` builds the four sharing one search engine and index.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from langchain_core.callbacks import CallbackManagerForToolRun
from langchain_core.embeddings import Embeddings
from langchain_core.tools import BaseTool
from pydantic import BaseModel, ConfigDict, Field

from .analysis import salience
from .core.errors import CrossrefError, NoteError, RequestError
from .core.request import SearchRequest
from .core.settings import MemorySettings
from .engine import EngineConfig, MemorySearch
from .graph import queries, storage, views
from .openclaw.response import response_json
from .store import logs, notes

__all__ = [
    "MemoryCrossrefTool",
    "MemoryGetTool",
    "MemorySalienceTool",
    "MemorySearchTool",
    "create_memory_tools",
]


class _MemoryTool(BaseTool):
    """Shared configuration: which workspace, which embedder, or a ready engine."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    workspace: str | Path | None = None
    """The workspace folder (ignored when ``engine`` is given)."""
    embedder: Literal["auto", "ollama", "local", "none"] = "auto"
    """``auto``, ``ollama``, ``local`` or ``none``."""
    model: str | None = None
    """Ollama embedding model (default ``nomic-embed-text``)."""
    ollama_url: str | None = None
    """Ollama's base URL."""
    embeddings: Embeddings | None = None
    """Any LangChain embeddings; overrides ``embedder``."""
    settings: MemorySettings = Field(default_factory=MemorySettings)
    index_path: str | Path | None = None
    watch: bool = True
    """Learn of edits from file-system events instead of a scan per call."""
    background_embedding: bool = True
    """Embed missing vectors on a thread, answering keyword-only meanwhile."""
    engine: MemorySearch | None = None
    """A shared engine (see :func:`create_memory_tools`)."""
    response_format: Literal["content", "content_and_artifact"] = "content_and_artifact"

    def get_engine(self) -> MemorySearch:
        """The engine, created on first use."""
        if self.engine is None:
            if self.workspace is None:
                raise ValueError("give the tool a workspace or an engine")
            # The tool's fields are the engine's (workspace, settings, embedder, ...).
            self.engine = MemorySearch.from_config(
                EngineConfig.model_validate(self, from_attributes=True)
            )
        return self.engine

    @staticmethod
    def _error(message: str) -> tuple[str, dict[str, Any]]:
        return f"Error: {message}", {"error": message}


# ------------------------------------------------------------------ search
class MemorySearchInput(BaseModel):
    """Arguments of ``memory_search``."""

    query: str = Field(description="What to look for, in natural language; dates allowed.")
    k: int = Field(5, ge=1, le=50, description="How many results to return.")


class MemorySearchTool(_MemoryTool):
    """Hybrid, date-aware search over the agent's markdown memory.

    Content: one block per result, ``[n] path:start-end (score) header``
    followed by the snippet and the related chunks from the cross-reference
    graph. Artifact: the OpenClaw ``memory_search`` JSON (``results``,
    ``provider``, ``model``, ``fallback``), each row with ``related``.
    """

    name: str = "memory_search"
    description: str = (
        "Search the agent's long-term memory (MEMORY.md, daily notes, topic files). "
        "Understands dates like 'yesterday' or 'Feb 8'. Returns cited snippets as "
        "path:startLine-endLine; read more of a file with memory_get."
    )
    args_schema: type[BaseModel] = MemorySearchInput
    snippet_chars: int = 400
    now: datetime | None = None
    """Fixed clock for relative dates (tests, replays); default the real clock."""

    def _run(
        self, query: str, k: int = 5, run_manager: CallbackManagerForToolRun | None = None
    ) -> tuple[str, dict[str, Any]]:
        try:
            request = SearchRequest.parse(query=query, k=k, now=self.now)
        except RequestError as exc:
            return self._error(str(exc))
        engine = self.get_engine()
        response = engine.run(request)
        # The CLI's memory_search JSON, each row with the hit's cross-references added.
        artifact = response_json(response, engine.settings.snippet_chars)
        blocks = []
        for n, (h, row) in enumerate(zip(response.hits, artifact["results"], strict=True), 1):
            row["related"] = h.related
            body = " ".join(h.text.split())
            if len(body) > self.snippet_chars:
                body = body[: self.snippet_chars] + "..."
            cite = f"{h.path}:{h.start_line}-{h.end_line}"
            block = f"[{n}] {cite} ({h.score:.2f}) {h.headers or h.header}\n{body}"
            if h.related:
                refs = ", ".join(f"{r['path']}:{r['startLine']}-{r['endLine']}" for r in h.related)
                block += f"\n    related: {refs}"
            blocks.append(block)
        if not blocks:
            return f"No memory matches {query!r}.", artifact
        return "\n\n".join(blocks), artifact


# --------------------------------------------------------------------- get
class MemoryGetInput(BaseModel):
    """Arguments of ``memory_get``."""

    path: str = Field(description="Memory file path as search shows it: memory/2026-02-08.md")
    from_line: int = Field(1, ge=1, alias="from", description="First line to read (1-based).")
    lines: int | None = Field(None, ge=1, description="How many lines (default: to the end).")

    model_config = ConfigDict(populate_by_name=True)


class MemoryGetTool(_MemoryTool):
    """Read lines of one memory file (confined to the workspace's memory files)."""

    name: str = "memory_get"
    description: str = (
        "Read lines of a memory file found by memory_search, e.g. path='memory/2026-02-08.md', "
        "from=12, lines=20. Only the workspace's markdown memory files can be read."
    )
    args_schema: type[BaseModel] = MemoryGetInput

    def _run(
        self,
        path: str,
        from_line: int = 1,
        lines: int | None = None,
        run_manager: CallbackManagerForToolRun | None = None,
    ) -> tuple[str, dict[str, Any]]:
        engine = self.get_engine()
        try:
            got = notes.get_lines(engine.index.workspace, path, from_line, lines, engine.settings)
        except NoteError as exc:
            return self._error(str(exc))
        logs.record_access(engine.index.workspace, engine.settings, [got.path])
        if got.total_lines == 0:
            return f"{got.path} is empty.", got.as_dict()
        numbered = "\n".join(
            f"{n:>5}  {line}" for n, line in enumerate(got.text.split("\n"), got.from_line)
        )
        more = (
            f"\n[lines {got.from_line}-{got.to_line} of {got.total_lines};"
            f" continue with from={got.to_line + 1}]"
            if got.to_line < got.total_lines
            else ""
        )
        return f"{got.path}:{got.from_line}-{got.to_line}\n{numbered}{more}", got.as_dict()


# ---------------------------------------------------------------- salience
class MemorySalienceInput(BaseModel):
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
        engine = self.get_engine()
        result = salience.compute(engine.index.workspace, engine.settings, now=self.now, top=top)
        return salience.format_text(result), result


# ---------------------------------------------------------------- crossref
class MemoryCrossrefInput(BaseModel):
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
        engine = self.get_engine()
        index = engine.index
        try:
            try:
                summary = queries.graph_summary(index)
            except CrossrefError:
                if not self.build_if_missing:
                    raise
                engine.update_index()
                storage.build(index, engine.model_id, engine.settings)
                summary = queries.graph_summary(index)
            if path is None:
                return views.format_summary(summary), summary
            shown = queries.show(index, notes.normalize_path(path))
        except (CrossrefError, NoteError) as exc:
            return self._error(str(exc))
        return views.format_show(shown), shown


def create_memory_tools(
    workspace: str | Path,
    *,
    embedder: Literal["auto", "ollama", "local", "none"] = "auto",
    model: str | None = None,
    ollama_url: str | None = None,
    embeddings: Embeddings | None = None,
    settings: MemorySettings | None = None,
    index_path: str | Path | None = None,
    now: datetime | None = None,
) -> list[BaseTool]:
    """The four memory tools sharing one engine (one index, one embedder).

    Args:
        workspace: The workspace folder.
        embedder: ``auto``, ``ollama``, ``local`` or ``none``.
        model: Ollama embedding model (default ``nomic-embed-text``).
        ollama_url: Ollama's base URL.
        embeddings: Any LangChain embeddings; overrides ``embedder``.
        settings: Search, log and graph settings.
        index_path: Where the index lives.
        now: Fixed clock for search dates and salience ages (default: real time).
    """
    settings = settings or MemorySettings()
    engine = MemorySearch.from_config(
        EngineConfig(
            workspace=Path(workspace),
            settings=settings,
            embedder=embedder,
            model=model,
            ollama_url=ollama_url,
            embeddings=embeddings,
            index_path=index_path,
            watch=True,
            background_embedding=True,
        )
    )
    common: dict[str, Any] = {"engine": engine, "settings": settings}
    return [
        MemorySearchTool(now=now, **common),
        MemoryGetTool(**common),
        MemorySalienceTool(now=now, **common),
        MemoryCrossrefTool(**common),
    ]
