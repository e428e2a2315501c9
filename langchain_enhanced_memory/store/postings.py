"""The posting lists on disk: segment files a generation names, mapped read-only by searchers.

A segment file is a :mod:`.segment` with its chunks' ids: the four posting
lists of some chunks and those chunks' rows (:mod:`.chunkrows`), written under
a temporary name, flushed and renamed into the side folder (:mod:`.vector_segments`).
The ``catalog`` row ``postings`` names the generation's segments, oldest first,
and commits with the sync that wrote them: a kill before the commit leaves the
previous generation's segments named, and the new file an orphan that the
next run's :func:`sweep` removes (only after a commit, under the writer lock).
A one-file change writes a delta segment of that file's new chunks; the chunks
it replaced stay in their segment, masked out because they left ``chunks``
(:mod:`..core.segments`). Segments are merged as the segments' one policy says
(:func:`.segment.merge_pick`: from the first segment it picks on, to keep ids
ascending), and all of them by ``index --compact``.
"""

from __future__ import annotations

import json
import logging
import mmap
import os
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..core.scoring import FENCE, PostingLists, Postings, term_key
from ..core.segments import SegmentedPostings, place_rows
from .chunkrows import ChunkRows, SegmentRows, place
from .db import chunk_ids, generation_of
from .locations import make_private, open_private
from .segment import (
    FIELDS,
    Layout,
    Segment,
    decode,
    layout_of,
    merge_pick,
    merged,
    postings_of,
    write,
)
from .vector_segments import Fd, FileRows, fsync_dir, sweep

__all__ = [
    "SegmentsMoved",
    "build_postings",
    "compact_postings",
    "live_ids",
    "load_postings",
    "named_segments",
    "open_segments",
    "sweep_segments",
    "write_postings",
]

log = logging.getLogger("langchain_enhanced_memory")

_SUFFIX = ".seg"
# Posting lists up to this size are mapped: a query reads a few columns faster
# from a map than with four preads a term (a 10k-chunk workspace's lists are far
# below it), and the pages it can keep in RSS stay few. Larger ones are read.
READ_ABOVE = 16 << 20
# Chunk rows read from SQLite and encoded at once when a segment is built.
ENCODE_ROWS = 8192


class SegmentsMoved(Exception):
    """The segments this read names were replaced (and removed) by a writer since."""


@dataclass
class _Segment:
    """A segment file (:mod:`.segment`, with its chunk ids, ascending) and its name.

    A writer maps the file (it merges whole arrays); a searcher reads each
    list's columns on demand (:class:`FilePostings`) from a large one.
    """

    name: str
    seg: Segment
    ids: np.ndarray
    reads: dict[str, FilePostings] | None = None

    @property
    def posts(self) -> dict[str, Postings]:
        """Its four posting lists."""
        return self.seg.posts

    @property
    def rows(self) -> SegmentRows:
        """Its chunk rows."""
        return self.seg.rows

    @classmethod
    def open(cls, folder: Path, name: str, searcher: bool = False) -> _Segment | None:
        """Open a segment file; None when it is missing or damaged (its rows too)."""
        try:
            with open(folder / name, "rb") as fh:
                buf = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
            layout = layout_of(buf)
            seg = decode(buf, layout)
            if seg.ids is None:
                return None
            reads = None
            # Small lists stay a map (the rows are mapped whatever the size).
            listed = sum(p.nbytes for post in seg.posts.values() for p in _arrays(post))
            if searcher and listed >= READ_ABOVE:
                fd = Fd.open(folder / name)
                reads = {f: FilePostings(fd, layout, f, seg.posts[f]) for f in FIELDS}
            ids = np.array(seg.ids) if searcher else seg.ids
            return cls(name=name, seg=seg, ids=ids, reads=reads)
        except (OSError, ValueError):
            return None

    def searched(self) -> dict[str, PostingLists]:
        """The lists a searcher scores (read on demand when the file has fences)."""
        return dict(self.reads) if self.reads else dict(self.posts)


def _arrays(post: Postings) -> list[np.ndarray]:
    arrays = [post.keys, post.indptr, post.docs, post.tf, post.doc_len]
    return arrays if post.fence is None else [*arrays, post.fence]


class FilePostings:
    """One field's posting lists, each column read from the segment file when asked for.

    Through a map, every page a query touches stays in the process's RSS (and
    the kernel maps 64 KB around it): at 100k chunks a few dozen queries map
    most of the file (docs/design.md, "Read columns with pread"). Read with
    ``pread``, the pages stay in the page cache (shared, not counted) and a
    query holds only its own columns. The fence
    and the document lengths are small and copied into memory.
    """

    def __init__(self, fd: Fd, layout: Layout, name: str, mapped: Postings) -> None:
        def rows(part: str) -> FileRows:
            dtype, shape, offset = layout[f"post.{name}.{part}"]
            return FileRows(fd, offset, shape[0], dtype, ())

        self._keys, self._indptr = rows("keys"), rows("indptr")
        self._docs, self._tf = rows("docs"), rows("tf")
        if mapped.fence is None:
            raise ValueError(f"the {name} lists have no fence")
        self._fence = np.array(mapped.fence)
        self.doc_len = np.array(mapped.doc_len)

    @property
    def n_docs(self) -> int:
        """Number of documents."""
        return int(self.doc_len.shape[0])

    def column(self, term: str) -> tuple[np.ndarray, np.ndarray]:
        """Documents and term frequencies of ``term`` (empty when unknown): four reads."""
        key = np.uint64(term_key(term))
        lo = max(int(np.searchsorted(self._fence, key, "right")) - 1, 0) * FENCE
        block = self._keys.span(lo, min(lo + FENCE, self._keys.shape[0]))
        t = int(np.searchsorted(block, key))
        if t >= block.size or block[t] != key:
            return self._docs.span(0, 0), self._tf.span(0, 0)
        start, end = self._indptr.span(lo + t, lo + t + 2).tolist()
        return self._docs.span(start, end), self._tf.span(start, end)


def _write_segment(folder: Path, generation: int, seg: Segment) -> _Segment:
    """Write a segment file (temporary name, flushed, renamed) and map it."""
    name = f"post-g{generation}-{os.urandom(4).hex()}{_SUFFIX}"
    make_private(folder)
    tmp = folder / f".tmp-{name}"
    with os.fdopen(open_private(tmp, os.O_WRONLY | os.O_TRUNC), "wb") as fh:
        write(fh, seg)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, folder / name)
    fsync_dir(folder)
    opened = _Segment.open(folder, name)
    if opened is None:
        raise OSError(f"segment file {name} did not read back")
    return opened


def named_segments(conn: sqlite3.Connection) -> tuple[list[str], int] | None:
    """The segment files the ``catalog`` row names, and the highest chunk id they ever held.

    None when the row is missing or not a list of segments (they are then built again).
    """
    row = conn.execute("SELECT data FROM catalog WHERE name='postings'").fetchone()
    if row is None:
        return None
    try:
        state = json.loads(row[0])
        return [str(s) for s in state["segments"]], int(state["last_id"])
    except (TypeError, ValueError, KeyError, UnicodeDecodeError):
        return None


def open_segments(folder: Path, names: list[str], searcher: bool = False) -> list[_Segment] | None:
    """Open the named segment files; None when one is missing or damaged."""
    segments = [_Segment.open(folder, name, searcher) for name in names]
    return None if any(s is None for s in segments) else segments  # type: ignore[return-value]


def build_postings(conn: sqlite3.Connection, where: str, args: tuple) -> dict[str, Postings]:
    """The four posting lists of the chunks ``where`` selects, from their stored terms."""
    query = f"SELECT terms, headers, path FROM chunks {where} ORDER BY id"
    return postings_of(conn.execute(query, args))


def _built(conn: sqlite3.Connection, where: str, args: tuple, ids: np.ndarray) -> Segment:
    """The segment of the chunks ``where`` selects (``ids``): their posting lists and rows."""
    # The lists first: their build's peak comes before the rows are held.
    posts = build_postings(conn, where, args)
    query = f"SELECT path, start_line, end_line, header, headers, text FROM chunks {where}"
    cursor = conn.execute(query + " ORDER BY id", args)
    # In parts: the rows as Python strings are many times their encoded size.
    parts = [SegmentRows.build(rows) for rows in iter(lambda: cursor.fetchmany(ENCODE_ROWS), [])]
    rows = SegmentRows.concat(parts) if parts else SegmentRows.build([])
    return Segment(rows, posts, ids=np.asarray(ids, dtype=np.int64))


def live_ids(conn: sqlite3.Connection) -> np.ndarray:
    """The generation's chunk ids, ascending: the copy the sync kept, else from ``chunks``.

    Reading the ids from ``chunks`` scans the whole table, a cost that grows with
    it; the sync that named the segments stores them with them.
    """
    row = conn.execute("SELECT generation, data FROM catalog WHERE name='live'").fetchone()
    kept = row is not None and row[0] == generation_of(conn) and isinstance(row[1], bytes)
    if kept and len(row[1]) % 8 == 0:
        return np.frombuffer(row[1], dtype=np.int64)
    return chunk_ids(conn)


def load_postings(
    conn: sqlite3.Connection,
    folder: Path,
    live_ids: np.ndarray,
    moved: Callable[[list[str]], bool],
) -> tuple[dict[str, PostingLists], ChunkRows | None]:
    """The generation's four posting lists and its rows, from its mapped segments.

    Each list is read as one over the segments; the rows are None when the
    segments are not there (then read from SQLite).

    When a named segment will not open and ``moved(names)`` says a writer
    named others since this read began, :class:`SegmentsMoved` is raised (read
    again). Otherwise, when the named segments are not there (a file gone or
    damaged), they are built in memory from the stored terms, the same lists.
    """
    named = named_segments(conn)
    segments = open_segments(folder, named[0], searcher=True) if named else None
    if named and segments is None and moved(named[0]):
        raise SegmentsMoved(named[0])
    rows = place_rows([s.ids for s in segments], live_ids) if segments is not None else None
    if segments is None or rows is None:
        if live_ids.size:
            log.debug("postings segments missing: built from the stored terms")
        return dict(build_postings(conn, "", ())), None
    chunks = place([s.rows for s in segments], rows, live_ids.size)
    if len(segments) == 1 and rows[0].size == live_ids.size:
        return segments[0].searched(), chunks  # one segment, every row live: the lists as they are
    lists = [s.searched() for s in segments]
    posts = {f: SegmentedPostings([x[f] for x in lists], rows, live_ids.size) for f in FIELDS}
    return dict(posts), chunks


def write_postings(
    conn: sqlite3.Connection, folder: Path, generation: int, first_new_id: int | None
) -> None:
    """Name ``generation``'s segments in ``catalog`` (inside the sync's transaction).

    Args:
        conn: The connection, inside the sync's transaction.
        folder: The side folder.
        generation: The generation being written.
        first_new_id: Chunk ids from here on are the sync's new chunks, and the
            previous generation's segments still describe every other chunk;
            None rebuilds one segment from every chunk's stored terms.
    """
    named = named_segments(conn) if first_new_id is not None else None
    segments = open_segments(folder, named[0]) if named else None
    live = chunk_ids(conn)
    if segments is not None:
        if place_rows([s.ids for s in segments], live[live < first_new_id]) is None:
            segments = None
    if segments is None:
        segments = [_write_segment(folder, generation, _built(conn, "", (), live))]
    else:
        new = live[live >= first_new_id]
        if new.size:
            added = _built(conn, "WHERE id >= ?", (first_new_id,), new)
            segments.append(_write_segment(folder, generation, added))
        segments = _merged(folder, generation, segments, live)
    last_id = max([int(live[-1]) if live.size else 0] + [named[1] if named else 0])
    state = {"segments": [s.name for s in segments], "last_id": last_id}
    conn.execute(
        "INSERT OR REPLACE INTO catalog VALUES ('postings', ?, ?), ('live', ?, ?)",
        (generation, json.dumps(state), generation, live.astype(np.int64).tobytes()),
    )


def _merged(
    folder: Path, generation: int, segments: list[_Segment], live: np.ndarray, full: bool = False
) -> list[_Segment]:
    """``segments`` with a suffix merged into one when the policy (or ``full``) says so."""
    rows = place_rows([s.ids for s in segments], live)
    assert rows is not None  # the caller checked the old segments and added the new chunks
    stored = [r.size for r in rows]
    pick = (
        list(range(len(rows))) if full else merge_pick(stored, [int((r >= 0).sum()) for r in rows])
    )
    if not pick:
        return segments
    start = pick[0]  # the files keep ascending chunk ids: from the first picked on, all merge
    if len(segments) - start == 1 and (rows[start] >= 0).all():
        return segments
    one = merged([s.seg for s in segments[start:]], [r >= 0 for r in rows[start:]])
    return [*segments[:start], _write_segment(folder, generation, one)]


def compact_postings(conn: sqlite3.Connection, folder: Path) -> None:
    """Merge the named segments into one (``index --compact``; writer lock held)."""
    named = named_segments(conn)
    segments = open_segments(folder, named[0]) if named else None
    live = chunk_ids(conn)
    if named is None or segments is None or place_rows([s.ids for s in segments], live) is None:
        return  # the next sync rebuilds them
    merged = _merged(folder, generation_of(conn), segments, live, full=True)
    state = {"segments": [s.name for s in merged], "last_id": named[1]}
    conn.execute("UPDATE catalog SET data=? WHERE name='postings'", (json.dumps(state),))


def sweep_segments(conn: sqlite3.Connection, folder: Path) -> int:
    """Remove segment files the ``catalog`` row does not name (after a commit, lock held)."""
    named = named_segments(conn)
    return sweep(folder, set(named[0]) if named else set(), suffix=_SUFFIX)
