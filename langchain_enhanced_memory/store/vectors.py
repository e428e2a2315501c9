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

import numpy as np

from ..core.chunking import Chunk, line_texts
from ..core.settings import MemorySettings
from .db import generation_of
from .matrices import Layout, encode
from .sync import embed_text, line_digests, sha

__all__ = [
    "CacheWriter",
    "current_layout",
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
    out: dict[str, str] = {}
    for h, header, headers, text in _chunk_rows(conn, ids, "embed_hash, header, headers, text"):
        chunk = Chunk(0, 0, header, tuple(headers.split(" > ")), text)
        out.setdefault(h, embed_text(chunk, settings))
    if settings.line_vector_share:
        # The texts of lines are cut again only for chunks with a line missing.
        lacking = [
            i for i, hashes in line_hashes(conn, settings, with_ids=True) if set(hashes) - cached
        ]
        for (text,) in _chunk_rows(conn, lacking, "text"):
            for line in line_texts(text, settings.embed_max_chars):
                h = sha(line)
                if h not in cached:
                    out.setdefault(h, line)
    return list(out.items())


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

    Saves a re-index with nothing to do from reading every line hash and
    scanning the whole embedding cache.
    """
    current = current_layout(conn, model)
    if current is None or current[0] != generation_of(conn):
        return False
    return current[1].lines_complete or not settings.line_vector_share


def line_hashes(
    conn: sqlite3.Connection, settings: MemorySettings, *, with_ids: bool = False
) -> list[tuple[int, list[str]]]:
    """``(chunk row, [line hash, ...])`` of every chunk in row order (``with_ids``: chunk id).

    Read from the stored digests; a chunk stored before they were (an index
    just migrated, not synced since) has its lines hashed here.
    """
    out = []
    query = "SELECT id, line_hashes, CASE WHEN line_hashes IS NULL THEN text END FROM chunks"
    for row, (i, blob, text) in enumerate(conn.execute(query + " ORDER BY id")):
        digests = blob if blob is not None else line_digests(text, settings)
        hashes = [digests[k : k + 32].hex() for k in range(0, len(digests), 32)]
        out.append((i if with_ids else row, hashes))
    return out


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
