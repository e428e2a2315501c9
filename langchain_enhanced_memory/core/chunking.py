r"""Split a markdown file's lines into header-scoped chunks with exact line spans.

Headers inside fenced code blocks or YAML front matter do not count, each chunk
knows its header chain, header-only sections fold into the following chunk,
tiny sections merge into a neighbour instead of being lost, and long sections
are split near ``max_chunk_chars``. The chunks cover every non-blank line of
the file exactly once, in order, and start and end on non-blank lines, and
``Chunk.text`` is exactly ``"\n".join(lines[start_line - 1 : end_line])``.
The original skill's chunker (every header, no fences) is in :mod:`.original`.
"""

from __future__ import annotations

import re
from array import array
from bisect import bisect_right
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import accumulate
from operator import add

from .settings import MemorySettings

__all__ = ["Chunk", "chunk_lines", "is_blank", "line_starts", "line_texts", "outline"]


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
    lines: list[str], *, default_header: str, settings: MemorySettings | None = None
) -> list[Chunk]:
    """Chunk a file's lines (as returned by ``read_lines``) into sections.

    Args:
        lines: The file's lines without line endings.
        default_header: Header of text that has no header (callers pass the file name).
        settings: Uses ``max_header_level``, ``min_chunk_chars`` and
            ``max_chunk_chars``; defaults to :class:`MemorySettings()`.

    Returns:
        The chunks in file order.
    """
    return _Chunker(lines, default_header, settings or MemorySettings()).run()


def outline(lines: list[str]) -> tuple[list[tuple[int, int, str]], str]:
    """The headers a writer may put text under, found as :func:`chunk_lines` finds them.

    Args:
        lines: The file's lines without line endings.

    Returns:
        The headers of every level outside fences and front matter, as ``(line
        index, level, text)``, and the fence run (```` ``` ````, ``~~~~``) of a
        fence the file leaves open at its end, ``""`` when none is open.
    """
    scanner = _Chunker(lines, "", MemorySettings(max_header_level=6))
    scanner.scan()
    headers = list(zip(scanner.h_line, scanner.h_level, scanner.h_text, strict=True))
    return headers, scanner.open_fence


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


class _Chunker:
    """Default-mode chunker; linear in the size of the file.

    Files can hold hundreds of thousands of small sections, so the hot loops keep
    plain ints in parallel lists rather than allocating an object per section.
    """

    def __init__(self, lines: list[str], default_header: str, settings: MemorySettings) -> None:
        self.lines = lines
        self.default_header = default_header
        self.max_level = settings.max_header_level
        self.min_chars = settings.min_chunk_chars
        self.max_chars = settings.max_chunk_chars
        # cum[k] = characters in lines[:k] without line endings (a compact int array).
        self.cum = array("q", accumulate(map(len, lines), initial=0))
        # in_fence[i] == 1: line i is inside a fence and a cut right after it would split
        # the fence (the opening line and the body, not the closing line).
        self.in_fence = bytearray(len(lines))
        # Headers found by scan(): line index, level and text, in parallel lists.
        self.h_line: list[int] = []
        self.h_level: list[int] = []
        self.h_text: list[str] = []
        # The opening run of a fence still open at the end of the file ("" when none).
        self.open_fence = ""

    # -- helpers ---------------------------------------------------------------

    def span_chars(self, first: int, last: int) -> int:
        r"""Length of ``"\n".join(lines[first:last + 1])``."""
        return self.cum[last + 1] - self.cum[first] + last - first

    def chain_at(self, k: int) -> tuple[str, ...]:
        """Header chain of header ``k`` (-1: the preamble), rebuilt from the start."""
        if k < 0:
            return (self.default_header,)
        levels: list[int] = []
        texts: list[str] = []
        for level, text in zip(self.h_level[: k + 1], self.h_text[: k + 1], strict=True):
            while levels and levels[-1] >= level:
                levels.pop()
                texts.pop()
            levels.append(level)
            texts.append(text)
        return tuple(texts)

    # -- scanning --------------------------------------------------------------

    def scan(self) -> None:
        """Find the real headers (outside fences and front matter) and mark fences."""
        lines = self.lines
        text = "\n".join(lines)  # one regex pass over the file beats a loop over lines
        pos = 0
        if lines and lines[0].rstrip() == "---":
            # YAML front matter, only when closed; its lines stay plain preamble text.
            end = _FRONT_MATTER_END.search(text, len(lines[0]) + 1)
            if end is not None:
                pos = end.end()
        h_line, h_level, h_text = self.h_line, self.h_level, self.h_text
        max_level = self.max_level
        in_fence = self.in_fence
        fence = ""  # the opening fence run while inside a fence
        fence_start = 0
        for i, m in line_starts(text, _BLOCK, pos):
            hashes, title, run, info = m.groups()
            if fence:
                # Closing fence: same character, at least as long, nothing after it.
                if run and run[0] == fence[0] and len(run) >= len(fence) and not info.strip(" \t"):
                    in_fence[fence_start:i] = b"\x01" * (i - fence_start)
                    fence = ""
                continue
            if hashes:
                if len(hashes) > max_level:
                    continue
                title = title.strip()
                if title.endswith("#"):
                    title = _ATX_CLOSE.sub("", title).strip()
                if title:  # an empty heading has no name to search by: plain text
                    h_line.append(i)
                    h_level.append(len(hashes))
                    h_text.append(title)
            elif not (run[0] == "`" and "`" in info):  # backtick info may not hold '`'
                fence, fence_start = run, i
        if fence:  # an unclosed fence runs to the end of the file
            in_fence[fence_start:] = b"\x01" * (len(lines) - fence_start)
        self.open_fence = fence

    # -- chunking --------------------------------------------------------------

    def run(self) -> list[Chunk]:
        lines = self.lines
        n = len(lines)
        self.scan()
        h_line, h_level, h_text = self.h_line, self.h_level, self.h_text
        nh = len(h_line)
        cap, min_chars, default_header = self.max_chars, self.min_chars, self.default_header
        span_chars = self.span_chars

        # Output chunks as parallel lists.
        o_first: list[int] = []
        o_last: list[int] = []
        o_header: list[str] = []
        o_chain: list[tuple[str, ...]] = []
        pending = -1  # first line of header-only sections waiting for a body
        pending_last = pending_k = -1
        carry = -1  # start of tiny leading pieces waiting for a successor
        last_b = last_k = -1
        levels: list[int] = []
        texts: list[str] = []

        # Section k is the text under header k; k == -1 is the preamble.
        for k in range(-1, nh):
            end = h_line[k + 1] if k + 1 < nh else n
            if k < 0:
                first = 0
                while first < end and not lines[first].strip():
                    first += 1
                if first == end:
                    continue  # no preamble
                header, body = default_header, first
            else:
                first, header, level = h_line[k], h_text[k], h_level[k]
                while levels and levels[-1] >= level:
                    levels.pop()
                    texts.pop()
                levels.append(level)
                texts.append(header)
                body = first + 1
            last = end - 1
            while not lines[last].strip():
                last -= 1
            if last < body:
                # Header-only: folds into the next section that has a body.
                if pending < 0:
                    pending = first
                pending_last, pending_k = last, k
                continue
            if pending >= 0:
                first, pending = pending, -1

            size = span_chars(first, last)
            pieces = self.split(first, last, body) if size > cap else ((first, last),)
            chain: tuple[str, ...] | None = None
            for a, b in pieces:
                if carry >= 0:
                    a, carry = carry, -1
                lead = len(lines[a]) - len(lines[a].lstrip())
                trail = len(lines[b]) - len(lines[b].rstrip())
                if span_chars(a, b) - lead - trail > min_chars:
                    if chain is None:
                        chain = tuple(texts) if k >= 0 else (default_header,)
                    o_first.append(a)
                    o_last.append(b)
                    o_header.append(header)
                    o_chain.append(chain)
                elif o_first:  # tiny: joins the previous chunk
                    o_last[-1] = b
                else:  # tiny and first: joins the next one
                    carry = a
                last_b, last_k = b, k

        if carry >= 0:  # everything was tiny: keep it as one chunk
            o_first.append(carry)
            o_last.append(last_b)
            o_header.append(h_text[last_k] if last_k >= 0 else default_header)
            o_chain.append(self.chain_at(last_k))
        if pending >= 0:  # trailing header-only sections join the last chunk
            if o_first:
                o_last[-1] = pending_last
            else:
                o_first.append(pending)
                o_last.append(pending_last)
                o_header.append(h_text[pending_k])
                o_chain.append(self.chain_at(pending_k))

        return [
            Chunk(a + 1, b + 1, header, chain, "\n".join(lines[a : b + 1]))
            for a, b, header, chain in zip(o_first, o_last, o_header, o_chain, strict=True)
        ]

    def split(self, first: int, last: int, min_cut: int) -> list[tuple[int, int]]:
        """Cut the span ``first..last`` (longer than ``max_chars``) into pieces.

        Cuts prefer blank lines (when the piece stays at least half full), then any
        line end outside a fenced block, and cut inside a fence only when no
        fence-respecting cut fits. A line longer than the cap is never cut, and no
        cut falls before ``min_cut`` (the first body line), so no piece is only
        headers.

        Returns:
            ``(first, last)`` line indices of the pieces, in order.
        """
        cap = self.max_chars
        seg = self.lines[first : last + 1]
        size = len(seg)
        # prefix[r] = characters in seg[:r], each line counted with its "\n".
        prefix = list(map(add, accumulate(map(len, seg), initial=0), range(size + 1)))

        def span(a: int, b: int) -> int:  # characters of seg[a..b] joined
            return prefix[b + 1] - prefix[a] - 1

        # Last cut point at or before each relative line, -1 when none. A cut "after
        # r" needs line r non-blank and not the last line.
        blank = [not line.strip() for line in seg]
        fence = self.in_fence[first : last + 1]
        blank_cut = [-1] * size  # r followed by a blank line, not inside a fence
        line_cut = [-1] * size  # any r not inside a fence
        any_cut = [-1] * size  # any non-blank r, fences ignored
        b_cut = l_cut = a_cut = -1
        for r in range(size - 1):
            if not blank[r]:
                a_cut = r
                if not fence[r]:
                    l_cut = r
                    if blank[r + 1]:
                        b_cut = r
            blank_cut[r], line_cut[r], any_cut[r] = b_cut, l_cut, a_cut

        pieces: list[tuple[int, int]] = []
        start = 0
        end = size - 1
        min_cut -= first
        while span(start, end) > cap:
            lo = max(start, min_cut)
            # Farthest line `limit` with span(start, limit) <= cap.
            limit = bisect_right(prefix, prefix[start] + cap + 1, lo=start + 1) - 2
            cut = -1
            if limit >= lo:
                if blank_cut[limit] >= lo and 2 * span(start, blank_cut[limit]) >= cap:
                    cut = blank_cut[limit]
                elif line_cut[limit] >= lo:
                    cut = line_cut[limit]
                elif any_cut[limit] >= lo:
                    cut = any_cut[limit]  # the fence alone is bigger than the cap
            if cut < 0:
                # A line longer than the cap: keep it whole, cut right after it.
                cut = lo
                while cut < end and blank[cut]:
                    cut += 1
                if cut >= end:
                    break
            pieces.append((first + start, first + cut))
            start = cut + 1
            while blank[start]:  # seg[end] is non-blank, so this stops
                start += 1
        pieces.append((first + start, last))
        return pieces
