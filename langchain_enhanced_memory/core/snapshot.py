"""A consistent, in-memory view of one index generation: the arrays ranking reads.

Storage (:mod:`..store.index`) loads it; ranking (:mod:`.ranking`) only reads
it. Nothing here does I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .scoring import PostingLists
from .vectorset import VectorSet

__all__ = ["Snapshot"]


@dataclass
class Snapshot:
    """One index generation as arrays, ready for scoring (row ``i`` is chunk ``i``)."""

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
    # Views a scoring strategy derives once per generation (e.g. lowercased texts).
    memo: dict[str, Any] = field(default_factory=dict, repr=False)

    def __len__(self) -> int:
        return len(self.paths)

    def dense_vectors(self) -> np.ndarray | None:
        """The chunk vectors as float32 rows (for exports; scoring reads them quantized)."""
        return None if self.vectors is None else self.vectors.dense()
