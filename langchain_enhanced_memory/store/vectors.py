"""The embedding cache: vectors keyed by model and text hash, each stored once.

A changed file re-embeds only its changed chunks, and switching models
re-embeds once. Line vectors need no table of their own: a chunk's lines are
derived from its text (:func:`..core.chunking.line_texts`), their hashes are
stored with the chunk, and they are cached by hash like chunks. A cache row's
vector is an int8 blob until a generation's side file holds it (NULL then,
see :mod:`.matrices`).
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..core.chunking import Chunk, line_texts
from ..core.scoring import dequantize
from ..core.settings import MemorySettings
from .db import generation_of
from .matrices import Layout, VectorFile, decode, encode, hash_keys
from .sync import embed_text, line_digests, mean_lines, sha

__all__ = [
    "CacheWriter",
    "Missing",
    "cache_blobs",
    "cached_vectors",
    "current_layout",
    "RowKeys",
    "generation_keys",
    "is_complete",
    "missing_embeddings",
    "pending_keys",
    "store_vectors",
    "vector_dim",
]


@dataclass
class RowKeys:
    """The text-hash keys (:func:`.matrices.hash_keys`) of one generation's chunks and lines."""

    chunk_ids: np.ndarray  # chunk id of each row
    chunks: np.ndarray  # key of each chunk row
    lines: np.ndarray  # key of each line, chunk by chunk
    owner: np.ndarray  # the chunk row of each line


def generation_keys(conn: sqlite3.Connection, settings: MemorySettings) -> RowKeys:
    """Keys of every chunk and line, read from the stored hashes (no line is hashed).

    A chunk stored before line hashes were (an index just migrated, not synced
    since) has its lines hashed here.
    """
    query = (
        "SELECT id, embed_hash, line_hashes, CASE WHEN line_hashes IS NULL THEN text END"
        " FROM chunks ORDER BY id"
    )
    rows = conn.execute(query).fetchall()
    digests = [b if b is not None else line_digests(t, settings) for _, _, b, t in rows]
    counts = np.fromiter((len(d) // 32 for d in digests), dtype=np.int64, count=len(rows))
    # A key is a hash's first 8 bytes, big-endian (its first 16 hex digits).
    lines = np.frombuffer(b"".join(digests), dtype=">u8").reshape(-1, 4)[:, 0]
    return RowKeys(
        chunk_ids=np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows)),
        chunks=hash_keys([r[1] for r in rows]),
        lines=lines.astype(np.uint64),
        owner=np.repeat(np.arange(len(rows), dtype=np.int32), counts),
    )


def pending_keys(conn: sqlite3.Connection, model: str) -> tuple[list[str], np.ndarray]:
    """Hashes and keys of ``model``'s vectors that are cache blobs (in no side file yet)."""
    hashes = [
        h
        for (h,) in conn.execute(
            "SELECT text_hash FROM embed_cache WHERE model=? AND vector IS NOT NULL", (model,)
        )
    ]
    return hashes, hash_keys(hashes)


@dataclass
class Missing:
    """What lacks a vector for a model.

    Attributes:
        texts: ``(hash, text)`` to embed, unique: chunk texts, then lines chunk by chunk.
        means: ``(chunk hash, its line hashes)`` of chunks whose vector is the
            mean of their lines' (:func:`.sync.mean_lines`), once those are in.
    """

    texts: list[tuple[str, str]] = field(default_factory=list)
    means: list[tuple[str, list[str]]] = field(default_factory=list)

    def __len__(self) -> int:
        """How many texts the model has to embed."""
        return len(self.texts)

    def __bool__(self) -> bool:
        return bool(self.texts or self.means)


def missing_embeddings(
    conn: sqlite3.Connection, model: str, settings: MemorySettings, folder: Path
) -> Missing:
    """The chunks and lines lacking a vector for ``model``.

    A vector is there when it is a cache blob or in the model's side file.
    """
    if is_complete(conn, model, settings):
        return Missing()
    keys = generation_keys(conn, settings)
    _, pending = pending_keys(conn, model)
    current = current_layout(conn, model)
    old = VectorFile.open(folder, current[1]) if current else None

    def lacking(k: np.ndarray) -> np.ndarray:
        found = np.isin(k, pending)
        return ~(found | (old.lookup(k) >= 0)) if old else ~found

    out: dict[str, str] = {}
    means: dict[str, list[str]] = {}
    ids = keys.chunk_ids[lacking(keys.chunks)].tolist()
    for h, header, headers, text in _chunk_rows(conn, ids, "embed_hash, header, headers, text"):
        lines = mean_lines(text, settings)
        if lines:
            means.setdefault(h, [sha(line) for line in lines])
        else:
            chunk = Chunk(0, 0, header, tuple(headers.split(" > ")), text)
            out.setdefault(h, embed_text(chunk, settings))
    if settings.line_vector_share and keys.lines.size:
        # Lines are cut and hashed again only in chunks with a line missing.
        gone = lacking(keys.lines)
        wanted = set(keys.lines[gone].tolist())
        ids = keys.chunk_ids[np.unique(keys.owner[gone])].tolist()
        for (text,) in _chunk_rows(conn, ids, "text"):
            for line in line_texts(text, settings.embed_max_chars):
                h = sha(line)
                if int(h[:16], 16) in wanted:
                    out.setdefault(h, line)
    return Missing(list(out.items()), list(means.items()))


def cache_blobs(conn: sqlite3.Connection, model: str, hashes: list[str]) -> dict[str, bytes]:
    """Hash -> int8 blob of those of ``hashes`` that are cache blobs (in no side file yet)."""
    out: dict[str, bytes] = {}
    for lo in range(0, len(hashes), 500):
        part = hashes[lo : lo + 500]
        out.update(
            conn.execute(
                "SELECT text_hash, vector FROM embed_cache WHERE model=? AND vector IS NOT NULL"
                f" AND text_hash IN ({','.join('?' * len(part))})",
                (model, *part),
            ).fetchall()
        )
    return out


def cached_vectors(
    conn: sqlite3.Connection, model: str, folder: Path, hashes: list[str]
) -> dict[str, np.ndarray]:
    """Hash -> float32 vector of those of ``hashes`` that have one (blob or side file)."""
    out: dict[str, np.ndarray] = {}
    current = current_layout(conn, model)
    old = VectorFile.open(folder, current[1]) if current else None
    if old is not None and hashes:
        pos = old.lookup(hash_keys(hashes))
        at = np.flatnonzero(pos >= 0)
        rows = dequantize(old.matrix[pos[at]], old.scale[pos[at]])
        out.update(zip([hashes[i] for i in at], rows, strict=True))
    blobs = cache_blobs(conn, model, hashes)
    dim = old.layout.dim if old else vector_dim(conn, model) or 0
    fits = [h for h, b in blobs.items() if len(b) == dim + 4]  # a damaged blob is no vector
    if fits:
        rows, scale = decode([blobs[h] for h in fits], dim)
        out.update(zip(fits, dequantize(rows, scale), strict=True))  # the newer copy wins
    return out


def _chunk_rows(conn: sqlite3.Connection, ids: list[int], columns: str) -> list[tuple]:
    rows: list[tuple] = []
    for lo in range(0, len(ids), 500):
        part = ids[lo : lo + 500]
        rows += conn.execute(
            f"SELECT {columns} FROM chunks WHERE id IN ({','.join('?' * len(part))}) ORDER BY id",
            part,
        ).fetchall()
    return rows


def current_layout(conn: sqlite3.Connection, model: str) -> tuple[int, Layout] | None:
    """The generation and layout of ``model``'s side file (None when it has none)."""
    row = conn.execute(
        "SELECT generation, data FROM derived WHERE name=?", (f"vectors:{model}",)
    ).fetchone()
    layout = Layout.from_json(row[1]) if row else None
    return (int(row[0]), layout) if row and layout else None


def is_complete(conn: sqlite3.Connection, model: str, settings: MemorySettings) -> bool:
    """Whether this generation's side file was written with every vector it needs.

    Saves a re-index with nothing to do from reading every line hash.
    """
    current = current_layout(conn, model)
    if current is None or current[0] != generation_of(conn):
        return False
    return current[1].lines_complete or not settings.line_vector_share


def store_vectors(
    conn: sqlite3.Connection, model: str, hashes: list[str], vectors: np.ndarray
) -> None:
    """Add vectors to the cache in one transaction (survives a later failure)."""
    vectors = np.asarray(vectors, dtype=np.float32)
    conn.execute("BEGIN IMMEDIATE")
    rows = [
        (model, h, vectors.shape[1], blob) for h, blob in zip(hashes, encode(vectors), strict=False)
    ]
    conn.executemany("INSERT OR REPLACE INTO embed_cache VALUES (?,?,?,?)", rows)
    conn.execute("COMMIT")


class CacheWriter:
    """Stores batches of vectors for one model on one connection (a commit per batch)."""

    def __init__(self, conn: sqlite3.Connection, model: str) -> None:
        self.conn = conn
        self.model = model

    def store(self, hashes: list[str], vectors: np.ndarray) -> None:
        """Commit one batch."""
        store_vectors(self.conn, self.model, hashes, vectors)


def vector_dim(conn: sqlite3.Connection, model: str) -> int | None:
    """Dimension of the vectors cached for ``model``, None when there are none."""
    row = conn.execute("SELECT dim FROM embed_cache WHERE model=? LIMIT 1", (model,)).fetchone()
    return int(row[0]) if row else None
