"""Relative times in an answer ("yesterday", "last Friday", "two weeks ago") resolved against the
day its source was said: an answer read later must not mean the day it is read, nor give the
session's own date for "yesterday". Pure; no model."""

from __future__ import annotations

import datetime as dt
import re

_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August",
           "September", "October", "November", "December")
_COUNTS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
           "seven": 7, "eight": 8, "nine": 9, "ten": 10, "a couple of": 2, "a few": 3}
_COUNT = r"(?P<count>\d+|a couple of|a few|an?|one|two|three|four|five|six|seven|eight|nine|ten)"
RELATIVE = re.compile(
    r"\b(?:(?P<before>the day before yesterday)|(?P<yesterday>yesterday|last night)"
    r"|(?P<today>today|tonight|this (?:morning|afternoon|evening))|(?P<tomorrow>tomorrow)"
    r"|(?P<side>last|next) (?P<weekday>" + "|".join(_WEEKDAYS) + r")"
    r"|(?P<last>last|next|this) (?P<unit>week(?:end)?|month|year)"
    rf"|{_COUNT} (?P<ago_unit>days?|weeks?|months?|years?) ago)\b",
    re.IGNORECASE)


def day_text(day: dt.date) -> str:
    """A day as an answer says it: "7 May 2023"."""
    return f"{day.day} {_MONTHS[day.month - 1]} {day.year}"


def resolve(text: str, said_on: dt.date) -> str:
    """``text`` with each relative time replaced by what it meant on ``said_on``."""

    def replace(m: re.Match[str]) -> str:
        if m["before"]:
            return f"on {day_text(said_on - dt.timedelta(days=2))}"
        if m["yesterday"]:
            return f"on {day_text(said_on - dt.timedelta(days=1))}"
        if m["today"]:
            return f"on {day_text(said_on)}"
        if m["tomorrow"]:
            return f"on {day_text(said_on + dt.timedelta(days=1))}"
        if m["weekday"]:
            wanted = _WEEKDAYS.index(m["weekday"].lower())
            if m["side"].lower() == "last":
                day = said_on - dt.timedelta(days=(said_on.weekday() - wanted - 1) % 7 + 1)
            else:
                day = said_on + dt.timedelta(days=(wanted - said_on.weekday() - 1) % 7 + 1)
            return f"on {m['weekday'].capitalize()} {day_text(day)}"
        if m["unit"]:
            return _period(m["last"].lower(), m["unit"].lower(), said_on)
        count = _COUNTS.get(m['count'].lower()) or int(m['count'])
        unit = m["ago_unit"].lower().rstrip("s")
        if unit == "day":
            return f"on {day_text(said_on - dt.timedelta(days=count))}"
        return f"{m['count']} {m['ago_unit']} before {day_text(said_on)}"

    return RELATIVE.sub(replace, text)


def _period(which: str, unit: str, said_on: dt.date) -> str:
    step = {"last": -1, "this": 0, "next": 1}[which]
    if unit == "month":
        month = said_on.month + step
        year = said_on.year + (month - 1) // 12
        return f"in {_MONTHS[(month - 1) % 12]} {year}"
    if unit == "year":
        return f"in {said_on.year + step}"
    side = {-1: "before", 0: "of", 1: "after"}[step]
    return f"the {unit} {side} {day_text(said_on)}"
