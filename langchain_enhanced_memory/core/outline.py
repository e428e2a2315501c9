"""A note's headers and open fence, as a writer needs them to place a bullet.

Headers are found as :class:`.chunking.SectionStream` finds them (outside
fences and front matter, every level). :class:`Outline` is the part of it a
bullet appended at the end depends on (the line count, the last line, an open
fence, the first header of each name and the headers whose sections run to the
end); it can be carried past lines appended later without reading the note
again, so appending to a long note costs what appending to a short one does.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from .chunking import SectionStream
from .settings_groups import ChunkerSettings

__all__ = ["Header", "Outline", "outline"]

#: A header: its line (0-based), level and text.
Header = tuple[int, int, str]
_LISTED = ("- ", "  ")  # a bullet, or a bullet's continuation line


def outline(lines: list[str]) -> tuple[list[Header], str]:
    """The headers a writer may put text under, found as :func:`.chunking.chunk_lines` finds them.

    Args:
        lines: The file's lines without line endings.

    Returns:
        The headers of every level outside fences and front matter, as ``(line
        index, level, text)``, and the fence run (```` ``` ````, ``~~~~``) of a
        fence the file leaves open at its end, ``""`` when none is open.
    """
    scan = _Scan()
    scan.lines(lines)
    scan.end()
    return scan.found, scan.run


@dataclass
class Outline:
    """What a bullet appended at the end of a note depends on.

    Attributes:
        lines: The note's lines.
        gap: Its last line is text outside a list (a paragraph, a header): a
            bullet after it needs a blank line.
        run: The fence run of a fence left open at its end ("" when none).
        first: The first header of each name (its text casefolded).
        open: The headers whose sections run to the end, outermost first.
        front: Whether front matter is settled (closed, or none): only then can
            lines be added with :meth:`extended` (else the note is read again).
    """

    lines: int = 0
    gap: bool = False
    run: str = ""
    first: dict[str, Header] = field(default_factory=dict)
    open: list[Header] = field(default_factory=list)
    front: bool = True

    @classmethod
    def of(cls, lines: list[str]) -> Outline:
        """The outline of a whole note's lines."""
        return cls().extended(lines)

    def extended(self, lines: list[str]) -> Outline:
        """The outline once ``lines`` are appended (only the new lines are scanned)."""
        scan = _Scan(self.lines, self.run)
        scan.lines(lines)
        # Settled once known (an empty note is scanned whole again); never by extending.
        front = self.front if self.lines else scan.front is not None or not scan.n
        scan.end()
        last = lines[-1] if lines else None
        gap = self.gap if last is None else bool(last.strip()) and not last.startswith(_LISTED)
        out = Outline(
            self.lines + len(lines), gap, scan.run, dict(self.first), list(self.open), front
        )
        for header in scan.found:
            out.first.setdefault(header[2].casefold(), header)
            while out.open and out.open[-1][1] >= header[1]:
                out.open.pop()
            out.open.append(header)
        return out

    def dumps(self) -> str:
        """As JSON (kept beside the notes between writes)."""
        return json.dumps([self.lines, self.gap, self.run, self.first, self.open, self.front])

    @classmethod
    def loads(cls, text: str) -> Outline | None:
        """An outline :meth:`dumps` wrote; None for anything else."""
        try:
            lines, gap, run, first, opened, front = json.loads(text)
            return cls(
                int(lines),
                bool(gap),
                str(run),
                {str(k): (int(a), int(b), str(c)) for k, (a, b, c) in first.items()},
                [(int(a), int(b), str(c)) for a, b, c in opened],
                bool(front),
            )
        except (TypeError, ValueError, AttributeError):
            return None


class _Scan(SectionStream):
    """:class:`SectionStream`'s header and fence scan alone, from line ``first`` on."""

    def __init__(self, first: int = 0, run: str = "") -> None:
        super().__init__("", ChunkerSettings(max_header_level=6))
        self.base = self.n = self.scan_from = first
        self.run = run
        if first:  # a note scanned before, its front matter settled
            self.front = False
        self.found: list[Header] = []

    def lines(self, lines: list[str]) -> None:
        """Scan these lines, the next ones of the note."""
        self.buf += lines
        self.fence += bytes(len(lines))
        self.n += len(lines)
        if self.front is None and not self._front_matter(final=False):
            return
        self._scan(self.n)

    def end(self) -> None:
        """End of the lines: front matter never closed is none."""
        if self.front is None:
            self._front_matter(final=True)
        self._scan(self.n)

    def _header(self, line: int, level: int, title: str) -> None:
        self.found.append((line, level, title))
