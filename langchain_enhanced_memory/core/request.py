"""One search request, validated the same way on every entry point.

The command line, ``serve``, the LangChain tools and the retriever all build a
:class:`SearchRequest` from their input, so they agree on what is valid: a
query with at least one non-blank character, ``k`` from 1 (capped at
:data:`MAX_K`), ``now`` as a ``datetime`` or an ISO date/datetime string, and
a finite ``min_score``, and an optional :class:`~.filters.SearchFilter`
(``since``, ``until``, ``path``, ``kind``, ``corpus``). :meth:`SearchRequest.from_body`
reads a JSON body in OpenClaw's words too (``maxResults``, ``minScore``, the
filter fields at the top level). A bad value raises :class:`~.errors.RequestError` whose
``field`` names it, so each entry point can say it in its own words (``--k``
on the command line, ``"k"`` in a JSON body). :func:`argument_errors` says
a typed tool schema's refusals (pydantic's, in the MCP server and the LangChain
tools) in the same words.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import fields as dataclass_fields
from datetime import date, datetime
from typing import Any

from .errors import SHOWN_CHARS, RequestError, one_line, shown
from .filters import FILTER_FIELDS, SearchFilter, corpus_of
from .text import clean_text

__all__ = [
    "FILTER_FIELDS",
    "MAX_K",
    "MAX_QUERY_CHARS",
    "SearchRequest",
    "argument_errors",
    "check_corpus",
    "parse_when",
]

#: OpenClaw's ``memory_search`` names for our fields.
ALIASES = {"maxResults": "k", "minScore": "min_score"}

#: Most results one search returns; a larger ``k`` is capped, not refused.
MAX_K = 1000

#: Longest query, in characters: what one command-line argument can carry on
#: Linux (128 KiB), so every entry point takes the queries the command line
#: does; a longer one (a pasted file, a runaway tool call) is refused, not cut.
MAX_QUERY_CHARS = 128 * 1024


def parse_when(value: Any) -> datetime | None:
    """``now`` as a naive ``datetime``: a ``datetime``, a ``date`` or an ISO string.

    Raises:
        ValueError: Not a date, a datetime or an ISO date/datetime string.
    """
    if value is None or isinstance(value, datetime):
        when = value
    elif isinstance(value, date):
        when = datetime(value.year, value.month, value.day)
    elif isinstance(value, str):
        try:
            when = datetime.fromisoformat(value.strip())
        except ValueError:
            raise ValueError(
                f"must be an ISO date or datetime (e.g. 2026-02-09T09:00), got {value[:40]!r}"
            ) from None
    else:
        raise ValueError("must be an ISO date or datetime string")
    return when.replace(tzinfo=None) if when is not None and when.tzinfo else when


def check_corpus(value: Any) -> None:
    """Accept OpenClaw's ``corpus``: ``memory``, ``sessions`` or ``all``.

    Raises:
        RequestError: Any other corpus.
    """
    corpus_of(value)


def _query(value: Any) -> str:
    if not isinstance(value, str):
        raise RequestError("must be a string", "query")
    if not value.strip():
        raise RequestError("must be a non-empty string", "query")
    if len(value) > MAX_QUERY_CHARS:
        raise RequestError(
            f"must be at most {MAX_QUERY_CHARS} characters, got {len(value)}", "query"
        )
    return clean_text(value)


def _k(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise RequestError("must be an integer", "k")
    if value < 1:
        raise RequestError(f"must be at least 1, got {value}", "k")
    return min(value, MAX_K)


def _now(value: Any) -> datetime | None:
    try:
        return parse_when(value)
    except ValueError as exc:
        raise RequestError(str(exc), "now") from None


def _min_score(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise RequestError("must be a number", "min_score")
    if not math.isfinite(value):
        raise RequestError("must be a finite number", "min_score")
    return float(value)


@dataclass(frozen=True)
class SearchRequest:
    """What to search for.

    Attributes:
        query: The question, in natural language; dates allowed.
        k: How many results (at least 1; more than :data:`MAX_K` is capped).
        now: When the query is asked (relative dates resolve against it);
            None for the current time.
        min_score: Drop results scoring below this (the calibrated ``score``).
        filter: Which chunks may be returned (applied before ranking picks
            ``k``): a :class:`~.filters.SearchFilter` or a dict of its fields.

    Raises:
        RequestError: A value that is not valid, naming its field; use
            :meth:`parse` to have date words in the filter checked too.
    """

    query: str
    k: int = 5
    now: datetime | None = None
    min_score: float | None = None
    filter: SearchFilter = SearchFilter()

    def __post_init__(self) -> None:
        checked = {
            "query": _query(self.query),
            "k": _k(self.k),
            "now": _now(self.now),
            "min_score": _min_score(self.min_score),
            "filter": SearchFilter.of(self.filter),
        }
        for name, value in checked.items():
            object.__setattr__(self, name, value)

    @classmethod
    def parse(cls, **fields: Any) -> SearchRequest:
        """Build a request, raising :class:`RequestError` (with ``field``) on a bad value."""
        unknown = sorted(fields.keys() - {f.name for f in dataclass_fields(cls)})
        if unknown:
            raise RequestError("is not a known field", unknown[0][:SHOWN_CHARS])
        if "query" not in fields:
            raise RequestError("is required", "query")
        request = cls(**fields)
        request.filter.days(request.now or datetime.now())  # date words fail here, not later
        return request

    @classmethod
    def from_body(cls, body: dict[str, Any], **defaults: Any) -> SearchRequest:
        """A request from a JSON body: our names or OpenClaw's, filters at the top level.

        ``{"query", "k" | "maxResults", "now", "min_score" | "minScore", "since",
        "until", "path", "kind", "corpus"}``; ``defaults`` fill what the body leaves out.

        Raises:
            RequestError: A bad or unknown field.
        """
        fields: dict[str, Any] = dict(defaults)
        flt: dict[str, Any] = {}
        for key, value in body.items():
            if key in FILTER_FIELDS:
                if value is not None:
                    flt[key] = value
            else:
                name = ALIASES.get(key, key)
                if value is not None or name not in fields:
                    fields[name] = value
        fields = {k: v for k, v in fields.items() if v is not None}
        if flt:
            fields["filter"] = flt
        return cls.parse(**fields)


# pydantic's error types in this module's words; a range adds its bound, any
# refusal but a missing or unknown field adds ", got <the value's prefix>".
_TYPE_PROBLEMS = {
    "missing": "is required",
    "extra_forbidden": "is not a known field",
    "string_type": "must be a string",
    "int_type": "must be an integer",
    "int_parsing": "must be an integer",
    "int_from_float": "must be an integer",
    "float_type": "must be a number",
    "float_parsing": "must be a number",
    "finite_number": "must be a finite number",
    "bool_type": "must be true or false",
    "bool_parsing": "must be true or false",
    "list_type": "must be a list",
    "greater_than_equal": "must be at least {ge:g}",
    "less_than_equal": "must be at most {le:g}",
    "greater_than": "must be more than {gt:g}",
    "less_than": "must be less than {lt:g}",
}


def argument_errors(
    errors: list[Any], renamed: Mapping[str, str] | None = None
) -> list[RequestError]:
    """A schema's refusals as request errors, one per argument, in this module's words.

    Args:
        errors: pydantic's ``ValidationError.errors()``: dicts of ``type``,
            ``loc`` (the argument first, as the caller spelled it), ``msg``,
            ``input`` and ``ctx``.
        renamed: Old argument names and the new ones: an unknown old name says
            which to use instead.
    """
    out: dict[str, RequestError] = {}
    for error in errors:
        loc = error.get("loc") or ("",)
        field = str(loc[0])[:SHOWN_CHARS]
        if field in out:  # one line per argument: the first problem says enough
            continue
        kind = error.get("type", "")
        if kind in _TYPE_PROBLEMS:
            problem = _TYPE_PROBLEMS[kind].format(**error.get("ctx", {}))
        else:
            problem = re.sub(r"^Input should be", "must be", str(error.get("msg", "is not valid")))
        if kind not in ("missing", "extra_forbidden") and "input" in error:
            problem += f", got {shown(error['input'])}"
        elif kind == "extra_forbidden" and renamed and field in renamed:
            problem += f"; use {renamed[field]}"
        out[field] = RequestError(one_line(problem), field)
    return list(out.values())
