"""The one description of an engine: workspace, recipe, embedder, index file.

The retriever, the tools, the command line and the servers all build an
:class:`EngineConfig` and get a :class:`~.search.MemorySearch` from it. It holds
values only: the environment is read at the entry points
(:func:`..config.engine_config` applies the default, then the environment, then
the arguments).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ..core.errors import SettingsError
from ..core.settings import MemorySettings

__all__ = ["EMBEDDERS", "EMBEDDER_ERRORS", "Embedder", "EmbedderErrors", "EngineConfig"]

EMBEDDERS: tuple[str, ...] = ("auto", "ollama", "local", "none")
Embedder = Literal["auto", "ollama", "local", "none"]
EMBEDDER_ERRORS: tuple[str, ...] = ("keyword", "fail")
EmbedderErrors = Literal["keyword", "fail"]


@dataclass(frozen=True)
class EngineConfig:
    """Everything that makes an engine: which workspace, recipe, embedder and index file.

    Attributes:
        workspace: The workspace folder.
        settings: Scoring and indexing settings.
        embedder: ``auto`` (Ollama, then the local model, then keyword-only),
            ``ollama``, ``local`` or ``none``.
        model: Ollama embedding model (default ``nomic-embed-text``).
        ollama_url: Ollama's base URL (or the original's full ``/api/embed`` URL).
        embeddings: Any LangChain ``Embeddings``; overrides ``embedder``.
        on_embedder_error: When the embedder is unavailable or fails: ``keyword``
            answers keyword-only (``fallback`` set, the cause logged once), ``fail``
            raises :class:`~..core.errors.EmbeddingError` (OpenClaw's ``fallback``).
        index_path: Where the SQLite index lives (default: inside the workspace).
        auto_index: Bring a stale index up to date before searching.
        watch: Learn of edits from file-system events (for a long-lived engine);
            off, or where events are unavailable, a cheap scan runs instead.
        check_interval_s: Without a watcher, scan for edits at most this often
            (0: before every search, so an edit is in the very next answer).
        background_embedding: Embed what lacks a vector on a thread and answer
            keyword-only meanwhile; off, a search embeds up to
            ``settings.embedding.embed_inline_max`` texts itself and otherwise leaves the
            rest to ``enhanced-memory index`` or the resident engine.

    Raises:
        SettingsError: A field that is not valid.
    """

    workspace: Path
    settings: MemorySettings = field(default_factory=MemorySettings)
    embedder: Embedder = "auto"
    model: str | None = None
    ollama_url: str | None = None
    embeddings: Any = None
    on_embedder_error: EmbedderErrors = "keyword"
    index_path: Path | None = None
    auto_index: bool = True
    watch: bool = False
    check_interval_s: float = 0.0
    background_embedding: bool = False

    def __post_init__(self) -> None:
        if self.embedder not in EMBEDDERS:
            raise SettingsError(f"must be one of {', '.join(EMBEDDERS)}", "embedder")
        if self.on_embedder_error not in EMBEDDER_ERRORS:
            raise SettingsError("must be keyword or fail", "on_embedder_error")
        embeddings = self.embeddings
        if embeddings is not None and not (
            callable(getattr(embeddings, "embed_documents", None))
            and callable(getattr(embeddings, "embed_query", None))
        ):
            raise SettingsError(
                "must be a LangChain Embeddings (embed_documents, embed_query)", "embeddings"
            )
        if self.check_interval_s < 0:
            raise SettingsError("must be at least 0", "check_interval_s")
        object.__setattr__(self, "settings", MemorySettings.of(self.settings))
        # Paths as given (str or Path), held as Path.
        object.__setattr__(self, "workspace", Path(self.workspace))
        if self.index_path is not None:
            object.__setattr__(self, "index_path", Path(self.index_path))
