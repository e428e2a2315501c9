"""Integration tests may open sockets, but only to this machine's loopback address."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pytest_socket import enable_socket, socket_allow_hosts


@pytest.fixture(autouse=True)
def _loopback_only() -> Iterator[None]:
    socket_allow_hosts(["127.0.0.1", "::1", "localhost"], allow_unix_socket=True)
    try:
        yield
    finally:
        enable_socket()
