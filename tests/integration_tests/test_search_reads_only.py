"""A search through the CLI reads the index and writes none of it (the logs aside)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from langchain_enhanced_memory.store.index import MemoryIndex
from langchain_enhanced_memory.store.snapshots import SnapshotCache
from langchain_enhanced_memory.store.upkeep import embed_missing
from tests.cli_run import run_cli
from tests.fake_ollama import embed_text
from tests.unit_tests.test_snapshots import index_state


def test_a_cli_search_writes_no_index_file(
    workspace: Path, fake_ollama, monkeypatch: pytest.MonkeyPatch
) -> None:
    ollama = ("--embedder", "ollama", "--ollama-url", fake_ollama.url)
    r = run_cli("index", "--workspace", str(workspace), *ollama, "--json")
    assert r.returncode == 0, r.stderr
    idx = MemoryIndex(workspace)
    with sqlite3.connect(idx.path) as conn:
        ((name,),) = conn.execute("SELECT name FROM catalog WHERE name LIKE 'vectors:%'")
    model = name.split(":", 1)[1]
    # A new note's vectors in the spool and no segment for them: an embedding run
    # killed before its fold.
    (workspace / "memory" / "2026-02-11.md").write_text("# Wednesday\n\nKestrel migration notes.\n")
    idx.sync()
    monkeypatch.setattr(SnapshotCache, "seal", lambda *a, **k: 0)
    embedded = embed_missing(
        idx, model, lambda texts: np.asarray([embed_text(t) for t in texts], dtype=np.float32)
    )
    assert embedded > 0
    before = index_state(idx)

    r = run_cli("search", "kestrel migration", "--workspace", str(workspace), *ollama, "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["mode"] == "hybrid", out
    assert out["results"][0]["path"] == "memory/2026-02-11.md"
    assert index_state(idx) == before
