"""The embedding cache: vectors keyed by model and text hash.

A changed file re-embeds only its changed chunks, and switching models
re-embeds once. Line vectors need no table of their own: a chunk's lines are
derived from its text (:func:`..core.chunking.line_texts`) and cached by their
hash like chunks.
"""

from __future__ import annotations

import sqlite3

import numpy as np

from ..core.chunking import Chunk, line_texts
from ..core.settings import MemorySettings
from .db import generation_of
from .sync import embed_text, sha

__all__ = [
    "CacheWriter",
    "is_complete",
    "line_hashes",
    "missing_embeddings",
    "store_vectors",
    "vector_dim",
]


def missing_embeddings(
    conn: sqlite3.Connection, model: str, settings: MemorySettings
) -> list[tuple[str, str]]:
    """``(embed_hash, text)`` of chunks, then lines, lacking a vector for ``model`` (unique)."""
    if is_complete(conn, model, settings):
        return []
    # One scan of the cached hashes beats a primary-key probe per chunk: the
    # cache's B-tree holds the vectors inline, so each probe reads a few pages.
    cached = {
        h for (h,) in conn.execute("SELECT text_hash FROM embed_cache WHERE model=?", (model,))
    }
    ids = [
        i
        for i, h in conn.execute("SELECT id, embed_hash FROM chunks ORDER BY id")
        if h not in cached
    ]
    rows = []
    for lo in range(0, len(ids), 500):
        part = ids[lo : lo + 500]
        rows += conn.execute(
            "SELECT embed_hash, header, headers, text FROM chunks"
            f" WHERE id IN ({','.join('?' * len(part))}) ORDER BY id",
            part,
        ).fetchall()
    lines = line_hashes(conn, settings) if settings.line_vector_share else []
    out: dict[str, str] = {}
    for h, header, headers, text in rows:
        chunk = Chunk(0, 0, header, tuple(headers.split(" > ")), text)
        out.setdefault(h, embed_text(chunk, settings))
    for _, h, line in lines:
        if h not in cached:
            out.setdefault(h, line)
    return list(out.items())


def is_complete(conn: sqlite3.Connection, model: str, settings: MemorySettings) -> bool:
    """Whether this generation's matrices were stored, which happens only when complete.

    Saves a re-index with nothing to do from hashing every line and scanning
    the whole embedding cache.
    """
    names = [f"matrix:{model}"]
    if settings.line_vector_share:
        names.append(f"line-owner:{model}")
    (stored,) = conn.execute(
        "SELECT count(*) FROM derived WHERE generation=?"
        f" AND name IN ({','.join('?' * len(names))})",
        (generation_of(conn), *names),
    ).fetchone()
    return bool(stored == len(names))


def line_hashes(conn: sqlite3.Connection, settings: MemorySettings) -> list[tuple[int, str, str]]:
    """``(chunk row, hash, text)`` of every chunk's lines, in chunk order."""
    max_chars = settings.embed_max_chars
    return [
        (row, sha(line), line)
        for row, (text,) in enumerate(conn.execute("SELECT text FROM chunks ORDER BY id"))
        for line in line_texts(text, max_chars)
    ]


def store_vectors(
    conn: sqlite3.Connection, model: str, hashes: list[str], vectors: np.ndarray
) -> None:
    """Add vectors to the cache in one transaction (survives a later failure)."""
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    conn.execute("BEGIN IMMEDIATE")
    rows = [(model, h, v.shape[0], v.tobytes()) for h, v in zip(hashes, vectors, strict=False)]
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
