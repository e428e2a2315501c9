"""Database URLs in messages: no piece of the password is ever shown, whatever the URL's form."""

from __future__ import annotations

import re

import pytest

from langchain_enhanced_memory.core.errors import DatabaseError
from langchain_enhanced_memory.store.database.connect import (
    UNREADABLE,
    carries_password,
    check_url,
    failure,
    redact,
    shown_url,
)

#: (URL, its password as written in it): URLs, key=value strings, forms libpq reads
#: otherwise than a glance does, and some it cannot read at all.
SHAPES = [
    ("postgresql://me:s3cret-Pw@db.example:5432/mem", "s3cret-Pw"),
    ("postgres://me:s3cret-Pw@/mem?host=/run/pg", "s3cret-Pw"),
    ("postgresql//me:s3cret-Pw@db/mem", "s3cret-Pw"),  # mistyped: no parser reads it
    ("host=db user=me password=s3cret-Pw dbname=mem", "s3cret-Pw"),
    ("host=db password='s3cret Pw' dbname=mem", "s3cret Pw"),
    ("host=db password='s3cret\\' Pw' dbname=mem", "s3cret' Pw"),
    ("host=db password=s3cret\\ Pw dbname=mem", "s3cret Pw"),
    ("postgresql://me:s3cret-Pw@db/mem?password=0ther-Pw", "s3cret-Pw 0ther-Pw"),
    ("postgresql://me:p%40ss%2Fw0rd@db/mem", "p@ss/w0rd"),
    ("postgresql://memory:Pz7/Sq4-Q3@127.0.0.1:55432/memory", "Pz7/Sq4-Q3"),
    ("postgresql://memory:Ab7@Cd9@127.0.0.1/memory", "Ab7@Cd9"),
    ("postgresql://memory:Pz7:Sq4-Q3@127.0.0.1/memory", "Pz7:Sq4-Q3"),
    ("postgresql://memory:Pz7?Sq4-Q3@127.0.0.1/memory", "Pz7?Sq4-Q3"),
    ("postgresql://memory:Pz7 Sq4-Q3@127.0.0.1/memory", "Pz7 Sq4-Q3"),
    ("postgresql://memory:Pz7/Sq4 @Cd9@127.0.0.1:5/memory?sslmode=x", "Pz7/Sq4 @Cd9"),
]
#: URLs that cannot be read safely: refused before libpq reads them, and never shown.
UNREADABLE_URLS = [
    ("host=db password=s3cret Pw dbname=mem", "s3cret Pw"),  # "Pw" reads as a key
    ("host=db password='s3cret Pw dbname=mem", "s3cret Pw"),  # an unterminated quote
    ("postgresql//me:s3cret-Pw@db/mem", "s3cret-Pw"),
    ("postgresql://memory:Pz7/Sq4-Q3@127.0.0.1:55432/memory", "Pz7/Sq4-Q3"),
    ("postgresql://memory:Ab7@Cd9@127.0.0.1/memory", "Ab7@Cd9"),
    ("postgresql://memory:Pz7 Sq4-Q3@127.0.0.1/memory", "Pz7 Sq4-Q3"),
    ("postgresql://memory:Pz7/Sq4 @Cd9@127.0.0.1:5/memory?sslmode=x", "Pz7/Sq4 @Cd9"),
]


def fragments(password: str) -> list[str]:
    """Every piece of ``password`` between its punctuation (2 characters or more)."""
    return [p for p in re.split(r"[^A-Za-z0-9]+", password) if len(p) >= 2]


@pytest.mark.parametrize(("url", "password"), SHAPES)
def test_no_piece_of_the_password_is_shown(url: str, password: str) -> None:
    message = f"could not connect with {url}: server said {password} is wrong"
    shown = [redact(message, url), shown_url(url), str(failure(url, RuntimeError(message)))]
    for text in shown:
        for piece in fragments(password):
            assert piece not in text, (piece, text)
    assert carries_password(url)


@pytest.mark.parametrize(("url", "password"), UNREADABLE_URLS)
def test_a_url_that_could_be_misread_is_refused_and_not_shown(url: str, password: str) -> None:
    with pytest.raises(DatabaseError) as err:
        check_url(url)
    refused = failure(url, RuntimeError(f"invalid port {password}"), "searching")
    for text in (str(err.value), err.value.action, shown_url(url), str(refused)):
        assert not any(piece in text for piece in fragments(password)), text
        assert "memory" not in text and "db" not in text
    assert shown_url(url) == UNREADABLE and carries_password(url)


def test_a_url_without_a_password_is_shown_as_it_is() -> None:
    assert shown_url("postgresql://me@db/mem") == "postgresql://me@db/mem"
    assert not carries_password("postgresql://me@db/mem")
    assert not carries_password("host=db user=me dbname=mem")
