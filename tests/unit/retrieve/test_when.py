"""Time in questions: phrases read and placed on the calendar, row by row."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import pytest

from hippocampus.model import TimeWindow
from hippocampus.retrieve.when import place, read_times, time_lifts

# A Friday. The memories' own dates, where a row has them, span 2023.
NOW = datetime(2026, 11, 27, 15, 30, tzinfo=UTC)
DATES_2023 = [datetime(2023, 1, 9, tzinfo=UTC), datetime(2023, 10, 20, tzinfo=UTC)]


def d(year: int, month: int, day: int, hour: int = 0, minute: int = 0) -> datetime:
    return datetime(year, month, day, hour, minute, tzinfo=UTC)


@pytest.mark.parametrize(
    ("question", "dates", "phrase", "start", "end"),
    [
        # Months without a year: the latest within the memories' dates...
        ("what broke in March", DATES_2023, "in March", d(2023, 3, 1), d(2023, 4, 1)),
        ("what did Tom fix in April", DATES_2023, "in April", d(2023, 4, 1), d(2023, 5, 1)),
        ("what shipped in may", DATES_2023, "in may", d(2023, 5, 1), d(2023, 6, 1)),
        # ...or nearest to them (December 2022 is nearer to January 2023 than
        # December 2023 is to October 2023)...
        ("the outage in December", DATES_2023, "in December", d(2022, 12, 1), d(2023, 1, 1)),
        # ...and with no dates to go by, the latest begun by now.
        ("what broke in March", [], "in March", d(2026, 3, 1), d(2026, 4, 1)),
        ("plans for December", [], "December", d(2025, 12, 1), d(2026, 1, 1)),
        # Days of a month, with or without a year.
        ("what happened on 12 May", DATES_2023, "on 12 May", d(2023, 5, 12), d(2023, 5, 13)),
        ("the March 3rd deploy", DATES_2023, "March 3rd", d(2023, 3, 3), d(2023, 3, 4)),
        ("the third of March", DATES_2023, "March", d(2023, 3, 1), d(2023, 4, 1)),
        (
            "movies for April 6-7",
            DATES_2023,
            "April 6-7",
            d(2023, 4, 6),
            d(2023, 4, 8),
        ),
        (
            "starting on April 5, 2024, and",
            DATES_2023,
            "on April 5, 2024",
            d(2024, 4, 5),
            d(2024, 4, 6),
        ),
        ("the March 2024 outage", [], "March 2024", d(2024, 3, 1), d(2024, 4, 1)),
        ("what changed on 2024-02-29", [], "on 2024-02-29", d(2024, 2, 29), d(2024, 3, 1)),
        # Years.
        ("incidents in 2024", DATES_2023, "in 2024", d(2024, 1, 1), d(2025, 1, 1)),
        ("what we learned during 1999", [], "during 1999", d(1999, 1, 1), d(2000, 1, 1)),
        # Relative to now.
        ("what broke yesterday", DATES_2023, "yesterday", d(2026, 11, 26), d(2026, 11, 27)),
        ("what did I say today", [], "today", d(2026, 11, 27), d(2026, 11, 28)),
        (
            "the day before yesterday",
            [],
            "the day before yesterday",
            d(2026, 11, 25),
            d(2026, 11, 26),
        ),
        ("what did we ship last week", DATES_2023, "last week", d(2026, 11, 16), d(2026, 11, 23)),
        ("decisions from last month", [], "from last month", d(2026, 10, 1), d(2026, 11, 1)),
        ("our goals this year", [], "this year", d(2026, 1, 1), d(2027, 1, 1)),
        ("what Caroline said 3 days ago", [], "3 days ago", d(2026, 11, 24), d(2026, 11, 25)),
        ("a week ago", [], "a week ago", d(2026, 11, 16), d(2026, 11, 23)),
        ("two months ago", [], "two months ago", d(2026, 9, 1), d(2026, 10, 1)),
        (
            "errors in the past 10 days",
            [],
            "in the past 10 days",
            d(2026, 11, 17, 15, 30),
            NOW,
        ),
        ("over the last month", [], "the last month", d(2026, 10, 27, 15, 30), NOW),
        ("earlier this week", [], "earlier this week", d(2026, 11, 23), NOW),
        ("what went wrong last Friday", [], "last Friday", d(2026, 11, 20), d(2026, 11, 21)),
        ("last Tuesday", [], "last Tuesday", d(2026, 11, 24), d(2026, 11, 25)),
        ("this Monday", [], "this Monday", d(2026, 11, 23), d(2026, 11, 24)),
        ("visit next Saturday", [], "next Saturday", d(2026, 12, 5), d(2026, 12, 6)),
        ("last weekend", [], "last weekend", d(2026, 11, 21), d(2026, 11, 23)),
        # A weekday alone: the latest by the end of the memories' dates (a Friday).
        (
            "what did we decide on Tuesday",
            DATES_2023,
            "on Tuesday",
            d(2023, 10, 17),
            d(2023, 10, 18),
        ),
        ("what did we decide on Friday", DATES_2023, "on Friday", d(2023, 10, 20), d(2023, 10, 21)),
        # One side open.
        ("what happened before March", DATES_2023, "before March", None, d(2023, 3, 1)),
        ("after June 2023", [], "after June 2023", d(2023, 7, 1), None),
        ("decisions since 2024", [], "since 2024", d(2024, 1, 1), None),
        ("scenes filmed by July 5", DATES_2023, "by July 5", None, d(2023, 7, 6)),
        ("the budget through August", DATES_2023, "through August", None, d(2023, 9, 1)),
        ("until April 9", DATES_2023, "until April 9", None, d(2023, 4, 10)),
        # An event the date locates: the window reaches the date's far end.
        (
            "what happened before the audit in August",
            DATES_2023,
            "before the audit in August",
            None,
            d(2023, 9, 1),
        ),
        (
            "what changed after the launch in May",
            DATES_2023,
            "after the launch in May",
            d(2023, 5, 1),
            None,
        ),
        # Both ends.
        (
            "between March and May",
            DATES_2023,
            "between March and May",
            d(2023, 3, 1),
            d(2023, 6, 1),
        ),
        ("from 2021 to 2023", [], "from 2021 to 2023", d(2021, 1, 1), d(2024, 1, 1)),
    ],
)
def test_a_phrase_is_read_and_placed(
    question: str,
    dates: list[datetime],
    phrase: str,
    start: datetime | None,
    end: datetime | None,
) -> None:
    placed = place(read_times(question), NOW, dates)
    assert placed == [TimeWindow(phrase=phrase, start=start, end=end)]


@pytest.mark.parametrize(
    "question",
    [
        "why is checkout slow",
        "we may need a retry",
        "how should we change the database schema without downtime",
        "what did April say about the release",
        "march the release through review",
        "customers were charged twice",
        "the 2024 roadmap",
        "error code 2023 from the gateway",
        "can we deploy on Friday",
        "do we still deploy on Fridays",
        "blocking time for self-care on Tuesday and Thursday mornings",
        "we meet every Monday",
        "limit work emails after 7 PM",
        "Jan reviewed the migration",
        "the version 2024.1 release",
        "who wrote the step-by-step guide",
        # A question about how long something took names times to find the events
        # it measures between, not where its answer lies.
        "How long did it take me to reach my goal after I had saved $1,200 by early June?",
        "How many days passed between the launch in March and the first outage?",
        "how many weeks after the audit in August did we ship the fix",
    ],
)
def test_words_that_name_no_time_are_not_read_as_one(question: str) -> None:
    assert read_times(question) == []


def test_several_times_in_one_question_are_each_placed() -> None:
    placed = place(read_times("what broke in March or April 2024"), NOW, DATES_2023)
    assert placed == [
        TimeWindow(phrase="in March", start=d(2023, 3, 1), end=d(2023, 4, 1)),
        TimeWindow(phrase="April 2024", start=d(2024, 4, 1), end=d(2024, 5, 1)),
    ]


def test_a_date_that_does_not_exist_is_left_out() -> None:
    assert place(read_times("what happened on 30 February"), NOW, DATES_2023) == []
    # The latest 29 February by October 2023 was in 2020.
    assert place(read_times("on 29 February"), NOW, DATES_2023) == [
        TimeWindow(phrase="on 29 February", start=d(2020, 2, 29), end=d(2020, 3, 1))
    ]


def test_a_month_is_placed_in_the_latest_year_the_dates_cover() -> None:
    dates = [datetime(2023, 6, 1, tzinfo=UTC), datetime(2025, 2, 1, tzinfo=UTC)]
    assert place(read_times("in March"), NOW, dates) == [
        TimeWindow(phrase="in March", start=d(2024, 3, 1), end=d(2024, 4, 1))
    ]
    assert place(read_times("in January"), NOW, dates) == [
        TimeWindow(phrase="in January", start=d(2025, 1, 1), end=d(2025, 2, 1))
    ]


def test_the_few_best_candidates_within_the_time_named_lead_as_a_rare_word_would() -> None:
    april = TimeWindow(phrase="in April", start=d(2026, 4, 1), end=d(2026, 5, 1))
    best = {"fix-feb": 0.9, "fix-apr": 0.8, "fix-jul": 0.85, "lunch-apr": 0.1} | {
        f"other{i}": 0.5 for i in range(16)
    }
    occurred = {mid: d(2026, 6, 1) for mid in best} | {
        "fix-feb": d(2026, 2, 10),
        "fix-apr": d(2026, 4, 14),
        "fix-jul": d(2026, 7, 8),
        "lunch-apr": d(2026, 4, 30),
    }
    # One of twenty is a match within April: it leads by sqrt(20 - 1) deviations.
    # The lunch note, though within April, matches worse than the typical best:
    # time picks among matches and makes none.
    assert time_lifts([april], best, occurred, 0.05) == {
        "fix-apr": pytest.approx(0.05 * math.sqrt(19))
    }
    # The first of April is within it, the first of May is not.
    edges = {"a": d(2026, 4, 1), "b": d(2026, 5, 1), "c": d(2026, 3, 31, 23, 59)}
    assert time_lifts([april], dict.fromkeys(edges, 1.0), edges, 0.05) == {
        "a": pytest.approx(0.05 * math.sqrt(2))
    }


def test_time_moves_nothing_when_all_or_none_of_the_best_occurred_within_it() -> None:
    april = TimeWindow(phrase="in April", start=d(2026, 4, 1), end=d(2026, 5, 1))
    best = {"a": 0.9, "b": 0.5, "c": 0.4}
    within = dict.fromkeys(best, d(2026, 4, 2))
    assert time_lifts([april], best, within, 0.05) == {}
    assert time_lifts([april], best, dict.fromkeys(best, d(2026, 6, 2)), 0.05) == {}
    assert time_lifts([april], best, {}, 0.05) == {}


def test_an_open_window_and_several_windows_hold_what_they_say() -> None:
    before = TimeWindow(phrase="before April", end=d(2026, 4, 1))
    july = TimeWindow(phrase="July", start=d(2026, 7, 1), end=d(2026, 8, 1))
    best = {"feb": 1.0, "apr": 1.0, "jul": 1.0, "sep": 1.0}
    occurred = {
        "feb": d(2026, 2, 1),
        "apr": d(2026, 4, 1),
        "jul": d(2026, 7, 9),
        "sep": d(2026, 9, 1),
    }
    assert time_lifts([before, july], best, occurred, 1.0) == {"feb": 1.0, "jul": 1.0}
