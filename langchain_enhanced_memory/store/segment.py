"""The segment: some chunks' rows, posting lists, file facts and vectors, written once.

Both stores keep their index as segments of this one format: the embedded
store in segment files a generation names (:mod:`.postings`), a PostgreSQL
scope in ``em_segments`` rows (:mod:`.database`). A segment holds its chunks'
rows (:class:`.chunkrows.SegmentRows`), the four posting lists
(:func:`postings_of`, from the chunks' stored terms, header chains and
paths) with their fences, and, as a store needs them, the chunks' ids (the
embedded store's), each file's kind and date (a scope's, which has no other
table of them) and the chunk and line vectors (a
:class:`..core.vectorset.VectorPart`). It is encoded once (a JSON layout,
then each array's bytes, 8-byte aligned: numbers only, read back as views of
the buffer without a copy or a pickle) and never changed.

One merge policy (:func:`merge_pick`) says when a store rewrites which of its
segments as one (:func:`merged`); one :func:`snapshot_of` makes the
:class:`..core.snapshot.Snapshot` ranking reads from a store's live rows, so
both stores rank the same arrays, transcript turns dated by their messages
(:func:`..core.snapshot.row_columns`).
"""

from __future__ import annotations

import dataclasses
import json
import mmap
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import IO

import numpy as np

from ..core.scoring import FENCE, PostingLists, Postings
from ..core.segments import SegmentedPostings, compacted
from ..core.snapshot import FileFacts, Snapshot, file_facts, row_columns
from ..core.strings import Strings
from ..core.text import PHRASE_SEP, path_text, tokenize
from ..core.vectorset import VectorPart, VectorSet
from .chunkrows import ChunkRows, SegmentRows, place

__all__ = [
    "FIELDS",
    "MAX_SEGMENTS",
    "MERGE_SHARE",
    "POSTINGS_FORMAT",
    "SEGMENT_CHUNKS",
    "Segment",
    "assemble",
    "decode",
    "encode",
    "layout_of",
    "live_rows",
    "merge_pick",
    "merged",
    "postings_of",
    "snapshot_of",
    "to_bytes",
]

FIELDS = ("text", "phrase", "header", "path")
#: How terms become posting lists (2: hashed term keys instead of a vocabulary list);
#: part of the chunker's signature, so a change re-chunks every index and scope.
POSTINGS_FORMAT = 2
_PARTS = ("keys", "indptr", "docs", "tf", "doc_len")
_VECTOR_PARTS = ("matrix", "scale", "lines", "line_scale", "owner")
_MAGIC = b"EMB1"
# The embedded store's first format: the same arrays, 1-d, posting lists named without "post.".
_MAGIC_FILE_V1 = b"EMS1"
#: More segments than this, or replaced rows past this share of all rows, start a merge.
MAX_SEGMENTS = 8
MERGE_SHARE = 0.125
#: A segment with this many live rows or more, most of them live, is left out of merges
#: (a scope's first publish is split in segments of about this size).
SEGMENT_CHUNKS = 20_000
# Terms whose text and phrase lists are built at once; more are built in parts and merged.
BUILD_TERMS = 1 << 19

#: Where each array of an encoded segment lies: name -> (dtype, shape, byte offset).
Layout = dict[str, tuple[np.dtype, tuple[int, ...], int]]


@dataclass(frozen=True)
class Segment:
    """Some chunks: rows and postings; ids, file facts and vectors when a store keeps them.

    ``kinds[j]`` and ``dates[j]`` are those of ``rows.paths[j]`` (a date is ``""``
    for an undated file).
    """

    rows: SegmentRows
    posts: dict[str, Postings]
    ids: np.ndarray | None = None
    kinds: list[str] | None = None
    dates: list[str] | None = None
    vectors: VectorPart | None = None

    @property
    def chunks(self) -> int:
        """Number of chunk rows."""
        return int(self.rows.start.size)

    def names(self) -> list[str]:
        """The paths of its file table."""
        return self.rows.paths.tolist()


def _arrays(seg: Segment) -> dict[str, np.ndarray]:
    arrays = {} if seg.ids is None else {"ids": np.asarray(seg.ids, dtype=np.int64)}
    arrays |= {f"post.{f}.{p}": getattr(seg.posts[f], p) for f in FIELDS for p in _PARTS}
    arrays |= {f"post.{f}.fence": seg.posts[f].keys[::FENCE] for f in FIELDS}
    arrays |= seg.rows.arrays()
    for name, values in (("kind", seg.kinds), ("date", seg.dates)):
        if values is not None:
            s = Strings.encode(values)
            arrays[f"file.{name}.data"], arrays[f"file.{name}.offsets"] = s.data, s.offsets
    if seg.vectors is not None:
        for p in _VECTOR_PARTS:
            value = getattr(seg.vectors, p)
            if value is not None:
                arrays[f"vec.{p}"] = np.asarray(value)
    return arrays


def encode(seg: Segment) -> tuple[bytes, list[np.ndarray]]:
    """The segment's head (magic, layout) and its arrays, in the order they follow it."""
    arrays = {key: np.ascontiguousarray(a) for key, a in _arrays(seg).items()}
    layout, offset = [], 0
    for key, a in arrays.items():
        layout.append([key, a.dtype.str, list(a.shape), offset])
        offset += a.nbytes + -a.nbytes % 8
    head = json.dumps(layout).encode()
    head += b" " * (-(len(head) + 8) % 8)
    return _MAGIC + len(head).to_bytes(4, "little") + head, list(arrays.values())


def write(fh: IO[bytes], seg: Segment) -> None:
    """Write the segment to ``fh``, each array as it is (no copy of the segment in memory)."""
    head, arrays = encode(seg)
    fh.write(head)
    for a in arrays:
        fh.write(a.data.cast("B"))
        fh.write(b"\0" * (-a.nbytes % 8))


def to_bytes(seg: Segment) -> bytes:
    """The segment as one blob (what a database row holds)."""
    head, arrays = encode(seg)
    parts = [head]
    for a in arrays:
        parts += [a.tobytes(), b"\0" * (-a.nbytes % 8)]
    return b"".join(parts)


def layout_of(buf: bytes | mmap.mmap) -> Layout:
    """Where each array of an encoded segment lies.

    Raises:
        ValueError: Not a segment (damaged, or of another format).
    """
    magic = buf[:4]
    if magic not in (_MAGIC, _MAGIC_FILE_V1):
        raise ValueError("unknown format")
    base = 8 + int.from_bytes(buf[4:8], "little")
    out: Layout = {}
    for key, dtype, shape, at in json.loads(buf[8:base]):
        kind = np.dtype(dtype)
        if kind.kind not in "biuf":  # numbers only: never objects
            raise ValueError(f"array {key} is of type {dtype}")
        if magic == _MAGIC_FILE_V1:
            shape = [shape]
            key = f"post.{key}" if key.split(".")[0] in FIELDS else key
        out[key] = (kind, tuple(int(s) for s in shape), base + int(at))
    return out


def decode(buf: bytes | mmap.mmap, layout: Layout | None = None) -> Segment:
    """A segment from its encoding (its arrays are read-only views of ``buf``).

    Raises:
        ValueError: ``buf`` is not a segment (damaged, or of another format).
    """
    try:
        layout = layout or layout_of(buf)
        arrays = {
            key: np.frombuffer(buf, kind, int(np.prod(shape, dtype=np.int64)), at).reshape(shape)
            for key, (kind, shape, at) in layout.items()
        }
        posts = {f: _postings(arrays, f) for f in FIELDS}
        table: dict[str, list[str] | None] = {
            name: Strings(arrays[f"file.{name}.data"], arrays[f"file.{name}.offsets"]).tolist()
            if f"file.{name}.data" in arrays
            else None
            for name in ("kind", "date")
        }
        vectors = None
        if "vec.matrix" in arrays:
            got = {p: arrays.get(f"vec.{p}") for p in _VECTOR_PARTS}
            n = len(arrays["vec.matrix"])
            vectors = VectorPart(rows=np.arange(n, dtype=np.int64), **got)  # type: ignore[arg-type]
        rows = SegmentRows.from_arrays(arrays, int(arrays["row.start"].size))
    except (ValueError, KeyError, TypeError, UnicodeDecodeError) as exc:
        raise ValueError(f"not a segment: {exc}") from None
    if rows is None or ("ids" in arrays and arrays["ids"].size != rows.start.size):
        raise ValueError("not a segment: its rows do not fit")
    return Segment(rows, posts, arrays.get("ids"), table["kind"], table["date"], vectors)


def _postings(arrays: dict[str, np.ndarray], name: str) -> Postings:
    """One field's posting lists, with their fence when written (one that does not fit: damaged)."""
    post = Postings(**{p: arrays[f"post.{name}.{p}"] for p in _PARTS})
    fence = arrays.get(f"post.{name}.fence")
    if fence is None:  # a scope's segment written before fences
        return post
    if fence.size != -(-post.keys.size // FENCE):
        raise ValueError(f"the {name} fence does not fit its keys")
    return dataclasses.replace(post, fence=fence)


def postings_of(rows: Iterable[tuple[str, str, str]]) -> dict[str, Postings]:
    """The four posting lists of chunks from their stored terms, header chains and paths.

    The text and phrase lists are built a part of about :data:`BUILD_TERMS`
    terms at a time and merged (parts of equal size first, so each entry is
    merged a logarithmic number of times): a long note's terms as strings and
    the sorts of their ids would take many times the size of the lists.
    """
    headers: list[str] = []
    paths: list[str] = []
    parts: list[tuple[int, Postings, Postings]] = []  # (level, text, phrase), levels descending
    batch: list[list[str]] = []
    size = 0
    for terms, header, path in rows:
        headers.append(header)
        paths.append(path)
        batch.append(terms.split())
        size += len(batch[-1])
        if size >= BUILD_TERMS:
            _add_part(parts, batch)
            batch, size = [], 0
    if batch or not parts:
        _add_part(parts, batch)
    _, text, phrase = parts.pop()
    while parts:
        _, older_text, older_phrase = parts.pop()
        text, phrase = _then(older_text, text), _then(older_phrase, phrase)
    # Header chains and paths repeat across chunks: tokenize each distinct one once.
    header_terms = {h: tokenize(h) for h in set(headers)}
    path_terms = {p: tokenize(path_text(p)) for p in set(paths)}
    return {
        "text": text,
        "phrase": phrase,
        "header": Postings.build(header_terms[h] for h in headers),
        "path": Postings.build(path_terms[p] for p in paths),
    }


def _add_part(parts: list[tuple[int, Postings, Postings]], batch: list[list[str]]) -> None:
    """Build the text and phrase lists of ``batch`` and merge equal levels (a binary counter)."""
    # The phrase pairs come from the text's term ids: each terms string split once.
    text, phrase = Postings.build_with_pairs(batch, PHRASE_SEP)
    level = 0
    while parts and parts[-1][0] == level:
        _, older_text, older_phrase = parts.pop()
        text, phrase = _then(older_text, text), _then(older_phrase, phrase)
        level += 1
    parts.append((level, text, phrase))


def _then(first: Postings, then: Postings) -> Postings:
    """The lists of ``first``'s documents, then ``then``'s (as one build of both).

    :meth:`.Postings.merged` with every document kept, in a few arrays the size
    of the postings instead of a dozen: a long transcript's last merges are the
    cold build's peak memory.
    """
    keys = np.union1d(first.keys, then.keys)
    at = [np.searchsorted(keys, p.keys) for p in (first, then)]
    counts = [np.diff(p.indptr) for p in (first, then)]
    before = np.zeros(keys.size, dtype=np.int64)  # first's entries of each term
    before[at[0]] = counts[0]
    per_term = before.copy()
    per_term[at[1]] += counts[1]
    indptr = np.zeros(keys.size + 1, dtype=np.int64)
    np.cumsum(per_term, out=indptr[1:])
    docs = np.empty(int(indptr[-1]), dtype=np.int32)
    tf = np.empty(int(indptr[-1]), dtype=np.float32)
    # Each column moves whole: its entry j goes to its term's start (after first's) plus j.
    for p, where, n, offset, shift in (
        (first, at[0], counts[0], 0, 0),
        (then, at[1], counts[1], first.n_docs, before[at[1]]),
    ):
        dest = np.repeat(indptr[where] + shift - p.indptr[:-1], n)
        dest += np.arange(dest.size)
        docs[dest] = p.docs + offset if offset else p.docs
        tf[dest] = p.tf
        del dest
    doc_len = np.concatenate([first.doc_len, then.doc_len]).astype(np.float32)
    return Postings(keys=keys, indptr=indptr, docs=docs, tf=tf, doc_len=doc_len)


def merge_pick(stored: Sequence[int], live: Sequence[int]) -> list[int]:
    """Which segments to rewrite as one (empty: none), from each one's rows and live rows.

    Nothing until there are more than :data:`MAX_SEGMENTS` segments or the
    replaced rows pass :data:`MERGE_SHARE` of all rows; then every segment
    that is small (under :data:`SEGMENT_CHUNKS` live rows) or mostly replaced.
    """
    total = sum(stored)
    dead = total - sum(live)
    if len(stored) <= MAX_SEGMENTS and dead <= MERGE_SHARE * total:
        return []
    pick = [
        i
        for i, (s, n) in enumerate(zip(stored, live, strict=True))
        if n < SEGMENT_CHUNKS or n < (1 - MERGE_SHARE) * s
    ]
    return pick if len(pick) >= 2 or (pick and dead) else []


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
    """Which rows of ``seg`` are live: those of the files ``live_paths`` names it for."""
    table = np.fromiter((name in live_paths for name in seg.names()), bool, len(seg.rows.paths))
    return table[seg.rows.path] if seg.chunks else np.zeros(0, dtype=bool)


def merged(segments: list[Segment], live: list[np.ndarray]) -> Segment:
    """One segment of the live rows of ``segments`` (in order), as a fresh build of them.

    Ids, file facts and vectors are kept when every segment has them.
    """
    where, n = _places(live)
    keep = [np.flatnonzero(m) for m in live]
    rows = SegmentRows.concat([s.rows.take(k) for s, k in zip(segments, keep, strict=True)])
    posts = {f: compacted([s.posts[f] for s in segments], where) for f in FIELDS}
    ids = None
    if all(s.ids is not None for s in segments):
        ids = np.concatenate(
            [s.ids[k] for s, k in zip(segments, keep, strict=True) if s.ids is not None]
        )
    kinds = dates = None
    if all(s.kinds is not None and s.dates is not None for s in segments):
        facts: dict[str, tuple[str, str]] = {}
        for s in segments:
            facts.update(
                zip(s.names(), zip(s.kinds or [], s.dates or [], strict=True), strict=True)
            )
        names = rows.paths.tolist()
        kinds, dates = [facts[p][0] for p in names], [facts[p][1] for p in names]
    vectors = None
    if all(s.vectors is not None for s in segments):
        parts = [
            dataclasses.replace(s.vectors, rows=w)
            for s, w in zip(segments, where, strict=True)
            if s.vectors
        ]
        vectors = VectorSet(parts, n).take(np.arange(n))
    return Segment(rows, posts, ids, kinds, dates, vectors)


def snapshot_of(
    generation: int,
    ids: np.ndarray,
    rows: ChunkRows,
    table: Sequence[FileFacts],
    posts: dict[str, PostingLists],
) -> Snapshot:
    """The snapshot of a store's live rows (``rows.path`` indexes ``table``) and postings."""
    of_row = np.asarray(rows.path, dtype=np.intp)
    paths, kinds, dates, day = row_columns(table, of_row, rows.header)
    return Snapshot(
        generation=generation,
        ids=ids,
        paths=paths,
        start=rows.start,
        end=rows.end,
        header=rows.header,
        headers=rows.headers,
        texts=rows.texts,
        kinds=kinds,
        dates=dates,
        day=day,
        text_post=posts["text"],
        phrase_post=posts["phrase"],
        header_post=posts["header"],
        path_post=posts["path"],
    )


def assemble(
    generation: int, segments: list[Segment], live: list[np.ndarray], model: str | None
) -> Snapshot:
    """The snapshot of the live rows of segments with file facts, with vectors when ``model``.

    Args:
        generation: The store's generation.
        segments: Its segments, in order.
        live: Each segment's live rows (:func:`live_rows`).
        model: The model of the vectors (None: no vectors); vectors are left out
            unless every segment has them.
    """
    where, n = _places(live)
    chunks = place([s.rows for s in segments], where, n)
    table = [
        file_facts(*facts)
        for s in segments
        for facts in zip(s.names(), s.kinds or [], s.dates or [], strict=True)
    ]
    if len(segments) == 1 and bool(live[0].all()):
        posts: dict[str, PostingLists] = dict(segments[0].posts)  # the lists as they are
    else:
        posts = {f: SegmentedPostings([s.posts[f] for s in segments], where, n) for f in FIELDS}
    snap = snapshot_of(generation, np.arange(n, dtype=np.int64), chunks, table, posts)
    if model is None or not segments or any(s.vectors is None for s in segments):
        return snap
    parts = [
        dataclasses.replace(s.vectors, rows=w)
        for s, w in zip(segments, where, strict=True)
        if s.vectors
    ]
    return snap.with_vectors(VectorSet(parts, n), model)
