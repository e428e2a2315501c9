from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import pytest

from langchain_enhanced_memory.config import load
from langchain_enhanced_memory.core.settings import MemorySettings
from langchain_enhanced_memory.engine import MemorySearch
from langchain_enhanced_memory.store import logs

NOW = datetime(2026, 2, 9, 9, 0)
LOG_ENV = "ENHANCED_MEMORY_LOG"


@pytest.fixture(autouse=True)
def _no_env(monkeypatch):
    monkeypatch.delenv(LOG_ENV, raising=False)
    load()


def _engine(ws: Path, **settings) -> MemorySearch:
    return MemorySearch(ws, settings=MemorySettings(**settings), embedder="none")


def test_search_appends_query_and_counts_accesses(workspace):
    engine = _engine(workspace)
    response = engine.search("postgres migration", now=NOW)
    entries = logs.read_query_log(workspace)
    assert len(entries) == 1
    e = entries[0]
    assert e["query"] == "postgres migration"
    assert e["top_score"] == round(response.hits[0].score, 4)
    assert e["results"] == len(response.hits)
    assert e["embedder"] == "none"
    assert e["timestamp"] == "2026-02-09T09:00:00"
    access = logs.read_access_log(workspace)
    assert access == {p: 1 for p in dict.fromkeys(h.path for h in response.hits)}
    engine.search("postgres migration", now=NOW)
    assert all(v == 2 for v in logs.read_access_log(workspace).values())
    # The original's formats: a JSON list and a {path: count} object.
    assert isinstance(json.loads(logs.log_path(workspace, logs.QUERY_LOG).read_text()), list)
    assert isinstance(json.loads(logs.log_path(workspace, logs.ACCESS_LOG).read_text()), dict)


def test_a_file_returned_twice_counts_once_per_search(workspace):
    engine = _engine(workspace)
    response = engine.search("decided migrate ramen", k=10, now=NOW)
    paths = [h.path for h in response.hits]
    assert len(paths) > len(set(paths)), "the query should return two chunks of one file"
    assert set(logs.read_access_log(workspace).values()) == {1}


def test_query_log_keeps_the_newest_entries(workspace):
    engine = _engine(workspace, query_log_max=3)
    for n in range(5):
        engine.search(f"postgres {n}", now=NOW)
    assert [e["query"] for e in logs.read_query_log(workspace)] == [
        "postgres 2",
        "postgres 3",
        "postgres 4",
    ]


def test_logged_files_are_not_indexed(workspace):
    engine = _engine(workspace)
    engine.search("postgres", now=NOW)
    assert not engine.index.is_stale()
    paths = set(engine.index.snapshot().paths)
    assert not any(p.endswith(".json") or "/." in p for p in paths)
    assert not list((workspace / "memory").glob(".*.tmp"))


@pytest.mark.parametrize("value", ["0", "false", "off"])
def test_env_switches_logging_off(workspace, monkeypatch, value):
    monkeypatch.setenv(LOG_ENV, value)
    load()  # what an entry point does: the store reads no environment
    _engine(workspace).search("postgres", now=NOW)
    assert not logs.log_path(workspace, logs.QUERY_LOG).exists()
    assert not logs.log_path(workspace, logs.ACCESS_LOG).exists()


def test_setting_switches_logging_off(workspace):
    _engine(workspace, log_queries=False).search("postgres", now=NOW)
    assert not logs.log_path(workspace, logs.QUERY_LOG).exists()


def test_read_only_memory_is_not_logged_unless_forced(workspace, monkeypatch):
    mem = workspace / "memory"
    mem.chmod(0o555)
    try:
        assert not logs.logging_enabled(workspace, MemorySettings())
        _engine(workspace).search("postgres", now=NOW)
        assert not logs.log_path(workspace, logs.QUERY_LOG).exists()
        monkeypatch.setenv(LOG_ENV, "1")
        load()
        assert logs.logging_enabled(workspace, MemorySettings())
    finally:
        mem.chmod(0o755)


def test_unwritable_log_never_fails_a_search(workspace, monkeypatch, caplog):
    monkeypatch.setenv(LOG_ENV, "1")
    load()
    logs.log_path(workspace, logs.QUERY_LOG).mkdir(parents=True)  # a folder, not the file
    response = _engine(workspace).search("postgres", now=NOW)
    assert response.hits
    logs.flush()
    assert "could not write the logs" in caplog.text


def test_a_search_queues_its_entry_and_a_pause_writes_it(workspace, monkeypatch):
    monkeypatch.setattr(logs, "FLUSH_DELAY_S", 0.05)
    engine = _engine(workspace)
    for q in ("postgres", "alice", "budget"):
        engine.search(q, now=NOW)
    deadline = time.monotonic() + 30
    while not logs.log_path(workspace, logs.QUERY_LOG).exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    raw = json.loads(logs.log_path(workspace, logs.QUERY_LOG).read_text(encoding="utf-8"))
    assert [e["query"] for e in raw] == ["postgres", "alice", "budget"]  # one batch, in order


def test_corrupt_log_is_set_aside_and_restarted(workspace):
    logs.log_path(workspace, logs.QUERY_LOG).parent.mkdir()
    logs.log_path(workspace, logs.QUERY_LOG).write_text("[{not json", encoding="utf-8")
    logs.log_path(workspace, logs.ACCESS_LOG).write_text("[1, 2]", encoding="utf-8")
    _engine(workspace).search("postgres", now=NOW)
    assert len(logs.read_query_log(workspace)) == 1
    assert logs.read_access_log(workspace)
    folder = logs.log_path(workspace, logs.QUERY_LOG).parent
    aside = sorted(p.name for p in folder.glob("*.corrupt-*"))
    assert len(aside) == 2
    assert (folder / aside[1]).read_text() == "[{not json"


_WRITER = """
import sys
from langchain_enhanced_memory.store.logs import append_entry
ws, tag, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
for i in range(n):
    append_entry(ws, {"query": f"{tag}{i}", "top_score": 0.5}, ["memory/a.md", f"memory/{tag}.md"])
"""


def test_two_processes_lose_no_entry(workspace):
    n = 60
    procs = [
        subprocess.Popen([sys.executable, "-c", _WRITER, str(workspace), tag, str(n)])
        for tag in ("x", "y")
    ]
    for p in procs:
        assert p.wait(timeout=120) == 0
    entries = logs.read_query_log(workspace)
    assert len(entries) == 2 * n
    assert {e["query"] for e in entries} == {f"{t}{i}" for t in "xy" for i in range(n)}
    assert logs.read_access_log(workspace) == {
        "memory/a.md": 2 * n,
        "memory/x.md": n,
        "memory/y.md": n,
    }
    folder = logs.log_path(workspace, logs.QUERY_LOG).parent
    leftovers = [p for p in os.listdir(folder) if p.endswith(".tmp")]
    assert leftovers == []


def test_logs_are_private_beside_the_index_not_among_the_notes(workspace):
    old = os.umask(0o022)
    try:
        _engine(workspace).search("postgres", now=NOW)
        logs.flush()
    finally:
        os.umask(old)
    folder = workspace / ".enhanced-memory"
    for name in (logs.QUERY_LOG, logs.ACCESS_LOG, "logs.lock"):
        assert (folder / name).stat().st_mode & 0o777 == 0o600, name
    assert folder.stat().st_mode & 0o777 == 0o700
    notes = (workspace / "memory").iterdir()
    assert not [p.name for p in notes if p.is_file() and not p.name.endswith(".md")]


def test_logs_an_earlier_version_kept_in_memory_are_moved_not_lost(workspace):
    mem = workspace / "memory"
    (mem / "query_log.json").write_text(json.dumps([{"query": "older", "top_score": 0.2}]))
    (mem / "access_log.json").write_text(json.dumps({"memory/2026-02-08.md": 5}))
    (mem / ".enhanced-memory-logs.lock").write_text("")
    # Read before anything moved them: both places count.
    assert [e["query"] for e in logs.read_query_log(workspace)] == ["older"]
    assert logs.read_access_log(workspace) == {"memory/2026-02-08.md": 5}
    response = _engine(workspace).search("postgres", now=NOW)
    assert [e["query"] for e in logs.read_query_log(workspace)] == ["older", "postgres"]
    hit = {h.path for h in response.hits}
    access = logs.read_access_log(workspace)
    assert access == {p: (p in hit) + 5 * (p == "memory/2026-02-08.md") for p in access}
    assert set(access) == hit | {"memory/2026-02-08.md"}
    assert [p.name for p in mem.iterdir() if p.is_file() and not p.name.endswith(".md")] == []
    moved = json.loads(logs.log_path(workspace, logs.QUERY_LOG).read_text())
    assert [e["query"] for e in moved] == ["older", "postgres"]


def test_query_with_a_lone_surrogate_is_logged_and_search_answers(workspace) -> None:
    from langchain_enhanced_memory.engine import MemorySearch
    from tests.fakes import WordEmbeddings

    engine = MemorySearch(workspace, embeddings=WordEmbeddings())
    response = engine.search("ramen \udcff place", k=2)
    assert response.hits
    logs.flush()
    log_text = logs.log_path(workspace, logs.QUERY_LOG).read_text(encoding="utf-8")
    assert "ramen" in log_text


def test_an_old_log_that_cannot_be_removed_is_read_once_and_logging_goes_on(workspace):
    # An immutable old log (chattr +i: honoured even by root) cannot be moved. It stays
    # where it is and is read from there; the new log does not take its entries in again
    # on each write, and every search is still logged.
    old = workspace / "memory" / "query_log.json"
    old.write_text(json.dumps([{"query": "older", "top_score": 0.2}]))
    subprocess.run(["chattr", "+i", str(old)], check=True)  # no chattr: fails, never skips
    try:
        engine = _engine(workspace)
        for query in ("postgres", "coffee", "migration"):
            engine.search(query, now=NOW)
            logs.flush()
        queries = [e["query"] for e in logs.read_query_log(workspace)]
        new = json.loads(logs.log_path(workspace, logs.QUERY_LOG).read_text())
    finally:
        subprocess.run(["chattr", "-i", str(old)], check=True)
    assert queries == ["older", "postgres", "coffee", "migration"]
    assert [e["query"] for e in new] == ["postgres", "coffee", "migration"]
    assert json.loads(old.read_text()) == [{"query": "older", "top_score": 0.2}]
