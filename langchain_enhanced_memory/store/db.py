"""The index's SQLite file: where it lives, opening it safely, the writer lock, ``meta``.

One SQLite file per workspace (WAL, so readers see a consistent snapshot while
a writer runs). An advisory ``fcntl`` lock on a side file serializes writers.
A file that is not a valid index is set aside and rebuilt from the markdown,
which is never written; a busy, locked or unopenable file is reported, not set
aside (that would drop every cached vector). Older schema versions are
migrated in place, keeping the embedding cache.

The index holds the notes' text, so it is private to its owner wherever it
lives: its folders are 0700 and its files 0600 (SQLite gives the WAL and
shared-memory files the database file's mode). An index folder the package
names (``.enhanced-memory/``, or the cache folder of a read-only workspace)
that an earlier version left open to others is tightened on its first open.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

from ..core.errors import IndexUnavailableError
from .locations import INDEX_DIRNAME, make_private, open_private, tighten, writable
from .matrices import encode

__all__ = [
    "INDEX_DIRNAME",
    "INDEX_FILENAME",
    "ORIGINAL_INDEX_FILENAME",
    "SCHEMA_VERSION",
    "IndexDB",
    "chunk_ids",
    "default_index_path",
]

log = logging.getLogger("langchain_enhanced_memory")

# 2: chunks.chunk_id dropped (written, never read)
# 3: vectors stored once, as int8 + scale (NULL when in the generation's side
#    file, see .matrices); chunks.line_hashes stored
# 4: files.ctime_ns (an edit that keeps size and mtime still changes it) and
#    files.tail: where a note that only grew is chunked again from (.sync)
SCHEMA_VERSION = 4
INDEX_FILENAME = "index.sqlite"
WAL_LIMIT = 64 << 20  # bytes the WAL is cut back to once a checkpoint empties it
ORIGINAL_INDEX_FILENAME = "index-original.sqlite"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files (
    path TEXT PRIMARY KEY, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL,
    hash TEXT NOT NULL, kind TEXT NOT NULL, date TEXT, ctime_ns INTEGER, tail TEXT
);
CREATE TABLE IF NOT EXISTS chunks (
    id INTEGER PRIMARY KEY, path TEXT NOT NULL, start_line INTEGER NOT NULL,
    end_line INTEGER NOT NULL, header TEXT NOT NULL, headers TEXT NOT NULL,
    text TEXT NOT NULL, embed_hash TEXT NOT NULL, terms TEXT NOT NULL, line_hashes BLOB
);
CREATE INDEX IF NOT EXISTS chunks_path ON chunks(path);
CREATE TABLE IF NOT EXISTS embed_cache (
    model TEXT NOT NULL, text_hash TEXT NOT NULL, dim INTEGER NOT NULL, vector BLOB,
    PRIMARY KEY (model, text_hash)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS derived (
    name TEXT PRIMARY KEY, generation INTEGER NOT NULL, data BLOB NOT NULL
);
"""


def _to_v3(conn: sqlite3.Connection) -> None:
    """float32 cache rows to int8 + scale in place (same keys: nothing is re-embedded).

    The float32 matrix copies in ``derived`` go; line hashes are filled in by
    the next sync (which knows the settings that cut lines).
    """
    conn.execute("ALTER TABLE chunks ADD COLUMN line_hashes BLOB")
    conn.execute(
        "CREATE TABLE embed_cache_v3 (model TEXT NOT NULL, text_hash TEXT NOT NULL,"
        " dim INTEGER NOT NULL, vector BLOB, PRIMARY KEY (model, text_hash)) WITHOUT ROWID"
    )
    rows = conn.execute("SELECT model, text_hash, dim, vector FROM embed_cache")
    while batch := rows.fetchmany(4096):
        by_dim: dict[int, list[tuple[str, str, bytes]]] = {}
        for model, text_hash, dim, blob in batch:
            if blob is not None and len(blob) == dim * 4:  # anything else is damage: re-embed
                by_dim.setdefault(dim, []).append((model, text_hash, blob))
        for dim, group in by_dim.items():
            floats = np.frombuffer(b"".join(b for *_, b in group), np.float32).reshape(-1, dim)
            conn.executemany(
                "INSERT INTO embed_cache_v3 VALUES (?,?,?,?)",
                [(m, h, dim, v) for (m, h, _), v in zip(group, encode(floats), strict=True)],
            )
    conn.execute("DROP TABLE embed_cache")
    conn.execute("ALTER TABLE embed_cache_v3 RENAME TO embed_cache")
    conn.execute(
        "DELETE FROM derived WHERE name LIKE 'matrix:%' OR name LIKE 'lines:%'"
        " OR name LIKE 'line-owner:%'"
    )
    conn.execute("INSERT OR REPLACE INTO meta VALUES ('line-hashes', 'missing')")


def _to_v4(conn: sqlite3.Connection) -> None:
    # NULL until the next sync reads each file once (its hash spares the re-chunk).
    conn.execute("ALTER TABLE files ADD COLUMN ctime_ns INTEGER")
    conn.execute("ALTER TABLE files ADD COLUMN tail TEXT")


# version -> the step that brings an index of that version to the next one.
_MIGRATIONS: dict[int, Callable[[sqlite3.Connection], object]] = {
    1: lambda conn: conn.execute("ALTER TABLE chunks DROP COLUMN chunk_id"),
    2: _to_v3,
    3: _to_v4,
}


def default_index_path(workspace: Path, name: str = INDEX_FILENAME) -> Path:
    """``WORKSPACE/.enhanced-memory/index.sqlite``, or a user cache path when read-only.

    A read-only workspace (a mounted share, a benchmark folder) still gets a
    persistent index, under ``$XDG_CACHE_HOME/enhanced-memory/<hash>/``.
    """
    local = workspace / INDEX_DIRNAME
    if writable(local if local.exists() else workspace):
        return local / name
    key = hashlib.sha256(str(workspace.resolve()).encode()).hexdigest()[:16]
    return _cache_root() / key / name


def _cache_root() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "enhanced-memory"


def _named_folders(path: Path) -> list[Path]:
    """The folders of the index at ``path`` that the package named, so may make private.

    A folder the user chose (``--index``) is created private when missing but
    never changed when it exists.
    """
    folder = path.parent
    if folder.name == INDEX_DIRNAME:
        return [folder]
    if folder.parent == _cache_root():
        return [folder.parent, folder]
    return []


class IndexDB:
    """Opens the index file, creating, migrating or setting it aside as needed.

    Args:
        path: The SQLite file.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._local = threading.local()
        self._tightened = False

    def connect(self) -> sqlite3.Connection:
        """A raw connection in autocommit mode with WAL (no schema check)."""
        try:
            make_private(self.path.parent)
        except OSError as exc:
            raise IndexUnavailableError(
                f"cannot create the index folder {self.path.parent}: {exc.strerror or exc}"
            ) from None
        if not self._tightened:  # once per process: a folder stays private once it is
            for folder in _named_folders(self.path):
                tighten(folder)
            self._tightened = True
        # Created here, 0600, so that SQLite (which uses 0644 & ~umask) never creates it.
        with contextlib.suppress(OSError):  # SQLite says what is wrong (read-only, ...)
            os.close(open_private(self.path, os.O_WRONLY | os.O_EXCL))
        conn = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA busy_timeout=30000")
        # A cold index's sync is one transaction of every chunk: without a limit its
        # WAL (400 MB at 1M chunks) stays that size on disk while any connection is open.
        conn.execute(f"PRAGMA journal_size_limit={WAL_LIMIT}")
        return conn

    @contextlib.contextmanager
    def open(self) -> Iterator[sqlite3.Connection]:
        """A checked connection (see :meth:`open_checked`), closed on exit."""
        conn = self.open_checked()
        try:
            yield conn
        finally:
            conn.close()

    @contextlib.contextmanager
    def reader(self) -> Iterator[sqlite3.Connection]:
        """This thread's connection for short reads, kept open between them.

        The hot path of a search reads the generation and a few rows; opening,
        configuring and checking a connection for that cost more than the
        search. Writers use :meth:`open`. The connection is opened anew when
        the file is replaced (set aside, rebuilt) or a read fails.
        """
        local = self._local
        try:
            st = os.stat(self.path)
            identity: tuple[int, int] | None = (st.st_dev, st.st_ino)
        except OSError:
            identity = None
        conn = getattr(local, "conn", None)
        if conn is None or identity is None or local.identity != identity:
            if conn is not None:
                conn.close()
            local.conn = conn = None
            conn = self.open_checked()
            st = os.stat(self.path)
            local.conn, local.identity = conn, (st.st_dev, st.st_ino)
        try:
            yield conn
        except BaseException:
            local.conn = None
            conn.close()
            raise
        if conn.in_transaction:
            conn.execute("ROLLBACK")

    def open_checked(self) -> sqlite3.Connection:
        """Open, creating or migrating the schema; set aside a file that is not an index."""
        try:
            conn = self.connect()
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                log.warning(
                    "index %s has schema %s, this version uses %s: rebuilding it",
                    self.path,
                    version,
                    SCHEMA_VERSION,
                )
                conn.close()
                self._set_aside("old-schema")
                conn = self.connect()
                version = 0
            if version != SCHEMA_VERSION:
                # Only when needed: setting user_version is a write, and a write on
                # every open makes each reader commit and checkpoint on close.
                self._upgrade(conn, version)
            conn.execute("SELECT count(*) FROM meta").fetchone()
            return conn
        except sqlite3.OperationalError as exc:
            # Busy, locked or not openable is not damage: setting the file aside
            # would throw away every cached vector.
            if any(w in str(exc) for w in ("locked", "busy", "unable to open", "readonly")):
                raise IndexUnavailableError(f"index {self.path} is unavailable: {exc}") from None
            return self._rebuild_damaged(exc)
        except sqlite3.DatabaseError as exc:
            return self._rebuild_damaged(exc)

    @staticmethod
    def _upgrade(conn: sqlite3.Connection, version: int) -> None:
        """Create the schema (version 0) or migrate it step by step, in one transaction."""
        conn.execute("BEGIN IMMEDIATE")
        try:
            again = conn.execute("PRAGMA user_version").fetchone()[0]  # another process won
            if again == 0:  # a new file: the current schema as it is
                for statement in _SCHEMA.split(";"):
                    if statement.strip():
                        conn.execute(statement)
            else:
                for step in range(again, SCHEMA_VERSION):
                    _MIGRATIONS[step](conn)
            conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        log.debug("index schema %s -> %s", version, SCHEMA_VERSION)

    def _rebuild_damaged(self, exc: Exception) -> sqlite3.Connection:
        log.warning("index %s is unreadable (%s): rebuilding it from the markdown", self.path, exc)
        self._set_aside("corrupt")
        conn = self.connect()
        self._upgrade(conn, 0)
        return conn

    def _set_aside(self, why: str) -> None:
        stamp = time.strftime("%Y%m%d-%H%M%S")
        for suffix in ("", "-wal", "-shm"):
            p = Path(str(self.path) + suffix)
            if p.exists():
                p.replace(p.with_name(f"{p.name}.{why}-{stamp}"))

    def truncate_wal(self) -> None:
        """Checkpoint the WAL into the file and empty it, unless a reader is mid-read.

        Best effort and without waiting: a searcher's open read keeps the WAL,
        which the next write after it starts over (and cuts back to ``WAL_LIMIT``).
        """
        with self.open() as conn:
            conn.execute("PRAGMA busy_timeout=0")
            with contextlib.suppress(sqlite3.OperationalError):
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def writer_lock(self, wait: bool = True) -> contextlib.AbstractContextManager[bool]:
        """Hold the lock of text syncs; yields False when ``wait`` is off and it is busy."""
        return _flock(self.path.with_suffix(".lock"), wait)

    def embed_lock(self, wait: bool = True) -> contextlib.AbstractContextManager[bool]:
        """Hold the lock of embedding runs (so two runs embed each text once).

        Apart from the writer lock: an embedding run lasts minutes, and a text
        sync (an edit the next search must see) never waits for it.
        """
        return _flock(self.path.with_suffix(".embed.lock"), wait)


@contextlib.contextmanager
def _flock(path: Path, wait: bool) -> Iterator[bool]:
    import fcntl

    make_private(path.parent)
    fd = open_private(path, os.O_RDWR)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def get_meta(conn: sqlite3.Connection, key: str, default: str = "") -> str:
    """A value of the ``meta`` table."""
    row = conn.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
    return row[0] if row else default


def generation_of(conn: sqlite3.Connection) -> int:
    """The committed generation of the text state (0 when never synced)."""
    return int(get_meta(conn, "generation", "0"))


def chunk_ids(conn: sqlite3.Connection) -> np.ndarray:
    """The generation's chunk ids, ascending (row ``i`` of a snapshot is ``chunk_ids[i]``)."""
    # One string and one parse instead of a Python int per row (100k: 40 ms, not 60).
    text = conn.execute("SELECT group_concat(id, ' ') FROM chunks").fetchone()[0]
    return np.sort(np.fromstring(text or "", dtype=np.int64, sep=" "))
