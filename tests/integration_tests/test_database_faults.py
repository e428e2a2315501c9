"""Faults of the database under a scope (issue 31, item 7), against a real PostgreSQL.

The slow campaign (many kills, of the writer and of the server) is in
tests/reliability; these are one of each, fast.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import psycopg
import pytest

from langchain_enhanced_memory.core.errors import DatabaseError, MissingNoteError
from langchain_enhanced_memory.store.database import Database, Embedding
from tests.postgres import PgServer
from tests.reliability.db_driver import DAY, FAKE, MODEL, hash_vectors
from tests.reliability.db_faults import append_kills, note_lines, publish_kills, scope_problems


def _one_line_without(err: BaseException, secret: str) -> str:
    message = str(err)
    assert "\n" not in message
    assert secret not in message
    assert "***" in message  # the URL is named, its password redacted
    return message


def test_a_restart_or_a_crash_between_two_calls_is_reconnected(pg_private: PgServer) -> None:
    """The pool's connections died with the server: the next call gets a new one, no error.

    A server down during a call is a one-line error (tests/integration_tests/
    test_database_store.py; through ``serve`` in test_database_serve_faults.py).
    """
    url = pg_private.create_database("faults")
    with Database.connect(url) as db:
        db.append("team", "kestrel seen at the lake", embed=FAKE, now=DAY)
        assert len(db.snapshot("team", MODEL)) == 1
        pg_private.restart()
        assert len(db.snapshot("team", MODEL)) == 1
        pg_private.kill()  # a crash: every open connection cut
        pg_private.start()  # crash recovery
        db.append("team", "written after the crash", embed=FAKE, now=DAY)
        (note,) = set(db.snapshot("team", MODEL).paths)
        lines = note_lines(db, "team", note)
    assert lines[-2:] == ["- kestrel seen at the lake", "- written after the crash"]


def test_a_lost_connection_never_leaves_a_half_written_note(
    pg_server: PgServer, database_url: str
) -> None:
    database = database_url.rsplit("/", 1)[1]

    def cut_then_embed(texts: list[str]) -> np.ndarray:
        # The embedder runs inside the append's transaction, after the note row is locked
        # (and a new note inserted): the writer's connection is cut right there.
        with pg_server.connect() as admin:
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE datname = %s AND state = 'idle in transaction'",
                (database,),
            )
        return hash_vectors(texts)

    cutting = Embedding(MODEL, cut_then_embed)
    with Database.connect(database_url) as db:
        db.append("team", "first line", embed=FAKE, now=DAY)
        (note,) = set(db.snapshot("team", MODEL).paths)
        before = note_lines(db, "team", note)
        for file in (None, "memory/topic.md"):  # the existing note, and a new one
            with pytest.raises(DatabaseError) as lost:
                db.append("team", "the lost line", embed=cutting, file=file, now=DAY)
            _one_line_without(lost.value, pg_server.password)
        assert note_lines(db, "team", note) == before
        with pytest.raises(MissingNoteError):
            db.read("team", "memory/topic.md")
        assert scope_problems(database_url, "team", {note: before}) == []
        # The next call gets a new connection; its bullet lands once.
        db.append("team", "the next line", embed=FAKE, now=DAY)
        after = note_lines(db, "team", note)
    assert after.count("- the next line") == 1
    assert [line for line in after if line != "- the next line"] == before


def test_a_publish_killed_inside_its_transaction_leaves_the_previous_generation(
    pg_server: PgServer, tmp_path: Path
) -> None:
    report = publish_kills(tmp_path, pg_server, kills=1, modes=["inside the transaction"])
    assert report.problems == []
    assert report.kills == report.survived == 1 and report.landed == 0
    assert report.final_ok  # the next publish went through, whole


def test_an_append_killed_inside_its_transaction_leaves_no_part_of_its_bullet(
    pg_server: PgServer,
) -> None:
    report = append_kills(pg_server, kills=1, modes=["inside the transaction"])
    assert report.problems == []
    assert report.kills == report.survived == 1 and report.landed == 0
    assert report.final_ok


def test_the_kill_check_sees_a_torn_scope(pg_server: PgServer, database_url: str) -> None:
    """The campaign's check is not blind: a note changed behind the index is reported."""
    with Database.connect(database_url) as db:
        db.append("team", "kestrel seen at the lake", embed=FAKE, now=DAY)
        (note,) = set(db.snapshot("team", MODEL).paths)
        lines = note_lines(db, "team", note)
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute("UPDATE em_notes SET body = body || '- half written' WHERE scope = 'team'")
    assert scope_problems(database_url, "team", {note: lines}) == [
        f"team: note {note} is not the expected version"
    ]
