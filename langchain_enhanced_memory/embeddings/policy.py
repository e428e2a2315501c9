"""Calling an embedder safely: retries with backoff, classified failures, validated output.

:func:`embed_with_retry` is the one way vectors come out of an embedder:
exactly one finite, L2-normalised row per text, or an
:class:`~..core.errors.EmbeddingError` with a one-line message.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Sequence
from itertools import chain
from typing import TYPE_CHECKING, Any

from langchain_core.embeddings import Embeddings

from ..core.errors import EmbeddingError
from .e5 import LOCAL_MODEL
from .failures import classify
from .local import LocalEmbeddings
from .ollama import DEFAULT_OLLAMA_URL

if TYPE_CHECKING:
    import numpy as np

__all__ = ["embed_with_retry", "embedder_label"]

logger = logging.getLogger(__name__)


def embedder_label(embeddings: Embeddings) -> str:
    """Name an embedder the way :func:`embed_with_retry` messages do.

    For logs and messages; :func:`embed_with_retry` takes the embedder itself as
    ``source=`` when its callable is not a bound method of the embedder.

    Args:
        embeddings: Any embedder, possibly wrapped in :class:`PrefixedEmbeddings`.

    Returns:
        ``"Ollama at <url>"`` for Ollama, ``"the local embedder"`` for
        :class:`LocalEmbeddings`, else ``"the embedder"``.
    """
    return describe_embedder(embeddings)[0]


def describe_embedder(embed: Any) -> tuple[str, str | None, float | None, bool]:
    """Guess (label, model, timeout, is_ollama) from an embedder or its bound method."""
    obj: Any = getattr(embed, "__self__", embed)
    model: str | None = None
    seen = 0
    while obj is not None and seen < 5:
        seen += 1
        value = getattr(obj, "model", None)
        if model is None and isinstance(value, str) and value:
            model = value
        module = type(obj).__module__ or ""
        if module.startswith("langchain_ollama") or "Ollama" in type(obj).__name__:
            url = getattr(obj, "base_url", None) or DEFAULT_OLLAMA_URL
            kwargs = getattr(obj, "client_kwargs", None) or {}
            timeout = kwargs.get("timeout") if isinstance(kwargs, dict) else None
            timeout_s = float(timeout) if isinstance(timeout, (int, float)) else None
            return f"Ollama at {url}", model, timeout_s, True
        if isinstance(obj, LocalEmbeddings):
            return "the local embedder", LOCAL_MODEL, None, False
        obj = getattr(obj, "inner", None)
    return "the embedder", model, None, False


def _validate(
    vectors: Any, n_texts: int, expected_dim: int | None
) -> tuple[np.ndarray | None, str | None]:
    """Check an embedder's output; return ``(matrix, None)`` or ``(None, problem)``."""
    import numpy as np

    if isinstance(vectors, (str, bytes)) or not isinstance(vectors, (Sequence, np.ndarray)):
        return None, f"embedder returned {type(vectors).__name__}, expected a list of vectors"
    if len(vectors) != n_texts:
        got = len(vectors)
        return None, (
            f"embedder returned {got} vector{'' if got == 1 else 's'} "
            f"for {n_texts} text{'' if n_texts == 1 else 's'}"
        )
    dims: list[int] = []
    lists = isinstance(vectors, list)
    for vector in vectors:
        if isinstance(vector, (str, bytes)) or not isinstance(vector, (Sequence, np.ndarray)):
            return None, f"embedder returned a {type(vector).__name__} where a vector belongs"
        dims.append(len(vector))
        lists = lists and isinstance(vector, list)
    distinct = sorted(set(dims))
    if len(distinct) > 1:
        shown = ", ".join(str(d) for d in distinct[:4])
        return None, f"embedder returned vectors of unequal dimensions ({shown})"
    dim = distinct[0]
    if dim == 0:
        return None, "embedder returned empty vectors"
    if expected_dim is not None and dim != expected_dim:
        return None, f"embedder returned {dim}-d vectors, expected {expected_dim}"
    try:
        # LangChain's rows are lists of Python floats: read one after another, they
        # convert a third faster than np.asarray's walk of nested sequences.
        if lists:
            flat = np.fromiter(chain.from_iterable(vectors), np.float64, n_texts * dim)
            matrix = flat.reshape(n_texts, dim)
        else:
            matrix = np.asarray(vectors, dtype=np.float64)
    except (TypeError, ValueError):
        return None, "embedder returned vectors with non-numeric values"
    if matrix.shape != (n_texts, dim):
        return None, "embedder returned vectors of an unexpected shape"
    if not np.isfinite(matrix).all():
        return None, "embedder returned non-finite values (NaN or infinity)"
    return matrix, None


def embed_with_retry(
    embed: Callable[[list[str]], list[list[float]]],
    texts: list[str],
    *,
    retries: int,
    backoff_s: float = 0.5,
    expected_dim: int | None = None,
    label: str | None = None,
    source: Embeddings | None = None,
) -> np.ndarray:
    """Embed ``texts``, retrying failures, and return validated unit vectors.

    Each failed attempt (an exception or an invalid result) is retried up to
    ``retries`` times, sleeping ``backoff_s``, then twice as long each time.
    Failures that waiting cannot fix are not retried: a model that is not
    pulled, an HTTP 4xx answer (other than 408/429), a missing ``local`` extra.

    The result must hold exactly ``len(texts)`` vectors of one dimension
    (``expected_dim`` when given), all finite.

    Args:
        embed: Usually ``embeddings.embed_documents``; for a bound method of an
            Ollama embedder the messages name its URL and model.
        texts: The texts; an empty list returns an empty ``(0, d)`` array
            without calling ``embed``.
        retries: Extra attempts after the first one.
        backoff_s: The first pause between attempts, in seconds.
        expected_dim: The dimension every vector must have, if known.
        label: Names the embedder in messages (default: guessed from ``source``
            or ``embed``).
        source: The embedder behind ``embed`` when ``embed`` is not its bound
            method (e.g. ``lambda t: [emb.embed_query(t[0])]``), so messages can
            name its URL, model and timeout.

    Returns:
        A float32 array of shape ``(len(texts), d)`` with L2-normalised rows
        (all-zero rows stay zero).

    Raises:
        EmbeddingError: After the last failed attempt, with a one-line message such
            as ``"Ollama at http://127.0.0.1:11434 is unreachable (connection
            refused)"`` or ``"embedder returned 3 vectors for 5 texts"``.
    """
    import numpy as np

    texts = list(texts)
    if not texts:
        return np.zeros((0, expected_dim or 0), dtype=np.float32)
    guessed_label, model, timeout_s, is_ollama = describe_embedder(
        source if source is not None else embed
    )
    named = (label or guessed_label, model, timeout_s, is_ollama)
    attempts = max(0, int(retries)) + 1
    attempt = 1
    while True:
        got = _attempt(embed, texts, attempt, expected_dim, named)
        if not isinstance(got, EmbeddingError):
            norms = np.linalg.norm(got, axis=1, keepdims=True)
            return (got / np.where(norms > 0.0, norms, 1.0)).astype(np.float32)
        if attempt == attempts:
            raise got
        pause = backoff_s * (2 ** (attempt - 1))
        logger.debug("embedding attempt %d failed (%s); retrying in %.2fs", attempt, got, pause)
        if pause > 0 and math.isfinite(pause):
            time.sleep(pause)
        attempt += 1


def _attempt(
    embed: Callable[[list[str]], list[list[float]]],
    texts: list[str],
    attempt: int,
    expected_dim: int | None,
    named: tuple[str, str | None, float | None, bool],
) -> np.ndarray | EmbeddingError:
    """One call of ``embed``: its validated matrix, or the error a retry may cure.

    ``named`` is the embedder as messages name it (label, model, timeout, is Ollama).

    Raises:
        EmbeddingError: What waiting cannot fix (the embedder's own, or a classified one).
    """
    try:
        vectors = embed(texts)
    except EmbeddingError as exc:
        exc.attempts = attempt
        raise
    except Exception as exc:
        kind, message, retryable = classify(exc, *named)
        error = EmbeddingError(message, kind=kind, attempts=attempt)
        error.__cause__ = exc
        if not retryable:
            raise error from exc
        return error
    matrix, problem = _validate(vectors, len(texts), expected_dim)
    if matrix is None:
        return EmbeddingError(problem or "embedder failed", kind="invalid_output", attempts=attempt)
    return matrix
