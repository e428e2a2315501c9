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
from typing import Any

import numpy as np

from ..core.settings import MemorySettings
from .db import IndexDB, generation_of
from .matrices import Layout, VectorFile, decode, key_prefix, sweep, write
from .sync import sha
from .vectors import cache_blobs, current_layout, generation_keys, pending_keys, vector_dim

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
    keys: np.ndarray | None = None  # text-hash key of each row (when assembled)
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
    keys = generation_keys(conn, settings)
    n = keys.chunks.size
    wanted = np.concatenate([keys.chunks, keys.lines])
    hashes, p_keys = pending_keys(conn, model)
    dim = old.layout.dim if old else (vector_dim(conn, model) or 0)
    used = np.isin(p_keys, wanted)
    blobs = _blobs(conn, model, [h for h, u in zip(hashes, used, strict=True) if u])
    # Rows of a damaged blob (another size) are left out, so they get embedded again.
    blobs = {k: b for k, b in blobs.items() if len(b) == dim + 4}
    b_keys = np.asarray(sorted(blobs), dtype=np.uint64)
    b_rows, b_scale = decode([blobs[k] for k in b_keys.tolist()], dim)
    # Where each wanted key is: (row positions or -1, rows, scales); the cache's
    # blob comes last and so wins over the file's copy: it is the newer.
    sources = []
    if old:
        sources.append((old.lookup(wanted), old.matrix, old.scale))
    if b_keys.size:
        at = np.minimum(np.searchsorted(b_keys, wanted), b_keys.size - 1)
        sources.append((np.where(b_keys[at] == wanted, at, -1), b_rows, b_scale))
    found = np.zeros(wanted.size, dtype=bool)
    for pos, _, _ in sources:
        found |= pos >= 0
    rows = np.concatenate([np.arange(n), n + np.flatnonzero(found[n:])])
    matrix = np.zeros((rows.size, dim), dtype=np.int8)
    scale = np.zeros(rows.size, dtype=np.float32)
    for pos, src, src_scale in sources:
        sel = np.flatnonzero(pos[rows] >= 0)
        if dim:  # whole rows as one opaque item each: a fancy index of int8 rows is 20x slower
            whole = f"V{dim}"
            matrix.view(whole)[sel] = np.ascontiguousarray(src).view(whole)[pos[rows[sel]]]
        scale[sel] = src_scale[pos[rows[sel]]]
    return Vectors(
        matrix=matrix,
        scale=scale,
        chunks=n,
        has_vector=found[:n],
        owner=keys.owner[found[n:]],
        lines_complete=bool(found[n:].all()),
        source=old.layout.file if old else None,
        keys=wanted[rows],
        folded=[h for h, u in zip(hashes, used, strict=True) if u],
        unused=[h for h, u in zip(hashes, used, strict=True) if not u],
    )


def _blobs(conn: sqlite3.Connection, model: str, hashes: list[str]) -> dict[int, bytes]:
    """Key -> blob of the given pending hashes."""
    return {int(h[:16], 16): b for h, b in cache_blobs(conn, model, hashes).items()}


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
        vec.keys if vec.keys is not None else np.zeros(0, np.uint64),
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
            new = VectorFile.open(folder, layout)
            gone: Any = old.keys[new.lookup(old.keys) < 0] if old and new else []
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
