"""Scopes you can manage (issue 39, item 4): list, drop, rename, from the CLI and from Python.

Against a real PostgreSQL: a dropped scope leaves no row in any ``em_`` table and
a reader that held it answers empty, then only the scope made anew; a rename
keeps the content at a new generation; a write racing a drop commits before it
or fails in one line (or makes the scope anew after it); a read-only role is
told it may not write; a database-backed scope is never published over, and
the refusal names ``scopes drop``.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from datetime import date
from pathlib import Path
from typing import Any

import psycopg
import pytest

from langchain_enhanced_memory.core.errors import DatabaseError, ScopeError
from langchain_enhanced_memory.engine.config import EngineConfig
from langchain_enhanced_memory.engine.scoped import parse_scope_arg, scoped_search
from langchain_enhanced_memory.scopes import (
    describe_scope,
    drop_scope,
    list_scopes,
    rename_scope,
)
from langchain_enhanced_memory.store.database import Database
from langchain_enhanced_memory.store.database import scopes as sql
from tests.cli_run import run_cli
from tests.integration_tests.test_database_serve_faults import serving_scope
from tests.workspaces import SMALL_WORKSPACE, write_workspace

NONE = ["--embedder", "none"]
DAY = date(2026, 12, 9)
TABLES = {"em_scopes": "name", "em_files": "scope", "em_notes": "scope", "em_segments": "scope"}


def ok(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    r = run_cli(*args, **env)
    assert r.returncode == 0, r.stderr
    return r


def failed(r: subprocess.CompletedProcess[str]) -> str:
    """The one error line of a failed command (after any password warning)."""
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    lines = [ln for ln in r.stderr.strip().splitlines() if "warning: the password in" not in ln]
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    return lines[0]


def mentions(url: str, scope: str, word: str) -> dict[str, int]:
    """Rows of each ``em_`` table that name ``scope``, and rows anywhere that hold ``word``."""
    found = {}
    with psycopg.connect(url) as conn:
        for table, column in TABLES.items():
            row = conn.execute(
                f"SELECT count(*) FROM {table} WHERE {column} = %s",  # noqa: S608
                (scope,),
            ).fetchone()
            found[table] = int(row[0]) if row else -1
        row = conn.execute(
            "SELECT (SELECT count(*) FROM em_notes WHERE strpos(body, %s) > 0)"
            " + (SELECT count(*) FROM em_segments WHERE position(%s::bytea in data) > 0)",
            (word, word.encode()),
        ).fetchone()
        found["word"] = int(row[0]) if row else -1
    return found


def test_list_drop_and_rename_on_the_command_line(database_url: str, tmp_path: Path) -> None:
    db = ["--database", database_url]
    ws = write_workspace(tmp_path / "ws", SMALL_WORKSPACE)
    ok("index", "--workspace", str(ws), *db, "--scope", "alpha", *NONE)
    ok("remember", "kestrel seen at the lake", *db, "--scope", "team", *NONE)
    listed = json.loads(ok("scopes", "list", *db, "--json").stdout)["scopes"]
    assert [s["name"] for s in listed] == ["alpha", "team"]
    alpha, team = listed
    assert alpha["backing"] == "folder" and str(ws.resolve()) in alpha["owner"]
    assert alpha["files"] == 4 and alpha["chunks"] > 0 and alpha["generation"] > 0
    assert team["backing"] == "database" and team["owner"] is None
    assert team["files"] == 1 and team["chunks"] >= 1 and team["updated"].startswith("20")
    text = ok("scopes", "list", ENHANCED_MEMORY_DATABASE_URL=database_url).stdout
    assert "alpha" in text and "team" in text and "database" in text

    # drop without --yes: refused, and the line says what would go
    line = failed(run_cli("scopes", "drop", "team", *db))
    assert "--yes" in line and f"1 file and {team['chunks']} chunk" in line
    assert mentions(database_url, "team", "kestrel")["em_scopes"] == 1
    gone = json.loads(ok("scopes", "drop", "team", "--yes", *db, "--json").stdout)
    assert gone["scope"]["name"] == "team" and gone["scope"]["chunks"] == team["chunks"]
    assert mentions(database_url, "team", "kestrel") == dict.fromkeys([*TABLES, "word"], 0)
    assert "does not exist" in failed(run_cli("scopes", "drop", "team", "--yes", *db))
    r = run_cli("search", "kestrel", *db, "--scope", "team", "--json", *NONE)
    assert r.returncode == 0 and json.loads(r.stdout)["results"] == []

    # rename: content kept, generation moved on, the old name empty, no name taken twice
    renamed = json.loads(ok("scopes", "rename", "alpha", "beta", *db, "--json").stdout)
    assert renamed["old"] == "alpha"
    done = renamed["scope"]
    assert done["name"] == "beta" and done["generation"] > alpha["generation"]
    assert json.loads(ok("scopes", "list", *db, "--json").stdout)["scopes"][0] == done
    assert (done["files"], done["chunks"], done["owner"]) == (4, alpha["chunks"], alpha["owner"])
    assert mentions(database_url, "alpha", "-")["em_segments"] == 0
    got = json.loads(ok("get", "MEMORY.md", *db, "--scope", "beta", "--json").stdout)
    assert "dark roast coffee" in got["text"]
    r = run_cli("search", "coffee", *db, "--scope", "beta", "--json", *NONE)
    assert json.loads(r.stdout)["results"][0]["path"] == "MEMORY.md"
    r = run_cli("search", "coffee", *db, "--scope", "alpha", "--json", *NONE)
    assert json.loads(r.stdout)["results"] == []
    ok("remember", "osprey nest", *db, "--scope", "team", *NONE)
    line = failed(run_cli("scopes", "rename", "beta", "team", *db))
    assert "team exists already" in line
    assert "is named beta already" in failed(run_cli("scopes", "rename", "beta", "beta", *db))
    after = json.loads(ok("scopes", "list", *db, "--json").stdout)["scopes"]
    assert [s["name"] for s in after] == ["beta", "team"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["scopes", "list"], "give --database"),
        (
            ["scopes", "drop", "Team", "--yes", "--database", "postgresql://x@127.0.0.1:9/m"],
            "is not a valid name",
        ),  # fmt: skip
        (
            ["scopes", "rename", "a", "B c", "--database", "postgresql://x@127.0.0.1:9/m"],
            "is not a valid name",
        ),  # fmt: skip
        (["scopes", "drop"], "NAME"),
    ],
)
def test_bad_scopes_command_lines_are_one_line(args: list[str], message: str) -> None:
    assert message in failed(run_cli(*args))


def test_the_python_functions_and_a_long_lived_reader(
    database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reader that held a scope answers empty once it is dropped, then only the new one."""
    # A cache folder of this test's own: the run's shared one holds other databases' "team".
    # The scope functions read it from the environment; the engine is handed it.
    copies = tmp_path / "segments"
    monkeypatch.setenv("ENHANCED_MEMORY_DATABASE_CACHE", str(copies))
    with Database.connect(database_url, cache=copies) as db:
        db.append("team", "kestrel seen at the lake", now=DAY)
    config = EngineConfig(workspace=tmp_path, embedder="none")
    specs = [parse_scope_arg("team")]
    with scoped_search(config, specs, database_url, cache=copies) as reader:
        first = reader.run(_request("kestrel"))
        assert len(first.hits) == 1
        held = _copies("team")  # this host's copies of its segments
        assert held
        info = describe_scope("team", database_url)
        assert (info.backing, info.files) == ("database", 1)
        assert [s.name for s in list_scopes(database_url)] == ["team"]
        dropped = drop_scope("team", database_url)
        assert dropped.chunks == info.chunks and list_scopes(database_url) == []
        assert reader.run(_request("kestrel")).hits == []
        assert not held & _copies("team")  # and its copies are gone
        with Database.connect(database_url, cache=copies) as db:
            db.append("team", "osprey nest by the river", now=DAY)
        assert reader.run(_request("kestrel")).hits == []
        remade = reader.run(_request("osprey")).hits
        assert len(remade) == 1 and "kestrel" not in remade[0].text
        assert describe_scope("team", database_url).generation > info.generation
        # a rename: the reader of the old name answers empty, one of the new name finds it
        renamed = rename_scope("team", "crew", database_url)
        assert renamed.name == "crew" and renamed.files == 1
        assert reader.run(_request("osprey")).hits == []
    with scoped_search(config, [parse_scope_arg("crew")], database_url) as crew:
        assert len(crew.run(_request("osprey")).hits) == 1
    with pytest.raises(ScopeError, match="does not exist"):
        drop_scope("team", database_url)
    with Database.connect(database_url) as db:
        db.append("team", "a scope of the old name again", now=DAY)
    with pytest.raises(ScopeError, match="crew exists already"):
        rename_scope("team", "crew", database_url)


def _copies(scope: str) -> set[Path]:
    return set(Path(os.environ["ENHANCED_MEMORY_DATABASE_CACHE"]).glob(f"*/{scope}/*.emseg"))


def test_the_functions_need_a_database(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ENHANCED_MEMORY_DATABASE_URL", raising=False)
    with pytest.raises(ScopeError, match="none is given"):
        list_scopes()


def _request(query: str) -> Any:
    from langchain_enhanced_memory.core.request import SearchRequest

    return SearchRequest.parse(query=query, k=5)


def _waiting_on_a_lock(url: str) -> None:
    """Return once another session of the database waits on a lock (a row of em_scopes)."""
    deadline = time.monotonic() + 60
    with psycopg.connect(url, autocommit=True) as conn:
        while time.monotonic() < deadline:
            row = conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                " AND wait_event_type = 'Lock'"
            ).fetchone()
            if row and row[0]:
                return
            time.sleep(0.02)
    raise AssertionError("no write came to wait on the scope's row")


def _append_in_thread(url: str, text: str) -> tuple[threading.Thread, list[object]]:
    out: list[object] = []

    def append() -> None:
        try:
            with Database.connect(url) as db:
                out.append(db.append("team", text, now=DAY))
        except Exception as exc:  # noqa: BLE001 (the test reads what it was)
            out.append(exc)

    thread = threading.Thread(target=append)
    thread.start()
    return thread, out


@pytest.mark.parametrize("action", ["drop", "rename"])
def test_an_append_that_waited_on_a_drop_or_rename_fails_in_one_line(
    database_url: str, action: str
) -> None:
    with Database.connect(database_url) as db:
        db.append("team", "kestrel seen at the lake", now=DAY)
    with psycopg.connect(database_url) as held:  # the drop's (rename's) transaction, held open
        held.execute("SELECT 1 FROM em_scopes WHERE name = 'team' FOR UPDATE")
        thread, out = _append_in_thread(database_url, "osprey nest by the river")
        _waiting_on_a_lock(database_url)  # the append met the row, waits for its lock
        if action == "drop":
            sql.drop_scope(held, "team")
        else:
            sql.rename_scope(held, "team", "crew")
        held.commit()
    thread.join(60)
    (err,) = out
    assert isinstance(err, ScopeError), err
    assert "dropped or renamed while this write waited" in str(err) and "\n" not in str(err)
    assert mentions(database_url, "team", "osprey") == dict.fromkeys([*TABLES, "word"], 0)
    assert (mentions(database_url, "crew", "kestrel")["word"] > 0) == (action == "rename")


def test_an_append_queued_behind_a_drop_makes_the_scope_anew(database_url: str) -> None:
    with Database.connect(database_url) as db:
        db.append("team", "kestrel seen at the lake", now=DAY)
    with psycopg.connect(database_url) as dropping:
        sql.drop_scope(dropping, "team")  # deleted, not committed yet
        thread, out = _append_in_thread(database_url, "osprey nest by the river")
        _waiting_on_a_lock(database_url)
        dropping.commit()
    thread.join(60)
    assert not isinstance(out[0], Exception), out
    with Database.connect(database_url) as db:
        text = db.read("team", "memory/2026-12-09.md").text
        assert "osprey" in text and "kestrel" not in text
        assert db.scope("team").files == 1
    assert mentions(database_url, "team", "kestrel")["word"] == 0


def test_a_read_only_role_lists_and_is_told_it_may_not_write(
    database_url: str, read_only_url: str
) -> None:
    with Database.connect(database_url) as db:
        db.append("team", "a fact all agents read", now=DAY)
    ro = read_only_url
    listed = json.loads(ok("scopes", "list", "--json", ENHANCED_MEMORY_DATABASE_URL=ro).stdout)
    assert [s["name"] for s in listed["scopes"]] == ["team"]
    for args in (["drop", "team", "--yes"], ["rename", "team", "crew"]):
        line = failed(run_cli("scopes", *args, ENHANCED_MEMORY_DATABASE_URL=ro))
        assert "this role may not write" in line and "permission denied" in line
        assert "ro-secret-1" not in line
    with pytest.raises(DatabaseError, match="may not write"):
        drop_scope("team", ro)
    assert [s.name for s in list_scopes(database_url)] == ["team"]


def test_take_over_republishes_a_folder_scope_and_never_a_database_one(
    database_url: str, tmp_path: Path
) -> None:
    db = ["--database", database_url]
    a = write_workspace(tmp_path / "a", SMALL_WORKSPACE)
    b = write_workspace(tmp_path / "b", SMALL_WORKSPACE)
    ok("index", "--workspace", str(a), *db, "--scope", "alpha", *NONE)
    ok("index", "--workspace", str(b), *db, "--scope", "alpha", "--take-over", *NONE)
    # The new owner publishes again, with no flag; the old one is refused, naming the new.
    with (b / "MEMORY.md").open("a", encoding="utf-8") as fh:
        fh.write("\n- The heron moved to the north pond.\n")
    again = json.loads(
        ok("index", "--workspace", str(b), *db, "--scope", "alpha", "--json", *NONE).stdout
    )
    assert again["published"]["changed"] == 1
    line = failed(run_cli("index", "--workspace", str(a), *db, "--scope", "alpha", *NONE))
    assert str(b.resolve()) in line and "--take-over" in line
    r = run_cli("search", "heron", *db, "--scope", "alpha", "--json", *NONE)
    assert json.loads(r.stdout)["results"][0]["path"] == "MEMORY.md"

    # A database-backed scope is never published over, even with --take-over.
    ok("remember", "kestrel seen at the lake", *db, "--scope", "team", *NONE)
    pub = ["index", "--workspace", str(a), *db, "--scope", "team", *NONE]
    line = failed(run_cli(*pub, "--take-over"))
    assert "database-backed" in line and "scopes drop team --yes" in line
    ok("scopes", "drop", "team", "--yes", *db)
    ok(*pub)
    assert describe_scope("team", database_url).backing == "folder"


def test_a_running_serve_answers_a_dropped_scope_empty_then_only_the_new_one(
    database_url: str, tmp_path: Path
) -> None:
    db = ["--database", database_url, "--scope", "team", *NONE]
    ok("remember", "kestrel seen at the lake", *db)
    with serving_scope(database_url, tmp_path) as server:
        status, doc = server.search(query="kestrel")
        assert status == 200 and len(doc["results"]) == 1, doc
        ok("scopes", "drop", "team", "--yes", "--database", database_url)
        status, doc = server.search(query="kestrel")
        assert status == 200 and doc["results"] == [], doc
        ok("remember", "osprey nest by the river", *db)
        status, doc = server.search(query="kestrel")
        assert status == 200 and doc["results"] == [], doc
        status, doc = server.search(query="osprey")
        assert status == 200 and len(doc["results"]) == 1, doc


def test_writers_need_only_the_primary_while_the_replica_is_down(
    database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # $ENHANCED_MEMORY_READ_URL is set for the searches; a publish, a drop, a rename, the
    # scopes command, remember and forget work on the primary alone, so a replica that is
    # down stops none of them.
    down = {"ENHANCED_MEMORY_READ_URL": "postgresql://x@127.0.0.1:9/m"}
    db = ["--database", database_url]
    ws = write_workspace(tmp_path / "ws", SMALL_WORKSPACE)
    ok("index", "--workspace", str(ws), *db, "--scope", "alpha", *NONE, **down)
    ok(
        "index",
        "--workspace",
        str(ws),
        *db,
        "--scope",
        "alpha",
        "--read-url",
        down["ENHANCED_MEMORY_READ_URL"],
        *NONE,
    )
    ok("index", "--workspace", str(ws), *db, "--scope", "gamma", *NONE, **down)
    listed = json.loads(ok("scopes", "list", *db, "--json", **down).stdout)["scopes"]
    assert [s["name"] for s in listed] == ["alpha", "gamma"]
    ok("scopes", "rename", "alpha", "beta", *db, **down)
    ok("scopes", "drop", "beta", "--yes", *db, **down)
    ok("remember", "heron by the weir", "--file", "MEMORY.md", "--scope", "team", *db, **down)
    ok("forget", "--match", "heron", "--scope", "team", *db, **down)
    ok("scopes", "drop", "team", "--yes", *db, **down)
    monkeypatch.setenv(*down.popitem())
    assert rename_scope("gamma", "delta", database_url).name == "delta"
    assert drop_scope("delta", database_url).name == "delta"
    with pytest.raises(DatabaseError, match="127.0.0.1"):  # a read still goes to the replica
        list_scopes(database_url)
    assert mentions(database_url, "delta", "-")["em_scopes"] == 0
