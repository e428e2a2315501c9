"""What the graph needs of the index it is built from and kept in: :class:`GraphHost`.

The graph's tables live in a workspace index's SQLite file, beside the chunks
whose vectors it is built from. Its modules ask that index for connections, the
writer lock and a snapshot, nothing more: the engine hands them its index as
this protocol, so no face outside ``engine/`` and ``store/`` holds the index.
"""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path
from typing import Protocol

import numpy as np

from ..core.snapshot import Snapshot

__all__ = ["GraphHost"]


class GraphHost(Protocol):
    """An index file the graph's tables live in (``store.index.MemoryIndex`` is one)."""

    @property
    def path(self) -> Path:
        """The index file (keys the refs cached per generation)."""
        ...

    def connect(self) -> contextlib.AbstractContextManager[sqlite3.Connection]:
        """A checked connection to the index file."""
        ...

    def reader(self) -> contextlib.AbstractContextManager[sqlite3.Connection]:
        """This thread's kept-open connection for short reads on the search path."""
        ...

    def writer_lock(self, wait: bool = True) -> contextlib.AbstractContextManager[bool]:
        """The index's writer lock (a build writes under it)."""
        ...

    def snapshot(self, model: str | None = None) -> Snapshot:
        """The current generation, with ``model``'s vectors."""
        ...

    def vector_models(self) -> list[str]:
        """The models with vectors in the index (a build picks one)."""
        ...

    def with_vector(self, model: str, hashes: list[str]) -> np.ndarray:
        """Whether ``model`` has a vector of each of ``hashes``."""
        ...
