"""``serve``'s request handling without a socket: body size, JSON, and the one request model."""

from __future__ import annotations

import json

import pytest

from langchain_enhanced_memory.core.errors import RequestError
from langchain_enhanced_memory.core.request import SearchRequest
from langchain_enhanced_memory.servers.http import (
    MAX_BODY,
    BadRequest,
    body_size,
    decode_body,
    request_error_text,
)


@pytest.mark.parametrize(
    ("length", "status"),
    [(None, 411), ("many", 400), ("-1", 413), (str(MAX_BODY + 1), 413)],
)
def test_body_size_refusals(length: str | None, status: int) -> None:
    with pytest.raises(BadRequest) as err:
        body_size(length)
    assert err.value.status == status and "\n" not in str(err.value)


def test_body_size_accepts_up_to_the_limit() -> None:
    assert body_size(str(MAX_BODY)) == MAX_BODY and body_size("0") == 0


@pytest.mark.parametrize(
    ("raw", "fragment"),
    [(b"{not json", "not JSON"), (b"\xff\xfe", "not JSON"), (b"[1, 2]", "JSON object")],
)
def test_decode_body_refusals(raw: bytes, fragment: str) -> None:
    with pytest.raises(BadRequest, match=fragment) as err:
        decode_body(raw)
    assert err.value.status == 400


def test_a_body_becomes_the_same_request_as_the_cli_would_build() -> None:
    body = decode_body(json.dumps({"query": "billing", "k": 3, "now": "2026-02-09"}).encode())
    assert SearchRequest.parse(**body) == SearchRequest.parse(
        query="billing", k=3, now="2026-02-09T00:00"
    )


@pytest.mark.parametrize(
    ("body", "text"),
    [
        ({"query": "x", "k": 0}, '"k" must be at least 1, got 0'),
        ({"query": "x", "k": "many"}, '"k" must be an integer'),
        ({"k": 3}, '"query" is required'),
        ({"query": "x", "min_score": "high"}, '"min_score" must be a number'),
    ],
)
def test_request_errors_name_the_json_field(body: dict, text: str) -> None:
    with pytest.raises(RequestError) as err:
        SearchRequest.parse(**body)
    assert request_error_text(err.value) == text
