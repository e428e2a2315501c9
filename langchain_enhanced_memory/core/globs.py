"""Workspace globs: ``*``, ``?``, ``[...]`` inside a path segment, ``**`` across segments.

Pure string matching on workspace-relative posix paths (no file system), used
by discovery's include/exclude settings.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

__all__ = ["Globs", "glob_match"]


def _split_pattern(pattern: str) -> tuple[str, ...]:
    norm = pattern.replace("\\", "/").strip()
    while norm.startswith("./"):
        norm = norm[2:]
    return tuple(part for part in norm.strip("/").split("/") if part)


def _segment_source(segment: str) -> str:
    """Regex source for one glob segment: ``*``, ``?``, ``[...]``; never matches ``/``."""
    out: list[str] = []
    i, n = 0, len(segment)
    while i < n:
        c = segment[i]
        i += 1
        if c == "*":
            if not out or out[-1] != "[^/]*":  # '**' inside a segment is just '*'
                out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            # A class runs to the next ']' (a ']' right after '[' or '[!' is literal).
            j = i + 1 if i < n and segment[i] == "!" else i
            j = j + 1 if j < n and segment[j] == "]" else j
            j = segment.find("]", j)
            if j < 0:
                out.append(re.escape(c))
                continue
            body = segment[i:j]
            i = j + 1
            negate = body.startswith("!")
            body = body[1:] if negate else body
            body = body.replace("\\", "\\\\")
            if not negate and body.startswith("^"):
                body = "\\" + body
            # The look-ahead keeps ranges like [.-0] from matching the separator.
            out.append(f"(?!/)[{'^' if negate else ''}{body}]")
        else:
            out.append(re.escape(c))
    return "".join(out)


@lru_cache(maxsize=512)
def _segment_regex(segment: str) -> re.Pattern[str]:
    return re.compile(_segment_source(segment))


@lru_cache(maxsize=256)
def _glob_regex(pattern: tuple[str, ...]) -> re.Pattern[str]:
    """Whole-path regex of a split glob, matched against ``rel_path + "/"``.

    Every segment consumes ``name/``; ``**`` consumes zero or more of them.
    """
    return re.compile(
        "".join("(?:[^/]+/)*" if seg == "**" else _segment_source(seg) + "/" for seg in pattern)
    )


def _match_prefix(pat: tuple[str, ...], parts: tuple[str, ...]) -> bool:
    """Whether something strictly below the directory ``parts`` could match ``pat``."""
    if "**" not in pat:
        return len(parts) < len(pat) and all(
            _segment_regex(p).fullmatch(s) for p, s in zip(pat, parts, strict=False)
        )
    # Segment matcher with '**' backtracking; the memo keeps it polynomial.
    memo: dict[tuple[int, int], bool] = {}

    def go(i: int, j: int) -> bool:
        key = (i, j)
        if key not in memo:
            if i == len(pat):
                result = False  # pattern used up: nothing deeper can match
            elif j == len(parts):
                result = True  # path used up with pattern left: deeper paths may match
            elif pat[i] == "**":
                result = go(i + 1, j) or go(i, j + 1)  # '**' eats zero segments, or one
            else:
                result = bool(_segment_regex(pat[i]).fullmatch(parts[j])) and go(i + 1, j + 1)
            memo[key] = result
        return memo[key]

    return go(0, 0)


def glob_match(rel_path: str, pattern: str) -> bool:
    """Match a workspace-relative posix path against a glob.

    ``*``, ``?`` and ``[...]`` (``[!...]`` negates) match inside one path segment; a
    segment that is exactly ``**`` matches zero or more whole segments
    (``memory/**/*.md`` matches ``memory/a.md`` and ``memory/x/y/a.md``). Matching
    is case-sensitive; leading ``./`` and ``/`` are ignored.

    Args:
        rel_path: Path relative to the workspace, ``/`` separators.
        pattern: The glob.

    Returns:
        Whether the whole path matches.
    """
    pat = _split_pattern(pattern)
    if not pat:
        return False
    return bool(_glob_regex(pat).fullmatch("/".join(_split_pattern(rel_path)) + "/"))


# --------------------------------------------------------------------------- discovery


class Globs:
    """Include/exclude globs, pre-split and compiled."""

    def __init__(self, include: Iterable[str], exclude: Iterable[str]) -> None:
        self.include = [p for p in (_split_pattern(g) for g in include) if p]
        self.exclude = [p for p in (_split_pattern(g) for g in exclude) if p]
        self.include_rx = [_glob_regex(p) for p in self.include]
        self.exclude_rx = [_glob_regex(p) for p in self.exclude]
        # Each side as one alternation: one regex call a file, not one a glob
        # (the change check runs it on every file of the workspace).
        self._include = _either(self.include_rx)
        self._exclude = _either(self.exclude_rx)

    def may_contain(self, dir_rel: str, dir_parts: tuple[str, ...]) -> bool:
        """Whether files under this directory could be selected at all."""
        key = dir_rel + "/"
        if any(rx.fullmatch(key) for rx in self.exclude_rx):
            return False  # an excluded directory excludes everything in it
        return any(_match_prefix(p, dir_parts) for p in self.include)

    def selects(self, rel: str) -> bool:
        """Whether a file is included and not excluded."""
        key = rel + "/"
        if self._include is None or self._include.fullmatch(key) is None:
            return False
        return self._exclude is None or self._exclude.fullmatch(key) is None


def _either(patterns: list[re.Pattern[str]]) -> re.Pattern[str] | None:
    """One regex matching what any of ``patterns`` matches (None for none)."""
    if not patterns:
        return None
    return re.compile("|".join(f"(?:{rx.pattern})" for rx in patterns))
