"""Time expressions in a query, recognised without an LLM, relative to a given `now`.

`find_time_window("what did we decide last week?", now)` gives the window that "last week"
names and the character spans that expressed it, so recall can prefer memories whose event time
falls inside and drop those words from the keyword leg. Only expressions that name a time do:
"since the migration" names none. Windows are half-open [start, end) in UTC.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

MONTHS = {name.lower(): i for i, name in enumerate(calendar.month_name) if name}
MONTHS.update({name.lower(): i for i, name in enumerate(calendar.month_abbr) if name})
MONTHS["sept"] = 9
WEEKDAYS = {name.lower(): i for i, name in enumerate(calendar.day_name)}
NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
    "couple": 2, "a couple": 2, "a couple of": 2, "few": 3, "a few": 3, "several": 3,
}  # fmt: skip
SEASONS = {"spring": (3, 6), "summer": (6, 9), "autumn": (9, 12), "fall": (9, 12),
           "winter": (12, 3)}

_MONTH_RE = "|".join(sorted(MONTHS, key=len, reverse=True))
_DAY_RE = "|".join(WEEKDAYS)
_NUM_RE = r"\d{1,3}|a couple of|a couple|a few|couple|few|several|" + "|".join(
    k for k in NUMBERS if " " not in k
)
_UNIT_RE = r"days?|weeks?|months?|years?|hours?"


@dataclass(frozen=True)
class TimeWindow:
    start: datetime
    end: datetime
    spans: tuple[tuple[int, int], ...]
    expression: str

    def strip_from(self, text: str) -> str:
        """`text` without the words that expressed the time (for the keyword leg)."""
        out, last = [], 0
        for a, b in sorted(self.spans):
            out.append(text[last:a])
            last = b
        out.append(text[last:])
        return re.sub(r"\s+", " ", "".join(out)).strip()


def _day(d: date) -> datetime:
    return datetime(d.year, d.month, d.day, tzinfo=UTC)


def _month_window(year: int, month: int) -> tuple[datetime, datetime]:
    start = datetime(year, month, 1, tzinfo=UTC)
    end = datetime(year + (month == 12), month % 12 + 1, 1, tzinfo=UTC)
    return start, end


def _add_months(d: date, months: int) -> date:
    y, m = divmod(d.month - 1 + months, 12)
    year, month = d.year + y, m + 1
    return date(year, month, min(d.day, calendar.monthrange(year, month)[1]))


def _num(word: str) -> int:
    word = word.lower()
    return int(word) if word.isdigit() else NUMBERS[word]


def _ago(n: int, unit: str, today: date) -> tuple[datetime, datetime]:
    """A window centred on the moment n units ago, as wide as one unit (a day at least)."""
    unit = unit.rstrip("s")
    if unit == "hour":
        return _day(today - timedelta(days=1)), _day(today + timedelta(days=1))
    if unit == "day":
        d = today - timedelta(days=n)
        return _day(d - timedelta(days=1 if n > 2 else 0)), _day(d + timedelta(days=1))
    if unit == "week":
        centre = today - timedelta(weeks=n)
        return _day(centre - timedelta(days=4)), _day(centre + timedelta(days=4))
    if unit == "month":
        centre = _add_months(today, -n)
        return _day(centre - timedelta(days=16)), _day(centre + timedelta(days=16))
    centre = date(today.year - n, today.month, min(today.day, 28))
    return _day(centre - timedelta(days=183)), _day(centre + timedelta(days=183))


def _last_n(n: int, unit: str, now: datetime) -> tuple[datetime, datetime]:
    unit = unit.rstrip("s")
    days = {"hour": 1, "day": n, "week": 7 * n, "month": 30 * n, "year": 365 * n}[unit]
    return now - timedelta(days=days), now + timedelta(seconds=1)


def _week_start(d: date) -> date:
    return d - timedelta(days=d.weekday())


def _relative_period(which: str, unit: str, today: date) -> tuple[datetime, datetime]:
    step = {"last": -1, "past": -1, "previous": -1, "this": 0, "next": 1, "current": 0}[which]
    if unit == "week":
        start = _week_start(today) + timedelta(weeks=step)
        return _day(start), _day(start + timedelta(days=7))
    if unit == "weekend":
        sat = _week_start(today) + timedelta(days=5) + timedelta(weeks=step)
        return _day(sat), _day(sat + timedelta(days=2))
    if unit == "month":
        first = _add_months(today.replace(day=1), step)
        return _month_window(first.year, first.month)
    year = today.year + step
    return datetime(year, 1, 1, tzinfo=UTC), datetime(year + 1, 1, 1, tzinfo=UTC)


def _named_month(month: int, year: int | None, which: str | None, today: date):
    if year is None:
        year = today.year
        if which in ("last", "previous"):
            year -= 1 if month >= today.month else 0
        elif which == "next":
            year += 1 if month <= today.month else 0
        elif month > today.month:  # "in March" means the latest March that has happened
            year -= 1
    return _month_window(year, month)


def _season(name: str, which: str | None, today: date) -> tuple[datetime, datetime]:
    """"last summer": the latest one that has ended; "this/the summer": the latest begun."""
    first = SEASONS[name][0]
    for year in (today.year, today.year - 1, today.year - 2):
        start = date(year, first, 1)
        end = _add_months(start, 3)
        if which in ("last", "previous") and end <= today:
            return _day(start), _day(end)
        if which not in ("last", "previous") and start <= today:
            return _day(start), _day(end)
    raise ValueError(name)


def _weekday(name: str, which: str | None, today: date) -> tuple[datetime, datetime]:
    delta = (today.weekday() - WEEKDAYS[name]) % 7
    if delta == 0 or which == "last":
        delta = delta or 7
    if which == "next":
        d = today + timedelta(days=(WEEKDAYS[name] - today.weekday()) % 7 or 7)
    else:
        d = today - timedelta(days=delta)
    return _day(d), _day(d + timedelta(days=1))


_PATTERNS: list[tuple[str, str]] = [  # one readable line per pattern
    ("iso", r"\b(\d{4})-(\d{2})-(\d{2})\b"),
    ("day_month_year", rf"\b(?:on\s+)?(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({_MONTH_RE})\.?,?\s+(\d{{4}})\b"),
    ("month_day_year", rf"\b(?:on\s+)?({_MONTH_RE})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b"),
    ("day_month", rf"\b(?:on\s+)?(?:the\s+)?(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({_MONTH_RE})\b"),
    ("month_day", rf"\b(?:on\s+)?({_MONTH_RE})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?\b"),
    ("month_year", rf"\b(?:in\s+|during\s+)?({_MONTH_RE})\.?,?\s+(?:of\s+)?(\d{{4}})\b"),
    ("rel_month", rf"\b(last|this|next|previous)\s+({_MONTH_RE})\b"),
    ("in_month", rf"\b(?:in|during)\s+(?:the\s+month\s+of\s+)?({_MONTH_RE})\b"),
    ("season", r"\b(?:(last|this|previous)\s+|(?:in|during)\s+the\s+)(spring|summer|autumn|fall|winter)\b"),
    ("year", r"\b(?:in|during|of)\s+((?:19|20)\d{2})\b"),
    ("day_before_yesterday", r"\bthe\s+day\s+before\s+yesterday\b"),
    ("yesterday", r"\byesterday\b|\blast\s+night\b"),
    ("today", r"\btoday\b|\btonight\b|\bthis\s+(?:morning|afternoon|evening)\b"),
    ("ago", rf"\b({_NUM_RE})\s+({_UNIT_RE})\s+ago\b"),
    ("last_n", rf"\b(?:in\s+|over\s+|during\s+|within\s+)?the\s+(?:last|past)\s+({_NUM_RE})\s+({_UNIT_RE})\b"),
    ("last_n", rf"\b(?:the\s+)?(?:last|past)\s+({_NUM_RE})\s+({_UNIT_RE})\b"),
    ("earlier_this", r"\bearlier\s+this\s+(week|month|year)\b"),
    ("rel_period", r"\b(last|this|next|previous|past|current)\s+(week|weekend|month|year)\b"),
    ("weekday", rf"\b(?:(last|this|next)\s+|on\s+)({_DAY_RE})\b"),
]
_MODAL_MAY = {"rel_month", "month_day", "in_month"}
_COMPILED = [(kind, re.compile(rx, re.IGNORECASE)) for kind, rx in _PATTERNS]


def _window(kind: str, g: tuple[str | None, ...], now: datetime) -> tuple[datetime, datetime]:
    today = now.date()
    if kind == "iso":
        d = date(int(g[0] or 0), int(g[1] or 0), int(g[2] or 0))
        return _day(d), _day(d + timedelta(days=1))
    if kind in ("day_month_year", "month_day_year"):
        day, month = (g[0], g[1]) if kind == "day_month_year" else (g[1], g[0])
        d = date(int(g[2] or 0), MONTHS[(month or "").lower()], int(day or 0))
        return _day(d), _day(d + timedelta(days=1))
    if kind in ("day_month", "month_day"):
        day, month = (g[0], g[1]) if kind == "day_month" else (g[1], g[0])
        d = date(today.year, MONTHS[(month or "").lower()], int(day or 0))
        if d > today:
            d = d.replace(year=today.year - 1)
        return _day(d), _day(d + timedelta(days=1))
    if kind == "month_year":
        return _month_window(int(g[1] or 0), MONTHS[(g[0] or "").lower()])
    if kind == "rel_month":
        return _named_month(MONTHS[(g[1] or "").lower()], None, (g[0] or "").lower(), today)
    if kind == "in_month":
        return _named_month(MONTHS[(g[0] or "").lower()], None, None, today)
    if kind == "season":
        return _season((g[1] or "").lower(), (g[0] or "").lower() or None, today)
    if kind == "year":
        year = int(g[0] or 0)
        return datetime(year, 1, 1, tzinfo=UTC), datetime(year + 1, 1, 1, tzinfo=UTC)
    if kind == "day_before_yesterday":
        d = today - timedelta(days=2)
        return _day(d), _day(d + timedelta(days=1))
    if kind == "yesterday":
        return _day(today - timedelta(days=1)), _day(today)
    if kind == "today":
        return _day(today), _day(today + timedelta(days=1))
    if kind == "ago":
        return _ago(_num(g[0] or "1"), (g[1] or "").lower(), today)
    if kind == "last_n":
        return _last_n(_num(g[0] or "1"), (g[1] or "").lower(), now)
    if kind == "earlier_this":
        start, _ = _relative_period("this", (g[0] or "").lower(), today)
        return start, now + timedelta(seconds=1)
    if kind == "rel_period":
        return _relative_period((g[0] or "").lower(), (g[1] or "").lower(), today)
    if kind == "weekday":
        return _weekday((g[1] or "").lower(), (g[0] or "").lower() or None, today)
    raise ValueError(kind)


def find_time_window(text: str, now: datetime | None = None) -> TimeWindow | None:
    """The first (leftmost, longest) time expression in `text`, or None."""
    now = (now or datetime.now(UTC)).astimezone(UTC)
    best: tuple[int, int, str, re.Match[str]] | None = None
    for kind, rx in _COMPILED:
        for match in rx.finditer(text):
            a, b = match.span()
            if best is None or a < best[0] or (a == best[0] and b - a > best[1] - best[0]):
                best = (a, b, kind, match)
            break
    if best is None:
        return None
    a, b, kind, match = best
    if kind in _MODAL_MAY and re.search(r"\bmay\b", match.group(0)):
        return None  # lowercase "may" next to a number or "this" is the verb, not the month
    try:
        start, end = _window(kind, match.groups(), now)
    except (ValueError, KeyError, OverflowError):
        return None  # "on 31 February" or "99999999 days ago": names no real day
    return TimeWindow(start, end, ((a, b),), match.group(0))
