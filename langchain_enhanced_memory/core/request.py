"""One search request, validated the same way on every entry point.

The command line, ``serve``, the LangChain tools and the retriever all build a
:class:`SearchRequest` from their input, so they agree on what is valid: a
query with at least one non-blank character, ``k`` from 1 (capped at
:data:`MAX_K`), ``now`` as a ``datetime`` or an ISO date/datetime string, and
a finite ``min_score``, and an optional :class:`~.filters.SearchFilter`
(``since``, ``until``, ``path``, ``kind``). :meth:`SearchRequest.from_body`
reads a JSON body in OpenClaw's words too (``maxResults``, ``minScore``, the
filter fields at the top level). A bad value raises :class:`~.errors.RequestError` whose
``field`` names it, so each entry point can say it in its own words (``--k``
on the command line, ``"k"`` in a JSON body).
"""

from __future__ import annotations

import math
from datetime import date, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from .errors import RequestError
from .filters import SearchFilter

__all__ = ["FILTER_FIELDS", "MAX_K", "SearchRequest", "clean_text", "parse_when"]

#: Body fields that go into the request's filter.
FILTER_FIELDS = ("since", "until", "path", "kind")
#: OpenClaw's ``memory_search`` names for our fields.
ALIASES = {"maxResults": "k", "minScore": "min_score"}

#: Most results one search returns; a larger ``k`` is capped, not refused.
MAX_K = 1000


def clean_text(text: str) -> str:
    """Replace lone surrogates (undecodable argv bytes, JSON escapes) that UTF-8 cannot write."""
    return text if text.isascii() else text.encode("utf-8", "replace").decode("utf-8")


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


class SearchRequest(BaseModel):
    """What to search for.

    Attributes:
        query: The question, in natural language; dates allowed.
        k: How many results (at least 1; more than :data:`MAX_K` is capped).
        now: When the query is asked (relative dates resolve against it);
            None for the current time.
        min_score: Drop results scoring below this (the calibrated ``score``).
        filter: Which chunks may be returned (applied before ranking picks ``k``).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    query: str
    k: int = 5
    now: datetime | None = None
    min_score: float | None = None
    filter: SearchFilter = SearchFilter()

    @field_validator("query", mode="before")
    @classmethod
    def _query(cls, value: Any) -> str:
        if not isinstance(value, str):
            raise ValueError("must be a string")
        if not value.strip():
            raise ValueError("must be a non-empty string")
        return clean_text(value)

    @field_validator("k", mode="before")
    @classmethod
    def _k(cls, value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError("must be an integer")
        if value < 1:
            raise ValueError(f"must be at least 1, got {value}")
        return min(value, MAX_K)

    @field_validator("now", mode="before")
    @classmethod
    def _now(cls, value: Any) -> datetime | None:
        return parse_when(value)

    @field_validator("min_score", mode="before")
    @classmethod
    def _min_score(cls, value: Any) -> float | None:
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError("must be a number")
        if not math.isfinite(value):
            raise ValueError("must be a finite number")
        return float(value)

    @field_validator("filter", mode="before")
    @classmethod
    def _filter(cls, value: Any) -> Any:
        return SearchFilter() if value is None else value

    @classmethod
    def parse(cls, **fields: Any) -> SearchRequest:
        """Build a request, raising :class:`RequestError` (with ``field``) on a bad value."""
        try:
            request = cls(**fields)
        except ValidationError as exc:
            raise request_error(exc) from None
        request.filter.days(request.now or datetime.now())  # date words fail here, not later
        return request

    @classmethod
    def from_body(cls, body: dict[str, Any], **defaults: Any) -> SearchRequest:
        """A request from a JSON body: our names or OpenClaw's, filters at the top level.

        ``{"query", "k" | "maxResults", "now", "min_score" | "minScore", "since",
        "until", "path", "kind"}``; ``defaults`` fill what the body leaves out.
        ``corpus`` is accepted when it is ``memory`` or ``all`` (the only corpus here).

        Raises:
            RequestError: A bad or unknown field.
        """
        fields: dict[str, Any] = dict(defaults)
        flt: dict[str, Any] = {}
        for key, value in body.items():
            if key == "corpus":
                if value not in (None, "memory", "all"):
                    raise RequestError(f"must be memory or all, got {str(value)[:40]!r}", key)
            elif key in FILTER_FIELDS:
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


def request_error(exc: ValidationError) -> RequestError:
    """The first problem of a validation error as a one-line :class:`RequestError`."""
    first = exc.errors()[0]
    loc = [str(p) for p in first.get("loc", ())]
    field = ".".join(loc[1:] if loc[:1] == ["filter"] and len(loc) > 1 else loc) or "request"
    message = str(first.get("msg", "is not valid")).removeprefix("Value error, ")
    if first.get("type") == "missing":
        message = "is required"
    elif first.get("type") == "extra_forbidden":
        message = "is not a known field"
    return RequestError(message, field)
