"""The first query never waits for embedding: it answers keyword-only, and says how far along."""

from __future__ import annotations

import threading
from pathlib import Path

from langchain_enhanced_memory.core.settings import MemorySettings
from langchain_enhanced_memory.engine import MemorySearch
from langchain_enhanced_memory.openclaw.response import response_json
from tests.fakes import WordEmbeddings

NOW = "2026-02-09T09:00:00"


class GatedEmbeddings(WordEmbeddings):
    """Embeds documents only once the gate opens (a slow model), queries at once."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()
        self.calls = 0

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.calls += 1
        assert self.gate.wait(60), "the test never opened the gate"
        return super().embed_documents(texts)


def test_background_embedding_answers_at_once_then_turns_hybrid(workspace: Path) -> None:
    emb = GatedEmbeddings()
    settings = MemorySettings(embed_inline_max=0)
    with MemorySearch(
        workspace, embeddings=emb, settings=settings, background_embedding=True
    ) as engine:
        first = engine.search("billing database", now=NOW)
        assert first.hits and first.hits[0].path == "memory/2026-02-08.md"
        assert first.fallback == "keyword-only"
        assert first.embedded == 0.0
        assert response_json(first, 100)["embedded"] == 0.0
        assert all(h.signals.get("vector", 0.0) == 0.0 for h in first.hits)
        emb.gate.set()
        engine.embedding_job.join(60)
        assert not engine.embedding_job.running and engine.embedding_job.error is None
        later = engine.search("billing database", now=NOW)
        assert later.fallback is None and later.embedded is None
        assert later.hits[0].signals["vector"] > 0
        assert "embedded" not in response_json(later, 100)


def test_one_shot_leaves_many_missing_vectors_to_index(workspace: Path) -> None:
    emb = GatedEmbeddings()
    emb.gate.set()
    engine = MemorySearch(workspace, embeddings=emb, settings=MemorySettings(embed_inline_max=0))
    response = engine.search("billing database", now=NOW)
    assert response.fallback == "keyword-only" and response.embedded == 0.0
    assert emb.calls == 0  # nothing embedded on the query path
    engine.update_index()
    assert engine.search("billing database", now=NOW).fallback is None


def test_a_few_missing_vectors_are_embedded_before_answering(workspace: Path) -> None:
    emb = GatedEmbeddings()
    emb.gate.set()
    engine = MemorySearch(workspace, embeddings=emb)  # default embed_inline_max covers it
    response = engine.search("billing database", now=NOW)
    assert response.fallback is None and response.embedded is None
    assert response.hits[0].signals["vector"] > 0


def test_a_failing_background_run_is_not_retried_on_every_search(workspace: Path) -> None:
    class Broken(WordEmbeddings):
        calls = 0

        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            Broken.calls += 1
            raise ConnectionError("model crashed")

    settings = MemorySettings(embed_inline_max=0, embed_retries=0)
    with MemorySearch(
        workspace, embeddings=Broken(), settings=settings, background_embedding=True
    ) as engine:
        assert engine.search("billing", now=NOW).fallback == "keyword-only"
        engine.embedding_job.join(60)
        assert engine.embedding_job.error is not None
        calls = Broken.calls
        for _ in range(3):
            assert engine.search("billing", now=NOW).hits
        assert Broken.calls == calls  # held off for retry_s
