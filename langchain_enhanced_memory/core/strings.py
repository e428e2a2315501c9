"""Strings kept as one UTF-8 buffer and offsets, each decoded when it is read.

A snapshot's chunk texts and headers are read a few at a time (the hits of a
query, the rows feedback draws on), but there are a hundred thousand of them
or more: building one Python string each is most of a fresh process's load.
Kept as bytes (often a read-only map of a segment file), a fresh process
decodes only the rows it shows. Nothing here does I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import overload

import numpy as np

__all__ = ["PlacedStrings", "Strings"]

_ERRORS = "surrogatepass"  # what the index writes round-trips, whatever it holds


class _Rows(Sequence[str]):
    """A sequence of strings read by row: ints, negative ints and slices."""

    __slots__ = ()

    def _at(self, i: int) -> str:
        raise NotImplementedError

    @overload
    def __getitem__(self, i: int) -> str: ...

    @overload
    def __getitem__(self, i: slice) -> list[str]: ...

    def __getitem__(self, i: int | slice) -> str | list[str]:
        n = len(self)
        if isinstance(i, slice):
            return [self._at(j) for j in range(*i.indices(n))]
        i = int(i) + (n if i < 0 else 0)
        if not 0 <= i < n:
            raise IndexError("string index out of range")
        return self._at(i)


class Strings(_Rows):
    """``n`` strings: row ``i`` is ``data[offsets[i]:offsets[i + 1]]``, UTF-8.

    Args:
        data: The bytes of every string, one after another (``uint8``).
        offsets: ``n + 1`` ascending byte offsets into ``data`` (``int64``).
    """

    __slots__ = ("data", "offsets")

    def __init__(self, data: np.ndarray, offsets: np.ndarray) -> None:
        self.data = data
        self.offsets = offsets

    @classmethod
    def encode(cls, strings: Iterable[str]) -> Strings:
        """The strings, encoded."""
        encoded = [s.encode("utf-8", _ERRORS) for s in strings]
        offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
        np.cumsum(np.fromiter(map(len, encoded), np.int64, len(encoded)), out=offsets[1:])
        return cls(np.frombuffer(b"".join(encoded), dtype=np.uint8), offsets)

    @classmethod
    def concat(cls, parts: Sequence[Strings]) -> Strings:
        """The strings of ``parts``, one part after another."""
        if len(parts) == 1:
            return parts[0]
        starts = np.cumsum([0] + [int(p.offsets[-1] - p.offsets[0]) for p in parts])
        offsets = np.concatenate(
            [np.zeros(1, np.int64)]
            + [p.offsets[1:] - p.offsets[0] + s for p, s in zip(parts, starts, strict=False)]
        )
        runs = [p.data[p.offsets[0] : p.offsets[-1]] for p in parts]
        return cls(np.concatenate(runs) if runs else np.zeros(0, np.uint8), offsets)

    def take(self, rows: np.ndarray) -> Strings:
        """The strings of ``rows`` (ascending), in a new buffer.

        A run of consecutive rows is one contiguous slice, so keeping all but a
        few rows (a merge dropping replaced chunks) copies a few slices.
        """
        rows = np.asarray(rows, dtype=np.int64)
        lo, hi = self.offsets[rows], self.offsets[rows + 1]
        offsets = np.zeros(rows.size + 1, dtype=np.int64)
        np.cumsum(hi - lo, out=offsets[1:])
        breaks = np.flatnonzero(np.diff(rows) != 1) + 1
        first = np.concatenate([[0], breaks]).astype(np.int64)
        last = np.concatenate([breaks, [rows.size]]).astype(np.int64) - 1
        runs = (
            [self.data[a:b] for a, b in zip(lo[first], hi[last], strict=True)] if rows.size else []
        )
        data = np.concatenate(runs) if runs else np.zeros(0, np.uint8)
        return Strings(data, offsets)

    def __len__(self) -> int:
        return int(self.offsets.shape[0]) - 1

    def _at(self, i: int) -> str:
        lo, hi = self.offsets[i : i + 2].tolist()
        return self.data[lo:hi].tobytes().decode("utf-8", _ERRORS)

    def tolist(self) -> list[str]:
        """Every string, decoded at once (one slice per string when all are ASCII)."""
        lo, hi = self.offsets[[0, -1]].tolist() if len(self) else (0, 0)
        raw = self.data[lo:hi].tobytes()
        if not raw.isascii():
            return list(self)
        text, bounds = raw.decode("ascii"), (self.offsets - lo).tolist()
        return [text[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]

    def __iter__(self) -> Iterator[str]:
        data, bounds = self.data, self.offsets.tolist()
        for lo, hi in zip(bounds, bounds[1:], strict=False):
            yield data[lo:hi].tobytes().decode("utf-8", _ERRORS)


class PlacedStrings(_Rows):
    """Rows drawn from several :class:`Strings`: row ``i`` is ``parts[part[i]][local[i]]``.

    A generation kept in several segments reads each chunk's strings from the
    segment that holds it, without copying any of them into one buffer.
    """

    __slots__ = ("local", "part", "parts")

    def __init__(self, parts: list[Strings], part: np.ndarray, local: np.ndarray) -> None:
        self.parts, self.part, self.local = parts, part, local

    def __len__(self) -> int:
        return int(self.part.shape[0])

    def _at(self, i: int) -> str:
        return self.parts[int(self.part[i])]._at(int(self.local[i]))
