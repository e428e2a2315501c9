"""Shared memory on the command line, as processes, against a real PostgreSQL.

The issue's contract: ``index`` publishes a folder as a scope, ``search`` reads
scopes without the folder (each result says its scope, never a scope it did not
name), ``remember``/``get``/``export`` work on a database-backed scope, and a bad
scope or an unreachable database is one line, exit non-zero, no password.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import subprocess
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.cli_run import CLI, cli_env, run_cli
from tests.workspaces import SMALL_WORKSPACE, write_workspace

NOW = "2026-12-09T10:00"


def ok(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    r = run_cli(*args, **env)
    assert r.returncode == 0, r.stderr
    return r


def one_line_failure(r: subprocess.CompletedProcess[str], url: str | None = None) -> str:
    assert r.returncode != 0
    # The one error line, after the warning that --database holds a password.
    lines = [ln for ln in r.stderr.strip().splitlines() if "warning: the password in" not in ln]
    assert len(lines) == 1, r.stderr
    password = urlsplit(url).password if url else None
    if password:
        assert password not in r.stderr and password not in r.stdout
    return lines[0]


def test_remember_get_export_of_a_database_scope(database_url: str, tmp_path: Path) -> None:
    db = ["--database", database_url, "--scope", "team"]
    r = ok("remember", "Chose pgvector for the team search.", *db, "--now", NOW, "--embedder",
           "none", "--json")  # fmt: skip
    done = json.loads(r.stdout)
    assert done["path"] == "memory/2026-12-09.md" and done["scope"] == "team"
    got = json.loads(ok("get", "memory/2026-12-09.md", *db, "--json").stdout)
    assert "Chose pgvector for the team search." in got["text"]
    # The URL from the environment works the same.
    got = ok("get", "memory/2026-12-09.md", "--scope", "team",
             ENHANCED_MEMORY_DATABASE_URL=database_url)  # fmt: skip
    assert "Chose pgvector" in got.stdout
    out = tmp_path / "out"
    ok("export", *db, str(out))
    assert "Chose pgvector" in (out / "memory" / "2026-12-09.md").read_text(encoding="utf-8")
    missing = run_cli("get", "memory/2026-01-01.md", *db, "--json")
    assert missing.returncode == 0 and json.loads(missing.stdout)["text"] == ""


def test_eight_concurrent_remembers_keep_every_line(database_url: str) -> None:
    procs = [
        subprocess.Popen(
            [
                *CLI,
                "remember",
                f"concurrent fact number {n}",
                "--database",
                database_url,
                "--scope",
                "team",
                "--now",
                NOW,
                "--embedder",
                "none",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=cli_env(),
        )  # fmt: skip
        for n in range(8)
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    text = json.loads(
        ok(
            "get", "memory/2026-12-09.md", "--database", database_url, "--scope", "team", "--json"
        ).stdout  # fmt: skip
    )["text"]
    lines = [line for line in text.split("\n") if "concurrent fact number" in line]
    assert sorted(lines) == sorted(f"- concurrent fact number {n}" for n in range(8))


def _indexed_files(workspace: Path) -> int:
    """How many files the workspace's index holds (0 when it has none yet)."""
    path = workspace / ".enhanced-memory" / "index.sqlite"
    if not path.exists():
        return 0
    with contextlib.closing(sqlite3.connect(path)) as conn:
        return int(conn.execute("SELECT count(*) FROM files").fetchone()[0])


def test_publish_then_refuse_another_owner(database_url: str, tmp_path: Path) -> None:
    a = write_workspace(tmp_path / "a", SMALL_WORKSPACE)
    b = write_workspace(tmp_path / "b", SMALL_WORKSPACE)
    pub = ["--database", database_url, "--scope", "alpha", "--embedder", "none"]
    r = json.loads(ok("index", "--workspace", str(a), *pub, "--json").stdout)
    assert r["published"]["scope"] == "alpha" and r["published"]["changed"] == 4
    got = json.loads(ok("get", "MEMORY.md", "--database", database_url, "--scope", "alpha",
                        "--json").stdout)  # fmt: skip
    assert "dark roast coffee" in got["text"]
    line = one_line_failure(run_cli("index", "--workspace", str(b), *pub), database_url)
    assert "--take-over" in line
    # Refused before the index run (issue 36, item 13): b's notes were not indexed.
    assert _indexed_files(b) == 0
    ok("index", "--workspace", str(b), *pub, "--take-over")
    # A folder-backed scope is written in its folder, not with remember.
    line = one_line_failure(
        run_cli(
            "remember", "x", "--database", database_url, "--scope", "alpha", "--embedder", "none"
        )  # fmt: skip
    )
    assert "owning host" in line


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["remember", "x", "--scope", "Bad Name"], "is not a valid name"),
        (["get", "MEMORY.md", "--scope", "team"], "needs --database"),
        (["export", "--scope", "team", "out"], "needs --database"),
        (["index", "--take-over"], "--take-over needs"),
    ],
)
def test_bad_scope_flags_are_one_line(args: list[str], message: str, tmp_path: Path) -> None:
    r = run_cli(*args, cwd=tmp_path)
    assert r.returncode == 2 and message in one_line_failure(r)


@pytest.mark.parametrize(
    "args",
    [
        ["remember", "x", "--scope", "team", "--embedder", "none"],
        ["get", "MEMORY.md", "--scope", "team"],
        ["export", "--scope", "team", "out"],
    ],
)
def test_an_unreachable_database_is_one_line_without_the_password(
    args: list[str], tmp_path: Path
) -> None:
    url = "postgresql://agent:s3cr3t-pw@127.0.0.1:9/memory"
    r = run_cli(*args, "--database", url, cwd=tmp_path)
    line = one_line_failure(r, url)
    assert "127.0.0.1" in line and "***" in line


def test_the_contract_commands(database_url: str, tmp_path: Path) -> None:
    """The issue's five commands as written: host A publishes, host B searches without it."""
    w = write_workspace(tmp_path / "w", SMALL_WORKSPACE)
    elsewhere = tmp_path / "host-b"
    elsewhere.mkdir()
    db = ["--database", database_url]
    flags = ["--embedder", "none"]
    ok("index", "--workspace", str(w), *db, "--scope", "alpha", *flags)
    ok("remember", "The team budget for Postgres is approved.", *db, "--scope", "team",
       "--now", NOW, *flags)  # fmt: skip

    def search(*args: str) -> list[dict]:
        r = run_cli("search", "Postgres", "--json", "--k", "20", *db, *args, *flags,
                    cwd=elsewhere)  # fmt: skip
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout)["results"]

    alpha = search("--scope", "alpha")
    assert alpha and {row["scope"] for row in alpha} == {"alpha"}
    assert {row["path"] for row in alpha} >= {"memory/2026-02-07.md", "memory/2026-02-08.md"}
    both = search("--scope", "alpha", "--scope", "team")
    assert {row["scope"] for row in both} == {"alpha", "team"}
    scores = [row["score"] for row in both]
    assert scores == sorted(scores, reverse=True)
    assert {row["scope"] for row in search("--scope", "team")} == {"team"}
    got = ok("get", "memory/2026-12-09.md", *db, "--scope", "team", cwd=elsewhere)
    assert "budget for Postgres is approved" in got.stdout
    # A line appended in W and published again is found from another folder.
    with (w / "memory" / "2026-02-08.md").open("a", encoding="utf-8") as fh:
        fh.write("\nThe Postgres failover drill is on Friday.\n")
    ok("index", "--workspace", str(w), *db, "--scope", "alpha", *flags)
    assert any("failover drill" in row["snippet"] for row in search("--scope", "alpha"))
    # Mixed: a database scope beside a workspace of this host.
    mine = write_workspace(tmp_path / "mine", {"MEMORY.md": "# Mine\n\nPostgres notes.\n"})
    mixed = search("--scope", "team", "--scope", f"mine={mine}")
    assert {row["scope"] for row in mixed} == {"team", "mine"}


def test_search_errors_are_one_line(database_url: str, tmp_path: Path) -> None:
    url = "postgresql://agent:s3cr3t-pw@127.0.0.1:9/memory"
    r = run_cli("search", "q", "--database", url, "--scope", "team", "--embedder", "none")
    assert "***" in one_line_failure(r, url)
    r = run_cli("search", "q", "--database", database_url, "--scope", "Team")
    assert "is not a valid name" in one_line_failure(r, database_url)


def test_a_fresh_process_keeps_copies_of_the_segments_unless_told_not_to(
    database_url: str, tmp_path: Path
) -> None:
    ws = write_workspace(tmp_path / "ws", SMALL_WORKSPACE)
    ok("index", "--workspace", str(ws), "--database", database_url, "--scope", "alpha",
       "--embedder", "none")  # fmt: skip
    search = ("search", "ramen", "--database", database_url, "--scope", "alpha", "--json",
              "--embedder", "none")  # fmt: skip
    copies = tmp_path / "copies"
    first = ok(*search, ENHANCED_MEMORY_DATABASE_CACHE=str(copies))
    kept = list(copies.rglob("*.emseg"))
    assert kept and all(p.stat().st_mode & 0o777 == 0o600 for p in kept)
    again = ok(*search, ENHANCED_MEMORY_DATABASE_CACHE=str(copies))
    assert json.loads(again.stdout)["results"] == json.loads(first.stdout)["results"]
    none = tmp_path / "xdg"
    ok(*search, ENHANCED_MEMORY_DATABASE_CACHE="0", XDG_CACHE_HOME=str(none))
    assert not none.exists()
