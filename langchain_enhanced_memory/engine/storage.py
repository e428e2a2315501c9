"""What the engine needs of a store: :class:`Storage`, and its two implementations.

========================  =====================================  =================================
operation                 :class:`WorkspaceStorage` (a folder)    :class:`ScopeStorage` (PostgreSQL)
========================  =====================================  =================================
``refresh``               sync edited notes (watcher or scan)     nothing: ``snapshot`` checks
``snapshot(model)``       the index's generation                  the committed generation (else
                                                                  the one held here: stale)
``read``                  lines of a note file                    lines of a stored note
``append`` / ``delete``   the note files, then the index          the note and its segments, one
                                                                  transaction
``facts``                 the index's counts                      the generation last read
``log_search``            the query log                           nothing
========================  =====================================  =================================

The engine (:class:`~.run.SearchEngine`) ranks over either the same way; the
stores' own code stays in ``store/`` (:class:`~..store.index.MemoryIndex`,
:class:`~..store.database.Database`): these adapt them, nothing more.
"""

from __future__ import annotations

import logging
import threading
import weakref
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ..core.errors import DatabaseError
from ..core.scopes import validate_scope
from ..core.snapshot import Snapshot
from ..store import logs
from ..store.freshness import Freshness
from ..store.index import MemoryIndex
from ..store.workspace import require_memory

if TYPE_CHECKING:
    from ..core.results import SearchResponse
    from ..store.append import AppendResult
    from ..store.database import Database, Embedding
    from ..store.forget import Forgotten
    from ..store.notes import MemoryLines
    from .embedder import QueryEmbedder

__all__ = ["ScopeStorage", "Storage", "StorageFacts", "WorkspaceStorage"]

log = logging.getLogger("langchain_enhanced_memory")


@dataclass(frozen=True)
class StorageFacts:
    """What a store holds, for a status line.

    Args:
        chunks: Chunks of its generation (0 when none was read yet).
        generation: That generation (0: none).
        stale: Whether the last answer came from an older generation (a database down).
    """

    chunks: int
    generation: int
    stale: bool = False


class Storage(Protocol):
    """The operations the engine and the faces need of a store, and nothing more."""

    @property
    def scope(self) -> str | None:
        """The scope its hits are tagged with (None: a workspace's own hits)."""
        ...

    def require(self) -> None:
        """Refuse a store that holds no memory (raises ``NoMemoryError``)."""
        ...

    def refresh(self) -> None:
        """Bring the store up to date with its notes before a search."""
        ...

    def snapshot(self, model_id: str | None) -> tuple[Snapshot, bool]:
        """The generation to rank (``model_id``'s vectors), and whether it is stale."""
        ...

    def read(self, path: str, from_line: int, lines: int | None) -> MemoryLines:
        """Lines of one note (raises ``MissingNoteError``, ``NoteError``)."""
        ...

    def append(
        self,
        text: str,
        *,
        section: str | None,
        file: str | None,
        now: datetime | date | None,
        embedder: QueryEmbedder,
    ) -> AppendResult:
        """Append a bullet to a note (raises ``WriteError``)."""
        ...

    def delete(
        self,
        *,
        path: str | None,
        line: int | None,
        match: str | None,
        dry_run: bool,
        allow_many: bool,
        embedder: QueryEmbedder,
    ) -> list[Forgotten]:
        """Remove lines from the notes and their text from the store (raises ``WriteError``)."""
        ...

    def facts(self) -> StorageFacts:
        """Its chunks and generation."""
        ...

    def log_search(self, query: str, response: SearchResponse, now: datetime) -> None:
        """Record a search where the store keeps logs."""
        ...

    def close(self) -> None:
        """Release what it holds (a watcher thread)."""
        ...


class WorkspaceStorage:
    """A workspace's notes and its embedded index (:class:`~..store.index.MemoryIndex`).

    Args:
        index: The workspace's index.
        auto_index: Sync edited notes before each search.
        watch: Follow file-system events instead of scanning.
        check_interval_s: Without a watcher, scan at most this often.
    """

    scope = None

    def __init__(
        self, index: MemoryIndex, *, auto_index: bool, watch: bool, check_interval_s: float
    ) -> None:
        self.index = index
        self.settings = index.settings
        self.auto_index = auto_index
        self._watch, self._interval = watch, check_interval_s
        self._holds_memory = False
        self._freshness: Freshness | None = None
        self._lock = threading.RLock()  # one thread checks for edits; the others see its sync

    @property
    def workspace(self) -> Path:
        """The workspace folder."""
        return self.index.workspace

    @property
    def freshness(self) -> Freshness:
        """How edits are learnt of (the watcher starts on first use)."""
        with self._lock:
            if self._freshness is None:
                fresh = Freshness(self.index, watch=self._watch, interval_s=self._interval)
                weakref.finalize(self, fresh.close)
                self._freshness = fresh
            return self._freshness

    def require(self) -> None:
        """Refuse a folder that holds no memory, until it does (a first append makes it one)."""
        if not self._holds_memory:
            require_memory(self.index.workspace, self.settings)
            self._holds_memory = True

    def refresh(self) -> None:
        """Sync the notes edited since the last search (with ``auto_index``)."""
        if self.auto_index:
            with self._lock:
                self.freshness.refresh()

    def snapshot(self, model_id: str | None) -> tuple[Snapshot, bool]:
        """The index's current generation (never stale: the notes are here)."""
        return self.index.snapshot(model_id), False

    def read(self, path: str, from_line: int, lines: int | None) -> MemoryLines:
        """Lines of a note file, counted in the access log."""
        from ..store import notes  # a search does not read notes: not on its path

        got = notes.get_lines(self.workspace, path, from_line, lines, self.settings)
        logs.record_access(self.workspace, self.settings, [got.path])
        return got

    def append(
        self,
        text: str,
        *,
        section: str | None,
        file: str | None,
        now: datetime | date | None,
        embedder: QueryEmbedder,
    ) -> AppendResult:
        """Append to the note file (the next search indexes it)."""
        from ..store.append import append_memory  # a writer's: not on a search's path

        return append_memory(self.workspace, text, section=section, file=file, now=now)

    def delete(
        self,
        *,
        path: str | None,
        line: int | None,
        match: str | None,
        dry_run: bool,
        allow_many: bool,
        embedder: QueryEmbedder,
    ) -> list[Forgotten]:
        """Remove lines from the note files and purge their text from the index and logs."""
        from ..store.forget import forget  # a writer's: not on a search's path

        return forget(
            self.workspace,
            path=path,
            line=line,
            match=match,
            dry_run=dry_run,
            allow_many=allow_many,
            settings=self.settings,
            index_path=self.index.path,
        )

    def facts(self) -> StorageFacts:
        """The index's chunks and generation."""
        stats = self.index.stats()
        return StorageFacts(stats["chunks"], stats["generation"])

    def log_search(self, query: str, response: SearchResponse, now: datetime) -> None:
        """Queue the search for the query log (when logging is on)."""
        logs.record_search(self.workspace, self.settings, query, response, now)

    def close(self) -> None:
        """Stop the watcher."""
        if self._freshness is not None:
            self._freshness.close()


class ScopeStorage:
    """One scope of a PostgreSQL database (:class:`~..store.database.Database`).

    Args:
        database: The connected database.
        scope: The scope's name.

    Raises:
        ScopeError: A bad scope name.
    """

    def __init__(self, database: Database, scope: str) -> None:
        self.database = database
        self.scope: str = validate_scope(scope)
        self.last: Snapshot | None = None  # the generation the last search read
        self._stale = False

    def require(self) -> None:
        """Nothing to refuse: a scope not written yet reads as empty."""

    def refresh(self) -> None:
        """Nothing: :meth:`snapshot` reads the committed generation (one query)."""

    def snapshot(self, model_id: str | None) -> tuple[Snapshot, bool]:
        """The committed generation; while the database fails, the one held here (stale).

        Raises:
            DatabaseError: The database failed and no generation is held (``Database.held``).
        """
        try:
            snap, stale = self.database.snapshot(self.scope, model_id), False
        except DatabaseError as exc:
            held = self.database.held(self.scope, model_id, copies=exc.unreachable)
            if held is None:
                raise
            log.warning(
                "scope %s answered from generation %d held here (newer writes may be missing): %s",
                self.scope,
                held.generation,
                exc,
            )
            snap, stale = held, True
        self.last, self._stale = snap, stale
        return snap, stale

    def read(self, path: str, from_line: int, lines: int | None) -> MemoryLines:
        """Lines of a note stored in the scope."""
        return self.database.read(self.scope, path, from_line, lines)

    def append(
        self,
        text: str,
        *,
        section: str | None,
        file: str | None,
        now: datetime | date | None,
        embedder: QueryEmbedder,
    ) -> AppendResult:
        """Append to the scope's note and index it, in one transaction."""
        return self.database.append(
            self.scope, text, section=section, file=file, now=now, embed=_embedding(embedder)
        )

    def delete(
        self,
        *,
        path: str | None,
        line: int | None,
        match: str | None,
        dry_run: bool,
        allow_many: bool,
        embedder: QueryEmbedder,
    ) -> list[Forgotten]:
        """Remove lines from the scope's notes and re-index them, in one transaction."""
        return self.database.forget(
            self.scope,
            path=path,
            line=line,
            match=match,
            dry_run=dry_run,
            allow_many=allow_many,
            embed=_embedding(embedder),
        )

    def facts(self) -> StorageFacts:
        """The generation the last search read (no query of its own)."""
        snap = self.last
        if snap is None:
            return StorageFacts(0, 0)
        return StorageFacts(len(snap), snap.generation, self._stale)

    def log_search(self, query: str, response: SearchResponse, now: datetime) -> None:
        """Nothing: a scope's searches are not logged (they are many hosts')."""

    def close(self) -> None:
        """Nothing: the database is closed by whoever connected it."""


def _embedding(embedder: QueryEmbedder) -> Embedding | None:
    """The embedder as a database write indexes with it (None: keyword-only)."""
    from ..store.database import Embedding  # psycopg: only when a database is used

    model_id = embedder.model_id
    return None if model_id is None else Embedding(model_id, embedder.run_embedder())
