"""Search filters: which chunks a search may return, as a mask over a snapshot.

A :class:`SearchFilter` narrows a search to a period (``since``/``until``), a
part of the workspace (``path``) and kinds of files (``kind``). It is applied
before ranking picks its ``k`` (a boolean mask over the snapshot's rows), so a
filtered search returns ``k`` results whenever ``k`` matching chunks exist.

``since`` and ``until`` take an ISO date or datetime (``2026-02-01``) or the
date words the query router understands (``last week``, ``past 3 months``,
``上个月``), resolved against the search's ``now``: ``since`` is the first day
they name, ``until`` the last. A date filter keeps only dated chunks (daily
notes, whose name starts with a date), since an undated file is from no period.
``path`` is a glob (``memory/topics/**``) when it holds ``*``, ``?`` or
``[``, else a prefix (``memory/topics`` keeps that folder and what is in it).
``kind`` is one or more of ``core``, ``daily`` and ``topic``. ``corpus`` (OpenClaw's
word) is ``memory`` (the notes), ``sessions`` (the session transcripts, dated
by their messages) or ``all`` (both, the default).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, fields
from datetime import date, datetime
from typing import Any, Literal

import numpy as np

from .dates import DateQuery, parse_dates
from .errors import SHOWN_CHARS, RequestError, shown
from .globs import glob_match
from .snapshot import Snapshot

__all__ = [
    "CORPORA",
    "FILTER_FIELDS",
    "KINDS",
    "KIND_SCHEMA",
    "SearchFilter",
    "filter_mask",
    "resolve_day",
    "why_empty",
]

Kind = Literal["core", "daily", "topic"]
KINDS: tuple[str, ...] = ("core", "daily", "topic")
#: ``kind`` as a tool schema publishes it: one kind or a list of them (or null).
KIND_SCHEMA: dict[str, Any] = {
    "anyOf": [
        {"type": "string", "enum": list(KINDS)},
        {"type": "array", "items": {"type": "string", "enum": list(KINDS)}},
        {"type": "null"},
    ]
}
#: OpenClaw's ``corpus`` values: the notes, the session transcripts, or both.
CORPORA: tuple[str, ...] = ("memory", "sessions", "all")
_ISO_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}")
_GLOB_CHARS = frozenset("*?[")


@dataclass(frozen=True)
class SearchFilter:
    """Which chunks a search may return (every field optional; all given must hold).

    Attributes:
        since: First day (inclusive): an ISO date or date words (``last week``).
        until: Last day (inclusive): an ISO date or date words.
        path: A glob (``memory/topics/**``) or a path prefix (``memory/topics``).
        kind: Kinds of file: ``core``, ``daily``, ``topic`` (a tuple, a list, or
            one string of them separated by commas or spaces).
        corpus: ``memory`` (notes only), ``sessions`` (transcripts only) or
            ``all`` (held as None: no filter).

    Raises:
        RequestError: A value that is not valid, naming its field.
    """

    since: str | None = None
    until: str | None = None
    path: str | None = None
    kind: tuple[Kind, ...] | None = None
    corpus: str | None = None

    def __post_init__(self) -> None:
        checked = {
            "since": _when(self.since, "since"),
            "until": _when(self.until, "until"),
            "path": _path(self.path),
            "kind": _kind(self.kind),
            "corpus": corpus_of(self.corpus),
        }
        for name, value in checked.items():
            object.__setattr__(self, name, value)

    @classmethod
    def of(cls, value: Any) -> SearchFilter:
        """A filter from an instance, a dict of its fields, or None (no filter).

        Raises:
            RequestError: An unknown field or a bad value.
        """
        if value is None:
            return cls()
        if isinstance(value, cls):
            return value
        if not isinstance(value, dict):
            raise RequestError("must be an object of since, until, path, kind, corpus", "filter")
        unknown = sorted(value.keys() - set(FILTER_FIELDS))
        if unknown:
            raise RequestError("is not a known field", str(unknown[0])[:SHOWN_CHARS])
        return cls(**value)

    def __bool__(self) -> bool:
        """True when any field is set."""
        return any(getattr(self, f.name) is not None for f in fields(self))

    def days(self, now: datetime | date) -> tuple[date | None, date | None]:
        """``(since, until)`` as days, resolved against ``now``.

        Raises:
            RequestError: ``since`` or ``until`` is neither a date nor date words,
                or ``since`` is after ``until``.
        """
        found: dict[str, date | None] = {}
        for name, value in (("since", self.since), ("until", self.until)):
            try:
                found[name] = resolve_day(value, now, last=name == "until") if value else None
            except ValueError as exc:
                raise RequestError(str(exc), name) from None
        lo, hi = found["since"], found["until"]
        if lo is not None and hi is not None and lo > hi:
            raise RequestError(f"{lo} is after until ({hi})", "since")
        return lo, hi

    def describe(self) -> str:
        """The filter in words, for an empty answer's explanation."""
        parts = [
            f"{f.name}={shown(getattr(self, f.name))}"
            for f in fields(self)
            if getattr(self, f.name)
        ]
        return ", ".join(parts)


#: The fields of a filter (a request body carries them at its top level).
FILTER_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(SearchFilter))


def _when(value: Any, name: str) -> str | None:
    if value is None:
        return None
    if isinstance(value, datetime | date):
        return value.isoformat()
    if not isinstance(value, str) or not value.strip():
        raise RequestError("must be an ISO date or date words such as 'last week'", name)
    return value.strip()


def _path(value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise RequestError("must be a glob or a path prefix such as memory/topics/**", "path")
    raw = value.strip().replace("\\", "/")
    if raw.startswith(("/", "~")) or re.match(r"^[A-Za-z]:", raw):
        raise RequestError(f"must be relative to the workspace, got {raw[:60]!r}", "path")
    if ".." in raw.split("/"):
        raise RequestError("must not contain '..'", "path")
    return raw.removeprefix("./")


def _kind(value: Any) -> tuple[Kind, ...] | None:
    if value is None:
        return None
    items = value.replace(",", " ").split() if isinstance(value, str) else value
    if not isinstance(items, list | tuple) or not items:
        raise RequestError("must be core, daily or topic (or several of them)", "kind")
    bad = [k for k in items if k not in KINDS]
    if bad:
        raise RequestError(f"must be core, daily or topic, got {str(bad[0])[:40]!r}", "kind")
    return tuple(dict.fromkeys(items))


def corpus_of(value: Any) -> str | None:
    """``memory`` or ``sessions`` as given, None for ``all`` or nothing.

    Raises:
        RequestError: Any other value.
    """
    if value is None or value == "all":
        return None
    if value not in CORPORA:
        raise RequestError(f"must be memory, sessions or all, got {shown(value)}", "corpus")
    return str(value)


def resolve_day(value: str, now: datetime | date, *, last: bool) -> date:
    """The first (or ``last``) day an ISO date or date words name.

    Raises:
        ValueError: Neither an ISO date nor date words the router understands.
    """
    if _ISO_DAY.match(value):
        try:
            return datetime.fromisoformat(value).date()
        except ValueError:
            raise ValueError(f"{value[:40]!r} is not a valid date") from None
    found: DateQuery = parse_dates(value, now)
    if not found:
        raise ValueError(
            f"{value[:40]!r} is not an ISO date or date words (e.g. 2026-02-01, 'last week')"
        )
    days = list(found.days) + [d for r in found.ranges for d in r]
    return max(days) if last else min(days)


def filter_mask(snap: Snapshot, flt: SearchFilter, now: datetime | date) -> np.ndarray | None:
    """Rows of ``snap`` the filter keeps (None when the filter is empty).

    Raises:
        RequestError: A ``since``/``until`` that is not a date (see :func:`resolve_day`).
    """
    if not flt:
        return None
    keep = np.ones(len(snap), dtype=bool)
    lo, hi = flt.days(now)
    if lo is not None or hi is not None:
        keep &= snap.day >= 0  # an undated file is from no period
        if lo is not None:
            keep &= snap.day >= lo.toordinal()
        if hi is not None:
            keep &= snap.day <= hi.toordinal()
    if flt.kind is not None:
        keep &= np.fromiter((k in flt.kind for k in snap.kinds), bool, len(snap))
    if flt.corpus is not None:
        want = flt.corpus == "sessions"
        keep &= np.fromiter((k == "session" for k in snap.kinds), bool, len(snap)) == want
    if flt.path is not None:
        match = _path_matcher(flt.path)
        keep &= np.fromiter((match(p) for p in snap.paths), bool, len(snap))
    return keep


def why_empty(flt: SearchFilter, kept: int, found: int) -> str | None:
    """Why a filtered search came back empty (None when it did not).

    Args:
        flt: The filter.
        kept: How many chunks the filter kept.
        found: How many results the search returned.
    """
    if found:
        return None
    if not kept:
        return f"no memory chunk matches the filter ({flt.describe()})"
    return f"{kept} chunks match the filter ({flt.describe()}) but none matches the query"


def _path_matcher(pattern: str) -> Any:
    if _GLOB_CHARS & set(pattern):
        return lambda p: glob_match(p, pattern)
    prefix = pattern.rstrip("/")
    return lambda p: p == prefix or p.startswith(prefix + "/")
