"""Shared pytest fixtures.

``tests`` is a package: helpers are imported as ``tests.workspaces``,
``tests.fake_ollama``, ``tests.fakes`` and ``tests.cli_run``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli_run import NO_DAEMON
from tests.fake_ollama import FakeOllama
from tests.workspaces import SMALL_WORKSPACE, write_workspace

# No test may route to, or start, a resident engine unless it says so (test_resident does).
os.environ.update(NO_DAEMON)


@pytest.fixture
def fake_ollama() -> Iterator[FakeOllama]:
    """A started :class:`tests.fake_ollama.FakeOllama` with ``nomic-embed-text`` pulled."""
    server = FakeOllama()
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A small English workspace: MEMORY.md, two daily notes, one topic file."""
    return write_workspace(tmp_path / "ws", SMALL_WORKSPACE)
