from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from langchain_core.embeddings import Embeddings

from langchain_enhanced_memory.core.errors import CrossrefError
from langchain_enhanced_memory.core.settings import MemorySettings
from langchain_enhanced_memory.engine import MemorySearch
from langchain_enhanced_memory.graph import compute, queries, storage, views
from langchain_enhanced_memory.retriever import EnhancedMemoryRetriever
from tests.fakes import WordEmbeddings
from tests.workspaces import write_workspace

LOOSE = MemorySettings(crossref_calibrate=None, crossref_threshold=0.3, log_queries=False)
WORDS = (
    "postgres migration rollback billing invoice ramen lunch hiking trail garden tomato "
    "kafka stream latency cache deploy canary budget hiring alice bob paris flight hotel "
    "piano lesson novel chapter marathon training"
).split()


class Anisotropic(Embeddings):
    """e5-like vectors: a strong shared direction puts every pair near 0.85."""

    def __init__(self) -> None:
        self.inner = WordEmbeddings(dim=64, model="aniso")
        self.common = np.ones(64) / 8.0

    def _v(self, text: str) -> list[float]:
        v = np.asarray(self.inner.embed_query(text))
        v = v / (np.linalg.norm(v) or 1) + 2.5 * self.common
        return (v / np.linalg.norm(v)).tolist()

    def embed_documents(self, texts):
        return [self._v(t) for t in texts]

    def embed_query(self, text):
        return self._v(text)


def _engine(ws: Path, settings: MemorySettings = LOOSE, emb=None) -> MemorySearch:
    e = MemorySearch(ws, settings=settings, embeddings=emb or WordEmbeddings(dim=64))
    e.update_index()
    return e


def _random_workspace(root: Path, n: int, seed: int = 1) -> Path:
    rng = random.Random(seed)
    files = {}
    for i in range(n):
        sections = []
        for s in range(rng.randint(1, 8)):
            words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 30)))
            sections.append(f"## Part {s}\n\n{words}.\n")
        name = f"memory/2026-01-{i + 1:02d}.md" if i % 2 else f"memory/topics/t{i}.md"
        files[name] = f"# Note {i}\n\n" + "\n".join(sections)
    return write_workspace(root, files)


def test_representatives_cover_topics_not_length():
    rng = np.random.default_rng(0)
    a, b = np.zeros(16), np.zeros(16)
    a[0], b[1] = 1, 1
    # Eight long chunks about topic a, two shorter ones about topic b.
    vecs = np.stack([a + 0.05 * rng.standard_normal(16) for _ in range(8)] + [b, b + 0.01])
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    lengths = np.array([900] * 8 + [200, 200])
    picked = compute.choose_representatives(vecs.astype(np.float32), lengths, 5)
    assert len(picked) == 5 and len(set(picked.tolist())) == 5
    assert {8, 9} & set(picked.tolist()), "the second topic is represented"
    small = compute.choose_representatives(vecs[:3].astype(np.float32), lengths[:3], 5)
    assert small.tolist() == [0, 1, 2]


def test_build_caps_and_export_shape(tmp_path):
    ws = _random_workspace(tmp_path / "ws", 30)
    e = _engine(ws)
    report = storage.build(e.index, e.model_id, LOOSE)
    assert report.mode == "full" and report.files == 30
    assert report.refs > 0
    data = queries.export_crossrefs_json(e.index)
    assert set(data) == {
        "total_chunks",
        "total_crossrefs",
        "chunks_with_refs",
        "chunk_refs",
        "file_graph",
    }
    assert data["total_chunks"] == len(e.index.snapshot())
    assert (
        data["total_crossrefs"] == report.refs == sum(len(v) for v in data["chunk_refs"].values())
    )
    reps_per_file = Counter(k.rsplit(":", 1)[0] for k in data["chunk_refs"])
    assert max(reps_per_file.values()) <= 5
    for src, refs in data["chunk_refs"].items():
        assert 1 <= len(refs) <= 5
        assert [r["sim"] for r in refs] == sorted((r["sim"] for r in refs), reverse=True)
        for r in refs:
            assert r["file"] != src.rsplit(":", 1)[0], "no links inside one file"
            assert r["sim"] >= 0.3 and r["target"].startswith(r["file"] + ":")
            assert set(r) == {"target", "sim", "header", "file"}
    for links in data["file_graph"].values():
        assert 1 <= len(links) <= 10
        assert all(set(x) == {"file", "strength"} for x in links)


def test_incremental_update_equals_full_rebuild(tmp_path):
    ws = _random_workspace(tmp_path / "ws", 24, seed=3)
    e = _engine(ws)
    storage.build(e.index, e.model_id, LOOSE)
    (ws / "memory/topics/t0.md").write_text("# Changed\n\npostgres rollback billing invoice\n")
    (ws / "memory/2026-01-04.md").write_text(
        "# Day\n\n## A\n\nkafka stream latency cache deploy canary trail\n\n"
        "## B\n\npiano lesson novel chapter marathon garden tomato hiking\n"
    )
    (ws / "memory/topics/t6.md").unlink()
    (ws / "memory/topics/new.md").write_text("# New\n\nhiking trail garden tomato paris flight\n")
    e.update_index()
    inc = storage.build(e.index, e.model_id, LOOSE)
    assert inc.mode == "incremental"
    assert sorted(inc.changed) == [
        "memory/2026-01-04.md",
        "memory/topics/new.md",
        "memory/topics/t0.md",
    ]
    assert inc.deleted == ["memory/topics/t6.md"]
    assert 0 < inc.recomputed < inc.representatives
    after_inc = queries.export_crossrefs_json(e.index)
    full = storage.build(e.index, e.model_id, LOOSE, full=True)
    assert full.mode == "full"
    assert queries.export_crossrefs_json(e.index) == after_inc
    assert storage.build(e.index, e.model_id, LOOSE).mode == "unchanged"


def test_threshold_calibrates_for_anisotropic_embedders(tmp_path):
    ws = _random_workspace(tmp_path / "ws", 20, seed=5)
    fixed = MemorySettings(crossref_calibrate=None, log_queries=False)
    e = _engine(ws, fixed, Anisotropic())
    flat = storage.build(e.index, e.model_id, fixed)
    assert flat.threshold == 0.75
    # Everything links to everything at 0.75: every representative is full.
    assert flat.refs == 5 * flat.representatives
    calibrated = MemorySettings(log_queries=False)
    cal = storage.build(e.index, e.model_id, calibrated)
    assert cal.mode == "full" and cal.threshold > 0.8
    assert cal.refs < flat.refs / 3
    summary = queries.graph_summary(e.index)
    assert summary["threshold"] == cal.threshold


def test_show_and_summary(tmp_path):
    ws = _random_workspace(tmp_path / "ws", 20, seed=7)
    e = _engine(ws)
    storage.build(e.index, e.model_id, LOOSE)
    summary = queries.graph_summary(e.index)
    assert summary["files"] == 20 and 1 <= len(summary["most_connected"]) <= 15
    top = summary["most_connected"][0]["file"]
    shown = queries.show(e.index, top)
    assert shown["linked_files"] and shown["outgoing"]
    assert len(shown["incoming"]) <= 20
    assert all(r["target"].startswith(top + ":") for r in shown["incoming"])
    assert "is linked to" in views.format_show(shown)
    assert "Most connected" in views.format_summary(summary)
    with pytest.raises(CrossrefError, match="not in the graph"):
        queries.show(e.index, "memory/nope.md")


def test_no_graph_and_no_vectors_are_clear_errors(workspace):
    e = MemorySearch(workspace, settings=LOOSE, embedder="none")
    e.update_index()
    with pytest.raises(CrossrefError, match="holds no vectors"):
        storage.build(e.index, None, LOOSE)
    with pytest.raises(CrossrefError, match="crossref build"):
        queries.graph_summary(e.index)


def test_partial_vectors_are_refused(workspace):
    e = _engine(workspace)
    (workspace / "memory/topics/more.md").write_text("# More\n\nA new note nobody embedded yet.\n")
    e.index.sync()
    with pytest.raises(CrossrefError, match="have no .* vector"):
        storage.build(e.index, e.model_id, LOOSE)


ZEPHYR = {
    "memory/topics/zephyr.md": "# Zephyr\n\nThe zephyr service deploys with blue green rollout "
    "and canary health checks before traffic moves.\n",
    "memory/2026-02-03.md": "# Incident\n\nBlue green rollout stalled: canary health checks "
    "failed before traffic moves, rolled back at noon.\n",
    "memory/topics/garden.md": "# Garden\n\nTomatoes need more water in July; basil is fine.\n",
}


def test_documents_carry_related_chunks_and_skip_stale_ones(tmp_path):
    ws = write_workspace(tmp_path / "ws", ZEPHYR)
    emb = WordEmbeddings(dim=64)
    e = _engine(ws, LOOSE, emb)
    storage.build(e.index, e.model_id, LOOSE)
    retriever = EnhancedMemoryRetriever(workspace=ws, embeddings=emb, settings=LOOSE, k=3)
    docs = retriever.invoke("zephyr")
    top = docs[0]
    assert top.metadata["path"] == "memory/topics/zephyr.md"
    related = top.metadata["related"]
    assert related and related[0]["path"] == "memory/2026-02-03.md"
    assert set(related[0]) == {"path", "startLine", "endLine", "header", "similarity"}
    assert 0.3 <= related[0]["similarity"] <= 1
    # Edit the linked note without rebuilding: its old line numbers must not be offered.
    (ws / "memory/2026-02-03.md").write_text("# Moved\n\n\n\nSomething else entirely now.\n")
    docs = retriever.invoke("zephyr")
    assert docs[0].metadata["related"] == []


def test_graph_neighbours_join_the_candidates_only_when_enabled(tmp_path):
    ws = write_workspace(tmp_path / "ws", ZEPHYR)
    e = _engine(ws)
    storage.build(e.index, e.model_id, LOOSE)
    plain = MemorySearch(ws, settings=LOOSE, embedder="none")
    assert [h.path for h in plain.search("zephyr").hits] == ["memory/topics/zephyr.md"]
    on = LOOSE.replace(graph_neighbors=True)
    hits = MemorySearch(ws, settings=on, embedder="none").search("zephyr").hits
    assert [h.path for h in hits] == ["memory/topics/zephyr.md", "memory/2026-02-03.md"]
    assert hits[1].score < hits[0].score


def test_sparse_and_dense_top_k_agree(monkeypatch):
    rng = np.random.default_rng(3)
    v = rng.standard_normal((300, 16)).astype(np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    fids = np.repeat(np.arange(60), 5)
    rows = np.arange(300)
    sparse = compute.top_refs(rows, v, fids, 0.1, 5)
    pairwise = compute.top_refs_all(v, fids, 0.1, 5)
    monkeypatch.setattr(compute, "_DENSE_ROW", 0)
    dense = compute.top_refs(rows, v, fids, 0.1, 5)

    def as_set(t):
        return {(int(a), int(b)) for a, b in zip(t[0], t[1], strict=True)}

    assert as_set(sparse) == as_set(dense)
    assert as_set(pairwise) == as_set(dense)
    assert as_set(compute.top_refs_all(v, fids, 0.1, 5)) == as_set(dense)  # dense fallback
    assert len(as_set(sparse)) == 5 * 300
    assert not any(fids[a] == fids[b] for a, b in as_set(sparse))
    # Each source keeps its 5 strongest targets.
    s = v @ v.T
    s[fids[:, None] == fids[None, :]] = -np.inf
    best = {(i, int(j)) for i in range(300) for j in np.argsort(-s[i])[:5]}
    assert as_set(sparse) == best
