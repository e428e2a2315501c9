"""The spool: vectors appended as they land, read up to the committed count, folded away.

Real SQLite files and spool files on disk (tmp_path); the embedder is a fake.
"""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from langchain_enhanced_memory.core.vectorset import quantize
from langchain_enhanced_memory.store.db import chunk_ids, generation_of
from langchain_enhanced_memory.store.folding import Coverage, assemble, coverage, fold
from langchain_enhanced_memory.store.index import MemoryIndex
from langchain_enhanced_memory.store.spool import Spool, append, spool_state
from langchain_enhanced_memory.store.upkeep import embed_missing
from langchain_enhanced_memory.store.vector_segments import side_folder
from tests.fakes import WordEmbeddings
from tests.workspaces import SMALL_WORKSPACE, write_workspace

MODEL = "fake/m"


def _db(tmp_path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(tmp_path / "x.sqlite", isolation_level=None)
    conn.execute("CREATE TABLE catalog (name TEXT PRIMARY KEY, generation INT, data BLOB)")
    return conn


def _append(conn: sqlite3.Connection, folder: Path, keys: list[int], x: np.ndarray, commit=True):
    conn.execute("BEGIN IMMEDIATE")
    state = append(conn, folder, MODEL, np.asarray(keys, dtype=np.uint64), *quantize(x))
    conn.execute("COMMIT" if commit else "ROLLBACK")
    return state


def test_records_read_back_and_a_key_appended_again_is_the_later_one(tmp_path: Path) -> None:
    conn, folder = _db(tmp_path), tmp_path / "side"
    rng = np.random.default_rng(0)
    first, second = rng.normal(size=(3, 8)), rng.normal(size=(2, 8))
    _append(conn, folder, [5, 9, 7], first)
    state = _append(conn, folder, [9, 11], second)
    assert state.records == 5 and (folder / state.file).stat().st_size == state.size
    spool = Spool.open(folder, state)
    assert spool is not None
    assert spool.lookup(np.asarray([5, 7, 9, 11, 6], dtype=np.uint64)).tolist() == [0, 2, 3, 4, -1]
    assert spool.distinct_keys.tolist() == [5, 7, 9, 11]
    q, scale = quantize(second)
    assert np.array_equal(spool.matrix[3:], q) and np.array_equal(spool.scale[3:], scale)


def test_records_past_the_committed_count_are_never_read_and_are_cut_off(tmp_path: Path) -> None:
    conn, folder = _db(tmp_path), tmp_path / "side"
    x = np.eye(4, dtype=np.float32)
    committed = _append(conn, folder, [1, 2], x[:2])
    _append(conn, folder, [3], x[2:3], commit=False)  # a kill between the write and the commit
    assert spool_state(conn, MODEL) == committed
    path = folder / committed.file
    assert path.stat().st_size > committed.size
    spool = Spool.open(folder, committed)
    assert spool is not None and spool.lookup(np.asarray([3], dtype=np.uint64)).tolist() == [-1]
    state = _append(conn, folder, [4], x[3:])
    assert state.file == committed.file and state.records == 3
    assert path.stat().st_size == state.size
    again = Spool.open(folder, state)
    assert again is not None and again.keys.tolist() == [1, 2, 4]


def test_a_lost_spool_is_not_read_and_the_next_append_starts_anew(tmp_path: Path) -> None:
    conn, folder = _db(tmp_path), tmp_path / "side"
    x = np.eye(4, dtype=np.float32)
    lost = _append(conn, folder, [1, 2], x[:2])
    (folder / lost.file).write_bytes(b"\0" * 5)  # cut short by hand
    assert Spool.open(folder, lost) is None
    state = _append(conn, folder, [3], x[2:3])
    assert state.file != lost.file and state.records == 1
    assert [p.name for p in folder.iterdir()] == [state.file]  # the leftover went
    with pytest.raises(ValueError, match="8-d vectors"):
        _append(conn, folder, [4], np.ones((1, 8), dtype=np.float32))


def _index(tmp_path: Path) -> tuple[MemoryIndex, WordEmbeddings, list[tuple[str, str]]]:
    idx = MemoryIndex(write_workspace(tmp_path / "ws", SMALL_WORKSPACE))
    idx.sync()
    return idx, WordEmbeddings(), idx.missing_embeddings(MODEL).texts


def _store(idx: MemoryIndex, emb: WordEmbeddings, texts: list[tuple[str, str]]) -> None:
    vectors = np.asarray(emb.embed_documents([t for _, t in texts]), dtype=np.float32)
    idx.store_embeddings(MODEL, [h for h, _ in texts], vectors)


def test_a_fold_leaves_a_spool_that_grew_after_it_was_read(tmp_path: Path) -> None:
    idx, emb, texts = _index(tmp_path)
    _store(idx, emb, texts[:3])
    folder = side_folder(idx.path)
    with idx.db.open() as conn:
        cov = coverage(conn, folder, MODEL, idx.settings, chunk_ids(conn))
        assert isinstance(cov, Coverage) and cov.spool is not None
        vec = assemble(conn, MODEL, idx.settings, cov)
        generation = generation_of(conn)
    _store(idx, emb, texts[3:5])  # committed after the fold read the spool
    with idx.db.writer_lock():
        assert fold(idx.db, folder, MODEL, generation, vec) is None
    with idx.db.open() as conn:
        state = spool_state(conn, MODEL)
    assert state is not None and state.records == 5
    assert not list(folder.glob("*.vec"))
    assert idx.missing_embeddings(MODEL).texts == texts[5:]


def test_a_spool_deleted_by_hand_is_forgotten_and_embedded_again(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    idx, emb, texts = _index(tmp_path)
    _store(idx, emb, texts[:4])
    folder = side_folder(idx.path)
    (spool,) = folder.glob("*.spool")
    spool.unlink()
    snap = idx.snapshot(MODEL)  # read as lacking those vectors; a search forgets nothing
    assert snap.has_vector is not None and not snap.has_vector.any()
    emb.texts.clear()
    with caplog.at_level(logging.WARNING, logger="langchain_enhanced_memory"):
        embed_missing(idx, MODEL, lambda t: np.asarray(emb.embed_documents(t), dtype=np.float32))
    assert "damaged or missing" in caplog.text
    assert len(emb.texts) == len(texts)  # the run that forgot the spool embedded its vectors
    with sqlite3.connect(idx.path) as conn:  # no state names a spool no file holds
        assert spool_state(conn, MODEL) is None
    full = idx.snapshot(MODEL)
    assert full.has_vector is not None and full.has_vector.all()
