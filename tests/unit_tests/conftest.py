"""Unit tests run with sockets off (``pytest-socket``): one that reaches for the network fails.

Unix sockets stay allowed for asyncio's self-pipe; anything that needs a real
server (the Ollama stand-in, ``serve``, MCP) is an integration test.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pytest_socket import disable_socket, enable_socket


@pytest.fixture(autouse=True)
def _no_network() -> Iterator[None]:
    disable_socket(allow_unix_socket=True)
    try:
        yield
    finally:
        enable_socket()


@pytest.fixture(autouse=True)
def _read_side_files_as_large_ones(read_side_files_as_large_ones: None) -> None:
    """Every unit test reads side files as a large index's are (see tests/conftest.py)."""
