"""Where vectors live: the segment files searchers open.

Each vector is stored once, as int8 with a float32 scale (:func:`..core.vectorset.quantize`).
A vector not yet in a segment is in the model's spool (:mod:`.spool`); once a
generation has every chunk vector, the chunk rows no segment holds yet, then
their line rows, are written to a segment file next to the index (a temporary
name, flushed, then renamed), and the ``catalog`` row ``vectors:MODEL`` naming
it with the older segments is committed with the spool dropped
(:mod:`.folding`). The commit is the switch: a kill before it leaves the
previous segments named and searchable, and the new file is an orphan that
:func:`sweep` removes. Searchers map the chunk rows read-only (so processes
share the page cache and hold no private copy) and read line rows with
``pread`` (:class:`FileRows`). A segment carries its chunk rows' chunk ids and
the sorted keys of its rows' text hashes, which is how the next generation
finds its old vectors.
"""

from __future__ import annotations

import json
import os
import sqlite3
import weakref
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Protocol

import numpy as np

from ..core.vectorset import sign_codes
from .locations import make_private, open_private

__all__ = [
    "Fd",
    "FileRows",
    "Keyed",
    "READ_ABOVE",
    "Layout",
    "VectorSegment",
    "current_layouts",
    "find_sorted",
    "fsync_dir",
    "hash_keys",
    "held",
    "layouts_json",
    "parse_layouts",
    "side_folder",
    "sweep",
    "write",
]

_ALIGN = 8
# Arrays read by scattered rows are read with pread above this size; a smaller
# one stays a map: its few pages cost little RSS, and a map is faster to read.
READ_ABOVE = 4 << 20
# Flags of a layout that every release wrote true (read and dropped).
_ALWAYS = frozenset({"ids", "codes"})


@dataclass(frozen=True)
class Layout:
    """What a side file holds (stored as JSON in its ``catalog`` row).

    Attributes:
        file: Its name in the side folder.
        dim: Vector dimension.
        chunks: Chunk rows.
        lines: Line rows after them.
        keys: Distinct text-hash keys.
        lines_complete: Whether every line of its chunks has its row.

    Every file also holds its chunk rows' chunk ids and sign bits
    (:func:`..core.vectorset.sign_codes`), as every release wrote them.
    """

    file: str
    dim: int
    chunks: int
    lines: int
    keys: int
    lines_complete: bool

    def to_json(self) -> str:
        """The ``catalog`` row's data."""
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, data: bytes | str) -> Layout | None:
        """Parse a ``catalog`` row (None when it is not a layout of this format)."""
        try:
            fields = json.loads(data)
            # 0.1.0 also wrote "ids" and "codes", always true: the sections are the same.
            return cls(**{k: v for k, v in fields.items() if k not in _ALWAYS})
        except (AttributeError, TypeError, ValueError):
            return None

    def sections(self) -> list[tuple[str, np.dtype, tuple[int, ...], int]]:
        """``(name, dtype, shape, offset)`` of each array, 8-byte aligned."""
        rows = self.chunks + self.lines
        specs: list[tuple[str, np.dtype, tuple[int, ...]]] = [
            ("matrix", np.dtype(np.int8), (rows, self.dim)),
            ("scale", np.dtype(np.float32), (rows,)),
            ("owner", np.dtype(np.int32), (self.lines,)),
            ("keys", np.dtype(np.uint64), (self.keys,)),
            ("rows", np.dtype(np.int32), (self.keys,)),
            ("ids", np.dtype(np.int64), (self.chunks,)),
            ("codes", np.dtype(np.uint8), (self.chunks, -(-self.dim // 8))),
            ("center", np.dtype(np.float32), (self.dim,)),
        ]
        out: list[tuple[str, np.dtype, tuple[int, ...], int]] = []
        offset = 0
        for name, dtype, shape in specs:
            out.append((name, dtype, shape, offset))
            offset += -(-int(np.prod(shape)) * dtype.itemsize // _ALIGN) * _ALIGN
        out.append(("end", np.dtype(np.uint8), (0,), offset))
        return out


@dataclass
class VectorSegment:
    """One vector segment file, mapped read-only."""

    layout: Layout
    matrix: np.ndarray
    scale: np.ndarray
    owner: np.ndarray
    keys: np.ndarray
    rows: np.ndarray
    ids: np.ndarray  # chunk id of each chunk row
    codes: np.ndarray  # sign bits of each chunk row
    center: np.ndarray  # the mean they are taken about

    def lookup(self, keys: np.ndarray) -> np.ndarray:
        """The row of each key in this file, -1 when absent."""
        return find_sorted(self.keys, self.rows, keys)

    def line_rows(self, folder: Path) -> tuple[FileRows, FileRows] | None:
        """The line rows and their scales, read on demand.

        None when they are small (:data:`READ_ABOVE`: map them) or the file is gone.
        """
        sections = {
            name: (dtype, shape, offset) for name, dtype, shape, offset in self.layout.sections()
        }
        n, dim = self.layout.chunks, self.layout.dim
        if self.layout.lines * dim < READ_ABOVE:
            return None
        try:
            handle = Fd.open(folder / self.layout.file)
        except OSError:
            return None
        m_off, s_off = sections["matrix"][2], sections["scale"][2]
        return (
            FileRows(handle, m_off + n * dim, self.layout.lines, np.dtype(np.int8), (dim,)),
            FileRows(handle, s_off + n * 4, self.layout.lines, np.dtype(np.float32), ()),
        )

    @classmethod
    def open(cls, folder: Path, layout: Layout) -> VectorSegment | None:
        """Map ``layout``'s file; None when it is missing or not of the size it should be."""
        path = folder / layout.file
        sections = layout.sections()
        try:
            if path.stat().st_size != sections[-1][3]:
                return None
            arrays = {}
            for name, dtype, shape, offset in sections[:-1]:
                arrays[name] = (
                    np.memmap(path, dtype=dtype, mode="r", offset=offset, shape=shape)
                    if np.prod(shape)
                    else np.zeros(shape, dtype=dtype)
                )
        except (OSError, ValueError):
            return None
        return cls(layout=layout, **arrays)


class Fd:
    """An open file descriptor, closed with the last object holding it."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        weakref.finalize(self, os.close, fd)

    @classmethod
    def open(cls, path: Path) -> Fd:
        """Open ``path`` for reading."""
        return cls(os.open(path, os.O_RDONLY))


class FileRows:
    """Rows of a side file read with ``pread`` when asked for, not mapped.

    Line vectors are read a few hundred scattered rows a query: through a map
    the kernel maps 64 KB (or a 2 MB folio) around every touched page, so a few
    dozen queries put the whole matrix in the process's RSS; read this way the
    rows come from the page cache (shared, not counted) into a small array.

    Args:
        fd: The open file.
        offset: Where row 0 starts.
        count: Rows.
        dtype: Their type.
        tail: Each row's shape (``(dim,)`` for vectors, ``()`` for scales).
    """

    def __init__(
        self, fd: Fd, offset: int, count: int, dtype: np.dtype, tail: tuple[int, ...]
    ) -> None:
        self._fd, self._offset, self.dtype = fd, offset, dtype
        self.shape = (count, *tail)
        self._width = int(np.prod(tail, dtype=np.int64)) * dtype.itemsize

    def span(self, lo: int, hi: int) -> np.ndarray:
        """Rows ``lo`` to ``hi`` (one read)."""
        out = np.empty((max(hi - lo, 0), *self.shape[1:]), dtype=self.dtype)
        if hi > lo:
            self._read(out.reshape(-1).view(np.uint8), lo, 0, hi - lo)
        return out

    def __getitem__(self, rows: np.ndarray) -> np.ndarray:
        """The rows at ``rows`` (ascending runs are read in one call each)."""
        rows = np.asarray(rows, dtype=np.int64)
        out = np.empty((rows.size, *self.shape[1:]), dtype=self.dtype)
        if rows.size == 0:
            return out
        raw = out.reshape(-1).view(np.uint8)  # a fresh array: contiguous
        breaks = np.flatnonzero(np.diff(rows) != 1) + 1
        for a, b in zip(np.r_[0, breaks].tolist(), np.r_[breaks, rows.size].tolist(), strict=True):
            self._read(raw, int(rows[a]), a, b - a)
        return out

    def _read(self, raw: np.ndarray, row: int, at: int, count: int) -> None:
        """Read ``count`` rows from ``row`` into ``raw`` (bytes) from row position ``at``."""
        w = self._width
        if row < 0 or row + count > self.shape[0]:
            raise IndexError("row out of range")
        got = os.preadv(self._fd.fd, [raw[at * w : (at + count) * w].data], self._offset + row * w)
        if got != count * w:
            raise OSError(f"side file shorter than its layout ({got} of {count * w} bytes)")


def current_layouts(conn: sqlite3.Connection, model: str) -> tuple[int, list[Layout]] | None:
    """The generation ``model``'s side files were named in, and their layouts, oldest first.

    None when it has none.
    """
    row = conn.execute(
        "SELECT generation, data FROM catalog WHERE name=?", (f"vectors:{model}",)
    ).fetchone()
    layouts = parse_layouts(row[1]) if row else None
    return (int(row[0]), layouts) if row and layouts else None


def parse_layouts(data: bytes | str) -> list[Layout] | None:
    """The layouts of a ``vectors:MODEL`` row (None when it is not one)."""
    try:
        state = json.loads(data)
    except (TypeError, ValueError):
        return None
    if not isinstance(state, dict) or not isinstance(state.get("segments"), list):
        return None
    layouts = [Layout.from_json(json.dumps(s)) for s in state["segments"]]
    return None if any(lay is None for lay in layouts) else layouts  # type: ignore[return-value]


def layouts_json(layouts: list[Layout]) -> str:
    """A ``vectors:MODEL`` row's data naming ``layouts``."""
    return json.dumps({"segments": [json.loads(lay.to_json()) for lay in layouts]})


def side_folder(index_path: Path) -> Path:
    """``index.vectors/`` beside ``index.sqlite`` (one per index file)."""
    return index_path.with_suffix(".vectors")


def hash_keys(hashes: list[str]) -> np.ndarray:
    """The 64-bit key of each hex text hash (its first 16 digits)."""
    return np.fromiter((int(h[:16], 16) for h in hashes), dtype=np.uint64, count=len(hashes))


def find_sorted(have: np.ndarray, rows: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """The row of each of ``keys`` (``rows[i]`` is sorted ``have[i]``'s), -1 when absent."""
    if have.size == 0:
        return np.full(keys.shape, -1, dtype=np.int64)
    at = np.minimum(np.searchsorted(have, keys), have.size - 1)
    return np.where(have[at] == keys, rows[at], -1).astype(np.int64)


class Keyed(Protocol):
    """Vectors by text-hash key: a segment file or the spool."""

    matrix: np.ndarray
    scale: np.ndarray

    def lookup(self, keys: np.ndarray) -> np.ndarray:
        """The row of each key, -1 when absent."""


def held(sources: Iterable[Keyed], keys: np.ndarray) -> np.ndarray:
    """Whether any of ``sources`` holds a vector of each of ``keys``."""
    found = np.zeros(keys.shape, dtype=bool)
    for source in sources:
        found |= source.lookup(keys) >= 0
    return found


def write(
    folder: Path,
    stem: str,
    matrix: np.ndarray,
    scale: np.ndarray,
    owner: np.ndarray,
    row_keys: np.ndarray,
    *,
    chunks: int,
    lines_complete: bool,
    ids: np.ndarray,
) -> Layout:
    """Write a side file (temporary name, flushed, renamed) and return its layout.

    Args:
        folder: The side folder.
        stem: Start of the file name (model and generation, for people reading the folder).
        matrix: int8 rows, chunks then lines.
        scale: Their scales.
        owner: The chunk row of each line row.
        row_keys: The text-hash key of each row (:func:`hash_keys`).
        chunks: How many of the rows are chunks.
        lines_complete: Whether every line of the chunks has a row.
        ids: The chunk id of each chunk row.
    """
    make_private(folder)
    keys, first = np.unique(row_keys, return_index=True)
    codes, center = sign_codes(matrix[:chunks], scale[:chunks])
    layout = Layout(
        file=f"{stem}-{os.urandom(4).hex()}.vec",
        dim=int(matrix.shape[1]),
        chunks=chunks,
        lines=int(matrix.shape[0]) - chunks,
        keys=int(keys.size),
        lines_complete=lines_complete,
    )
    arrays = {
        "matrix": matrix,
        "scale": scale,
        "owner": owner,
        "keys": keys,
        "rows": first.astype(np.int32),
        "ids": ids,
        "codes": codes,
        "center": center,
    }
    tmp = folder / f".tmp-{layout.file}"
    with os.fdopen(open_private(tmp, os.O_WRONLY | os.O_TRUNC), "wb") as fh:
        for name, dtype, shape, offset in layout.sections()[:-1]:
            fh.seek(offset)
            a = np.ascontiguousarray(arrays[name], dtype=dtype).reshape(shape)
            fh.write(a.reshape(-1).data.cast("B"))  # its own buffer: no copy of the matrix
        fh.truncate(layout.sections()[-1][3])
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, folder / layout.file)
    fsync_dir(folder)
    return layout


def sweep(folder: Path, keep: set[str], suffix: str = ".vec") -> int:
    """Remove side files ending in ``suffix`` no ``catalog`` row names (and crashed writes).

    Returns the bytes freed.

    Runs under the writer lock after a commit. A searcher still mapping a
    removed file keeps reading it: the space returns when it unmaps.
    """
    freed = 0
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return 0
    for entry in entries:
        if entry.name in keep or not entry.name.endswith(suffix):
            continue
        try:
            size = entry.stat().st_size
            os.unlink(entry.path)
            freed += size
        except OSError:
            continue
    return freed


def fsync_dir(folder: Path) -> None:
    """Make a rename in ``folder`` durable."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
