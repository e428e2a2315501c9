"""How a process reaches a database: its link (opened again after an outage), and writes.

:class:`Link` opens the pools, brings the schema up to date and finds this
host's copies of the database's segments; :func:`writing` is a transaction on
the primary that tells a role that may not write so in one line.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ...core.errors import DatabaseError
from .cache import SegmentCache, remember_identity
from .connect import Pool, release, shared_pool, shown_url
from .schema import identity, migrate

if TYPE_CHECKING:
    import psycopg

__all__ = ["Link", "writing"]


@dataclass(frozen=True)
class Link:
    """How to connect to a database: its URLs, the pools' size, where copies are kept."""

    url: str
    read_url: str | None
    pool_size: int
    cache: Path | None

    def open(self, doing: str = "") -> tuple[Pool, Pool, SegmentCache | None]:
        """The pools (schema brought up to date) and this host's copies of the database's segments.

        Raises:
            DatabaseError: Unreachable, refused, or a schema newer than this package's.
        """
        writer = shared_pool(self.url, self.pool_size, doing)
        try:
            with writer.connection(doing or "migrating the schema") as conn:
                migrate(conn, shown_url(self.url))
                # A role that may not read the database's identity searches without copies.
                uid = None if self.cache is None else identity(conn)
            reader = writer
            if self.read_url and self.read_url != self.url:
                reader = shared_pool(self.read_url, self.pool_size)
        except BaseException:
            release(writer)
            raise
        if self.cache is None or uid is None:
            return writer, reader, None
        remember_identity(self.cache, self.url, uid)  # for a process that cannot connect
        return writer, reader, SegmentCache(self.cache, uid)


@contextlib.contextmanager
def writing(pool: Pool, doing: str) -> Iterator[psycopg.Connection]:
    """A transaction on the primary; a role that may not write is told so in one line."""
    import psycopg

    with pool.connection(doing) as conn:
        try:
            yield conn
        except psycopg.errors.InsufficientPrivilege as exc:
            problem = str(exc).splitlines()[0] if str(exc) else "permission denied"
            raise DatabaseError(
                f"database {shown_url(pool.url)}: {doing}: this role may not write ({problem})",
                "connect as a role that may write the em_ tables (--database)",
            ) from None
