"""Segments: immutable blobs holding some files' chunk rows, postings and vectors.

A segment is what the local store keeps in its segment files, for the chunks
of some files of one scope: their rows (:class:`..chunkrows.SegmentRows`),
each file's kind and date, the four posting lists built by the builder the
local sync uses (:func:`..postings.postings_of`, from the chunks' stored
terms) and, when the scope has a model, the chunk and line vectors as a
:class:`..core.vectorset.VectorPart` (int8 rows and scales). It is written
once (a JSON layout, then the arrays' bytes: numbers only, read back as views of
the blob without a copy or a pickle) and never changed.

A scope's generation is the live rows of its segments, segment by segment in
id order: row ``i`` of a segment is live when ``em_files`` names that segment
for the row's file. :func:`assemble` reads them as one
:class:`..core.snapshot.Snapshot` exactly as the local store reads its own
segment files (``SegmentedPostings``, ``place``, ``VectorSet`` of the parts), so
ranking is the same code over the same arrays.
"""

from __future__ import annotations

import json
import mmap
import sqlite3
from dataclasses import dataclass, replace

import numpy as np

from ...core.scoring import PostingLists, Postings
from ...core.segments import SegmentedPostings, compacted
from ...core.snapshot import Snapshot, file_facts, row_columns
from ...core.strings import Strings
from ...core.vectorset import VectorPart, VectorSet
from ..chunkrows import SegmentRows, place
from ..postings import FIELDS, postings_of

__all__ = ["Segment", "assemble", "decode", "encode", "from_snapshot", "merged"]

_MAGIC = b"EMB1"
_POSTING_PARTS = ("keys", "indptr", "docs", "tf", "doc_len")
_VECTOR_PARTS = ("matrix", "scale", "lines", "line_scale", "owner")


@dataclass(frozen=True)
class Segment:
    """Some files' chunks: rows, per-file kind and date, postings, and vectors (or none).

    ``kinds[j]`` and ``dates[j]`` are those of ``rows.paths[j]`` (a date is ``""``
    for an undated file).
    """

    rows: SegmentRows
    kinds: list[str]
    dates: list[str]
    posts: dict[str, Postings]
    vectors: VectorPart | None

    @property
    def chunks(self) -> int:
        """Number of chunk rows."""
        return int(self.rows.start.size)

    def names(self) -> list[str]:
        """The paths of its file table."""
        return self.rows.paths.tolist()


def encode(seg: Segment) -> bytes:
    """The segment as a blob: a JSON layout, then each array's bytes, 8-byte aligned."""
    arrays = dict(seg.rows.arrays())
    for name, values in (("kind", seg.kinds), ("date", seg.dates)):
        s = Strings.encode(values)
        arrays[f"file.{name}.data"], arrays[f"file.{name}.offsets"] = s.data, s.offsets
    for f in FIELDS:
        arrays |= {f"post.{f}.{p}": getattr(seg.posts[f], p) for p in _POSTING_PARTS}
    if seg.vectors is not None:
        for p in _VECTOR_PARTS:
            value = getattr(seg.vectors, p)
            if value is not None:
                arrays[f"vec.{p}"] = np.asarray(value)
    layout, parts, offset = [], [], 0
    for key, value in arrays.items():
        a = np.ascontiguousarray(value)
        layout.append([key, a.dtype.str, list(a.shape), offset])
        parts += [a.tobytes(), b"\0" * (-a.nbytes % 8)]
        offset += a.nbytes + len(parts[-1])
    head = json.dumps(layout).encode()
    head += b" " * (-(len(head) + 8) % 8)
    return b"".join([_MAGIC, len(head).to_bytes(4, "little"), head, *parts])


def _arrays(blob: bytes | mmap.mmap) -> dict[str, np.ndarray]:
    """The arrays of :func:`encode`'s blob: read-only views of it, nothing copied."""
    if blob[:4] != _MAGIC:
        raise ValueError("unknown format")
    size = int.from_bytes(blob[4:8], "little")
    base = 8 + size
    out = {}
    for key, dtype, shape, at in json.loads(blob[8:base]):
        kind = np.dtype(dtype)
        if kind.kind not in "biuf":  # numbers only: never objects
            raise ValueError(f"array {key} is of type {dtype}")
        count = int(np.prod(shape, dtype=np.int64))
        out[key] = np.frombuffer(blob, kind, count, base + int(at)).reshape(shape)
    return out


def decode(blob: bytes | mmap.mmap) -> Segment:
    """A segment from :func:`encode`'s blob (its arrays are read-only views of the blob).

    Raises:
        ValueError: The blob is not a segment (damaged, or of another format).
    """
    try:
        arrays = _arrays(blob)
        posts = {
            f: Postings(**{p: arrays[f"post.{f}.{p}"] for p in _POSTING_PARTS}) for f in FIELDS
        }
        table = {
            name: Strings(arrays[f"file.{name}.data"], arrays[f"file.{name}.offsets"]).tolist()
            for name in ("kind", "date")
        }
        vectors = None
        if "vec.matrix" in arrays:
            got = {p: arrays.get(f"vec.{p}") for p in _VECTOR_PARTS}
            n = int(arrays["vec.matrix"].shape[0])
            vectors = VectorPart(rows=np.arange(n, dtype=np.int64), **got)  # type: ignore[arg-type]
        rows = SegmentRows.from_arrays(arrays, int(arrays["row.start"].size))
    except (ValueError, KeyError, TypeError, UnicodeDecodeError) as exc:
        raise ValueError(f"not a segment: {exc}") from None
    if rows is None:
        raise ValueError("not a segment: its rows do not fit")
    return Segment(rows, table["kind"], table["date"], posts, vectors)


def from_snapshot(lite: sqlite3.Connection, snap: Snapshot, rows: np.ndarray) -> Segment:
    """The segment of ``snap``'s ``rows`` (ascending: some files' chunks) of a local index.

    The postings are built from the chunks' stored terms (``lite``, the index's
    SQLite file, read in the generation ``snap`` is of) by the local sync's own
    builder; the vectors are ``snap``'s (all of them: :meth:`VectorSet.take`).

    Raises:
        ValueError: A chunk's terms are not in the index (it moved on: read again).
    """
    picked = rows.tolist()
    paths = [snap.paths[i] for i in picked]
    terms: dict[int, str] = {}
    # The file's own kind and date (a transcript chunk's row is dated by its
    # messages: row_columns dates it again from its header, as the index does).
    table: dict[str, tuple[str, str]] = {}
    for path in dict.fromkeys(paths):
        terms.update(lite.execute("SELECT id, terms FROM chunks WHERE path=?", (path,)))
        for kind, day in lite.execute("SELECT kind, date FROM files WHERE path=?", (path,)):
            table[path] = (kind, day or "")
    ids = snap.ids[rows].tolist()
    if any(i not in terms for i in ids) or len(table) != len(set(paths)):
        raise ValueError("the index moved on while it was read")
    posts = postings_of(
        (terms[i], snap.headers[r], p) for i, r, p in zip(ids, picked, paths, strict=True)
    )
    seg_rows = SegmentRows.build(
        [
            (
                p,
                int(snap.start[r]),
                int(snap.end[r]),
                snap.header[r],
                snap.headers[r],
                snap.texts[r],
            )
            for r, p in zip(picked, paths, strict=True)
        ]
    )
    return Segment(
        rows=seg_rows,
        kinds=[kind for kind, _ in table.values()],
        dates=[day for _, day in table.values()],
        posts=posts,
        vectors=None if snap.vectors is None else snap.vectors.take(rows),
    )


def _places(live: list[np.ndarray]) -> tuple[list[np.ndarray], int]:
    """Each segment row's live row (-1: not live), segment after segment; and the count."""
    out, n = [], 0
    for mask in live:
        where = np.full(mask.size, -1, dtype=np.int64)
        count = int(mask.sum())
        where[mask] = np.arange(n, n + count)
        out.append(where)
        n += count
    return out, n


def live_rows(seg: Segment, live_paths: set[str]) -> np.ndarray:
    """Which rows of ``seg`` are live: those of the files ``em_files`` names it for."""
    table = np.fromiter((name in live_paths for name in seg.names()), bool, len(seg.kinds))
    return table[seg.rows.path] if seg.chunks else np.zeros(0, dtype=bool)


def merged(segments: list[Segment], live: list[np.ndarray]) -> Segment:
    """One segment of the live rows of ``segments`` (in order), as a fresh build of them."""
    where, n = _places(live)
    rows = SegmentRows.concat(
        [s.rows.take(np.flatnonzero(m)) for s, m in zip(segments, live, strict=True)]
    )
    facts: dict[str, tuple[str, str]] = {}
    for s in segments:
        facts.update(zip(s.names(), zip(s.kinds, s.dates, strict=True), strict=True))
    names = rows.paths.tolist()
    posts = {f: compacted([s.posts[f] for s in segments], where) for f in FIELDS}
    vectors = None
    if all(s.vectors is not None for s in segments):
        parts = [
            replace(s.vectors, rows=w) for s, w in zip(segments, where, strict=True) if s.vectors
        ]
        vectors = VectorSet(parts, n).take(np.arange(n))
    return Segment(rows, [facts[p][0] for p in names], [facts[p][1] for p in names], posts, vectors)


def assemble(
    generation: int, segments: list[Segment], live: list[np.ndarray], model: str | None
) -> Snapshot:
    """The snapshot of the live rows of ``segments``, with their vectors when ``model`` is set.

    Args:
        generation: The scope's generation.
        segments: Its segments, in id order.
        live: Each segment's live rows (:func:`live_rows`).
        model: The scope's model (None: no vectors); vectors are left out unless
            every segment has them.
    """
    where, n = _places(live)
    chunks = place([s.rows for s in segments], where, n)
    table = [
        file_facts(*facts)
        for s in segments
        for facts in zip(s.names(), s.kinds, s.dates, strict=True)
    ]
    of_row = np.asarray(chunks.path, dtype=np.intp)
    paths, kinds, dates, day = row_columns(table, of_row, chunks.header)
    if len(segments) == 1 and bool(live[0].all()):
        posts: dict[str, PostingLists] = dict(segments[0].posts)  # the lists as they are
    else:
        posts = {f: SegmentedPostings([s.posts[f] for s in segments], where, n) for f in FIELDS}
    snap = Snapshot(
        generation=generation,
        ids=np.arange(n, dtype=np.int64),
        paths=paths,
        start=chunks.start,
        end=chunks.end,
        header=chunks.header,
        headers=chunks.headers,
        texts=chunks.texts,
        kinds=kinds,
        dates=dates,
        day=day,
        text_post=posts["text"],
        phrase_post=posts["phrase"],
        header_post=posts["header"],
        path_post=posts["path"],
    )
    if model is None or not segments or any(s.vectors is None for s in segments):
        return snap
    parts = [replace(s.vectors, rows=w) for s, w in zip(segments, where, strict=True) if s.vectors]
    return snap.with_vectors(VectorSet(parts, n), model)
