"""The three strategies a scoring recipe is made of, chosen once from the settings.

``recipe(settings)`` returns a :class:`Recipe`: how files become chunks, how a
query's dates are found and applied, and how the keyword, header and path
signals are computed. The default recipe's strategies are here; the original
skill's are in :mod:`.original`. Indexing, the loader, migration and ranking
call the recipe, so no other module branches on ``chunking``, ``date_parser``
or ``lexical``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from functools import lru_cache
from typing import Protocol

import numpy as np

from . import fusion, scoring
from .chunking import Chunk, ChunkStream, Resume, SectionStream, chunk_lines
from .dates import DateQuery, parse_dates
from .segments import ReadOnce
from .settings import MemorySettings
from .settings_groups import ChunkerSettings, RankingSettings
from .snapshot import Snapshot
from .text import STOPWORDS_QUERY, phrases, query_terms, tokenize

__all__ = [
    "BM25Lexical",
    "Chunker",
    "DateRouting",
    "Lexical",
    "NoDates",
    "Recipe",
    "SectionChunker",
    "SectionDates",
    "recipe",
]


class Chunker(Protocol):
    """Turns a file's lines into chunks."""

    def __call__(self, lines: list[str], default_header: str) -> list[Chunk]:
        """The chunks of a file's lines; text before any header is headed ``default_header``."""
        ...

    def stream(self, default_header: str, resume: Resume | None = None) -> ChunkStream:
        """The same chunks, fed a block of lines at a time (``resume``: a grown file's tail)."""
        ...


class DateRouting(Protocol):
    """Finds the dates a query names and boosts the chunks of those dates."""

    def parse(self, query: str, now: datetime | date) -> DateQuery:
        """The days and ranges ``query`` names, resolved against ``now``."""
        ...

    def keyword_text(self, query: str, dq: DateQuery) -> str:
        """The part of ``query`` the keyword signals match."""
        ...

    def multiplier(self, snap: Snapshot, dq: DateQuery, ranking: RankingSettings) -> np.ndarray:
        """Each chunk's date boost (1 where no date applies)."""
        ...


class Lexical(Protocol):
    """The keyword, header and path signals (plus ``_coverage`` for adaptive weights)."""

    def terms(self, text: str) -> tuple[list[str], list[str]]:
        """The query's terms and phrase pairs."""
        ...

    def signals(
        self, snap: Snapshot, terms: list[str], pairs: list[str], mask: np.ndarray | None = None
    ) -> dict[str, np.ndarray]:
        """``keyword``, ``header``, ``filepath`` and ``_coverage`` of every chunk.

        ``mask`` (a filter's rows): per-query normalisation over those rows only.
        """
        ...

    def feedback_source(self, snap: Snapshot, i: int) -> list[str]:
        """The words pseudo-relevance feedback may take from chunk ``i``."""
        ...


class SectionChunker:
    """Fence-aware section chunks with header chains (:func:`.chunking.chunk_lines`)."""

    def __init__(self, chunker: ChunkerSettings) -> None:
        self.chunker = chunker

    def __call__(self, lines: list[str], default_header: str) -> list[Chunk]:
        """Chunk a file's lines."""
        return chunk_lines(lines, default_header=default_header, settings=self.chunker)

    def stream(self, default_header: str, resume: Resume | None = None) -> ChunkStream:
        """Chunk a file as it is read (from ``resume`` when it only grew)."""
        return SectionStream(default_header, self.chunker, resume)


class SectionDates:
    """English and Chinese dates; date words are not keywords; days x3, ranges x1.5."""

    def parse(self, query: str, now: datetime | date) -> DateQuery:
        """The days and ranges the query names."""
        return parse_dates(query, now)

    def keyword_text(self, query: str, dq: DateQuery) -> str:
        """The query without its date words: they name a day, not a topic."""
        for lo, hi in sorted(dq.spans, reverse=True):
            query = query[:lo] + " " + query[hi:]
        return query

    def multiplier(self, snap: Snapshot, dq: DateQuery, ranking: RankingSettings) -> np.ndarray:
        """The boost of each chunk's daily note."""
        return fusion.date_multiplier(
            snap.day,
            [d.toordinal() for d in dq.days],
            [(a.toordinal(), b.toordinal()) for a, b in dq.ranges],
            ranking.temporal_boost,
            ranking.range_boost,
        )


class NoDates:
    """``date_routing=False``: no date is found, nothing is boosted."""

    def parse(self, query: str, now: datetime | date) -> DateQuery:
        """Nothing."""
        return DateQuery()

    def keyword_text(self, query: str, dq: DateQuery) -> str:
        """The query as written."""
        return query

    def multiplier(self, snap: Snapshot, dq: DateQuery, ranking: RankingSettings) -> np.ndarray:
        """No boost."""
        return fusion.no_boost(len(snap))


COMMON_MIN_ROWS = 100_000  # below this a common term's scatter is well under a millisecond
COMMON_SHARE = 8  # a term in an eighth of the chunks or more is kept whole ...
COMMON_TERMS = 16  # ... up to this many per generation


class BM25Lexical:
    """BM25 over stemmed terms plus phrase pairs; whole-term header and path matches."""

    def __init__(self, ranking: RankingSettings) -> None:
        self.ranking = ranking

    def terms(self, text: str) -> tuple[list[str], list[str]]:
        """Unique query terms, and pairs from the query as written (repeats and order kept)."""
        return query_terms(text), phrases(tokenize(text))

    def signals(
        self, snap: Snapshot, terms: list[str], pairs: list[str], mask: np.ndarray | None = None
    ) -> dict[str, np.ndarray]:
        """Max-normalised BM25 (+ phrase BM25), and the share of terms in header and path."""
        s = self.ranking
        text = ReadOnce(snap.text_post)
        norms = self._norms(snap, "text")
        common = self._common(snap, text, terms, norms)
        keyword = scoring.bm25(text, terms, s.bm25_k1, s.bm25_b, norms, common)
        pair_post = ReadOnce(snap.phrase_post)
        # Most pairs of a query are in no chunk: then the phrase part is zeros, not worth a pass.
        if s.phrase_weight and any(pair_post.column(p)[0].size for p in pairs):
            phrase = scoring.bm25(
                pair_post, pairs, s.bm25_k1, s.bm25_b, self._norms(snap, "phrase")
            )
            keyword += np.multiply(phrase, s.phrase_weight, out=phrase)
        return {
            "keyword": fusion.max_normalize(keyword, mask, out=keyword),
            "header": scoring.match_fraction(snap.header_post, terms),
            "filepath": scoring.match_fraction(snap.path_post, terms),
            "_coverage": scoring.match_fraction(text, terms, common),
        }

    def _norms(self, snap: Snapshot, field: str) -> np.ndarray:
        """The field's BM25 length terms, kept with the generation for these constants."""
        s = self.ranking
        key = f"bm25_norms:{field}:{s.bm25_k1}:{s.bm25_b}"
        if key not in snap.memo:
            post = snap.text_post if field == "text" else snap.phrase_post
            snap.memo[key] = scoring.bm25_norms(post.doc_len, s.bm25_k1, s.bm25_b)
        return snap.memo[key]

    def _common(
        self, snap: Snapshot, text: ReadOnce, terms: list[str], norms: np.ndarray
    ) -> dict[str, np.ndarray]:
        """The BM25 over every chunk of those ``terms`` most chunks hold, kept with the generation.

        At a million chunks a term like "team" is in most of them: reading its
        column and scattering it into the BM25 sum and the coverage again each
        query costs more than adding a kept array, several times more for a query
        with three common terms (docs/design.md, "The vector scan beside the keyword
        signals"). Only large workspaces keep them, a few terms (4 MB each at 1M
        chunks), the first ones a query asks for.
        """
        n = len(snap)
        if n < COMMON_MIN_ROWS:
            return {}
        s = self.ranking
        kept: dict[str, np.ndarray] = snap.memo.setdefault(
            f"bm25_common:{s.bm25_k1}:{s.bm25_b}", {}
        )
        out = {}
        for term in terms:
            whole = kept.get(term)
            if (
                whole is None
                and len(kept) < COMMON_TERMS
                and text.column(term)[0].size * COMMON_SHARE >= n
            ):
                whole = kept[term] = scoring.bm25(text, [term], s.bm25_k1, s.bm25_b, norms)
            if whole is not None:
                out[term] = whole
        return out

    def feedback_source(self, snap: Snapshot, i: int) -> list[str]:
        """Terms PRF may take from chunk ``i``."""
        return tokenize(snap.texts[i], stopwords=STOPWORDS_QUERY)


@dataclass(frozen=True)
class Recipe:
    """The strategies of one settings object."""

    chunker: Chunker
    dates: DateRouting
    lexical: Lexical


@lru_cache(maxsize=32)
def recipe(settings: MemorySettings) -> Recipe:
    """The strategies ``settings`` asks for (cached: settings are frozen and hashable)."""
    chunker: Chunker = SectionChunker(settings.chunker)
    dates: DateRouting = SectionDates() if settings.ranking.date_routing else NoDates()
    lexical: Lexical = BM25Lexical(settings.ranking)
    if (
        "original" in (settings.chunker.chunking, settings.ranking.date_parser)
        or settings.ranking.lexical == "substring"
    ):
        # The original skill's strategies load only when asked for: a one-shot search imports less.
        from . import original

        if settings.chunker.chunking == "original":
            chunker = original.OriginalChunker(settings.chunker)
        if settings.ranking.date_routing and settings.ranking.date_parser == "original":
            dates = original.OriginalDates()
        if settings.ranking.lexical == "substring":
            lexical = original.SubstringLexical()
    return Recipe(chunker, dates, lexical)
