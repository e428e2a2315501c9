"""Date expressions in queries, resolved against a given ``now``.

``parse_dates("what did we decide last Monday?", now)`` finds the days and date
ranges a query names so that search can boost the daily notes
(``memory/YYYY-MM-DD.md``) of those days. Relative expressions resolve against
the ``now`` passed in, never against the machine clock.

English and Chinese, word-bounded, no false dates. Absolute dates
(``2026-02-08``, ``Feb 8``, ``8th of February 2025``, ``2/8``, ``10月2日``,
``2025年3月``), relative days (``yesterday``, ``3 days ago``, ``last Monday``,
``前天``, ``上周一``), ranges (``last week``, ``this month``, ``in February``,
``last weekend``, ``上个月``, ``去年``) and a few holidays (``Christmas``, ``New
Year's Eve``, ``国庆节``, ``元旦``, ``圣诞节``, ``平安夜``). The original skill's
date routing, flaws included, is replayed by :mod:`.original`.

Semantics where a choice had to be made:

* A date without a year (``Feb 8``, ``12月31日``, ``国庆节``) is the most recent
  such date on or before ``now`` (memories are about the past). The original
  took ``now``'s year even when that put the date in the future. ``Feb 29``
  without a year is the most recent 29 February (up to 8 years back).
* A month without a day (``in February``, ``二月份``) is that month's range,
  the most recent one that has started; the current month is clipped to
  ``now``. With a year (``February 2023``, ``2023年2月``) it is the whole month.
* Dates with an explicit year are returned as written, even in the future.
  Relative and implicit dates never lie after ``now``; expressions about the
  future (``tomorrow``, ``next week``, ``next Monday``, ``明天``, ``下周``,
  ``明年3月``) yield nothing.
* Weeks start on Monday (ISO). ``last week`` / ``上周`` is Monday..Sunday of
  the previous week; ``this week`` / ``本周`` is Monday..``now``.
* ``last Monday`` (``this past Monday``) is the most recent Monday strictly
  before today (1..7 days back, as in the original); ``on Monday`` is the most
  recent Monday on or before today; a bare ``Monday`` is not a date.
  ``Monday last week`` / ``上周一`` is the Monday of the previous ISO week.
  ``这周三`` / ``本周三`` is the Wednesday of this week, only when not after today.
* ``last weekend`` / ``上周末`` is Saturday..Sunday of the previous ISO week,
  whatever today is (on a Saturday or a Sunday that is the weekend before the
  current one). ``over the weekend`` / ``这周末`` is the current weekend's days
  up to today when today is a Saturday or Sunday, else the previous weekend
  (``这周末`` on a weekday yields nothing: it is still to come).
* ``a week ago`` / ``一周前`` is the single day ``now - 7``; ``N weeks ago``
  (N >= 2) / ``N周前`` is Monday..Sunday of the week containing ``now - 7N``;
  ``the week before last`` / ``上上周`` is the week containing ``now - 14``.
* ``last night`` / ``昨晚`` is yesterday; ``tonight``, ``this morning`` /
  ``今晚`` are today; ``the day before today`` is yesterday.
* ``this month`` / ``本月`` is the 1st..``now``, ``last month`` / ``上个月`` the
  whole previous month, ``the month before last`` / ``上上个月`` the one before;
  ``this year`` / ``今年`` is 1 January..``now``, ``last year`` / ``去年`` the
  whole previous year (``前年`` the one before). ``this weekend`` and ``the
  weekend`` are too vague and yield nothing.
* ``last February`` is the most recent February that ended before the current
  month began. ``last May`` needs a capital M (``the last may be`` is English).
* ``May`` and ``March`` are months only next to a day or a year, or after
  ``in``/``of``/``during``/``since``/``throughout``/``early``/``mid``/``late``
  (``may I ask``, ``march forward`` are not dates); in the day-first form
  (``25 May``) they need an ordinal (``25th May``), ``of`` or a year, since
  ``25 may be enough`` is English too. Bare month names are months only for
  names that are rarely anything else (January, February, July, August,
  September..December); April, June, May and March need a day, a year or a
  preposition, and abbreviations (``Jan``) need a day, a year or one of
  ``in``/``during``/``since``/``throughout``/``early``/``mid``/``late``.
* Slash dates (``2/8``, ``10/2``, ``2/8/2026``) are month/day (US order) and
  only when that makes a valid date; ``13/2`` or ``2/30`` yield nothing.
* A Chinese weekday with no ``上``/``这`` (``周三``, ``星期天``, ``礼拜五``) is the
  most recent such day on or before today, like ``on Wednesday``; ``每周一``
  (every Monday) and ``两周一次`` are not dates. ``N个月前`` is the whole
  calendar month N months back; ``劳动节`` / ``五一劳动节`` / ``五一假期`` are
  May 1st (a bare ``五一`` is a number).
* Chinese: ``上周一起`` reads as ``上周`` + ``一起`` (together), ``上周天气``
  as ``上周`` + ``天气``; counts such as ``上周三次`` are not weekdays.
  ``去年`` / ``前年`` / ``今年`` are year ranges (``今年`` up to ``now``), and as a
  prefix set the year of a month or day (``去年10月``, ``去年国庆``).
* Rolling periods end today: ``past 3 days`` / ``last two weeks`` /
  ``over the past 3 months`` / ``过去三个月`` / ``最近两周`` / ``近7天`` run from
  ``now`` minus that much to ``now`` (a month back is the same day of the
  month, clipped), as do ``the past week``, ``the past month`` and ``the past
  year``; ``past few days`` is 3 days, ``couple of`` is 2. ``recently`` /
  ``lately`` / ``最近`` / ``近来`` / ``近期`` are the last 14 days, ``这几天`` /
  ``近几天`` the last 7, ``这两天`` the last 3; ``前几天`` / ``前些天`` is 2..7
  days back and ``前阵子`` / ``前段时间`` 7..45 days back. ``earlier this week``
  (month) reads as ``this week`` (month).
  ``上半年`` / ``下半年`` are January..June / July..December of this year
  (clipped to ``now``; ``下半年`` before July is still to come), or of the
  year a prefix names (``去年下半年``). ``下个月``, ``下周`` and ``next N days``
  are the future and yield nothing.
* Every expression is reported in ``spans`` only when it resolved to at least
  one day or range. Overlapping matches keep the longest.
* Days inside a returned range stay in ``days`` (callers weigh days stronger).

Full-width digits and letters (``１０月２日``) and non-breaking spaces are
normalised with a length-preserving mapping, so spans index the original
string. The parser never raises on any query text; a ``now`` that is not a
``date``/``datetime`` is a programming error and raises ``TypeError``.

Cost: every rule is tried only where one of its anchor words occurs (a month
name, ``ago``, ``week``, ``月``, ``周`` ...), so the time grows with the number
of date words in a query, a few microseconds each, not with its length: a
100 KB query of ordinary text parses in a few milliseconds. No regex can
backtrack more than a few dozen characters.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from functools import cached_property
from typing import Any

__all__ = ["MONTHS", "MONTH_PREFIXES", "WEEKDAYS", "DateQuery", "day_of", "parse_dates"]

DateRange = tuple[date, date]


@dataclass(frozen=True)
class DateQuery:
    """The dates a query names.

    Attributes:
        days: Single days named by the query, sorted and unique.
        ranges: Inclusive ``(first, last)`` ranges named by the query, sorted
            and unique (``last week``, ``in February``, ``上个月`` ...).
        spans: ``(start, end)`` character offsets in the query of the
            expressions that produced ``days`` and ``ranges``, sorted, so that
            callers can drop them from keyword matching.
    """

    days: tuple[date, ...] = ()
    ranges: tuple[DateRange, ...] = ()
    spans: tuple[tuple[int, int], ...] = ()

    def __bool__(self) -> bool:
        """True when any day or range was found."""
        return bool(self.days or self.ranges)

    def covers(self, day: date) -> bool:
        """Whether ``day`` is one of ``days`` or lies inside one of ``ranges``.

        Args:
            day: The day to test (for instance the date of a daily note).
        """
        return day in self.days or any(lo <= day <= hi for lo, hi in self.ranges)


# ---------------------------------------------------------------------------
# Normalisation: one character in, one character out, so offsets survive.
# ---------------------------------------------------------------------------

_TRANSLATE: dict[int, int] = {c: c + 32 for c in range(ord("A"), ord("Z") + 1)}
_TRANSLATE.update({c: c - 0xFEE0 for c in range(0xFF01, 0xFF5F)})  # full-width ASCII
_TRANSLATE.update({c: c - 0xFEE0 + 32 for c in range(0xFF21, 0xFF3B)})  # Ａ-Ｚ -> a-z
for _space in (0x00A0, 0x1680, 0x202F, 0x205F, 0x3000, *range(0x2000, 0x200B)):
    _TRANSLATE[_space] = 0x20
_TRANSLATE[0x2019] = ord("'")  # right single quotation mark, as in "New Year’s"


_NEEDS_FOLD = re.compile("[" + "".join(chr(c) for c in sorted(_TRANSLATE) if c > 0x7F) + "]")


def _normalise(text: str) -> str:
    """Lower-case ASCII, fold full-width forms and odd spaces; keeps every offset."""
    low = text.lower()
    if low.isascii():
        return low
    if len(low) != len(text):  # a character whose lower case is longer (İ)
        return text.translate(_TRANSLATE)
    return low.translate(_TRANSLATE) if _NEEDS_FOLD.search(low) else low


# ---------------------------------------------------------------------------
# Calendar helpers
# ---------------------------------------------------------------------------


def _monday(day: date) -> date:
    return day - timedelta(days=day.weekday())


def _week_of(day: date) -> DateRange:
    mon = _monday(day)
    return mon, mon + timedelta(days=6)


def _month_range(year: int, month: int) -> DateRange:
    last = calendar.monthrange(year, month)[1]
    return date(year, month, 1), date(year, month, last)


def _add_months(year: int, month: int, delta: int) -> tuple[int, int]:
    index = year * 12 + (month - 1) + delta
    return index // 12, index % 12 + 1


def _recent_day(today: date, month: int, day: int) -> date | None:
    """The most recent ``month``/``day`` on or before ``today`` (8 years back at most)."""
    if not (1 <= month <= 12 and 1 <= day <= 31):
        return None
    for year in range(today.year, today.year - 9, -1):
        try:
            cand = date(year, month, day)
        except ValueError:
            continue
        if cand <= today:
            return cand
    return None


def _recent_month(today: date, month: int) -> DateRange | None:
    """The most recent ``month`` that has begun by ``today``, clipped to ``today``."""
    if not 1 <= month <= 12:
        return None
    year = today.year if month <= today.month else today.year - 1
    first, last = _month_range(year, month)
    return first, min(last, today)


def _weekend_before_week(today: date) -> DateRange:
    """Saturday..Sunday of the ISO week before ``today``'s."""
    sunday = _monday(today) - timedelta(days=1)
    return sunday - timedelta(days=1), sunday


def _latest_weekday(today: date, weekday: int, *, strict: bool) -> date:
    back = (today.weekday() - weekday) % 7
    if strict and back == 0:
        back = 7
    return today - timedelta(days=back)


# ---------------------------------------------------------------------------
# Vocabulary
# ---------------------------------------------------------------------------

MONTHS: dict[str, int] = {
    "january": 1, "jan": 1, "february": 2, "feb": 2, "march": 3, "mar": 3,
    "april": 4, "apr": 4, "may": 5, "june": 6, "jun": 6, "july": 7, "jul": 7,
    "august": 8, "aug": 8, "september": 9, "sept": 9, "sep": 9, "october": 10,
    "oct": 10, "november": 11, "nov": 11, "december": 12, "dec": 12,
}  # fmt: skip
_AMBIGUOUS_MONTHS = frozenset({"may", "march", "mar"})
_FULL_MONTHS = frozenset(
    {"january", "february", "march", "april", "may", "june", "july", "august"}
    | {"september", "october", "november", "december"}
)
# month names that are rarely anything else (not April, May, June, March)
_BARE_MONTHS = frozenset(
    {"january", "february", "july", "august", "september", "october", "november", "december"}
)
WEEKDAYS: dict[str, int] = {
    "monday": 0, "tuesday": 1, "wednesday": 2, "thursday": 3, "friday": 4,
    "saturday": 5, "sunday": 6,
}  # fmt: skip
_UNITS = ("one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
          "fifteen sixteen seventeen eighteen nineteen").split()  # fmt: skip
_NUMBER_WORDS: dict[str, int] = {"a": 1, "an": 1}
_NUMBER_WORDS.update({w: i for i, w in enumerate(_UNITS, start=1)})
_NUMBER_WORDS.update({"twenty": 20, "thirty": 30})
_NUMBER_WORDS.update({f"twenty-{w}": 20 + i for i, w in enumerate(_UNITS[:9], start=1)})

_CN_DIGITS: dict[str, int] = {
    "零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "兩": 2, "三": 3, "四": 4,
    "五": 5, "六": 6, "七": 7, "八": 8, "九": 9,
}  # fmt: skip
_CN_WEEKDAYS: dict[str, int] = {
    "一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6, "七": 6,
    "1": 0, "2": 1, "3": 2, "4": 3, "5": 4, "6": 5, "7": 6,
}  # fmt: skip


def _alternation(words: Iterable[str]) -> str:
    """A regex alternation of literal words, longest first."""
    return "|".join(sorted((re.escape(w) for w in words), key=len, reverse=True))


def _number(token: str) -> int | None:
    """Digits, an English number word or a Chinese numeral (up to 999) as an int."""
    token = token.strip()
    if not token:
        return None
    if token.isascii() and token.isdigit():
        return int(token)
    word = re.sub(r"[\s-]+", "-", token)
    if word in _NUMBER_WORDS:
        return _NUMBER_WORDS[word]
    total, current = 0, 0
    for ch in token:
        if ch in _CN_DIGITS:
            current = _CN_DIGITS[ch]
        elif ch == "十":
            total += (current or 1) * 10
            current = 0
        elif ch == "百":
            total += (current or 1) * 100
            current = 0
        else:
            return None
    return total + current


# ---------------------------------------------------------------------------
# Rules of the default mode
# ---------------------------------------------------------------------------
#
# A rule's ``pattern`` is matched at every occurrence of one of its
# ``anchors`` (a literal that starts the pattern), so the work grows with the
# number of date words in a query, not with its length. Whatever comes before
# the anchor (``last`` in "last week", ``25`` in "25 May", ``上`` in "上周一")
# is the rule's ``prefix``: a regex ending in ``\Z``, searched backwards from
# the anchor. Rules without anchors scan the whole text (numeric dates, whose
# regexes start with a digit and scan fast).

_WORD_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_")
_DIGITS = frozenset("0123456789")
_CN_NUM_CHARS = frozenset("0123456789零〇一二两兩三四五六七八九十百千万萬")
# characters that turn 上 into part of another word (早上, 晚上, 马上, 路上, 以上 ...)
_BEFORE_SHANG = frozenset("早晚马馬路线線身桌手网網楼樓天地面以之会會班")
# characters that turn 前 into part of another word (之前, 以前, 提前, 目前 ...)
_BEFORE_QIAN = frozenset("之以提目当當向空从從眼面跟事大")
_NONE: frozenset[str] = frozenset()

_R = r"(?![a-z0-9_])"  # right word boundary on the normalised text
_MON = rf"(?P<mon>{_alternation(MONTHS)})(?![a-z])"
_WD = rf"(?P<wd>{_alternation(WEEKDAYS)}){_R}"
_LAST_WEEK = rf",?\s+(?:of\s+)?last\s+week{_R}"
_NUM_EN = (
    rf"(?P<n>[0-9]{{1,6}}|twenty[- ](?:{_alternation(_UNITS[:9])})"
    rf"|{_alternation(_NUMBER_WORDS)})"
)
_YEAR = r"(?P<y>[0-9]{4})(?![0-9a-z_])"
_DAY = r"(?P<d>[0-9]{1,2})(?P<suf>st|nd|rd|th)?(?![0-9a-z_])"

_CN_M = r"(?:[0-9]{1,2}|十[一二]?|[一二三四五六七八九])"
_CN_D = r"(?:[0-9]{1,2}|[二三]?十[一二三四五六七八九]?|[一二三四五六七八九])"
_CN_N = r"(?:[0-9]{1,5}|[一二三四五六七八九两兩]?十[一二三四五六七八九]?|[一二三四五六七八九两兩])"
_CN_YEAR = r"(?:(?P<y>[0-9]{4})\s*年|(?P<ry>去年|今年|前年))\s*"
_CN_WEEK = r"(?:周|週|星期|礼拜|禮拜)"
_CN_GE = r"(?:个|個)"
_CN_DAY_MARK = r"[日号號]"
# weekday after a week word, unless it starts another word (一起, 三次, 日记, 天气 ...)
_CN_WD = (
    r"(?:(?P<x>一)(?![起样樣直些点點下切共般定同致块塊])"
    r"|(?P<x2>[二三四五六七1-7])(?![天个個次位名件篇周週年月])"
    r"|(?P<x3>[日天])(?![记記气氣子常数數天])"
    r"|(?P<end>末)"
    r"|(?![围圍边邊期年刊岁歲长長到全]))"
)
_CN_HOLIDAY = (
    r"(?:(?P<gq>国庆|國慶)[节節]?|(?P<yd>元旦)|(?P<sd>圣诞|聖誕)[节節]?|(?P<py>平安夜)"
    r"|(?P<ld>(?:五一)?(?:劳动|勞動)[节節]|五一(?=[节節假长長小])))"
)
# A weekday after 周/星期/礼拜 with no 上/这 before it (``周三``, ``礼拜天``).
_CN_WD_ONLY = (
    r"(?:(?P<x>一)(?![起样樣直些点點下切共般定同致块塊次])"
    r"|(?P<x2>[二三四五六七1-7])(?![天个個次位名件篇周週年月])"
    r"|(?P<x3>[日天])(?![记記气氣子常数數天]))"
)

MONTH_PREFIXES = (
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
)  # fmt: skip
_A_CN_WEEK = ("周", "週", "星期", "礼拜", "禮拜")
_WS = " \t\n\r\f\v"


@dataclass(frozen=True)
class _Found:
    days: tuple[date, ...] = ()
    ranges: tuple[DateRange, ...] = ()


_BLOCK = _Found()  # an expression that names no memory date (the future, an invalid date)
_Match = re.Match[str]
_Handler = Callable[[_Match, date, str, "_Match | None"], "_Found | None"]


@dataclass(frozen=True)
class _Rule:
    source: str
    handler: _Handler
    anchors: tuple[str, ...]  # the pattern is matched where these occur; () = scan everything
    bad_before: frozenset[str]  # a match is ignored when preceded by one of these
    prefix_source: str | None  # text just before the match that belongs to it
    prefix_len: int  # the longest prefix looked for
    prefix_tails: frozenset[str]  # the characters a prefix can end with
    prefix_required: bool

    # Compiled on first use: most rules' anchors never occur in a query, and
    # compiling all of them at import slowed every one-shot search (docs/benchmarks.md).
    @cached_property
    def pattern(self) -> re.Pattern[str]:
        return re.compile(self.source)

    @cached_property
    def prefix(self) -> re.Pattern[str] | None:
        return None if self.prefix_source is None else re.compile(self.prefix_source + r"\Z")


# "[2026年]10" written before 月: the month (and year) of the Chinese date rules.
_CN_MONTH_BEFORE: dict[str, Any] = {
    "prefix": rf"(?:{_CN_YEAR})?(?P<m>{_CN_M})\s*",
    "prefix_len": 16,
    "prefix_tails": _WS + "0123456789一二三四五六七八九十",
    "prefix_required": True,
}


def _rule(
    pattern: str,
    handler: _Handler,
    anchors: tuple[str, ...],
    bad_before: frozenset[str] = _WORD_CHARS,
    *,
    prefix: str | None = None,
    prefix_len: int = 0,
    prefix_tails: str = "",
    prefix_required: bool = False,
) -> _Rule:
    tails = frozenset(prefix_tails)
    return _Rule(pattern, handler, anchors, bad_before, prefix, prefix_len, tails, prefix_required)


def _day(d: date | None) -> _Found:
    return _Found(days=(d,)) if d is not None else _BLOCK


def _past_day(d: date, today: date) -> _Found:
    return _Found(days=(d,)) if d <= today else _BLOCK


def _range(r: DateRange | None) -> _Found:
    return _Found(ranges=(r,)) if r is not None else _BLOCK


def _explicit(year: int, month: int, day: int) -> _Found:
    try:
        return _Found(days=(date(year, month, day),))
    except ValueError:
        return _BLOCK


def _explicit_month(year: int, month: int) -> _Found:
    if not 1 <= month <= 12:
        return _BLOCK
    return _range(_month_range(year, month))


def _days_ago(today: date, n: int) -> _Found:
    return _day(today - timedelta(days=n))


# --- English handlers -------------------------------------------------------


def _h_block(m: _Match, today: date, raw: str, pre: _Match | None) -> _Found | None:
    return _BLOCK


def _h_iso(m: _Match, today: date, raw: str, pre: _Match | None) -> _Found | None:
    return _explicit(int(m["y"]), int(m["m"]), int(m["d"]))


def _h_slash(m: _Match, today: date, raw: str, pre: _Match | None) -> _Found | None:
    month, day = int(m["m"]), int(m["d"])
    if m["y"]:
        return _explicit(int(m["y"]), month, day)
    return _day(_recent_day(today, month, day))


def _month_day(today: date, month: int, day: int, year: str | None) -> _Found:
    if year:
        return _explicit(int(year), month, day)
    return _day(_recent_day(today, month, day))


def _h_month_day(m: _Match, today: date, raw: str, pre: _Match | None) -> _Found | None:
    return _month_day(today, MONTHS[m["mon"]], int(m["d"]), m["y"])


def _h_day_month(m: _Match, today: date, raw: str, pre: _Match | None) -> _Found | None:
    assert pre is not None
    if m["mon"] in _AMBIGUOUS_MONTHS and not (pre["suf"] or pre["of"] or m["y"]):
        return None  # "25 may be enough"
    return _month_day(today, MONTHS[m["mon"]], int(pre["d"]), m["y"])


def _h_month_year(m: _Match, today: date, raw: str, pre: _Match | None) -> _Found | None:
    return _explicit_month(int(m["y"]), MONTHS[m["mon"]])


def _h_last_month_name(m: _Match, today: date, raw: str, pre: _Match | None) -> _Found | None:
    if m["mon"] == "may" and raw[m.start("mon")] != "M":
        return None  # "the last may be ..."
    month = MONTHS[m["mon"]]
    year = today.year if month < today.month else today.year - 1
    return _explicit_month(year, month)


def _h_prep_month(m: _Match, today: date, raw: str, pre: _Match | None) -> _Found | None:
    assert pre is not None
    if pre["prep"] == "of" and m["mon"] not in _FULL_MONTHS:
        return None  # "a friend of jan"
    return _range(_recent_month(today, MONTHS[m["mon"]]))


def _h_bare_month(m: _Match, today: date, raw: str, pre: _Match | None) -> _Found | None:
    return _range(_recent_month(today, MONTHS[m["mon"]]))


def _h_relative_day(m: _Match, today: date, raw: str, pre: _Match | None) -> _Found | None:
    back = 0 if m[0] in ("today", "tonight") else 1
    return _days_ago(today, back + (1 if pre is not None else 0))  # "(the) day before ..."


def _h_part_of_day(m: _Match, today: date, raw: str, pre: _Match | None) -> _Found | None:
    assert pre is not None
    return _days_ago(today, 1 if pre["rel"] == "last" else 0)


def _h_ago(m: _Match, today: date, raw: str, pre: _Match | None) -> _Found | None:
    assert pre is not None
    n = _number(pre["n"])
    if n is None:
        return None
    if pre["unit"].startswith("day"):
        return _days_ago(today, n)
    if n == 1:
        return _days_ago(today, 7)
    return _range(_week_of(today - timedelta(days=7 * n)))


def _h_period(m: _Match, today: date, raw: str, pre: _Match | None) -> _Found | None:
    assert pre is not None
    rel, unit = " ".join(pre["rel"].split()), m["unit"]
    if m["bl"]:  # "the week before last"
        if rel != "the" or unit not in ("week", "month"):
            return None
        if unit == "week":
            return _range(_week_of(today - timedelta(days=14)))
        return _explicit_month(*_add_months(today.year, today.month, -2))
    if unit == "weekend":
        if rel == "over the" and today.weekday() >= 5:
            return _range((today - timedelta(days=today.weekday() - 5), today))
        if rel in ("last", "past", "this past", "over the"):
            return _range(_weekend_before_week(today))
        return None  # "this weekend", "the weekend": too vague
    if rel == "this":
        if unit == "week":
            return _range((_monday(today), today))
        if unit == "month":
            return _range((today.replace(day=1), today))
        return _range((date(today.year, 1, 1), today))
    if rel in ("past", "this past"):
        return _rolling(today, 1, unit)  # "the past month": a month back through today
    if rel != "last":
        return None  # "the month", "over the week": not a period
    if unit == "week":
        return _range(_week_of(today - timedelta(days=7)))
    if unit == "month":
        return _explicit_month(*_add_months(today.year, today.month, -1))
    return _range((date(today.year - 1, 1, 1), date(today.year - 1, 12, 31)))


def _h_weekday(m: _Match, today: date, raw: str, pre: _Match | None) -> _Found | None:
    weekday = WEEKDAYS[m["wd"]]
    if m["lw"]:  # "Monday last week"
        return _day(_monday(today) - timedelta(days=7 - weekday))
    if pre is None:
        return None  # a bare weekday name is not a date
    return _day(_latest_weekday(today, weekday, strict=pre["pre"] != "on"))


def _h_holiday(m: _Match, today: date, raw: str, pre: _Match | None) -> _Found | None:
    month, day = (12, 24) if m["eve"] else (12, 25)
    if m["ny"]:
        month, day = (12, 31) if m["ny"] == "eve" else (1, 1)
    return _month_day(today, month, day, m["y"])


# --- Chinese handlers -------------------------------------------------------


def _cn_year(pre: _Match | None, today: date) -> int | None:
    """The year set by a prefix such as ``2025年`` or ``去年``, if any."""
    if pre is None:
        return None
    if pre["y"]:
        return int(pre["y"])
    return {"去年": today.year - 1, "今年": today.year, "前年": today.year - 2}.get(pre["ry"] or "")


def _h_cn_month_day(m: _Match, today: date, raw: str, pre: _Match | None) -> _Found | None:
    assert pre is not None
    month, day = _number(pre["m"]), _number(m["d"])
    if month is None or day is None:
        return _BLOCK
    year = _cn_year(pre, today)
    if year is not None:
        return _explicit(year, month, day)
    return _day(_recent_day(today, month, day))


def _h_cn_month(m: _Match, today: date, raw: str, pre: _Match | None) -> _Found | None:
    assert pre is not None
    month = _number(pre["m"])
    if month is None:
        return _BLOCK
    year = _cn_year(pre, today)
    if year is not None:
        return _explicit_month(year, month)
    return _range(_recent_month(today, month))


def _h_cn_year(m: _Match, today: date, raw: str, pre: _Match | None) -> _Found | None:
    assert pre is not None
    if pre["y"]:
        year = int(pre["y"])
    elif pre["w"] == "今":
        return _range((date(today.year, 1, 1), today))
    elif pre["w"] == "前" and pre.start() and pre.string[pre.start() - 1] in _BEFORE_QIAN:
        return None  # 之前年 ..., 大前年
    else:
        year = today.year - (1 if pre["w"] == "去" else 2)
    return _range((date(year, 1, 1), date(year, 12, 31)))


def _h_cn_relative_day(m: _Match, today: date, raw: str, pre: _Match | None) -> _Found | None:
    return _days_ago(today, {"今": 0, "昨": 1}[m[0][0]])


def _h_cn_qiantian(m: _Match, today: date, raw: str, pre: _Match | None) -> _Found | None:
    return _days_ago(today, 3 if pre is not None else 2)  # 大前天, 前天


def _h_cn_ago(m: _Match, today: date, raw: str, pre: _Match | None) -> _Found | None:
    assert pre is not None
    n = _number(pre["n"])
    if n is None:
        return _BLOCK
    if pre["unit"]:
        return _days_ago(today, n)
    if n == 1:
        return _days_ago(today, 7)
    return _range(_week_of(today - timedelta(days=7 * n)))


def _cn_week_result(m: _Match, today: date, monday: date, *, current: bool) -> _Found:
    x = m["x"] or m["x2"] or m["x3"]
    if x:
        day = monday + timedelta(days=_CN_WEEKDAYS[x])
        return _past_day(day, today) if current else _day(day)
    if m["end"]:
        sat, sun = monday + timedelta(days=5), monday + timedelta(days=6)
        if not current:
            return _range((sat, sun))
        return _range((sat, min(sun, today))) if today >= sat else _BLOCK
    if current:
        return _range((monday, today))
    return _range((monday, monday + timedelta(days=6)))


def _h_cn_last_week(m: _Match, today: date, raw: str, pre: _Match | None) -> _Found | None:
    assert pre is not None
    monday = _monday(today) - timedelta(days=7 * len(pre["up"]))
    return _cn_week_result(m, today, monday, current=False)


def _h_cn_this_week(m: _Match, today: date, raw: str, pre: _Match | None) -> _Found | None:
    return _cn_week_result(m, today, _monday(today), current=True)


def _h_cn_bare_weekday(m: _Match, today: date, raw: str, pre: _Match | None) -> _Found | None:
    weekday = _CN_WEEKDAYS[m["x"] or m["x2"] or m["x3"]]
    return _day(_latest_weekday(today, weekday, strict=False))


def _h_cn_months_ago(m: _Match, today: date, raw: str, pre: _Match | None) -> _Found | None:
    n = _number(pre["n"]) if pre is not None else None
    if n is None or n > 1200:
        return _BLOCK
    return _explicit_month(*_add_months(today.year, today.month, -n))


def _h_cn_month_rel(m: _Match, today: date, raw: str, pre: _Match | None) -> _Found | None:
    assert pre is not None
    back = len(pre["up"]) if pre["up"] else 0
    year, month = _add_months(today.year, today.month, -back)
    if m["d"]:
        day = _number(m["d"])
        if day is None:
            return _BLOCK
        found = _explicit(year, month, day)
        return found if back or not found.days or found.days[0] <= today else _BLOCK
    if back:
        return _explicit_month(year, month)
    return _range((today.replace(day=1), today))


def _h_cn_holiday(m: _Match, today: date, raw: str, pre: _Match | None) -> _Found | None:
    month, day = (10, 1) if m["gq"] else (1, 1) if m["yd"] else (12, 24) if m["py"] else (12, 25)
    if m["ld"]:
        month, day = 5, 1
    year = _cn_year(pre, today)
    if year is not None:
        return _explicit(year, month, day)
    return _day(_recent_day(today, month, day))


# --- rolling periods ending today --------------------------------------------


def _rolling(today: date, n: int, unit: str) -> _Found:
    """``unit`` (day, week, month, year) times ``n`` back from ``today``, through ``today``."""
    if not 1 <= n <= 1200:
        return _BLOCK
    if unit.startswith("day"):
        return _range((today - timedelta(days=n), today))
    if unit.startswith("week"):
        return _range((today - timedelta(days=7 * n), today))
    months = n if unit.startswith("month") else 12 * n
    year, month = _add_months(today.year, today.month, -months)
    day = min(today.day, calendar.monthrange(year, month)[1])
    return _range((date(year, month, day), today))


def _back(today: date, lo: int, hi: int = 0) -> _Found:
    """Days ``lo`` back through ``hi`` back."""
    return _range((today - timedelta(days=lo), today - timedelta(days=hi)))


_FEW = {"few": 3, "couple": 2, "couple of": 2, "several": 5}


def _h_en_rolling(m: _Match, today: date, raw: str, pre: _Match | None) -> _Found | None:
    assert pre is not None
    if pre["rel"] == "next":
        return _BLOCK  # "next 3 days": the future
    word = " ".join(pre["n"].split())
    n = _FEW.get(word) or _number(word)
    return _rolling(today, n, m["unit"]) if n is not None else None


def _h_recently(m: _Match, today: date, raw: str, pre: _Match | None) -> _Found | None:
    return _back(today, 14)


def _h_cn_recent(m: _Match, today: date, raw: str, pre: _Match | None) -> _Found | None:
    word = m[0]
    if word in ("这两天", "這兩天"):
        return _back(today, 2)
    if word in ("这几天", "這幾天", "近几天", "近幾天", "这些天", "這些天"):
        return _back(today, 6)
    if word in ("前几天", "前幾天", "前些天", "前两天", "前兩天"):
        return _back(today, 7, 2)
    if word in ("前阵子", "前陣子", "前段时间", "前段時間", "前些日子"):
        return _back(today, 45, 7)
    return _back(today, 14)  # 最近, 近来, 近期, 近日


def _h_cn_rolling(m: _Match, today: date, raw: str, pre: _Match | None) -> _Found | None:
    n = _number(m["n"])
    if n is None:
        return _BLOCK
    unit = "day" if m["d"] else "week" if m["w"] else "month" if m["mo"] else "year"
    return _rolling(today, n, unit)


def _h_cn_half_year(m: _Match, today: date, raw: str, pre: _Match | None) -> _Found | None:
    year = _cn_year(pre, today) or today.year
    first, last = (date(year, 1, 1), date(year, 6, 30))
    if m["h"] == "下":
        first, last = date(year, 7, 1), date(year, 12, 31)
    if first > today:
        return _BLOCK  # still to come
    return _range((first, min(last, today)))


# Rule order breaks ties between overlapping matches of equal length.
_RULES: tuple[_Rule, ...] = (
    # --- the future: consumed, never a memory date
    _rule(
        r"(?:tomorrow|tmrw|(?:next|coming|upcoming)\s+(?:weekend|week|month|year"
        rf"|{_alternation(WEEKDAYS)}|{_alternation(_FULL_MONTHS)})){_R}",
        _h_block,
        ("tomorrow", "tmrw", "next", "coming", "upcoming"),
        prefix=r"(?:the\s+)?day\s+after\s+",
        prefix_len=24,
        prefix_tails=_WS,
    ),
    _rule(
        rf"(?:明年|后年|後年)\s*(?:{_CN_M}\s*月\s*(?:{_CN_D}\s*{_CN_DAY_MARK}|份)?|{_CN_HOLIDAY})?",
        _h_block,
        ("明年", "后年", "後年"),
        _NONE,
    ),
    # --- numeric dates
    _rule(
        r"(?P<y>[0-9]{4})(?P<sep>[-/.])(?P<m>[0-9]{1,2})(?P=sep)(?P<d>[0-9]{1,2})(?![0-9])",
        _h_iso,
        (),
        _DIGITS,
    ),
    _rule(
        r"(?P<m>[0-9]{1,2})/(?P<d>[0-9]{1,2})(?:/(?P<y>[0-9]{4}))?(?![0-9a-z_]|/[0-9a-z]|\.[0-9])",
        _h_slash,
        (),
        _WORD_CHARS | frozenset("/.-"),
    ),
    # --- English month names
    _rule(rf"{_MON}(?:\.|\s)\s*{_DAY}(?:,?\s*{_YEAR})?", _h_month_day, MONTH_PREFIXES),
    _rule(
        rf"{_MON}\.?(?:,?\s*{_YEAR})?",
        _h_day_month,
        MONTH_PREFIXES,
        prefix=r"(?P<d>[0-9]{1,2})(?P<suf>st|nd|rd|th)?\s+(?P<of>of\s+)?",
        prefix_len=16,
        prefix_tails=_WS,
        prefix_required=True,
    ),
    _rule(rf"{_MON}\.?,?\s+{_YEAR}", _h_month_year, MONTH_PREFIXES),
    _rule(
        rf"{_MON}{_R}",
        _h_last_month_name,
        MONTH_PREFIXES,
        prefix=r"(?:last|this\s+past)\s+",
        prefix_len=16,
        prefix_tails=_WS,
        prefix_required=True,
    ),
    _rule(
        rf"{_MON}\.?(?![0-9_])(?!\s*[0-9])(?!'[a-z])",
        _h_prep_month,
        MONTH_PREFIXES,
        prefix=r"(?P<prep>in|of|during|since|throughout|early|mid|late)(?:\s+|-)"
        r"(?:the\s+month\s+of\s+)?",
        prefix_len=32,
        prefix_tails=_WS + "-",
        prefix_required=True,
    ),
    _rule(
        rf"(?P<mon>{_alternation(_BARE_MONTHS)}){_R}(?!\s*[0-9])(?!'[a-z])",
        _h_bare_month,
        MONTH_PREFIXES,
    ),
    # --- English relative expressions
    _rule(
        rf"(?:yesterday|today|tonight){_R}",
        _h_relative_day,
        ("yesterday", "today", "tonight"),
        prefix=r"(?:the\s+)?day\s+before\s+",
        prefix_len=24,
        prefix_tails=_WS,
    ),
    _rule(
        rf"(?:night|morning|afternoon|evening){_R}",
        _h_part_of_day,
        ("night", "morning", "afternoon", "evening"),
        prefix=r"(?P<rel>last|this)\s+",
        prefix_len=12,
        prefix_tails=_WS,
        prefix_required=True,
    ),
    _rule(
        rf"ago{_R}",
        _h_ago,
        ("ago",),
        prefix=rf"{_NUM_EN}\s+(?P<unit>days?|weeks?)\s+",
        prefix_len=32,
        prefix_tails=_WS,
        prefix_required=True,
    ),
    _rule(
        rf"(?P<unit>weekend|week|month|year){_R}(?P<bl>\s+before\s+last{_R})?",
        _h_period,
        ("week", "month", "year"),
        prefix=r"(?P<rel>(?:this\s+)?past|last|over\s+the|this|the)\s+",
        prefix_len=16,
        prefix_tails=_WS,
        prefix_required=True,
    ),
    _rule(
        rf"{_WD}(?P<lw>{_LAST_WEEK})?",
        _h_weekday,
        tuple(WEEKDAYS),
        prefix=r"(?P<pre>last|this\s+past|on)\s+",
        prefix_len=16,
        prefix_tails=_WS,
    ),
    _rule(
        rf"(?:christmas(?:\s+(?P<eve>eve))?(?:\s+day)?|new\s+year'?s?\s+(?P<ny>eve|day)){_R}"
        rf"(?:,?\s*{_YEAR})?",
        _h_holiday,
        ("christmas", "new"),
    ),
    # --- Chinese absolute dates
    _rule(
        rf"月\s*(?P<d>{_CN_D})\s*{_CN_DAY_MARK}",
        _h_cn_month_day,
        ("月",),
        _CN_NUM_CHARS,
        **_CN_MONTH_BEFORE,
    ),
    _rule(
        r"月份?",
        _h_cn_month,
        ("月",),
        _CN_NUM_CHARS,
        **_CN_MONTH_BEFORE,
    ),
    _rule(
        r"年",
        _h_cn_year,
        ("年",),
        _DIGITS,
        prefix=r"(?P<y>[0-9]{4})\s*",
        prefix_len=12,
        prefix_tails=_WS + "0123456789",
        prefix_required=True,
    ),
    _rule(
        r"年",
        _h_cn_year,
        ("年",),
        _NONE,
        prefix=r"(?P<y>)(?P<w>[去今前])",
        prefix_len=1,
        prefix_tails="去今前",
        prefix_required=True,
    ),
    _rule(
        _CN_HOLIDAY,
        _h_cn_holiday,
        ("国庆", "國慶", "元旦", "圣诞", "聖誕", "平安夜", "劳动", "勞動", "五一"),
        _DIGITS,
        prefix=_CN_YEAR,
        prefix_len=12,
        prefix_tails=_WS + "年",
    ),
    # --- Chinese relative expressions
    _rule(r"今[天日晚早]|昨[天日晚]", _h_cn_relative_day, ("今", "昨"), _NONE),
    _rule(
        r"前天",
        _h_cn_qiantian,
        ("前天",),
        _BEFORE_QIAN - {"大"},
        prefix="大",
        prefix_len=1,
        prefix_tails="大",
    ),
    _rule(
        r"前",
        _h_cn_ago,
        ("前",),
        _CN_NUM_CHARS,
        prefix=rf"(?P<n>{_CN_N})\s*(?:(?P<unit>天|日)|{_CN_GE}?\s*{_CN_WEEK})\s*(?:之|以)?",
        prefix_len=16,
        prefix_tails=_WS + "天日周週期拜之以",
        prefix_required=True,
    ),
    _rule(
        rf"{_CN_WEEK}{_CN_WD}",
        _h_cn_last_week,
        _A_CN_WEEK,
        _BEFORE_SHANG,
        prefix=rf"(?P<up>上{{1,2}})一?{_CN_GE}?",
        prefix_len=4,
        prefix_tails="上一个個",
        prefix_required=True,
    ),
    _rule(
        rf"{_CN_WEEK}{_CN_WD_ONLY}",
        _h_cn_bare_weekday,
        _A_CN_WEEK,
        _CN_NUM_CHARS | frozenset("每下上这這本个個的隔几幾做"),
    ),
    _rule(
        r"前",
        _h_cn_months_ago,
        ("前",),
        _CN_NUM_CHARS,
        prefix=rf"(?P<n>{_CN_N})\s*{_CN_GE}\s*月\s*(?:之|以)?",
        prefix_len=14,
        prefix_tails=_WS + "月之以",
        prefix_required=True,
    ),
    _rule(
        rf"{_CN_WEEK}{_CN_WD}",
        _h_cn_this_week,
        _A_CN_WEEK,
        _NONE,
        prefix=rf"(?:这|這|本){_CN_GE}?",
        prefix_len=2,
        prefix_tails="这這本个個",
        prefix_required=True,
    ),
    _rule(
        rf"月(?:\s*(?P<d>{_CN_D})\s*{_CN_DAY_MARK})?",
        _h_cn_month_rel,
        ("月",),
        _BEFORE_SHANG,
        prefix=rf"(?:(?P<up>上{{1,2}})一?{_CN_GE}?|[这這]{_CN_GE}?|本)",
        prefix_len=4,
        prefix_tails="上一个個这這本",
        prefix_required=True,
    ),
    # --- rolling periods ending today
    _rule(
        rf"(?P<unit>days|weeks|months|years|day|week|month|year){_R}",
        _h_en_rolling,
        ("day", "week", "month", "year"),
        prefix=rf"(?P<rel>past|last|previous|next)\s+(?P<n>[0-9]{{1,4}}|few|couple(?:\s+of)?"
        rf"|several|{_alternation(_NUMBER_WORDS)}|twenty[- ](?:{_alternation(_UNITS[:9])}))\s+",
        prefix_len=40,
        prefix_tails=_WS,
        prefix_required=True,
    ),
    _rule(rf"(?:recently|lately){_R}", _h_recently, ("recently", "lately")),
    _rule(
        r"最近|近来|近來|近期|近日|这两天|這兩天|这几天|這幾天|近几天|近幾天|这些天|這些天"
        r"|前几天|前幾天|前些天|前两天|前兩天|前阵子|前陣子|前段时间|前段時間|前些日子",
        _h_cn_recent,
        ("最近", "近", "这", "這", "前"),
        _BEFORE_QIAN | frozenset("最附接靠将將"),
    ),
    _rule(
        rf"(?:过去|過去|最近|近|这|這)(?:的)?\s*(?P<n>{_CN_N})\s*"
        rf"(?:(?P<d>天|日)|(?P<w>{_CN_GE}?\s*{_CN_WEEK})|(?P<mo>{_CN_GE}\s*月)|(?P<y>年))",
        _h_cn_rolling,
        ("过去", "過去", "最近", "近", "这", "這"),
        _NONE,
    ),
    _rule(
        r"(?P<h>[上下])半年",
        _h_cn_half_year,
        ("上半年", "下半年"),
        _NONE,
        prefix=_CN_YEAR,
        prefix_len=12,
        prefix_tails=_WS + "年",
    ),
    _rule(
        rf"下(?:{_CN_GE}?月|{_CN_GE}?{_CN_WEEK}|{_CN_N}\s*(?:天|日|{_CN_GE}?\s*{_CN_WEEK}))",
        _h_block,
        ("下",),
        _NONE,
    ),
)


def _positions(text: str, anchors: tuple[str, ...]) -> list[int]:
    """Sorted offsets where one of ``anchors`` occurs (English ones only at a word start)."""
    out: list[int] = []
    for anchor in anchors:
        word = anchor.isascii()
        at = text.find(anchor)
        while at != -1:
            if not (word and at and text[at - 1] in _WORD_CHARS):
                out.append(at)
            at = text.find(anchor, at + 1)
    if len(anchors) > 1:
        out.sort()
    return out


def _anchored(
    text: str, rule: _Rule, positions: dict[tuple[str, ...], list[int]]
) -> Iterator[_Match]:
    """Matches of ``rule.pattern`` at each occurrence of its anchors (or anywhere)."""
    if not rule.anchors:
        yield from rule.pattern.finditer(text)
        return
    if rule.anchors not in positions:
        positions[rule.anchors] = _positions(text, rule.anchors)
    found = positions[rule.anchors]
    if not found:
        return  # before touching rule.pattern: it compiles on first use
    match = rule.pattern.match
    for at in found:
        m = match(text, at)
        if m is not None:
            yield m


def _with_prefix(text: str, rule: _Rule, start: int) -> tuple[int, _Match | None] | None:
    """Where the expression starts once its prefix is included; None to drop it.

    The earliest prefix that is not glued to the word before it wins
    ("早上上周" is 早上 + 上周, not 早 + 上上周).
    """
    prefix = rule.prefix
    if prefix is not None and start and text[start - 1] in rule.prefix_tails:
        lo = max(0, start - rule.prefix_len)
        while lo <= start:
            pre = prefix.search(text, lo, start)
            if pre is None or pre.end() != start:
                break
            at = pre.start()
            if not at or text[at - 1] not in rule.bad_before:
                return at, pre
            lo = at + 1
    if prefix is not None and rule.prefix_required:
        return None
    if start and text[start - 1] in rule.bad_before:
        return None
    return start, None


_Candidate = tuple[int, int, int, int, int, _Found]


def _candidates(text: str, raw: str, today: date) -> list[_Candidate]:
    """Every expression found, as ``(start - end, rule, start, seq, end, found)``.

    ``text`` is the normalised form of ``raw`` (same length, same offsets). The
    tuples sort longest first, then by rule order, then leftmost; ``seq`` keeps
    the sort from ever comparing ``found``.
    """
    out: list[_Candidate] = []
    memo: dict[tuple[int, str], _Found | None] = {}
    positions: dict[tuple[str, ...], list[int]] = {}
    for index, rule in enumerate(_RULES):
        for m in _anchored(text, rule, positions):
            where = _with_prefix(text, rule, m.start())
            if where is None:
                continue
            start, pre = where
            end = m.end()
            key = (index, raw[start:end])
            if key in memo:
                found = memo[key]
            else:
                try:
                    found = rule.handler(m, today, raw, pre)
                except (ValueError, OverflowError, KeyError, IndexError, TypeError):
                    found = _BLOCK
                memo[key] = found
            if found is not None:
                out.append((start - end, index, start, len(out), end, found))
    return out


def _parse_default(text: str, today: date) -> DateQuery:
    norm = _normalise(text)
    cands = _candidates(norm, text, today)
    if not cands:
        return DateQuery()
    cands.sort()
    taken = bytearray(len(norm))
    kept: dict[int, _Found] = {}  # the memo hands out one object per distinct result
    spans: list[tuple[int, int]] = []
    for _, _, start, _, end, found in cands:
        if taken.find(1, start, end) != -1:
            continue
        taken[start:end] = b"\x01" * (end - start)
        if found.days or found.ranges:
            kept[id(found)] = found
            spans.append((start, end))
    days = {d for found in kept.values() for d in found.days}
    ranges = {r for found in kept.values() for r in found.ranges}
    return DateQuery(tuple(sorted(days)), tuple(sorted(ranges)), tuple(sorted(spans)))


# ---------------------------------------------------------------------------
# Entry point
# ---------------------------------------------------------------------------


def day_of(now: datetime | date) -> date:
    """The calendar day of ``now`` (a timezone-aware ``datetime`` in its own timezone).

    Raises:
        TypeError: If ``now`` is not a ``date`` or ``datetime``.
    """
    if isinstance(now, datetime):
        return now.date()
    if isinstance(now, date):
        return now
    raise TypeError(f"now must be a date or datetime, not {type(now).__name__}")


def parse_dates(query: str, now: datetime | date) -> DateQuery:
    """Find the days and date ranges a query names, resolved against ``now``.

    Never raises on any query text: unknown, invalid ("Feb 30") or out-of-range
    dates are ignored. See the module docstring for the exact semantics.

    Args:
        query: The user's query, in any language.
        now: The moment the query is asked; only its calendar date is used (a
            timezone-aware ``datetime`` counts in its own timezone).

    Returns:
        The days, ranges and the query's character spans that named them.

    Raises:
        TypeError: If ``now`` is not a ``date`` or ``datetime``.
    """
    today = day_of(now)
    if not isinstance(query, str) or not query:
        return DateQuery()
    try:
        return _parse_default(query, today)
    except (ValueError, OverflowError, KeyError, IndexError, TypeError):  # pragma: no cover
        # Every rule already guards its own arithmetic; this is a last line of
        # defence so that a date parser bug can never break a search.
        return DateQuery()
