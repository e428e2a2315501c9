"""A database-backed scope's notes indexed as the local store indexes them, reusing vectors.

A write to a scope's note indexes the note's new text before it takes the
scope's lock (:mod:`.notes`), straight into one :class:`..segment.Segment`, in
memory: each note's lines as the local read gives them, the recipe's chunker,
each chunk's row as the local sync makes it (:func:`..sync.chunk_row`: its
terms and the hashes of what the embedder gets), the posting lists
(:func:`..segment.postings_of`) and the vectors as the local embedding run
stores them (int8; a chunk's vector the mean of its lines' where the recipe
says so). So a scope's note has the chunks, terms and vectors a folder holding
it gets. The embedder is asked only for texts the scope holds no vector of:
each unchanged chunk's text and lines keep the rows the note's current segment
holds for them (:func:`known_vectors`, by the hash of the text the embedder gets).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import numpy as np

from ...core.chunking import Chunk, line_texts
from ...core.errors import EmbeddingError
from ...core.globs import Globs
from ...core.recipe import recipe
from ...core.settings import MemorySettings
from ...core.vectorset import RowSource, VectorPart, dequantize, normalised_means, quantize
from ..chunkrows import SegmentRows
from ..reading import BINARY_SNIFF_BYTES, MAX_FILE_BYTES, split_lines
from ..segment import Segment, postings_of
from ..sync import chunk_row, embed_text, lines_make_chunks, sha
from ..workspace import classify

__all__ = ["Embedding", "Known", "index_notes", "known_vectors"]

#: Text hash -> its vector as stored: an int8 row and its scale.
Known = dict[str, tuple[np.ndarray, np.float32]]


@dataclass(frozen=True)
class Embedding:
    """The embedder a write indexes with: its model id and a function of texts to vectors."""

    model: str
    embed: Callable[[list[str]], np.ndarray]


def known_vectors(segments: Iterable[Segment], paths: set[str], settings: MemorySettings) -> Known:
    """Text hash -> stored vector of what ``segments`` hold for the chunks of ``paths``.

    The keys are the hashes of the texts the embedder was given: a chunk's
    embedded text (:func:`..sync.embed_text`; none for a chunk whose vector is
    its lines' mean) and each of its lines (:func:`..core.chunking.line_texts`).
    """
    out: Known = {}
    for seg in segments:
        vec = seg.vectors
        if vec is None:
            continue
        names = seg.names()
        wanted = np.asarray(
            [r for r in range(seg.chunks) if names[int(seg.rows.path[r])] in paths], dtype=np.int64
        )
        matrix, scale = _stored(vec.matrix, vec.scale, wanted)
        owner = np.asarray(vec.owner) if vec.owner is not None else np.zeros(0, np.int64)
        for at, r in enumerate(wanted.tolist()):
            text = seg.rows.text[r]
            lines = line_texts(text, settings.embedding.embed_max_chars)
            if not (lines and lines_make_chunks(settings)):
                chunk = Chunk(
                    0, 0, seg.rows.header[r], tuple(seg.rows.headers[r].split(" > ")), text
                )
                out[sha(embed_text(chunk, settings))] = (matrix[at], scale[at])
            first, last = np.searchsorted(owner, [r, r + 1])
            if vec.lines is None or last - first != len(lines):
                continue  # no line vectors kept, or not these lines: embedded again
            line_rows, line_scale = _stored(vec.lines, vec.line_scale, np.arange(first, last))
            keys = (sha(line) for line in lines)
            out.update(zip(keys, zip(line_rows, line_scale, strict=True), strict=True))
    return out


def _stored(
    matrix: np.ndarray | RowSource, scale: np.ndarray | RowSource | None, rows: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Rows ``rows`` as int8 rows and scales (float rows quantized, as a store keeps them)."""
    picked = np.asarray(matrix[rows])
    if scale is None:
        return quantize(picked)
    return picked, np.asarray(scale[rows], dtype=np.float32)


@dataclass
class _Rows:
    """What the notes' chunks become: segment rows, posting inputs, chunks, file facts."""

    rows: list[tuple[str, int, int, str, str, str]]
    terms: list[tuple[str, str, str]]
    chunks: list[Chunk]
    facts: dict[str, tuple[str, str]]
    hashes: dict[str, str]


def index_notes(
    notes: dict[str, str],
    settings: MemorySettings,
    embedding: Embedding | None,
    known: Known | None = None,
) -> tuple[Segment, dict[str, str]]:
    """The segment of ``notes`` (path -> text) as the local store indexes them, and their hashes.

    The hashes are those of the notes indexed (each one's UTF-8 bytes), as a
    folder's index keeps them: a note the recipe's globs leave out, or that a
    folder's read refuses, has none and no chunks.

    Args:
        notes: Path -> text of the notes.
        settings: Chunking and embedding settings.
        embedding: The embedder (None: keyword-only).
        known: Stored vectors to reuse by text hash (:func:`known_vectors`).

    Raises:
        EmbeddingError: The embedder failed, or answered vectors of another size.
    """
    got = _chunked(notes, settings)
    seg_rows = SegmentRows.build(got.rows)
    vectors = None
    if embedding is not None and got.chunks:
        vectors = _vectors(got.chunks, settings, embedding, known or {})
    segment = Segment(
        seg_rows,
        postings_of(got.terms),
        kinds=[got.facts[p][0] for p in seg_rows.paths.tolist()],
        dates=[got.facts[p][1] for p in seg_rows.paths.tolist()],
        vectors=vectors,
    )
    return segment, got.hashes


def _chunked(notes: dict[str, str], settings: MemorySettings) -> _Rows:
    """The notes' chunks and rows, in the order a folder's sync gives them ids (path order)."""
    chunker = recipe(settings).chunker
    globs = Globs(settings.discovery.include, settings.discovery.exclude)
    out = _Rows([], [], [], {}, {})
    for rel in sorted(notes):
        data = notes[rel].encode("utf-8")
        # What a folder's walk leaves out (:mod:`..discovery`) and its read refuses
        # (:func:`..reading.read_blocks`: too large, or binary) is not indexed.
        if not _selected(rel, globs) or len(data) > MAX_FILE_BYTES:
            continue
        if b"\x00" in data[:BINARY_SNIFF_BYTES]:
            continue
        out.hashes[rel] = hashlib.sha256(data).hexdigest()
        kind, day = classify(rel)
        out.facts[rel] = (kind, day.isoformat() if day else "")
        # The read drops a UTF-8 BOM; the chunks' default header is the file's name.
        lines = split_lines(notes[rel].removeprefix("\ufeff"))
        for chunk in chunker(lines, rel.rsplit("/", 1)[-1]):
            start, end, header, headers, text, _, terms, _ = chunk_row(chunk, settings)
            out.rows.append((rel, start, end, header, headers, text))
            out.terms.append((terms, headers, rel))
            out.chunks.append(chunk)
    return out


def _selected(rel: str, globs: Globs) -> bool:
    """Whether a folder's walk lists the note ``rel`` (:func:`..discovery.discover`)."""
    parts = tuple(rel.split("/"))
    folders = (globs.may_contain("/".join(parts[:i]), parts[:i]) for i in range(1, len(parts)))
    return rel.endswith(".md") and globs.selects(rel) and all(folders)


def _vectors(
    chunks: list[Chunk], settings: MemorySettings, embedding: Embedding, known: Known
) -> VectorPart:
    """The chunks' vectors and their lines', as the local embedding run stores them.

    Each text is embedded once (the ones ``known`` holds not at all) and kept
    as int8 (:func:`..core.vectorset.quantize`); a chunk whose vector is its
    lines' (:func:`..sync.lines_make_chunks`) gets the normalised mean of
    their stored rows, quantized in turn (:func:`_means`).
    """
    plan: list[tuple[str | None, list[str]]] = []  # per chunk: its embedded text, its lines
    for c in chunks:
        lines = line_texts(c.text, settings.embedding.embed_max_chars)
        text = None if lines and lines_make_chunks(settings) else embed_text(c, settings)
        plan.append((text, lines if settings.vectors.line_vector_share else []))
    texts = [t for t, _ in plan if t is not None] + [s for _, lines in plan for s in lines]
    stored = _embedded(texts, settings, embedding, known)
    means = _means([lines for t, lines in plan if t is None], stored)
    rows = [stored[sha(t)] if t is not None else next(means) for t, _ in plan]
    matrix, scale = np.stack([q for q, _ in rows]), np.asarray([s for _, s in rows], np.float32)
    line_rows = [stored[sha(s)] for _, lines in plan for s in lines]
    whole = np.arange(len(chunks), dtype=np.int64)
    if not line_rows:
        return VectorPart(matrix, scale, whole)
    owner = np.repeat(whole, [len(lines) for _, lines in plan]).astype(np.int32)
    line_scale = np.asarray([s for _, s in line_rows], np.float32)
    return VectorPart(matrix, scale, whole, np.stack([q for q, _ in line_rows]), line_scale, owner)


def _embedded(
    texts: list[str], settings: MemorySettings, embedding: Embedding, known: Known
) -> Known:
    """``known`` and the stored vector of each of ``texts`` it lacks, embedded in batches."""
    out = dict(known)
    todo = list(dict.fromkeys(t for t in texts if sha(t) not in out))
    size = settings.embedding.embed_batch_size
    dim = next((q.size for q, _ in out.values()), None)
    for lo in range(0, len(todo), size):
        batch = todo[lo : lo + size]
        got = np.asarray(embedding.embed(batch), dtype=np.float32)
        dim = dim or (got.shape[1] if got.ndim == 2 else None)
        if got.shape != (len(batch), dim):
            raise EmbeddingError(
                f"embedder returned an array of shape {got.shape} for {len(batch)} texts,"
                f" expected {dim}-d vectors (the size the scope holds for {embedding.model})",
                kind="invalid_output",
            )
        q, scale = quantize(got)
        out.update(zip((sha(t) for t in batch), zip(q, scale, strict=True), strict=True))
    return out


def _means(runs: list[list[str]], stored: Known) -> Iterator[tuple[np.ndarray, np.float32]]:
    """Each run's vector as its lines' stored rows' normalised mean, quantized.

    The embedding run's own mean (:func:`..core.vectorset.normalised_means`) of
    the same stored rows, so the row is the one a folder's index stores.
    """
    if not runs:
        return iter(())
    picked = [stored[sha(line)] for lines in runs for line in lines]
    rows = dequantize(np.stack([q for q, _ in picked]), np.asarray([s for _, s in picked]))
    q, scale = quantize(normalised_means(rows, np.cumsum([len(lines) for lines in runs])))
    return zip(q, scale, strict=True)
