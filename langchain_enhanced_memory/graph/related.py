"""The graph in search: each hit's ``related`` chunks, and graph neighbours as candidates.

Refs are read once per index generation and graph build (cached), and only
refs whose two files are unchanged since the build are used.
"""

from __future__ import annotations

import logging
import sqlite3
from collections import defaultdict
from typing import TYPE_CHECKING

import numpy as np

from ..core.errors import IndexUnavailableError
from ..core.results import Hit
from ..core.settings import MemorySettings
from ..core.snapshot import Snapshot
from .storage import has_tables

if TYPE_CHECKING:
    from .host import GraphHost

__all__ = ["add_graph_neighbors", "attach_related"]

log = logging.getLogger("langchain_enhanced_memory")

# (index path, generation, build id) -> {(path, line): [(dst_path, dst_line, dst_end,
# dst_header, sim)]}; line -1 holds the whole file's refs.
_RELATED_CACHE: dict[tuple[str, int, str], dict[tuple[str, int], list[tuple]]] = {}


def _current_refs(index: GraphHost, generation: int) -> dict[tuple[str, int], list[tuple]]:
    """Stored refs whose two files are unchanged since the build (stale ones are skipped)."""
    refs: dict[tuple[str, int], list[tuple]] = defaultdict(list)
    try:
        with index.reader() as conn:
            if has_tables(conn):
                row = conn.execute(
                    "SELECT value FROM crossref_meta WHERE key='build_id'"
                ).fetchone()
                key = (str(index.path), generation, row[0] if row else "")
                cached = _RELATED_CACHE.get(key)
                if cached is not None:
                    return cached
                rows = conn.execute(
                    "SELECT r.src_path, r.src_line, r.dst_path, r.dst_line, r.dst_end,"
                    " r.dst_header, r.sim FROM crossref_refs r"
                    " JOIN crossref_files a ON a.path = r.src_path"
                    " JOIN files fa ON fa.path = a.path AND fa.hash = a.hash"
                    " JOIN crossref_files b ON b.path = r.dst_path"
                    " JOIN files fb ON fb.path = b.path AND fb.hash = b.hash"
                    " ORDER BY r.sim DESC"
                ).fetchall()
                for sp, sl, dp, dl, de, dh, s in rows:
                    refs[(sp, sl)].append((dp, dl, de, dh, s))
                    refs[(sp, -1)].append((dp, dl, de, dh, s))
                _RELATED_CACHE.clear()
                _RELATED_CACHE[key] = refs
    except (sqlite3.Error, IndexUnavailableError) as exc:
        # `related` is optional: a busy index must not fail the search itself.
        log.debug("cross-references unavailable: %s", exc)
    return refs


def _related_of(refs: dict, path: str, line: int, n: int) -> list[tuple]:
    """The chunk's own refs when it is a representative, else its file's strongest refs."""
    own = refs.get((path, line))
    pool = own if own else refs.get((path, -1), [])
    out, seen = [], set()
    for r in pool:
        if (r[0], r[1]) not in seen:
            seen.add((r[0], r[1]))
            out.append(r)
            if len(out) == n:
                break
    return out


def attach_related(index: GraphHost, generation: int, hits: list[Hit], n: int) -> None:
    """Fill each hit's ``related`` with its ``n`` strongest cross-referenced chunks."""
    refs = _current_refs(index, generation)
    if not refs:
        return
    for h in hits:
        h.related = [
            {"path": dp, "startLine": dl, "endLine": de, "header": dh, "similarity": s}
            for dp, dl, de, dh, s in _related_of(refs, h.path, h.start_line, n)
        ]


def add_graph_neighbors(
    index: GraphHost, snap: Snapshot, scores: np.ndarray, settings: MemorySettings
) -> None:
    """Give graph neighbours of the top hits a score (in place).

    A neighbour ``j`` of hit ``i`` scores at least ``score[i] * sim * weight``,
    so a chunk linked to a strong hit enters the candidate pool even when the
    query shares no word with it.
    """
    refs = _current_refs(index, snap.generation)
    if not refs or not len(snap):
        return
    where = {(p, int(s)): i for i, (p, s) in enumerate(zip(snap.paths, snap.start, strict=True))}
    top = np.argsort(-scores, kind="stable")[: settings.crossref.graph_neighbor_top]
    for i in top:
        base = float(scores[i])
        if base <= 0:
            continue
        for dp, dl, _de, _dh, s in _related_of(
            refs, snap.paths[i], int(snap.start[i]), settings.crossref.crossref_refs_per_chunk
        ):
            j = where.get((dp, dl))
            if j is not None:
                scores[j] = max(
                    float(scores[j]), base * s * settings.crossref.graph_neighbor_weight
                )
