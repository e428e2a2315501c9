"""The database's tables and their versioned migrations.

``em_schema`` holds one row, the version applied. :func:`migrate` applies the
missing steps of :data:`MIGRATIONS` in one transaction under a transaction
advisory lock (two hosts connecting at once apply them once), and refuses a
database whose version is newer than this package knows. An up-to-date
database is only read (one query), so a role that may only read connects too.

Tables (all prefixed ``em_``; a scope's rows are found by their ``scope``):

* ``em_scopes``: one row per scope: its backing (``folder``: published from a
  host's workspace; ``database``: notes written here), the folder's owner
  (``host:path (host ID)``), the generation (what searchers compare: every committed
  write sets it to the next value of the database's ``em_generations`` sequence, so
  no number is ever used twice, even by a scope deleted and made again), the
  model of its vectors and the chunker that made its chunks.
* ``em_segments``: immutable blobs (:mod:`..segment`), each the chunk rows,
  postings and vectors of some files of one scope.
* ``em_files``: each live file of a scope, its content hash and the one segment
  holding its rows (0: none, a file without chunks).
* ``em_notes``: each note's text (``get`` and ``export`` without the folder).
* ``em_identity``: one UUID, made once (hosts key their copies of segments by it).
* ``em_items``: the LangGraph store's items, every namespace in one table
  (:mod:`.items`); ``em_item_versions``: each namespace's count of committed writes.

The three per-scope tables are partitioned by ``HASH (scope)`` (16 parts): a
scope's rows sit in one part, and the step past one server (Citus) distributes
by the same column.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...core.errors import DatabaseError

if TYPE_CHECKING:
    import psycopg

__all__ = ["MIGRATIONS", "identity", "migrate"]

_PARTS = 16
_LOCK_KEY = 0x656D5F736368  # "em_sch": the advisory lock migrations take


def _partitioned(table: str, columns: str, key: str) -> list[str]:
    steps = [f"CREATE TABLE {table} ({columns}, PRIMARY KEY ({key})) PARTITION BY HASH (scope)"]
    steps += [
        f"CREATE TABLE {table}_p{i} PARTITION OF {table}"
        f" FOR VALUES WITH (MODULUS {_PARTS}, REMAINDER {i})"
        for i in range(_PARTS)
    ]
    return steps


#: Each version's SQL statements, in order (never edited once released: add a version).
MIGRATIONS: list[list[str]] = [
    [
        "CREATE TABLE em_scopes ("
        " name text PRIMARY KEY,"
        " backing text NOT NULL CHECK (backing IN ('folder', 'database')),"
        " owner text,"
        " generation bigint NOT NULL DEFAULT 0,"
        " model text,"
        " dim integer,"
        " chunker text,"
        " created timestamptz NOT NULL DEFAULT now(),"
        " updated timestamptz NOT NULL DEFAULT now())",
        "CREATE SEQUENCE em_segment_ids",
        *_partitioned(
            "em_segments",
            "scope text NOT NULL, id bigint NOT NULL, chunks integer NOT NULL, data bytea NOT NULL",
            "scope, id",
        ),
        # Blobs of int8 vectors and offsets gain little from TOAST's compression.
        "ALTER TABLE em_segments ALTER COLUMN data SET STORAGE EXTERNAL",
        *_partitioned(
            "em_files",
            "scope text NOT NULL, path text NOT NULL, segment bigint NOT NULL,"
            " hash text NOT NULL, chunks integer NOT NULL",
            "scope, path",
        ),
        *_partitioned(
            "em_notes",
            "scope text NOT NULL, path text NOT NULL, body text NOT NULL",
            "scope, path",
        ),
    ],
    [
        # The database's identity: what a host's copies of its segments are kept under.
        "CREATE TABLE em_identity (id uuid NOT NULL DEFAULT gen_random_uuid())",
        "INSERT INTO em_identity DEFAULT VALUES",
    ],
    [
        # Generations drawn from one sequence, never reset: a scope deleted and made again
        # never repeats a generation a reader holds. It starts past every generation so far.
        "CREATE SEQUENCE em_generations",
        "SELECT setval('em_generations', coalesce(max(generation), 1), max(generation) IS NOT NULL)"
        " FROM em_scopes",
    ],
    [
        # The LangGraph store's items (store.database.items): every namespace in one table,
        # its path first in the key so the items under a prefix are one range of the index.
        # IF NOT EXISTS: a database set back to an older version keeps its items.
        "CREATE SEQUENCE IF NOT EXISTS em_item_revs",
        "CREATE TABLE IF NOT EXISTS em_items ("
        ' namespace text COLLATE "C" NOT NULL,'
        " key text NOT NULL,"
        " value jsonb NOT NULL,"
        " created_at timestamptz NOT NULL,"
        " updated_at timestamptz NOT NULL,"
        " expires_at timestamptz,"
        " ttl double precision,"
        " fields jsonb,"
        " model text,"
        " hashes text[],"
        " vectors bytea,"
        " rev bigint NOT NULL,"
        " PRIMARY KEY (namespace, key))",
        "ALTER TABLE em_items ALTER COLUMN vectors SET STORAGE EXTERNAL",
        "CREATE INDEX IF NOT EXISTS em_items_expiry ON em_items (expires_at)"
        " WHERE expires_at IS NOT NULL",
    ],
    [
        # A version row per namespace, bumped by every write in the writer's transaction: a
        # search's version check reads these rows, not every item under its prefix. Rows are
        # never deleted (a prefix's sum only grows). The items' per-row write numbers go: a
        # host still on the previous package fails its writes rather than bump no version.
        "CREATE TABLE IF NOT EXISTS em_item_versions ("
        ' namespace text COLLATE "C" PRIMARY KEY,'
        " version bigint NOT NULL)",
        "INSERT INTO em_item_versions SELECT namespace, count(*) FROM em_items"
        " GROUP BY namespace ON CONFLICT (namespace) DO NOTHING",
        "ALTER TABLE em_items DROP COLUMN IF EXISTS rev",
        "DROP SEQUENCE IF EXISTS em_item_revs",
    ],
]


def version_of(conn: psycopg.Connection) -> int:
    """The schema version applied (0: none)."""
    row = conn.execute("SELECT to_regclass('em_schema') IS NOT NULL").fetchone()
    if not row or not row[0]:
        return 0
    found = conn.execute("SELECT max(version) FROM em_schema").fetchone()
    return int(found[0]) if found and found[0] is not None else 0


def identity(conn: psycopg.Connection) -> str | None:
    """The database's UUID (made by the first migration); None when this role may not read it."""
    import psycopg

    try:
        with conn.transaction():  # a refusal must not end the caller's transaction
            row = conn.execute("SELECT id::text FROM em_identity").fetchone()
    except psycopg.errors.InsufficientPrivilege:
        return None
    if row is None:
        raise DatabaseError("the database has no em_identity row", "run the migrations again")
    return str(row[0])


def migrate(conn: psycopg.Connection, shown: str) -> int:
    """Bring the schema to the newest version (inside the caller's transaction).

    Args:
        conn: A connection in a transaction.
        shown: The database as messages name it (its URL, password redacted).

    Returns:
        How many versions were applied (0: it was up to date).

    Raises:
        DatabaseError: The database's schema is newer than this package's.
    """
    newest = len(MIGRATIONS)
    have = version_of(conn)
    if have == newest:
        return 0
    if have < newest:
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
        conn.execute("CREATE TABLE IF NOT EXISTS em_schema (version integer NOT NULL)")
        have = version_of(conn)  # another host may have migrated while we waited
    if have > newest:
        raise DatabaseError(
            f"database {shown} has schema version {have}; this langchain-enhanced-memory"
            f" knows up to {newest}",
            "upgrade langchain-enhanced-memory on this host",
        )
    for steps in MIGRATIONS[have:]:
        for sql in steps:
            conn.execute(sql)  # constants of this module only, no input
    conn.execute("DELETE FROM em_schema")
    conn.execute("INSERT INTO em_schema VALUES (%s)", (newest,))
    return newest - have
