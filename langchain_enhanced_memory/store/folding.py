"""A generation's vectors: the segment files that cover it, a gathered delta, then a fold.

A model's vectors live in segment files (:mod:`.vector_segments`), oldest first;
each holds the rows of some chunks, by chunk id, and the rows of their lines.
:func:`coverage` maps them onto the generation's live chunks (a chunk a later change
replaced is masked out). :func:`assemble` gathers the rest, the chunks no segment
covers, from the named files and the model's spool (by text hash). :func:`fold`
writes them as a delta segment and, in the commit that names it, drops the spool;
then the files no row names go, and with them the vectors no generation uses
(garbage collection after a run, never during). When there are too many segments, or
the masked rows pass a share of all rows, the small or mostly masked ones are
gathered into one new segment instead (the segments' one policy,
:func:`.segment.merge_pick`). Writes run under the writer lock, in the embedding run
(its last step) and ``index --compact``; a search only reads (:func:`coverage`,
:func:`assemble`), and reads past a named file that is lost until the next embedding
run forgets it (:func:`forget_lost`).
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..core.segments import locate
from ..core.settings import MemorySettings
from ..core.vectorset import VectorPart, VectorSet, dequantize
from . import embed_cache
from .db import IndexDB, chunk_ids, generation_of, rollback
from .segment import merge_pick
from .spool import Spool, SpoolState, drop_state, spool_state
from .spool import append as spool_append
from .sync import sha
from .vector_segments import (
    Keyed,
    Layout,
    VectorSegment,
    current_layouts,
    hash_keys,
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
    "held_keys",
    "kept_files",
    "mapped",
    "missing_plan",
    "vector_dim",
    "vector_models",
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
    sources: list[Keyed] = [*files, *([spool] if spool is not None else [])]
    out: dict[str, np.ndarray] = {}
    for source, at, pos in _newest(sources, hash_keys(hashes)):
        rows = dequantize(np.asarray(source.matrix[pos]), np.asarray(source.scale[pos]))
        out.update(zip([hashes[i] for i in at], rows, strict=True))
    return out


def vector_models(conn: sqlite3.Connection) -> list[str]:
    """The models with vectors: a named segment file or a spool."""
    rows = conn.execute(
        "SELECT name FROM catalog WHERE name LIKE 'vectors:%' OR name LIKE 'spool:%'"
    )
    return sorted({name.split(":", 1)[1] for (name,) in rows})


def held_keys(conn: sqlite3.Connection, folder: Path, model: str) -> np.ndarray:
    """The keys (:func:`.vector_segments.hash_keys`) ``model`` has a vector of, sorted, once each.

    What its named segment files and its spool hold, the one record of which
    texts a model has a vector of.
    """
    _, files, spool, _ = _open_named(conn, folder, model)
    keys = [vf.keys for vf in files] + ([spool.distinct_keys] if spool is not None else [])
    return np.unique(np.concatenate(keys)) if keys else np.zeros(0, dtype=np.uint64)


def vector_dim(conn: sqlite3.Connection, model: str) -> int | None:
    """Dimension of the vectors cached for ``model``, None when there are none."""
    state = spool_state(conn, model)
    if state is not None:
        return state.dim
    current = current_layouts(conn, model)
    return current[1][0].dim if current and current[1] else None


def _newest(
    sources: list[Keyed], keys: np.ndarray
) -> Iterator[tuple[Keyed, np.ndarray, np.ndarray]]:
    """Each source, the positions of ``keys`` whose newest copy it holds, and their rows there.

    ``sources`` are oldest first (segments in naming order, then the spool):
    a key's copy in a later source wins.
    """
    found = [source.lookup(keys) for source in sources]
    later = np.zeros(keys.shape, dtype=bool)
    for source, pos in reversed(list(zip(sources, found, strict=True))):
        at = np.flatnonzero((pos >= 0) & ~later)
        later[at] = True
        yield source, at, pos[at]


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
    # Line vectors of chunks that lack their own (keys, rows, scales): a segment cannot hold
    # them, so a fold spools them again rather than lose them.
    spill: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

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
    sources: list[Keyed] = [*cov.files, *([cov.spool] if cov.spool is not None else [])]
    newest = list(_newest(sources, wanted))
    found = np.zeros(wanted.size, dtype=bool)
    for _, at, _ in newest:
        found[at] = True
    has = found[:m]
    lines = np.flatnonzero(found[m:] & has[keys.owner])  # lines of the chunks that have one
    orphans = np.flatnonzero(found[m:] & ~has[keys.owner])
    pick = np.concatenate([np.flatnonzero(has), m + lines, m + orphans])
    slot = np.full(wanted.size, -1, dtype=np.int64)  # each picked key's row in the delta
    slot[pick] = np.arange(pick.size)
    matrix = np.zeros((pick.size, dim), dtype=np.int8)
    scale = np.zeros(pick.size, dtype=np.float32)
    for source, at, pos in newest:
        to = slot[at]
        _copy_rows(matrix, scale, to[to >= 0], source, pos[to >= 0])
    k, end = int(has.sum()), pick.size - orphans.size
    owner = (np.cumsum(has) - 1)[keys.owner[lines]].astype(np.int32)
    delta = VectorPart(matrix[:k], scale[:k], rows[has], matrix[k:end], scale[k:end], owner)
    kept = [cov.layouts[i] for i in keep]
    parts = [_part(cov.files[i], r, cov.folder) for i, r in cov.used if i in keep] + [delta]
    lines_ok = bool(found[m:].all()) and all(lay.lines_complete for lay in kept)
    return GenerationVectors(
        VectorSet(parts, cov.live_ids.size),
        lines_complete=lines_ok,
        sources=[lay.file for lay in cov.layouts],
        kept=kept,
        delta={
            "matrix": matrix[:end],
            "scale": scale[:end],
            "owner": owner,
            "row_keys": wanted[pick[:end]],
            "chunks": k,
            "lines_complete": bool(found[m:].all()),
            "ids": cov.live_ids[rows[has]],
        },
        spool=cov.spool.state if cov.spool is not None else None,
        spill=(wanted[m + orphans], matrix[end:], scale[end:]) if orphans.size else None,
    )


def _copy_rows(
    matrix: np.ndarray, scale: np.ndarray, to: np.ndarray, source: Keyed, rows: np.ndarray
) -> None:
    """Copy ``source``'s ``rows`` into ``matrix`` and ``scale`` at ``to``."""
    if matrix.shape[1]:  # whole rows as one opaque item each: a fancy index of int8 rows is slower
        whole = f"V{matrix.shape[1]}"
        # A slice at a time: the gathered rows are never copied whole beside the matrix.
        for lo in range(0, to.size, GATHER_ROWS):
            part = slice(lo, lo + GATHER_ROWS)
            matrix.view(whole)[to[part]] = source.matrix.view(whole)[rows[part]]
    scale[to] = source.scale[rows]


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
    return embed_cache.missing_plan(settings, keys, [*cov.files, *spool])


def fold(
    db: IndexDB,
    folder: Path,
    model: str,
    generation: int,
    vec: GenerationVectors,
    complete: bool = True,
) -> list[Layout] | None:
    """Write ``vec``'s delta as a segment and name it with the kept ones (writer lock held).

    ``complete`` False (a merge of a generation some chunks lack vectors of)
    names the files for no generation, as :func:`drop_lost` does, so the next
    run plans what they lack (:func:`is_complete`).

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
                (f"vectors:{model}", generation if complete else -1, layouts_json(layouts)),
            )
            if vec.spool is not None:
                drop_state(conn, model)
            if vec.spill is not None:
                spool_append(conn, folder, model, *vec.spill)
            conn.execute("COMMIT")
        except BaseException:
            rollback(conn)
            (folder / layout.file).unlink(missing_ok=True)
            raise
        log.debug("vectors of generation %s in %s", generation, layout.file)
        sweep(folder, kept_files(conn))
    if vec.spool is not None:
        (folder / vec.spool.file).unlink(missing_ok=True)
    return layouts


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
    """A side file of ``model`` is gone (deleted by hand): stop naming it (writer lock held).

    The vectors it held, and only those, are embedded again by the next index
    run: the files still named hold the others.
    """
    with db.open() as conn:
        conn.execute("BEGIN IMMEDIATE")
        current = current_layouts(conn, model)
        if isinstance(lost, SpoolState):
            if spool_state(conn, model) == lost:
                log.warning("vector file %s is damaged or missing: embedding again", lost.file)
                drop_state(conn, model)
        elif current and lost in current[1]:
            log.warning("vector file %s is missing: its vectors get embedded again", lost.file)
            left = [lay for lay in current[1] if lay != lost]
            if left:  # named for no generation: not complete (is_complete) until a fold
                conn.execute(
                    "UPDATE catalog SET generation=-1, data=? WHERE name=?",
                    (layouts_json(left), f"vectors:{model}"),
                )
            else:
                conn.execute("DELETE FROM catalog WHERE name=?", (f"vectors:{model}",))
        conn.execute("COMMIT")


def kept_files(conn: sqlite3.Connection) -> set[str]:
    """The side files some ``catalog`` row names."""
    out = set()
    for (data,) in conn.execute("SELECT data FROM catalog WHERE name LIKE 'vectors:%'"):
        out |= {lay.file for lay in parse_layouts(data) or []}
    return out
