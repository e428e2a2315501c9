"""The embedder of one engine: resolved once, then document and query vectors with retries.

:class:`~.search.MemorySearch` (a workspace) and
:class:`~.database.DatabaseSearch` (a database scope) embed the same way; only
where the dimension of stored vectors is read differs (``dim_of``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from .config import EngineConfig

if TYPE_CHECKING:
    from ..embeddings.choice import EmbedderChoice

__all__ = ["QueryEmbedder"]

log = logging.getLogger("langchain_enhanced_memory")


class QueryEmbedder:
    """A config's embedder, resolved on first use (an unavailable one degrades, never raises).

    Args:
        config: Which embedder (``embedder``, ``model``, ``ollama_url``, ``embeddings``).
        dim_of: The dimension of the vectors already stored for a model id, or
            None: a server that switches dimension mid-run must not mix sizes.

    Safe to share between threads: the embedder is resolved once, under a lock.
    """

    def __init__(self, config: EngineConfig, dim_of: Callable[[str], int | None]) -> None:
        self.config = config
        self._dim_of = dim_of
        self._choice: EmbedderChoice | None = None
        self._lock = threading.Lock()

    @property
    def choice(self) -> EmbedderChoice:
        """The resolved :class:`~..embeddings.choice.EmbedderChoice`."""
        with self._lock:
            if self._choice is None:
                from ..embeddings.choice import EmbedderChoice

                c = self.config
                if c.embedder == "none" and c.embeddings is None:
                    # Keyword-only must start fast: no embedder module (nor LangChain) is loaded.
                    self._choice = EmbedderChoice(None, "none", None)
                else:
                    from ..embeddings.resolve import resolve_embedder

                    self._choice = resolve_embedder(
                        c.embedder,
                        model=c.model,
                        ollama_url=c.ollama_url,
                        timeout_s=c.settings.embedding.embed_timeout_s,
                        embeddings=c.embeddings,
                        local_threads=c.settings.embedding.local_threads,
                    )
                    if self._choice.reason and c.on_embedder_error == "keyword":
                        # Said once, here: the command line's embedder line leaves it out.
                        log.warning("%s (keyword-only)", self._choice.reason)
            return self._choice

    def required(self) -> EmbedderChoice:
        """The choice, for a search: one that fell back raises when the config says ``fail``.

        Raises:
            EmbeddingError: The embedder is unavailable and ``on_embedder_error`` is ``fail``.
        """
        c = self.choice
        if c.fallback and self.config.on_embedder_error == "fail":
            from ..core.errors import EmbeddingError

            raise EmbeddingError(c.reason or f"{c.provider} is unavailable", kind="unavailable")
        return c

    def failed(self, exc: Exception) -> None:
        """A query vector could not be made: log it (the search goes on keyword-only) or raise.

        Raises:
            EmbeddingError: ``on_embedder_error`` is ``fail``.
        """
        if self.config.on_embedder_error == "fail":
            from ..core.errors import EmbeddingError

            if isinstance(exc, EmbeddingError):
                raise exc
            raise EmbeddingError(f"{type(exc).__name__}: {exc}") from exc
        log.warning("embedder failed, answering keyword-only: %s", exc)

    @property
    def model_id(self) -> str | None:
        """Key of this embedder's vectors (``provider/model``), None without one."""
        c = self.choice
        return f"{c.provider}/{c.model}" if c.available else None

    def stored_dim(self) -> int | None:
        """The dimension of the vectors stored for this embedder (None: none yet)."""
        model_id = self.model_id
        return self._dim_of(model_id) if model_id is not None else None

    def embed_documents(self, texts: list[str], dim: int | None = None) -> np.ndarray:
        """Embed documents with retries and validation (raises ``EmbeddingError``).

        Args:
            texts: What to embed.
            dim: The dimension expected (default: the stored vectors').
        """
        from ..embeddings.policy import embed_with_retry

        emb = self.choice.embeddings
        return embed_with_retry(
            emb.embed_documents,
            texts,
            retries=self.config.settings.embedding.embed_retries,
            source=emb,
            expected_dim=dim if dim is not None else self.stored_dim(),
        )

    def run_embedder(self) -> Callable[[list[str]], np.ndarray]:
        """:meth:`embed_documents` for one run: the stored size read once, then the first batch's.

        Reading it for every batch of 20 added up to a visible share of a
        million-chunk cold index. The first batch of a run with nothing cached
        runs alone (:func:`..store.upkeep.embed_missing`), so the batches after
        it are held to its size.
        """
        dims = [self.stored_dim()]

        def embed(texts: list[str]) -> np.ndarray:
            out = self.embed_documents(texts, dims[0])
            dims[0] = dims[0] or int(out.shape[1])
            return out

        return embed

    def embed_query(self, text: str) -> np.ndarray:
        """Embed one query (raises ``EmbeddingError``)."""
        from ..embeddings.policy import embed_with_retry

        emb = self.choice.embeddings
        return embed_with_retry(
            lambda t: [emb.embed_query(t[0])],
            [text],
            retries=0,
            source=emb,
            expected_dim=self.stored_dim(),
        )[0]
