"""Forgetting: lines removed from the notes, and every copy of their text from the index.

A forget names one line (``path`` and ``line``: the bullet there, with the
indented continuation lines ``remember`` writes, or the whole bullet a
continuation line belongs to) or a text (every line holding it, letter case
ignored, each as its whole bullet). Notes are rewritten through
:func:`.append.rewrite_note`: under the lock ``remember`` takes, only if the note is
still what was read (else read and matched again), every other byte kept.

Then the workspace's index drops the text (:func:`purge_index`): the notes are
synced again (the other profile's index file too: ``index-original.sqlite``),
query-log entries holding the text are removed (:func:`.logs.forget_queries`),
and the index is compacted (segments and vector files rewritten without dead
rows, SQLite's file rewritten by ``VACUUM``, its WAL truncated), so no byte of
the text is left in ``.enhanced-memory/``.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..core.errors import WriteError
from ..core.settings import MemorySettings
from .append import rewrite_note, target
from .discovery import discover
from .index import MemoryIndex
from .logs import forget_queries
from .reading import split_lines

__all__ = [
    "Forgotten",
    "check_match",
    "edited",
    "forget",
    "forget_lines",
    "line_spans",
    "match_spans",
    "purge_index",
    "purge_workspace",
]

_MAX_MATCH = 1000
_BULLET = re.compile(r"[ \t]*(?:[-*+]|\d{1,9}[.)])(?:[ \t]|$)")


@dataclass(frozen=True)
class Forgotten:
    """Lines removed (or, in a dry run, that would be): ``path``, first ``line`` (1-based), text."""

    path: str
    line: int
    text: str

    def as_dict(self) -> dict[str, Any]:
        """JSON form (``{path, line, text}``)."""
        return asdict(self)


def _continues(line: str) -> bool:
    """A bullet's continuation line: indented, not blank, not a nested bullet."""
    return line[:1] in (" ", "\t") and bool(line.strip()) and not _BULLET.match(line)


def _span(lines: list[str], k: int) -> tuple[int, int]:
    """The block line ``k`` (0-based) belongs to: its bullet and continuation lines."""
    start = k
    if _continues(lines[k]):
        up = k
        while up > 0 and _continues(lines[up - 1]):
            up -= 1
        if up > 0 and _BULLET.match(lines[up - 1]):
            start = up - 1
    end = start + 1
    if _BULLET.match(lines[start]):
        while end < len(lines) and _continues(lines[end]):
            end += 1
    return start, max(end, k + 1)


def line_spans(lines: list[str], line: int) -> list[tuple[int, int]]:
    """The span of 1-based ``line`` of ``lines`` (its whole bullet).

    Raises:
        WriteError: No such line, or a blank one.
    """
    if not 1 <= line <= len(lines):
        raise WriteError(f"line {line} is past the end of the note ({len(lines)} lines)")
    if not lines[line - 1].strip():
        raise WriteError(f"line {line} is blank: nothing to forget")
    return [_span(lines, line - 1)]


def match_spans(lines: list[str], text: str) -> list[tuple[int, int]]:
    """The spans of every line holding ``text`` (letter case ignored), overlaps merged."""
    key = text.casefold()
    spans: list[tuple[int, int]] = []
    for k, line in enumerate(lines):
        if key in line.casefold():
            start, end = _span(lines, k)
            if spans and start < spans[-1][1]:
                spans[-1] = (spans[-1][0], max(end, spans[-1][1]))
            else:
                spans.append((start, end))
    return spans


def edited(old: str, spans: list[tuple[int, int]]) -> str:
    """``old`` without the lines of ``spans`` (0-based, end excluded); every other byte kept."""
    pieces = old.split("\n")
    ends = [p + "\n" for p in pieces[:-1]] + ([pieces[-1]] if pieces[-1] else [])
    drop = {k for start, end in spans for k in range(start, end)}
    return "".join(p for k, p in enumerate(ends) if k not in drop)


def check_match(text: str) -> str:
    """``text`` as a match: one line of 3 to 1000 characters.

    Raises:
        WriteError: Empty, too short, too long or more than one line.
    """
    if not isinstance(text, str) or len(text.strip()) < 3:
        raise WriteError("give a text of at least 3 characters to match")
    if "\n" in text.strip() or "\r" in text.strip():
        raise WriteError("the text to match must be one line")
    if len(text) > _MAX_MATCH:
        raise WriteError(f"the text to match is {len(text)} characters; at most {_MAX_MATCH}")
    return text.strip()


def forget_lines(
    workspace: str | Path,
    *,
    path: str | None = None,
    line: int | None = None,
    match: str | None = None,
    dry_run: bool = False,
    allow_many: bool = False,
    settings: MemorySettings | None = None,
) -> list[Forgotten]:
    """Remove the bullet at ``line`` of ``path``, or every line holding ``match``.

    Args:
        workspace: The workspace root.
        path: The note (``MEMORY.md``, ``memory/...md``); with ``line`` required.
        line: The 1-based line whose bullet goes.
        match: A text: every line holding it goes (letter case ignored).
        dry_run: Only say what would go.
        allow_many: Remove more than one block (else more than one match is refused).
        settings: Which files are notes (default settings).

    Returns:
        What was removed (or would be), note by note, top to bottom.

    Raises:
        WriteError: Bad arguments, a refused or missing note, more than one match
            without ``allow_many``, or a note that kept changing.
    """
    if (line is None) == (match is None):
        raise WriteError("give --line N (with a path) or --match TEXT")
    if line is not None and path is None:
        raise WriteError("--line needs the note's path, e.g. memory/2026-01-05.md")
    key = check_match(match) if match is not None else None
    root = Path(workspace).expanduser()
    if path is not None:
        rels = [target(path)]
    else:
        rels = [f.path for f in discover(root, settings or MemorySettings(), warn=False)]
        rels = [r for r in rels if r == "MEMORY.md" or r.startswith("memory/")]
    found = {rel: _found(root, rel, line, key) for rel in rels}
    blocks = sum(len(spans) for spans, _ in found.values())
    if blocks > 1 and not dry_run and not allow_many:
        raise WriteError(
            f"{blocks} blocks hold the text; nothing was removed",
            "look with --dry-run, then pass --yes to remove them all, or use --line",
        )
    if dry_run:
        return [f for _, gone in found.values() for f in gone]
    out: list[Forgotten] = []
    for rel, (spans, _) in found.items():
        if not spans:
            continue
        result: list[Forgotten] = []

        def edit(old: str, rel: str = rel, result: list[Forgotten] = result) -> str | None:
            lines = split_lines(old)
            spans = line_spans(lines, line) if line is not None else match_spans(lines, key or "")
            if len(spans) > 1 and not allow_many:  # more matched once the lock was held
                raise WriteError(
                    f"{rel} holds {len(spans)} blocks with the text now; nothing was removed",
                    "look with --dry-run, then pass --yes to remove them all",
                )
            result[:] = _removed(rel, lines, spans)
            return edited(old, spans) if spans else None

        rewrite_note(root, rel, edit)
        out += result
    return out


def _found(
    root: Path, rel: str, line: int | None, key: str | None
) -> tuple[list[tuple[int, int]], list[Forgotten]]:
    """The spans a read of the note finds now, and what they hold (no lock: a preview)."""
    real = root / rel
    try:  # a note that is not UTF-8 is refused by the rewrite, if it holds the text
        text = real.read_bytes().decode("utf-8", "replace")
    except FileNotFoundError:
        raise WriteError(f"no such memory file: {rel}") from None
    except OSError as exc:
        raise WriteError(f"cannot read {rel}: {exc.strerror or type(exc).__name__}") from None
    lines = split_lines(text)
    spans = line_spans(lines, line) if line is not None else match_spans(lines, key or "")
    return spans, _removed(rel, lines, spans)


def _removed(rel: str, lines: list[str], spans: list[tuple[int, int]]) -> list[Forgotten]:
    return [Forgotten(rel, start + 1, "\n".join(lines[start:end])) for start, end in spans]


def purge_index(index: MemoryIndex, texts: list[str]) -> None:
    """Drop every copy of ``texts`` (lines forgotten from the notes) from ``index`` and the logs.

    The notes are synced again; query-log entries holding a text (or a query
    a forgotten text holds) are removed; then :meth:`MemoryIndex.compact`
    rewrites segments and vector files without dead rows (the vectors of the
    texts the sync dropped with them) and ``VACUUM``s SQLite.
    """
    index.sync()
    forget_queries(index.workspace, texts)
    index.compact()


def forget(
    workspace: str | Path,
    *,
    path: str | None = None,
    line: int | None = None,
    match: str | None = None,
    dry_run: bool = False,
    allow_many: bool = False,
    settings: MemorySettings | None = None,
    index_path: str | Path | None = None,
) -> list[Forgotten]:
    """:func:`forget_lines`, then :func:`purge_index` of the workspace's index (when it has one).

    Raises:
        WriteError: As :func:`forget_lines`.
    """
    settings = settings or MemorySettings()
    gone = forget_lines(
        workspace,
        path=path,
        line=line,
        match=match,
        dry_run=dry_run,
        allow_many=allow_many,
        settings=settings,
    )
    if gone and not dry_run:
        texts = [g.text for g in gone] + ([check_match(match)] if match is not None else [])
        purge_workspace(workspace, texts, settings, index_path)
    return gone


def purge_workspace(
    workspace: str | Path,
    texts: list[str],
    settings: MemorySettings,
    index_path: str | Path | None = None,
) -> None:
    """:func:`purge_index` of each index file of the workspace (both profiles'), then its logs.

    For text already gone from the notes (lines forgotten, a store item deleted).
    """
    indexes = [MemoryIndex(workspace, settings, index_path)]
    if index_path is None:  # the other profile's index file, beside this one
        other = "default" if settings.chunker.chunking == "original" else "original"
        indexes.append(MemoryIndex(workspace, MemorySettings(profile=other)))
    for index in indexes:
        if index.path.exists():
            purge_index(index, texts)
    forget_queries(Path(workspace).expanduser(), texts)
