"""The one description of an engine: workspace, recipe, embedder, index file.

The retriever, the tools, the command line and the servers all build an
:class:`EngineConfig` and get a :class:`~.search.MemorySearch` from it.
:meth:`EngineConfig.from_env` applies the command line's order: a flag, then
the environment, then the default.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, cast

from ..core.errors import RequestError, SettingsError
from ..core.settings import PROFILE_NAMES, MemorySettings
from ..store.locations import resolve_workspace

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
            ``settings.embed_inline_max`` texts itself and otherwise leaves the
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

    @classmethod
    def from_env(
        cls,
        *,
        workspace: str | Path | None = None,
        profile: str | None = None,
        embedder: str | None = None,
        model: str | None = None,
        ollama_url: str | None = None,
        index_path: str | Path | None = None,
        on_embedder_error: str | None = None,
        session_dirs: Sequence[str] = (),
        **fields: Any,
    ) -> EngineConfig:
        """A config from explicit values, then the environment, then the defaults.

        ``$OPENCLAW_WORKSPACE_DIR``/``$MEMORY_DIR``, ``$ENHANCED_MEMORY_PROFILE``,
        ``$ENHANCED_MEMORY_EMBEDDER``, ``$EMBED_MODEL``, ``$OLLAMA_URL``,
        ``$ENHANCED_MEMORY_INDEX`` and ``$ENHANCED_MEMORY_ON_EMBEDDER_ERROR`` fill what
        is not given; ``session_dirs`` are searched beside the settings' transcript folders.

        Raises:
            RequestError: An unknown profile, embedder or ``on_embedder_error``.
            EnhancedMemoryError: The workspace does not exist.
        """
        env = os.environ
        profile = profile or env.get("ENHANCED_MEMORY_PROFILE") or "default"
        if profile not in PROFILE_NAMES:
            raise RequestError(f"unknown profile {profile!r}", "profile")
        embedder = embedder or env.get("ENHANCED_MEMORY_EMBEDDER") or "auto"
        if embedder not in EMBEDDERS:
            raise RequestError(
                f"unknown embedder {embedder!r} (auto, ollama, local or none)", "embedder"
            )
        on_error = on_embedder_error or env.get("ENHANCED_MEMORY_ON_EMBEDDER_ERROR") or "keyword"
        if on_error not in EMBEDDER_ERRORS:
            raise RequestError(f"must be keyword or fail, got {on_error!r}", "on_embedder_error")
        settings = fields.pop("settings", None) or MemorySettings(profile=profile)
        if session_dirs:  # more transcript folders than the settings name
            settings = replace(settings, session_dirs=(*settings.session_dirs, *session_dirs))
        index_path = index_path or env.get("ENHANCED_MEMORY_INDEX") or None
        return cls(
            workspace=resolve_workspace(workspace),
            settings=settings,
            embedder=cast(Embedder, embedder),
            model=model or env.get("EMBED_MODEL") or None,
            ollama_url=ollama_url or env.get("OLLAMA_URL") or None,
            on_embedder_error=cast(EmbedderErrors, on_error),
            index_path=Path(index_path) if index_path else None,
            **fields,
        )
