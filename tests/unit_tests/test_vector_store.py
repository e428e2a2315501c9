"""Vectors stored once: int8 blobs, side files per generation, garbage collection, compaction.

Real SQLite files and side files on disk (tmp_path); the embedder is a fake.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest

from langchain_enhanced_memory.core.settings import MemorySettings
from langchain_enhanced_memory.core.vectorset import dequantize, quantize
from langchain_enhanced_memory.store import segment
from langchain_enhanced_memory.store.index import MemoryIndex
from langchain_enhanced_memory.store.spool import spool_state
from langchain_enhanced_memory.store.sync import sha
from langchain_enhanced_memory.store.upkeep import embed_missing
from langchain_enhanced_memory.store.vector_segments import side_folder
from tests.fakes import WordEmbeddings
from tests.workspaces import SMALL_WORKSPACE, write_workspace

MODEL = "fake/m"


def _embed(emb: WordEmbeddings):
    return lambda texts: np.asarray(emb.embed_documents(texts), dtype=np.float32)


def test_vectors_stay_in_the_spool_until_a_generation_is_complete(tmp_path: Path) -> None:
    idx = MemoryIndex(write_workspace(tmp_path / "ws", SMALL_WORKSPACE))
    idx.sync()
    emb = WordEmbeddings()
    todo = idx.missing_embeddings(MODEL)
    head = todo.texts[:2]
    idx.store_embeddings(MODEL, [h for h, _ in head], _embed(emb)([t for _, t in head]))
    assert _rows(idx) == 2
    folder = side_folder(idx.path)
    with sqlite3.connect(idx.path) as conn:
        state = spool_state(conn, MODEL)
    assert state is not None and state.records == 2
    assert (folder / state.file).stat().st_size == state.size
    snap = idx.snapshot(MODEL)  # searchable as far as it goes, nothing written
    assert snap.has_vector is not None and snap.has_vector.sum() >= 1
    assert not list(folder.glob("*.vec"))
    assert idx.missing_embeddings(MODEL).texts == todo.texts[2:]
    embed_missing(idx, MODEL, _embed(emb))
    assert len(list(folder.glob("*.vec"))) == 1
    # The fold took the spool: its row and its file are gone.
    assert not list(folder.glob("*.spool"))
    with sqlite3.connect(idx.path) as conn:
        assert spool_state(conn, MODEL) is None
    # A vector per text embedded, and one per chunk whose vector is its lines' mean.
    assert _rows(idx) == len(todo.texts) + len(todo.means)
    assert not idx.missing_embeddings(MODEL)


def _indexed(tmp_path: Path) -> tuple[MemoryIndex, WordEmbeddings]:
    files = dict(SMALL_WORKSPACE)
    files["memory/2026-02-09.md"] = "# 2026-02-09\n\n- Paid the rent.\n- Booked the dentist.\n"
    idx = MemoryIndex(write_workspace(tmp_path / "ws", files))
    idx.sync()
    emb = WordEmbeddings()
    embed_missing(idx, MODEL, _embed(emb))
    idx.snapshot(MODEL)  # complete: writes the generation's side file
    return idx, emb


def _rows(idx: MemoryIndex) -> int:
    return idx.stats()["cached_vectors"]


def test_quantize_round_trips_within_half_a_step() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(50, 64)).astype(np.float32)
    x[3] = 0  # a zero row stays zero
    q, scale = quantize(x)
    assert q.dtype == np.int8 and scale.dtype == np.float32
    assert np.all(np.abs(dequantize(q, scale) - x) <= scale[:, None] / 2 + 1e-7)
    assert not dequantize(q, scale)[3].any()


def test_a_change_writes_a_new_side_file_and_collects_what_no_generation_uses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(segment, "MAX_SEGMENTS", 1)  # the change's fold merges (one policy)
    idx, emb = _indexed(tmp_path)
    folder = side_folder(idx.path)
    first = {p.name for p in folder.glob("*.vec")}
    assert len(first) == 1
    rows_before = _rows(idx)
    note = idx.workspace / "memory/2026-02-09.md"
    note.write_text("# 2026-02-09\n\n- Paid the rent.\n- Called the plumber.\n")
    idx.sync()
    emb.texts.clear()
    embed_missing(idx, MODEL, _embed(emb))
    assert emb.texts == ["- Called the plumber."]  # the chunk's vector: its lines' mean
    # The run ended by writing the new generation's file: the old one is gone.
    snap = idx.snapshot(MODEL)
    assert snap.has_vector is not None and snap.has_vector.all()
    (second,) = {p.name for p in folder.glob("*.vec")}
    assert second not in first
    # The edited chunk's old vector and its dropped line's are gone; the rest were moved.
    assert _rows(idx) == rows_before
    gone, kept = sha("- Booked the dentist."), sha("- Called the plumber.")
    assert idx.with_vector(MODEL, [gone, kept]).tolist() == [False, True]
    # A fresh process maps the new file and needs nothing embedded.
    again = MemoryIndex(idx.workspace)
    assert not again.missing_embeddings(MODEL)
    fresh = again.snapshot(MODEL)
    assert fresh.vectors is not None and isinstance(fresh.vectors.parts[0].matrix, np.memmap)
    assert np.array_equal(fresh.dense_vectors(), snap.dense_vectors())


def test_a_lost_segment_costs_its_own_vectors_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(segment, "MERGE_SHARE", 10.0)  # the change's delta stays a segment
    idx, emb = _indexed(tmp_path)
    note = idx.workspace / "memory/2026-02-09.md"
    note.write_text("# 2026-02-09\n\n- Paid the rent.\n- Called the plumber.\n")
    idx.sync()
    embed_missing(idx, MODEL, _embed(emb))
    whole = idx.snapshot(MODEL).dense_vectors()
    folder = side_folder(idx.path)
    base, _ = sorted(folder.glob("*.vec"), key=lambda p: p.stat().st_size, reverse=True)
    base.unlink()  # deleted by hand
    emb.texts.clear()
    embed_missing(idx, MODEL, _embed(emb))
    # The base's texts are embedded again, the delta's are not: it still holds them.
    assert any("dark roast" in t for t in emb.texts)
    assert not {"- Paid the rent.", "- Called the plumber."} & set(emb.texts)
    again = MemoryIndex(idx.workspace).snapshot(MODEL)
    assert again.has_vector is not None and again.has_vector.all()
    assert np.array_equal(again.dense_vectors(), whole)
    assert not idx.missing_embeddings(MODEL)


def test_compact_removes_orphans_and_reclaims_space(tmp_path: Path) -> None:
    idx, _ = _indexed(tmp_path)
    folder = side_folder(idx.path)
    orphan = folder / "0123-g9-deadbeef.vec"  # a write killed before its commit
    orphan.write_bytes(b"\0" * 100_000)
    with sqlite3.connect(idx.path) as conn:  # deleted rows leave free pages
        conn.execute("CREATE TABLE ballast(x)")
        conn.executemany("INSERT INTO ballast VALUES (?)", [(b"\0" * 4000,)] * 200)
        conn.commit()
        conn.execute("DROP TABLE ballast")
    before, after = idx.compact()
    assert after < before - 100_000
    assert not orphan.exists() and len(list(folder.glob("*.vec"))) == 1
    assert idx.snapshot(MODEL).has_vector is not None


def test_a_cold_index_leaves_little_space_to_reclaim(tmp_path: Path) -> None:
    files = {
        f"memory/2026-01-{d:02d}.md": f"# Day {d}\n\n"
        + "".join(f"## Part {i}\n\n- fact {d} {i} one\n- fact {d} {i} two\n\n" for i in range(20))
        for d in range(1, 28)
    }
    idx = MemoryIndex(write_workspace(tmp_path / "ws", files))
    idx.sync()
    emb = WordEmbeddings(dim=256)
    embed_missing(idx, MODEL, _embed(emb))
    # The vectors went through the spool to the side file, never into SQLite rows,
    # so compacting finds little to reclaim.
    before, after = idx.compact()
    assert after > 0.9 * before


def test_landed_batches_come_in_groups_and_a_failure_yields_the_landed_ones_first() -> None:
    from langchain_enhanced_memory.store import upkeep

    def runs(n: int, fail: bool):
        for i in range(n):
            yield [(f"h{i}-{j}", "t") for j in range(20)], np.full((20, 4), i, np.float32)
        if fail:
            raise RuntimeError("embedder down")

    groups = list(upkeep._landed(runs(60, False)))
    assert [b for g in groups for b, _ in g] == [b for b, _ in runs(60, False)]  # in order, all
    assert max(sum(len(b) for b, _ in g) for g in groups) <= upkeep.GROUP_TEXTS + 19
    seen = []
    with pytest.raises(RuntimeError):
        for group in upkeep._landed(runs(5, True)):
            seen += [int(v[0, 0]) for _, v in group]
    assert seen == [0, 1, 2, 3, 4]  # every batch landed before the failure came out first


def _repeating_notes(tmp_path: Path, name: str) -> MemoryIndex:
    """Notes whose lines repeat across files: a line's first chunk is in another part."""
    files = {
        f"memory/2026-05-{d:02d}.md": (
            f"# Day {d}\n\n- Fact {d} about tea.\n- The same line in every note.\n"
            f"- Fact {d % 3} shared by a few days.\n"
        )
        for d in range(1, 13)
    }
    idx = MemoryIndex(write_workspace(tmp_path / name, files), MemorySettings(embed_batch_size=2))
    idx.sync()
    return idx


def test_an_embedding_run_embeds_a_part_of_the_rows_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each part is stored before the next is read; together they are what one part is.

    The fold, copying its rows a few at a time, writes the vectors of one copy.
    """
    from langchain_enhanced_memory.store import embed_cache, folding

    whole = _repeating_notes(tmp_path, "whole")
    emb = WordEmbeddings()
    calls: list[list[str]] = []

    def once(texts: list[str]) -> np.ndarray:
        calls.append(texts)
        return _embed(emb)(texts)

    embedded = embed_missing(whole, MODEL, once)
    want = sorted(t for batch in calls for t in batch)
    assert len(want) == len(set(want)) == embedded  # each text once

    parts = _repeating_notes(tmp_path, "parts")
    monkeypatch.setattr(embed_cache, "PART_ROWS", 2)
    monkeypatch.setattr(folding, "GATHER_ROWS", 3)
    first = dict(next(parts.missing_parts(parts.missing_plan(MODEL))).texts)
    seen: list[str] = []

    def stored_before(texts: list[str]) -> np.ndarray:
        if not set(texts) & set(first.values()):  # a later part: the first one is stored
            assert not set(first) & {h for h, _ in parts.missing_embeddings(MODEL).texts}
        seen.extend(texts)
        return _embed(emb)(texts)

    assert embed_missing(parts, MODEL, stored_before) == embedded
    assert sorted(seen) == want
    assert not parts.missing_embeddings(MODEL)
    a, b = whole.snapshot(MODEL), parts.snapshot(MODEL)
    assert a.has_vector is not None and b.has_vector is not None and a.has_vector.all()
    assert np.array_equal(a.dense_vectors(), b.dense_vectors())
