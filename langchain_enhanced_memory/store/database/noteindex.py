"""A database-backed scope's notes indexed as the local store indexes them, reusing vectors.

A write to a scope's note indexes the note's new text before it takes the
scope's lock (:mod:`.notes`). The chunks, terms and vectors are those a folder
holding the note would get: the note is written to a private temporary
workspace and indexed there by :class:`..index.MemoryIndex`. The embedder is
asked only for texts the scope holds no vector of: each unchanged chunk's
text and lines keep the vectors the note's current segment holds for them
(:func:`known_vectors`, by the hash of the text the embedder would get).
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...core.chunking import Chunk, line_texts
from ...core.settings import MemorySettings
from ...core.vectorset import RowSource, dequantize
from ..index import MemoryIndex
from ..segment import Segment
from ..sync import embed_text, lines_make_chunks, sha
from ..upkeep import embed_missing
from .publish import from_snapshot

__all__ = ["Embedding", "index_notes", "known_vectors"]


@dataclass(frozen=True)
class Embedding:
    """The embedder a write indexes with: its model id and a function of texts to vectors."""

    model: str
    embed: Callable[[list[str]], np.ndarray]


def known_vectors(
    segments: Iterable[Segment], paths: set[str], settings: MemorySettings
) -> dict[str, np.ndarray]:
    """Text hash -> vector of what ``segments`` hold for the chunks of ``paths``.

    The keys are the hashes of the texts the embedder was given: a chunk's
    embedded text (:func:`..sync.embed_text`; none for a chunk whose vector is
    its lines' mean) and each of its lines (:func:`..core.chunking.line_texts`).
    """
    out: dict[str, np.ndarray] = {}
    for seg in segments:
        vec = seg.vectors
        if vec is None:
            continue
        names = seg.names()
        wanted = np.asarray(
            [r for r in range(seg.chunks) if names[int(seg.rows.path[r])] in paths], dtype=np.int64
        )
        matrix = dequantize(np.asarray(vec.matrix[wanted]), _rows(vec.scale, wanted))
        owner = np.asarray(vec.owner) if vec.owner is not None else np.zeros(0, np.int64)
        for at, r in enumerate(wanted.tolist()):
            text = seg.rows.text[r]
            lines = line_texts(text, settings.embedding.embed_max_chars)
            if not (lines and lines_make_chunks(settings)):
                chunk = Chunk(
                    0, 0, seg.rows.header[r], tuple(seg.rows.headers[r].split(" > ")), text
                )
                out[sha(embed_text(chunk, settings))] = matrix[at]
            first, last = np.searchsorted(owner, [r, r + 1])
            if vec.lines is None or last - first != len(lines):
                continue  # no line vectors kept, or not these lines: embedded again
            rows = np.arange(first, last)
            line_rows = dequantize(np.asarray(vec.lines[rows]), _rows(vec.line_scale, rows))
            out.update(zip((sha(line) for line in lines), line_rows, strict=True))
    return out


def _rows(scale: np.ndarray | RowSource | None, rows: np.ndarray) -> np.ndarray | None:
    return None if scale is None else np.asarray(scale[rows])


def reusing(
    embed: Callable[[list[str]], np.ndarray], known: dict[str, np.ndarray]
) -> Callable[[list[str]], np.ndarray]:
    """``embed`` that asks the model only for the texts ``known`` holds no vector of."""

    def call(texts: list[str]) -> np.ndarray:
        keys = [sha(t) for t in texts]
        todo = [t for t, k in zip(texts, keys, strict=True) if k not in known]
        fresh: Iterator[np.ndarray] = iter(np.asarray(embed(todo), np.float32) if todo else [])
        rows = [known[k] if k in known else next(fresh) for k in keys]
        return np.stack(rows).astype(np.float32) if rows else np.zeros((0, 0), np.float32)

    return call


def index_notes(
    notes: dict[str, str],
    settings: MemorySettings,
    embedding: Embedding | None,
    known: dict[str, np.ndarray] | None = None,
) -> tuple[Segment, dict[str, str]]:
    """The segment of ``notes`` (path -> text) as the local store indexes them, and their hashes.

    Written to a private temporary workspace and indexed there by
    :class:`..index.MemoryIndex` (sync, then the embedding run): the same code,
    so the same chunks, terms and vectors as a folder holding these notes.

    Args:
        notes: Path -> text of the notes.
        settings: Chunking and embedding settings.
        embedding: The embedder (None: keyword-only).
        known: Vectors to reuse by text hash (:func:`known_vectors`).
    """
    with tempfile.TemporaryDirectory(prefix="enhanced-memory-note-") as tmp:
        root = Path(tmp)
        for rel, text in notes.items():
            target = root / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(text.encode("utf-8"))
        index = MemoryIndex(root, settings)
        index.sync()
        model = embedding.model if embedding else None
        if embedding is not None:
            embed_missing(index, embedding.model, reusing(embedding.embed, known or {}))
        snap = index.snapshot(model)
        with index.connect() as lite:
            hashes = dict(lite.execute("SELECT path, hash FROM files").fetchall())
            segment = from_snapshot(lite, snap, np.arange(len(snap), dtype=np.int64))
    return segment, hashes
