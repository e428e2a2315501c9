"""Which database a URL reached, kept for a process that cannot connect (issue 36 item 2)."""

from __future__ import annotations

from pathlib import Path

import pytest

from langchain_enhanced_memory.store.database.cache import known_identity, remember_identity
from langchain_enhanced_memory.store.database.connect import unanswered

UID = "0b5e1c9a-4a51-4c1e-9a3e-2f0f5f3c1d77"


def test_a_url_is_known_by_its_server_database_and_user_never_its_password(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PGHOST", raising=False)
    remember_identity(tmp_path, "postgresql://ann:s3cret-pw@db.example:5433/notes", UID)
    # Another password (or none) reaches the same database; anything else another one.
    assert known_identity(tmp_path, "postgresql://ann:other@db.example:5433/notes") == UID
    assert known_identity(tmp_path, "host=db.example port=5433 dbname=notes user=ann") == UID
    for other in (
        "postgresql://bob@db.example:5433/notes",
        "postgresql://ann@db.example:5434/notes",
        "postgresql://ann@db.example:5433/other",
        "postgresql://ann@db2.example:5433/notes",
    ):
        assert known_identity(tmp_path, other) is None, other
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert files and all(b"s3cret-pw" not in p.read_bytes() for p in files)
    assert all(p.stat().st_mode & 0o777 == 0o600 for p in files)
    assert all(p.stat().st_mode & 0o777 == 0o700 for p in tmp_path.rglob("*") if p.is_dir())


def test_what_the_url_leaves_out_is_read_from_the_environment_as_libpq_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PGHOST", "db.example")
    remember_identity(tmp_path, "postgresql:///notes", UID)
    assert known_identity(tmp_path, "postgresql:///notes") == UID
    monkeypatch.setenv("PGHOST", "db2.example")
    assert known_identity(tmp_path, "postgresql:///notes") is None


@pytest.mark.parametrize(
    ("said", "unreachable"),
    [
        ('connection to server at "db", port 5432 failed: Connection refused', True),
        ('connection to server at "db", port 5432 failed: timeout expired', True),
        ('could not translate host name "db" to address: Name or service not known', True),
        ("FATAL:  the database system is starting up", True),
        ("FATAL:  the database system is shutting down", True),
        ('FATAL:  password authentication failed for user "ann"', False),
        ('FATAL:  database "notes" does not exist', False),
        ("FATAL:  sorry, too many clients already", False),
    ],
)
def test_only_a_server_that_did_not_answer_is_unreachable(said: str, unreachable: bool) -> None:
    """libpq gives a failed connect no SQLSTATE: a server's answer shows as its severity."""
    assert unanswered(OSError(f"connection failed: {said}")) is unreachable
