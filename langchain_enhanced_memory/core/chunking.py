r"""Split a markdown file's lines into header-scoped chunks with exact line spans.

Headers inside fenced code blocks or YAML front matter do not count, each chunk
knows its header chain, header-only sections fold into the following chunk,
tiny sections merge into a neighbour instead of being lost, long sections
are split near ``max_chunk_chars`` and runs of list items between items at
``max_list_chars`` (:mod:`.cuts`). The chunks cover every non-blank line of
the file exactly once, in order, and start and end on non-blank lines, and
``Chunk.text`` is exactly ``"\n".join(lines[start_line - 1 : end_line])``.
:class:`SectionStream` takes the lines in blocks as a file is read and keeps
only the lines of the chunks not yet final, so a long note never sits in
memory whole; it also names where a note that only grew can be chunked again
from (:class:`.resume.Resume`). The original skill's chunker (every header, no
fences) is in :mod:`.original`; the headers a writer needs, in :mod:`.outline`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import accumulate
from typing import Protocol

from .cuts import cut_span
from .resume import Open, Resume
from .settings_groups import ChunkerSettings

__all__ = [
    "Chunk",
    "ChunkStream",
    "Resume",
    "SectionStream",
    "chunk_lines",
    "is_blank",
    "line_starts",
    "line_texts",
]


@dataclass(frozen=True, slots=True)
class Chunk:
    r"""A span of lines of one file.

    Attributes:
        start_line: First line, 1-based, inclusive.
        end_line: Last line, 1-based, inclusive.
        header: This chunk's own header text (no ``#``s, stripped), or the
            ``default_header`` given to :func:`chunk_lines` when it has none.
        headers: Header chain from the outermost header to this one, e.g.
            ``("Project Alpha", "Decisions")``; ``(default_header,)`` without headers.
        text: Exactly the file's lines ``start_line..end_line`` joined with ``"\n"``.
    """

    start_line: int
    end_line: int
    header: str
    headers: tuple[str, ...]
    text: str


def chunk_lines(
    lines: list[str], *, default_header: str, settings: ChunkerSettings | None = None
) -> list[Chunk]:
    """Chunk a file's lines (as returned by ``read_lines``) into sections.

    Args:
        lines: The file's lines without line endings.
        default_header: Header of text that has no header (callers pass the file name).
        settings: The chunker's settings (``MemorySettings().chunker``: the defaults).

    Returns:
        The chunks in file order.
    """
    stream = SectionStream(default_header, settings)
    return [*stream.feed(lines, 0), *stream.close()]


# --------------------------------------------------------------------------- shared


_HEADER_LINE = re.compile(r"^ {0,3}#{1,6}(?:[ \t]|$)")
_WORD = re.compile(r"\w")


def line_texts(text: str, max_chars: int) -> list[str]:
    """The lines of a chunk that get a vector of their own.

    A chunk is also scored by its best line (the "MaxP" of passage retrieval):
    one bullet or one turn of a long section then matches a query about it as
    closely as a chunk holding only that line would. Header lines (the chunk's
    vector has the header chain) and lines with no word are skipped, and a
    chunk with fewer than two lines left gets none: its own vector says it all.

    Args:
        text: The chunk's text.
        max_chars: Longest line kept (longer lines are cut, as chunks are).
    """
    lines = [s.strip() for s in text.splitlines()]
    kept = [s[:max_chars] for s in lines if _WORD.search(s) and not _HEADER_LINE.match(s)]
    return kept if len(kept) >= 2 else []


def is_blank(line: str) -> bool:
    """Whether ``line`` holds only whitespace."""
    return not line.strip()


def line_starts(
    text: str, pattern: re.Pattern[str], pos: int = 0
) -> Iterator[tuple[int, re.Match[str]]]:
    r"""Yield ``(line index, match)`` for matches of a ``^``-anchored pattern.

    Works on the lines joined with ``"\n"`` so the regex engine, not a Python
    loop, walks the file; line numbers come from counting newlines incrementally.
    """
    index = text.count("\n", 0, pos)
    last = pos
    for m in pattern.finditer(text, pos):
        start = m.start()
        index += text.count("\n", last, start)
        last = start
        yield index, m


# --------------------------------------------------------------------------- default

# A header (at most 3 spaces of indent, 1-6 '#'s, a space or tab) or a fence line.
_BLOCK = re.compile(r"^ {0,3}(?:(#{1,6})[ \t]+([^\n]*)|(`{3,}|~{3,})([^\n]*))", re.MULTILINE)
# CommonMark closing sequence: '#'s preceded by a space (or the whole content).
_ATX_CLOSE = re.compile(r"(?:^|[ \t]+)#+$")
_FRONT_MATTER_END = re.compile(r"^(?:---|\.\.\.)[^\S\n]*$", re.MULTILINE)


# A section whose unsplit lines pass this many characters is cut as it streams in
# (only the pieces a longer section would cut the same way): a note with no
# headers is not held whole.
_SPLIT_AHEAD = 1 << 20
# Kept lines are dropped in steps of at least this many (a drop moves the rest).
_TRIM_LINES = 4096


class ChunkStream(Protocol):
    """A chunker fed a file's lines a block at a time (:class:`SectionStream`)."""

    @property
    def resume(self) -> Resume | None:
        """After :meth:`close`: where the file can be chunked again from if it grows."""
        ...

    def feed(self, lines: list[str], first: int) -> list[Chunk]:
        """Add the lines from line ``first`` on; returns the chunks now final."""
        ...

    def close(self) -> list[Chunk]:
        """End of file: the remaining chunks."""
        ...


class SectionStream:
    """The default chunker, fed a file's lines in blocks; linear in the size of the file.

    :meth:`feed` each block of lines in order, then :meth:`close`; both return
    the chunks that became final. Only the lines of the chunk still open, the
    section being cut and a few header-only lines before it are kept, so a
    note's chunks cost their own memory, not the file's. The chunks are those
    of the whole file at once (:func:`chunk_lines` is this with one block).

    Args:
        default_header: Header of text that has no header (callers pass the file name).
        settings: The chunker's settings (``MemorySettings().chunker``: the defaults).
        resume: Continue a file that only grew from this point of its old
            chunking; lines are then fed from :attr:`Resume.line` on.
    """

    def __init__(
        self,
        default_header: str,
        settings: ChunkerSettings | None = None,
        resume: Resume | None = None,
    ) -> None:
        s = settings or ChunkerSettings()
        self.default_header = default_header
        self.max_level, self.min_chars, self.max_chars, self.list_chars = (
            s.max_header_level,
            s.min_chunk_chars,
            s.max_chunk_chars,
            s.max_list_chars,
        )
        r = resume
        # Kept lines: buf[i] is line base + i, cum[i] the characters of the lines
        # before it (any origin: only differences are used), fence[i] == 1 when a
        # cut right after it would split a fenced block (opening line and body).
        self.base = self.n = r.line if r else 0
        self.buf: list[str] = []
        self.cum: list[int] = [0]
        self.fence = bytearray()
        # The scan: front matter (None: not known yet), first unscanned line, open fence run.
        self.front: bool | None = False if r else None
        # A first line '---' never closed: a line the note grows by may still close it.
        self.front_unclosed = False
        self.scan_from = r.scan if r else 0
        self.scan_start = 0  # the first line a run may start again at (after front matter)
        self.run = ""
        # The section being cut: header line (-1: text before any header), header,
        # chain stack, first body line, first line of its next piece (-1: none cut yet).
        self.sec_line = r.section if r else -1
        self.sec_header = r.header if r else default_header
        self.levels = list(r.levels) if r else []
        self.texts = list(r.texts) if r else []
        self.body = r.body if r else -1
        self.piece = r.piece if r else -1
        self.chain: tuple[str, ...] | None = None
        # Chunks: the open one (final once another opens), header-only sections
        # waiting for a body, tiny leading pieces waiting for a successor.
        self.open: Open | None = r.chunk if r else None
        self.pending = self.pending_last = self.carry = -1
        self.pending_head: tuple[str, tuple[str, ...]] = ("", ())
        self.last: Open | None = None  # the last piece, for a file of tiny pieces only
        self.out: list[Chunk] = []
        # The latest point a run may start again at: piece, open chunk, section (see resume).
        self.mark: tuple[int, Open | None, tuple] | None = None

    # -- feeding ---------------------------------------------------------------

    def feed(self, lines: list[str], first: int) -> list[Chunk]:
        """Add the lines from line ``first`` (0-based) on; returns the chunks now final."""
        if first < self.n:  # a resumed run starts mid-block
            lines = lines[self.n - first :]
        self.buf += lines
        self.cum += accumulate(map(len, lines), initial=self.cum.pop())
        self.fence += bytes(len(lines))
        self.n += len(lines)
        if self.front is None and not self._front_matter(final=False):
            return self._take()
        self._scan(self.n)
        self._advance()
        self._trim()
        return self._take()

    def close(self) -> list[Chunk]:
        """End of file: the remaining chunks."""
        if self.front is None:
            self._front_matter(final=True)
        self._scan(self.n)
        self._finish(self.n)
        if self.carry >= 0 and self.last is not None:  # everything was tiny: one chunk
            self.open = (self.carry, self.last[1], self.last[2], self.last[3])
        if self.pending >= 0:  # trailing header-only sections join the last chunk
            if self.open:
                self.open = (self.open[0], self.pending_last, self.open[2], self.open[3])
            else:
                self.open = (self.pending, self.pending_last, *self.pending_head)
        if self.open:
            self._emit(self.open)
            self.open = None
        return self._take()

    @property
    def resume(self) -> Resume | None:
        """After :meth:`close`: where the file can be chunked again from if it grows."""
        if self.mark is None or self.front_unclosed:
            return None  # an unclosed front matter may yet close and turn headers into text
        piece, chunk, (line, header, levels, texts, body) = self.mark
        scan = max(piece, line + 1)
        return Resume(piece, scan, chunk, header, levels, texts, body, line)

    # -- helpers ---------------------------------------------------------------

    def _take(self) -> list[Chunk]:
        out, self.out = self.out, []
        return out

    def _blank(self, i: int) -> bool:
        return not self.buf[i - self.base].strip()

    def _span(self, first: int, last: int) -> int:
        r"""Length of ``"\n".join(lines[first:last + 1])``."""
        base = self.base
        return self.cum[last + 1 - base] - self.cum[first - base] + last - first

    def _emit(self, c: Open) -> None:
        a, b, header, chain = c
        base = self.base
        text = "\n".join(self.buf[a - base : b + 1 - base])
        self.out.append(Chunk(a + 1, b + 1, header, chain, text))

    def _trim(self) -> None:
        """Drop the lines no chunk can still need (in large steps: a drop moves the rest)."""
        keep = [p for p in (self.carry, self.pending) if p >= 0]
        keep.append(self.open[0] if self.open else self.n)
        if self.piece >= 0:
            keep.append(self.piece)
        else:  # not cut yet: the whole section
            keep.append(self.sec_line if self.sec_line >= 0 else self.base)
        drop = min(keep) - 1 - self.base  # the line before a piece tells a closing fence
        if drop > _TRIM_LINES and 2 * drop > len(self.buf):
            del self.buf[:drop], self.cum[:drop], self.fence[:drop]
            self.base += drop

    # -- scanning --------------------------------------------------------------

    def _front_matter(self, final: bool) -> bool:
        """Find where YAML front matter (only when closed) ends; False while not known yet."""
        if self.n == 0:
            return False
        if self.buf[0].rstrip() != "---":
            self.front = False
            return True
        for i in range(max(self.scan_from, 1), self.n):
            if _FRONT_MATTER_END.match(self.buf[i]):
                # Its lines stay plain preamble text; the scan starts after it.
                self.front = True
                self.scan_from = self.scan_start = i + 1
                return True
        self.scan_from = self.n  # not closed yet: only the new lines are searched next time
        if final:  # never closed: no front matter, scan it all
            self.front, self.front_unclosed = False, True
            self.scan_from = 0
            return True
        return False

    def _scan(self, end: int) -> None:
        """Scan lines up to ``end`` for headers (cutting sections there) and fences."""
        start = self.scan_from
        if start >= end:
            return
        base = self.base
        # One regex pass over the block beats a loop over lines.
        text = "\n".join(self.buf[start - base : end - base])
        fence, max_level = self.fence, self.max_level
        run = self.run
        fence_from = start
        for i, m in line_starts(text, _BLOCK):
            line = start + i
            hashes, title, opener, info = m.groups()
            if run:
                # Closing fence: same character, at least as long, nothing after it.
                if (
                    opener
                    and opener[0] == run[0]
                    and len(opener) >= len(run)
                    and not info.strip(" \t")
                ):
                    fence[fence_from - base : line - base] = b"\x01" * (line - fence_from)
                    run = ""
                continue
            if hashes:
                if len(hashes) > max_level:
                    continue
                title = title.strip()
                if title.endswith("#"):
                    title = _ATX_CLOSE.sub("", title).strip()
                if title:  # an empty heading has no name to search by: plain text
                    self._header(line, len(hashes), title)
            elif not (opener[0] == "`" and "`" in info):  # backtick info may not hold '`'
                run, fence_from = opener, line
        if run:  # an open fence runs on into the next block (or to the end of the file)
            fence[fence_from - base : end - base] = b"\x01" * (end - fence_from)
        self.run = run
        self.scan_from = end

    def _header(self, line: int, level: int, title: str) -> None:
        """A header at ``line``: the section before it is complete; a new one starts."""
        self._finish(line)
        levels, texts = self.levels, self.texts
        while levels and levels[-1] >= level:
            levels.pop()
            texts.pop()
        levels.append(level)
        texts.append(title)
        self.sec_line, self.sec_header, self.body = line, title, line + 1
        self.piece, self.chain = -1, None

    # -- cutting ---------------------------------------------------------------

    def _start(self, end: int) -> int:
        """Begin cutting the section (its first piece's line), or -1 while it has no body.

        A section with no body yet is header-only so far; with one, the
        header-only sections waiting before it fold into it.
        """
        if self.sec_line < 0:
            first = self.base  # kept from line 0 until the text before any header is cut
            while first < end and self._blank(first):
                first += 1
            if first == end:
                return -1
            self.body = first
        else:
            first = self.sec_line
        last = end - 1
        while last >= self.body and self._blank(last):
            last -= 1
        if last < self.body:
            return -1
        if self.pending >= 0:
            first, self.pending = self.pending, -1
        self.piece = first
        return first

    def _advance(self) -> None:
        """Cut a long section's leading pieces now (those its full length cuts the same)."""
        if self.piece < 0 and self._start(self.n) < 0:
            return
        last = self.n - 1
        if last < self.piece:  # a resumed run not yet fed up to its piece
            return
        while self._blank(last):
            last -= 1
        if self._span(self.piece, last) <= _SPLIT_AHEAD:
            return
        pieces = self._split(self.piece, last, self.body)
        for a, b in pieces[:-1]:
            self._piece(a, b)
        self.piece = pieces[-1][0]

    def _finish(self, end: int) -> None:
        """The section ends before line ``end``: cut the rest of it."""
        if self.piece < 0:
            if self.sec_line < 0:
                if self._start(end) < 0:
                    return  # no text before the first header
            elif self._start(end) < 0:
                # Header-only: folds into the next section that has a body.
                if self.pending < 0:
                    self.pending = self.sec_line
                self.pending_last = self.sec_line
                self.pending_head = (self.sec_header, self._chain())
                return
        start = self.piece
        last = end - 1
        while self._blank(last):
            last -= 1
        cap = min(self.max_chars, self.list_chars or self.max_chars)
        pieces = self._split(start, last, self.body) if self._span(start, last) > cap else None
        for a, b in pieces or ((start, last),):
            self._piece(a, b)
        self.piece = -1

    def _chain(self) -> tuple[str, ...]:
        if self.chain is None:
            self.chain = tuple(self.texts) if self.sec_line >= 0 else (self.default_header,)
        return self.chain

    def _piece(self, a: int, b: int) -> None:
        """Place one piece: a chunk of its own, or joined to a neighbour when tiny."""
        base = self.base
        if self.carry >= 0:
            a, self.carry = self.carry, -1
        elif (
            a >= self.scan_start
            and not self.fence[a - base]
            and (a - 1 < base or not self.fence[a - 1 - base])
        ):
            # Nothing before `a` can change if the file grows: a run may start again here.
            section = (self.sec_line, self.sec_header, tuple(self.levels), tuple(self.texts))
            self.mark = (a, self.open, (*section, self.body))
        line_a, line_b = self.buf[a - base], self.buf[b - base]
        lead = len(line_a) - len(line_a.lstrip())
        trail = len(line_b) - len(line_b.rstrip())
        chain = self._chain()
        if self._span(a, b) - lead - trail > self.min_chars:
            if self.open:
                self._emit(self.open)
            self.open = (a, b, self.sec_header, chain)
        elif self.open:  # tiny: joins the previous chunk
            self.open = (self.open[0], b, self.open[2], self.open[3])
        else:  # tiny and first: joins the next one
            self.carry = a
        self.last = (a, b, self.sec_header, chain)

    def _split(self, first: int, last: int, min_cut: int) -> list[tuple[int, int]]:
        """Cut the span ``first..last`` into pieces (:func:`.cuts.cut_span`), as line indices."""
        base = self.base
        seg = self.buf[first - base : last + 1 - base]
        fence = self.fence[first - base : last + 1 - base]
        pieces = cut_span(seg, fence, min_cut - first, self.max_chars, self.list_chars)
        return [(first + a, first + b) for a, b in pieces]
