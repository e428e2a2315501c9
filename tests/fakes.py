"""Offline test doubles: a LangChain ``Embeddings`` that counts its calls."""

from __future__ import annotations

from langchain_core.embeddings import Embeddings

from tests.fake_ollama import embed_text


class WordEmbeddings(Embeddings):
    """Deterministic bag-of-words vectors (texts sharing words are close).

    Args:
        dim: Vector size.
        model: Reported model name (the cache key, so two names never share vectors).
    """

    def __init__(self, dim: int = 128, model: str = "word-hash") -> None:
        self.dim = dim
        self.model = model
        self.calls = 0
        self.texts: list[str] = []
        self.fail = False

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        if self.fail:
            raise ConnectionError("embedder down")
        self.calls += 1
        self.texts.extend(texts)
        return [embed_text(t, self.dim) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        if self.fail:
            raise ConnectionError("embedder down")
        return embed_text(text, self.dim)
