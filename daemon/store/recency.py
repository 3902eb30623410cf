"""When a query asks about time, and the bounded bonus that follows from it (pure: no I/O).

Recency is never a multiplier on relevance: multiplicative age decay collapsed recall, 19 of 20
to 4 of 20. Most queries say nothing about time and get no bonus at all. A time-sensitive one
names either a period ("yesterday", "last week", "in May 2023", "on 7 July") or simply asks for
the newest ("latest", "recently", "current"); :func:`time_focus` reads that, and
:func:`closeness` scores how well an item's date fits it, between 0 and 1. The search adds
``closeness × a fixed bound`` to the fused score, so relevance still decides among items far
apart and time only reorders items that are close.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterator

import msgspec

DAY = 86_400.0
LATEST_HALF_LIFE = 14 * DAY  # "latest": an item two weeks older than the newest gets half


class Window(msgspec.Struct, frozen=True):
    """A period the query names: [start, end) in seconds since the epoch."""

    start: float
    end: float


class TimeFocus(msgspec.Struct, frozen=True):
    """What a query asks about in time: named periods, and/or the newest items."""

    windows: tuple[Window, ...] = ()
    latest: bool = False


_MONTH_NAMES = (
    *("january", "february", "march", "april", "may", "june"),
    *("july", "august", "september", "october", "november", "december"),
)
_FULL_MONTHS = frozenset(_MONTH_NAMES)
_MONTHS = {name: i for i, name in enumerate(_MONTH_NAMES, 1)}
_MONTHS.update({name[:3]: i for i, name in enumerate(_MONTH_NAMES, 1)})
_MONTHS["sept"] = 9
_MONTH = "(" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_WEEKDAYS = {
    name: i
    for i, name in enumerate(
        ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
    )
}
_WEEKDAY = "(" + "|".join(_WEEKDAYS) + ")"
_DAY_NUM = r"(\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"((?:19|20)\d\d)"
_UNITS = {"day": 1, "week": 7, "month": 30, "year": 365}
_UNIT = r"(days?|weeks?|months?|years?)"
_COUNT_WORDS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "few": 3, "couple of": 2,
}  # fmt: skip
_COUNT = r"(\d+|" + "|".join(sorted(_COUNT_WORDS, key=len, reverse=True)) + ")"

_LATEST = re.compile(
    r"\b(latest|most recent(?:ly)?|recent(?:ly)?|lately|newest|current(?:ly)?|up to date|"
    r"these days|right now|as of now|last time|so far)\b"
)
_ISO_DATE = re.compile(r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b")
_DAY_MONTH = re.compile(rf"\b{_DAY_NUM}(?:\s+of)?\s+{_MONTH}(?:,?\s+{_YEAR})?\b")
_MONTH_DAY = re.compile(rf"\b{_MONTH}\s+{_DAY_NUM}\b(?!:)(?:,?\s+{_YEAR})?")
_MONTH_YEAR = re.compile(rf"\b{_MONTH},?\s+(?:of\s+)?{_YEAR}\b")
# a month name alone is a period only after a word that makes it one ("the march to the sea")
_MONTH_ALONE = re.compile(
    rf"\b(?:in|during|since|until|by|early|late|mid|last|this)[\s-]+{_MONTH}\b"
)
_YEAR_ONLY = re.compile(rf"\b(?:in|during|of|since|for)\s+{_YEAR}\b")
_RELATIVE_DAY = re.compile(
    r"\b(today|tonight|this (?:morning|afternoon|evening)|earlier today|yesterday|last night|"
    r"the day before yesterday)\b"
)
_RELATIVE_PERIOD = re.compile(r"\b(this|last|past|previous)\s+(week(?:end)?|month|year)\b")
_AGO = re.compile(rf"\b{_COUNT}\s+{_UNIT}\s+ago\b")
_PAST_N = re.compile(rf"\b(?:last|past|previous)\s+{_COUNT}\s+{_UNIT}\b")
_ON_WEEKDAY = re.compile(rf"\b(?:on|last|this|since)\s+{_WEEKDAY}\b")


def time_focus(query: str, now: dt.datetime) -> TimeFocus | None:
    """The time a query asks about, or None when it is not time-sensitive.

    ``now`` is the moment the query is asked (or the ``as_of`` time), timezone-aware or local;
    relative phrases ("yesterday", "last week") are read against it, and a date without a year
    is the latest such date not after it.
    """
    text = query.lower()
    windows = list(_windows(text, now))
    latest = _LATEST.search(text) is not None
    if not windows and not latest:
        return None
    return TimeFocus(windows=tuple(windows), latest=latest)


def closeness(when: float, focus: TimeFocus, newest: float) -> float:
    """How well a date fits the focus, from 0 to 1 (1: inside a named period, or the newest).

    Outside a period the fit halves every half period (at least a day), so neighbouring days
    still count a little; for "latest" it halves every :data:`LATEST_HALF_LIFE` behind
    ``newest``, the date of the newest candidate.
    """
    best = 0.0
    for window in focus.windows:
        distance = max(window.start - when, when - window.end + 1.0, 0.0)
        half_life = max(DAY, (window.end - window.start) / 2)
        best = max(best, 0.5 ** (distance / half_life))
    if focus.latest:
        best = max(best, 0.5 ** (max(newest - when, 0.0) / LATEST_HALF_LIFE))
    return best


# -- reading periods out of the text -------------------------------------------------------------


def _windows(text: str, now: dt.datetime) -> Iterator[Window]:
    taken: list[tuple[int, int]] = []  # spans already read, so "7 July 2023" is not also "July"

    def fresh(match: re.Match[str]) -> bool:
        start, end = match.span()
        if any(start < e and s < end for s, e in taken):
            return False
        taken.append((start, end))
        return True

    today = _midnight(now)
    for m in _ISO_DATE.finditer(text):
        day = _date(int(m[1]), int(m[2]), int(m[3]))
        if day is not None and fresh(m):
            yield _day_window(day, now)
    for m in _DAY_MONTH.finditer(text):
        day = _dated(int(m[1]), _MONTHS[m[2]], m[3], today)
        if day is not None and fresh(m):
            yield _day_window(day, now)
    for m in _MONTH_DAY.finditer(text):
        day = _dated(int(m[2]), _MONTHS[m[1]], m[3], today)
        if day is not None and fresh(m):
            yield _day_window(day, now)
    for m in _MONTH_YEAR.finditer(text):
        if fresh(m):
            yield _month_window(_MONTHS[m[1]], int(m[2]), now)
    for m in _MONTH_ALONE.finditer(text):
        if m[1] in _FULL_MONTHS and fresh(m):  # "in jan", "by mar" are too often not months
            month = _MONTHS[m[1]]
            yield _month_window(month, _latest_year(month, 1, today), now)
    for m in _YEAR_ONLY.finditer(text):
        if fresh(m):
            start = dt.datetime(int(m[1]), 1, 1, tzinfo=now.tzinfo)
            yield _span(start, start.replace(year=start.year + 1))
    for m in _RELATIVE_DAY.finditer(text):
        if fresh(m):
            back = {"yesterday": 1, "last night": 1, "the day before yesterday": 2}.get(m[1], 0)
            start = today - dt.timedelta(days=back)
            yield _span(start, start + dt.timedelta(days=1))
    for m in _AGO.finditer(text):
        if fresh(m):
            unit = _UNITS[m[2].rstrip("s")]
            centre = today - dt.timedelta(days=_count(m[1]) * unit)
            half = dt.timedelta(days=unit // 2)
            yield _span(centre - half, centre + half + dt.timedelta(days=1))
    for m in _PAST_N.finditer(text):
        if fresh(m):
            days = _count(m[1]) * _UNITS[m[2].rstrip("s")]
            yield _span(today - dt.timedelta(days=days), now)
    for m in _RELATIVE_PERIOD.finditer(text):
        if fresh(m):
            yield _relative_period(m[1], m[2], today, now)
    for m in _ON_WEEKDAY.finditer(text):
        if fresh(m):
            back = (today.weekday() - _WEEKDAYS[m[1]]) % 7 or (7 if m[0].startswith("last") else 0)
            start = today - dt.timedelta(days=back)
            yield _span(start, start + dt.timedelta(days=1))


def _relative_period(which: str, unit: str, today: dt.datetime, now: dt.datetime) -> Window:
    previous = which != "this"
    if unit == "week":
        start = today - dt.timedelta(days=today.weekday() + (7 if previous else 0))
        return _span(start, start + dt.timedelta(days=7) if previous else now)
    if unit == "weekend":
        saturday = today - dt.timedelta(days=(today.weekday() - 5) % 7)
        if previous and saturday + dt.timedelta(days=2) > now:
            saturday -= dt.timedelta(days=7)
        return _span(saturday, saturday + dt.timedelta(days=2))
    if unit == "month":
        start = today.replace(day=1)
        if previous:
            start = _add_months(start, -1)
        return _span(start, _add_months(start, 1) if previous else now)
    start = today.replace(month=1, day=1)
    if previous:
        start = start.replace(year=start.year - 1)
    return _span(start, start.replace(year=start.year + 1) if previous else now)


def _dated(day: int, month: int, year: str | None, today: dt.datetime) -> dt.date | None:
    if year is not None:
        return _date(int(year), month, day)
    for y in (today.year, today.year - 1, today.year - 2, today.year - 3, today.year - 4):
        found = _date(y, month, day)
        if found is not None and found <= today.date():
            return found
    return None


def _latest_year(month: int, day: int, today: dt.datetime) -> int:
    return today.year if (month, day) <= (today.month, today.day) else today.year - 1


def _date(year: int, month: int, day: int) -> dt.date | None:
    try:
        return dt.date(year, month, day)
    except ValueError:
        return None


def _day_window(day: dt.date, now: dt.datetime) -> Window:
    start = dt.datetime(day.year, day.month, day.day, tzinfo=now.tzinfo)
    return _span(start, start + dt.timedelta(days=1))


def _month_window(month: int, year: int, now: dt.datetime) -> Window:
    start = dt.datetime(year, month, 1, tzinfo=now.tzinfo)
    return _span(start, _add_months(start, 1))


def _span(start: dt.datetime, end: dt.datetime) -> Window:
    return Window(start=start.timestamp(), end=max(end, start).timestamp())


def _midnight(now: dt.datetime) -> dt.datetime:
    return now.replace(hour=0, minute=0, second=0, microsecond=0)


def _add_months(start: dt.datetime, months: int) -> dt.datetime:
    index = start.year * 12 + start.month - 1 + months
    return start.replace(year=index // 12, month=index % 12 + 1, day=1)


def _count(word: str) -> int:
    return int(word) if word.isdigit() else _COUNT_WORDS[word]
