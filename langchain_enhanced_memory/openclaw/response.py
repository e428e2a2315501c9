"""OpenClaw's ``memory_search`` JSON: the one builder every entry point prints.

``search --json``, ``search --batch``, ``serve``, the skill scripts and the
``memory_search`` tool's artifact all come from :func:`response_json`, so they
cannot drift apart. The shape is ``schema/memory_search.schema.json``.
"""

from __future__ import annotations

from typing import Any

from ..core.results import Hit, SearchResponse
from ..core.text import snippet

__all__ = ["failure_json", "response_json", "result_row"]


def result_row(hit: Hit, snippet_chars: int) -> dict[str, Any]:
    """One ``memory_search`` result row."""
    return {
        "path": hit.path,
        "startLine": hit.start_line,
        "endLine": hit.end_line,
        "score": hit.score,
        "snippet": snippet(hit.text, snippet_chars),
        "header": hit.header,
        "source": "memory",
    }


def response_json(response: SearchResponse, snippet_chars: int) -> dict[str, Any]:
    """The ``memory_search`` JSON of a response; ``filtered``: how many ``min_score`` removed."""
    out: dict[str, Any] = {
        "results": [result_row(h, snippet_chars) for h in response.hits],
        "provider": response.provider,
        "model": response.model,
        "fallback": response.fallback,
    }
    if response.filtered is not None:
        out["filtered"] = response.filtered
    if response.embedded is not None:
        out["embedded"] = response.embedded
    return out


def failure_json(error: str, action: str = "") -> dict[str, Any]:
    """OpenClaw's ``memory_search`` failure shape."""
    return {"results": [], "disabled": True, "unavailable": True, "error": error, "action": action}
