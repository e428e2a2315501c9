"""Posting lists kept in segments: an older base plus small deltas, read as one list.

A re-index after one changed file writes a delta segment holding only that
file's new chunks; the chunks it replaced stay in their older segment, dropped
by a mask (a tombstone: the segment row's chunk is no longer in the index).
:class:`SegmentedPostings` reads the segments as the one :class:`Postings` a
fresh build over the live chunks would be: the same documents and term
frequencies per term (so the same BM25 document frequencies), the same
document lengths in the same order. Nothing here does I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .scoring import PostingLists, Postings

__all__ = ["ReadOnce", "SegmentedPostings", "compacted", "locate", "place_rows"]

_EMPTY = Postings.build([])


@dataclass(frozen=True)
class _Placed:
    """One segment's postings and where its rows land among the live rows."""

    post: PostingLists
    offset: int  # rows land at offset + local row when ``rows`` is None
    rows: np.ndarray | None  # live row of each local row, -1 when dropped


def locate(ids: np.ndarray, live_ids: np.ndarray) -> np.ndarray:
    """The live row of each of ``ids`` (-1 for an id no longer live); both ascending."""
    n = live_ids.size
    if n == 0:
        return np.full(ids.size, -1, dtype=np.int64)
    at = np.searchsorted(live_ids, ids)
    hit = live_ids[np.minimum(at, n - 1)] == ids
    return np.where(hit, at, -1).astype(np.int64)


def place_rows(segment_ids: list[np.ndarray], live_ids: np.ndarray) -> list[np.ndarray] | None:
    """The live row of each segment row (-1 for a replaced chunk), or None when inconsistent.

    Args:
        segment_ids: Each segment's chunk ids, ascending, segments in ascending id order.
        live_ids: The chunk ids of the generation, ascending (row ``i`` is ``live_ids[i]``).

    Returns:
        None unless every live chunk is in exactly one segment.
    """
    out, found, last = [], 0, -1
    for ids in segment_ids:
        if ids.size and (int(ids[0]) <= last or (np.diff(ids) <= 0).any()):
            return None
        last = int(ids[-1]) if ids.size else last
        out.append(locate(ids, live_ids))
        found += int((out[-1] >= 0).sum())
    return out if found == live_ids.size else None


class SegmentedPostings:
    """Several segments' postings of one field, read as one :class:`Postings`.

    Args:
        segments: Each segment's postings (documents are its local rows).
        rows: Each segment's live row per local row (:func:`place_rows`).
        n_docs: Live rows in all.
    """

    def __init__(self, segments: list[PostingLists], rows: list[np.ndarray], n_docs: int) -> None:
        self._parts: list[_Placed] = []
        doc_len = np.zeros(n_docs, dtype=np.float32)
        for post, where in zip(segments, rows, strict=True):
            live = where >= 0
            doc_len[where[live]] = post.doc_len[live]
            # Rows that land contiguously need no mapping per query (the common base).
            start = int(where[0]) if where.size else 0
            if live.all() and np.array_equal(where, np.arange(start, start + where.size)):
                self._parts.append(_Placed(post, start, None))
            else:
                self._parts.append(_Placed(post, 0, where.astype(np.int32)))
        self.doc_len = doc_len

    @property
    def n_docs(self) -> int:
        """Number of live documents."""
        return int(self.doc_len.shape[0])

    def column(self, term: str) -> tuple[np.ndarray, np.ndarray]:
        """Live documents (ascending) and term frequencies of ``term`` over every segment."""
        docs, tfs = [], []
        for part in self._parts:
            d, tf = part.post.column(term)
            if d.size == 0:
                continue
            if part.rows is None:
                docs.append(d + np.int32(part.offset) if part.offset else d)
                tfs.append(tf)
            else:
                g = part.rows[d]
                live = g >= 0
                docs.append(g[live])
                tfs.append(tf[live])
        if not docs:
            return _EMPTY.docs, _EMPTY.tf
        if len(docs) == 1:
            return docs[0], tfs[0]
        return np.concatenate(docs), np.concatenate(tfs)


class ReadOnce:
    """A field's postings with each column read once (then kept for this object's life).

    A query reads the text field's columns twice, for BM25 and for coverage;
    read from the segment file, a common term's column is megabytes at 1M chunks.
    """

    def __init__(self, post: PostingLists) -> None:
        self._post = post
        self._columns: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    @property
    def doc_len(self) -> np.ndarray:
        """Number of terms in each document."""
        return self._post.doc_len

    @property
    def n_docs(self) -> int:
        """Number of documents."""
        return self._post.n_docs

    def column(self, term: str) -> tuple[np.ndarray, np.ndarray]:
        """Documents and term frequencies of ``term`` (read on the first call)."""
        if term not in self._columns:
            self._columns[term] = self._post.column(term)
        return self._columns[term]


def compacted(segments: list[Postings], rows: list[np.ndarray]) -> Postings:
    """One :class:`Postings` of the live rows of ``segments`` (as a fresh build would be).

    The segments hold ascending chunk ids one after another, so their live
    rows, kept in order, are the live rows of all of them in order.
    """
    out: Postings | None = None
    for post, where in zip(segments, rows, strict=True):
        live = where >= 0
        part = post if live.all() else post.merged(live, _EMPTY)
        out = part if out is None else out.merged(np.ones(out.n_docs, dtype=bool), part)
    return out if out is not None else _EMPTY
