"""Date expressions in queries: every form, fixed ``now`` values, both modes."""

from __future__ import annotations

import json
import re
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from langchain_enhanced_memory.core.dates import DateQuery, parse_dates
from langchain_enhanced_memory.core.original import parse_dates_original
from tests.growth import assert_grows_linearly

WED = date(2026, 12, 2)  # a Wednesday, the demo workspace's "now"
MON = date(2026, 11, 30)
SUN = date(2026, 11, 29)
SAT = date(2026, 11, 28)
NEW_YEAR_2 = date(2026, 1, 2)  # a Friday
NEW_YEAR_1 = date(2026, 1, 1)  # a Thursday
LEAP_MAR_1 = date(2024, 3, 1)


def d(text: str) -> date:
    return date.fromisoformat(text)


def r(lo: str, hi: str) -> tuple[date, date]:
    return d(lo), d(hi)


def found(query: str, now: date, **kw: bool) -> tuple[list[date], list[tuple[date, date]]]:
    result = parse_dates(query, now, **kw)
    return list(result.days), list(result.ranges)


# (query, now, days, ranges)
ENGLISH = [
    # absolute dates
    ("2026-02-08", WED, ["2026-02-08"], []),
    ("2026/02/08", WED, ["2026-02-08"], []),
    ("2026.02.08", WED, ["2026-02-08"], []),
    ("notes of 2026-2-8?", WED, ["2026-02-08"], []),
    ("Feb 8", WED, ["2026-02-08"], []),
    ("feb. 8", WED, ["2026-02-08"], []),
    ("February 8th, 2025", WED, ["2025-02-08"], []),
    ("8 February 2025", WED, ["2025-02-08"], []),
    ("8th of February", WED, ["2026-02-08"], []),
    ("25 May 2023", WED, ["2023-05-25"], []),
    ("May 25, 2023", WED, ["2023-05-25"], []),
    ("Sept 3", WED, ["2026-09-03"], []),
    ("on Dec 25", WED, ["2025-12-25"], []),  # no year: the most recent past one
    ("December 2", WED, ["2026-12-02"], []),  # today counts as "not after now"
    ("Feb 29", WED, ["2024-02-29"], []),
    # slash dates: month/day, only when valid
    ("2/8", WED, ["2026-02-08"], []),
    ("10/2", WED, ["2026-10-02"], []),
    ("12/25", WED, ["2025-12-25"], []),
    ("2/8/2025", WED, ["2025-02-08"], []),
    ("13/2", WED, [], []),
    ("2/30", WED, [], []),
    ("src/10/2/file", WED, [], []),
    ("2/8/26", WED, [], []),
    # relative days
    ("today", WED, ["2026-12-02"], []),
    ("tonight", WED, ["2026-12-02"], []),
    ("this morning", WED, ["2026-12-02"], []),
    ("what did I do yesterday?", WED, ["2026-12-01"], []),
    ("last night", WED, ["2026-12-01"], []),
    ("the day before yesterday", WED, ["2026-11-30"], []),
    ("day before yesterday", WED, ["2026-11-30"], []),
    ("3 days ago", WED, ["2026-11-29"], []),
    ("three days ago", WED, ["2026-11-29"], []),
    ("as we discussed five days ago?", WED, ["2026-11-27"], []),
    ("a day ago", WED, ["2026-12-01"], []),
    ("one day ago", WED, ["2026-12-01"], []),
    ("ten days ago", WED, ["2026-11-22"], []),
    ("twenty-one days ago", WED, ["2026-11-11"], []),
    ("twenty one days ago", WED, ["2026-11-11"], []),
    ("thirty days ago", WED, ["2026-11-02"], []),
    ("a week ago", WED, ["2026-11-25"], []),
    ("one week ago", WED, ["2026-11-25"], []),
    ("1 week ago", WED, ["2026-11-25"], []),
    # weekdays: "last X" strictly before today, "on X" on or before today
    ("last Monday", WED, ["2026-11-30"], []),
    ("last Wednesday", WED, ["2026-11-25"], []),
    ("last Thursday", WED, ["2026-11-26"], []),
    ("this past Sunday", WED, ["2026-11-29"], []),
    ("on Wednesday", WED, ["2026-12-02"], []),
    ("on Thursday", WED, ["2026-11-26"], []),
    ("Monday last week", WED, ["2026-11-23"], []),
    ("friday of last week", WED, ["2026-11-27"], []),
    # ranges
    ("two weeks ago", WED, [], [r("2026-11-16", "2026-11-22")]),
    ("3 weeks ago", WED, [], [r("2026-11-09", "2026-11-15")]),
    ("the week before last", WED, [], [r("2026-11-16", "2026-11-22")]),
    ("last week", WED, [], [r("2026-11-23", "2026-11-29")]),
    ("last week's retro", WED, [], [r("2026-11-23", "2026-11-29")]),
    ("this week", WED, [], [r("2026-11-30", "2026-12-02")]),
    ("earlier this week", WED, [], [r("2026-11-30", "2026-12-02")]),
    ("last weekend", WED, [], [r("2026-11-28", "2026-11-29")]),
    ("this past weekend", WED, [], [r("2026-11-28", "2026-11-29")]),
    ("over the weekend", WED, [], [r("2026-11-28", "2026-11-29")]),
    ("this month", WED, [], [r("2026-12-01", "2026-12-02")]),
    ("last month", WED, [], [r("2026-11-01", "2026-11-30")]),
    ("the month before last", WED, [], [r("2026-10-01", "2026-10-31")]),
    ("last year", WED, [], [r("2025-01-01", "2025-12-31")]),
    ("this year", WED, [], [r("2026-01-01", "2026-12-02")]),
    ("in February", WED, [], [r("2026-02-01", "2026-02-28")]),
    ("in Feb 2023", WED, [], [r("2023-02-01", "2023-02-28")]),
    ("February 2023", WED, [], [r("2023-02-01", "2023-02-28")]),
    ("what happened in May 2023", WED, [], [r("2023-05-01", "2023-05-31")]),
    ("in may", WED, [], [r("2026-05-01", "2026-05-31")]),
    ("during March", WED, [], [r("2026-03-01", "2026-03-31")]),
    ("mid-October", WED, [], [r("2026-10-01", "2026-10-31")]),
    ("the end of may", WED, [], [r("2026-05-01", "2026-05-31")]),
    ("September", WED, [], [r("2026-09-01", "2026-09-30")]),
    ("in December", WED, [], [r("2026-12-01", "2026-12-02")]),  # clipped to now
    ("last February", WED, [], [r("2026-02-01", "2026-02-28")]),
    ("last May", WED, [], [r("2026-05-01", "2026-05-31")]),
    # holidays
    ("Christmas", WED, ["2025-12-25"], []),
    ("Christmas Eve", WED, ["2025-12-24"], []),
    ("New Year's Eve", WED, ["2025-12-31"], []),
    ("new year’s day", WED, ["2026-01-01"], []),
    # several expressions in one query
    (
        "notes from 2026-02-08 and last week",
        WED,
        ["2026-02-08"],
        [r("2026-11-23", "2026-11-29")],
    ),
    ("yesterday and 3 days ago", WED, ["2026-11-29", "2026-12-01"], []),
    # a day inside a range stays a day
    ("last week, on Thursday", WED, ["2026-11-26"], [r("2026-11-23", "2026-11-29")]),
]

NOT_DATES = [
    "tomorrow",
    "the day after tomorrow",
    "next week",
    "next Monday",
    "next month",
    "coming weekend",
    "may I ask what we decided",
    "you may want to check",
    "25 may be enough",
    "march forward",
    "the last may be wrong",
    "Monday",  # a bare weekday name is not a date
    "mondays are for standups",
    "ask Jan about it",
    "a friend of jan",
    "April and June joined",
    "Feb 30",
    "30 Feb 2025",  # an invalid day is not read as "Feb 2025"
    "February 29, 2025",
    "2025-02-29",
    "2026-13-01",
    "10000-01-01 is not a year",
    "version 1.2.3",
    "p99 latency 250ms",
    "4 years ago",
    "in 3 days",
    "todays",
    "Todayish",
    "yesterdays",
    "",
]

CHINESE = [
    ("今天", WED, ["2026-12-02"], []),
    ("今日", WED, ["2026-12-02"], []),
    ("昨天", WED, ["2026-12-01"], []),
    ("昨日", WED, ["2026-12-01"], []),
    ("昨晚", WED, ["2026-12-01"], []),
    ("前天", WED, ["2026-11-30"], []),
    ("大前天", WED, ["2026-11-29"], []),
    ("三天前", WED, ["2026-11-29"], []),
    ("3天前", WED, ["2026-11-29"], []),
    ("两天前", WED, ["2026-11-30"], []),
    ("十天前", WED, ["2026-11-22"], []),
    ("十五天前", WED, ["2026-11-17"], []),
    ("二十天前", WED, ["2026-11-12"], []),
    ("九十九天前", WED, ["2026-08-25"], []),
    ("一周前", WED, ["2026-11-25"], []),
    ("两周前", WED, [], [r("2026-11-16", "2026-11-22")]),
    ("上周一", WED, ["2026-11-23"], []),
    ("上周一 讨论了什么", WED, ["2026-11-23"], []),
    ("上周三", WED, ["2026-11-25"], []),
    ("上周日", WED, ["2026-11-29"], []),
    ("上周天", WED, ["2026-11-29"], []),
    ("上星期三", WED, ["2026-11-25"], []),
    ("上礼拜五", WED, ["2026-11-27"], []),
    ("上个星期二", WED, ["2026-11-24"], []),
    ("上週五", WED, ["2026-11-27"], []),
    ("这周一", WED, ["2026-11-30"], []),
    ("本周三", WED, ["2026-12-02"], []),
    ("这周四", WED, [], []),  # still to come
    ("本周", WED, [], [r("2026-11-30", "2026-12-02")]),
    ("这周", WED, [], [r("2026-11-30", "2026-12-02")]),
    ("这个星期", WED, [], [r("2026-11-30", "2026-12-02")]),
    ("上周", WED, [], [r("2026-11-23", "2026-11-29")]),
    ("上个星期", WED, [], [r("2026-11-23", "2026-11-29")]),
    ("上礼拜", WED, [], [r("2026-11-23", "2026-11-29")]),
    ("上上周", WED, [], [r("2026-11-16", "2026-11-22")]),
    ("上周末", WED, [], [r("2026-11-28", "2026-11-29")]),
    ("本月", WED, [], [r("2026-12-01", "2026-12-02")]),
    ("这个月", WED, [], [r("2026-12-01", "2026-12-02")]),
    ("上个月", WED, [], [r("2026-11-01", "2026-11-30")]),
    ("上月", WED, [], [r("2026-11-01", "2026-11-30")]),
    ("上上个月", WED, [], [r("2026-10-01", "2026-10-31")]),
    ("上个月15号", WED, ["2026-11-15"], []),
    ("本月1号", WED, ["2026-12-01"], []),
    ("10月2日", WED, ["2026-10-02"], []),
    ("10月2号", WED, ["2026-10-02"], []),
    ("十月二号", WED, ["2026-10-02"], []),
    ("十二月三十一日", WED, ["2025-12-31"], []),
    ("12月31日", WED, ["2025-12-31"], []),
    ("2025年3月5日", WED, ["2025-03-05"], []),
    ("2025年 3月 5日", WED, ["2025-03-05"], []),
    ("2025年3月", WED, [], [r("2025-03-01", "2025-03-31")]),
    ("二月份", WED, [], [r("2026-02-01", "2026-02-28")]),
    ("2月", WED, [], [r("2026-02-01", "2026-02-28")]),
    ("去年10月", WED, [], [r("2025-10-01", "2025-10-31")]),
    ("去年", WED, [], [r("2025-01-01", "2025-12-31")]),
    ("国庆节", WED, ["2026-10-01"], []),
    ("国庆", WED, ["2026-10-01"], []),
    ("去年国庆", WED, ["2025-10-01"], []),
    ("元旦", WED, ["2026-01-01"], []),
    ("圣诞节", WED, ["2025-12-25"], []),
    ("圣诞", WED, ["2025-12-25"], []),
    ("１０月２日", WED, ["2026-10-02"], []),  # full-width digits
    ("2026/10/02", WED, ["2026-10-02"], []),
    ("星河项目 上线 是 10/2 吗", WED, ["2026-10-02"], []),
    # a weekday character that starts another word is not a weekday
    ("上周一起吃饭", WED, [], [r("2026-11-23", "2026-11-29")]),
    ("上周天气很好", WED, [], [r("2026-11-23", "2026-11-29")]),
    ("上周三次发布", WED, [], [r("2026-11-23", "2026-11-29")]),
    ("上周日下午", WED, ["2026-11-29"], []),
]

# A bare weekday (周三, 星期天, 礼拜五) is the most recent such day on or before
# today; N个月前 is that calendar month; 劳动节 / 五一 is May 1st.
CHINESE_MORE = [
    ("周一开会说了什么", WED, ["2026-11-30"], []),
    ("周三", WED, ["2026-12-02"], []),  # today is a Wednesday
    ("周四", WED, ["2026-11-26"], []),  # not yet this week: last week's
    ("星期天", WED, ["2026-11-29"], []),
    ("礼拜天去哪了", WED, ["2026-11-29"], []),
    ("礼拜五", WED, ["2026-11-27"], []),
    ("週二", WED, ["2026-12-01"], []),
    ("周日", MON, ["2026-11-29"], []),  # Monday-start weeks: Sunday is yesterday
    ("周一", SUN, ["2026-11-23"], []),
    ("周日", SUN, ["2026-11-29"], []),
    ("周五", NEW_YEAR_1, ["2025-12-26"], []),  # across the year boundary
    ("周一到周五", WED, ["2026-11-27", "2026-11-30"], []),
    ("劳动节", WED, ["2026-05-01"], []),
    ("五一劳动节", WED, ["2026-05-01"], []),
    ("五一假期", WED, ["2026-05-01"], []),
    ("劳动节", date(2026, 4, 30), ["2025-05-01"], []),
    ("去年劳动节", WED, ["2025-05-01"], []),
    ("一个月前", WED, [], [r("2026-11-01", "2026-11-30")]),
    ("两个月前的体检", WED, [], [r("2026-10-01", "2026-10-31")]),
    ("一个月前", NEW_YEAR_2, [], [r("2025-12-01", "2025-12-31")]),
    ("三个月之前", date(2026, 2, 10), [], [r("2025-11-01", "2025-11-30")]),
    ("上周一", NEW_YEAR_1, ["2025-12-22"], []),
    ("上礼拜五", NEW_YEAR_2, ["2025-12-26"], []),
    ("昨天", NEW_YEAR_1, ["2025-12-31"], []),
    ("前天", date(2026, 3, 1), ["2026-02-27"], []),
    ("大前天", date(2024, 3, 1), ["2024-02-27"], []),  # leap year
    ("国庆节", date(2026, 9, 30), ["2025-10-01"], []),  # not yet this year
    ("十月二号", date(2026, 10, 1), ["2025-10-02"], []),
    ("上个月15号", date(2026, 10, 23), ["2026-09-15"], []),
]

CHINESE_NOT_DATES = [
    "每周一",
    "每个礼拜天",
    "两周一次",
    "周一起",
    "五一",
    "明天",
    "后天",
    "下周",
    "下周一",
    "下个月",
    "明年3月5日",
    "明年国庆",
    "2月30日",
    "这周围",
    "晚上周末",
    "马上月底",
    "之前天气",
    "星河项目 p99 latency",
    "三个月",
]

BOUNDARIES = [
    # year boundary
    ("上个月", NEW_YEAR_2, [], [r("2025-12-01", "2025-12-31")]),
    ("last month", NEW_YEAR_2, [], [r("2025-12-01", "2025-12-31")]),
    ("last month", date(2026, 1, 31), [], [r("2025-12-01", "2025-12-31")]),
    ("去年", NEW_YEAR_2, [], [r("2025-01-01", "2025-12-31")]),
    ("last year", NEW_YEAR_2, [], [r("2025-01-01", "2025-12-31")]),
    ("上周", NEW_YEAR_2, [], [r("2025-12-22", "2025-12-28")]),
    ("this week", NEW_YEAR_2, [], [r("2025-12-29", "2026-01-02")]),
    ("本月", NEW_YEAR_2, [], [r("2026-01-01", "2026-01-02")]),
    ("元旦", NEW_YEAR_2, ["2026-01-01"], []),
    ("yesterday", NEW_YEAR_2, ["2026-01-01"], []),
    ("三天前", NEW_YEAR_2, ["2025-12-30"], []),
    ("12月31日", NEW_YEAR_2, ["2025-12-31"], []),
    ("Dec 31", NEW_YEAR_2, ["2025-12-31"], []),
    ("in February", NEW_YEAR_2, [], [r("2025-02-01", "2025-02-28")]),
    ("2月", NEW_YEAR_2, [], [r("2025-02-01", "2025-02-28")]),
    ("12月31日", NEW_YEAR_1, ["2025-12-31"], []),
    ("yesterday", NEW_YEAR_1, ["2025-12-31"], []),
    ("this month", NEW_YEAR_1, [], [r("2026-01-01", "2026-01-01")]),
    ("上个月15号", NEW_YEAR_1, ["2025-12-15"], []),
    ("上上个月", NEW_YEAR_1, [], [r("2025-11-01", "2025-11-30")]),
    ("元旦", NEW_YEAR_1, ["2026-01-01"], []),
    # month boundary
    ("上个月31号", date(2026, 3, 10), [], []),  # February has no 31st
    ("last month", date(2026, 3, 31), [], [r("2026-02-01", "2026-02-28")]),
    ("yesterday", date(2026, 3, 1), ["2026-02-28"], []),
    # now on a Monday: weeks start on Monday
    ("this week", MON, [], [r("2026-11-30", "2026-11-30")]),
    ("本周", MON, [], [r("2026-11-30", "2026-11-30")]),
    ("last week", MON, [], [r("2026-11-23", "2026-11-29")]),
    ("last Monday", MON, ["2026-11-23"], []),
    ("on Monday", MON, ["2026-11-30"], []),
    ("本周一", MON, ["2026-11-30"], []),
    ("本周二", MON, [], []),
    ("上周一", MON, ["2026-11-23"], []),
    ("last weekend", MON, [], [r("2026-11-28", "2026-11-29")]),
    ("上周末", MON, [], [r("2026-11-28", "2026-11-29")]),
    # now on a Sunday
    ("this week", SUN, [], [r("2026-11-23", "2026-11-29")]),
    ("last week", SUN, [], [r("2026-11-16", "2026-11-22")]),
    ("last weekend", SUN, [], [r("2026-11-21", "2026-11-22")]),
    ("over the weekend", SUN, [], [r("2026-11-28", "2026-11-29")]),
    ("这周末", SUN, [], [r("2026-11-28", "2026-11-29")]),
    ("last Sunday", SUN, ["2026-11-22"], []),
    ("on Sunday", SUN, ["2026-11-29"], []),
    ("上周日", SUN, ["2026-11-22"], []),
    ("本周日", SUN, ["2026-11-29"], []),
    # now on a Saturday
    ("over the weekend", SAT, [], [r("2026-11-28", "2026-11-28")]),
    ("这周末", SAT, [], [r("2026-11-28", "2026-11-28")]),
    ("last weekend", SAT, [], [r("2026-11-21", "2026-11-22")]),
    ("这周末", WED, [], []),  # on a weekday this weekend is still to come
    # leap years
    ("Feb 29", LEAP_MAR_1, ["2024-02-29"], []),
    ("2月29日", LEAP_MAR_1, ["2024-02-29"], []),
    ("2024-02-29", LEAP_MAR_1, ["2024-02-29"], []),
    ("yesterday", LEAP_MAR_1, ["2024-02-29"], []),
    ("last month", LEAP_MAR_1, [], [r("2024-02-01", "2024-02-29")]),
    ("in February", LEAP_MAR_1, [], [r("2024-02-01", "2024-02-29")]),
    ("a week ago", date(2024, 2, 29), ["2024-02-22"], []),
    ("Feb 29", date(2025, 3, 1), ["2024-02-29"], []),
    ("Feb 29", date(2024, 2, 28), ["2020-02-29"], []),
    ("2023-02-29", LEAP_MAR_1, [], []),
    ("February 29, 2023", LEAP_MAR_1, [], []),
]

# The original skill's routing, flaws included (now = WED, 2026-12-02).
ORIGINAL = [
    ("2026-02-08", ["2026-02-08"]),
    ("Feb 8", ["2026-02-08"]),
    ("February 8th, 2025", ["2025-02-08"]),
    ("8th February", ["2026-02-08"]),
    ("Dec 25", ["2026-12-25"]),  # now's year, even in the future
    ("today", ["2026-12-02"]),
    ("yesterday", ["2026-12-01"]),
    ("day before yesterday", ["2026-11-30"]),
    ("3 days ago", ["2026-11-29"]),
    ("three days ago", ["2026-11-29"]),
    ("seven days ago", ["2026-11-25"]),
    ("ten days ago", []),  # only two..seven in words
    ("10 days ago", ["2026-11-22"]),
    ("last week", ["2026-11-25"]),  # now - 7, a single day
    ("last weekend", ["2026-11-25"]),  # read as "last week"
    ("last Monday", ["2026-11-30"]),
    ("last Wednesday", ["2026-11-25"]),
    # not word-bounded: "May 2023" also reads as "May 20" of now's year
    ("25 May 2023", ["2023-05-25", "2026-05-20"]),
    ("twenty-two days ago", ["2026-11-30"]),  # "two days ago" inside
    # what it does not know
    ("in February", []),
    ("this week", []),
    ("last month", []),
    ("2/8", []),
    ("a week ago", []),
    ("昨天", []),
    ("上周一", []),
    ("tomorrow", []),
    ("Feb 30", []),
]


@pytest.mark.parametrize(
    ("query", "now", "days", "ranges"), ENGLISH + CHINESE + CHINESE_MORE + BOUNDARIES
)
def test_expressions(
    query: str, now: date, days: list[str], ranges: list[tuple[date, date]]
) -> None:
    assert found(query, now) == ([d(x) for x in sorted(days)], sorted(ranges))


@pytest.mark.parametrize("query", NOT_DATES + CHINESE_NOT_DATES)
def test_not_dates(query: str) -> None:
    result = parse_dates(query, WED)
    assert not result
    assert result == DateQuery()


@pytest.mark.parametrize(("query", "days"), ORIGINAL)
def test_original_mode(query: str, days: list[str]) -> None:
    result = parse_dates_original(query, WED)
    assert list(result.days) == [d(x) for x in days]
    assert result.ranges == ()
    assert result.spans == ()


def test_default_mode_fixes_the_original_flaws() -> None:
    assert found("25 May 2023", WED) == ([d("2023-05-25")], [])
    assert found("last weekend", WED) == ([], [r("2026-11-28", "2026-11-29")])
    assert found("twenty-two days ago", WED) == ([d("2026-11-10")], [])


@pytest.mark.parametrize(
    ("query", "spans"),
    [
        ("what did I do yesterday?", [(14, 23)]),
        ("上周一 星河项目 讨论了什么", [(0, 3)]),
        ("in February", [(0, 11)]),
        ("the day before yesterday", [(0, 24)]),
        ("25 May 2023", [(0, 11)]),
        ("notes from 2026-02-08 and last week", [(11, 21), (26, 35)]),
        ("１０月２日 开会", [(0, 5)]),
        ("去年国庆 我们去了哪里", [(0, 4)]),
        ("as we discussed three days ago?", [(16, 30)]),
        ("Feb 30 and tomorrow", []),  # only expressions that resolved
        ("İstanbul trip yesterday", [(14, 23)]),  # a character whose lower case is longer
    ],
)
def test_spans(query: str, spans: list[tuple[int, int]]) -> None:
    assert list(parse_dates(query, WED).spans) == spans


def test_spans_cover_the_expression_text() -> None:
    query = "What did Melanie paint on 8 May 2023, as we discussed five days ago?"
    result = parse_dates(query, WED)
    assert [query[s:e] for s, e in result.spans] == ["8 May 2023", "five days ago"]


def test_now_may_be_a_datetime() -> None:
    aware = datetime(2026, 12, 2, 0, 30, tzinfo=timezone(timedelta(hours=8)))
    assert parse_dates("yesterday", aware).days == (d("2026-12-01"),)
    assert parse_dates("yesterday", datetime(2026, 12, 2, 23, 59)).days == (d("2026-12-01"),)


def test_now_must_be_a_date() -> None:
    with pytest.raises(TypeError):
        parse_dates("yesterday", "2026-12-02")  # type: ignore[arg-type]


def test_bool_and_covers() -> None:
    assert not DateQuery()
    result = parse_dates("last week, on Thursday", WED)
    assert result
    assert result.covers(d("2026-11-26"))
    assert result.covers(d("2026-11-23"))
    assert not result.covers(d("2026-11-30"))


def test_dates_are_sorted_and_unique() -> None:
    result = parse_dates("yesterday, 昨天, 2026-12-01, 3 days ago, Dec 1", WED)
    assert result.days == (d("2026-11-29"), d("2026-12-01"))


def test_long_query_time_grows_linearly() -> None:
    chunk = (
        "what did we decide about the database migration yesterday? 上周一 星河项目 讨论了什么 "
        "lorem ipsum dolor sit amet, 10月2日 and Feb 8 2025 and three days ago. "
    )
    assert parse_dates(chunk * 100, WED).days

    def make(n: int) -> str:
        return (chunk * (n // len(chunk) + 1))[:n]

    assert_grows_linearly(make, lambda q: parse_dates(q, WED), 12_500)


@pytest.mark.parametrize(
    "unit", ["1", "上", " ", "a ", "2/"], ids=["digits", "cjk", "spaces", "words", "slashes"]
)
@pytest.mark.parametrize("parse", [parse_dates, parse_dates_original], ids=["default", "original"])
def test_pathological_queries_do_not_backtrack(unit: str, parse: object) -> None:
    prefix = "feb" if unit == " " else ""
    assert_grows_linearly(
        lambda n: prefix + unit * n,
        lambda q: parse(q, WED),
        12_500 // len(unit),  # type: ignore[operator]
    )


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    query=st.text(),
    now=st.dates(min_value=date(1900, 1, 1), max_value=date(2100, 12, 31)),
    original=st.booleans(),
)
def test_never_raises(query: str, now: date, original: bool) -> None:
    result = (parse_dates_original if original else parse_dates)(query, now)
    assert all(type(x) is date for x in result.days)
    assert all(lo <= hi for lo, hi in result.ranges)
    assert all(0 <= s < e <= len(query) for s, e in result.spans)


DATE_WORDS = (
    "today yesterday before day days ago week weeks weekend month year last this past on in of "
    "may march feb february 8th 29 31 2 10/2 2/29 2026-02-29 monday sunday a two twenty-one "
    "christmas eve tomorrow next 上 上上 周 星期 一 日 天 末 月 号 前 十 两 本 这 个 去年 国庆 "
    "元旦 明年 １ ０ 礼拜 每 劳动节 五一 之 个月"
).split()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    words=st.lists(st.sampled_from(DATE_WORDS), max_size=8),
    sep=st.sampled_from([" ", "", ", "]),
    now=st.dates(min_value=date(1900, 1, 1), max_value=date(2100, 12, 31)),
)
def test_date_like_text_never_raises_and_stays_in_the_past(
    words: list[str], sep: str, now: date
) -> None:
    query = sep.join(words)
    for original in (False, True):
        result = (parse_dates_original if original else parse_dates)(query, now)
        assert all(type(x) is date for x in result.days)
    result = parse_dates(query, now)
    if not any(w.startswith("2026") for w in words):  # only explicit years may be ahead
        assert all(x <= now for x in result.days)
        assert all(hi <= now for _, hi in result.ranges)
    spans = list(result.spans)
    assert spans == sorted(spans)
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:], strict=False))


# --- the demo workspace's graded queries -----------------------------------

WORKSPACE = Path(__file__).resolve().parents[2] / "examples" / "workspace"
DATED = re.compile(r"(\d{4}-\d{2}-\d{2})")


def _demo_queries() -> list[dict[str, Any]]:
    path = WORKSPACE / "queries.jsonl"
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


@pytest.mark.skipif(not WORKSPACE.is_dir(), reason="examples/workspace not present")
def test_demo_workspace_shape() -> None:
    daily = sorted((WORKSPACE / "memory").glob("[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9].md"))
    assert len(daily) == 12
    for note in daily:
        lines = note.read_text(encoding="utf-8").splitlines()
        assert lines[0] == f"# {note.stem}"
        assert 15 <= len(lines) <= 60, note.name
        assert any(line.startswith("## ") for line in lines)
    assert (WORKSPACE / "memory" / "2026-11-20-offsite.md").is_file()
    assert (WORKSPACE / "memory" / "2026" / "2026-11-05.md").is_file()
    assert (WORKSPACE / "memory" / "topics" / "项目-星河.md").is_file()
    alpha = (WORKSPACE / "memory" / "topics" / "project-alpha.md").read_text(encoding="utf-8")
    fence = alpha.split("```")[1]  # a fenced block holding a line that starts with "#"
    assert any(line.startswith("#") for line in fence.splitlines())


@pytest.mark.skipif(not _demo_queries(), reason="examples/workspace/queries.jsonl not present")
def test_demo_queries_gold_lines_and_dates() -> None:
    queries = _demo_queries()
    assert len(queries) == 20
    assert {q["category"] for q in queries} == {
        "single-hop",
        "date-relative",
        "date-absolute",
        "chinese",
        "multi-hop",
    }
    assert len({q["id"] for q in queries}) == len(queries)
    for q in queries:
        assert set(q) == {"id", "workspace", "query", "category", "now", "gold"}
        assert q["workspace"] == "workspace" and q["gold"]
        for gold in q["gold"]:
            lines = (WORKSPACE / gold["path"]).read_text(encoding="utf-8").splitlines()
            line = lines[gold["line"] - 1]  # 1-based
            assert gold["line"] >= 1 and line.strip() and not line.startswith("#"), gold
        dq = parse_dates(q["query"], datetime.fromisoformat(q["now"]))
        dated = [date.fromisoformat(m[1]) for g in q["gold"] if (m := DATED.search(g["path"]))]
        if q["category"].startswith("date-"):
            assert dq, q["query"]
        if dq:  # a date in the query must point at the note that answers it
            assert any(dq.covers(day) for day in dated), q["query"]


# Periods people say (issue 15), each against a fixed now: rolling windows end today.
PERIODS = [
    ("past three months", WED, [], [r("2026-09-02", "2026-12-02")]),
    ("last 3 months", WED, [], [r("2026-09-02", "2026-12-02")]),
    ("over the past 2 weeks", WED, [], [r("2026-11-18", "2026-12-02")]),
    ("previous ten days", WED, [], [r("2026-11-22", "2026-12-02")]),
    ("the last 2 days", WED, [], [r("2026-11-30", "2026-12-02")]),
    ("past few days", WED, [], [r("2026-11-29", "2026-12-02")]),
    ("last couple of weeks", WED, [], [r("2026-11-18", "2026-12-02")]),
    ("in the past year", WED, [], [r("2025-12-02", "2026-12-02")]),
    ("past month", WED, [], [r("2026-11-02", "2026-12-02")]),
    ("the past week", WED, [], [r("2026-11-25", "2026-12-02")]),
    ("past month", date(2026, 3, 31), [], [r("2026-02-28", "2026-03-31")]),  # clipped day
    ("last 2 months", date(2026, 1, 15), [], [r("2025-11-15", "2026-01-15")]),
    ("recently", WED, [], [r("2026-11-18", "2026-12-02")]),
    ("what did we do lately", WED, [], [r("2026-11-18", "2026-12-02")]),
    ("earlier this week", WED, [], [r("2026-11-30", "2026-12-02")]),
    ("earlier this month", WED, [], [r("2026-12-01", "2026-12-02")]),
    ("this morning", WED, ["2026-12-02"], []),
    ("over the weekend", WED, [], [r("2026-11-28", "2026-11-29")]),
    ("最近", WED, [], [r("2026-11-18", "2026-12-02")]),
    ("最近的决定", WED, [], [r("2026-11-18", "2026-12-02")]),
    ("近期", WED, [], [r("2026-11-18", "2026-12-02")]),
    ("这几天", WED, [], [r("2026-11-26", "2026-12-02")]),
    ("这两天", WED, [], [r("2026-11-30", "2026-12-02")]),
    ("前几天", WED, [], [r("2026-11-25", "2026-11-30")]),
    ("前阵子", WED, [], [r("2026-10-18", "2026-11-25")]),
    ("过去三个月", WED, [], [r("2026-09-02", "2026-12-02")]),
    ("最近两周", WED, [], [r("2026-11-18", "2026-12-02")]),
    ("最近三天", WED, [], [r("2026-11-29", "2026-12-02")]),
    ("近7天", WED, [], [r("2026-11-25", "2026-12-02")]),
    ("过去一年", WED, [], [r("2025-12-02", "2026-12-02")]),
    ("今年", WED, [], [r("2026-01-01", "2026-12-02")]),
    ("去年", WED, [], [r("2025-01-01", "2025-12-31")]),
    ("上半年", WED, [], [r("2026-01-01", "2026-06-30")]),
    ("下半年", WED, [], [r("2026-07-01", "2026-12-02")]),
    ("上半年", date(2026, 3, 10), [], [r("2026-01-01", "2026-03-10")]),  # clipped to now
    ("去年下半年", WED, [], [r("2025-07-01", "2025-12-31")]),
    ("2025年上半年", WED, [], [r("2025-01-01", "2025-06-30")]),
]

PERIODS_NOT_DATES = [
    "next 3 days",
    "next few weeks",
    "下个月",
    "下个月的计划",
    "下周",
    "下三天",
    "附近",
    "接近",
    "之前几天",
    "past due",
    "the last day of school is a holiday",  # "last day" is no period
]


@pytest.mark.parametrize(("query", "now", "days", "ranges"), PERIODS)
def test_periods(query: str, now: date, days: list[str], ranges: list[tuple[date, date]]) -> None:
    assert found(query, now) == ([d(x) for x in sorted(days)], sorted(ranges))


@pytest.mark.parametrize("query", PERIODS_NOT_DATES)
def test_periods_not_dates(query: str) -> None:
    assert not parse_dates(query, WED)


def test_second_half_of_this_year_is_future_before_july() -> None:
    assert not parse_dates("下半年", date(2026, 3, 10))


def test_a_rule_compiles_only_when_its_anchor_occurs() -> None:
    # Compiling every rule cost each one-shot search about 15 ms before its first answer.
    from dataclasses import replace

    from langchain_enhanced_memory.core import dates

    rule = next(r for r in dates._RULES if r.anchors == ("yesterday", "today", "tonight"))
    fresh = replace(rule)
    assert list(dates._anchored("what did we decide about the budget", fresh, {})) == []
    assert "pattern" not in fresh.__dict__
    assert [m.group() for m in dates._anchored("notes from today", fresh, {})] == ["today"]
    assert "pattern" in fresh.__dict__
