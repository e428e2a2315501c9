"""Managing a database's scopes: list, describe, drop, rename.

A drop or a rename is one transaction that first takes the scope's
``em_scopes`` row, the lock every publish and append takes
(:func:`.publish.lock_scope`): a write to the scope either commits before it
(and is dropped or renamed with the rest) or waits, and then fails in one line
(it found the row gone) or, having not yet met the row, makes the scope anew
after it. A dropped scope's rows (files, notes, segments) are deleted with it;
a renamed one moves whole to its new name at a new generation (the next of the
``em_generations`` sequence), so a reader holding either name reloads.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ...core.errors import ScopeError

if TYPE_CHECKING:
    import psycopg

__all__ = ["ScopeInfo", "describe_scopes", "drop_scope", "rename_scope"]

#: The per-scope tables, each keyed by its ``scope`` column.
SCOPE_TABLES = ("em_files", "em_notes", "em_segments")


@dataclass(frozen=True)
class ScopeInfo:
    """One scope of a database, as ``enhanced-memory scopes list`` shows it.

    Attributes:
        name: The scope's name.
        backing: ``"folder"`` (published from a host's workspace) or ``"database"``
            (notes appended in the database).
        owner: Who publishes a folder-backed scope (``host:folder (host ID)``); None else.
        generation: Its committed generation (moves on every write, never repeats).
        model: The model of its vectors (None: keyword-only).
        chunks: Chunks it holds.
        files: Notes (files) it holds.
        updated: When it last changed (a publish, an append or a rename).
    """

    name: str
    backing: str
    owner: str | None
    generation: int
    model: str | None
    chunks: int
    files: int = 0
    updated: datetime | None = None

    def as_dict(self) -> dict[str, Any]:
        """The scope as JSON shows it (``updated`` in ISO 8601)."""
        return {
            "name": self.name,
            "backing": self.backing,
            "owner": self.owner,
            "generation": self.generation,
            "model": self.model,
            "files": self.files,
            "chunks": self.chunks,
            "updated": self.updated.isoformat() if self.updated else None,
        }


_DESCRIBE = (
    "SELECT s.name, s.backing, s.owner, s.generation, s.model,"
    " (SELECT coalesce(sum(f.chunks), 0) FROM em_files f WHERE f.scope = s.name),"
    " (SELECT count(*) FROM em_files f WHERE f.scope = s.name), s.updated"
    " FROM em_scopes s"
)


def _info(row: Any) -> ScopeInfo:
    return ScopeInfo(row[0], row[1], row[2], int(row[3]), row[4], int(row[5]), int(row[6]), row[7])


def describe_scopes(conn: psycopg.Connection, names: list[str] | None = None) -> list[ScopeInfo]:
    """Every scope (or those of ``names`` that exist), by name."""
    if names is None:
        rows = conn.execute(_DESCRIBE + " ORDER BY s.name").fetchall()
    else:
        where = " WHERE s.name = ANY(%s) ORDER BY s.name"
        rows = conn.execute(_DESCRIBE + where, (names,)).fetchall()
    return [_info(r) for r in rows]


def _locked(conn: psycopg.Connection, scope: str) -> ScopeInfo:
    """``scope``'s row locked for this transaction (as a write locks it), described.

    Raises:
        ScopeError: No such scope.
    """
    row = conn.execute("SELECT 1 FROM em_scopes WHERE name = %s FOR UPDATE", (scope,)).fetchone()
    if row is None:
        raise unknown(scope)
    return describe_scopes(conn, [scope])[0]


def unknown(scope: str) -> ScopeError:
    """The error of a scope the database does not hold."""
    return ScopeError(
        f"scope {scope} does not exist in this database",
        "see enhanced-memory scopes list",
    )


def drop_scope(conn: psycopg.Connection, scope: str) -> ScopeInfo:
    """Delete ``scope``: its row, files, notes and segments (in ``conn``'s transaction).

    Returns:
        The scope as it was.

    Raises:
        ScopeError: No such scope.
    """
    info = _locked(conn, scope)
    for table in SCOPE_TABLES:
        conn.execute(f"DELETE FROM {table} WHERE scope = %s", (scope,))  # noqa: S608 (constants)
    conn.execute("DELETE FROM em_scopes WHERE name = %s", (scope,))
    return info


def rename_scope(conn: psycopg.Connection, old: str, new: str) -> ScopeInfo:
    """Move ``old`` whole to the name ``new`` at a new generation (in ``conn``'s transaction).

    Returns:
        The scope under its new name.

    Raises:
        ScopeError: No scope ``old``, or a scope ``new`` exists already.
    """
    import psycopg

    _locked(conn, old)
    try:
        with conn.transaction():  # a savepoint: the refusal below is ours, not the driver's
            conn.execute(
                "UPDATE em_scopes SET name = %s, generation = nextval('em_generations'),"
                " updated = now() WHERE name = %s",
                (new, old),
            )
    except psycopg.errors.UniqueViolation:
        raise ScopeError(
            f"scope {new} exists already: scopes rename {old} {new} would replace it",
            f"pick another name, or drop {new} first (enhanced-memory scopes drop {new})",
        ) from None
    for table in SCOPE_TABLES:
        conn.execute(f"UPDATE {table} SET scope = %s WHERE scope = %s", (new, old))  # noqa: S608
    return describe_scopes(conn, [new])[0]
