"""Vectors: the int8 codec, the product, and a generation's vectors kept in parts.

The parts are an older base plus small deltas, scored as one matrix. Each
part holds the int8 rows (and a float32 scale each, :func:`quantize`)
of some chunks and of their lines; a chunk a later change replaced stays in its
part, masked out (its live row is -1). :class:`VectorSet` gives ranking what
one matrix in row order would: every live row's cosine, and the cosines of
the lines of chosen rows. Nothing here does I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import simsimd

from .scoring import group_rows

__all__ = [
    "RowSource",
    "VectorPart",
    "VectorSet",
    "approximate_cosines",
    "cosines",
    "dequantize",
    "normalised_means",
    "quantize",
    "query_bits",
    "sign_codes",
]


def quantize(vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows as int8 with a float32 scale each: ``row ~= q * scale`` (a quarter of float32).

    The one precision vectors are stored and searched in: locomo-dev's mrr@10
    is unchanged to four digits against float32 (docs/benchmarks.md, "Index size"), and an
    int8 matrix times a float32 query runs near float32 speed (float16 does not).
    """
    vectors = np.asarray(vectors, dtype=np.float32)
    if vectors.ndim != 2:
        vectors = vectors.reshape(len(vectors), -1)
    peak = np.abs(vectors).max(axis=1) if vectors.shape[1] else np.zeros(len(vectors), np.float32)
    scale = (peak / 127.0).astype(np.float32)
    safe = np.where(scale > 0, scale, 1.0).astype(np.float32)
    q = np.clip(np.rint(vectors / safe[:, None]), -127, 127).astype(np.int8)
    return q, scale


def dequantize(q: np.ndarray, scale: np.ndarray | None) -> np.ndarray:
    """The float32 rows of :func:`quantize`'s output (``scale`` None: already float)."""
    out = np.asarray(q, dtype=np.float32)
    return out if scale is None else out * np.asarray(scale, dtype=np.float32)[:, None]


def normalised_means(rows: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """The L2-normalised mean of each run of consecutive ``rows`` (run ``i`` ends at ``ends[i]``).

    A chunk's vector from its lines' (as stored, float32): each run is summed
    row after row, every run at once in the order its own sum takes, so a mean
    is the same whichever runs share the call (the embedding run's and a
    database note's agree to the bit).
    """
    rows = np.asarray(rows, dtype=np.float32)
    last = np.asarray(ends, dtype=np.int64)
    first = np.r_[0, last[:-1]]
    counts = last - first
    totals = rows[first]
    for j in range(1, int(counts.max(initial=1))):
        more = np.flatnonzero(counts > j)
        totals[more] += rows[first[more] + j]
    norms = np.sqrt(np.fromiter((t.dot(t) for t in totals), np.float32, len(totals)))
    return totals / np.maximum(norms, np.float32(1e-12))[:, None]


THREADED_ROWS = 100_000  # below this, starting threads costs more than the scan


def cosines(
    matrix: np.ndarray, scale: np.ndarray | None, qvec: np.ndarray, threads: int = 1
) -> np.ndarray:
    """Dot product of every (quantized) row with ``qvec``.

    int8 rows go through SimSIMD's int8 dot kernel, with the query quantized
    to int8 too (its rounding moves a cosine by about 0.1 %): an order of magnitude
    faster than numpy's on one core (docs/design.md). Float rows use
    einsum, which stays on one thread: `@` wakes OpenBLAS's pool, which costs
    more than the product itself on a busy 2-core machine (benchmarks/speed.py).
    ``threads`` (0: one per core) splits an int8 scan of :data:`THREADED_ROWS`
    rows or more: the scan reads the whole matrix, and one core does not reach
    the memory bandwidth.
    """
    q = np.asarray(qvec, dtype=np.float32)
    if matrix.dtype == np.int8 and matrix.size:
        q8, q_scale = quantize(q[None])
        raw = simsimd.cdist(
            q8,
            np.ascontiguousarray(matrix),
            metric="dot",
            out_dtype="float32",
            threads=threads if matrix.shape[0] >= THREADED_ROWS else 1,
        )
        out = np.asarray(raw, dtype=np.float32).reshape(-1)
        out *= q_scale[0]  # in place: a million rows make each pass a millisecond
    else:
        out = np.einsum("ij,j->i", matrix, q)
    if scale is not None:
        out *= scale
    return out


def sign_codes(
    matrix: np.ndarray, scale: np.ndarray | None = None, block: int = 1 << 16
) -> tuple[np.ndarray, np.ndarray]:
    """Each row's sign bits about the rows' mean, packed (``dim / 8`` bytes a row), and the mean.

    Embeddings share a mean direction (a local e5 model's cosines between
    unrelated texts are 0.7-0.9), so the bits of raw rows would mostly record
    it: on locomo-dev's e5 vectors, centring took the recall@10 of the bits'
    nearest 0.5 % from 0.30 to 0.62 (synthetic vectors 0.51 -> 0.53;
    ``benchmarks/ann.py --workspaces``). Read in blocks: a million rows as
    float32 would be 1.5 GB.
    """
    n, dim = matrix.shape
    total = np.zeros(dim, dtype=np.float64)
    for lo in range(0, n, block):
        total += dequantize(matrix[lo : lo + block], _rows(scale, lo, block)).sum(axis=0)
    center = (total / max(n, 1)).astype(np.float32)
    codes = np.empty((n, -(-dim // 8)), dtype=np.uint8)
    for lo in range(0, n, block):
        rows = dequantize(matrix[lo : lo + block], _rows(scale, lo, block))
        codes[lo : lo + block] = np.packbits(rows > center, axis=1)
    return codes, center


def _rows(scale: np.ndarray | None, lo: int, block: int) -> np.ndarray | None:
    return None if scale is None else scale[lo : lo + block]


def query_bits(qvec: np.ndarray, center: np.ndarray) -> np.ndarray:
    """The query's sign bits against :func:`sign_codes`: its component along the mean removed.

    (Subtracting the mean itself, as from the rows, did worse on synthetic
    vectors, whose queries share less of it: 0.29 against 0.52 at 0.5 % in a
    one-off run.)
    """
    q = np.asarray(qvec, dtype=np.float32)
    norm = float(np.linalg.norm(center))
    if norm > 0:
        unit = center / np.float32(norm)
        q = q - np.float32(q @ unit) * unit
    return np.packbits(q > 0)[None]


APPROX_NEAREST = 1000  # rows nearest by sign bits, scored exactly ...
APPROX_FARTHEST = 8192  # ... and the farthest, which set the low end of a min-max


def approximate_cosines(
    matrix: np.ndarray,
    scale: np.ndarray | None,
    codes: np.ndarray,
    center: np.ndarray,
    qvec: np.ndarray,
    threads: int = 1,
) -> np.ndarray:
    """:func:`cosines` read from sign bits: exact for the nearest and farthest rows.

    The Hamming distance between the query's and each row's sign bits
    (:func:`sign_codes`, :func:`query_bits`; a 48-byte row at 384 dimensions,
    an eighth of the int8 scan's reading) ranks the rows; about
    :data:`APPROX_NEAREST` nearest and :data:`APPROX_FARTHEST` farthest are
    scored exactly, and every other row gets the line through those points (a
    cosine falls about linearly with the distance). Ranking then scores its best candidates exactly
    (:meth:`VectorSet.rescore`), so an estimate only decides who is a
    candidate (``benchmarks/speed.py`` prints the recall against exact).
    """
    q = np.asarray(qvec, dtype=np.float32)
    dist = np.asarray(
        simsimd.cdist(
            query_bits(q, center),
            codes,
            metric="hamming",
            dtype="bin8",
            out_dtype="float32",  # whole numbers, exact in float32
            threads=threads if codes.shape[0] >= THREADED_ROWS else 1,
        )
    ).reshape(-1)
    n = dist.size
    # The cut-offs from a sample: a sort of a million distances costs more than the scan.
    sample = np.sort(dist[:: max(1, n // 16384)])
    near = sample[min(sample.size - 1, APPROX_NEAREST * sample.size // n)]
    far = sample[max(0, sample.size - 1 - APPROX_FARTHEST * sample.size // n)]
    pick = np.flatnonzero((dist <= near) | (dist >= far))
    # take, not matrix[pick]: a row gather's fancy indexing costs twice as much (10k rows of a map).
    rows = np.take(matrix, pick, axis=0)
    exact = cosines(rows, None if scale is None else np.take(scale, pick), q)
    x, y = dist[pick].astype(np.float64), exact.astype(np.float64)
    spread = float(((x - x.mean()) ** 2).sum())
    slope = float(((x - x.mean()) * (y - y.mean())).sum()) / spread if spread else 0.0
    out = np.multiply(dist, np.float32(slope), out=dist)  # in place: each pass is a millisecond
    out += np.float32(y.mean() - slope * x.mean())
    out[pick] = exact
    return out


FEW_DEAD = 64  # a part with this many replaced rows or fewer is placed by copies around them


def _copy_around(values: np.ndarray, dead: np.ndarray, out: np.ndarray) -> None:
    """``values`` less the rows at ``dead`` (ascending) into ``out``, one copy per run between.

    A base part with a few chunks replaced since its merge: copying the runs
    reads a million rows once, where a mask compress or a scatter costs several times that.
    """
    src = dst = 0
    for row in dead.tolist():
        out[dst : dst + row - src] = values[src:row]
        dst += row - src
        src = row + 1
    out[dst:] = values[src:]


def _run_or_rows(dest: np.ndarray) -> slice | np.ndarray:
    """``dest`` as a slice when it is one ascending run (a base part's live rows, usually).

    Placing a part's cosines is then a copy, not a scatter of a million rows per query.
    """
    start = int(dest[0]) if dest.size else 0
    if np.array_equal(dest, np.arange(start, start + dest.size)):
        return slice(start, start + dest.size)
    return dest


class RowSource(Protocol):
    """Rows read when asked for (line vectors a store reads from its file, not mapped)."""

    @property
    def shape(self) -> tuple[int, ...]: ...  # noqa: D102

    def __getitem__(self, rows: np.ndarray) -> np.ndarray: ...  # noqa: D105


@dataclass(frozen=True)
class VectorPart:
    """The vectors of some chunks and their lines (often read-only maps of a side file).

    Attributes:
        matrix: int8 chunk rows.
        scale: Their scales (None: plain float rows).
        rows: The live row of each chunk row, -1 for a replaced chunk.
        lines: int8 line rows, grouped by chunk (an array, or rows read on demand).
        line_scale: Their scales.
        owner: The chunk row (in this part) of each line row, non-decreasing.
        codes: The chunk rows' :func:`sign_codes` (None: the part is always scanned exactly).
        center: The mean those bits are taken about.
    """

    matrix: np.ndarray
    scale: np.ndarray | None
    rows: np.ndarray
    lines: np.ndarray | RowSource | None = None
    line_scale: np.ndarray | RowSource | None = None
    owner: np.ndarray | None = None
    codes: np.ndarray | None = None
    center: np.ndarray | None = None

    def approximated(self, approximate_rows: int) -> bool:
        """Whether a scan reads this part's sign bits (it has them and is that large)."""
        return bool(approximate_rows) and (
            self.codes is not None
            and self.center is not None
            and self.matrix.shape[0] >= approximate_rows
        )


@dataclass
class VectorSet:
    """The vectors of ``n`` live rows across parts (each live row in at most one part)."""

    parts: list[VectorPart]
    n: int
    has_vector: np.ndarray = field(init=False)
    _part: np.ndarray = field(init=False, repr=False)  # part of each live row, -1: none
    _local: np.ndarray = field(init=False, repr=False)  # its chunk row in that part
    # Per part: its live chunk rows (None: all), where they land (a slice when
    # contiguous) and its replaced chunk rows.
    _places: list[tuple[np.ndarray | None, slice | np.ndarray, np.ndarray]] = field(
        init=False, repr=False
    )
    _whole: bool = field(init=False, repr=False)  # one part, its rows the live rows in order
    _covered: bool = field(init=False, repr=False)  # every live row has a vector

    def __post_init__(self) -> None:
        self._part = np.full(self.n, -1, dtype=np.int32)
        self._local = np.zeros(self.n, dtype=np.int64)
        self._places = []
        for p, part in enumerate(self.parts):
            mask = part.rows >= 0
            rows = part.rows[mask]
            self._part[rows] = p
            self._local[rows] = np.flatnonzero(mask)
            self._places.append(
                (None if mask.all() else mask, _run_or_rows(rows), np.flatnonzero(~mask))
            )
        self.has_vector = self._part >= 0
        self._covered = bool(self.has_vector.all())
        live, dest, _ = self._places[0] if len(self.parts) == 1 else (None, None, None)
        self._whole = live is None and isinstance(dest, slice) and dest == slice(0, self.n)

    @classmethod
    def of(cls, matrix: np.ndarray, scale: np.ndarray | None = None) -> VectorSet:
        """One part of chunk rows in row order, no lines (e.g. vectors built in memory)."""
        rows = np.arange(matrix.shape[0], dtype=np.int64)
        return cls([VectorPart(matrix, scale, rows)], int(matrix.shape[0]))

    @property
    def dim(self) -> int:
        """Vector dimension (0 without parts)."""
        return int(self.parts[0].matrix.shape[1]) if self.parts else 0

    @property
    def has_lines(self) -> bool:
        """Whether any part holds line rows."""
        return any(p.lines is not None and p.lines.shape[0] for p in self.parts)

    def cosines(self, qvec: np.ndarray, threads: int = 1, approximate_rows: int = 0) -> np.ndarray:
        """The dot product of each live row with ``qvec`` (0 for a row without a vector).

        Args:
            qvec: The query vector.
            threads: Of each large part's scan (:func:`cosines`).
            approximate_rows: A part of this many chunk rows or more that has sign
                bits is scanned by them (:func:`approximate_cosines`); 0: never.
        """
        if self._whole:
            return self._scan(self.parts[0], qvec, threads, approximate_rows)
        # Zeros only where a row has no vector: every row is written otherwise.
        out = np.empty(self.n, np.float32) if self._covered else np.zeros(self.n, np.float32)
        for part, (live, dest, dead) in zip(self.parts, self._places, strict=True):
            if part.matrix.shape[0]:
                values = self._scan(part, qvec, threads, approximate_rows)
                if live is None:
                    out[dest] = values
                elif isinstance(dest, slice) and dead.size <= FEW_DEAD:
                    _copy_around(values, dead, out[dest])
                else:
                    out[dest] = values[live]
        return out

    @staticmethod
    def _scan(
        part: VectorPart, qvec: np.ndarray, threads: int, approximate_rows: int
    ) -> np.ndarray:
        if part.approximated(approximate_rows):
            assert part.codes is not None and part.center is not None  # approximated() checked
            return approximate_cosines(
                part.matrix, part.scale, part.codes, part.center, qvec, threads
            )
        return cosines(part.matrix, part.scale, qvec, threads)

    def approximates(self, approximate_rows: int) -> bool:
        """Whether :meth:`cosines` estimates some rows with this ``approximate_rows``."""
        return any(part.approximated(approximate_rows) for part in self.parts)

    def rescore(
        self, values: np.ndarray, rows: np.ndarray, qvec: np.ndarray, approximate_rows: int
    ) -> None:
        """Replace the estimates of :meth:`cosines` at live ``rows`` with exact cosines.

        In place; rows of parts scanned exactly are left as they are (they are exact).
        """
        part_of = self._part[rows]
        for p, part in enumerate(self.parts):
            if part.approximated(approximate_rows):
                mine = rows[part_of == p]
                local = self._local[mine]
                scale = None if part.scale is None else part.scale[local]
                values[mine] = cosines(part.matrix[local], scale, qvec)

    def line_cosines(
        self, rows: np.ndarray, qvec: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray] | None:
        """Cosine and live row of each line of ``rows`` (sorted, unique); None without lines."""
        if not self.has_lines:
            return None
        values, owners = [], []
        part_of = self._part[rows]
        for p, part in enumerate(self.parts):
            if part.lines is None or part.owner is None:
                continue
            mine = rows[part_of == p]
            local = np.sort(self._local[mine])
            at = group_rows(part.owner, local)
            if at.size == 0:
                continue
            scale = None if part.line_scale is None else part.line_scale[at]
            values.append(cosines(part.lines[at], scale, qvec))
            owners.append(part.rows[part.owner[at]])
        if not values:
            return None
        value, owner = np.concatenate(values), np.concatenate(owners)
        order = np.argsort(owner, kind="stable")  # each row's lines together, rows ascending
        return value[order], owner[order]

    def take(self, rows: np.ndarray) -> VectorPart:
        """The vectors of live ``rows`` (each with a vector) as one part, in that order.

        Chunk row ``j`` of the part is ``rows[j]``, and its line rows follow the
        chunk rows' order (``owner`` non-decreasing), so a store can write a
        subset of a generation (one file's chunks) as a part of its own. The
        part's ``rows`` are ``0..len(rows)-1``; it has no sign bits.

        Raises:
            ValueError: A row without a vector, or parts of mixed formats.
        """
        rows = np.asarray(rows, dtype=np.int64)
        if rows.size and not self.has_vector[rows].all():
            raise ValueError("a row to take has no vector")
        if (
            len({p.matrix.dtype for p in self.parts}) > 1
            or len({p.scale is None for p in self.parts}) > 1
        ):
            raise ValueError("the parts mix vector formats")
        first = self.parts[0] if self.parts else None
        dtype = first.matrix.dtype if first is not None else np.dtype(np.int8)
        matrix = np.zeros((rows.size, self.dim), dtype=dtype)
        scaled = first is None or first.scale is not None
        scale = np.ones(rows.size, dtype=np.float32) if scaled else None
        lines: list[tuple[np.ndarray, np.ndarray, np.ndarray | None]] = []
        part_of = self._part[rows]
        for p, part in enumerate(self.parts):
            at = np.flatnonzero(part_of == p)  # positions in ``rows`` this part holds
            if at.size == 0:
                continue
            local = self._local[rows[at]]
            matrix[at] = part.matrix[local]
            if scale is not None and part.scale is not None:
                scale[at] = part.scale[local]
            if part.lines is None or part.owner is None:
                continue
            order = np.argsort(local, kind="stable")
            chosen = group_rows(part.owner, local[order])
            if chosen.size == 0:
                continue
            # Each line row's chunk, as a position in ``rows``.
            owner = at[order][np.searchsorted(local[order], part.owner[chosen])]
            ls = None if part.line_scale is None else np.asarray(part.line_scale[chosen])
            lines.append((owner, np.asarray(part.lines[chosen]), ls))
        if not lines:
            return VectorPart(matrix, scale, np.arange(rows.size, dtype=np.int64))
        owner = np.concatenate([o for o, _, _ in lines])
        order = np.argsort(owner, kind="stable")  # a chunk's lines together, chunks in order
        line_rows = np.concatenate([m for _, m, _ in lines])[order]
        line_scale = None
        if all(s is not None for _, _, s in lines):
            line_scale = np.concatenate([s for _, _, s in lines if s is not None])[order]
        return VectorPart(
            matrix,
            scale,
            np.arange(rows.size, dtype=np.int64),
            lines=line_rows,
            line_scale=line_scale,
            owner=owner[order].astype(np.int32),
        )

    def dense(self) -> np.ndarray:
        """Every live row as float32 (zeros without a vector), for exports and the graph."""
        out = np.zeros((self.n, self.dim), dtype=np.float32)
        for part in self.parts:
            live = part.rows >= 0
            out[part.rows[live]] = dequantize(part.matrix, part.scale)[live]
        return out
