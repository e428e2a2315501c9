"""OpenClaw's ``memory_search`` and ``memory_get`` JSON: the one builder every entry point prints.

``search --json``, ``search --batch``, ``serve``, the skill scripts, the MCP
server and the ``memory_search`` tool's artifact all come from
:func:`response_json`; ``get --json``, the MCP server and the ``memory_get``
tool from :func:`get_json`; so they cannot drift apart. The shapes are
``schema/memory_search.schema.json`` and ``schema/memory_get.schema.json``:
OpenClaw's ``memory-core`` contract (``citation``, ``vectorScore``/``textScore``,
``corpus``, ``citations``, ``mode``, ``debug``) plus our ``header`` and extras.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..core.results import Hit, SearchResponse
from ..core.text import snippet
from ..core.transcripts import session_id, transcript_time

if TYPE_CHECKING:
    from ..store.notes import MemoryLines

__all__ = [
    "BACKEND",
    "citation",
    "corpus",
    "failure_json",
    "get_failure_json",
    "get_json",
    "response_json",
    "result_row",
]

#: ``debug.backend`` of every answer.
BACKEND = "enhanced-memory"


def corpus(hit: Hit) -> str:
    """OpenClaw's ``source``/``corpus`` of a hit: ``sessions`` for a transcript, else ``memory``."""
    return "sessions" if hit.kind == "session" else "memory"


def citation(path: str, start: int, end: int) -> str:
    """OpenClaw's citation of a line range: ``Source: memory/2026-02-08.md#L7-L12``."""
    return f"Source: {path}#L{start}" + (f"-L{end}" if end != start else "")


def result_row(hit: Hit, snippet_chars: int, mode: str = "keyword") -> dict[str, Any]:
    """One ``memory_search`` result row (``vectorScore`` only when a query vector was used)."""
    row: dict[str, Any] = {
        "path": hit.path,
        "startLine": hit.start_line,
        "endLine": hit.end_line,
        "score": hit.score,
        "snippet": snippet(hit.text, snippet_chars),
        "header": hit.header,
        "source": corpus(hit),
        "corpus": corpus(hit),
        "citation": citation(hit.path, hit.start_line, hit.end_line),
        "textScore": round(hit.signals.get("keyword", 0.0), 4),
    }
    if mode == "hybrid":
        row["vectorScore"] = round(hit.signals.get("cosine", 0.0), 4)
    if hit.scope is not None:  # a search over scopes: which one it came from
        row["scope"] = hit.scope
    if hit.kind == "session":
        row["sessionId"] = session_id(hit.path)
        when = transcript_time(hit.header)
        if when is not None:
            row["timestamp"] = when
    return row


def response_json(response: SearchResponse, snippet_chars: int) -> dict[str, Any]:
    """The ``memory_search`` JSON of a response; ``filtered``: how many ``min_score`` removed."""
    out: dict[str, Any] = {
        "results": [result_row(h, snippet_chars, response.mode) for h in response.hits],
        "provider": response.provider,
        "model": response.model,
        "fallback": response.fallback,
        "citations": "on",
        "mode": response.mode,
        "debug": {
            "backend": BACKEND,
            "effectiveMode": response.mode,
            "fallback": response.fallback,
            "searchMs": response.timings.get("searchMs", 0.0),
            "hits": len(response.hits),
            "timings": response.timings,
            "dates": response.temporal_dates,
        },
    }
    if response.filtered is not None:
        out["filtered"] = response.filtered
    if response.embedded is not None:
        out["embedded"] = response.embedded
    if response.filter_note:
        out["warning"] = response.filter_note
    if response.stale:  # a database unreachable: answered from this host's older copy
        out["stale"] = True
        out["staleScopes"] = response.stale
    return out


def failure_json(error: str, action: str = "") -> dict[str, Any]:
    """OpenClaw's ``memory_search`` failure shape."""
    return {
        "results": [],
        "disabled": True,
        "unavailable": True,
        "error": error,
        "warning": error,
        "action": action,
        "debug": {"backend": BACKEND, "effectiveMode": "unavailable", "fallback": None},
    }


def get_json(got: MemoryLines) -> dict[str, Any]:
    """OpenClaw's ``memory_get`` answer: ``{text, path, from, lines, truncated, nextFrom?}``.

    ``lines`` is how many lines ``text`` holds; ``nextFrom`` (present when more was
    cut than asked for) is where to continue. ``to`` and ``totalLines`` are ours.
    """
    count = got.to_line - got.from_line + 1 if got.total_lines else 0
    out: dict[str, Any] = {
        "text": got.text,
        "path": got.path,
        "from": got.from_line,
        "lines": count,
        "to": got.to_line,
        "totalLines": got.total_lines,
        "truncated": got.truncated,
    }
    if got.truncated:
        out["nextFrom"] = got.to_line + 1
    return out


def get_failure_json(path: str, error: str, *, missing: bool = False) -> dict[str, Any]:
    """``memory_get`` for a missing file (``{text: "", path}``) or a refusal (``disabled``)."""
    if missing:
        return {"text": "", "path": path}
    return {"path": path, "text": "", "disabled": True, "error": error}
