"""Shared memory's second trust pass (issue 36, items 4, 5, 9, 10, 11), as a user meets it.

No piece of a database password in any output, whatever the URL's shape; the password
kept out of the process list (and a warning when ``--database`` holds one); a scope's
publisher told apart from a host of the same hostname and path; a scope deleted and
made again never mistaken for its old generation by a running ``serve``; searches
read from a streaming replica (``--read-url``, ``$ENHANCED_MEMORY_READ_URL``, the
faces' ``read_url``) and the pool size set.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from langchain_enhanced_memory import EnhancedMemoryRetriever
from langchain_enhanced_memory.engine.scoped import ScopedSearch
from langchain_enhanced_memory.store.database import Database
from langchain_enhanced_memory.store.database.schema import MIGRATIONS
from langchain_enhanced_memory.tools import create_memory_tools
from scripts.postgres import free_port
from tests.cli_run import CLI, cli_env, run_cli, stop
from tests.integration_tests.test_database_serve_faults import serving_scope
from tests.postgres import PgServer
from tests.workspaces import SMALL_WORKSPACE, write_workspace

NONE = ["--embedder", "none"]
WARNING = "warning: the password in --database"


def fragments(password: str) -> list[str]:
    """Every piece of ``password`` between its punctuation and spaces (2 characters or more)."""
    return [p for p in re.split(r"[^A-Za-z0-9]+", password) if len(p) >= 2]


def _remember(url: str, text: str, scope: str = "team") -> None:
    r = run_cli("remember", text, "--scope", scope, *NONE, ENHANCED_MEMORY_DATABASE_URL=url)
    assert r.returncode == 0, r.stderr


def _hits(out: subprocess.CompletedProcess[str], word: str) -> list[bool]:
    """For each hit of a ``search --json`` (it must have answered): whether it holds ``word``."""
    assert out.returncode == 0, out.stderr
    return [word in row["snippet"] for row in json.loads(out.stdout)["results"]]


# ------------------------------------------------------------------ item 4: no piece of a password
def _shapes(pg: PgServer, database: str) -> list[tuple[str, str]]:
    """``(URL, its password)`` of this server in every shape, each password a wrong one."""
    port, user, tcp = pg.port, pg.user, f"127.0.0.1:{pg.port}"
    return [
        (f"postgresql://{user}:Pz7-Sq4-Q3@{tcp}/{database}", "Pz7-Sq4-Q3"),
        (f"postgresql://{user}:Pz7/Sq4-Q3@{tcp}/{database}", "Pz7/Sq4-Q3"),  # a raw /
        (f"postgresql://{user}:Ab7@Cd9@{tcp}/{database}", "Ab7@Cd9"),  # a raw @
        (f"postgresql://{user}:Pz7:Sq4-Q3@{tcp}/{database}", "Pz7:Sq4-Q3"),  # a raw :
        (f"postgresql://{user}:Pz7%2FSq4%40Cd9@{tcp}/{database}", "Pz7/Sq4@Cd9"),
        (f"postgresql://{user}:Pz7 Sq4-Q3@{tcp}/{database}", "Pz7 Sq4-Q3"),  # a raw space
        (f"postgresql://{user}@{tcp}/{database}?password=Pz7-Sq4-Q3", "Pz7-Sq4-Q3"),
        (f"postgresql//{user}:Pz7-Sq4-Q3@{tcp}/{database}", "Pz7-Sq4-Q3"),  # mistyped
        (
            f"host=127.0.0.1 port={port} dbname={database} user={user} password=Pz7\\ Sq4-Q3",
            "Pz7 Sq4-Q3",
        ),  # fmt: skip
        (
            f"host=127.0.0.1 port={port} dbname={database} user={user} password='Pz7 Sq4\\'Q3'",
            "Pz7 Sq4'Q3",
        ),  # fmt: skip
        (
            f"host=127.0.0.1 port={port} dbname={database} password=Pz7 Sq4-Q3 user={user}",
            "Pz7 Sq4-Q3",
        ),  # fmt: skip  (unreadable: "Sq4-Q3" reads as a key)
        # The right shape, to a port where no server listens.
        (f"postgresql://{user}:Pz7-Sq4-Q3@127.0.0.1:{free_port()}/{database}", "Pz7-Sq4-Q3"),
    ]


def test_no_piece_of_a_password_is_in_any_output_whatever_the_urls_shape(
    pg_server: PgServer, database_url: str, tmp_path: Path
) -> None:
    database = database_url.rsplit("/", 1)[1]
    # Whatever it writes (logs, a cache, state) lands under tmp_path, which is read too.
    where = {"XDG_CACHE_HOME": str(tmp_path / "cache"), "XDG_STATE_HOME": str(tmp_path / "state")}
    leaks, unwarned = [], []
    for url, password in _shapes(pg_server, database):
        found = run_cli(
            "search", "q", "--scope", "team", "--json", *NONE, "--database", url,
            cwd=tmp_path, ENHANCED_MEMORY_LOG="1", **where,
        )  # fmt: skip
        assert found.returncode != 0, (url, found.stdout)
        error = json.loads(found.stdout)["error"]
        texts = [found.stdout, found.stderr]
        texts += [p.read_text(errors="replace") for p in tmp_path.rglob("*") if p.is_file()]
        leaks += [
            (url, piece, error) for piece in fragments(password) if any(piece in t for t in texts)
        ]
        lines = found.stderr.strip().splitlines()
        if not (len(lines) == 2 and WARNING in lines[0]):
            unwarned.append((url, found.stderr))
    assert leaks == []
    assert unwarned == []


def test_a_url_that_could_be_misread_is_refused_with_advice_and_the_server_is_not_asked(
    pg_server: PgServer, database_url: str
) -> None:
    database = database_url.rsplit("/", 1)[1]
    url = f"postgresql://{pg_server.user}:{pg_server.password}/x@127.0.0.1:{pg_server.port}/{database}"
    r = run_cli("search", "q", "--scope", "team", *NONE, "--database", url)
    assert r.returncode != 0
    assert "holds a raw '/' or '@'" in r.stderr and "%2F" in r.stderr
    assert pg_server.password not in r.stderr + r.stdout


# ---------------------------------------------------------- item 5: the password out of argv
def test_a_password_on_the_command_line_is_warned_of_once(database_url: str) -> None:
    _remember(database_url, "kestrel seen at the lake")
    found = run_cli("search", "kestrel", "--scope", "team", "--json", *NONE,
                    "--database", database_url)  # fmt: skip
    assert _hits(found, "kestrel") == [True] and found.stderr.count(WARNING) == 1
    assert "PGPASSWORD" in found.stderr and "~/.pgpass" in found.stderr
    quiet = run_cli("search", "kestrel", "--scope", "team", "--json", *NONE,
                    ENHANCED_MEMORY_DATABASE_URL=database_url)  # fmt: skip
    assert _hits(quiet, "kestrel") == [True] and "warning" not in quiet.stderr


def test_each_way_that_keeps_the_password_out_of_argv_connects(
    pg_server: PgServer, database_url: str, tmp_path: Path
) -> None:
    """The ways docs/shared-memory.md leads with; the password is in no process's arguments."""
    _remember(database_url, "kestrel seen at the lake")
    database = database_url.rsplit("/", 1)[1]
    bare = f"postgresql://{pg_server.user}@127.0.0.1:{pg_server.port}/{database}"
    pgpass = tmp_path / "pgpass"
    pgpass.write_text(f"127.0.0.1:{pg_server.port}:{database}:{pg_server.user}:"
                      f"{pg_server.password}\n")  # fmt: skip
    pgpass.chmod(0o600)
    services = tmp_path / "pg_service.conf"
    services.write_text(
        f"[memory]\nhost=127.0.0.1\nport={pg_server.port}\ndbname={database}\n"
        f"user={pg_server.user}\npassword={pg_server.password}\n"
    )
    ways: list[tuple[list[str], dict[str, str]]] = [
        ([], {"ENHANCED_MEMORY_DATABASE_URL": database_url}),
        (["--database", bare], {"PGPASSWORD": pg_server.password}),
        (["--database", bare], {"PGPASSFILE": str(pgpass)}),
        (["--database", "service=memory"], {"PGSERVICEFILE": str(services)}),
        ([], {"ENHANCED_MEMORY_DATABASE_URL": bare, "PGPASSWORD": pg_server.password}),
    ]
    for flags, env in ways:
        args = ["search", "kestrel", "--scope", "team", "--json", *NONE, *flags]
        assert pg_server.password not in " ".join(args)
        found = run_cli(*args, **env)
        assert _hits(found, "kestrel") == [True], (flags, env, found.stderr)
        assert "warning" not in found.stderr, (flags, found.stderr)
    # A running server's process list: the URL from the environment is not in it.
    proc = subprocess.Popen(
        [*CLI, "serve", "--port", "0", "--json", "--scope", "team", *NONE], stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, cwd=tmp_path,
        env=cli_env(ENHANCED_MEMORY_DATABASE_URL=database_url),
    )  # fmt: skip
    try:
        assert proc.stdout is not None and proc.stdout.readline()
        cmdline = Path(f"/proc/{proc.pid}/cmdline").read_bytes().decode()
        assert "serve" in cmdline and pg_server.password not in cmdline
    finally:
        stop(proc)


# ------------------------------------------------------------ item 9: who publishes a scope
def test_two_hosts_of_one_hostname_and_path_are_told_apart(
    database_url: str, tmp_path: Path
) -> None:
    """Two containers with a fixed hostname and one bind-mounted folder: two state folders."""
    ws = write_workspace(tmp_path / "w", SMALL_WORKSPACE)
    host_a, host_b = tmp_path / "state-a", tmp_path / "state-b"
    publish = ["index", "--workspace", str(ws), "--scope", "alpha", *NONE]
    db = {"ENHANCED_MEMORY_DATABASE_URL": database_url}
    first = run_cli(*publish, XDG_STATE_HOME=str(host_a), **db)
    assert first.returncode == 0, first.stderr
    id_a = (host_a / "enhanced-memory" / "host-id").read_text().strip()
    assert re.fullmatch(r"[0-9a-f]{32}", id_a)
    assert (host_a / "enhanced-memory" / "host-id").stat().st_mode & 0o077 == 0
    refused = run_cli(*publish, XDG_STATE_HOME=str(host_b), **db)
    assert refused.returncode != 0
    assert f"published from {socket.gethostname()}:{ws.resolve()} (host {id_a})" in refused.stderr
    assert "--take-over" in refused.stderr
    assert run_cli(*publish, XDG_STATE_HOME=str(host_a), **db).returncode == 0  # its own host
    taken = run_cli(*publish, "--take-over", XDG_STATE_HOME=str(host_b), **db)
    assert taken.returncode == 0, taken.stderr
    id_b = (host_b / "enhanced-memory" / "host-id").read_text().strip()
    with Database.connect(database_url) as opened:
        assert [s.owner for s in opened.scopes()] == [
            f"{socket.gethostname()}:{ws.resolve()} (host {id_b})"
        ]


def test_an_owner_written_before_host_ids_is_still_this_hosts(
    database_url: str, tmp_path: Path
) -> None:
    ws = write_workspace(tmp_path / "w", SMALL_WORKSPACE)
    publish = ["index", "--workspace", str(ws), "--scope", "alpha", *NONE]
    db = {"ENHANCED_MEMORY_DATABASE_URL": database_url, "XDG_STATE_HOME": str(tmp_path / "s")}
    assert run_cli(*publish, **db).returncode == 0
    legacy = f"{socket.gethostname()}:{ws.resolve()}"
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute("UPDATE em_scopes SET owner = %s", (legacy,))
    again = run_cli(*publish, **db)
    assert again.returncode == 0, again.stderr
    with Database.connect(database_url) as opened:
        (owner,) = [s.owner for s in opened.scopes()]
    assert owner is not None and owner.startswith(f"{legacy} (host ")


# ------------------------------------------------ item 10: a generation is never used twice
def _drop_scope(url: str, scope: str) -> None:
    """Delete a scope as a future drop command would (none exists yet): all its rows."""
    with psycopg.connect(url, autocommit=True) as conn, conn.transaction():
        for table in ("em_files", "em_segments", "em_notes"):
            conn.execute(f"DELETE FROM {table} WHERE scope = %s", (scope,))  # noqa: S608
        conn.execute("DELETE FROM em_scopes WHERE name = %s", (scope,))


def test_a_running_serve_never_answers_from_a_deleted_and_recreated_scope(
    database_url: str, tmp_path: Path
) -> None:
    _remember(database_url, "kestrel seen at the lake")
    with serving_scope(database_url, tmp_path) as server:
        status, doc = server.search(query="kestrel")
        assert status == 200 and len(doc["results"]) == 1, doc
        _drop_scope(database_url, "team")
        _remember(database_url, "osprey nest by the river")  # made again: one note, one write
        status, doc = server.search(query="kestrel")
        assert status == 200 and doc["results"] == [], doc
        status, doc = server.search(query="osprey")
        assert status == 200 and len(doc["results"]) == 1, doc
        assert "kestrel" not in doc["results"][0]["snippet"]


def test_the_upgrade_starts_generations_past_every_one_a_reader_may_hold(
    database_url: str,
) -> None:
    """A database of schema 2 (generations counted per scope) gains the sequence above them."""
    _remember(database_url, "kestrel seen at the lake")
    with psycopg.connect(database_url, autocommit=True) as conn:  # back to schema 2
        conn.execute("DROP SEQUENCE em_generations")
        conn.execute("UPDATE em_schema SET version = 2")
        conn.execute("UPDATE em_scopes SET generation = 41")
    with Database.connect(database_url) as db:
        assert db.generations(["team"]) == {"team": 41}
        db.append("other", "a first note of another scope")
        db.append("team", "osprey nest by the river")
        assert db.generations(["team", "other"]) == {"team": 43, "other": 42}
    with psycopg.connect(database_url) as conn:
        assert conn.execute("SELECT version FROM em_schema").fetchall() == [(len(MIGRATIONS),)]
    assert len(MIGRATIONS) == 5


# ------------------------------------------------- item 11: a streaming replica, the pool size
@pytest.fixture
def paused(pg_replica: PgServer) -> Iterator[tuple[str, str]]:
    """(primary URL, replica URL) of a database whose scope ``team`` holds "kestrel" on both;
    the replica's replay paused until the test ends."""
    primary = pg_replica.primary
    assert primary is not None
    name = "trust_replica"
    url = primary.create_database(name)
    try:
        _remember(url, "kestrel seen at the lake")
        pg_replica.wait_caught_up()
        with pg_replica.connect(name) as conn:
            conn.execute("SELECT pg_wal_replay_pause()")
        try:
            yield url, pg_replica.url_of(name)
        finally:
            with pg_replica.connect(name) as conn:
                conn.execute("SELECT pg_wal_replay_resume()")
            pg_replica.wait_caught_up()
    finally:
        primary.drop_database(name)


def test_searches_read_the_replica_on_every_face(
    pg_replica: PgServer, paused: tuple[str, str]
) -> None:
    """The recipe of docs/shared-memory.md: writes to the primary, searches to the replica."""
    url, replica = paused
    _remember(url, "osprey nest by the river")  # another host's write, not replayed yet
    search = ["search", "osprey", "--scope", "team", "--json", *NONE]
    env = {"ENHANCED_MEMORY_DATABASE_URL": url}
    assert _hits(run_cli(*search, **env), "osprey") == [True]  # the primary
    assert _hits(run_cli(*search, "--read-url", replica, **env), "osprey") == []
    assert _hits(run_cli(*search, ENHANCED_MEMORY_READ_URL=replica, **env), "osprey") == []
    retriever = EnhancedMemoryRetriever(
        scopes=["team"], database_url=url, read_url=replica, embedder="none", pool_size=3
    )
    assert retriever.invoke("osprey") == []
    assert ["kestrel" in d.page_content for d in retriever.invoke("kestrel")] == [True]
    engine = retriever.engine
    assert isinstance(engine, ScopedSearch)
    database = engine.members[0][1].database  # type: ignore[union-attr]
    assert (database._writer.size, database._reader.size) == (3, 3)  # the pools of pool_size
    (search_tool, _) = create_memory_tools(
        scopes=["team"], database_url=url, read_url=replica, embedder="none"
    )
    message = search_tool.invoke(
        {"type": "tool_call", "id": "1", "name": "memory_search", "args": {"query": "osprey"}}
    )
    assert message.artifact["results"] == []
    with pg_replica.connect("trust_replica") as conn:
        conn.execute("SELECT pg_wal_replay_resume()")
    pg_replica.wait_caught_up()
    assert _hits(run_cli(*search, "--read-url", replica, **env), "osprey") == [True]
    assert ["osprey" in d.page_content for d in retriever.invoke("osprey")] == [True]
    engine.close()


def test_a_bad_pool_size_is_one_line(database_url: str) -> None:
    search = ["search", "q", "--scope", "team", *NONE, "--json"]
    env = {"ENHANCED_MEMORY_DATABASE_URL": database_url}
    for flags, extra, said in (
        (["--pool-size", "0"], {}, "pool_size: must be at least 1, got 0"),
        ([], {"ENHANCED_MEMORY_POOL_SIZE": "many"}, "ENHANCED_MEMORY_POOL_SIZE: must be a whole"),
    ):
        r = run_cli(*search, *flags, **env, **extra)
        assert r.returncode != 0 and said in r.stderr, r.stderr
        assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
    assert _hits(run_cli(*search, "--pool-size", "1", **env), "q") == []
    assert os.environ.get("ENHANCED_MEMORY_POOL_SIZE") is None
