from __future__ import annotations

import logging
import os
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from conftest import write_workspace
from fakes import WordEmbeddings

from langchain_enhanced_memory.index import SCHEMA_VERSION, MemoryIndex, default_index_path


def _embed(emb: WordEmbeddings):
    return lambda texts: np.asarray(emb.embed_documents(texts), dtype=np.float32)


def test_index_lives_in_workspace_and_is_not_indexed(workspace: Path) -> None:
    idx = MemoryIndex(workspace)
    report = idx.sync()
    assert idx.path == workspace / ".enhanced-memory" / "index.sqlite"
    assert idx.path.exists()
    assert report.files == 4
    snap = idx.snapshot()
    assert not any(".enhanced-memory" in p for p in snap.paths)
    assert {"MEMORY.md", "memory/2026-02-08.md", "memory/topics/project-alpha.md"} <= set(
        snap.paths
    )


def test_no_change_sync_keeps_generation(workspace: Path) -> None:
    idx = MemoryIndex(workspace)
    first = idx.sync()
    again = idx.sync()
    assert first.generation == again.generation == 1
    assert not again.changed_anything
    assert not idx.is_stale()


def test_changed_file_reembeds_only_its_changed_chunks(workspace: Path) -> None:
    emb = WordEmbeddings()
    idx = MemoryIndex(workspace)
    idx.sync()
    total = idx.embed_missing("fake/m", _embed(emb))
    assert total == len(idx.snapshot())
    emb.texts.clear()
    note = workspace / "memory/2026-02-08.md"
    note.write_text(note.read_text() + "\n## Evening\n\nCalled the landlord about the heating.\n")
    assert idx.is_stale()
    report = idx.sync()
    assert report.changed == ["memory/2026-02-08.md"]
    idx.embed_missing("fake/m", _embed(emb))
    # Only the new section is embedded; unchanged sections come from the cache.
    assert len(emb.texts) == 1 and "landlord" in emb.texts[0]


def test_deleted_file_disappears(workspace: Path) -> None:
    idx = MemoryIndex(workspace)
    idx.sync()
    (workspace / "memory/2026-02-07.md").unlink()
    report = idx.sync()
    assert report.deleted == ["memory/2026-02-07.md"]
    assert "memory/2026-02-07.md" not in idx.snapshot().paths


def test_touch_without_content_change_is_not_a_change(workspace: Path) -> None:
    idx = MemoryIndex(workspace)
    idx.sync()
    note = workspace / "MEMORY.md"
    os.utime(note, ns=(1, 1))
    report = idx.sync()
    assert not report.changed_anything and report.generation == 1
    assert not idx.is_stale()


def test_model_switch_reembeds_everything_once(workspace: Path) -> None:
    idx = MemoryIndex(workspace)
    idx.sync()
    a, b = WordEmbeddings(model="a"), WordEmbeddings(model="b")
    n = idx.embed_missing("a", _embed(a))
    assert idx.embed_missing("b", _embed(b)) == n
    assert idx.embed_missing("a", _embed(a)) == 0
    snap = idx.snapshot("b")
    assert snap.vectors is not None and snap.has_vector is not None and snap.has_vector.all()


def test_failed_sync_leaves_previous_state(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    idx = MemoryIndex(workspace)
    idx.sync()
    before = idx.snapshot()
    (workspace / "memory/2026-02-09.md").write_text(
        "# 2026-02-09\n\nA new day with new facts here.\n"
    )

    def boom(*_a: object, **_k: object) -> None:
        raise RuntimeError("disk full")

    monkeypatch.setattr(MemoryIndex, "_write_postings", staticmethod(boom))
    with pytest.raises(RuntimeError):
        idx.sync()
    monkeypatch.undo()
    fresh = MemoryIndex(workspace)
    after = fresh.snapshot()
    assert after.generation == before.generation
    assert after.paths == before.paths
    assert fresh.sync().changed == ["memory/2026-02-09.md"]


def test_garbage_index_is_rebuilt_with_a_warning(
    workspace: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = default_index_path(workspace)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"this is not a database" * 100)
    idx = MemoryIndex(workspace)
    with caplog.at_level(logging.WARNING, logger="langchain_enhanced_memory"):
        idx.sync()
    assert any("rebuilding" in r.message for r in caplog.records)
    assert len(idx.snapshot()) > 0
    assert list(path.parent.glob("index.sqlite.corrupt-*"))


def test_old_schema_is_migrated(workspace: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = default_index_path(workspace)
    path.parent.mkdir(parents=True)
    with sqlite3.connect(path) as conn:
        conn.execute(f"PRAGMA user_version={SCHEMA_VERSION + 41}")
        conn.execute("CREATE TABLE vectors(x)")
    with caplog.at_level(logging.WARNING, logger="langchain_enhanced_memory"):
        MemoryIndex(workspace).sync()
    assert any("schema" in r.message for r in caplog.records)
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION


def test_read_only_workspace_uses_cache_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = write_workspace(
        tmp_path / "ro", {"MEMORY.md": "# Notes\n\nSomething worth remembering here.\n"}
    )
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, m: False if Path(p) == ws else real_access(p, m))
    path = default_index_path(ws)
    assert path.is_relative_to(tmp_path / "cache")


def test_search_answers_from_index_and_updates_stale_index(workspace: Path) -> None:
    from langchain_enhanced_memory.search import MemorySearch

    engine = MemorySearch(workspace, embeddings=WordEmbeddings())
    hits = engine.search("billing database Postgres", k=3).hits
    assert hits[0].path == "memory/2026-02-08.md"
    (workspace / "memory/topics/garden.md").write_text(
        "# Garden\n\nPlanted tomatoes and basil in April.\n"
    )
    hits = engine.search("tomatoes basil", k=1).hits
    assert hits[0].path == "memory/topics/garden.md"


def test_locked_index_is_reported_not_set_aside(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from langchain_enhanced_memory.index import IndexUnavailableError

    idx = MemoryIndex(workspace)
    idx.sync()

    def locked(self: MemoryIndex) -> sqlite3.Connection:
        raise sqlite3.OperationalError("database is locked")

    monkeypatch.setattr(MemoryIndex, "_connect", locked)
    with pytest.raises(IndexUnavailableError, match="locked"):
        MemoryIndex(workspace).generation()
    monkeypatch.undo()
    assert not list(idx.path.parent.glob("*.corrupt-*"))
    assert MemoryIndex(workspace).generation() == 1
