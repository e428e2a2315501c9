"""``serve``'s request handling without a socket: body size, JSON, and the one request model."""

from __future__ import annotations

import json

import pytest

from langchain_enhanced_memory.core.errors import RequestError
from langchain_enhanced_memory.core.request import SearchRequest
from langchain_enhanced_memory.servers.http import (
    MAX_BODY,
    BadRequest,
    allowed_hosts,
    body_size,
    decode_body,
    host_name,
    is_loopback,
    request_error_text,
)


@pytest.mark.parametrize(
    ("length", "status"),
    [
        (None, 411),
        ("many", 400),
        ("-1", 400),
        ("+5", 400),
        ("1_0", 400),
        ("٣", 400),
        (str(MAX_BODY + 1), 413),
    ],  # fmt: skip
)
def test_body_size_refusals(length: str | None, status: int) -> None:
    with pytest.raises(BadRequest) as err:
        body_size(length)
    assert err.value.status == status and "\n" not in str(err.value)


def test_body_size_accepts_up_to_the_limit() -> None:
    assert body_size(str(MAX_BODY)) == MAX_BODY and body_size("0") == 0


@pytest.mark.parametrize(
    ("raw", "fragment"),
    [
        (b"{not json", "not JSON"),
        (b"\xff\xfe", "not JSON"),
        (b"[1, 2]", "JSON object"),
        (b'{"query": ' + b"[" * 30_000 + b"]" * 30_000 + b"}", "nested too deeply"),
    ],
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


@pytest.mark.parametrize(
    ("value", "name"),
    [
        ("127.0.0.1:8765", "127.0.0.1"),
        ("LocalHost", "localhost"),
        ("[::1]:8765", "::1"),
        ("[::1]", "::1"),
        ("::1", "::1"),
        ("mybox.lan:9000", "mybox.lan"),
        ("", None),
        ("[::1", None),
        ("[::1]x", None),
        ("localhost:80x", None),
        ("user@localhost", None),
        ("local host", None),
    ],
)
def test_host_name(value: str, name: str | None) -> None:
    assert host_name(value) == name


def test_allowed_hosts_are_loopback_plus_what_was_bound_or_allowed() -> None:
    assert allowed_hosts("0.0.0.0") == {"127.0.0.1", "localhost", "::1"}
    assert allowed_hosts("10.0.0.5", ["MyBox.lan:80"]) == {
        "127.0.0.1", "localhost", "::1", "10.0.0.5", "mybox.lan"
    }  # fmt: skip
    with pytest.raises(ValueError, match="not a host name"):
        allowed_hosts("127.0.0.1", ["a/b"])


@pytest.mark.parametrize(
    ("host", "loopback"),
    [("127.0.0.1", True), ("127.0.0.2", True), ("localhost", True), ("::1", True),
     ("0.0.0.0", False), ("::", False), ("192.168.1.4", False), ("mybox.lan", False)],
)  # fmt: skip
def test_is_loopback(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback
