"""Memory files by path: read lines of one, like OpenClaw's ``memory_get``, and nothing else.

An agent passes a path it saw in search results; the path comes from a model,
so it is treated as hostile. Refused with a one-line :class:`NoteError`:
empty paths, NUL or other control characters, absolute paths (POSIX, Windows
drive or UNC), any ``..`` component, anything that is not ``.md``, symlinks
whose target lies outside the workspace's places (the workspace, the folder a
symlinked ``memory/`` leads to, the files its top-level links lead to: see
:class:`.workspace.Places`), and files the workspace's discovery does not list
(hidden folders, the index folder, files outside ``memory/`` that are not core
files). Only a file discovery lists is ever opened, after its resolved path is
checked again to lie in those places.

A session transcript (``sessions/<id>.jsonl``, a path search results gave) is
confined the same way, and read as its turns: each message line of the range
as ``speaker: text`` (the lines that hold no turn are left out), its line
numbers the JSONL file's.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from ..core.errors import MissingNoteError, NoteError, shown
from ..core.settings import MemorySettings
from ..core.transcripts import TRANSCRIPT_SUFFIX, MalformedLine, parse_turn
from .discovery import discover
from .reading import MAX_TRANSCRIPT_BYTES, UnreadableFileError, read_blocks, read_lines
from .workspace import places

__all__ = [
    "MAX_GET_LINES",
    "MemoryLines",
    "NoteError",
    "get_lines",
    "normalize_path",
    "check_range",
    "sliced",
]

#: Most lines one call returns; the answer says where to continue.
MAX_GET_LINES = 400

_DRIVE = re.compile(r"^[A-Za-z]:")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


@dataclass
class MemoryLines:
    """Lines ``from_line``..``to_line`` (1-based, inclusive) of a memory file."""

    path: str
    from_line: int
    to_line: int
    total_lines: int
    text: str
    truncated: bool


def normalize_path(path: str, *, transcripts: bool = False) -> str:
    """Validate an agent-supplied path and return it workspace-relative with ``/``.

    ``transcripts``: a session transcript (``.jsonl``) is acceptable too.

    Raises:
        NoteError: The path is refused (see the module doc).
    """
    if not isinstance(path, str) or not path.strip():
        raise NoteError("give the path of a memory file, e.g. memory/2026-02-08.md")
    if "\x00" in path:
        raise NoteError("refused: the path contains a NUL byte")
    if _CONTROL.search(path):
        raise NoteError("refused: the path contains control characters")
    raw = path.strip()
    if raw.startswith(("/", "\\", "~")) or _DRIVE.match(raw):
        raise NoteError(
            f"refused: {raw!r} is absolute; give a path relative to the workspace"
            " (e.g. memory/2026-02-08.md)"
        )
    parts = [p for p in re.split(r"[/\\]+", raw) if p not in ("", ".")]
    if ".." in parts:
        raise NoteError(f"refused: {raw!r} leaves the workspace ('..' is not allowed)")
    if not parts:
        raise NoteError("give the path of a memory file, e.g. memory/2026-02-08.md")
    rel = str(PurePosixPath(*parts))
    if rel.lower().endswith(".md") or (transcripts and rel.endswith(TRANSCRIPT_SUFFIX)):
        return rel
    if transcripts:
        raise NoteError(f"refused: {rel} is not a markdown memory file (.md) or a transcript")
    raise NoteError(f"refused: {rel} is not a markdown memory file (.md)")


def get_lines(
    workspace: str | Path,
    path: str,
    from_line: int = 1,
    lines: int | None = None,
    settings: MemorySettings | None = None,
) -> MemoryLines:
    """Read ``lines`` lines of a memory file starting at ``from_line``.

    Args:
        workspace: The workspace root.
        path: Workspace-relative path of a memory file (as search results print it).
        from_line: First line, 1-based.
        lines: How many lines (default: to the end, at most :data:`MAX_GET_LINES`).
        settings: Discovery settings (which files are memory files).

    Raises:
        MissingNoteError: No such memory file (the path itself is acceptable).
        NoteError: Refused path, bad range or unreadable file.
    """
    rel = normalize_path(path, transcripts=True)
    check_range(from_line, lines)
    settings = settings or MemorySettings()
    transcript = rel.endswith(TRANSCRIPT_SUFFIX)
    where = places(workspace, warn=False, settings=settings if transcript else None)
    candidate = where.root / rel
    try:  # a name the file system refuses (too long) is an OSError, not a missing file
        if candidate.is_symlink() and not where.holds(candidate):
            raise NoteError(f"refused: {rel} is a symlink leading outside the workspace")
        exists = candidate.exists()
    except OSError as exc:
        raise NoteError(f"refused: {shown(rel)} cannot be read ({exc.strerror})") from None
    files = {f.path: f for f in discover(where.root, settings, warn=False, transcripts=transcript)}
    found = files.get(rel)
    if found is None:
        if exists:
            raise NoteError(f"refused: {rel} is not one of the workspace's memory files")
        raise MissingNoteError(f"no such memory file: {rel}", path=rel)
    real = found.abs_path.resolve()
    if not where.holds(real):  # changed under us since discovery
        raise NoteError(f"refused: {rel} leads outside the workspace")
    try:
        text_lines = _turn_lines(real, settings) if transcript else read_lines(real)
    except UnreadableFileError as exc:
        raise NoteError(f"cannot read {exc.named(rel)}") from None
    return sliced(rel, text_lines, from_line, lines)


def check_range(from_line: int, lines: int | None) -> None:
    """Refuse a first line below 1 or a count below 1 (:class:`NoteError`)."""
    if from_line < 1:
        raise NoteError(f"from must be 1 or more, got {from_line}")
    if lines is not None and lines < 1:
        raise NoteError(f"lines must be 1 or more, got {lines}")


def sliced(
    rel: str, text_lines: Sequence[str | None], from_line: int, lines: int | None
) -> MemoryLines:
    """``lines`` lines of a note's ``text_lines`` from ``from_line`` (``memory_get``'s answer).

    Raises:
        NoteError: A bad range.
    """
    check_range(from_line, lines)
    total = len(text_lines)
    if total == 0:
        return MemoryLines(rel, 1, 0, 0, "", False)
    if from_line > total:
        raise NoteError(f"{rel} has {total} lines; from={from_line} is past the end")
    want = MAX_GET_LINES if lines is None else min(lines, MAX_GET_LINES)
    end = min(total, from_line + want - 1)
    return MemoryLines(
        path=rel,
        from_line=from_line,
        to_line=end,
        total_lines=total,
        text="\n".join(s for s in text_lines[from_line - 1 : end] if s is not None),
        truncated=end < total and (lines is None or lines > want),
    )


def _turn_lines(path: Path, settings: MemorySettings) -> list[str | None]:
    """Each line of a transcript as its turn (``speaker: text``), None for a line with none."""
    out: list[str | None] = []
    for first, _, block in read_blocks(path, max_bytes=MAX_TRANSCRIPT_BYTES, sniff=False):
        for i, raw in enumerate(block, first + 1):
            try:
                turn = parse_turn(raw, i, settings.transcripts.session_extras)
            except MalformedLine:
                turn = None
            out.append(None if turn is None else turn.render())
    return out
