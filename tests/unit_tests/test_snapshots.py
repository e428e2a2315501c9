"""A loaded generation is a value: handed out, it never changes (``store.snapshots``)."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

import numpy as np

from langchain_enhanced_memory.store.index import MemoryIndex
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
