from __future__ import annotations

import contextlib
import itertools
import logging
import os
import sqlite3
import threading
import time
from datetime import datetime
from pathlib import Path

import numpy as np
import pytest

from langchain_enhanced_memory.config import load
from langchain_enhanced_memory.core.fusion import rrf
from langchain_enhanced_memory.core.ranking import rank
from langchain_enhanced_memory.core.settings import MemorySettings
from langchain_enhanced_memory.core.vectorset import dequantize, quantize
from langchain_enhanced_memory.store import embed_cache, sync
from langchain_enhanced_memory.store.db import IndexDB, default_index_path
from langchain_enhanced_memory.store.index import MemoryIndex
from langchain_enhanced_memory.store.upkeep import embed_missing
from langchain_enhanced_memory.store.vector_segments import FileRows, side_folder
from tests.fakes import WordEmbeddings
from tests.workspaces import write_workspace


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
    total = embed_missing(idx, "fake/m", _embed(emb))
    assert total == len(idx.snapshot())
    emb.texts.clear()
    note = workspace / "memory/2026-02-08.md"
    note.write_text(note.read_text() + "\n## Evening\n\nCalled the landlord about the heating.\n")
    assert idx.is_stale()
    report = idx.sync()
    assert report.changed == ["memory/2026-02-08.md"]
    embed_missing(idx, "fake/m", _embed(emb))
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
    n = embed_missing(idx, "a", _embed(a))
    assert embed_missing(idx, "b", _embed(b)) == n
    assert embed_missing(idx, "a", _embed(a)) == 0
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

    monkeypatch.setattr(sync, "write_postings", boom)
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


def test_read_only_workspace_uses_cache_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = write_workspace(
        tmp_path / "ro", {"MEMORY.md": "# Notes\n\nSomething worth remembering here.\n"}
    )
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    load()
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, m: False if Path(p) == ws else real_access(p, m))
    path = default_index_path(ws)
    assert path.is_relative_to(tmp_path / "cache")


def test_search_answers_from_index_and_updates_stale_index(workspace: Path) -> None:
    from langchain_enhanced_memory.engine import MemorySearch

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
    from langchain_enhanced_memory.core.errors import IndexUnavailableError

    idx = MemoryIndex(workspace)
    idx.sync()

    def locked(self: IndexDB) -> sqlite3.Connection:
        raise sqlite3.OperationalError("database is locked")

    monkeypatch.setattr(IndexDB, "connect", locked)
    with pytest.raises(IndexUnavailableError, match="locked"):
        MemoryIndex(workspace).generation()
    monkeypatch.undo()
    assert not list(idx.path.parent.glob("*.corrupt-*"))
    assert MemoryIndex(workspace).generation() == 1


def test_a_large_transaction_does_not_leave_its_wal_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from langchain_enhanced_memory.store import db

    monkeypatch.setattr(db, "WAL_LIMIT", 1 << 20)
    index = IndexDB(tmp_path / "index.sqlite")
    wal = Path(str(index.path) + "-wal")
    with contextlib.closing(index.connect()) as conn:  # open, as a resident server keeps it
        conn.execute("CREATE TABLE t(x)")
        conn.execute("BEGIN")
        conn.executemany("INSERT INTO t VALUES (?)", [(os.urandom(4000),)] * 2000)  # ~8 MB
        conn.execute("COMMIT")
        assert wal.stat().st_size > 4 << 20
        conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
        conn.execute("INSERT INTO t VALUES (1)")  # the next write starts the WAL over
        assert wal.stat().st_size <= 1 << 20


def test_an_index_run_leaves_no_wal_unless_a_reader_is_mid_read(tmp_path: Path) -> None:
    ws = write_workspace(tmp_path / "ws", NOTES)
    idx = MemoryIndex(ws)
    idx.sync()
    wal = Path(str(idx.path) + "-wal")
    with contextlib.closing(idx.db.connect()) as reader:  # a searcher's: the WAL file stays
        reader.execute("BEGIN")
        reader.execute("SELECT count(*) FROM chunks").fetchone()
        embed_missing(idx, "fake/m", _embed(WordEmbeddings()))
        assert wal.stat().st_size > 0  # kept for the read, which nothing waited for
        reader.execute("COMMIT")
        (ws / "memory/2026-03-02.md").write_text("# 2026-03-02\n\n- Bought a kite.\n")
        idx.sync()
        embed_missing(idx, "fake/m", _embed(WordEmbeddings()))
        assert wal.stat().st_size == 0


NOTES = {
    "memory/2026-03-01.md": "# 2026-03-01\n\n## Notes\n\n"
    "- Maria adopted a puppy from the dog shelter.\n- John fixed the brakes of his car.\n"
    "- Ana started pottery classes on Tuesdays.\n",
    "MEMORY.md": "# Preferences\n\nThe user prefers dark roast coffee and vim keybindings.\n",
}
NOTE_LINES = [
    "- Maria adopted a puppy from the dog shelter.",
    "- John fixed the brakes of his car.",
    "- Ana started pottery classes on Tuesdays.",
]


def _notes_index(
    tmp_path: Path, settings: MemorySettings | None = None
) -> tuple[MemoryIndex, WordEmbeddings]:
    """The NOTES workspace, synced and embedded under model ``fake/m``."""
    emb = WordEmbeddings()
    idx = MemoryIndex(write_workspace(tmp_path / "ws", NOTES), settings)
    idx.sync()
    embed_missing(idx, "fake/m", _embed(emb))
    return idx, emb


def _lines(snap) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The live line vectors of a snapshot over its parts: owner row, int8 rows, scales."""
    assert snap.vectors is not None
    owner, lines, scale = [], [], []
    for part in snap.vectors.parts:
        live = part.rows[part.owner] >= 0
        owner.append(part.rows[part.owner][live])
        lines.append(part.lines[np.arange(part.lines.shape[0])][live])
        scale.append(part.line_scale[np.arange(part.line_scale.shape[0])][live])
    order = np.argsort(np.concatenate(owner), kind="stable")
    return np.concatenate(owner)[order], np.concatenate(lines)[order], np.concatenate(scale)[order]


def _chunk_vector(snap, row: int) -> tuple[np.ndarray, float]:
    """A chunk's vector as stored (dequantized) and half its int8 step."""
    dense = snap.dense_vectors()
    assert dense is not None
    return dense[row], float(np.abs(dense[row]).max()) / 127 / 2 + 1e-6


def test_chunk_vectors_embedded_embeds_every_chunk_text_too(tmp_path: Path) -> None:
    idx, emb = _notes_index(tmp_path, MemorySettings(chunk_vectors="embedded"))
    assert emb.texts[-3:] == NOTE_LINES and len(emb.texts) == len(idx.snapshot()) + 3
    snap = idx.snapshot("fake/m")
    row = snap.paths.index("memory/2026-03-01.md")
    text = emb.texts[[t.endswith(NOTE_LINES[-1]) for t in emb.texts].index(True)]
    want = np.asarray(emb.embed_documents([text]), dtype=np.float32)[0]
    got, half_step = _chunk_vector(snap, row)
    assert np.allclose(got, want, atol=half_step)


def test_a_chunk_whose_lines_all_have_vectors_gets_its_mean_without_embedding(
    tmp_path: Path,
) -> None:
    idx, emb = _notes_index(tmp_path)
    idx.snapshot("fake/m")  # complete: the lines' vectors are in the side file
    note = idx.workspace / "memory/2026-03-01.md"
    note.write_text("# 2026-03-01\n\n## Notes\n\n" + "\n".join(reversed(NOTE_LINES)) + "\n")
    idx.sync()
    emb.texts.clear()
    assert embed_missing(idx, "fake/m", _embed(emb)) == 0 and emb.texts == []
    snap = idx.snapshot("fake/m")
    assert snap.has_vector is not None and snap.has_vector.all()
    row = snap.paths.index("memory/2026-03-01.md")
    _, lines, scale = _lines(snap)
    want = dequantize(lines, scale).sum(axis=0)  # the lines as stored
    got, half_step = _chunk_vector(snap, row)
    assert np.allclose(got, want / np.linalg.norm(want), atol=half_step)


def test_lines_of_a_chunk_are_embedded_stored_and_reloaded(tmp_path: Path) -> None:
    idx, emb = _notes_index(tmp_path)
    ws = idx.workspace
    # The chunk without lines of its own, then the lines of the one with three; that
    # chunk's text is not embedded: its vector is the mean of its lines'.
    assert emb.texts[1:] == NOTE_LINES and len(emb.texts) == len(idx.snapshot()) - 1 + 3
    snap = idx.snapshot("fake/m")
    row = snap.paths.index("memory/2026-03-01.md")
    owner, lines, scale = _lines(snap)
    assert owner.tolist() == [row] * 3
    want = np.asarray(emb.embed_documents(NOTE_LINES), dtype=np.float32)
    assert lines.dtype == np.int8  # stored and searched as int8 + a scale per row
    step = float(scale.max())  # int8: within half a step of each value
    assert np.allclose(dequantize(lines, scale), want, atol=step / 2 + 1e-6)
    total = dequantize(lines, scale).sum(axis=0)  # the chunk's vector: its lines' mean
    got, half_step = _chunk_vector(snap, row)
    assert np.allclose(got, total / np.linalg.norm(total), atol=half_step)
    # Once complete, the generation's vectors are one side file (chunk rows mapped
    # read-only, line rows read from it when scored): each vector is stored once.
    assert snap.vectors is not None and len(snap.vectors.parts) == 1
    part = snap.vectors.parts[0]
    assert isinstance(part.matrix, np.memmap) and not part.matrix.flags.writeable
    assert isinstance(part.lines, FileRows)
    files = list(side_folder(idx.path).glob("*.vec"))
    assert len(files) == 1
    with sqlite3.connect(idx.path) as conn:
        names = {n for (n,) in conn.execute("SELECT name FROM catalog")}
    assert "vectors:fake/m" in names and "spool:fake/m" not in names
    again = MemoryIndex(ws).snapshot("fake/m")
    assert _lines(again)[0].tolist() == [row] * 3
    assert np.array_equal(_lines(again)[1], lines)
    # A damaged side file is not misread: its vectors are forgotten and embedded again.
    files[0].write_bytes(files[0].read_bytes()[:-8])
    third = MemoryIndex(ws)
    assert third.snapshot("fake/m").vectors is None or not third.snapshot("fake/m").has_vector.all()
    emb.texts.clear()
    embed_missing(third, "fake/m", _embed(emb))
    assert len(emb.texts) == len(third.snapshot()) - 1 + 3
    fourth = third.snapshot("fake/m")
    assert np.array_equal(_lines(fourth)[1], lines)


def test_an_index_run_over_a_damaged_side_file_embeds_its_vectors_again(tmp_path: Path) -> None:
    # The run that finds the damage holds the writer lock when it seals: it must
    # forget the file itself, not wait for a lock it holds (this raised before).
    idx, emb = _notes_index(tmp_path)
    ws = idx.workspace
    (file,) = side_folder(idx.path).glob("*.vec")
    file.write_bytes(file.read_bytes()[:-8])
    again = MemoryIndex(ws)
    embed_missing(again, "fake/m", _embed(emb))
    embed_missing(again, "fake/m", _embed(emb))
    snap = MemoryIndex(ws).snapshot("fake/m")
    assert snap.has_vector is not None and snap.has_vector.all()
    assert not file.exists()


def test_compact_over_a_damaged_side_file_forgets_it(tmp_path: Path) -> None:
    idx, emb = _notes_index(tmp_path)
    (file,) = side_folder(idx.path).glob("*.vec")
    file.write_bytes(file.read_bytes()[:-8])
    again = MemoryIndex(idx.workspace)
    again.compact()  # seals every model under the writer lock, as an index run does
    assert not file.exists()
    embed_missing(again, "fake/m", _embed(emb))
    snap = MemoryIndex(idx.workspace).snapshot("fake/m")
    assert snap.has_vector is not None and snap.has_vector.all()


def test_an_edit_embeds_only_its_new_lines(tmp_path: Path) -> None:
    idx, emb = _notes_index(tmp_path)
    ws = idx.workspace
    emb.texts.clear()
    note = ws / "memory/2026-03-01.md"
    note.write_text(note.read_text() + "- Bob moved to Lisbon in May.\n")
    idx.sync()
    embed_missing(idx, "fake/m", _embed(emb))
    # Only the one new line: the grown chunk's vector is the mean of its lines, the
    # old ones from the cache.
    assert emb.texts == ["- Bob moved to Lisbon in May."]
    assert _lines(idx.snapshot("fake/m"))[1].shape[0] == 4


def test_original_profile_embeds_no_lines(tmp_path: Path) -> None:
    idx, emb = _notes_index(tmp_path, MemorySettings(profile="original"))
    assert not set(NOTE_LINES) & set(emb.texts)
    vecs = idx.snapshot("fake/m").vectors
    assert vecs is not None and not vecs.has_lines


@pytest.mark.parametrize("share", [0.0, 0.5, 1.0])
def test_vector_signal_mixes_the_chunk_and_its_best_line(tmp_path: Path, share: float) -> None:
    settings = MemorySettings(line_vector_share=share, vector_norm="raw")
    idx, emb = _notes_index(tmp_path, settings)
    snap = idx.snapshot("fake/m")
    q = np.asarray(emb.embed_query("puppy dog shelter"), dtype=np.float32)
    ranking = rank(snap, "puppy dog shelter", datetime(2026, 3, 2), settings, q)
    q = dequantize(*quantize(q[None]))[0]  # int8 rows are scored with the query in int8 too
    chunk_cos = snap.dense_vectors() @ q
    row = snap.paths.index("memory/2026-03-01.md")
    best_line = max(dequantize(*quantize(emb.embed_documents(NOTE_LINES))) @ q)
    want = chunk_cos.copy()
    want[row] = share * best_line + (1 - share) * chunk_cos[row]
    assert np.allclose(ranking.signals["vector"], want, atol=1e-3)


def test_lines_of_chunks_outside_the_candidates_are_not_scored(tmp_path: Path) -> None:
    settings = MemorySettings(line_vector_share=1.0, vector_norm="raw", line_candidates=1)
    idx, emb = _notes_index(tmp_path, settings)
    snap = idx.snapshot("fake/m")
    row = snap.paths.index("memory/2026-03-01.md")
    query = "dark roast coffee puppy"
    q = np.asarray(emb.embed_query(query), dtype=np.float32)
    # The one candidate is MEMORY.md (three of four words): the notes chunk keeps its cosine.
    ranking = rank(snap, query, datetime(2026, 3, 2), settings, q)
    wide = settings.replace(line_candidates=2)
    wide_ranking = rank(snap, query, datetime(2026, 3, 2), wide, q)
    q = dequantize(*quantize(q[None]))[0]  # int8 rows are scored with the query in int8 too
    assert np.isclose(ranking.signals["vector"][row], snap.dense_vectors()[row] @ q, atol=1e-6)
    ranking = wide_ranking
    best_line = max(dequantize(*quantize(emb.embed_documents(NOTE_LINES))) @ q)
    assert best_line > snap.dense_vectors()[row] @ q + 0.05
    assert np.isclose(ranking.signals["vector"][row], best_line, atol=1e-3)


def test_nothing_to_embed_is_known_without_hashing_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    idx, _ = _notes_index(tmp_path)
    ws = idx.workspace
    idx.snapshot("fake/m")  # stores this generation's complete matrices

    def no_hashing(*_a: object, **_k: object) -> None:
        raise AssertionError("lines hashed on a no-change re-index")

    monkeypatch.setattr(embed_cache, "generation_keys", no_hashing)
    assert not idx.missing_embeddings("fake/m")
    # A change makes a new generation: the lines are looked at again.
    (ws / "MEMORY.md").write_text("# Preferences\n\nTea now, not coffee.\n")
    idx.sync()
    with pytest.raises(AssertionError, match="no-change"):
        idx.missing_embeddings("fake/m")


def test_rrf_fusion_ranks_by_reciprocal_ranks_of_bm25_and_vectors(tmp_path: Path) -> None:
    settings = MemorySettings(
        profile="bm25",
        fusion="rrf",
        weights={"vector": 1, "keyword": 1, "header": 0, "filepath": 0},
    )
    idx, emb = _notes_index(tmp_path, settings)
    snap = idx.snapshot("fake/m")
    q = np.asarray(emb.embed_query("dark roast coffee"), dtype=np.float32)
    ranking = rank(snap, "dark roast coffee", datetime(2026, 3, 2), settings, q)
    kw, vec = ranking.signals["keyword"], ranking.signals["vector"]
    want = rrf([(vec, np.ones(len(snap), bool)), (kw, kw > 0)], 60.0)
    assert np.allclose(ranking.scores, want)
    assert snap.paths[int(np.argmax(ranking.scores))] == "MEMORY.md"


def test_first_batch_alone_sets_the_dimension(tmp_path: Path) -> None:
    files = {
        f"memory/2026-03-{d:02d}.md": f"# Day {d}\n\nFact number {d} here.\n" for d in range(1, 9)
    }
    ws = write_workspace(tmp_path / "ws", files)
    idx = MemoryIndex(ws, MemorySettings(embed_batch_size=1, embed_concurrency=4))
    idx.sync()
    spans: list[tuple[float, float]] = []
    lock = threading.Lock()
    emb = WordEmbeddings()

    def slow(texts: list[str]) -> np.ndarray:
        start = time.perf_counter()
        time.sleep(0.02)
        with lock:
            spans.append((start, time.perf_counter()))
        return _embed(emb)(texts)

    assert embed_missing(idx, "fake/m", slow) == 8
    first_end = min(end for _, end in spans)
    # No other batch started before the first one was back; the rest overlapped.
    assert sorted(start for start, _ in spans)[1] >= first_end
    rest = sorted(spans)[1:]
    assert any(b[0] < a[1] for a, b in itertools.pairwise(rest)), "the rest ran in parallel"


def _many_notes(tmp_path: Path) -> MemoryIndex:
    files = {
        f"memory/2026-04-{d:02d}.md": f"# Day {d}\n\n- Fact {d} about tea.\n- Fact {d} about jam.\n"
        for d in range(1, 21)
    }
    idx = MemoryIndex(
        write_workspace(tmp_path / "ws", files),
        MemorySettings(embed_batch_size=1, embed_concurrency=4),
    )
    idx.sync()
    return idx


@pytest.mark.parametrize("failure", ["raises", "wrong size"])
def test_a_failed_batch_keeps_exactly_the_batches_before_it(tmp_path: Path, failure: str) -> None:
    """A batch that fails ends the run: the batches before it are stored, none after."""
    from langchain_enhanced_memory.core.errors import EmbeddingError

    idx = _many_notes(tmp_path)
    order = idx.missing_embeddings("fake/m").texts
    slow, bad = order[1][1], order[30][1]  # while the second waits, later ones come back
    emb = WordEmbeddings()

    def embed(texts: list[str]) -> np.ndarray:
        if texts == [slow]:
            time.sleep(0.3)
        if texts == [bad]:
            if failure == "raises":
                raise EmbeddingError("embedder down", kind="unreachable")
            return np.ones((1, 3), dtype=np.float32)
        return _embed(emb)(texts)

    with pytest.raises(EmbeddingError):
        embed_missing(idx, "fake/m", embed)
    left = {h for h, _ in idx.missing_embeddings("fake/m").texts}
    assert left == {h for h, _ in order[30:]}


def _as_schema(path: Path, version: int) -> None:
    """Make an index file look as schema ``version`` (5 or 6) wrote it: a row per cached text."""
    with contextlib.closing(sqlite3.connect(path)) as conn, conn:
        vector = ", vector BLOB" if version == 5 else ""
        conn.execute(
            "CREATE TABLE embed_cache (model TEXT NOT NULL, text_hash TEXT NOT NULL,"
            f" dim INTEGER NOT NULL{vector}, PRIMARY KEY (model, text_hash)) WITHOUT ROWID"
        )
        conn.execute(
            "INSERT INTO embed_cache (model, text_hash, dim)"
            " SELECT DISTINCT 'fake/m', embed_hash, 3 FROM chunks"
        )
        conn.execute(f"PRAGMA user_version={version}")


@pytest.mark.parametrize("version", [5, 6])
def test_an_index_with_a_cache_table_is_upgraded_keeping_its_vectors_and_scores(
    tmp_path: Path, version: int
) -> None:
    idx, emb = _notes_index(tmp_path)
    cached = idx.stats()["cached_vectors"]
    q = np.asarray(emb.embed_query("cats and coffee"), dtype=np.float32)
    scores = idx.snapshot("fake/m").dense_vectors() @ q
    _as_schema(idx.path, version)
    again = MemoryIndex(idx.workspace)
    assert again.stats()["cached_vectors"] == cached > 0
    with contextlib.closing(sqlite3.connect(idx.path)) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 7
        tables = {n for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert "embed_cache" not in tables
    assert not list(idx.path.parent.glob("index.sqlite.schema*"))  # not set aside
    emb.texts.clear()
    assert embed_missing(again, "fake/m", _embed(emb)) == 0 and emb.texts == []
    snap = again.snapshot("fake/m")
    assert snap.has_vector is not None and snap.has_vector.all()
    assert np.array_equal(snap.dense_vectors() @ q, scores)
