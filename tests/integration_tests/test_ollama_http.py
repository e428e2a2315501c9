"""Real HTTP against FakeOllama on 127.0.0.1: langchain_ollama, probe, resolve, faults."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from langchain_enhanced_memory.embeddings import (
    EmbeddingError,
    PrefixedEmbeddings,
    e5,
    embed_with_retry,
    embedder_label,
    ollama_embeddings,
    probe_ollama,
    resolve_embedder,
)
from tests.fake_ollama import FakeOllama, unused_port

MODEL = "nomic-embed-text"
TEXTS = ["the cat sat on the mat", "a cat on a mat", "quarterly tax filing deadline"]


def _embedder(server: FakeOllama, timeout_s: float = 5.0, model: str = MODEL) -> PrefixedEmbeddings:
    emb = ollama_embeddings(model, server.url, timeout_s)
    assert isinstance(emb, PrefixedEmbeddings)
    return emb


# -- round trip -------------------------------------------------------------------


def test_round_trip_with_nomic_prefixes(fake_ollama: FakeOllama) -> None:
    emb = _embedder(fake_ollama)
    docs = emb.embed_documents(TEXTS)
    query = emb.embed_query("cat mat")
    assert len(docs) == 3 and all(len(v) == 768 for v in docs)
    assert len(query) == 768
    assert fake_ollama.calls == 2
    assert fake_ollama.embedded_texts == [f"search_document: {t}" for t in TEXTS] + [
        "search_query: cat mat"
    ]
    matrix = np.array(docs)
    q = np.array(query)
    scores = matrix @ q
    assert scores[0] > scores[2] and scores[1] > scores[2]
    assert float(matrix[0] @ matrix[1]) > 0.6 > float(matrix[0] @ matrix[2]) + 0.5


async def test_async_round_trip(fake_ollama: FakeOllama) -> None:
    emb = _embedder(fake_ollama)
    docs = await emb.aembed_documents(["alpha beta"])
    query = await emb.aembed_query("alpha")
    assert len(docs[0]) == len(query) == 768
    assert fake_ollama.embedded_texts == ["search_document: alpha beta", "search_query: alpha"]


def test_url_forms_reach_the_server(fake_ollama: FakeOllama) -> None:
    for url in (fake_ollama.url + "/api/embed", f"127.0.0.1:{fake_ollama.port}"):
        assert len(ollama_embeddings(MODEL, url, 5.0).embed_query("x")) == 768
    assert fake_ollama.calls == 2


def test_embed_with_retry_against_server(fake_ollama: FakeOllama) -> None:
    emb = _embedder(fake_ollama)
    out = embed_with_retry(emb.embed_documents, TEXTS, retries=0, expected_dim=768)
    assert out.shape == (3, 768) and out.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, rtol=1e-5)


def test_no_pull_or_validation_on_construction(fake_ollama: FakeOllama) -> None:
    ollama_embeddings("not-pulled-model", fake_ollama.url, 5.0)
    assert fake_ollama.requests == []


# -- probe ----------------------------------------------------------------------


def test_probe_ok(fake_ollama: FakeOllama) -> None:
    assert probe_ollama(fake_ollama.url, MODEL) is None
    assert probe_ollama(fake_ollama.url, MODEL + ":latest") is None
    assert probe_ollama(fake_ollama.url + "/api/embed", MODEL) is None
    assert fake_ollama.requests[0] == ("GET", "/api/tags")


def test_probe_not_pulled(fake_ollama: FakeOllama) -> None:
    reason = probe_ollama(fake_ollama.url, "bge-m3")
    assert reason is not None
    assert "'bge-m3' is not pulled in Ollama" in reason
    assert "ollama pull bge-m3" in reason
    assert probe_ollama(fake_ollama.url, MODEL + ":v1.5") is not None  # other tag


def test_probe_down() -> None:
    url = f"http://127.0.0.1:{unused_port()}"
    assert probe_ollama(url, MODEL) == f"Ollama at {url} is unreachable (connection refused)"


@pytest.mark.timeout(60)  # the server hangs for 120 s: only the client's timeout ends this
def test_probe_timeout(fake_ollama: FakeOllama) -> None:
    fake_ollama.set_fault("hang", seconds=120, paths=("/api/tags",))
    reason = probe_ollama(fake_ollama.url, MODEL, timeout_s=0.3)
    assert reason == f"Ollama at {fake_ollama.url} did not answer within 0.3s (timeout)"


def test_probe_bad_response(fake_ollama: FakeOllama) -> None:
    reason = probe_ollama(fake_ollama.url + "/nothing-here", MODEL)
    assert reason is not None and "HTTP 404" in reason


# -- resolve_embedder ------------------------------------------------------------


def test_resolve_auto_picks_ollama_when_up(fake_ollama: FakeOllama) -> None:
    choice = resolve_embedder("auto", ollama_url=fake_ollama.url, timeout_s=5)
    assert choice.provider == "ollama"
    assert choice.model == MODEL
    assert choice.fallback is None and choice.reason is None
    assert choice.embeddings is not None
    assert len(choice.embeddings.embed_query("hello")) == 768
    assert fake_ollama.embedded_texts == ["search_query: hello"]


def test_resolve_auto_falls_back_when_down() -> None:
    url = f"http://127.0.0.1:{unused_port()}"
    choice = resolve_embedder("auto", ollama_url=url)
    # the local model when the `local` extra is installed, else keyword-only
    assert choice.provider in ("local", "none")
    if choice.provider == "none":
        assert choice.embeddings is None and choice.fallback == "keyword-only"
        assert choice.reason is not None and "unreachable (connection refused)" in choice.reason
    else:  # auto choosing the local model is a choice, not a fallback
        assert choice.embeddings is not None
        assert choice.fallback is None and choice.reason is None


def test_resolve_auto_keyword_only_when_down_and_no_local(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(e5, "local_available", lambda: False)
    url = f"http://127.0.0.1:{unused_port()}"
    choice = resolve_embedder("auto", ollama_url=url)
    assert choice.embeddings is None
    assert (choice.provider, choice.model, choice.fallback) == ("none", None, "keyword-only")
    assert choice.reason is not None
    assert choice.reason.startswith(f"Ollama at {url} is unreachable (connection refused); ")
    assert "local" in choice.reason


def test_resolve_ollama_down_never_raises() -> None:
    url = f"http://127.0.0.1:{unused_port()}"
    choice = resolve_embedder("ollama", ollama_url=url, model="bge-m3")
    assert choice.embeddings is None
    assert choice.provider == "ollama"
    assert choice.model == "bge-m3"
    assert choice.fallback == "keyword-only"
    assert choice.reason == f"Ollama at {url} is unreachable (connection refused)"


def test_resolve_ollama_model_not_pulled(fake_ollama: FakeOllama) -> None:
    choice = resolve_embedder("ollama", ollama_url=fake_ollama.url, model="mxbai-embed-large")
    assert choice.embeddings is None and choice.fallback == "keyword-only"
    assert choice.reason is not None and "ollama pull mxbai-embed-large" in choice.reason


def test_resolve_ollama_bad_url() -> None:
    choice = resolve_embedder("ollama", ollama_url="ftp://nowhere")
    assert choice.embeddings is None and choice.fallback == "keyword-only"


# -- faults through embed_with_retry ---------------------------------------------


@pytest.mark.parametrize(
    ("fault", "kw", "kind", "message"),
    [
        ("http500", {}, "http", "returned HTTP 500: llama runner process has terminated"),
        ("malformed_json", {}, "malformed", "sent a malformed response (invalid JSON)"),
        (
            "wrong_dim",
            {"dim": 512},
            "invalid_output",
            "embedder returned 512-d vectors, expected 768",
        ),
        ("fewer_vectors", {}, "invalid_output", "embedder returned 2 vectors for 3 texts"),
        ("nan", {}, "invalid_output", "embedder returned non-finite values"),
        ("drop", {}, "disconnected", "closed the connection"),
    ],
)
def test_fault_gives_clear_error(
    fake_ollama: FakeOllama, fault: str, kw: dict[str, int], kind: str, message: str
) -> None:
    emb = _embedder(fake_ollama)
    fake_ollama.set_fault(fault, **kw)
    with pytest.raises(EmbeddingError) as info:
        embed_with_retry(emb.embed_documents, TEXTS, retries=2, backoff_s=0.001, expected_dim=768)
    assert message in str(info.value)
    assert info.value.kind == kind
    assert info.value.attempts == 3
    assert fake_ollama.calls == 3
    if kind in ("http", "malformed", "disconnected"):
        assert str(info.value).startswith(f"Ollama at {fake_ollama.url} ")


def test_fail_n_then_ok_succeeds_after_retries(fake_ollama: FakeOllama) -> None:
    emb = _embedder(fake_ollama)
    fake_ollama.set_fault("fail_n_then_ok", n=2)
    out = embed_with_retry(emb.embed_documents, TEXTS, retries=2, backoff_s=0.001)
    assert out.shape == (3, 768)
    assert fake_ollama.calls == 3


def test_fail_n_then_ok_too_few_retries(fake_ollama: FakeOllama) -> None:
    emb = _embedder(fake_ollama)
    fake_ollama.set_fault("fail_n_then_ok", n=3)
    with pytest.raises(EmbeddingError, match="HTTP 500"):
        embed_with_retry(emb.embed_documents, TEXTS, retries=1, backoff_s=0.001)
    assert fake_ollama.calls == 2


def test_model_not_pulled_is_not_retried(fake_ollama: FakeOllama) -> None:
    emb = _embedder(fake_ollama, model="bge-m3")
    with pytest.raises(EmbeddingError) as info:
        embed_with_retry(emb.embed_documents, TEXTS, retries=3, backoff_s=0.001)
    assert str(info.value) == (
        f"model 'bge-m3' is not pulled in Ollama at {fake_ollama.url}: run `ollama pull bge-m3`"
    )
    assert info.value.kind == "not_pulled"
    assert fake_ollama.calls == 1


def test_down_gives_unreachable(fake_ollama: FakeOllama) -> None:
    emb = _embedder(fake_ollama)
    fake_ollama.stop()
    with pytest.raises(EmbeddingError) as info:
        embed_with_retry(emb.embed_documents, TEXTS, retries=1, backoff_s=0.001)
    assert str(info.value) == f"Ollama at {fake_ollama.url} is unreachable (connection refused)"
    assert info.value.kind == "unreachable"


def test_server_back_on_same_port(fake_ollama: FakeOllama) -> None:
    emb = _embedder(fake_ollama)
    fake_ollama.stop()
    with pytest.raises(EmbeddingError):
        embed_with_retry(emb.embed_documents, ["x"], retries=0)
    fake_ollama.start()
    assert embed_with_retry(emb.embed_documents, ["x"], retries=0).shape == (1, 768)


@pytest.mark.timeout(60)  # the server hangs for 120 s: only the client's timeout ends this
def test_hang_times_out(fake_ollama: FakeOllama) -> None:
    emb = _embedder(fake_ollama, timeout_s=0.5)
    fake_ollama.set_fault("hang", seconds=120)
    with pytest.raises(EmbeddingError) as info:
        embed_with_retry(emb.embed_documents, TEXTS, retries=1, backoff_s=0.001)
    assert str(info.value) == f"Ollama at {fake_ollama.url} timed out after 0.5s (ReadTimeout)"
    assert info.value.kind == "timeout"


def test_slow_still_succeeds(fake_ollama: FakeOllama) -> None:
    emb = _embedder(fake_ollama, timeout_s=5)
    fake_ollama.set_fault("slow", seconds=0.2)
    start = time.monotonic()
    out = embed_with_retry(emb.embed_documents, TEXTS, retries=0)
    assert out.shape == (3, 768)
    assert time.monotonic() - start >= 0.2


# -- the fake as a separate process ------------------------------------------------


def test_fake_ollama_standalone_process() -> None:
    script = Path(__file__).resolve().parents[1] / "fake_ollama.py"
    proc = subprocess.Popen(
        [sys.executable, str(script), "--port", "0", "--delay", "0.05", "--print-port"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline().strip())
        url = f"http://127.0.0.1:{port}"
        assert probe_ollama(url, MODEL) is None
        assert len(ollama_embeddings(MODEL, url, 5.0).embed_query("hi")) == 768
    finally:
        proc.terminate()
        assert proc.wait(timeout=10) == 0


def test_source_names_ollama_for_query_lambdas(fake_ollama: FakeOllama) -> None:
    emb = _embedder(fake_ollama, timeout_s=0.5)
    assert embedder_label(emb) == f"Ollama at {fake_ollama.url}"
    fake_ollama.set_fault("hang", seconds=30)
    with pytest.raises(EmbeddingError) as info:
        embed_with_retry(lambda t: [emb.embed_query(t[0])], ["q"], retries=0, source=emb)
    assert str(info.value) == f"Ollama at {fake_ollama.url} timed out after 0.5s (ReadTimeout)"
