"""Slow fault injection: SIGKILL during indexing, concurrent readers and writers.

Run with ``pytest -m slow tests/reliability`` or ``make reliability`` (which also
prints the table of docs/reliability.md). Set ``RELIABILITY_STATS=DIR`` to keep each report as JSON.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import pytest

from tests.postgres import PgServer
from tests.reliability.db_faults import append_kills, publish_kills
from tests.reliability.full_disk import (
    FullDiskReport,
    index_on_a_full_disk,
    remember_on_a_full_disk,
    small_disk,
)
from tests.reliability.harness import concurrency_run, concurrent_index_runs, kill_campaign
from tests.reliability.vector_kills import vector_kill_campaign
from tests.reliability.writers import concurrent_writers, remember_kills

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200)]


def _save(name: str, report: object) -> None:
    where = os.environ.get("RELIABILITY_STATS")
    if where:
        data = dataclasses.asdict(report)  # type: ignore[call-overload]
        Path(where, f"{name}.json").write_text(json.dumps(data, indent=1))


def test_sigkill_during_index_never_loses_or_mixes_state(tmp_path: Path) -> None:
    report = kill_campaign(tmp_path / "ws", kills=20)
    _save("kills", report)
    assert report.problems == []
    assert report.kills == 20, f"only {report.kills} runs were still going when killed"
    assert report.survived == report.kills
    assert report.phases["before the sync commit"] and report.phases["while embedding"]
    assert report.final_ok and report.chunks >= 1500


def test_four_searchers_and_a_reindex_loop(tmp_path: Path) -> None:
    report = concurrency_run(tmp_path / "ws", seconds=30, searchers=4)
    _save("concurrency", report)
    assert report.problems == [], report.problems[:5]
    assert report.errors == report.empty == report.reindex_errors == 0
    assert report.searches >= 8 and report.reindexes >= 2


def test_two_index_runs_at_once_serialize(tmp_path: Path) -> None:
    report = concurrent_index_runs(tmp_path / "ws")
    _save("serialize", report)
    assert report.problems == []
    assert report.ok == 2 and sorted(report.embedded) == [0, report.texts]
    assert report.texts > report.chunks  # the chunks and their lines


def test_sigkill_around_the_vector_files_leaves_them_whole(tmp_path: Path) -> None:
    report = vector_kill_campaign(tmp_path / "ws", kills=10)
    _save("vector_kills", report)
    assert report.problems == []
    assert report.survived == report.kills
    # Killing inside a file write needs the poll to see it: most rounds do, all need not.
    assert report.phases["new vectors spooled"] == 5
    assert report.phases["writing the vector file"] >= 2
    assert report.files_after >= 1  # the named segments, nothing else (checked in problems)


def test_remember_and_a_plain_appender_lose_no_line(tmp_path: Path) -> None:
    report = concurrent_writers(tmp_path, rounds=5, rememberers=20, min_lines=200)
    _save("writers", report)
    assert report.problems == [], report.problems[:5]
    assert report.lost == report.doubled == 0
    assert report.remembered == 100 and report.appended >= 1000


def test_sigkill_during_remember_leaves_whole_bullets(tmp_path: Path) -> None:
    report = remember_kills(tmp_path, kills=30)
    _save("remember_kills", report)
    assert report.problems == [], report.problems[:5]
    assert report.kills == 30 and report.survived == report.kills
    assert report.landed < report.kills  # some kills came before the write


def test_a_full_disk_leaves_notes_whole_and_the_last_index_searchable(tmp_path: Path) -> None:
    report = FullDiskReport()
    with small_disk(tmp_path / "disk") as disk:  # a real full disk: fails, never skips
        for slack in (0, 1, 215, 1000, 2048, 3800):
            remember_on_a_full_disk(disk, report, slack)
        for leave in (0, 16 << 10, 64 << 10):
            index_on_a_full_disk(disk, report, leave)
    _save("full_disk", report)
    assert report.problems == [], report.problems[:5]
    assert report.remembers == report.remembers_held == 12 and report.remembers_after == 6
    assert report.indexes == report.indexes_held == 3


def test_sigkill_of_a_database_publish_or_of_the_server_leaves_one_generation(
    tmp_path: Path, pg_private: PgServer
) -> None:
    report = publish_kills(tmp_path, pg_private, kills=30)
    _save("db_publish_kills", report)
    assert report.problems == [], report.problems[:5]
    assert report.kills == report.survived == 30
    assert list(report.phases.values()) == [10, 10, 10]
    assert report.final_ok


def test_sigkill_of_a_database_append_or_of_the_server_leaves_whole_bullets(
    pg_private: PgServer,
) -> None:
    report = append_kills(pg_private, kills=30)
    _save("db_append_kills", report)
    assert report.problems == [], report.problems[:5]
    assert report.kills == report.survived == 30
    assert list(report.phases.values()) == [10, 10, 10]
    assert report.final_ok
