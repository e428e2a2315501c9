"""A database's LangGraph store items: one table, ``em_items``, every namespace in it.

A row is an item: its namespace as :func:`..core.items.namespace_path`
(``users/u1/``, a ``COLLATE "C"`` column first in the primary key, so the items
under a prefix are one range of the index: ``namespace >= 'users/' AND
namespace < 'users0'``, ``0`` being the byte after ``/``), key, value
(``jsonb``), times, TTL, the fields indexed, and its sections' vectors (one
``bytea`` of float32 rows, the texts' hashes beside it).

``em_item_versions`` counts each namespace's committed writes: every put,
delete, refresh or sweep adds one to the row of each namespace it wrote, in
its own transaction, last (the rows locked in sorted order, after the items,
so writers of one namespace queue there and never deadlock on it). A prefix's
version is the sum of its namespaces' rows, what a searcher compares before
reusing the snapshot it built: one row's read for a namespace. Rows are never
deleted, so the sum grows with every write committed under the prefix, in
whatever order the writers' transactions commit. Expiry needs no write: a
search masks the expired items of the snapshot it holds.
Why one table and not a scope per namespace: docs/design.md, "The LangGraph
store over PostgreSQL".
"""

from __future__ import annotations

import json
from collections.abc import Hashable, Iterable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np

from ...core.items import Namespace, Ref, StoredItem, decode_name, namespace_path
from .connect import POOL_SIZE, Pool, release, shared_pool, shown_url
from .schema import migrate

if TYPE_CHECKING:
    import psycopg

__all__ = ["DatabaseItems"]

_COLUMNS = (
    "namespace, key, value, created_at, updated_at, expires_at, ttl, fields, model, hashes, vectors"
)


def _range(prefix: Namespace) -> tuple[str, str]:
    """The bounds of the namespace paths under ``prefix`` (``[low, high)``)."""
    low = namespace_path(prefix)
    return low, (low[:-1] + "0") if low else "\uffff"


def _namespace(path: str) -> Namespace:
    return tuple(decode_name(label) for label in path[:-1].split("/"))


class DatabaseItems:
    """The :class:`..core.items.ItemStorage` of a PostgreSQL database (thread-safe).

    Args:
        url: The database (``postgresql://`` URL or ``key=value`` string).
        pool_size: The most connections this process opens to it.
    """

    def __init__(self, url: str, pool_size: int = POOL_SIZE) -> None:
        self._pool: Pool | None = shared_pool(url, pool_size, "opening the LangGraph store")
        try:
            with self._pool.connection("migrating the schema") as conn:
                migrate(conn, shown_url(url))
        except BaseException:
            self.close()
            raise

    @property
    def pool(self) -> Pool:
        """The connections (raises once closed)."""
        assert self._pool is not None, "the store is closed"
        return self._pool

    def get_many(self, refs: Sequence[Ref]) -> dict[Ref, StoredItem]:
        """The items at ``refs`` that exist."""
        if not refs:
            return {}
        paths = [namespace_path(ns) for ns, _ in refs]
        keys = [key for _, key in refs]
        with self.pool.connection("reading items", transaction=False) as conn:
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM em_items WHERE (namespace, key) IN"
                " (SELECT * FROM unnest(%s::text[], %s::text[]))",
                (paths, keys),
            ).fetchall()
        items = [_item(row) for row in rows]
        return {item.ref: item for item in items}

    def put_many(self, items: Sequence[StoredItem], deletes: Sequence[Ref]) -> None:
        """Upsert ``items`` and delete ``deletes`` in one transaction (``created_at`` kept).

        Pipelined: the items' statements and their versions' go in one round trip.
        """
        with self.pool.connection("writing items") as conn, conn.pipeline(), conn.cursor() as cur:
            if items:
                cur.executemany(
                    f"INSERT INTO em_items ({_COLUMNS})"
                    " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
                    " ON CONFLICT (namespace, key) DO UPDATE SET value = excluded.value,"
                    " updated_at = excluded.updated_at, expires_at = excluded.expires_at,"
                    " ttl = excluded.ttl, fields = excluded.fields, model = excluded.model,"
                    " hashes = excluded.hashes, vectors = excluded.vectors",
                    [_row(item) for item in items],
                )
            if deletes:
                cur.executemany(
                    "DELETE FROM em_items WHERE namespace = %s AND key = %s",
                    [(namespace_path(ns), key) for ns, key in deletes],
                )
            _bump(cur, [namespace_path(i.namespace) for i in items] + _paths(deletes))

    def version(self, prefix: Namespace) -> Hashable:
        """The number of writes committed under ``prefix`` (its namespaces' version rows)."""
        with self.pool.connection("reading items", transaction=False) as conn:
            row = conn.execute(
                "SELECT count(*), coalesce(sum(version), 0) FROM em_item_versions"
                " WHERE namespace >= %s AND namespace < %s",
                _range(prefix),
            ).fetchone()
        return tuple(row) if row else (0, 0)

    def under(self, prefix: Namespace) -> list[StoredItem]:
        """Every item whose namespace starts with ``prefix``."""
        with self.pool.connection("reading items", transaction=False) as conn:
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM em_items WHERE namespace >= %s AND namespace < %s",
                _range(prefix),
            ).fetchall()
        return [_item(row) for row in rows]

    def namespaces(self, prefix: Namespace = ()) -> list[Namespace]:
        """Every namespace holding an item under ``prefix``.

        One index probe per namespace (a loose index scan), not a read of every item.
        """
        low, high = _range(prefix)
        with self.pool.connection("listing namespaces", transaction=False) as conn:
            rows = conn.execute(
                "WITH RECURSIVE ns(path) AS ("
                " (SELECT namespace FROM em_items WHERE namespace >= %(low)s"
                "  AND namespace < %(high)s ORDER BY namespace LIMIT 1)"
                " UNION ALL SELECT (SELECT namespace FROM em_items WHERE namespace > ns.path"
                "  AND namespace < %(high)s ORDER BY namespace LIMIT 1) FROM ns"
                "  WHERE ns.path IS NOT NULL)"
                " SELECT path FROM ns WHERE path IS NOT NULL",
                {"low": low, "high": high},
            ).fetchall()
        return sorted(_namespace(row[0]) for row in rows)

    def refresh(self, items: Sequence[StoredItem]) -> None:
        """Store the new ``expires_at`` of ``items``."""
        with self.pool.connection("refreshing TTLs") as conn, conn.cursor() as cur:
            cur.executemany(
                "UPDATE em_items SET expires_at = %s WHERE namespace = %s AND key = %s",
                [(i.expires_at, namespace_path(i.namespace), i.key) for i in items],
            )
            _bump(cur, _paths(i.ref for i in items))

    def keep_vectors(self, items: Sequence[StoredItem]) -> None:
        """Store the vectors ``items`` carry, on rows still holding the same value."""
        from psycopg.types.json import Jsonb

        rows = [_row(item) for item in items]
        with self.pool.connection("storing vectors") as conn, conn.cursor() as cur:
            cur.executemany(
                "UPDATE em_items SET hashes = %s, vectors = %s WHERE namespace = %s AND key = %s"
                " AND value = %s",
                [
                    (r[9], r[10], r[0], r[1], Jsonb(item.value))
                    for r, item in zip(rows, items, strict=True)
                ],
            )

    def sweep(self, now: datetime) -> int:
        """Delete the items expired at ``now``; how many."""
        with self.pool.connection("sweeping expired items") as conn, conn.cursor() as cur:
            cur.execute(
                "DELETE FROM em_items WHERE expires_at IS NOT NULL AND expires_at <= %s"
                " RETURNING namespace",
                (now,),
            )
            swept = [row[0] for row in cur.fetchall()]
            _bump(cur, swept)
            return len(swept)

    def close(self) -> None:
        """Release the connections."""
        pool, self._pool = self._pool, None
        if pool is not None:
            release(pool)


def _paths(refs: Iterable[Ref]) -> list[str]:
    return [namespace_path(ns) for ns, _ in refs]


def _bump(cur: psycopg.Cursor[Any], paths: Iterable[str]) -> None:
    """Add one to the version of each namespace in ``paths`` (rows locked in sorted order)."""
    ordered = sorted(set(paths))
    if ordered:
        cur.execute(
            "INSERT INTO em_item_versions (namespace, version)"
            " SELECT path, 1 FROM unnest(%s::text[]) WITH ORDINALITY AS t(path, n) ORDER BY n"
            " ON CONFLICT (namespace) DO UPDATE SET version = em_item_versions.version + 1",
            (ordered,),
        )


def _row(item: StoredItem) -> tuple[Any, ...]:
    from psycopg.types.json import Jsonb

    hashes = sorted(item.vectors)
    vectors = (
        np.stack([item.vectors[h] for h in hashes]).astype(np.float32).tobytes() if hashes else None
    )
    return (
        namespace_path(item.namespace),
        item.key,
        Jsonb(item.value),
        item.created_at,
        item.updated_at,
        item.expires_at,
        item.ttl,
        None if item.index is None else Jsonb(item.index),
        item.model,
        hashes or None,
        vectors,
    )


def _item(row: tuple[Any, ...]) -> StoredItem:
    path, key, value, created, updated, expires, ttl, fields, model, hashes, blob = row
    vectors: dict[str, np.ndarray] = {}
    if hashes and blob:
        matrix = np.frombuffer(blob, dtype=np.float32).reshape(len(hashes), -1)
        vectors = dict(zip(hashes, matrix, strict=True))
    return StoredItem(
        namespace=_namespace(path),
        key=key,
        value=value if isinstance(value, dict) else json.loads(value),
        created_at=created,
        updated_at=updated,
        expires_at=expires,
        ttl=ttl,
        index=fields,
        vectors=vectors,
        model=model,
    )
