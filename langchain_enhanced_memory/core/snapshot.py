"""A consistent, in-memory view of one index generation: the arrays ranking reads.

Storage (:mod:`..store.index`) loads it; ranking (:mod:`.ranking`) only reads
it. Nothing here does I/O. A snapshot is a value: once handed out its fields
never change (a view with other vectors is a new object, :meth:`Snapshot.with_vectors`),
so a caller holding one keeps the generation it asked for.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from .scoring import PostingLists
from .vectorset import VectorSet

__all__ = ["Snapshot"]


@dataclass(frozen=True, eq=False)
class Snapshot:
    """One index generation as arrays, ready for scoring (row ``i`` is chunk ``i``).

    Frozen: its fields are set once. ``memo`` is the one mutable part, a cache of
    views derived from the text fields, shared by every view of the generation.
    """

    generation: int
    ids: np.ndarray
    paths: list[str]
    start: np.ndarray
    end: np.ndarray
    # Often read-only maps of the segment files, decoded per row (core.strings).
    header: Sequence[str]
    headers: Sequence[str]
    texts: Sequence[str]
    kinds: list[str]
    dates: list[str | None]
    day: np.ndarray  # date ordinal of the chunk's daily note, -1 when undated
    # Each field's postings: one list, or segments read as one (core.segments).
    text_post: PostingLists
    phrase_post: PostingLists  # adjacent term pairs of the chunk text
    header_post: PostingLists
    path_post: PostingLists
    # Chunk and line vectors, int8 rows times a float32 scale each (vectorset.quantize),
    # in parts (often read-only maps of the model's segment files: core.vectorset).
    vectors: VectorSet | None = None
    has_vector: np.ndarray | None = None
    model: str | None = None
    # Views a scoring strategy derives once per generation from the text fields (e.g.
    # lowercased texts); shared with the generation's other views (with_vectors).
    memo: dict[str, Any] = field(default_factory=dict, repr=False)

    def __len__(self) -> int:
        return len(self.paths)

    def with_vectors(self, vectors: VectorSet | None, model: str | None) -> Snapshot:
        """The same generation with ``model``'s vectors (none when ``vectors`` is None)."""
        has = None if vectors is None else vectors.has_vector
        return replace(self, vectors=vectors, has_vector=has, model=model)

    def dense_vectors(self) -> np.ndarray | None:
        """The chunk vectors as float32 rows (for exports; scoring reads them quantized)."""
        return None if self.vectors is None else self.vectors.dense()
