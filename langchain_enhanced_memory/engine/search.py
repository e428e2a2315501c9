"""The search engine of one workspace: keeps its index fresh, embeds, ranks, logs.

:class:`MemorySearch` is built from an :class:`~.config.EngineConfig`. It imports
no LangChain and no embedder until one is needed, so a keyword-only query in
a fresh process starts fast.
"""

from __future__ import annotations

import threading
from dataclasses import fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..core.errors import CrossrefError
from ..core.results import Hit
from ..core.settings import MemorySettings
from ..core.snapshot import Snapshot
from ..store.freshness import Freshness
from ..store.index import MemoryIndex, SyncReport
from .config import Embedder, EmbedderErrors, EngineConfig
from .embedder import QueryEmbedder
from .run import Neighbors, SearchEngine
from .storage import WorkspaceStorage

if TYPE_CHECKING:
    from langchain_core.embeddings import Embeddings

    from ..graph.storage import BuildReport
    from ..graph.views import GraphData
    from ..store.database import Database, PublishReport
    from ..store.upkeep import EmbedJob, ProgressFactory

__all__ = ["MemorySearch"]


class MemorySearch(SearchEngine):
    """Searches one workspace: keeps its index fresh and ranks chunks.

    Args:
        workspace: The workspace folder.
        settings: Scoring and indexing settings.
        embedder: ``auto``, ``ollama``, ``local`` or ``none``.
        model: Embedding model name (Ollama), defaults to ``nomic-embed-text``.
        ollama_url: Ollama's base URL (or the original's full ``/api/embed`` URL).
        embeddings: Any LangChain ``Embeddings``; overrides ``embedder``.
        on_embedder_error: ``keyword`` (answer keyword-only) or ``fail`` (raise
            ``EmbeddingError``) when the embedder is unavailable or fails.
        index_path: Where the SQLite index lives.
        auto_index: Bring a stale index up to date before searching.
        watch: Follow file-system events instead of scanning before each search.
        check_interval_s: Without a watcher, scan at most this often (0: every search).
        background_embedding: Embed missing vectors on a thread, answering meanwhile.

    An engine that watches holds a watcher thread: :meth:`close` (or ``with``)
    stops it, as does garbage collection.

    Threads: one engine is safe to call from many threads at once (:meth:`search`,
    :meth:`run`; the retriever's ``batch`` and ``ainvoke`` do). What it keeps
    between calls is serialised inside: the embedder is resolved once, one
    thread at a time checks the notes for edits and syncs them, and a loaded
    generation is an immutable snapshot shared by the searches that read it,
    which then rank in parallel. A search sees the notes as of some moment
    during the call; an edit made meanwhile is in the next one. Several
    processes may search and index one workspace at once (the index's locks).
    A folder that holds no memory is refused by the first search or index run
    (:meth:`require_memory`), not by the constructor: an agent's tools over a new
    folder must still write its first note.
    """

    def __init__(
        self,
        workspace: str | Path,
        *,
        settings: MemorySettings | None = None,
        embedder: Embedder = "auto",
        model: str | None = None,
        ollama_url: str | None = None,
        embeddings: Embeddings | None = None,
        on_embedder_error: EmbedderErrors = "keyword",
        index_path: str | Path | None = None,
        auto_index: bool = True,
        watch: bool = False,
        check_interval_s: float = 0.0,
        background_embedding: bool = False,
    ) -> None:
        self.config = EngineConfig(
            workspace=Path(workspace),
            settings=settings or MemorySettings(),
            embedder=embedder,
            model=model,
            ollama_url=ollama_url,
            embeddings=embeddings,
            on_embedder_error=on_embedder_error,
            index_path=Path(index_path) if index_path else None,
            auto_index=auto_index,
            watch=watch,
            check_interval_s=check_interval_s,
            background_embedding=background_embedding,
        )
        self.settings = self.config.settings
        self.index = MemoryIndex(workspace, self.settings, index_path)
        self._storage: WorkspaceStorage = WorkspaceStorage(
            self.index, auto_index=auto_index, watch=watch, check_interval_s=check_interval_s
        )
        self.embedder = QueryEmbedder(self.config, self.index.vector_dim)
        self.auto_index = auto_index
        self._job: EmbedJob | None = None
        self._lock = threading.RLock()  # serialises the start of the embedding job

    @property
    def workspace(self) -> Path:
        """The workspace folder."""
        return self.index.workspace

    @property
    def index_path(self) -> Path:
        """The index file."""
        return self.index.path

    def workspace_engine(self, tool: str = "this tool") -> MemorySearch:
        """This engine: it reads one workspace's index."""
        return self

    @property
    def freshness(self) -> Freshness:
        """How this engine learns of edits (the watcher starts on first use)."""
        return self._storage.freshness

    @property
    def embedding_job(self) -> EmbedJob | None:
        """The background embedding run, once one was started."""
        return self._job

    def close(self) -> None:
        """Stop the watcher and wait for a background embedding run to end."""
        self._storage.close()
        if self._job is not None:
            self._job.join()

    @classmethod
    def from_config(cls, config: EngineConfig) -> MemorySearch:
        """The engine a config describes."""
        return cls(**{f.name: getattr(config, f.name) for f in fields(config)})

    def require_memory(self) -> None:
        """Refuse a folder that holds no memory, before anything is written in it.

        Checked until the folder is a workspace (:func:`~..store.workspace.holds_memory`),
        so a first ``memory_append`` makes the next search answer.

        Raises:
            NoMemoryError: It holds none (most often the wrong folder).
        """
        self._storage.require()

    # ----------------------------------------------------------------- index
    def embed_missing(self, *, wait: bool = True, progress: ProgressFactory | None = None) -> int:
        """Embed every chunk and line lacking a vector (0 without an embedder).

        Raises:
            EmbeddingError: The embedder failed (batches already embedded are kept), or
                is unavailable and the config's ``on_embedder_error`` is ``fail``.
        """
        self.embedder.required()
        model_id = self.model_id
        if model_id is None:
            return 0
        from ..store.upkeep import embed_missing  # only when embedding: not a keyword search's

        return embed_missing(
            self.index, model_id, self.embedder.run_embedder(), progress=progress, wait=wait
        )

    def update_index(
        self, *, wait: bool = True, progress: ProgressFactory | None = None
    ) -> tuple[SyncReport, int]:
        """Sync the text state, then embed what lacks a vector.

        Args:
            wait: Block on another writer; when False and one is busy, skip.
            progress: Given the number of texts to embed, a callback per batch.

        Returns:
            The sync report and the number of texts embedded. Raises
            ``EmbeddingError`` when the embedder fails (text state is kept),
            ``NoMemoryError`` for a folder that holds no memory.
        """
        self.require_memory()
        report = self.index.sync(wait=wait)
        return report, self.embed_missing(wait=wait, progress=progress)

    # ------------------------------------------------------------- the index
    def sync(self, *, wait: bool = True) -> SyncReport:
        """Bring the index's text state up to date (no embedding)."""
        return self.index.sync(wait=wait)

    def snapshot(self, model_id: str | None = None) -> Snapshot:
        """The index's current generation (with ``model_id``'s vectors)."""
        return self.index.snapshot(model_id)

    def stats(self) -> dict[str, int]:
        """The index's counts: files, chunks, cached vectors, generation."""
        return self.index.stats()

    def generation(self) -> int:
        """The index's committed generation (0 when never synced)."""
        return self.index.generation()

    def disk_bytes(self) -> int:
        """Bytes the index takes on disk: its file, its WAL and its side files."""
        return self.index.disk_bytes()

    def refuse_foreign_index(self) -> None:
        """Refuse an index file named that is not ours (``--index notes.yaml``), writing nothing.

        Raises:
            IndexUnavailableError: The file holds someone else's data.
        """
        self.index.db.refuse_foreign()

    def compact(self) -> tuple[int, int]:
        """Merge the index's segments and reclaim space: bytes on disk before and after."""
        return self.index.compact()

    def publish(
        self,
        database: Database,
        scope: str,
        *,
        owner: str,
        take_over: bool = False,
        compact: bool = False,
    ) -> PublishReport:
        """Publish this workspace's index (synced, embedded) as folder-backed ``scope``.

        See :meth:`~..store.database.Database.publish` (``owner``, ``take_over``, ``compact``).

        Raises:
            ScopeError: Bad name, a database-backed scope, another owner, missing vectors.
            DatabaseError: The database failed (nothing was written).
        """
        return database.publish(
            scope, self.index, self.model_id, owner=owner, take_over=take_over, compact=compact
        )

    # ------------------------------------------------------------- the graph
    def build_crossrefs(self, *, full: bool = False) -> BuildReport:
        """Bring the index up to date, then build or update its cross-reference graph.

        Args:
            full: Rebuild everything even when an incremental update would do.

        Raises:
            CrossrefError: No vectors, or some chunks lack one of this embedder.
            EnhancedMemoryError: Updating the index failed (the embedder, or the disk).
        """
        from ..graph import storage

        self.update_index()
        return storage.build(self.index, self.model_id, self.settings, full=full)

    def crossref(
        self, path: str | None = None, *, build: bool = True, top: int = 15
    ) -> dict[str, Any]:
        """Cross-references of ``path`` (a normalised note path), or the graph's overview.

        Args:
            path: The note (None: totals and the ``top`` most connected files).
            build: Build the graph when there is none yet.
            top: Files the overview lists.

        Raises:
            CrossrefError: No graph and ``build`` is False, or it cannot be built, or
                ``path`` is not in it.
            EnhancedMemoryError: Building the graph failed (the embedder, or the disk).
        """
        from ..graph import queries

        try:
            summary = queries.graph_summary(self.index, top)
        except CrossrefError:
            if not build:
                raise
            self.build_crossrefs()
            summary = queries.graph_summary(self.index, top)
        return summary if path is None else queries.show(self.index, path)

    def crossref_picture(self, salience: dict[str, float] | None = None) -> GraphData:
        """The stored graph's files and links, to draw (``salience``: path -> score shown).

        Raises:
            CrossrefError: No graph has been built.
        """
        from ..graph import views

        return views.collect(self.index, salience)

    def export_crossrefs(self) -> dict[str, Any]:
        """The graph in the original's ``memory/crossrefs.json`` shape (the index synced first).

        Raises:
            CrossrefError: No graph has been built.
        """
        from ..graph import queries

        self.sync()
        return queries.export_crossrefs_json(self.index)

    def _neighbors(self, snap: Snapshot) -> Neighbors | None:
        if not self.settings.crossref.graph_neighbors:
            return None
        from ..graph.related import add_graph_neighbors

        def neighbors(snap: Snapshot, scores: np.ndarray) -> None:
            add_graph_neighbors(self.index, snap, scores, self.settings)

        return neighbors

    def _enrich(self, snap: Snapshot, hits: list[Hit]) -> None:
        if self.settings.crossref.related_per_hit and hits:
            from ..graph.related import attach_related

            attach_related(
                self.index, snap.generation, hits, self.settings.crossref.related_per_hit
            )

    def _vectors_coming(self, model_id: str) -> float | None:
        """None when every chunk has a vector; else the share that has one.

        A few missing texts (``settings.embedding.embed_inline_max``) are embedded before
        answering; more are left to a background run (``background_embedding``)
        or to ``enhanced-memory index``, so a first query never waits minutes.
        """
        job = self._job
        if job is not None and job.running:
            return job.done / job.total if job.total else 0.0
        has = self.index.snapshot(model_id).has_vector
        if has is None or has.all():
            return None
        if self.auto_index:
            inline_max = self.settings.embedding.embed_inline_max
            # Chunks alone over the limit: no need to list every missing line to know.
            few = int((~has).sum()) <= inline_max and (
                len(self.index.missing_plan(model_id)) <= inline_max
            )
            if few:
                self.embed_missing(wait=False)  # another run embedding already: do not wait
                has = self.index.snapshot(model_id).has_vector
                if has is None or has.all():
                    return None
            elif self.config.background_embedding:
                with self._lock:
                    job = self._job
                    if job is None:
                        from ..store.upkeep import EmbedJob

                        job = self._job = EmbedJob(self.index, model_id, self.embed_documents)
                    if job.due():
                        job.start()
        return float(has.mean())
