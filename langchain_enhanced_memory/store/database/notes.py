"""Notes kept in the database: a database-backed scope's appends, and ``get``/``export`` of any.

A write (an append, a forget) reads the scope and its note, places the bullet
(:func:`..append.placed`) or removes the lines, and indexes the note's new text
(:func:`.noteindex.index_notes`: in memory, vectors of unchanged texts reused) before it
takes the scope's row lock (``SELECT ... FOR UPDATE``). Under the lock it
checks that the scope and the notes are still what it read; then it commits
the notes, their segment and the new generation in one transaction, or reads
and builds again when a writer came between (up to :data:`TRIES` times, the
last holding the lock from the start, so a write always lands). Concurrent
writers of one scope take turns on the lock: none is lost, none interleaved,
and a writer killed before its commit leaves nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from ...core.errors import MissingNoteError, NoteError, ScopeError, WriteError
from ...core.settings import MemorySettings
from ..append import AppendResult, Planned, placed, target
from ..forget import Forgotten, edited, line_spans, match_spans
from ..notes import MemoryLines, normalize_path, sliced
from ..reading import split_lines
from ..segment import Segment
from ..sync import chunker_signature
from .noteindex import Embedding, Known, index_notes, known_vectors
from .publish import Fetch, lock_scope, name_files, purge, store, tidy

if TYPE_CHECKING:
    import psycopg

__all__ = ["TRIES", "Embedding", "append_note", "export_notes", "forget_note", "read_note"]

T = TypeVar("T")

#: Reads and builds of one write; the last one holds the scope's lock from its start.
TRIES = 5


class _Changed(Exception):
    """A writer committed to the scope between this write's read and its lock."""


#: A scope's row as a write depends on it: backing, model, chunker (None: no scope).
_Row = tuple[str, str | None, str | None] | None


@dataclass(frozen=True)
class _Read:
    """What a write read of its scope: its row (and owner), and the notes (path -> text).

    ``wanted`` are the notes' paths it asked for (None: every note of the scope).
    """

    row: _Row
    owner: str | None
    wanted: list[str] | None
    notes: dict[str, str]


def _read(conn: psycopg.Connection, scope: str, paths: Callable[[_Row], list[str] | None]) -> _Read:
    """The scope's row and the notes ``paths(row)`` names."""
    got = conn.execute(
        "SELECT backing, model, chunker, owner FROM em_scopes WHERE name = %s", (scope,)
    ).fetchone()
    row: _Row = None if got is None else (got[0], got[1], got[2])
    wanted = paths(row)
    query = "SELECT path, body FROM em_notes WHERE scope = %s"
    args: list[object] = [scope]
    if wanted is not None:
        query += " AND path = ANY(%s)"
        args.append(wanted)
    notes: dict[str, str] = dict(conn.execute(query + " ORDER BY path", args).fetchall())
    return _Read(row, None if got is None else got[3], wanted, notes)


def _retrying(
    conn: psycopg.Connection,
    scope: str,
    paths: Callable[[_Row], list[str] | None],
    lock: tuple[Callable[[], object], _Row],
    write: Callable[[_Read, Callable[[], None]], T],
) -> T:
    """``write(read, check)`` in a transaction, tried again while a writer comes between.

    ``write`` builds from ``read``, then calls ``check()``, which takes the
    scope's lock (``lock[0]()``) and raises :class:`_Changed` when the scope's
    row (``lock[1]`` for a scope that was not there: the row the lock makes)
    or the notes read moved on: the transaction is rolled back and the write
    reads and builds again. The last of :data:`TRIES` tries locks before it
    reads, so it always lands.
    """
    take, made = lock
    for attempt in range(TRIES):
        last = attempt == TRIES - 1
        try:
            with conn.transaction():
                if last:
                    take()
                seen = _read(conn, scope, paths)

                def check(seen: _Read = seen, last: bool = last) -> None:
                    if last:
                        return
                    take()
                    now = _read(conn, scope, lambda _: seen.wanted)
                    if (seen.row or made) != now.row or now.notes != seen.notes:
                        raise _Changed

                return write(seen, check)
        except _Changed:
            continue
    raise AssertionError("the last try reads under the lock")


def _known(
    conn: psycopg.Connection, scope: str, paths: list[str], settings: MemorySettings, fetch: Fetch
) -> Known:
    """The scope's vectors of the chunks of ``paths`` (:func:`.noteindex.known_vectors`)."""
    ids = [
        int(r[0])
        for r in conn.execute(
            "SELECT DISTINCT segment FROM em_files WHERE scope = %s AND segment > 0"
            " AND path = ANY(%s)",
            (scope, paths),
        )
    ]
    return known_vectors(fetch(ids).values(), set(paths), settings) if ids else {}


def append_note(
    conn: psycopg.Connection,
    scope: str,
    todo: Planned,
    settings: MemorySettings,
    embedding: Embedding | None,
    fetch: Fetch,
) -> tuple[AppendResult, int]:
    """Append ``todo``'s bullet to its note of database-backed ``scope``.

    Args:
        conn: A connection outside a transaction (each try is one).
        scope: The scope.
        todo: The bullet and its note (:func:`..append.plan`).
        settings: Chunking and embedding settings.
        embedding: The embedder (None: keyword-only).
        fetch: The scope's segments by id.

    Returns:
        Where it landed, and the scope's new generation.

    Raises:
        ScopeError: The scope is folder-backed, or holds vectors of another model.
    """
    model = embedding.model if embedding else None
    chunker = chunker_signature(settings)

    def lock() -> None:
        lock_scope(conn, scope, "database", model, chunker)

    def paths(row: _Row) -> list[str] | None:
        # Vectors where there were none, or another chunker: every note indexed again.
        return [todo.rel] if row is not None and row[1:] == (model, chunker) else None

    def write(seen: _Read, check: Callable[[], None]) -> tuple[AppendResult, int]:
        _may_write(scope, seen, model, forgetting=False)
        body, line, name = placed(seen.notes.get(todo.rel, ""), todo)
        notes = seen.notes | {todo.rel: body}
        known = _known(conn, scope, list(notes), settings, fetch) if embedding else {}
        segment, hashes = index_notes(notes, settings, embedding, known)
        check()
        if seen.wanted is None:
            conn.execute("DELETE FROM em_files WHERE scope = %s", (scope,))
        conn.execute(
            "INSERT INTO em_notes (scope, path, body) VALUES (%s, %s, %s)"
            " ON CONFLICT (scope, path) DO UPDATE SET body = excluded.body",
            (scope, todo.rel, body),
        )
        dim = segment.vectors.matrix.shape[1] if segment.vectors else None
        generation = _commit(conn, scope, segment, hashes, fetch, model, dim, chunker)
        return todo.result(line, todo.rel not in seen.notes, name), generation

    return _retrying(conn, scope, paths, (lock, ("database", model, chunker)), write)


def _may_write(scope: str, seen: _Read, model: str | None, forgetting: bool) -> None:
    """Refuse a write to a folder-backed scope, or one with vectors of another model."""
    if seen.row is None:
        return
    backing, had_model, _ = seen.row
    if backing != "database" and forgetting:
        raise ScopeError(
            f"scope {scope} is published from {seen.owner}: forget in that folder there",
            "then publish it with enhanced-memory index --compact --scope",
        )
    if backing != "database":
        raise ScopeError(
            f"scope {scope} is published from {seen.owner}: write it on the owning host,"
            " in its folder"
        )
    if had_model is not None and had_model != model:
        doing = "forget in it" if forgetting else "remember into it"
        raise ScopeError(f"scope {scope} holds vectors of {had_model}; {doing} with that embedder")


def _commit(
    conn: psycopg.Connection,
    scope: str,
    segment: Segment,
    hashes: dict[str, str],
    fetch: Fetch,
    model: str | None,
    dim: int | None,
    chunker: str,
) -> int:
    """Store ``segment`` for its notes, tidy the segments and move to a new generation."""
    store(conn, scope, [(segment, hashes)] if segment.chunks else [])
    tidy(conn, scope, fetch)
    generation = conn.execute(
        "UPDATE em_scopes SET generation = nextval('em_generations'), model = %s, dim = %s,"
        " chunker = %s, updated = now() WHERE name = %s RETURNING generation",
        (model, dim, chunker, scope),
    ).fetchone()
    assert generation is not None
    return int(generation[0])


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
    """Remove lines from notes of database-backed ``scope``.

    The lines are found and removed as in a workspace (:func:`..forget.match_spans`,
    :func:`..forget.edited`), the changed notes indexed again (keyword-only when
    the scope holds no vectors), and, under the scope's lock, each segment that
    held their old rows deleted (:func:`.publish.purge`).

    Args:
        conn: A connection outside a transaction (each try is one).
        scope: The scope.
        ask: What to forget.
        settings: Chunking and embedding settings.
        embedding: The embedder (None: keyword-only).
        fetch: The scope's segments by id.

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
    chunker = chunker_signature(settings)

    def lock() -> None:
        row = conn.execute("SELECT 1 FROM em_scopes WHERE name = %s FOR UPDATE", (scope,))
        if row.fetchone() is None:
            raise ScopeError(f"no scope {scope} in the database")

    def paths(row: _Row) -> list[str] | None:
        # Another chunker: every note indexed again, as append does.
        return [rel] if rel is not None and row is not None and row[2] == chunker else None

    def write(seen: _Read, check: Callable[[], None]) -> tuple[list[Forgotten], int | None]:
        if seen.row is None:
            raise ScopeError(f"no scope {scope} in the database")
        model = embedding.model if embedding else None
        _may_write(scope, seen, model, forgetting=True)
        gone, bodies = _removed(scope, seen.notes, rel, line, key)
        if len(gone) > 1 and not dry_run and not allow_many:
            raise WriteError(
                f"{len(gone)} blocks hold the text; nothing was removed",
                "look with --dry-run, then pass --yes to remove them all, or use --line",
            )
        if dry_run or not gone:
            return gone, None
        return gone, _rewrite(conn, scope, seen, bodies, settings, embedding, fetch, check)

    return _retrying(conn, scope, paths, (lock, None), write)


def _removed(
    scope: str, notes: dict[str, str], rel: str | None, line: int | None, key: str | None
) -> tuple[list[Forgotten], dict[str, str]]:
    """The blocks to remove from ``notes`` (``rel``'s only, when given), the notes without them."""
    if rel is not None and rel not in notes:
        raise WriteError(f"no such memory file in scope {scope}: {rel}")
    gone: list[Forgotten] = []
    bodies: dict[str, str] = {}
    for name, body in notes.items():
        if rel is not None and name != rel:
            continue
        lines = split_lines(body)
        spans = line_spans(lines, line) if line is not None else match_spans(lines, key or "")
        if spans:
            bodies[name] = edited(body, spans)
            gone += [Forgotten(name, a + 1, "\n".join(lines[a:b])) for a, b in spans]
    return gone, bodies


def _rewrite(
    conn: psycopg.Connection,
    scope: str,
    seen: _Read,
    bodies: dict[str, str],
    settings: MemorySettings,
    embedding: Embedding | None,
    fetch: Fetch,
    check: Callable[[], None],
) -> int:
    """Index ``bodies`` (every note, when the chunker changed), lock, store them; the generation."""
    assert seen.row is not None
    _, had_model, had_chunker = seen.row
    chunker = chunker_signature(settings)
    embedding = embedding if had_model is not None else None
    indexed = seen.notes | bodies if had_chunker != chunker else dict(bodies)
    known = _known(conn, scope, list(indexed), settings, fetch) if embedding else {}
    segment, hashes = index_notes(indexed, settings, embedding, known)
    check()
    old = [
        int(r[0])
        for r in conn.execute(
            "SELECT DISTINCT segment FROM em_files WHERE scope = %s AND segment > 0"
            + ("" if had_chunker != chunker else " AND path = ANY(%s)"),
            (scope,) if had_chunker != chunker else (scope, list(bodies)),
        )
    ]
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
    return int(generation[0])


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
