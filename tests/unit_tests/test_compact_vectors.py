"""``compact`` (what ``forget`` runs) and a model's vectors.

A merge drops the vectors of texts no chunk holds any more, keeps every live
one (the lines of a chunk still lacking its own vector included), and is not
undone by a run spooling vectors at the same time.
"""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np

from langchain_enhanced_memory.store import snapshots
from langchain_enhanced_memory.store.index import MemoryIndex
from langchain_enhanced_memory.store.sync import sha
from langchain_enhanced_memory.store.upkeep import embed_missing
from langchain_enhanced_memory.store.vector_segments import side_folder
from tests.fakes import WordEmbeddings
from tests.workspaces import write_workspace

NOTE = "memory/2026-03-01.md"
HEAD = "# 2026-03-01\n\n## Notes\n\n"
LINES = [
    "- Maria adopted a puppy from the dog shelter.",
    "- John fixed the brakes of his car.",
    "- Ana started pottery classes on Tuesdays.",
]
NEW = "- Leo repainted the garden fence blue."


def _embed(emb: WordEmbeddings):
    return lambda texts: np.asarray(emb.embed_documents(texts), dtype=np.float32)


def _index(tmp_path: Path) -> tuple[MemoryIndex, WordEmbeddings]:
    emb = WordEmbeddings()
    notes = {NOTE: HEAD + "\n".join(LINES) + "\n", "MEMORY.md": "# Prefs\n\nDark roast coffee.\n"}
    idx = MemoryIndex(write_workspace(tmp_path / "ws", notes))
    idx.sync()
    embed_missing(idx, "fake/m", _embed(emb))
    return idx, emb


def _replace_last_line(idx: MemoryIndex) -> None:
    (idx.workspace / NOTE).write_text(HEAD + "\n".join([*LINES[:2], NEW]) + "\n")
    idx.sync()


def test_a_merge_drops_dead_vectors_and_keeps_the_live_lines_of_a_chunk_without_one(
    tmp_path: Path,
) -> None:
    idx, emb = _index(tmp_path)
    _replace_last_line(idx)
    idx.compact()  # the edited chunk has no vector yet: what it has is merged anyway
    assert idx.with_vector("fake/m", [sha(LINES[2])]).tolist() == [False]
    assert idx.with_vector("fake/m", [sha(LINES[0]), sha(LINES[1])]).tolist() == [True, True]
    emb.texts.clear()
    embed_missing(idx, "fake/m", _embed(emb))
    assert emb.texts == [NEW]  # the kept lines are not embedded again
    snap = idx.snapshot("fake/m")
    assert snap.has_vector is not None and snap.has_vector.all()


def test_a_merge_waits_for_a_run_spooling_vectors(tmp_path: Path, monkeypatch) -> None:
    idx, emb = _index(tmp_path)
    dim = len(emb.embed_query("x"))
    _replace_last_line(idx)
    spooled = threading.Event()
    real_fold = snapshots.fold

    def fold_while_a_run_spools(*args, **kwargs):
        # A run's flush between the merge's gather and its fold: it cannot start while
        # the merge holds the embedding lock.
        def run() -> None:
            with idx.embed_lock():
                idx.store_embeddings("fake/m", [sha("- another run's text")], np.ones((1, dim)))
                spooled.set()

        flush = threading.Thread(target=run)
        with idx.embed_lock(wait=False) as free:
            assert not free
        flush.start()
        flush.join(0.2)
        assert not spooled.is_set()
        try:
            return real_fold(*args, **kwargs)
        finally:
            monkeypatch.setattr(snapshots, "fold", real_fold)
            fold_while_a_run_spools.flush = flush  # type: ignore[attr-defined]

    monkeypatch.setattr(snapshots, "fold", fold_while_a_run_spools)
    idx.compact()
    assert idx.with_vector("fake/m", [sha(LINES[2])]).tolist() == [False]
    fold_while_a_run_spools.flush.join(10)  # type: ignore[attr-defined]
    assert spooled.is_set()


def test_a_spool_no_row_names_is_removed_by_a_merge(tmp_path: Path) -> None:
    idx, _ = _index(tmp_path)
    stray = side_folder(idx.path) / f"{sha('fake/m')[:12]}-deadbeef.spool"
    stray.write_bytes(b"\0" * 64)  # what a crash between a fold's commit and its unlink leaves
    idx.compact()
    assert not stray.exists()
