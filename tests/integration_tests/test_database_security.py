"""Access to shared memory with PostgreSQL's own roles, and the password kept out of sight.

Issue 31, item 8: a role given ``SELECT`` only searches and cannot append; row-level
security limits a role to some scopes; no error or log line holds a password.
"""

from __future__ import annotations

import json
import logging

import psycopg
import pytest
from psycopg import sql

from langchain_enhanced_memory.core.errors import DatabaseError, MissingNoteError
from langchain_enhanced_memory.store.database import Database
from scripts.postgres import free_port
from tests.cli_run import run_cli
from tests.postgres import PgServer
from tests.reliability.db_driver import DAY, FAKE, MODEL

TABLES = ("em_schema", "em_scopes", "em_segments", "em_files", "em_notes")


def _role(pg_server: PgServer, database_url: str, name: str) -> str:
    """A login role that may read the memory tables of the test's database: its URL."""
    database = database_url.rsplit("/", 1)[1]
    role = f"{name}_{database}"[:63]
    password = f"{name}-Pw-{database}"[:40]
    with pg_server.connect(database) as conn:
        conn.execute(
            sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(
                sql.Identifier(role), sql.Literal(password)
            )
        )
        conn.execute(
            sql.SQL("GRANT CONNECT ON DATABASE {} TO {}").format(
                sql.Identifier(database), sql.Identifier(role)
            )
        )
        conn.execute(sql.SQL("GRANT USAGE ON SCHEMA public TO {}").format(sql.Identifier(role)))
        # The parent tables only: partitions are read through them (and so through their
        # row-level security); a role cannot read a partition directly.
        conn.execute(
            sql.SQL("GRANT SELECT ON {} TO {}").format(
                sql.SQL(", ").join(map(sql.Identifier, TABLES)), sql.Identifier(role)
            )
        )
    return pg_server.url_of(database, user=role, password=password)


def _shared(database_url: str) -> str:
    """Two scopes written by the owner: ``team`` and ``alpha``; the note of ``team``."""
    with Database.connect(database_url) as db:
        db.append("team", "kestrel seen at the lake", embed=FAKE, now=DAY)
        db.append("alpha", "quasar budget approved", embed=FAKE, now=DAY)
        (note,) = set(db.snapshot("team", MODEL).paths)
    return note


def _texts(db: Database, scope: str) -> list[str]:
    """The bullets the scope's chunks hold (what a search of it can find)."""
    snap = db.snapshot(scope, MODEL)
    chunks = "\n".join(snap.texts[i] for i in range(len(snap)))
    return [line[2:] for line in chunks.splitlines() if line.startswith("- ")]


def test_row_level_security_gives_a_role_some_scopes_only(
    pg_server: PgServer, database_url: str
) -> None:
    note = _shared(database_url)
    alpha_url = _role(pg_server, database_url, "alpha")
    role = alpha_url.split("//", 1)[1].split(":", 1)[0]
    with psycopg.connect(database_url, autocommit=True) as conn:
        for table, column in (
            ("em_scopes", "name"),
            ("em_segments", "scope"),
            ("em_files", "scope"),
            ("em_notes", "scope"),
        ):
            conn.execute(
                sql.SQL("ALTER TABLE {} ENABLE ROW LEVEL SECURITY").format(sql.Identifier(table))
            )
            conn.execute(
                sql.SQL("CREATE POLICY {} ON {} FOR SELECT TO {} USING ({} = 'alpha')").format(
                    sql.Identifier(f"{role}_{table}"[:63]),
                    sql.Identifier(table),
                    sql.Identifier(role),
                    sql.Identifier(column),
                )
            )
    with Database.connect(alpha_url) as reader:
        assert _texts(reader, "alpha") == ["quasar budget approved"]
        assert _texts(reader, "team") == []
        assert reader.generations(["alpha", "team"]).keys() == {"alpha"}
        with pytest.raises(MissingNoteError):
            reader.read("team", note)
    # The owner (who bypasses the policies) still sees both.
    with Database.connect(database_url) as db:
        assert _texts(db, "team") == ["kestrel seen at the lake"]


@pytest.mark.parametrize("form", ["url", "url-escaped", "key=value"])
def test_the_password_is_in_no_error_and_no_log_line(
    pg_server: PgServer, database_url: str, caplog: pytest.LogCaptureFixture, form: str
) -> None:
    caplog.set_level(logging.DEBUG)
    database = database_url.rsplit("/", 1)[1]
    secret = {"url": "Wr0ng-secret", "url-escaped": "p@ss:w/rd%Wr0ng"}.get(form, "kv-Wr0ng-secret")
    if form == "key=value":
        urls = [
            f"host=127.0.0.1 port={pg_server.port} dbname={database} user={pg_server.user}"
            f" password={secret}",
        ]
    else:
        urls = [pg_server.url_of(database, password=secret)]
    # The right password, to a port where no server listens.
    urls.append(pg_server.url_of(database).replace(f":{pg_server.port}/", f":{free_port()}/"))
    for url in urls:
        with pytest.raises(DatabaseError) as err:
            Database.connect(url)
        message = str(err.value)
        assert "\n" not in message
        for password in (
            secret,
            pg_server.password,
            psycopg.conninfo.make_conninfo(password=secret),
        ):
            assert password not in message
    assert secret not in caplog.text and pg_server.password not in caplog.text


def test_a_select_only_role_on_the_command_line(pg_server: PgServer, database_url: str) -> None:
    """``search`` with the reader's URL answers; its ``remember`` is one line, no password."""
    db = ["--scope", "team", "--embedder", "none"]
    wrote = run_cli("remember", "kestrel seen at the lake", "--database", database_url, *db)
    assert wrote.returncode == 0, wrote.stderr
    reader_url = _role(pg_server, database_url, "cli")
    secrets = (reader_url.split("@")[0].rsplit(":", 1)[1], pg_server.password)
    found = run_cli("search", "kestrel", "--json", "--database", reader_url, *db)
    assert found.returncode == 0, found.stderr
    doc = json.loads(found.stdout)
    assert [row["scope"] for row in doc["results"]] == ["team"]
    refused = run_cli("remember", "written by a reader", "--database", reader_url, *db)
    assert refused.returncode != 0
    # One error line (after the warning that --database holds a password).
    errors = [line for line in refused.stderr.splitlines() if "warning:" not in line]
    assert len(errors) == 1, refused.stderr
    assert "permission denied" in refused.stderr
    # Its --json failure says the role may not write, not to check that the server runs.
    told = run_cli("remember", "written by a reader", "--json", "--database", reader_url, *db)
    assert told.returncode == 2
    doc = json.loads(told.stdout)
    assert "permission denied" in doc["error"]
    assert doc["action"].startswith("this database role may not do this")
    for out in (found, refused, told):
        assert not any(s in out.stdout + out.stderr for s in secrets)
