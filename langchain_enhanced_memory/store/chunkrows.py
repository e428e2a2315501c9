"""Each chunk's row kept in its postings segment: lines, path, headers and text.

A fresh process used to read every chunk row from SQLite and build seven
Python objects per chunk (at 100k chunks most of its load). The
segment file that holds a chunk's postings (:mod:`.postings`) holds its row
too, written with it and named in the same commit, so it is exactly as
current and as crash-safe: the row arrays are mapped, the strings decoded
only when a query shows them (:mod:`..core.strings`). A chunk id is never
reused and a chunk is never updated in place (a changed file gets new
chunks), so a row in any named segment is the row SQLite holds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..core.strings import PlacedStrings, Strings

__all__ = ["ChunkRows", "SegmentRows", "place", "used_paths"]

_STRINGS = ("paths", "header", "headers", "text")


def used_paths(path: np.ndarray, n: int) -> np.ndarray:
    """The entries of an ``n``-path table that ``path`` uses, ascending."""
    used = np.zeros(n, dtype=bool)  # not np.unique: its first call imports numpy.ma
    used[path] = True
    return np.flatnonzero(used)


@dataclass
class SegmentRows:
    """One segment's chunk rows (row ``i`` is the segment's ``i``-th chunk).

    ``path`` indexes ``paths``, the segment's table of file paths (a file's
    chunks share one entry).
    """

    start: np.ndarray
    end: np.ndarray
    path: np.ndarray
    paths: Strings
    header: Strings
    headers: Strings
    text: Strings

    @classmethod
    def build(cls, rows: Sequence[tuple[str, int, int, str, str, str]]) -> SegmentRows:
        """From ``(path, start_line, end_line, header, headers, text)`` rows."""
        table: dict[str, int] = {}
        path = np.fromiter(
            (table.setdefault(r[0], len(table)) for r in rows), np.int32, count=len(rows)
        )
        return cls(
            start=np.fromiter((r[1] for r in rows), np.int32, count=len(rows)),
            end=np.fromiter((r[2] for r in rows), np.int32, count=len(rows)),
            path=path,
            paths=Strings.encode(table),
            header=Strings.encode(r[3] for r in rows),
            headers=Strings.encode(r[4] for r in rows),
            text=Strings.encode(r[5] for r in rows),
        )

    def arrays(self) -> dict[str, np.ndarray]:
        """The arrays a segment file stores, by name."""
        out = {"row.start": self.start, "row.end": self.end, "row.path": self.path}
        for name in _STRINGS:
            s: Strings = getattr(self, name)
            out[f"row.{name}.data"], out[f"row.{name}.offsets"] = s.data, s.offsets
        return out

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray], n: int) -> SegmentRows | None:
        """The rows of a segment file's arrays (``n`` chunks).

        None when it has none or they do not fit (a damaged file).
        """
        try:
            strings = {
                name: Strings(arrays[f"row.{name}.data"], arrays[f"row.{name}.offsets"])
                for name in _STRINGS
            }
            rows = cls(arrays["row.start"], arrays["row.end"], arrays["row.path"], **strings)
        except KeyError:
            return None
        sizes = {rows.start.size, rows.end.size, rows.path.size}
        sizes |= {len(rows.header), len(rows.headers), len(rows.text)}
        in_table = n == 0 or 0 <= rows.path.min() <= rows.path.max() < len(rows.paths)
        fits = sizes == {n} and in_table
        return rows if fits else None

    def take(self, keep: np.ndarray) -> SegmentRows:
        """The rows ``keep`` (ascending) selects."""
        return SegmentRows(
            self.start[keep],
            self.end[keep],
            self.path[keep],
            self.paths,
            self.header.take(keep),
            self.headers.take(keep),
            self.text.take(keep),
        )

    @classmethod
    def concat(cls, parts: list[SegmentRows]) -> SegmentRows:
        """The rows of ``parts`` one after another, with one table of the paths they use."""
        table: dict[str, int] = {}
        paths = []
        for p in parts:
            names = p.paths.tolist()
            used = used_paths(p.path, len(names))
            remap = np.zeros(len(names), dtype=np.int32)
            remap[used] = [table.setdefault(names[u], len(table)) for u in used.tolist()]
            paths.append(remap[p.path])
        return cls(
            start=np.concatenate([p.start for p in parts]),
            end=np.concatenate([p.end for p in parts]),
            path=np.concatenate(paths).astype(np.int32),
            paths=Strings.encode(table),
            header=Strings.concat([p.header for p in parts]),
            headers=Strings.concat([p.headers for p in parts]),
            text=Strings.concat([p.text for p in parts]),
        )


@dataclass
class ChunkRows:
    """The generation's rows, live row ``i`` first to last.

    ``path`` indexes ``names`` (every segment's table, one after another).
    """

    start: np.ndarray
    end: np.ndarray
    path: np.ndarray
    names: list[str]
    header: Sequence[str]
    headers: Sequence[str]
    texts: Sequence[str]


def place(segments: list[SegmentRows], rows: list[np.ndarray], n: int) -> ChunkRows:
    """The live rows of ``segments``; ``rows`` gives each segment row's live row (-1: gone).

    Every live row is in exactly one segment (:func:`..core.segments.place_rows`).
    """
    if len(segments) == 1 and rows[0].size == n and (n == 0 or rows[0][-1] == n - 1):
        s = segments[0]  # one segment, every row live and in order: its columns as they are
        return ChunkRows(s.start, s.end, s.path, s.paths.tolist(), s.header, s.headers, s.text)
    start = np.zeros(n, dtype=np.int32)
    end = np.zeros(n, dtype=np.int32)
    path = np.zeros(n, dtype=np.int32)
    part = np.zeros(n, dtype=np.int32)
    local = np.zeros(n, dtype=np.int64)
    names: list[str] = []
    for i, (s, where) in enumerate(zip(segments, rows, strict=True)):
        live = where >= 0
        at = where[live]
        start[at], end[at] = s.start[live], s.end[live]
        path[at] = s.path[live] + len(names)
        part[at], local[at] = i, np.flatnonzero(live)
        names += s.paths.tolist()

    def placed(name: str) -> PlacedStrings:
        return PlacedStrings([getattr(s, name) for s in segments], part, local)

    return ChunkRows(start, end, path, names, placed("header"), placed("headers"), placed("text"))
