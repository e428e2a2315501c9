"""The resident engine's pool stays bounded over a long life (issue 38, item 2).

Searches go through ``scoped_search(..., pool=pool)``, the path the resident
engine serves ``search --scope`` by, against the real PostgreSQL server: the
pool keeps its most recently used scope engines, databases and workspace
engines, and closes what falls out (a database's connection pools included).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from langchain_enhanced_memory.core.request import SearchRequest
from langchain_enhanced_memory.engine import EngineConfig, SearchPool
from langchain_enhanced_memory.engine.database import DatabaseSearch
from langchain_enhanced_memory.engine.scoped import scope_specs, scoped_search
from langchain_enhanced_memory.store.database import Database
from tests.reliability.db_driver import DAY
from tests.workspaces import SMALL_WORKSPACE, write_workspace

KESTREL = SearchRequest(query="kestrel", k=5, now=DAY)


@pytest.fixture
def pool() -> Iterator[SearchPool]:
    pool = SearchPool()
    try:
        yield pool
    finally:
        pool.close()


def _search(pool: SearchPool, config: EngineConfig, url: str, name: str, **kw: int) -> list[str]:
    """Search scope ``name`` of ``url`` through ``pool``: the scopes of its hits."""
    search = scoped_search(config, scope_specs([name]), url, pool=pool, cache=None, **kw)
    return [h.scope or "" for h in search.run(KESTREL).hits]


def _backends(url: str) -> set[int]:
    """The server processes of the other connections to ``url``'s database."""
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pid FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        ).fetchall()
    return {pid for (pid,) in rows}


def _gone(url: str, pids: set[int]) -> bool:
    """Whether the server processes ``pids`` have ended (a closed connection's end is async)."""
    deadline = time.monotonic() + 30
    while pids & _backends(url):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_scope_engines_are_kept_to_the_most_recently_used(
    database_url: str, tmp_path: Path, pool: SearchPool
) -> None:
    with Database.connect(database_url, cache=None) as db:
        for name in ("a", "b", "c"):
            db.append(name, f"kestrel seen by {name}", now=DAY)
    config = EngineConfig(workspace=tmp_path, embedder="none")
    pool.max_scopes = 2
    for name in ("a", "b", "c"):
        assert _search(pool, config, database_url, name) == [name]
    assert [at[1] for at in pool.scopes] == ["b", "c"]
    warm = pool.scopes[next(at for at in pool.scopes if at[1] == "b")]
    database = pool.databases[next(iter(pool.databases))]
    assert database.held("a", None) is None  # a fell out: its generation went with it
    assert _search(pool, config, database_url, "a") == ["a"]  # built again, b falls out
    assert [at[1] for at in pool.scopes] == ["c", "a"]
    assert database.held("b", None) is None and database.held("c", None) is not None
    assert _search(pool, config, database_url, "c") == ["c"]  # a warm one is reused
    assert [at[1] for at in pool.scopes] == ["a", "c"] and warm not in pool.scopes.values()
    assert len(pool.databases) == 1  # one connection per URL for all of them


def test_a_scope_stays_held_while_another_engine_of_it_is_warm(
    database_url: str, tmp_path: Path, pool: SearchPool
) -> None:
    with Database.connect(database_url, cache=None) as db:
        for name in ("a", "b"):
            db.append(name, f"kestrel seen by {name}", now=DAY)
    one, two = (EngineConfig(workspace=tmp_path / w, embedder="none") for w in ("1", "2"))
    pool.max_scopes = 2
    for config, name in ((one, "a"), (two, "a"), (one, "b")):  # a's first engine falls out
        assert _search(pool, config, database_url, name) == [name]
    database = pool.databases[next(iter(pool.databases))]
    assert database.held("a", None) is not None  # its other engine still reads it
    assert _search(pool, two, database_url, "b") == ["b"]  # a's last engine falls out
    assert database.held("a", None) is None and database.held("b", None) is not None


def test_a_database_that_falls_out_is_closed_with_its_scopes(
    database_url: str, tmp_path: Path, pool: SearchPool
) -> None:
    with Database.connect(database_url, cache=None) as db:
        db.append("team", "kestrel seen at the lake", now=DAY)
    config = EngineConfig(workspace=tmp_path, embedder="none")
    pool.max_databases = 1
    assert _search(pool, config, database_url, "team", pool_size=2) == ["team"]
    first = _backends(database_url)
    assert first  # the first database's pool keeps a connection open
    # Another pool size is another database key (its own connection pool).
    assert _search(pool, config, database_url, "team", pool_size=3) == ["team"]
    assert len(pool.databases) == 1 and len(pool.scopes) == 1
    assert _gone(database_url, first)  # the first one's connections were closed
    assert _backends(database_url)  # the second one's stay open for its next search


def test_a_workspace_engine_that_falls_out_is_forgotten(tmp_path: Path, pool: SearchPool) -> None:
    a = write_workspace(tmp_path / "a", SMALL_WORKSPACE)
    b = write_workspace(tmp_path / "b", SMALL_WORKSPACE)
    pool.max_engines = 1
    first = pool.get(EngineConfig(workspace=a, embedder="none"))
    first.search("ramen")
    assert pool.moved() is None  # a's index folder is now known
    assert str(first.index_path.parent) in pool.folders
    pool.get(EngineConfig(workspace=b, embedder="none")).search("ramen")
    assert list(pool.folders) == []  # a's folder went with its engine; b's not looked at yet
    assert pool.moved() is None
    assert [e.workspace for e in pool.engines.values()] == [b.absolute()]


def test_a_scope_engine_names_its_scope_once(database_url: str) -> None:
    with Database.connect(database_url, cache=None) as db:
        engine = DatabaseSearch(db, "team", embedder="none")
        assert engine.scope == "team" and engine.scopes == ["team"]
        assert not hasattr(engine._storage, "name")  # the scope, under one name
