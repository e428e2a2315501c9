"""The embedding cache: vectors keyed by model and text hash, each stored once.

A changed file re-embeds only its changed chunks, and switching models
re-embeds once. Line vectors need no table of their own: a chunk's lines are
derived from its text (:func:`..core.chunking.line_texts`), their hashes are
stored with the chunk, and they are cached by hash like chunks. A model has a
text's vector when its spool (:mod:`.spool`) or one of its named segment files
(:mod:`.vector_segments`) holds the hash's key: no table says it a second time.
"""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..core.chunking import Chunk, line_texts
from ..core.settings import MemorySettings
from ..core.vectorset import quantize
from .db import rollback
from .spool import append
from .sync import embed_text, lines_make_chunks, mean_line_hashes, sha
from .vector_segments import Keyed, hash_keys, held

__all__ = [
    "CacheWriter",
    "Missing",
    "MissingPlan",
    "PART_ROWS",
    "RowKeys",
    "generation_keys",
    "missing_plan",
    "store_vectors",
]


@dataclass
class RowKeys:
    """One generation's chunk and line text-hash keys (:func:`.vector_segments.hash_keys`)."""

    chunk_ids: np.ndarray  # chunk id of each row
    chunks: np.ndarray  # key of each chunk row
    lines: np.ndarray  # key of each line, chunk by chunk
    owner: np.ndarray  # the chunk row of each line


def generation_keys(
    conn: sqlite3.Connection, settings: MemorySettings, ids: np.ndarray | None = None
) -> RowKeys:
    """Keys of every chunk (or of the chunks ``ids``) and their lines, from the stored hashes."""
    columns = "id, embed_hash, line_hashes"
    if ids is None:
        rows = conn.execute(f"SELECT {columns} FROM chunks ORDER BY id").fetchall()
    else:
        rows = _chunk_rows(conn, ids.tolist(), columns)
    digests = [r[2] for r in rows]
    counts = np.fromiter((len(d) // 32 for d in digests), dtype=np.int64, count=len(rows))
    # A key is a hash's first 8 bytes, big-endian (its first 16 hex digits).
    lines = np.frombuffer(b"".join(digests), dtype=">u8").reshape(-1, 4)[:, 0]
    return RowKeys(
        chunk_ids=np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows)),
        chunks=hash_keys([r[1] for r in rows]),
        lines=lines.astype(np.uint64),
        owner=np.repeat(np.arange(len(rows), dtype=np.int32), counts),
    )


@dataclass
class Missing:
    """What lacks a vector for a model.

    Attributes:
        texts: ``(hash, text)`` to embed, unique: chunk texts, then lines chunk by chunk.
        means: ``(chunk hash, its line hashes)`` of chunks whose vector is the
            mean of their lines' (:func:`.sync.mean_line_hashes`), once those are in.
    """

    texts: list[tuple[str, str]] = field(default_factory=list)
    means: list[tuple[str, list[str]]] = field(default_factory=list)

    def __len__(self) -> int:
        """How many texts the model has to embed."""
        return len(self.texts)

    def __bool__(self) -> bool:
        return bool(self.texts or self.means)


#: Chunk rows whose missing texts are gathered at once: an embedding run holds one
#: part's texts and vectors, whatever the size of the workspace.
PART_ROWS = 4096


@dataclass
class MissingPlan:
    """What lacks a vector for a model, as masks over the rows; texts read a part at a time.

    Each text is embedded once, in the part of the first chunk row that needs
    it (a chunk's own text before its lines), so the parts together are the
    texts :func:`missing_embeddings` lists, each once.

    Attributes:
        keys: The rows' keys.
        chunks: Per chunk row: its vector lacks and no earlier row has its key.
        lines: Per line (``keys.lines``): its vector lacks and it is its key's first.
        texts: How many texts the parts hold.
    """

    keys: RowKeys
    chunks: np.ndarray
    lines: np.ndarray
    texts: int

    @classmethod
    def empty(cls) -> MissingPlan:
        """Nothing to embed."""
        none = np.zeros(0, dtype=np.uint64)
        keys = RowKeys(np.zeros(0, np.int64), none, none, np.zeros(0, np.int32))
        return cls(keys, np.zeros(0, dtype=bool), np.zeros(0, dtype=bool), 0)

    def __len__(self) -> int:
        """How many texts the model has to embed."""
        return self.texts

    def __bool__(self) -> bool:
        return bool(self.texts or self.chunks.any())

    @property
    def rows(self) -> int:
        """How many chunk rows the plan spans."""
        return int(self.keys.chunk_ids.size)

    def part(self, conn: sqlite3.Connection, settings: MemorySettings, lo: int, hi: int) -> Missing:
        """The texts and means of chunk rows ``lo`` to ``hi`` (chunk texts, then lines)."""
        keys = self.keys
        out: dict[str, str] = {}
        means: dict[str, list[str]] = {}
        ids = keys.chunk_ids[lo + np.flatnonzero(self.chunks[lo:hi])].tolist()
        columns = "embed_hash, header, headers, text, line_hashes"
        for h, header, headers, text, digests in _chunk_rows(conn, ids, columns):
            lines = mean_line_hashes(digests, settings)
            if lines:
                means.setdefault(h, lines)
            else:
                chunk = Chunk(0, 0, header, tuple(headers.split(" > ")), text)
                out.setdefault(h, embed_text(chunk, settings))
        first, last = np.searchsorted(keys.owner, [lo, hi])
        taken = first + np.flatnonzero(self.lines[first:last])
        if taken.size:
            # Lines are cut and hashed again only in chunks with a line to embed here.
            wanted = set(keys.lines[taken].tolist())
            ids = keys.chunk_ids[np.unique(keys.owner[taken])].tolist()
            for (text,) in _chunk_rows(conn, ids, "text"):
                for line in line_texts(text, settings.embedding.embed_max_chars):
                    h = sha(line)
                    if int(h[:16], 16) in wanted:
                        out.setdefault(h, line)
        return Missing(list(out.items()), list(means.items()))

    def whole(self, conn: sqlite3.Connection, settings: MemorySettings) -> Missing:
        """Every part as one."""
        return self.part(conn, settings, 0, self.rows)


def missing_plan(settings: MemorySettings, keys: RowKeys, files: list[Keyed]) -> MissingPlan:
    """Which of the chunks ``keys`` names, and of their lines, lack a vector in ``files``.

    ``files`` are a model's segment files and its spool (the caller passes
    only the chunks no segment maps to a row).
    """
    rows = np.flatnonzero(~held(files, keys.chunks))
    if settings.vectors.line_vector_share and keys.lines.size:
        lines = np.flatnonzero(~held(files, keys.lines))
    else:
        lines = np.zeros(0, dtype=np.int64)
    # Each key once, at its first row (a chunk's own text before its lines):
    # sorted by key, then row, then kind, the first of each key is taken.
    key = np.concatenate([keys.chunks[rows], keys.lines[lines]])
    row = np.concatenate([rows, keys.owner[lines]])
    kind = np.repeat(np.arange(2, dtype=np.int8), [rows.size, lines.size])
    order = np.lexsort((kind, row, key))
    first = np.ones(order.size, dtype=bool)
    first[1:] = key[order[1:]] != key[order[:-1]]
    take = np.zeros(order.size, dtype=bool)
    take[order[first]] = True
    chunks = np.zeros(keys.chunks.size, dtype=bool)
    chunks[rows[take[: rows.size]]] = True
    line_mask = np.zeros(keys.lines.size, dtype=bool)
    line_mask[lines[take[rows.size :]]] = True
    # A chunk whose vector is its lines' mean is not a text to embed.
    has_lines = np.bincount(keys.owner, minlength=keys.chunks.size) > 0
    means = has_lines if lines_make_chunks(settings) else np.zeros_like(has_lines)
    texts = int((chunks & ~means).sum() + line_mask.sum())
    return MissingPlan(keys, chunks, line_mask, texts)


def _chunk_rows(conn: sqlite3.Connection, ids: list[int], columns: str) -> list[tuple]:
    rows: list[tuple] = []
    for lo in range(0, len(ids), 500):
        part = ids[lo : lo + 500]
        rows += conn.execute(
            f"SELECT {columns} FROM chunks WHERE id IN ({','.join('?' * len(part))}) ORDER BY id",
            part,
        ).fetchall()
    return rows


def store_vectors(
    conn: sqlite3.Connection, folder: Path, model: str, hashes: list[str], vectors: np.ndarray
) -> None:
    """Add vectors to the cache in one transaction (survives a later failure)."""
    writer = CacheWriter(conn, folder, model, flush_s=0)
    writer.store(hashes, *quantize(vectors))


_MAX_WAIT_S = 60.0


class CacheWriter:
    """Stores batches of vectors for one model on one connection, committed together.

    The vectors go to the model's spool (:mod:`.spool`), each a record
    appended, and the commit names how many it holds. Batches are held in
    memory and committed together once
    ``flush_s`` seconds, or ten times the last commit's duration (a minute at
    most), have passed since the last commit (and by :meth:`flush`): commits
    take about a tenth of a run or less, a slow embedder's vectors are
    committed every ``flush_s``, and a kill loses only what was held, leaving
    what was committed, like any other kill.

    Args:
        conn: The connection (autocommit mode).
        folder: The side folder the spool is in.
        model: Model id the vectors are cached under.
        flush_s: The shortest time between commits (0: a commit per batch).
    """

    def __init__(
        self, conn: sqlite3.Connection, folder: Path, model: str, flush_s: float = 0.5
    ) -> None:
        self.conn = conn
        self.folder = folder
        self.model = model
        self.flush_s = flush_s
        self._held: list[tuple[list[str], np.ndarray, np.ndarray]] = []
        self._last = time.monotonic()
        self._wait = flush_s

    def store(self, hashes: list[str], q: np.ndarray, scale: np.ndarray) -> None:
        """Take one batch, quantized (:func:`..core.vectorset.quantize`); commit when it is time."""
        if hashes:
            self._held.append((hashes, q, scale))
        if time.monotonic() - self._last >= self._wait:
            self.flush()

    def flush(self) -> None:
        """Append the batches held to the spool and commit its new count."""
        started = time.monotonic()
        if self._held:
            hashes = [h for batch, _, _ in self._held for h in batch]
            q = np.concatenate([b[1] for b in self._held])
            scale = np.concatenate([b[2] for b in self._held])
            conn = self.conn
            conn.execute("BEGIN IMMEDIATE")
            try:
                append(conn, self.folder, self.model, hash_keys(hashes), q, scale)
            except BaseException:
                rollback(conn)
                raise
            conn.execute("COMMIT")
        self._held = []
        self._last = time.monotonic()
        self._wait = min(max(self.flush_s, 10 * (self._last - started)), _MAX_WAIT_S)
