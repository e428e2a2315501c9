"""Shared pytest fixtures.

``tests`` is a package: helpers are imported as ``tests.workspaces``,
``tests.fake_ollama``, ``tests.fakes`` and ``tests.cli_run``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from langchain_enhanced_memory.config import load
from tests.cli_run import NO_DAEMON
from tests.fake_ollama import FakeOllama
from tests.postgres import PgServer
from tests.workspaces import SMALL_WORKSPACE, write_workspace

# No test may route to, or start, a resident engine unless it says so (test_resident does).
os.environ.update(NO_DAEMON)


def _env_in_a_temp_folder(
    name: str, folder: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[None]:
    """Point env ``name`` at a new folder of the run's temp folder for the session."""
    before = os.environ.get(name)
    os.environ[name] = str(tmp_path_factory.mktemp(folder))
    yield
    if before is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = before


@pytest.fixture(autouse=True, scope="session")
def _segment_copies_in_a_temp_folder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Database searches keep their segment copies in the run's temp folder, not the user's."""
    yield from _env_in_a_temp_folder("ENHANCED_MEMORY_DATABASE_CACHE", "segments", tmp_path_factory)


@pytest.fixture(autouse=True, scope="session")
def _host_state_in_a_temp_folder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """A publish keeps this host's ``host-id`` in the run's temp folder, not ``~/.local/state``.

    ``XDG_STATE_HOME`` reaches the command-line children too (:func:`tests.cli_run.cli_env`).
    """
    yield from _env_in_a_temp_folder("XDG_STATE_HOME", "state", tmp_path_factory)


@pytest.fixture(autouse=True, scope="session")
def _cache_in_a_temp_folder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Read-only workspaces' indexes and segment copies go to the run's temp folder."""
    yield from _env_in_a_temp_folder("XDG_CACHE_HOME", "cache", tmp_path_factory)


@pytest.fixture(autouse=True)
def _environment_read() -> Iterator[None]:
    """Each test starts, and leaves, with the process settings of its environment.

    Only the entry points read the environment (:func:`~langchain_enhanced_memory.config.load`);
    a test that calls the store directly after changing a variable calls ``load()`` itself.
    """
    load()
    yield
    load()


@pytest.fixture
def read_side_files_as_large_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    """Test workspaces are small: read their side files as a large index's are (pread).

    Autouse in the unit tests; an integration test that must exercise that read path
    (the concurrency stress) asks for it.
    """
    from langchain_enhanced_memory.store import postings, vector_segments

    monkeypatch.setattr(vector_segments, "READ_ABOVE", 0)
    monkeypatch.setattr(postings, "READ_ABOVE", 0)


@pytest.fixture
def fake_ollama() -> Iterator[FakeOllama]:
    """A started :class:`tests.fake_ollama.FakeOllama` with ``nomic-embed-text`` pulled."""
    server = FakeOllama()
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A small English workspace: MEMORY.md, two daily notes, one topic file."""
    return write_workspace(tmp_path / "ws", SMALL_WORKSPACE)


# ---------------------------------------------------------------- PostgreSQL (tests/postgres.py)
# A test that cannot start a server errors: these fixtures never skip.
@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    """The run's one PostgreSQL server (with pgvector): share it, never stop or kill it."""
    server = PgServer().start()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def database_url(pg_server: PgServer, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh empty database on :func:`pg_server` for this test: its URL (with the password)."""
    name = _database_name(request.node.name)
    yield pg_server.create_database(name)
    pg_server.drop_database(name)


@pytest.fixture
def read_only_url(pg_server: PgServer, database_url: str) -> Iterator[str]:
    """The URL of a role of its own that may only SELECT the package's tables (then dropped).

    Its password is ``ro-secret-1``; the tables exist (made here) before the grant.
    """
    import uuid

    import psycopg

    from langchain_enhanced_memory.store.database import Database

    with Database.connect(database_url):
        pass
    role = f"reader_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN PASSWORD 'ro-secret-1'")
        conn.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {role}")
    try:
        yield pg_server.url_of(database_url.rsplit("/", 1)[1], user=role, password="ro-secret-1")
    finally:
        with psycopg.connect(database_url, autocommit=True) as conn:
            conn.execute(f"DROP OWNED BY {role}")
            conn.execute(f"DROP ROLE {role}")


@pytest.fixture
def pg_private() -> Iterator[PgServer]:
    """A started server of this test's own, to stop, restart or kill (about 0.4 s)."""
    server = PgServer().start()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture(scope="session")
def pg_replica() -> Iterator[PgServer]:
    """A hot-standby streaming replica of a primary of its own (``pg_replica.primary``).

    Create a database on the primary (``pg_replica.primary.create_database``), write there,
    then ``pg_replica.wait_caught_up()`` before reading the replica.
    """
    primary = PgServer().start()
    try:
        replica = primary.replica()
        try:
            yield replica
        finally:
            replica.close()
    finally:
        primary.close()


_databases = 0


def _database_name(test: str) -> str:
    """A unique database name that says which test made it."""
    global _databases
    _databases += 1
    return f"t{_databases}_{re.sub(r'[^a-z0-9]+', '_', test.lower())}"[:63]
