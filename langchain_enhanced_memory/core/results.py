"""What a search returns: ranked hits and what produced them (plain data)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["Hit", "Ranking", "SearchResponse"]


@dataclass
class Hit:
    """One ranked chunk."""

    path: str
    start_line: int
    end_line: int
    header: str
    headers: str
    text: str
    score: float
    signals: dict[str, float]
    kind: str
    date: str | None
    related: list[dict[str, Any]] = field(default_factory=list)  # see graph.related
    scope: str | None = None  # the scope it came from, when the search named scopes


@dataclass
class SearchResponse:
    """Ranked hits plus what produced them.

    Attributes:
        filtered: How many hits ``min_score`` removed (None when no ``min_score``).
        embedded: While vectors are still being embedded, the share of chunks
            that has one (the answer is keyword-only meanwhile); else None.
        mode: ``hybrid`` (a query vector was used) or ``keyword``.
        filter_note: Why a filtered search found nothing (None otherwise).
        stale: The scopes answered from the generation this process last read,
            because their database could not be reached (empty: every scope is current).
        timings: Milliseconds per stage (``syncMs``, ``embedMs``, ``rankMs``, ``searchMs``).
    """

    hits: list[Hit]
    provider: str
    model: str | None
    fallback: str | None = None
    temporal_dates: list[str] = field(default_factory=list)
    prf_terms: list[str] = field(default_factory=list)
    filtered: int | None = None
    embedded: float | None = None
    mode: str = "keyword"
    filter_note: str | None = None
    stale: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)


@dataclass
class Ranking:
    """Scores of every chunk for one query (pure result of :func:`.ranking.rank`)."""

    scores: np.ndarray
    signals: dict[str, np.ndarray]
    temporal_dates: list[str]
    prf_terms: list[str]
    terms: list[str] = field(default_factory=list)  # the query's keyword terms, dates left out
