"""A generation's vectors: the segment files that cover it, a gathered delta, then a fold.

A model's vectors live in segment files (:mod:`.vector_segments`), oldest first; each
holds the rows of some chunks, by chunk id, and the rows of their lines.
:func:`coverage` maps them onto the generation's live chunks (a chunk a later
change replaced is masked out). :func:`assemble` gathers the rest, the chunks
no segment covers, from the named files and the model's spool (by text
hash). :func:`fold` writes them as a delta segment and, in the commit that
names it, drops the spool and deletes the cache rows no generation uses
(garbage collection after a run, never during); then the files no row names
go. When there are too many segments, or the masked rows pass a share of
all rows, the small or mostly masked ones are gathered into one new segment
instead (the segments' one policy, :func:`.segment.merge_pick`). Writes run
under the writer lock, in the embedding run (its last step) and ``index
--compact``; a search only reads (:func:`coverage`, :func:`assemble`), and
reads past a named file that is lost until the next embedding run forgets it
(:func:`forget_lost`).
"""

from __future__ import annotations

import logging
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..core.segments import locate
from ..core.settings import MemorySettings
from ..core.vectorset import VectorPart, VectorSet, dequantize
from . import embed_cache
from .db import IndexDB, chunk_ids, generation_of, rollback
from .embed_cache import vector_dim
from .segment import merge_pick
from .spool import Spool, SpoolState, drop_state, spool_state
from .sync import sha
from .vector_segments import (
    Layout,
    VectorSegment,
    current_layouts,
    hash_keys,
    key_prefix,
    layouts_json,
    parse_layouts,
    side_folder,
    sweep,
    write,
)

__all__ = [
    "Coverage",
    "GenerationVectors",
    "assemble",
    "cached_vectors",
    "coverage",
    "drop_lost",
    "fold",
    "forget_lost",
    "kept_files",
    "mapped",
    "missing_plan",
]

log = logging.getLogger("langchain_enhanced_memory")

#: Rows a fold copies from a segment or the spool at once.
GATHER_ROWS = 1 << 16


@dataclass
class Coverage:
    """Which live chunks ``model``'s named segment files cover, and which they leave.

    Attributes:
        layouts: The named files' layouts that opened, oldest first.
        files: The same files, mapped.
        used: The files (indices) whose rows are mapped onto live rows, with those rows.
        uncovered: Live rows no used file covers, ascending.
        live_ids: The generation's chunk ids (row ``i`` is ``live_ids[i]``).
        folder: The side folder the files are in.
        spool: The model's spool, when it has one that opened.
        lost: Named files that would not open (a writer moved on, or one was deleted):
            read as if not named; a writer forgets them (:func:`drop_lost`).
    """

    layouts: list[Layout]
    files: list[VectorSegment]
    used: list[tuple[int, np.ndarray]]
    uncovered: np.ndarray
    live_ids: np.ndarray
    folder: Path
    spool: Spool | None = None
    lost: list[Layout | SpoolState] = field(default_factory=list)

    def parts(self) -> list[VectorPart]:
        """The used files as parts of a :class:`..core.vectorset.VectorSet`."""
        return [_part(self.files[i], rows, self.folder) for i, rows in self.used]


def _part(vf: VectorSegment, rows: np.ndarray, folder: Path) -> VectorPart:
    """A segment's rows as a part: chunk rows mapped, line rows read on demand."""
    n = vf.layout.chunks
    lines = vf.line_rows(folder)
    return VectorPart(
        matrix=vf.matrix[:n],
        scale=vf.scale[:n],
        rows=rows,
        lines=lines[0] if lines else vf.matrix[n:],
        line_scale=lines[1] if lines else vf.scale[n:],
        owner=vf.owner,
        codes=vf.codes,
        center=vf.center,
    )


def coverage(
    conn: sqlite3.Connection,
    folder: Path,
    model: str,
    settings: MemorySettings,
    live_ids: np.ndarray,
) -> Coverage:
    """Map ``model``'s named files onto the live chunks (those that will not open: ``lost``)."""
    layouts, files, spool, lost = _open_named(conn, folder, model)
    wants_lines = bool(settings.vectors.line_vector_share)
    covered = np.zeros(live_ids.size, dtype=bool)
    used = []
    for i, vf in enumerate(files):
        if wants_lines and not vf.layout.lines_complete:
            continue  # gathered again with its lines
        rows = locate(vf.ids, live_ids)
        rows = np.where(covered[np.maximum(rows, 0)], -1, rows)  # each row from one file only
        covered[rows[rows >= 0]] = True
        used.append((i, rows))
    uncovered = np.flatnonzero(~covered)
    return Coverage(layouts, files, used, uncovered, live_ids, folder, spool, lost)


def _open_named(
    conn: sqlite3.Connection, folder: Path, model: str
) -> tuple[list[Layout], list[VectorSegment], Spool | None, list[Layout | SpoolState]]:
    """``model``'s named segment files and spool, opened, and those that will not open."""
    current = current_layouts(conn, model)
    lost: list[Layout | SpoolState] = []
    layouts, files = [], []
    for layout in current[1] if current else []:
        vf = VectorSegment.open(folder, layout)
        if vf is None:
            lost.append(layout)
        else:
            layouts.append(layout)
            files.append(vf)
    state = spool_state(conn, model)
    spool = Spool.open(folder, state) if state else None
    if state and spool is None:
        lost.append(state)
    return layouts, files, spool, lost


def cached_vectors(
    conn: sqlite3.Connection, folder: Path, model: str, hashes: list[str]
) -> dict[str, np.ndarray]:
    """Hash -> float32 vector of those of ``hashes`` that ``model`` has (a segment or the spool)."""
    if not hashes:
        return {}
    _, files, spool, _ = _open_named(conn, folder, model)
    keys = hash_keys(hashes)
    out: dict[str, np.ndarray] = {}
    sources: list[VectorSegment | Spool] = [*files, *([spool] if spool is not None else [])]
    for source in sources:  # oldest first: newer copies win
        pos = source.lookup(keys)
        at = np.flatnonzero(pos >= 0)
        rows = dequantize(np.asarray(source.matrix[pos[at]]), np.asarray(source.scale[pos[at]]))
        out.update(zip([hashes[i] for i in at], rows, strict=True))
    return out


def _plan(cov: Coverage, full: bool) -> tuple[list[int], np.ndarray, bool]:
    """What a fold keeps and gathers: used files kept, rows gathered, whether that is all rows.

    The segments' one policy (:func:`.segment.merge_pick`), the gathered rows a
    segment of their own; the files keep ascending rows, so from the first picked
    file on, every file is gathered again.
    """
    n = cov.live_ids.size
    if full or not cov.used:
        return [], np.arange(n), True
    used = [rows for _, rows in cov.used]
    stored = [rows.size for rows in used]
    live = [int((rows >= 0).sum()) for rows in used]
    if cov.uncovered.size:
        stored, live = [*stored, cov.uncovered.size], [*live, cov.uncovered.size]
    pick = merge_pick(stored, live)
    start = pick[0] if pick else len(used)
    if start == 0:
        return [], np.arange(n), True
    tail = [rows[rows >= 0] for rows in used[start:]]
    kept = [i for i, _ in cov.used[:start]]
    return kept, np.sort(np.concatenate([cov.uncovered, *tail])), False


@dataclass
class GenerationVectors:
    """One generation's vectors: mapped parts, and a gathered delta when some rows needed one."""

    vectors: VectorSet
    lines_complete: bool
    sources: list[str]  # the named files it was built on
    kept: list[Layout] = field(default_factory=list)  # named files a fold keeps naming
    delta: dict | None = None  # the gathered rows, as :func:`.vector_segments.write` takes them
    spool: SpoolState | None = None  # the spool read, which a fold drops
    spooled_unused: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.uint64))

    @property
    def merged(self) -> bool:
        """Whether it is one segment of every live row, nothing masked (nothing to compact)."""
        parts = self.vectors.parts
        return len(self.sources) == 1 and len(parts) == 1 and bool((parts[0].rows >= 0).all())

    @property
    def complete(self) -> bool:
        """Every live chunk has its vector."""
        return bool(self.vectors.has_vector.all())


def mapped(cov: Coverage) -> GenerationVectors:
    """The vectors of a coverage with nothing uncovered, as read-only maps."""
    return GenerationVectors(
        VectorSet(cov.parts(), cov.live_ids.size),
        lines_complete=all(cov.files[i].layout.lines_complete for i, _ in cov.used),
        sources=[lay.file for lay in cov.layouts],
    )


def assemble(
    conn: sqlite3.Connection,
    model: str,
    settings: MemorySettings,
    cov: Coverage,
    full: bool = False,
) -> GenerationVectors:
    """Gather the vectors of the rows ``cov`` leaves uncovered (all of them for a merge).

    ``full`` gathers every row, to write one segment (``index --compact``).
    """
    keep, rows, everything = _plan(cov, full)
    keys = embed_cache.generation_keys(conn, settings, None if everything else cov.live_ids[rows])
    m = keys.chunks.size
    wanted = np.concatenate([keys.chunks, keys.lines])
    dim = cov.files[0].layout.dim if cov.files else (vector_dim(conn, model) or 0)
    # Where each wanted key is: (row positions or -1, rows, scales); the spool
    # comes last and so wins over a file's copy: it is the newer.
    sources = [(vf.lookup(wanted), vf.matrix, vf.scale) for vf in cov.files]
    if cov.spool is not None:
        sources.append((cov.spool.lookup(wanted), cov.spool.matrix, cov.spool.scale))
    found = np.zeros(wanted.size, dtype=bool)
    for pos, _, _ in sources:
        found |= pos >= 0
    has = found[:m]
    lines = np.flatnonzero(found[m:] & has[keys.owner])  # lines of the chunks that have one
    pick = np.concatenate([np.flatnonzero(has), m + lines])
    matrix = np.zeros((pick.size, dim), dtype=np.int8)
    scale = np.zeros(pick.size, dtype=np.float32)
    for pos, src, src_scale in sources:
        sel = np.flatnonzero(pos[pick] >= 0)
        if dim:  # whole rows as one opaque item each: a fancy index of int8 rows is much slower
            whole = f"V{dim}"
            # A slice at a time: the gathered rows are never copied whole beside the matrix.
            for lo in range(0, sel.size, GATHER_ROWS):
                part = sel[lo : lo + GATHER_ROWS]
                matrix.view(whole)[part] = src.view(whole)[pos[pick[part]]]
        scale[sel] = src_scale[pos[pick[sel]]]
    k = int(has.sum())
    owner = (np.cumsum(has) - 1)[keys.owner[lines]].astype(np.int32)
    delta = VectorPart(matrix[:k], scale[:k], rows[has], matrix[k:], scale[k:], owner)
    kept = [cov.layouts[i] for i in keep]
    parts = [_part(cov.files[i], r, cov.folder) for i, r in cov.used if i in keep] + [delta]
    spooled = cov.spool.distinct_keys if cov.spool is not None else np.zeros(0, dtype=np.uint64)
    spool_used = np.isin(spooled, wanted)
    for i in keep:
        spool_used |= cov.files[i].lookup(spooled) >= 0
    lines_ok = bool(found[m:].all()) and all(lay.lines_complete for lay in kept)
    return GenerationVectors(
        VectorSet(parts, cov.live_ids.size),
        lines_complete=lines_ok,
        sources=[lay.file for lay in cov.layouts],
        kept=kept,
        delta={
            "matrix": matrix,
            "scale": scale,
            "owner": owner,
            "row_keys": wanted[pick],
            "chunks": k,
            "lines_complete": bool(found[m:].all()),
            "ids": cov.live_ids[rows[has]],
        },
        spool=cov.spool.state if cov.spool is not None else None,
        spooled_unused=spooled[~spool_used],
    )


def is_complete(conn: sqlite3.Connection, model: str, settings: MemorySettings) -> bool:
    """Whether this generation's side file was written with every vector it needs.

    Saves a re-index with nothing to do from reading every line hash.
    """
    current = current_layouts(conn, model)
    if current is None or current[0] != generation_of(conn):
        return False
    return all(lay.lines_complete for lay in current[1]) or not settings.vectors.line_vector_share


def missing_plan(
    conn: sqlite3.Connection, folder: Path, model: str, settings: MemorySettings
) -> embed_cache.MissingPlan:
    """What lacks a vector for ``model``: texts to embed, chunks whose vector is their lines' mean.

    Only the chunks no segment covers are looked at: a one-file change reads
    that file's chunks, not every chunk's hashes.
    """
    if is_complete(conn, model, settings):
        return embed_cache.MissingPlan.empty()
    ids = chunk_ids(conn)
    cov = coverage(conn, folder, model, settings, ids)
    if cov.lost:  # the embedding run forgets it first (forget_lost), then embeds its vectors
        return embed_cache.MissingPlan.empty()
    keys = embed_cache.generation_keys(conn, settings, ids[cov.uncovered])
    spool = [cov.spool] if cov.spool is not None else []
    return embed_cache.missing_plan(model, settings, keys, [*cov.files, *spool])


def fold(
    db: IndexDB,
    folder: Path,
    model: str,
    generation: int,
    vec: GenerationVectors,
    files: list[VectorSegment],
) -> list[Layout] | None:
    """Write ``vec``'s delta as a segment and name it with the kept ones (writer lock held).

    Returns the new layouts, or None when the index moved on meanwhile (another
    generation, or another process folded this one first).
    """
    assert vec.delta is not None
    layout = write(folder, f"{sha(model)[:12]}-g{generation}", **vec.delta)
    layouts = [*vec.kept, layout]
    with db.open() as conn:
        conn.execute("BEGIN IMMEDIATE")
        try:
            current = current_layouts(conn, model)
            named = [lay.file for lay in current[1]] if current else []
            moved = named != vec.sources or spool_state(conn, model) != vec.spool
            if generation_of(conn) != generation or moved:
                conn.execute("ROLLBACK")
                (folder / layout.file).unlink(missing_ok=True)
                return None
            conn.execute(
                "INSERT OR REPLACE INTO catalog VALUES (?, ?, ?)",
                (f"vectors:{model}", generation, layouts_json(layouts)),
            )
            gone = _gone_keys(folder, files, layouts)
            if vec.spool is not None:
                drop_state(conn, model)
                gone = np.union1d(gone, vec.spooled_unused)
            conn.executemany(
                "DELETE FROM embed_cache WHERE model=? AND text_hash >= ? AND text_hash < ?",
                [(model, p, p + "g") for p in map(key_prefix, map(int, gone))],
            )
            conn.execute("COMMIT")
        except BaseException:
            rollback(conn)
            (folder / layout.file).unlink(missing_ok=True)
            raise
        log.debug(
            "vectors of generation %s in %s (%d rows freed)", generation, layout.file, gone.size
        )
        sweep(folder, kept_files(conn))
    if vec.spool is not None:
        (folder / vec.spool.file).unlink(missing_ok=True)
    return layouts


def _gone_keys(folder: Path, files: list[VectorSegment], layouts: list[Layout]) -> np.ndarray:
    """Keys of the files no longer named that no named file holds (their cache rows go)."""
    names = {lay.file for lay in layouts}
    dropped = [vf for vf in files if vf.layout.file not in names]
    if not dropped:
        return np.zeros(0, dtype=np.uint64)
    keys = np.unique(np.concatenate([vf.keys for vf in dropped]))
    keep = np.zeros(keys.size, dtype=bool)
    for lay in layouts:
        vf = VectorSegment.open(folder, lay)
        if vf is not None:
            keep |= vf.lookup(keys) >= 0
    return keys[~keep]


def forget_lost(db: IndexDB, model: str) -> None:
    """Forget ``model``'s named side files that are lost (takes the writer lock when any is).

    An embedding run calls it first, so the vectors they held are embedded again
    in that run; a search reads without them and writes nothing.
    """
    with db.open() as conn:
        lost = _open_named(conn, side_folder(db.path), model)[3]
    if lost:
        with db.writer_lock():
            for gone in lost:
                drop_lost(db, model, gone)


def drop_lost(db: IndexDB, model: str, lost: Layout | SpoolState) -> None:
    """A side file of ``model`` is gone (deleted by hand): forget the vectors it held.

    They are embedded again by the next index run (writer lock held). A lost
    segment takes every vector with it (the cache rows do not say which file
    holds theirs); a lost spool, the rows of the vectors no segment holds.
    """
    with db.open() as conn:
        conn.execute("BEGIN IMMEDIATE")
        current = current_layouts(conn, model)
        if isinstance(lost, SpoolState):
            if spool_state(conn, model) == lost:
                log.warning("vector file %s is damaged or missing: embedding again", lost.file)
                drop_state(conn, model)
                layouts = current[1] if current else []
                _delete_unbacked_rows(conn, side_folder(db.path), model, layouts)
        elif current and lost in current[1]:
            log.warning("vector file %s is missing: its vectors get embedded again", lost.file)
            conn.execute("DELETE FROM catalog WHERE name=?", (f"vectors:{model}",))
            drop_state(conn, model)
            conn.execute("DELETE FROM embed_cache WHERE model=?", (model,))
        conn.execute("COMMIT")


def _delete_unbacked_rows(
    conn: sqlite3.Connection, folder: Path, model: str, layouts: list[Layout]
) -> None:
    """Delete ``model``'s cache rows whose vector none of the segments ``layouts`` holds."""
    held = [h for (h,) in conn.execute("SELECT text_hash FROM embed_cache WHERE model=?", (model,))]
    keys, found = hash_keys(held), np.zeros(len(held), dtype=bool)
    for layout in layouts:
        vf = VectorSegment.open(folder, layout)
        if vf is not None:
            found |= vf.lookup(keys) >= 0
    conn.executemany(
        "DELETE FROM embed_cache WHERE model=? AND text_hash=?",
        [(model, h) for h, f in zip(held, found, strict=True) if not f],
    )


def kept_files(conn: sqlite3.Connection) -> set[str]:
    """The side files some ``catalog`` row names."""
    out = set()
    for (data,) in conn.execute("SELECT data FROM catalog WHERE name LIKE 'vectors:%'"):
        out |= {lay.file for lay in parse_layouts(data) or []}
    return out
