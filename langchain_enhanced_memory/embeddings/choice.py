"""Which embedder a search uses, and why (plain data: importing it loads no embedder)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["EmbedderChoice"]


class EmbedderChoice:
    """The embedder that search will use, and why.

    Attributes:
        provider: ``"ollama"``, ``"local"``, ``"none"`` or ``"custom"``; when a
            requested embedder is unavailable this stays the requested provider
            and ``embeddings`` is ``None``.
        model: The model id (for custom embedders their ``model`` attribute or
            class name), or ``None``.
        fallback: ``"keyword-only"`` when a requested or automatic embedder was
            not available, else ``None``.
        reason: One line on why the fallback happened, else ``None`` (``auto``
            choosing the local model because Ollama is unusable is not a fallback).

    Args:
        embeddings: The embedder, or ``None`` for keyword-only search.
        load: Builds the embedder on first use of :attr:`embeddings`, instead of
            ``embeddings``: the local model's LangChain class costs a search that
            needs no query vector half a second of imports.
    """

    def __init__(
        self,
        embeddings: Any,
        provider: str,
        model: str | None,
        fallback: str | None = None,
        reason: str | None = None,
        *,
        load: Callable[[], Any] | None = None,
    ) -> None:
        self._embeddings = embeddings
        self._load = load
        self.provider = provider
        self.model = model
        self.fallback = fallback
        self.reason = reason

    @property
    def embeddings(self) -> Any:
        """The LangChain ``Embeddings`` (built now if it was left to ``load``), or None."""
        if self._embeddings is None and self._load is not None:
            self._embeddings, self._load = self._load(), None
        return self._embeddings

    @property
    def available(self) -> bool:
        """Whether there is an embedder, without building one left to ``load``."""
        return self._embeddings is not None or self._load is not None

    def _fields(self) -> tuple[Any, ...]:
        return (self._embeddings, self._load, self.provider, self.model, self.fallback, self.reason)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, EmbedderChoice) and self._fields() == other._fields()

    __hash__ = None  # type: ignore[assignment]  # mutable, as the dataclass it replaces

    def __repr__(self) -> str:
        return (
            f"EmbedderChoice(provider={self.provider!r}, model={self.model!r},"
            f" available={self.available}, fallback={self.fallback!r})"
        )
