"""Which embedder a search uses, and why (plain data: importing it loads no embedder)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["EmbedderChoice"]


@dataclass
class EmbedderChoice:
    """The embedder that search will use, and why.

    Attributes:
        embeddings: The embedder, or ``None`` for keyword-only search.
        provider: ``"ollama"``, ``"local"``, ``"none"`` or ``"custom"``; when a
            requested embedder is unavailable this stays the requested provider
            and ``embeddings`` is ``None``.
        model: The model id (for custom embedders their ``model`` attribute or
            class name), or ``None``.
        fallback: ``"keyword-only"`` when a requested or automatic embedder was
            not available, else ``None``.
        reason: One line on why the fallback happened, else ``None`` (``auto``
            choosing the local model because Ollama is unusable is not a fallback).
    """

    embeddings: Any  # a LangChain Embeddings, or None
    provider: str
    model: str | None
    fallback: str | None = None
    reason: str | None = None
