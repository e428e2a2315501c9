"""Scopes: named memories a search can name together, each with a weight.

A scope is an agent's own memory, its team's, a read-only policy folder: a
workspace on this host or a scope in a database. A search over several scopes
ranks each over its own statistics and merges the hits by ``weight * score``:
the calibrated score (``core.calibration``) is an absolute 0..1 measure of how
well a hit answers, so scores of different scopes compare.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from .errors import ScopeError, shown
from .results import Hit

__all__ = ["SCOPE_NAME", "ScopeRef", "merge_hits", "validate_scope"]

#: A scope's name: lower-case letters, digits, ``.``, ``_``, ``-``; at most 63 characters.
SCOPE_NAME = re.compile(r"[a-z0-9][a-z0-9._-]{0,62}")


def validate_scope(name: object) -> str:
    """``name`` when it is a valid scope name.

    Raises:
        ScopeError: Not a string of :data:`SCOPE_NAME`.
    """
    if not isinstance(name, str) or SCOPE_NAME.fullmatch(name) is None:
        raise ScopeError(
            f"scope {shown(name)} is not a valid name: use 1-63 of a-z 0-9 . _ -, "
            "starting with a letter or digit"
        )
    return name


@dataclass(frozen=True)
class ScopeRef:
    """A scope a search names, and how much its hits weigh against the others'.

    Raises:
        ScopeError: An invalid name, or a weight that is not positive.
    """

    name: str
    weight: float = 1.0

    def __post_init__(self) -> None:
        validate_scope(self.name)
        if not isinstance(self.weight, (int, float)) or not 0 < self.weight < float("inf"):
            raise ScopeError(f"scope {self.name}: weight must be a positive number")

    @classmethod
    def parse(cls, spec: str) -> ScopeRef:
        """``NAME`` or ``NAME:WEIGHT`` (``team:0.5``).

        Raises:
            ScopeError: An invalid name or weight.
        """
        name, sep, weight = spec.partition(":")
        if not sep:
            return cls(name)
        try:
            value = float(weight)
        except ValueError:
            problem = f"scope {shown(name)}: weight {shown(weight)} is not a number"
            raise ScopeError(problem) from None
        return cls(name, value)


def merge_hits(ranked: Sequence[tuple[ScopeRef, list[Hit]]], k: int) -> list[Hit]:
    """One ranking of several scopes' hits: by ``weight * score``, best ``k``, each tagged.

    Args:
        ranked: Each scope and its own best hits (best first).
        k: How many to keep.

    A hit's ``score`` is kept as its scope gave it; ties keep the scopes' order.
    """
    tagged = []
    for ref, hits in ranked:
        for hit in hits:
            hit.scope = ref.name
            tagged.append((ref.weight * hit.score, hit))
    tagged.sort(key=lambda pair: -pair[0])  # stable: ties stay in the scopes' order
    return [hit for _, hit in tagged[:k]]
