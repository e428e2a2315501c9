"""Where a note that only grew past its old end can be chunked again from.

:class:`.chunking.SectionStream` leaves one after it chunked a file; it is stored
with the file's row (``files.tail``) as JSON, and a resumed stream yields the
chunk that was open then and every chunk after it, exactly as chunking the whole
file would.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

__all__ = ["Open", "Resume"]

#: An open chunk: first and last line (0-based), header, header chain.
Open = tuple[int, int, str, tuple[str, ...]]


@dataclass(frozen=True, slots=True)
class Resume:
    """Where a file that only grew past its old end can be chunked again from.

    Everything before line ``piece`` was decided for good when the old file was
    chunked: text added at the end can only change the chunk that was open
    then (``chunk``, which a later tiny piece may still extend) and what
    follows. A resumed :class:`.chunking.SectionStream` reads the file from :attr:`line`
    and yields that chunk again and every chunk after it, exactly as chunking
    the whole file would.

    Attributes:
        piece: First line (0-based) of the next piece to cut.
        scan: First line the header and fence scan has not read.
        chunk: The chunk open then (first and last line, header, chain), None before the first.
        header: The header of the section being cut.
        levels: The header levels of the section's chain.
        texts: The section's header chain (empty for the text before any header).
        body: The section's first body line (no cut before it).
        section: The section's header line, -1 for the text before any header.
    """

    piece: int
    scan: int
    chunk: Open | None
    header: str
    levels: tuple[int, ...]
    texts: tuple[str, ...]
    body: int
    section: int

    @property
    def line(self) -> int:
        """The first line a resumed run needs: the open chunk's, else the piece's."""
        return self.chunk[0] if self.chunk else self.piece

    def dumps(self) -> str:
        """The resume point as JSON (stored with the file's row)."""
        return json.dumps(
            [self.piece, self.scan, self.chunk, self.header]
            + [self.levels, self.texts, self.body, self.section]
        )

    @classmethod
    def loads(cls, text: str | None) -> Resume | None:
        """A resume point :meth:`dumps` wrote; None for anything else."""
        try:
            piece, scan, chunk, header, levels, texts, body, section = json.loads(text or "")
            if chunk is not None:
                a, b, h, chain = chunk
                chunk = (int(a), int(b), str(h), tuple(map(str, chain)))
            return cls(
                int(piece),
                int(scan),
                chunk,
                str(header),
                tuple(map(int, levels)),
                tuple(map(str, texts)),
                int(body),
                int(section),
            )
        except (TypeError, ValueError):
            return None
