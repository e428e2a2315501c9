"""Database URLs in messages: the password is never shown, whatever the URL's form."""

from __future__ import annotations

import pytest

from langchain_enhanced_memory.store.database.connect import failure, redact, shown_url


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://me:s3cret@db.example:5432/mem",
        "postgres://me:s3cret@/mem?host=/run/pg",
        "postgresql//me:s3cret@db/mem",  # mistyped: not a URL psycopg or urllib can parse
        "host=db user=me password=s3cret dbname=mem",
        "host=db password='s3cret' dbname=mem",
        "postgresql://me:s3cret@db/mem?password=s3cret",
    ],
)
def test_the_password_is_replaced_wherever_it_appears(url: str) -> None:
    message = f"could not connect with {url}: server said s3cret is wrong"
    assert "s3cret" not in redact(message, url)
    assert "s3cret" not in shown_url(url) and "***" in shown_url(url)
    assert "s3cret" not in str(failure(url, RuntimeError(message), "searching"))


def test_a_percent_encoded_password_is_replaced_decoded_too() -> None:
    url = "postgresql://me:p%40ss%20word@db/mem"
    assert "p@ss word" not in redact("auth failed for p@ss word", url)


def test_a_url_without_a_password_is_shown_as_it_is() -> None:
    assert shown_url("postgresql://me@db/mem") == "postgresql://me@db/mem"
