"""What each memory tool answers, as JSON: one builder for the LangChain tools and the MCP server.

``memory_search`` and ``memory_get`` are OpenClaw's shapes
(:mod:`..openclaw.response`, the same the command line prints; :func:`search_text`
is the search's text a LangChain tool's model reads);
``memory_salience`` is ``salience --json``; ``memory_crossref`` is ``crossref
show --json`` (or the graph overview without a path); ``memory_status`` the
index's state; ``memory_append`` where the new bullet landed;
``memory_forget`` what was removed. Refusals raise
:class:`~..core.errors.EnhancedMemoryError` except where OpenClaw answers a
shape instead (a missing or refused ``memory_get``: :func:`get`; :func:`read`
raises, for the MCP server, whose refusals are tool errors).
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..core.errors import MAX_MESSAGE_CHARS, MissingNoteError, NoteError, one_line, shown
from ..core.request import SearchRequest
from ..core.text import escape_controls
from ..openclaw.response import citation, get_failure_json, get_json, response_json
from ..store import notes
from . import salience as salience_mod
from . import status as status_mod

if TYPE_CHECKING:
    from ..core.results import SearchResponse
    from ..engine import MemorySearch
    from ..engine.run import SearchEngine
    from ..engine.scoped import ScopeSearcher

__all__ = [
    "append",
    "forget",
    "get",
    "read",
    "related",
    "salience",
    "search",
    "search_text",
    "status",
]


def search(engine: ScopeSearcher, request: SearchRequest) -> tuple[SearchResponse, dict[str, Any]]:
    """Run a search: the response and its ``memory_search`` JSON (each row with ``related``)."""
    response = engine.run(request)
    doc = response_json(response, engine.settings.output.snippet_chars)
    for hit, row in zip(response.hits, doc["results"], strict=True):
        row["related"] = hit.related
    return response, doc


def search_text(response: SearchResponse, query: str, snippet_chars: int) -> str:
    """``memory_search``'s text for an LLM: a cited block per hit, what was stale, or why none.

    Cleaned as the terminal's text is: a note's escape sequences or bidirectional
    overrides must not reach the model as they are.
    """
    blocks = []
    for n, h in enumerate(response.hits, 1):
        body = " ".join(h.text.split())
        if len(body) > snippet_chars:
            body = body[:snippet_chars] + "..."
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
        return escape_controls(f"{stale}No memory matches {shown(query)}{why}.")
    return escape_controls(stale + "\n\n".join(blocks), keep="\n")


def read(engine: SearchEngine, path: str, from_line: int = 1, lines: int | None = None) -> dict:
    """OpenClaw's ``memory_get`` answer for lines that could be read.

    ``engine``: a workspace's engine, or one scope's (:func:`~..engine.scoped.one_scope`).

    Raises:
        MissingNoteError: No such memory file.
        NoteError: A refused path or range, or an unreadable file.
    """
    return get_json(engine.read(path, from_line, lines))


def get(engine: SearchEngine, path: str, from_line: int = 1, lines: int | None = None) -> dict:
    """OpenClaw's ``memory_get`` answer (a missing file: empty text; a refusal: ``disabled``).

    The path and the message are the caller's own up to a few hundred characters.
    """
    try:
        return read(engine, path, from_line, lines)
    except MissingNoteError as exc:
        return get_failure_json(_echoed(exc.path), one_line(str(exc)), missing=True)
    except NoteError as exc:
        return get_failure_json(_echoed(str(path)), one_line(str(exc)))


def _echoed(path: str) -> str:
    return path if len(path) <= MAX_MESSAGE_CHARS else one_line(path)


def salience(engine: MemorySearch, top: int = 3, now: datetime | None = None) -> dict[str, Any]:
    """Which memory files need attention (``salience --json``).

    Raises:
        NoMemoryError: The workspace holds no memory.
    """
    engine.require_memory()
    return salience_mod.compute(engine.workspace, engine.settings, now=now, top=top)


def related(
    engine: MemorySearch,
    path: str | None = None,
    *,
    line: int | None = None,
    build: bool = True,
) -> dict[str, Any]:
    """Cross-references of ``path`` (``crossref show``), of one result, or the graph overview.

    Args:
        engine: The engine whose index holds the graph.
        path: A memory file; None for the most connected files.
        line: A line of ``path`` (a result's ``startLine``): only the refs of its chunk.
        build: Build the graph first when there is none (needs an embedder).

    Raises:
        NoMemoryError: The workspace holds no memory (nothing is written there).
        CrossrefError: No graph and it cannot be built.
        NoteError: A refused path.
        EnhancedMemoryError: Building the graph failed (the embedder, or the index's disk).
    """
    engine.require_memory()
    shown = engine.crossref(None if path is None else notes.normalize_path(path), build=build)
    if path is None:
        return shown
    if line is not None:
        shown["outgoing"] = [
            c for c in shown["outgoing"] if _chunk_start(c["chunk"]) <= line <= c["endLine"]
        ]
        starts = {c["chunk"] for c in shown["outgoing"]}
        shown["incoming"] = [r for r in shown["incoming"] if r["target"] in starts]
        shown["line"] = line
    return shown


def _chunk_start(ref: str) -> int:
    return int(ref.rsplit(":", 1)[1])


def status(engine: MemorySearch, *, allow_write: bool = False) -> dict[str, Any]:
    """The index's state (:func:`.status.status`), and whether the tools may write."""
    return status_mod.status(engine).as_dict() | {"write": allow_write}


def append(
    engine: SearchEngine,
    text: str,
    *,
    section: str | None = None,
    file: str | None = None,
    now: datetime | None = None,
) -> dict[str, Any]:
    """Append a bullet (``memory_append``): ``{path, line, created, section, text, citation}``.

    Raises:
        WriteError: A refused or failed write.
    """
    done = engine.remember(text, section=section, file=file, now=now)
    out = done.as_dict()
    out["citation"] = citation(done.path, done.line, done.line + done.text.count("\n"))
    return out


def forget(
    engine: SearchEngine,
    *,
    path: str | None = None,
    line: int | None = None,
    match: str | None = None,
    dry_run: bool = False,
    allow_many: bool = False,
) -> dict[str, Any]:
    """Remove remembered lines (``memory_forget``): ``{forgotten: [{path, line, text}], dry_run}``.

    Raises:
        WriteError: Bad arguments, a refused or missing note, several matches
            without ``allow_many``, or a failed write.
        ScopeError: A database scope with vectors of another model.
    """
    gone = engine.forget(path=path, line=line, match=match, dry_run=dry_run, allow_many=allow_many)
    return {"forgotten": [g.as_dict() for g in gone], "dry_run": dry_run}
