"""Notes kept in the database: a database-backed scope's appends, and ``get``/``export`` of any.

An append runs in one transaction: the scope's row and the note's row locked
(``SELECT ... FOR UPDATE``, the note created first when new), the bullet placed
by the local store's own placement (:func:`..append.placed`), and the note indexed
as the local store indexes it: written to a private temporary workspace,
synced and embedded by :class:`..index.MemoryIndex` with the caller's
embedder, its rows taken as one segment. Concurrent writers of one scope take
turns on the row lock: none is lost, none interleaved, and a writer killed
before its commit leaves nothing.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ...core.errors import MissingNoteError, NoteError, ScopeError, WriteError
from ...core.settings import MemorySettings
from ..append import AppendResult, Planned, placed, target
from ..forget import Forgotten, edited, line_spans, match_spans
from ..index import MemoryIndex
from ..notes import MemoryLines, normalize_path, sliced
from ..reading import split_lines
from ..sync import chunker_signature
from ..upkeep import embed_missing
from .publish import Fetch, lock_scope, name_files, purge, store, tidy
from .segments import Segment, from_snapshot

if TYPE_CHECKING:
    import psycopg

__all__ = ["Embedding", "append_note", "export_notes", "forget_note", "read_note"]


@dataclass(frozen=True)
class Embedding:
    """The embedder a write indexes with: its model id and a function of texts to vectors."""

    model: str
    embed: Callable[[list[str]], np.ndarray]


def append_note(
    conn: psycopg.Connection,
    scope: str,
    todo: Planned,
    settings: MemorySettings,
    embedding: Embedding | None,
    fetch: Fetch,
) -> tuple[AppendResult, int]:
    """Append ``todo``'s bullet to its note of database-backed ``scope`` (in one transaction).

    Returns:
        Where it landed, and the scope's new generation.

    Raises:
        ScopeError: The scope is folder-backed, or holds vectors of another model.
    """
    model = embedding.model if embedding else None
    chunker = chunker_signature(settings)
    backing, owner, _, had_model, had_chunker = lock_scope(conn, scope, "database", model, chunker)
    if backing != "database":
        raise ScopeError(
            f"scope {scope} is published from {owner}: write it on the owning host, in its folder"
        )
    if had_model is not None and had_model != model:
        raise ScopeError(
            f"scope {scope} holds vectors of {had_model}; remember into it with that embedder"
        )
    made = conn.execute(
        "INSERT INTO em_notes (scope, path, body) VALUES (%s, %s, '')"
        " ON CONFLICT (scope, path) DO NOTHING RETURNING 1",
        (scope, todo.rel),
    ).fetchone()
    row = conn.execute(
        "SELECT body FROM em_notes WHERE scope = %s AND path = %s FOR UPDATE", (scope, todo.rel)
    ).fetchone()
    assert row is not None  # inserted above when missing
    body, line, name = placed(row[0], todo)
    notes = {todo.rel: body}
    if had_model != model or had_chunker != chunker:
        # Vectors where there were none, or another chunker: every note indexed again.
        notes = dict(conn.execute("SELECT path, body FROM em_notes WHERE scope = %s", (scope,)))
        notes[todo.rel] = body
        conn.execute("DELETE FROM em_files WHERE scope = %s", (scope,))
    segment, hashes = index_notes(notes, settings, embedding)
    conn.execute(
        "UPDATE em_notes SET body = %s WHERE scope = %s AND path = %s", (body, scope, todo.rel)
    )
    store(conn, scope, [(segment, hashes)] if segment.chunks else [])
    tidy(conn, scope, fetch)
    generation = conn.execute(
        "UPDATE em_scopes SET generation = nextval('em_generations'), model = %s, dim = %s,"
        " chunker = %s, updated = now() WHERE name = %s RETURNING generation",
        (model, segment.vectors.matrix.shape[1] if segment.vectors else None, chunker, scope),
    ).fetchone()
    assert generation is not None
    return todo.result(line, made is not None, name), int(generation[0])


#: What to forget: ``(path, line, match, dry_run, allow_many)`` (see :func:`..forget.forget`).
ForgetAsk = tuple[str | None, int | None, str | None, bool, bool]


def forget_note(
    conn: psycopg.Connection,
    scope: str,
    ask: ForgetAsk,
    settings: MemorySettings,
    embedding: Embedding | None,
    fetch: Fetch,
) -> tuple[list[Forgotten], int | None]:
    """Remove lines from notes of database-backed ``scope`` (in one transaction).

    The scope's row and the notes' rows are locked, the lines found and removed
    as in a workspace (:func:`..forget.match_spans`, :func:`..forget.edited`), the
    changed notes indexed again (keyword-only when the scope holds no vectors),
    and each segment that held their old rows deleted (:func:`.publish.purge`).

    Returns:
        What was removed (or would be), and the scope's new generation (None:
        nothing changed).

    Raises:
        WriteError: Bad arguments, no such note, several blocks without ``allow_many``.
        ScopeError: No such scope, a folder-backed one, or vectors of another model.
    """
    path, line, key, dry_run, allow_many = ask
    if (line is None) == (key is None):
        raise WriteError("give --line N (with a path) or --match TEXT")
    if line is not None and path is None:
        raise WriteError("--line needs the note's path, e.g. memory/2026-01-05.md")
    rel = target(path) if path is not None else None
    row = conn.execute(
        "SELECT backing, owner, model, chunker FROM em_scopes WHERE name = %s FOR UPDATE", (scope,)
    ).fetchone()
    if row is None:
        raise ScopeError(f"no scope {scope} in the database")
    backing, owner, had_model, had_chunker = row
    if backing != "database":
        raise ScopeError(
            f"scope {scope} is published from {owner}: forget in that folder there",
            "then publish it with enhanced-memory index --compact --scope",
        )
    model = embedding.model if embedding else None
    if had_model is not None and had_model != model:
        raise ScopeError(
            f"scope {scope} holds vectors of {had_model}; forget in it with that embedder"
        )
    embedding = embedding if had_model is not None else None
    notes: dict[str, str] = dict(
        conn.execute(
            "SELECT path, body FROM em_notes WHERE scope = %s"
            + (" AND path = %s" if rel else "")
            + " ORDER BY path FOR UPDATE",
            (scope, rel) if rel else (scope,),
        ).fetchall()
    )
    if rel is not None and rel not in notes:
        raise WriteError(f"no such memory file in scope {scope}: {rel}")
    found: dict[str, list[tuple[int, int]]] = {}
    gone: list[Forgotten] = []
    for name, body in notes.items():
        lines = split_lines(body)
        spans = line_spans(lines, line) if line is not None else match_spans(lines, key or "")
        if spans:
            found[name] = spans
            gone += [Forgotten(name, a + 1, "\n".join(lines[a:b])) for a, b in spans]
    if len(gone) > 1 and not dry_run and not allow_many:
        raise WriteError(
            f"{len(gone)} blocks hold the text; nothing was removed",
            "look with --dry-run, then pass --yes to remove them all, or use --line",
        )
    if dry_run or not gone:
        return gone, None
    bodies = {name: edited(notes[name], spans) for name, spans in found.items()}
    chunker = chunker_signature(settings)
    indexed = dict(bodies)
    if had_chunker != chunker:  # another chunker: every note indexed again, as append does
        indexed = dict(conn.execute("SELECT path, body FROM em_notes WHERE scope = %s", (scope,)))
        indexed |= bodies
    old = [
        int(r[0])
        for r in conn.execute(
            "SELECT DISTINCT segment FROM em_files WHERE scope = %s AND segment > 0"
            + ("" if had_chunker != chunker else " AND path = ANY(%s)"),
            (scope,) if had_chunker != chunker else (scope, list(bodies)),
        )
    ]
    segment, hashes = index_notes(indexed, settings, embedding)
    with conn.cursor() as cur:
        cur.executemany(
            "UPDATE em_notes SET body = %s WHERE scope = %s AND path = %s",
            [(body, scope, name) for name, body in bodies.items()],
        )
    store(conn, scope, [(segment, hashes)] if segment.chunks else [])
    held = set(segment.names()) if segment.chunks else set()
    # A note left without chunks is named with segment 0 (no segment), as a publish does.
    name_files(conn, scope, [(p, 0, hashes.get(p, ""), 0) for p in indexed if p not in held])
    purge(conn, scope, old, fetch)
    tidy(conn, scope, fetch)
    generation = conn.execute(
        "UPDATE em_scopes SET generation = nextval('em_generations'), chunker = %s,"
        " updated = now() WHERE name = %s RETURNING generation",
        (chunker, scope),
    ).fetchone()
    assert generation is not None
    return gone, int(generation[0])


def index_notes(
    notes: dict[str, str], settings: MemorySettings, embedding: Embedding | None
) -> tuple[Segment, dict[str, str]]:
    """The segment of ``notes`` (path -> text) as the local store indexes them, and their hashes.

    Written to a private temporary workspace and indexed there by
    :class:`..index.MemoryIndex` (sync, then the embedding run): the same code,
    so the same chunks, terms and vectors as a folder holding these notes.
    """
    with tempfile.TemporaryDirectory(prefix="enhanced-memory-note-") as tmp:
        root = Path(tmp)
        for rel, text in notes.items():
            target = root / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(text.encode("utf-8"))
        index = MemoryIndex(root, settings)
        index.sync()
        model = embedding.model if embedding else None
        if embedding is not None:
            embed_missing(index, embedding.model, embedding.embed)
        snap = index.snapshot(model)
        with index.connect() as lite:
            hashes = dict(lite.execute("SELECT path, hash FROM files").fetchall())
            segment = from_snapshot(lite, snap, np.arange(len(snap), dtype=np.int64))
    return segment, hashes


def read_note(
    conn: psycopg.Connection, scope: str, path: str, from_line: int, lines: int | None
) -> MemoryLines:
    """Lines of a scope's note, as :func:`..notes.get_lines` reads a workspace's.

    Raises:
        MissingNoteError: The scope has no such note.
        NoteError: A refused path or a bad range.
    """
    rel = normalize_path(path)
    row = conn.execute(
        "SELECT body FROM em_notes WHERE scope = %s AND path = %s", (scope, rel)
    ).fetchone()
    if row is None:
        raise MissingNoteError(f"no such memory file in scope {scope}: {rel}", path=rel)
    return sliced(rel, split_lines(row[0]), from_line, lines)


def export_notes(conn: psycopg.Connection, scope: str, folder: Path) -> list[str]:
    """Write every note of ``scope`` under ``folder`` (a workspace); the paths written.

    Nothing is written when one would replace a different existing file.

    Raises:
        ScopeError: A file in the way, or a stored path that is not a memory file's.
    """
    notes = conn.execute(
        "SELECT path, body FROM em_notes WHERE scope = %s ORDER BY path", (scope,)
    ).fetchall()
    planned: list[tuple[Path, str, bytes]] = []
    for path, body in notes:
        try:
            rel = normalize_path(path)
        except NoteError as exc:
            raise ScopeError(f"scope {scope} holds a note at a refused path: {exc}") from None
        target = folder / rel
        data = body.encode("utf-8")
        if target.exists() and (not target.is_file() or target.read_bytes() != data):
            raise ScopeError(
                f"refused: {target} exists and differs from scope {scope}'s note; nothing was"
                " written",
                "export into an empty folder",
            )
        planned.append((target, rel, data))
    for target, _, data in planned:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    return [rel for _, rel, _ in planned]
