"""``make postgres`` (scripts/postgres.py): a user's local PostgreSQL, started and stopped."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import psutil
import psycopg
import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "postgres.py"
EXPORT = "export ENHANCED_MEMORY_DATABASE_URL="


def _start(folder: Path) -> tuple[subprocess.Popen[str], str]:
    """Run the script until it prints the URL to export: the process and the URL."""
    proc = subprocess.Popen(
        [sys.executable, str(SCRIPT), "--dir", str(folder)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith(EXPORT):
            return proc, line[len(EXPORT) :].strip()
    _, err = proc.communicate(timeout=30)
    raise AssertionError(f"no URL printed (exit {proc.returncode}): {err}")


def _interrupt(proc: subprocess.Popen[str]) -> str:
    """Ctrl-C: the script stops its server and exits 0; what it printed after the URL."""
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    return out


def test_make_postgres_serves_pgvector_until_ctrl_c_and_keeps_the_data(tmp_path: Path) -> None:
    folder = tmp_path / "pg"
    proc, url = _start(folder)
    try:
        password = url.split("@")[0].rsplit(":", 1)[1]
        with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
            psycopg.connect(url.replace(password, "wrong"))
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION vector")
            conn.execute("CREATE TABLE kept (v vector(2))")
            conn.execute("INSERT INTO kept VALUES ('[1,2]')")
        postmaster = int((folder / "data" / "postmaster.pid").read_text().split()[0])
    finally:
        out = _interrupt(proc)
    assert "stopped." in out
    assert not (folder / "data" / "postmaster.pid").exists()
    assert not psutil.pid_exists(postmaster) or psutil.Process(postmaster).status() == "zombie"

    # The next start finds the same folder, URL and data.
    proc, again = _start(folder)
    try:
        assert again == url
        with psycopg.connect(url) as conn:
            assert conn.execute("SELECT v::text FROM kept").fetchall() == [("[1,2]",)]
    finally:
        _interrupt(proc)
