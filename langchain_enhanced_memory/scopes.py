"""Managing the scopes of a database from Python: list, describe, drop, rename.

The same as ``enhanced-memory scopes list|drop|rename``: each call connects to
``database_url`` (default ``$ENHANCED_MEMORY_DATABASE_URL``, as the retriever
and the tools), does one thing in one transaction and lets the connection go::

    from langchain_enhanced_memory.scopes import drop_scope, list_scopes, rename_scope

    for info in list_scopes():
        print(info.name, info.backing, info.generation, info.files, info.chunks)
    rename_scope("team", "team-2026")
    drop_scope("scratch")

A drop or rename takes the scope's row as a publish or an append does, so a
concurrent write to it either commits first or fails in one line after it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING

from .config import load
from .core.errors import ScopeError
from .engine.scoped import connect_database
from .store.database.scopes import ScopeInfo

if TYPE_CHECKING:
    from .store.database import Database

__all__ = ["ScopeInfo", "describe_scope", "drop_scope", "list_scopes", "rename_scope"]


@contextlib.contextmanager
def _database(
    database_url: str | None,
    read_url: str | None = None,
    pool_size: int | None = None,
    *,
    replica: bool = True,
) -> Iterator[Database]:
    env = load()
    url = database_url or env.database_url
    if url is None:
        raise ScopeError(
            "scopes live in a database and none is given",
            "pass database_url= or set $ENHANCED_MEMORY_DATABASE_URL",
        )
    with connect_database(
        url,
        read_url=read_url or env.read_url,
        pool_size=env.pool_size if pool_size is None else pool_size,
        cache=env.database_cache,
        replica=replica,
    ) as db:
        yield db


def list_scopes(
    database_url: str | None = None, *, read_url: str | None = None, pool_size: int | None = None
) -> list[ScopeInfo]:
    """Every scope of the database, by name.

    Args:
        database_url: The database (default ``$ENHANCED_MEMORY_DATABASE_URL``).
        read_url: A streaming replica to read from (default ``$ENHANCED_MEMORY_READ_URL``).
        pool_size: The most connections to each server (default ``$ENHANCED_MEMORY_POOL_SIZE``).

    Raises:
        ScopeError: No database given.
        DatabaseError: The database cannot be reached.
    """
    with _database(database_url, read_url, pool_size) as db:
        return db.scopes()


def describe_scope(
    name: str,
    database_url: str | None = None,
    *,
    read_url: str | None = None,
    pool_size: int | None = None,
) -> ScopeInfo:
    """One scope: backing, owner, generation, model, files, chunks, last change.

    Raises:
        ScopeError: No database given, a bad name, or no such scope.
        DatabaseError: The database cannot be reached.
    """
    with _database(database_url, read_url, pool_size) as db:
        return db.scope(name)


def drop_scope(
    name: str, database_url: str | None = None, *, pool_size: int | None = None
) -> ScopeInfo:
    """Delete scope ``name`` and all it holds (notes, files, segments); what it held.

    Raises:
        ScopeError: No database given, a bad name, or no such scope.
        DatabaseError: The database failed, or the role may not write (nothing dropped).
    """
    with _database(database_url, pool_size=pool_size, replica=False) as db:
        return db.drop_scope(name)


def rename_scope(
    old: str, new: str, database_url: str | None = None, *, pool_size: int | None = None
) -> ScopeInfo:
    """Give scope ``old`` the name ``new``, its content kept, at a new generation.

    Raises:
        ScopeError: No database given, a bad name, no scope ``old``, or ``new`` exists.
        DatabaseError: The database failed, or the role may not write (nothing renamed).
    """
    with _database(database_url, pool_size=pool_size, replica=False) as db:
        return db.rename_scope(old, new)
