"""The arguments of each memory tool: one schema for the LangChain tools and the MCP server.

A model's prompt written for one face works on the other: both take OpenClaw's
names (``memory_search``'s ``query``, ``maxResults``, ``minScore``;
``memory_get``'s ``path``, ``from``, ``lines``), which agents are trained on,
from these models. Each field's Python name is snake_case and its alias the
name a model sends; only the alias is accepted, and an argument a tool does not
take is refused (``extra="forbid"``): :data:`RENAMED` says which name replaced an
old one.

Values the schema leaves open (``kind``, ``corpus``, the dates) are checked by
:class:`~..core.request.SearchRequest`, so a bad one is refused in the words
every entry point uses.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema, model_validator

from ..core.filters import KIND_SCHEMA
from ..core.text import clean_json

__all__ = [
    "RENAMED",
    "MemoryAppendInput",
    "MemoryAppendScopedInput",
    "MemoryCrossrefInput",
    "MemoryForgetInput",
    "MemoryForgetScopedInput",
    "MemoryGetInput",
    "MemoryGetScopedInput",
    "MemorySalienceInput",
    "MemorySearchInput",
    "MemorySearchScopedInput",
    "MemoryStatusInput",
]

#: Argument names the LangChain tools took before they took OpenClaw's, and the name now.
RENAMED = {"k": "maxResults", "min_score": "minScore", "from_line": "from"}

_CORPUS = "memory (notes), sessions (past conversations) or all (both; the default)."


class _Input(BaseModel):
    """Tool arguments: OpenClaw's names only, anything else refused."""

    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _clean(cls, data: Any) -> Any:
        # A model's half emoji costs that character, not the answer a host must encode.
        return clean_json(data)


class MemorySearchInput(_Input):
    """The arguments of memory_search."""

    query: str = Field(description="What to look for, in natural language; dates allowed.")
    max_results: int = Field(
        6, ge=1, le=100, alias="maxResults", description="How many results to return."
    )
    min_score: float | None = Field(
        None,
        ge=0,
        le=1,
        alias="minScore",
        description="Drop results scoring below this (0..1, the chance of answering).",
    )
    corpus: str = Field("all", description=_CORPUS)
    since: str | None = Field(
        None, description="Only notes from this day on: ISO date or words ('last week', '上个月')."
    )
    until: str | None = Field(None, description="Only notes up to this day: ISO date or words.")
    path: str | None = Field(
        None, description="Only files matching this glob or prefix, e.g. memory/topics/**."
    )
    kind: Annotated[Any, WithJsonSchema(KIND_SCHEMA)] = Field(
        None, description="Only these kinds of file, one or a list: core (MEMORY.md), daily, topic."
    )


class MemorySearchScopedInput(MemorySearchInput):
    """The arguments of memory_search over scopes."""

    scope: str | list[str] | None = Field(
        None, description="The scope(s) to search: a name or a list (default: all of them)."
    )


class MemoryGetInput(_Input):
    """The arguments of memory_get."""

    path: str = Field(description="Memory file path as search shows it: memory/2026-02-08.md")
    from_line: int = Field(1, ge=1, alias="from", description="First line to read (1-based).")
    lines: int | None = Field(None, ge=1, description="How many lines (default: to the end).")
    corpus: str = Field("all", description=_CORPUS)


class MemoryGetScopedInput(MemoryGetInput):
    """The arguments of memory_get over scopes."""

    scope: str | None = Field(
        None, description="The scope the file is in, as search gave it (needed if several)."
    )


class MemorySalienceInput(_Input):
    """The arguments of memory_salience."""

    top: int = Field(3, ge=1, le=50, description="How many files needing attention to list.")


class MemoryCrossrefInput(_Input):
    """The arguments of memory_crossref."""

    path: str | None = Field(
        None, description="A memory file to show links of; omit for the graph overview."
    )
    start_line: int | None = Field(
        None,
        ge=1,
        alias="startLine",
        description="A search result's startLine: only the links of its chunk (with path).",
    )


class MemoryAppendInput(_Input):
    """The arguments of memory_append."""

    text: str = Field(description="What to remember, one fact or decision in plain words.")
    section: str | None = Field(
        None, description="A header to file it under (created once), e.g. 'Decisions'."
    )
    file: str | None = Field(
        None,
        description="A memory file (MEMORY.md or memory/...md) instead of today's daily note.",
    )


class MemoryAppendScopedInput(MemoryAppendInput):
    """The arguments of memory_append over scopes."""

    scope: str | None = Field(None, description="The scope to write to (needed if several).")


class MemoryForgetInput(_Input):
    """The arguments of memory_forget."""

    path: str | None = Field(
        None, description="The memory file (needed with line; with match: only this file)."
    )
    line: int | None = Field(
        None, ge=1, description="A line of path (1-based): its bullet, continuation lines too."
    )
    match: str | None = Field(
        None,
        description="Instead of line: every line holding this text (letter case ignored).",
    )
    dry_run: bool = Field(
        False, alias="dryRun", description="Only list what would be removed; change nothing."
    )
    all_matches: bool = Field(
        False,
        alias="all",
        description="Remove every block the match finds; without it more than one is refused.",
    )


class MemoryForgetScopedInput(MemoryForgetInput):
    """The arguments of memory_forget over scopes."""

    scope: str | None = Field(None, description="The scope to forget in (needed if several).")


class MemoryStatusInput(_Input):
    """The arguments of memory_status: none."""
