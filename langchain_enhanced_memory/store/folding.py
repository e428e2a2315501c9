"""A generation's vectors: gathered from the cache and the previous side file, then folded.

:func:`assemble` puts one generation's vectors in row order (chunk rows, then
the rows of the lines that have one) from the cache's int8 blobs and the
previous side file. :func:`fold` writes them as the generation's side file and,
in the commit that names it, empties the cache rows it now holds and deletes
the rows no generation uses any more (garbage collection after a run, never
during one); then old side files go. Both run under the writer lock.
"""

from __future__ import annotations

import logging
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..core.settings import MemorySettings
from .db import IndexDB, generation_of
from .matrices import Layout, VectorFile, decode, hash_keys, key_prefix, sweep, write
from .sync import sha
from .vectors import current_layout, line_hashes

__all__ = ["Vectors", "assemble", "drop_lost", "fold"]

log = logging.getLogger("langchain_enhanced_memory")


@dataclass
class Vectors:
    """One generation's vectors in row order: chunk rows, then line rows."""

    matrix: np.ndarray  # int8
    scale: np.ndarray
    chunks: int
    has_vector: np.ndarray  # per chunk row
    owner: np.ndarray  # the chunk row of each line row
    lines_complete: bool
    source: str | None = None  # the side file it came from or was gathered with
    hashes: list[str] = field(default_factory=list)  # of each row (when assembled)
    folded: list[str] = field(default_factory=list)  # cache blobs it holds
    unused: list[str] = field(default_factory=list)  # cache blobs of no chunk or line

    @classmethod
    def mapped(cls, vf: VectorFile) -> Vectors:
        """The vectors of a side file, as read-only maps."""
        lay = vf.layout
        return cls(
            matrix=vf.matrix,
            scale=vf.scale,
            chunks=lay.chunks,
            has_vector=np.ones(lay.chunks, dtype=bool),
            owner=vf.owner,
            lines_complete=lay.lines_complete,
            source=lay.file,
        )


def assemble(
    conn: sqlite3.Connection, model: str, settings: MemorySettings, old: VectorFile | None
) -> Vectors:
    """Gather the current generation's vectors from the cache's blobs and ``old``."""
    chunk_hashes = [h for (h,) in conn.execute("SELECT embed_hash FROM chunks ORDER BY id")]
    lines = line_hashes(conn, settings)
    owner_all = np.asarray([row for row, hs in lines for _ in hs], dtype=np.int32)
    wanted = chunk_hashes + [h for _, hs in lines for h in hs]
    n = len(chunk_hashes)
    pending = conn.execute(
        "SELECT text_hash, dim, vector FROM embed_cache WHERE model=? AND vector IS NOT NULL",
        (model,),
    ).fetchall()
    dim = old.layout.dim if old else (pending[0][1] if pending else 0)
    pending = [p for p in pending if p[1] == dim and len(p[2]) == dim + 4]
    p_rows, p_scale = decode([p[2] for p in pending], dim) if pending else (None, None)
    at = {h: i for i, (h, _, _) in enumerate(pending)}
    pos_p = np.fromiter((at.get(h, -1) for h in wanted), dtype=np.int64, count=len(wanted))
    pos_f = old.lookup(hash_keys(wanted)) if old else np.full(len(wanted), -1, np.int64)
    found = (pos_p >= 0) | (pos_f >= 0)
    keep = np.concatenate([np.ones(n, dtype=bool), found[n:]])
    rows = np.flatnonzero(keep)
    matrix = np.zeros((rows.size, dim), dtype=np.int8)
    scale = np.zeros(rows.size, dtype=np.float32)
    sources = [(pos_p, p_rows, p_scale)]  # the cache's blob wins: it is the newer
    if old:
        sources.insert(0, (pos_f, old.matrix, old.scale))
    for pos, src_rows, src_scale in sources:
        sel = np.flatnonzero(pos[rows] >= 0)
        if sel.size and src_rows is not None and src_scale is not None:
            matrix[sel] = src_rows[pos[rows[sel]]]
            scale[sel] = src_scale[pos[rows[sel]]]
    used = set(wanted)
    return Vectors(
        matrix=matrix,
        scale=scale,
        chunks=n,
        has_vector=found[:n],
        owner=owner_all[found[n:]],
        lines_complete=bool(found[n:].all()),
        source=old.layout.file if old else None,
        hashes=[wanted[i] for i in rows],
        folded=[h for h, _, _ in pending if h in used],
        unused=[h for h, _, _ in pending if h not in used],
    )


def fold(
    db: IndexDB, folder: Path, model: str, generation: int, vec: Vectors, old: VectorFile | None
) -> Layout | None:
    """Write ``vec`` as ``generation``'s side file and switch to it (writer lock held).

    Returns the new layout, or None when the index moved on meanwhile (another
    generation, or another process folded this one first).
    """
    stem = f"{sha(model)[:12]}-g{generation}"
    layout = write(
        folder,
        stem,
        vec.matrix,
        vec.scale,
        vec.owner,
        vec.hashes,
        chunks=vec.chunks,
        lines_complete=vec.lines_complete,
    )
    with db.open() as conn:
        conn.execute("BEGIN IMMEDIATE")
        try:
            current = current_layout(conn, model)
            if generation_of(conn) != generation or (current and current[1].file != vec.source):
                conn.execute("ROLLBACK")
                (folder / layout.file).unlink(missing_ok=True)
                return None
            conn.execute(
                "INSERT OR REPLACE INTO derived VALUES (?, ?, ?)",
                (f"vectors:{model}", generation, layout.to_json()),
            )
            conn.executemany(
                "UPDATE embed_cache SET vector=NULL WHERE model=? AND text_hash=?",
                [(model, h) for h in vec.folded],
            )
            conn.executemany(
                "DELETE FROM embed_cache WHERE model=? AND text_hash=? AND vector IS NOT NULL",
                [(model, h) for h in vec.unused],
            )
            gone = np.setdiff1d(old.keys, hash_keys(vec.hashes)) if old else np.zeros(0, np.uint64)
            conn.executemany(
                "DELETE FROM embed_cache WHERE model=? AND vector IS NULL"
                " AND text_hash >= ? AND text_hash < ?",
                [(model, p, p + "g") for p in map(key_prefix, map(int, gone))],
            )
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            (folder / layout.file).unlink(missing_ok=True)
            raise
        log.debug(
            "vectors of generation %s in %s (%d rows freed)", generation, layout.file, len(gone)
        )
        sweep(folder, kept_files(conn))
    return layout


def drop_lost(db: IndexDB, model: str, layout: Layout) -> None:
    """``model``'s side file is gone (deleted by hand): forget the vectors it held.

    They are embedded again by the next index run (writer lock held).
    """
    with db.open() as conn:
        conn.execute("BEGIN IMMEDIATE")
        current = current_layout(conn, model)
        if current and current[1] == layout:
            log.warning("vector file %s is missing: its vectors get embedded again", layout.file)
            conn.execute("DELETE FROM derived WHERE name=?", (f"vectors:{model}",))
            conn.execute("DELETE FROM embed_cache WHERE model=? AND vector IS NULL", (model,))
        conn.execute("COMMIT")


def kept_files(conn: sqlite3.Connection) -> set[str]:
    """The side files some ``derived`` row names."""
    out = set()
    for (data,) in conn.execute("SELECT data FROM derived WHERE name LIKE 'vectors:%'"):
        layout = Layout.from_json(data)
        if layout:
            out.add(layout.file)
    return out
