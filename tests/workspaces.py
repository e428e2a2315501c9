"""Workspaces the tests write: helpers and the small English workspace most tests share."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest


def write_workspace(root: Path, files: dict[str, str]) -> Path:
    """Create ``files`` (relative path -> text) under ``root`` and return ``root``."""
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    return root


# What a used workspace holds besides its notes: the index folder (with, after `make demo`,
# a resident engine's live socket, which cannot be copied) and the search logs.
_NOT_NOTES = shutil.ignore_patterns(".enhanced-memory*", "query_log.json", "access_log.json")


def copy_workspace(source: Path, dest: Path) -> Path:
    """Copy the notes of ``source`` (examples/workspace, a benchmark's) to ``dest``, return it.

    Never its index or logs: the copy starts as a fresh clone's would, whatever ran in
    ``source`` before (``make demo``'s index and its resident engine).
    """
    shutil.copytree(source, dest, ignore=_NOT_NOTES)
    return dest


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


class TempWorkspace:
    """Mixin: ``self.ws`` is a fresh :data:`SMALL_WORKSPACE` per test class (pytest temp folders).

    For the ``langchain_tests`` suites, whose constructor parameters are properties.
    """

    ws: Path

    @pytest.fixture(autouse=True, scope="class")
    @classmethod
    def _workspace(cls, tmp_path_factory: pytest.TempPathFactory) -> None:
        cls.ws = write_workspace(tmp_path_factory.mktemp("ws") / "ws", SMALL_WORKSPACE)
