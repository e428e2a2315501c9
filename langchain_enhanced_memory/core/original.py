r"""The original "enhanced-memory" skill, replayed: its chunker, date parser and keyword match.

Every place the ``original`` profile differs from the default recipe is one
of the three strategies below, chosen once by :func:`.recipe.recipe` from the
settings (``chunking``, ``date_parser``, ``lexical``); nothing else in the
package branches on them. They keep the original's flaws on purpose: they are
a measured baseline (docs/benchmarks.md, "Quality").

* :class:`OriginalChunker`: a chunk starts at every line matching
  ``^#{1,4}\s`` (no code-fence awareness), text before the first header is
  headed by the file name, chunks of ``min_chunk_chars`` characters or fewer
  are dropped, no size cap.
* :class:`OriginalDates`: single days only, English only, regexes that are
  not word-bounded, a month-day without a year in ``now``'s year, ``last
  week`` (and so ``last weekend``) as ``now - 7``, ``25 May 2023`` read as
  2023-05-25 *and* May 20 of ``now``'s year; date words stay keywords, and a
  chunk is boosted when its path contains the date string.
* :class:`SubstringLexical`: the share of query words (``\w+``, longer than 2
  characters, no stopwords) found as *substrings* of the text, header and
  path ("art" matches "start"); PRF also takes words from the path.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import date, datetime, timedelta
from functools import lru_cache

import numpy as np

from .chunking import Chunk, Resume, is_blank, line_starts
from .dates import MONTH_PREFIXES, MONTHS, WEEKDAYS, DateQuery, day_of
from .scoring import substring_fraction
from .settings_groups import ChunkerSettings, RankingSettings
from .snapshot import Snapshot
from .text import STOPWORDS_EN, path_text

__all__ = [
    "OriginalChunker",
    "OriginalDates",
    "SubstringLexical",
    "WholeStream",
    "original_query_words",
]

_WORD_RE = re.compile(r"\w+")


# --------------------------------------------------------------------------- chunks
@lru_cache(maxsize=8)
def _header_re(max_level: int) -> re.Pattern[str]:
    # The original's r"^#{1,4}\s" per line; [^\S\n] keeps \s from matching the joining "\n".
    return re.compile(rf"^#{{1,{max_level}}}[^\S\n]", re.MULTILINE)


class OriginalChunker:
    """The original's chunks: one per header line, short ones dropped."""

    def __init__(self, chunker: ChunkerSettings) -> None:
        self.chunker = chunker

    def stream(self, default_header: str, resume: Resume | None = None) -> WholeStream:
        """The lines kept whole, then chunked (never resumed: ``resume`` is None here)."""
        return WholeStream(lambda lines: self(lines, default_header))

    def __call__(self, lines: list[str], default_header: str) -> list[Chunk]:
        """Chunk a file's lines; spans are exact (blank lines at both ends skipped)."""
        header_re = _header_re(self.chunker.max_header_level)
        starts = [i for i, _ in line_starts("\n".join(lines), header_re)]
        sections: list[tuple[int, int, str]] = []  # (first index, end index exclusive, header)
        if not starts or starts[0] > 0:
            sections.append((0, starts[0] if starts else len(lines), default_header))
        for n, i in enumerate(starts):
            end = starts[n + 1] if n + 1 < len(starts) else len(lines)
            sections.append((i, end, lines[i].lstrip("#").strip() or default_header))
        chunks: list[Chunk] = []
        for first, end, header in sections:
            while first < end and is_blank(lines[first]):
                first += 1
            last = end - 1
            while last >= first and is_blank(lines[last]):
                last -= 1
            if last < first:
                continue
            text = "\n".join(lines[first : last + 1])
            if len(text.strip()) <= self.chunker.min_chunk_chars:
                continue  # the original drops short chunks
            chunks.append(Chunk(first + 1, last + 1, header, (header,), text))
        return chunks


# --------------------------------------------------------------------------- dates
_O_MON = (
    r"(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
_O_ISO = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})")
_O_MONTH_DAY = re.compile(_O_MON + r"\s+([0-9]{1,2})(?:st|nd|rd|th)?(?:,?\s+([0-9]{4}))?")
_O_DAY_MONTH = re.compile(r"([0-9]{1,2})(?:st|nd|rd|th)?\s+" + _O_MON + r"(?:,?\s+([0-9]{4}))?")
# The lookbehind changes no result (a match can only start at the first digit
# of a run) but keeps a long run of digits from costing quadratic time.
_O_AGO = re.compile(r"((?<![0-9])[0-9]+|two|three|four|five|six|seven)\s+days?\s+ago")
_O_LAST_WEEKDAY = re.compile(r"last\s+(monday|tuesday|wednesday|thursday|friday|saturday|sunday)")
_O_WORDS = {"two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7}


def _safe_date(year: int, month: int, day: int) -> date | None:
    try:
        return date(year, month, day)
    except ValueError:
        return None


def _days_back(today: date, n: int) -> date | None:
    try:
        return today - timedelta(days=n)
    except OverflowError:
        return None


def parse_dates_original(query: str, now: datetime | date) -> DateQuery:
    """Replay the original skill's temporal routing (single days, English only, no spans).

    Its regexes are searched in the lower-cased query without word boundaries,
    each on its own, so matches may overlap ("25 May 2023" is 2023-05-25 and
    "may 20" of ``today``'s year); "last week" is ``today - 7`` and matches
    inside "last weekend"; a month-day without a year takes ``today``'s year.
    "day before yesterday" is two days back and does not also count as
    "yesterday" (the original's exact precedence is not documented; this is the
    reading that agrees with its stated list). Never raises on any query text.

    Raises:
        TypeError: If ``now`` is not a ``date`` or ``datetime``.
    """
    today = day_of(now)
    if not isinstance(query, str) or not query:
        return DateQuery()
    q = query.lower()
    found: set[date | None] = set()
    if "-" in q:
        found.update(_safe_date(int(y), int(m), int(d)) for y, m, d in set(_O_ISO.findall(q)))
    if any(month in q for month in MONTH_PREFIXES):
        for mon, d, y in set(_O_MONTH_DAY.findall(q)):
            found.add(_safe_date(int(y or today.year), MONTHS[mon[:3]], int(d)))
        for d, mon, y in set(_O_DAY_MONTH.findall(q)):
            found.add(_safe_date(int(y or today.year), MONTHS[mon[:3]], int(d)))
    if "today" in q:
        found.add(today)
    if "day before yesterday" in q:
        found.add(_days_back(today, 2))
    elif "yesterday" in q:
        found.add(_days_back(today, 1))
    if "ago" in q:
        for n in set(_O_AGO.findall(q)):
            if len(n) <= 7:  # longer runs of digits name more days than any calendar holds
                found.add(_days_back(today, _O_WORDS.get(n) or int(n)))
    if "last" in q:
        if "last week" in q:
            found.add(_days_back(today, 7))
        for name in set(_O_LAST_WEEKDAY.findall(q)):
            found.add(_days_back(today, (today.weekday() - WEEKDAYS[name]) % 7 or 7))
    return DateQuery(days=tuple(sorted(d for d in found if d is not None)))


class OriginalDates:
    """The original's date routing: its parser, date words kept, path-substring boost."""

    def parse(self, query: str, now: datetime | date) -> DateQuery:
        """The days the query names, the original's way."""
        return parse_dates_original(query, now)

    def keyword_text(self, query: str, dq: DateQuery) -> str:
        """The original matched date words as keywords too."""
        return query

    def multiplier(self, snap: Snapshot, dq: DateQuery, ranking: RankingSettings) -> np.ndarray:
        """``temporal_boost`` for every chunk whose path contains one of the ISO dates."""
        isos = [d.isoformat() for d in dq.days]
        return np.asarray(
            [ranking.temporal_boost if any(d in p for d in isos) else 1.0 for p in snap.paths],
            dtype=np.float32,
        )


# --------------------------------------------------------------------------- keywords
def original_query_words(query: str) -> list[str]:
    r"""The original skill's query words: ``\w+`` of the lowercased query.

    Words of two characters or fewer and English stopwords are dropped.
    """
    words = _WORD_RE.findall(query.lower())
    return list(dict.fromkeys(w for w in words if len(w) > 2 and w not in STOPWORDS_EN))


def _lowered(snap: Snapshot) -> tuple[list[str], list[str], list[str]]:
    """Lowercased texts, headers and paths-as-words of ``snap`` (made once per generation)."""
    views = snap.memo.get("lowered")
    if views is None:
        views = (
            [t.lower() for t in snap.texts],
            [h.lower() for h in snap.header],
            [path_text(p).lower() for p in snap.paths],
        )
        snap.memo["lowered"] = views
    return views


class SubstringLexical:
    """The original's keyword, header and path signals: substring overlap."""

    def terms(self, text: str) -> tuple[list[str], list[str]]:
        """The original's query words; no phrase pairs."""
        return original_query_words(text), []

    def signals(
        self, snap: Snapshot, terms: list[str], pairs: list[str], mask: np.ndarray | None = None
    ) -> dict[str, np.ndarray]:
        """Share of ``terms`` found in each chunk's text, header and path (absolute: no mask)."""
        texts, headers, paths = _lowered(snap)
        keyword = substring_fraction(texts, terms)
        return {
            "keyword": keyword,
            "header": substring_fraction(headers, terms),
            "filepath": substring_fraction(paths, terms),
            "_coverage": keyword,
        }

    def feedback_source(self, snap: Snapshot, i: int) -> list[str]:
        """Words PRF may take from chunk ``i``: the original also read its path (a flaw)."""
        return _WORD_RE.findall((snap.texts[i] + " " + snap.paths[i]).lower())


class WholeStream:
    """The original's list chunker behind :class:`.chunking.SectionStream`'s face: lines kept whole.

    Args:
        chunker: Turns all the lines into chunks at :meth:`close`.
    """

    resume: Resume | None = None  # no resume point: a grown file is read again whole

    def __init__(self, chunker: Callable[[list[str]], list[Chunk]]) -> None:
        self.chunker = chunker
        self.lines: list[str] = []

    def feed(self, lines: list[str], first: int) -> list[Chunk]:
        """Keep the lines (``first`` is where they start; they come in order)."""
        self.lines += lines
        return []

    def close(self) -> list[Chunk]:
        """All the chunks."""
        return self.chunker(self.lines)
