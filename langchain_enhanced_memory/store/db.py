"""The index's SQLite file: where it lives, opening it safely, the writer lock, ``meta``.

One SQLite file per workspace (WAL, so readers see a consistent snapshot while
a writer runs). An advisory ``fcntl`` lock on a side file serializes writers.
A file that is not a valid index is set aside and rebuilt from the markdown,
which is never written; a busy, locked or unopenable file is reported, not set
aside (that would drop every cached vector). Only what is recognisably ours is
set aside: at a path the package chose (``.enhanced-memory/index.sqlite``, the
cache folder's) any file, at a path the user named (``--index``,
``$ENHANCED_MEMORY_INDEX``) only a SQLite file holding our tables; any other
existing file there (a note, a config file, another program's database) is
refused and left exactly as it was. An index of another schema
version is set aside and rebuilt like a damaged one, its vectors embedded
again: an older one is of an earlier release (0.1.0 wrote version 4) or of a
format no release wrote (1-3), a newer one of a later release.

The index holds the notes' text, so it is private to its owner wherever it
lives: its folders are 0700 and its files 0600 (SQLite gives the WAL and
shared-memory files the database file's mode). An index folder the package
names (``.enhanced-memory/``, or the cache folder of a read-only workspace)
that an earlier version left open to others is tightened on its first open.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from ..core.errors import DiskFullError, IndexUnavailableError
from . import process
from .locations import INDEX_DIRNAME, make_private, open_private, tighten, writable

__all__ = [
    "cache_root",
    "INDEX_DIRNAME",
    "INDEX_FILENAME",
    "ORIGINAL_INDEX_FILENAME",
    "SCHEMA_VERSION",
    "IndexDB",
    "chunk_ids",
    "default_index_path",
    "disk_full",
    "index_folder",
    "rollback",
]

log = logging.getLogger("langchain_enhanced_memory")

# An index of any other version is rebuilt. 5: the table ``derived`` named ``catalog``;
# 6: ``embed_cache`` without its ``vector`` column (the vectors are in side files);
# 7: no ``embed_cache`` (which texts a model has a vector of is in those files alone).
SCHEMA_VERSION = 7
_FIRST_RELEASED = 4  # 0.1.0's; versions before it were never released
# A released version's steps to the next one, applied in place: an upgrade keeps the
# embedding cache (vectors that may have taken hours of a remote embedder).
_UPGRADES: dict[int, tuple[str, ...]] = {
    4: ("ALTER TABLE derived RENAME TO catalog",),
    5: ("ALTER TABLE embed_cache DROP COLUMN vector",),
    6: ("DROP TABLE embed_cache",),
}
INDEX_FILENAME = "index.sqlite"
WAL_LIMIT = 64 << 20  # bytes the WAL is cut back to once a checkpoint empties it
ORIGINAL_INDEX_FILENAME = "index-original.sqlite"
#: Free bytes under which a failed SQLite write is put down to a full disk.
_FULL_BYTES = 1 << 20
_SQLITE_MAGIC = b"SQLite format 3\x00"
# Tables every schema version of ours has: a SQLite file without them is someone else's.
_OUR_TABLES = frozenset({"meta", "files", "chunks"})

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
CREATE TABLE IF NOT EXISTS catalog (
    name TEXT PRIMARY KEY, generation INTEGER NOT NULL, data BLOB NOT NULL
);
"""


def default_index_path(workspace: Path, name: str = INDEX_FILENAME) -> Path:
    """``WORKSPACE/.enhanced-memory/index.sqlite``, or a user cache path when read-only."""
    return index_folder(workspace) / name


def index_folder(workspace: Path) -> Path:
    """The workspace's private folder: ``WORKSPACE/.enhanced-memory/``, or a cache folder.

    A read-only workspace (a mounted share, a benchmark folder) still gets a
    persistent index, under ``$XDG_CACHE_HOME/enhanced-memory/<hash>/``.
    """
    local = workspace / INDEX_DIRNAME
    if writable(local if local.exists() else workspace):
        return local
    key = hashlib.sha256(str(workspace.resolve()).encode()).hexdigest()[:16]
    return cache_root() / key


def cache_root() -> Path:
    """This user's cache folder of the package (``$XDG_CACHE_HOME/enhanced-memory``)."""
    return Path(process.current().cache_home) / "enhanced-memory"


def _named_folders(path: Path) -> list[Path]:
    """The folders of the index at ``path`` that the package named, so may make private.

    A folder the user chose (``--index``) is created private when missing but
    never changed when it exists.
    """
    folder = path.parent
    if folder.name == INDEX_DIRNAME:
        return [folder]
    if folder.parent == cache_root():
        return [folder.parent, folder]
    return []


def _ours_by_place(path: Path) -> bool:
    """Whether ``path`` is an index file where the package itself puts one."""
    return path.name in (INDEX_FILENAME, ORIGINAL_INDEX_FILENAME) and bool(_named_folders(path))


def _foreign(path: Path) -> bool:
    """Whether ``path`` holds data that is not one of our indexes (missing or empty: no).

    Read without writing a byte: only the header, then a read-only SQLite
    connection listing the tables. A SQLite file that cannot be read counts as
    foreign: nothing says it is ours.
    """
    try:
        with open(path, "rb") as fh:
            head = fh.read(len(_SQLITE_MAGIC))
    except OSError:  # missing, or unopenable: connect() says what is wrong
        return False
    if not head:
        return False
    if head != _SQLITE_MAGIC:
        return True
    try:
        conn = sqlite3.connect(f"{path.absolute().as_uri()}?mode=ro", uri=True)
        try:
            rows = conn.execute("SELECT name FROM sqlite_master WHERE type='table'").fetchall()
        finally:
            conn.close()
    except sqlite3.Error:
        return True
    return not _OUR_TABLES <= {name for (name,) in rows}


class IndexDB:
    """Opens the index file, creating it or setting it aside and rebuilding it as needed.

    Args:
        path: The SQLite file.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._local = threading.local()
        self._tightened = False
        # A file at a path the user named is checked once, before anything writes to it.
        self._checked = _ours_by_place(path)

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
        # WAL (as large as that transaction) stays that size on disk while any connection is open.
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
        """Open, creating the schema; set aside a file that is not an index of this schema.

        Raises:
            IndexUnavailableError: The index is busy or cannot be opened, or the user
                named an existing file that is not one of our indexes (left untouched).
        """
        self.refuse_foreign()
        try:
            conn = self.connect()
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            if version == 0:
                # Only when needed: setting user_version is a write, and a write on
                # every open makes each reader commit and checkpoint on close.
                version = self._create(conn)
            if _FIRST_RELEASED <= version < SCHEMA_VERSION:
                version = self._upgrade(conn, version)
            if version != SCHEMA_VERSION:
                conn.close()
                if version > SCHEMA_VERSION:
                    kind = "a newer"
                elif version >= _FIRST_RELEASED:
                    kind = "an older"
                else:
                    kind = "an unreleased"
                return self._rebuild(
                    f"is of {kind} format (schema {version}, not {SCHEMA_VERSION})",
                    f"schema{version}",
                )
            conn.execute("SELECT count(*) FROM meta").fetchone()
            return conn
        except sqlite3.OperationalError as exc:
            if disk_full(exc, self.path.parent):
                return self._frozen()
            # Busy, locked, unopenable or an I/O error is not damage: setting the file
            # aside would throw away every cached vector.
            if any(w in str(exc) for w in ("locked", "busy", "unable to open", "readonly", "I/O")):
                raise IndexUnavailableError(f"index {self.path} is unavailable: {exc}") from None
            return self._rebuild(f"is unreadable ({exc})", "corrupt")
        except sqlite3.DatabaseError as exc:
            return self._rebuild(f"is unreadable ({exc})", "corrupt")

    def refuse_foreign(self) -> None:
        """Refuse, before anything is written beside it, a named file that is not ours.

        Raises:
            IndexUnavailableError: The file holds someone else's data.
        """
        if self._checked:
            return
        if _foreign(self.path):
            raise IndexUnavailableError(
                f"{self.path} is not an enhanced-memory index: refused, nothing was changed",
                "name a new file with --index (or $ENHANCED_MEMORY_INDEX),"
                " or leave it out to use WORKSPACE/.enhanced-memory/",
            )
        self._checked = True

    @staticmethod
    def _create(conn: sqlite3.Connection) -> int:
        """Create the schema in a new file, in one transaction; returns the file's version.

        That is another version when another process made the file meanwhile.
        """
        conn.execute("BEGIN IMMEDIATE")
        try:
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            if version == 0:
                for statement in _SCHEMA.split(";"):
                    if statement.strip():
                        conn.execute(statement)
                conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
                version = SCHEMA_VERSION
            conn.execute("COMMIT")
        except BaseException:
            rollback(conn)
            raise
        return int(version)

    def _upgrade(self, conn: sqlite3.Connection, version: int) -> int:
        """Bring a released older schema up to this one in place, in one transaction.

        Returns the file's version after it: unchanged when a step failed (a
        read-only file; the caller then sets the file aside and rebuilds).
        """
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError:
            return version
        try:
            version = conn.execute("PRAGMA user_version").fetchone()[0]  # another may have
            while version in _UPGRADES:
                for statement in _UPGRADES[version]:
                    conn.execute(statement)
                version += 1
                conn.execute(f"PRAGMA user_version={version}")
            conn.execute("COMMIT")
        except sqlite3.Error:
            rollback(conn)
            return int(conn.execute("PRAGMA user_version").fetchone()[0])
        log.info("index %s upgraded in place to schema %d", self.path, version)
        return int(version)

    def _rebuild(self, what: str, why: str) -> sqlite3.Connection:
        """Set the file aside as ``index.sqlite.WHY-STAMP`` and start a new one (one warning)."""
        log.warning("index %s %s: rebuilding it from the markdown", self.path, what)
        self._set_aside(why)
        conn = self.connect()
        self._create(conn)
        return conn

    def _set_aside(self, why: str) -> None:
        stamp = time.strftime("%Y%m%d-%H%M%S")
        for suffix in ("", "-wal", "-shm"):
            p = Path(str(self.path) + suffix)
            if p.exists():
                p.replace(p.with_name(f"{p.name}.{why}-{stamp}"))

    def _frozen(self) -> sqlite3.Connection:
        """The last committed index, read-only, when the disk has no room to open it as usual.

        Opening a WAL file needs room for its shared-memory file. Read as an
        immutable file instead, the last index still answers searches, as long as
        no WAL holds commits beyond it (the last writer checkpointed and removed
        it); writes through it fail, and :meth:`MemoryIndex.sync` says the disk is full.

        Raises:
            DiskFullError: A WAL holds commits the file lacks, or the file is no index.
        """
        with contextlib.suppress(FileNotFoundError):
            if os.stat(f"{self.path}-wal").st_size:
                raise self.full()
        try:
            uri = f"{self.path.absolute().as_uri()}?immutable=1"
            conn = sqlite3.connect(uri, uri=True, isolation_level=None)
            if conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION:
                return conn
            conn.close()
        except sqlite3.Error:
            pass
        raise self.full()

    def full(self) -> DiskFullError:
        """The error of a write this index's disk had no room for."""
        return DiskFullError(
            f"cannot update the index {self.path}: no space left on its disk;"
            " the last index is kept"
        )

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
        self.refuse_foreign()
        return _flock(self.path.with_suffix(".lock"), wait)

    def embed_lock(self, wait: bool = True) -> contextlib.AbstractContextManager[bool]:
        """Hold the lock of embedding runs (so two runs embed each text once).

        Apart from the writer lock: an embedding run lasts minutes, and a text
        sync (an edit the next search must see) never waits for it.
        """
        self.refuse_foreign()
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


def rollback(conn: sqlite3.Connection) -> None:
    """Roll back the open transaction, unless SQLite already has (it does on a full disk).

    Rolling back then would raise "no transaction is active" over the real error.
    """
    if conn.in_transaction:
        conn.execute("ROLLBACK")


def disk_full(exc: BaseException, folder: Path) -> bool:
    """Whether ``exc`` says the disk (or the user's quota) of ``folder`` has no room left.

    SQLite says so (``SQLITE_FULL``) for the database file, but a WAL's or
    shared-memory file's failed growth is an I/O error, and a write through the
    read-only connection of :meth:`IndexDB._frozen` a read-only one: those count
    when ``folder``'s disk has under ``_FULL_BYTES`` free (busy or locked never).
    """
    if isinstance(exc, OSError):
        return exc.errno in (errno.ENOSPC, errno.EDQUOT)
    if not isinstance(exc, sqlite3.OperationalError):
        return False
    name = getattr(exc, "sqlite_errorname", "")
    if name == "SQLITE_FULL" or "disk is full" in str(exc):
        return True
    if not name.startswith(("SQLITE_IOERR", "SQLITE_READONLY")):
        return False
    try:
        st = os.statvfs(folder)
    except OSError:
        return False
    return st.f_bavail * st.f_frsize < _FULL_BYTES


def get_meta(conn: sqlite3.Connection, key: str, default: str = "") -> str:
    """A value of the ``meta`` table."""
    row = conn.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
    return row[0] if row else default


def generation_of(conn: sqlite3.Connection) -> int:
    """The committed generation of the text state (0 when never synced)."""
    return int(get_meta(conn, "generation", "0"))


def chunk_ids(conn: sqlite3.Connection) -> np.ndarray:
    """The generation's chunk ids, ascending (row ``i`` of a snapshot is ``chunk_ids[i]``)."""
    # One string and one parse instead of a Python int per row (faster at 100k chunks).
    text = conn.execute("SELECT group_concat(id, ' ') FROM chunks").fetchone()[0]
    return np.sort(np.fromstring(text or "", dtype=np.int64, sep=" "))
