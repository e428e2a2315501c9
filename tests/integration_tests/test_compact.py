"""``enhanced-memory index --compact`` run as a real process on a real index file."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from tests.cli_run import run_cli


def test_index_compact_reclaims_deleted_rows(workspace: Path) -> None:
    env = {"ENHANCED_MEMORY_EMBEDDER": "none"}
    r = run_cli("index", "--workspace", str(workspace), "--json", **env)
    assert r.returncode == 0, r.stderr
    index = Path(json.loads(r.stdout)["index"])
    with sqlite3.connect(index) as conn:  # rows deleted by earlier runs leave free pages
        conn.execute("CREATE TABLE ballast(x)")
        conn.executemany("INSERT INTO ballast VALUES (?)", [(b"\0" * 4000,)] * 300)
        conn.commit()
        conn.execute("DROP TABLE ballast")
        conn.commit()
    r = run_cli("index", "--workspace", str(workspace), "--compact", "--json", **env)
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)["compacted"]
    assert info["after_bytes"] < info["before_bytes"] - 1_000_000
    r = run_cli("index", "--workspace", str(workspace), "--compact", **env)
    assert r.returncode == 0 and "compacted" in r.stdout and " MB -> " in r.stdout
    r = run_cli("search", "billing database Postgres", "--workspace", str(workspace), **env)
    assert r.returncode == 0 and "2026-02-08" in r.stdout
