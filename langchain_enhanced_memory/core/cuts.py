"""Where a section's lines are cut into pieces: near ``max_chunk_chars``, and between list items.

A section longer than ``max_chunk_chars`` is cut, preferring blank lines, then
any line end outside a fenced block. A run of top-level list items (the bullets
``remember`` appends) is also cut between items into pieces of at most
``max_list_chars``, so a day's section of remembered facts is many small chunks,
each a few facts with the section's header chain, not a few chunks of dozens of
facts. Each cut depends only on the lines up to the one after it, so every
piece but the last is the same whatever follows: a note that grows is chunked
again from its last piece and gets the chunks the whole note would.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from itertools import accumulate
from operator import add

__all__ = ["cut_span"]

# A top-level list item: at the start of the line, a bullet or a number, then a space.
_ITEM = re.compile(r"(?:[-*+]|\d{1,9}[.)])(?:[ \t]|$)")


def cut_span(
    seg: list[str],
    fence: bytes | bytearray,
    min_cut: int,
    cap: int,
    list_cap: int,
) -> list[tuple[int, int]]:
    """Cut lines ``seg`` (a section's span, first and last non-blank) into pieces.

    Cuts at ``cap`` prefer blank lines (when the piece stays at least half full),
    then any line end outside a fenced block, and cut inside a fence only when no
    fence-respecting cut fits; a line longer than ``cap`` is never cut. A span
    over ``list_cap`` (0: no list cap) holding a cut before a top-level list item
    is cut before the last item that keeps the piece within ``list_cap`` (or, when
    even the first item overflows it, right before that item). No cut falls before
    ``min_cut`` (the first body line), so no piece is only headers.

    Args:
        seg: The lines, the first and last non-blank.
        fence: ``fence[r]`` is 1 when a cut right after line ``r`` would split a
            fenced block.
        min_cut: First line a cut may follow (relative to ``seg``).
        cap: ``max_chunk_chars``.
        list_cap: ``max_list_chars``.

    Returns:
        ``(first, last)`` line indices (relative to ``seg``) of the pieces, in order.
    """
    size = len(seg)
    # prefix[r] = characters in seg[:r], each line counted with its "\n".
    prefix = list(map(add, accumulate(map(len, seg), initial=0), range(size + 1)))

    def span(a: int, b: int) -> int:  # characters of seg[a..b] joined
        return prefix[b + 1] - prefix[a] - 1

    def fits(a: int, chars: int) -> int:  # farthest line b with span(a, b) <= chars
        return bisect_right(prefix, prefix[a] + chars + 1, lo=a + 1) - 2

    blank = [not line.strip() for line in seg]
    blank_cut, line_cut, any_cut, item_cut, next_item = _cut_points(seg, fence, blank)
    pieces: list[tuple[int, int]] = []
    start = 0
    end = size - 1
    while True:
        whole = span(start, end)
        lo = max(start, min_cut)
        listed = list_cap and whole > list_cap and end > lo and item_cut[end - 1] >= lo
        if whole <= cap and not listed:
            break
        limit = fits(start, cap)
        cut = -1
        if listed:
            near = min(fits(start, list_cap), end - 1)
            cut = item_cut[near] if near >= lo else -1
            if cut < lo:
                cut = next_item[lo]  # the first item alone is over the cap: cut after it
            if whole > cap and cut > limit:
                cut = -1  # not within max_chunk_chars: the cut below
        if cut < 0 and limit >= lo:
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
        pieces.append((start, cut))
        start = cut + 1
        while blank[start]:  # seg[end] is non-blank, so this stops
            start += 1
    pieces.append((start, end))
    return pieces


def _cut_points(
    seg: list[str], fence: bytes | bytearray, blank: list[bool]
) -> tuple[list[int], list[int], list[int], list[int], list[int]]:
    """The last cut of each kind at or before each line (-1: none), and the next item cut.

    A cut "after r" needs line r non-blank and not the last line. Kinds: followed
    by a blank line outside a fence, any line outside a fence, any line (fences
    ignored), and followed (after blank lines) by a top-level list item outside a
    fence. ``next_item[r]`` is the first item cut at or after r (-1: none).
    """
    size = len(seg)
    blank_cut = [-1] * size
    line_cut = [-1] * size
    any_cut = [-1] * size
    b_cut = l_cut = a_cut = -1
    for r in range(size - 1):
        if not blank[r]:
            a_cut = r
            if not fence[r]:
                l_cut = r
                if blank[r + 1]:
                    b_cut = r
        blank_cut[r], line_cut[r], any_cut[r] = b_cut, l_cut, a_cut
    item_at = [False] * size
    before = -1  # the last non-blank line
    for r in range(size):
        if blank[r]:
            continue
        if before >= 0 and not fence[r - 1] and not fence[before] and _ITEM.match(seg[r]):
            item_at[before] = True
        before = r
    item_cut = list(accumulate((r if item_at[r] else -1 for r in range(size)), max))
    next_item = [-1] * (size + 1)
    for r in range(size - 1, -1, -1):
        next_item[r] = r if item_at[r] else next_item[r + 1]
    return blank_cut, line_cut, any_cut, item_cut, next_item[:size]
