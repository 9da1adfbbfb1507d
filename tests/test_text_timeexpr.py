"""Time expressions relative to a fixed now: Wednesday 18 November 2026, 15:00 UTC."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mnemonist.text.timeexpr import find_time_window

NOW = datetime(2026, 11, 18, 15, 0, tzinfo=UTC)


def d(y, m, day):
    return datetime(y, m, day, tzinfo=UTC)


@pytest.mark.parametrize(
    ("query", "start", "end"),
    [
        ("what did I do yesterday?", d(2026, 11, 17), d(2026, 11, 18)),
        ("notes from today", d(2026, 11, 18), d(2026, 11, 19)),
        ("the day before yesterday we met", d(2026, 11, 16), d(2026, 11, 17)),
        ("what did we decide last week", d(2026, 11, 9), d(2026, 11, 16)),
        ("plans for this week", d(2026, 11, 16), d(2026, 11, 23)),
        ("what happened last month", d(2026, 10, 1), d(2026, 11, 1)),
        ("goals set last year", d(2025, 1, 1), d(2026, 1, 1)),
        ("what did she say in March", d(2026, 3, 1), d(2026, 4, 1)),
        ("the trip in December", d(2025, 12, 1), d(2026, 1, 1)),  # latest December that happened
        ("the talk on 8 May 2023", d(2023, 5, 8), d(2023, 5, 9)),
        ("the talk on May 8, 2023", d(2023, 5, 8), d(2023, 5, 9)),
        ("release on 2024-02-29", d(2024, 2, 29), d(2024, 3, 1)),
        ("what did we ship in June 2025", d(2025, 6, 1), d(2025, 7, 1)),
        ("budget in 2024", d(2024, 1, 1), d(2025, 1, 1)),
        ("what did we do last summer", d(2026, 6, 1), d(2026, 9, 1)),
        ("what did I buy last Friday", d(2026, 11, 13), d(2026, 11, 14)),
        ("the call on Monday", d(2026, 11, 16), d(2026, 11, 17)),
        ("anything in the last 3 days", d(2026, 11, 15), None),
        ("last weekend's hike", d(2026, 11, 14), d(2026, 11, 16)),
    ],
)
def test_windows(query, start, end):
    w = find_time_window(query, NOW)
    assert w is not None, query
    if end is None:
        assert w.start.date() == start.date() and w.end > NOW
    else:
        assert (w.start, w.end) == (start, end)


@pytest.mark.parametrize(
    ("query", "centre"),
    [
        ("what was decided two months ago", d(2026, 9, 18)),
        ("the bug from a week ago", d(2026, 11, 11)),
        ("3 days ago we deployed", d(2026, 11, 15)),
        ("a couple of years ago", d(2024, 11, 18)),
    ],
)
def test_ago_windows_contain_their_moment(query, centre):
    w = find_time_window(query, NOW)
    assert w is not None and w.start <= centre < w.end
    assert w.end <= NOW + (NOW - w.start)  # no window reaches far into the future


@pytest.mark.parametrize(
    "query",
    [
        "since the migration",
        "what does the user prefer",
        "this may break the build",
        "we may 2 times retry",
        "how many weeks does a sprint last",
        "",
        "on 31 February 2024",
    ],
)
def test_no_time_named(query):
    assert find_time_window(query, NOW) is None


def test_strip_removes_only_the_time_words():
    w = find_time_window("what did we decide last week about the database", NOW)
    assert w is not None
    assert w.strip_from("what did we decide last week about the database") == (
        "what did we decide about the database")


@given(st.text(max_size=200))
def test_never_raises(text):
    w = find_time_window(text, NOW)
    assert w is None or w.start < w.end
