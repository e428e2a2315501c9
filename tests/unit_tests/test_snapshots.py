"""A loaded generation is a value: handed out, it never changes (``store.snapshots``)."""

from __future__ import annotations

import sqlite3
from dataclasses import fields
from pathlib import Path

import numpy as np
import pytest

from langchain_enhanced_memory.engine.search import MemorySearch
from langchain_enhanced_memory.store.db import IndexDB
from langchain_enhanced_memory.store.index import MemoryIndex
from langchain_enhanced_memory.store.snapshots import SnapshotCache
from langchain_enhanced_memory.store.upkeep import embed_missing
from tests.fakes import WordEmbeddings

MODEL = "fake/m"


def _embedded(workspace: Path) -> MemoryIndex:
    emb = WordEmbeddings()
    idx = MemoryIndex(workspace)
    idx.sync()
    embed_missing(idx, MODEL, lambda t: np.asarray(emb.embed_documents(t), dtype=np.float32))
    return idx


def test_a_snapshot_handed_out_is_unchanged_by_later_calls(workspace: Path) -> None:
    idx = _embedded(workspace)
    first = idx.snapshot(MODEL)
    held = {f.name: getattr(first, f.name) for f in fields(first)}
    assert first.vectors is not None and first.model == MODEL

    keyword = idx.snapshot(None)
    assert keyword.vectors is None and keyword.has_vector is None and keyword.model is None
    (workspace / "memory" / "2026-02-11.md").write_text("# Wednesday\n\nA new note.\n")
    idx.sync()
    later = idx.snapshot(MODEL)
    assert later.generation > first.generation

    assert {f.name: getattr(first, f.name) for f in fields(first)}.keys() == held.keys()
    for name, value in held.items():
        assert getattr(first, name) is value, name
    assert first.vectors is not None and first.has_vector is not None


def index_state(idx: MemoryIndex) -> tuple[dict[str, tuple[int, int]], int]:
    """Every index file's size and mtime (the WAL's shared memory aside) and SQLite's data.

    The data is the index's content, hashed: a commit by any connection changes it.
    The search logs, which live beside the index, are not the index.
    """
    logs = {"query_log.json", "access_log.json", "logs.lock"}
    files = {
        str(p.relative_to(idx.path.parent)): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in sorted(idx.path.parent.rglob("*"))
        if p.is_file() and not p.name.endswith("-shm") and p.name not in logs
    }
    with sqlite3.connect(f"file:{idx.path}?mode=ro", uri=True) as conn:
        tables = [t for (t,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        dump = [conn.execute(f"SELECT * FROM {t} ORDER BY 1").fetchall() for t in sorted(tables)]
    return files, hash(repr(dump))


def test_a_search_takes_no_writer_lock_and_writes_no_index_file(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = MemorySearch(workspace, embeddings=WordEmbeddings())
    engine.update_index()
    model = engine.model_id
    assert model is not None
    # New vectors in the spool and the cache, no segment written for them: what an
    # embedding run killed before its fold leaves.
    (workspace / "memory" / "2026-02-11.md").write_text("# Wednesday\n\nKestrel migration notes.\n")
    engine.index.sync()
    with monkeypatch.context() as m:
        m.setattr(SnapshotCache, "seal", lambda *a, **k: 0)
        assert engine.embed_missing() > 0
    before = index_state(engine.index)

    taken: list[object] = []

    def no_lock(*args: object, **kwargs: object) -> None:
        taken.append(args)  # the search may catch what this raises
        raise AssertionError("a search took the writer lock")

    monkeypatch.setattr(IndexDB, "writer_lock", no_lock)
    fresh = MemorySearch(workspace, embeddings=WordEmbeddings())  # a new process's first load
    for searcher in (engine, fresh):
        hits = searcher.search("kestrel migration").hits
        assert hits and hits[0].path == "memory/2026-02-11.md"
        assert searcher.index.snapshot(model).has_vector.all()
    assert not taken
    assert index_state(engine.index) == before
