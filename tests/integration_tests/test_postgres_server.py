"""The real PostgreSQL of the database tests (tests/postgres.py) does what they rely on."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import psycopg
import pytest

from tests.postgres import PgServer


def test_a_fresh_database_has_pgvector(database_url: str) -> None:
    with psycopg.connect(database_url, autocommit=True) as conn:
        tables = "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"
        assert conn.execute(tables).fetchone() == (0,)
        conn.execute("CREATE EXTENSION vector")
        row = conn.execute("SELECT '[1,2,3]'::vector <=> '[1,2,3]'::vector").fetchone()
    assert row == (0.0,)


def test_each_test_gets_its_own_database(pg_server: PgServer, database_url: str) -> None:
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE mine (x int)")
    with pg_server.connect() as conn:
        assert conn.execute("SELECT to_regclass('mine')").fetchone() == (None,)


def test_a_wrong_password_is_refused(pg_server: PgServer) -> None:
    with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
        psycopg.connect(pg_server.url_of(password="wrong"))
    # Over the Unix socket too: no trust authentication anywhere.
    wrong = pg_server.socket_url.replace(pg_server.password, "wrong")
    with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
        psycopg.connect(wrong)
    with psycopg.connect(pg_server.socket_url) as conn:
        assert conn.execute("SELECT 1").fetchone() == (1,)


def test_a_write_on_the_primary_is_read_on_the_replica(pg_replica: PgServer) -> None:
    primary = pg_replica.primary
    assert primary is not None
    url = primary.create_database("replicated")
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE TABLE notes (body text)")
        conn.execute("INSERT INTO notes VALUES ('written on the primary')")
    pg_replica.wait_caught_up()
    with psycopg.connect(pg_replica.url_of("replicated"), autocommit=True) as conn:
        assert conn.execute("SELECT body FROM notes").fetchall() == [("written on the primary",)]
        assert conn.execute("SELECT pg_is_in_recovery()").fetchone() == (True,)
        with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
            conn.execute("INSERT INTO notes VALUES ('written on the replica')")


def test_a_killed_server_starts_again_with_its_data(pg_private: PgServer) -> None:
    url = pg_private.create_database("survivor")
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE TABLE notes (body text)")
        conn.execute("INSERT INTO notes VALUES ('before the crash')")
        pg_private.kill()
        assert not pg_private.running
        with pytest.raises(psycopg.OperationalError):
            conn.execute("SELECT 1")
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(url, connect_timeout=5)
    pg_private.start()
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT body FROM notes").fetchall() == [("before the crash",)]


def test_a_restart_keeps_the_port_and_the_data(pg_private: PgServer) -> None:
    url = pg_private.create_database("kept")
    pg_private.restart()
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT current_database()").fetchone() == ("kept",)


def test_no_process_is_left_after_a_stop() -> None:
    server = PgServer().start()
    processes = server.processes()
    assert len(processes) > 1  # the postmaster and its helpers
    server.close()
    assert not server.running
    assert [p for p in processes if p.is_running() and p.status() != "zombie"] == []
    assert not server.root.exists()


# Starts a server, says its folder and postmaster, then waits to be killed.
_KILLED_RUN = """
from tests.postgres import PgServer
server = PgServer().start()
print(server.root, server.pid, flush=True)
input()
"""


@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGTERM])
def test_a_killed_test_run_leaves_no_server_and_no_folder(signum: int) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", _KILLED_RUN], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        text=True, cwd=Path(__file__).resolve().parents[2],
    )  # fmt: skip
    assert proc.stdout is not None
    root, pid = proc.stdout.readline().split()
    postmaster = psutil.Process(int(pid))
    proc.send_signal(signum)  # neither runs atexit hooks nor fixture finalizers
    proc.wait()
    # The watchdog acts at once; the deadline only bounds a failure.
    deadline = time.monotonic() + 60
    while (Path(root).exists() or _alive(postmaster)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(postmaster)
    assert not Path(root).exists()


def _alive(proc: psutil.Process) -> bool:
    try:
        return proc.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
