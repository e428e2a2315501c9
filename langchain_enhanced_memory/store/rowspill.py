"""The sync's new chunk rows, kept on disk between the read and the commit.

A sync reads and chunks every moved file before its transaction (the
transaction stays short, and a file found unchanged adds nothing); the rows it
will insert would otherwise all be in memory at once, a 200 MB transcript's
as much as a thousand notes'. They are written to an unnamed temporary file in
the index's side folder as each block is chunked, and read back in the same
order, one row at a time, by the inserts. The file has no name, so a crash
leaves nothing behind.
"""

from __future__ import annotations

import marshal
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path

from .locations import make_private

__all__ = ["RowSpill"]


class RowSpill:
    """Rows (tuples of str, int, bytes) appended, then read back once, in order.

    Args:
        folder: Where the unnamed file goes (created private when missing).
    """

    def __init__(self, folder: Path) -> None:
        make_private(folder)
        self._fh = tempfile.TemporaryFile(dir=folder)

    def __enter__(self) -> RowSpill:
        return self

    def __exit__(self, *exc: object) -> None:
        self._fh.close()

    def mark(self) -> int:
        """Where the next row goes (for :meth:`rewind`)."""
        return self._fh.tell()

    def rewind(self, mark: int) -> None:
        """Drop the rows written since ``mark`` (a file read again, or found unchanged)."""
        self._fh.seek(mark)
        self._fh.truncate()

    def write(self, rows: Iterable[tuple]) -> int:
        """Append ``rows``; returns how many."""
        n = 0
        for row in rows:
            marshal.dump(row, self._fh)
            n += 1
        return n

    def start_reading(self) -> None:
        """Done writing: :meth:`take` reads from the first row on."""
        self._fh.flush()
        self._fh.seek(0)

    def take(self, n: int) -> Iterator[tuple]:
        """The next ``n`` rows."""
        for _ in range(n):
            yield marshal.load(self._fh)
