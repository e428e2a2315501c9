"""A consistent, in-memory view of one index generation: the arrays ranking reads.

Storage (:mod:`..store.index`) loads it; ranking (:mod:`.ranking`) only reads
it. Nothing here does I/O. A snapshot is a value: once handed out its fields
never change (a view with other vectors is a new object, :meth:`Snapshot.with_vectors`),
so a caller holding one keeps the generation it asked for.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import date
from typing import Any

import numpy as np

from .scoring import PostingLists
from .transcripts import transcript_day
from .vectorset import VectorSet

__all__ = ["FileFacts", "Snapshot", "file_facts", "row_columns"]

#: A file's path, kind, date (ISO day, None when undated) and that day's ordinal (-1: none).
FileFacts = tuple[str, str, "str | None", int]


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


def file_facts(path: str, kind: str, day: str | None) -> FileFacts:
    """A file's facts as :func:`row_columns` reads them (``day`` an ISO date, or None)."""
    return (path, kind, day or None, date.fromisoformat(day).toordinal() if day else -1)


def row_columns(
    table: Sequence[FileFacts], of_row: np.ndarray, header: Sequence[str]
) -> tuple[list[str], list[str], list[str | None], np.ndarray]:
    """Each row's path, kind, date and day ordinal, from the facts of its file.

    The one place rows get their dates, for every store (the local index and a
    database scope alike): a row has its file's date, except a transcript chunk,
    dated by its first message (its header's day), so "yesterday" means when it
    was said.

    Args:
        table: The facts of each file a row may name.
        of_row: Each row's index into ``table``.
        header: Each row's header (a transcript chunk's starts with its first time).
    """

    def column(i: int) -> list:
        return np.asarray([f[i] for f in table] or [None], dtype=object)[of_row].tolist()

    dates = column(2)
    day = np.asarray([f[3] for f in table] or [-1], dtype=np.int64)[of_row]
    is_session = np.asarray([f[1] == "session" for f in table] or [False], dtype=bool)
    ordinal: dict[str, int] = {}
    for i in np.flatnonzero(is_session[of_row]).tolist():
        when = transcript_day(header[i])
        if when is None:
            continue
        if when not in ordinal:
            try:
                ordinal[when] = date.fromisoformat(when).toordinal()
            except ValueError:
                ordinal[when] = -1
        if ordinal[when] >= 0:
            dates[i], day[i] = when, ordinal[when]
    return column(0), column(1), dates, day
