"""Shared pytest fixtures.

``tests/`` is put on ``sys.path`` so test modules can ``import fake_ollama``, and the
repository root too when the package is not installed (running from a checkout).
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

TESTS_DIR = Path(__file__).resolve().parent
REPO_ROOT = TESTS_DIR.parent

if str(TESTS_DIR) not in sys.path:
    sys.path.insert(0, str(TESTS_DIR))
if importlib.util.find_spec("langchain_enhanced_memory") is None:
    sys.path.insert(0, str(REPO_ROOT))

from fake_ollama import FakeOllama  # noqa: E402


@pytest.fixture
def fake_ollama() -> Iterator[FakeOllama]:
    """A started :class:`fake_ollama.FakeOllama` with ``nomic-embed-text`` pulled."""
    server = FakeOllama()
    server.start()
    try:
        yield server
    finally:
        server.stop()


def write_workspace(root: Path, files: dict[str, str]) -> Path:
    """Create ``files`` (relative path -> text) under ``root`` and return ``root``."""
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    return root


SMALL_WORKSPACE = {
    "MEMORY.md": "# Preferences\n\nThe user prefers dark roast coffee and vim keybindings.\n\n"
    "# People\n\nAlice Chen leads the payments team; Bob owns the data pipeline.\n",
    "memory/2026-02-07.md": "# 2026-02-07\n\n## Standup\n\nReviewed the Postgres migration plan "
    "with Bob. Rollback script still missing.\n",
    "memory/2026-02-08.md": "# 2026-02-08\n\n## Decisions\n\nWe decided to migrate the billing "
    "database to Postgres 16 next sprint.\n\n## Lunch\n\nTried the new ramen place on Fifth "
    "street.\n",
    "memory/topics/project-alpha.md": "# Project Alpha\n\n## Goals\n\nCut p99 latency of the "
    "search API below 200 ms.\n\n## Risks\n\nThe cache warmup takes too long after deploys.\n",
}


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A small English workspace: MEMORY.md, two daily notes, one topic file."""
    return write_workspace(tmp_path / "ws", SMALL_WORKSPACE)
