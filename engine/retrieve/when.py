"""Time in questions: the dates a question names, as windows over ``occurred_at``.

"What broke in March", "what did Tom fix in April", "last week", "in 2024",
"before the audit in August", "yesterday": :func:`read_times` finds such
phrases in a question (text only, no clock), and :func:`place` puts each on
the calendar as a half-open window ``[start, end)`` in UTC, either end open.

Where a phrase is placed:

- a year, or a date with its year ("March 2024", "on 12 May 2023"): there;
- a month or a date without a year ("in March", "April 6-7"): the latest that
  had begun by the last of the memories' own dates: a collection of chats from
  2023 is asked about its own March, not about this year's, and one kept up to
  date about the last March past. With no dates to go by, the latest begun by
  now;
- a weekday alone ("on Friday"): likewise, the latest such day by the last of
  the memories' dates;
- a phrase relative to now ("yesterday", "last week", "3 days ago", "in the
  past month", "last Friday", "this year"): relative to the recall's ``now``,
  calendar units by the calendar (a week from Monday).

"Before", "after", "since", "until", "by" and "through" open a window on one
side: "before March" ends where March starts, "until March" where it ends.
When they name an event the date locates ("before the audit in August"), the
window reaches the date's far end, as the event may lie anywhere in it.
"Between A and B" and "from A to B" span both.

A date is only read where it names a time: "we may", "march on", "what did
April say", a weekday that recurs ("on Tuesday and Thursday mornings", "every
Friday") or a weekday in a question about what is done or may be done ("can we
deploy on Friday") are not. A general date parser reads dates in any text, and
reads too many for a question (dateparser's search takes "we" for Wednesday
and "we may" for May), and it finds points where a question means periods; the
words a question marks time with are few, and read here by rule.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Literal

from hippocampus.model import TimeWindow

__all__ = ["Relation", "TimeMention", "place", "read_times", "time_lifts"]

Relation = Literal["during", "before", "after", "since", "until", "between"]
Window = tuple[datetime | None, datetime | None]
_Period = tuple[datetime, datetime]


@dataclass(frozen=True)
class _Calendar:
    """A period named with all it needs to be placed: an absolute year or date,
    a month or date without a year, a weekday, or a period relative to now."""

    kind: Literal["year", "date", "weekday", "ago", "rolling", "so_far", "weekend"]
    year: int | None = None
    month: int | None = None
    day: int | None = None
    last_day: int | None = None
    weekday: int | None = None
    which: Literal["bare", "last", "this", "next"] = "bare"
    unit: Literal["day", "week", "month", "year"] = "day"
    count: int = 0

    def period(self, now: datetime, last: datetime) -> _Period | None:
        """Where this lies on the calendar, a month, date or weekday without a
        year the latest begun by ``last``; ``None`` for a date that never exists
        (30 February)."""
        if self.kind == "year":
            assert self.year is not None
            return _at(date(self.year, 1, 1)), _at(date(self.year + 1, 1, 1))
        if self.kind == "date":
            return self._date(now, last)
        if self.kind == "weekday":
            return self._weekday(now, last)
        if self.kind == "ago":
            return _unit_containing(_shift(now, self.unit, -self.count), self.unit)
        if self.kind == "rolling":
            return _shift(now, self.unit, -self.count), now
        if self.kind == "so_far":
            return _unit_containing(now, self.unit)[0], now
        # A weekend: Saturday and Sunday, this week's or the one before.
        monday = _unit_containing(now, "week")[0] - timedelta(weeks=self.count)
        return monday + timedelta(days=5), monday + timedelta(days=7)

    def _date(self, now: datetime, last: datetime) -> _Period | None:
        if self.year is not None:
            return self._in_year(self.year)
        # Eight years back reach a 29 February.
        begun = [p for y in range(last.year - 8, last.year + 1) if (p := self._in_year(y))]
        return max((p for p in begun if p[0] <= last), default=None)

    def _in_year(self, year: int) -> _Period | None:
        assert self.month is not None
        try:
            if self.day is None:
                start = date(year, self.month, 1)
                return _at(start), _at(_add_months(start, 1))
            end = date(year, self.month, self.last_day or self.day) + timedelta(days=1)
            return _at(date(year, self.month, self.day)), _at(end)
        except ValueError:
            return None

    def _weekday(self, now: datetime, last: datetime) -> _Period:
        assert self.weekday is not None
        today = now.date()
        if self.which == "bare":
            ref = last.date()
            day = ref - timedelta(days=(ref.weekday() - self.weekday) % 7)
        elif self.which == "last":
            day = today - timedelta(days=(today.weekday() - self.weekday - 1) % 7 + 1)
        else:
            monday = today - timedelta(days=today.weekday())
            day = monday + timedelta(days=self.weekday + (7 if self.which == "next" else 0))
        return _at(day), _at(day + timedelta(days=1))


@dataclass(frozen=True)
class TimeMention:
    """A time a question names, as written, not yet on the calendar.

    Attributes:
        phrase: the question's words for it ("in March", "before the audit in
            August", "last week").
        relation: how the question relates to the period: ``during`` it,
            ``before`` or ``after`` it, ``since`` its start, ``until`` its end,
            or ``between`` it and ``to``.
        far: the relation names an event the period locates ("before the audit
            in August"): the window reaches the period's far end.
    """

    phrase: str
    relation: Relation
    period: _Calendar
    to: _Calendar | None = None
    far: bool = False

    def window(self, now: datetime, last: datetime) -> Window | None:
        """The window ``[start, end)`` the mention asks for (either end ``None``:
        open), a month, date or weekday without a year placed as the latest
        begun by ``last``; ``None`` when its date does not exist."""
        found = self.period.period(now, last)
        if found is None:
            return None
        start, end = found
        if self.relation == "between":
            other = self.to.period(now, last) if self.to is not None else None
            if other is None:
                return None
            return min(start, other[0]), max(end, other[1])
        if self.relation == "before":
            return None, end if self.far else start
        if self.relation == "after":
            return start if self.far else end, None
        if self.relation == "since":
            return start, None
        if self.relation == "until":
            return None, end
        return start, end


def place(
    mentions: Sequence[TimeMention], now: datetime, dates: Sequence[datetime]
) -> list[TimeWindow]:
    """Each mention's window, placed relative to ``now`` and to ``dates`` (the
    memories' own ``occurred_at``: a month or weekday named without a year is
    the latest begun by the last of them, or by ``now`` without any); mentions
    of dates that do not exist are left out."""
    last = max(dates, default=now)
    out: list[TimeWindow] = []
    for mention in mentions:
        window = mention.window(now, last)
        if window is not None:
            out.append(TimeWindow(phrase=mention.phrase, start=window[0], end=window[1]))
    return out


def time_lifts(
    windows: Sequence[TimeWindow],
    best: Mapping[str, float],
    occurred: Mapping[str, datetime],
    unit: float,
) -> dict[str, float]:
    """What the query's time gives each of its best candidates.

    Time is evidence as a rare word is: the fewer of the best candidates answer
    the query and occurred within a time it names, the more that sets them
    apart. Time picks among matches and does not make one, so the candidates it
    can pick are those scoring at least the mean of ``best`` (a match as good as
    the typical best); of ``best``'s ``n`` candidates, the ``k`` such matches
    that occurred within one of ``windows`` stand ``sqrt(n / k - 1)`` standard
    deviations apart on that evidence (the lead of a rare word's ``k`` matches,
    see :func:`hippocampus.retrieve.fusion.calibrated`), each worth ``unit``.
    Nothing is gained when none did, or all of ``best`` did.

    Args:
        windows: the times the query names.
        best: the best candidates' scores before time (memory id → score).
        occurred: their ``occurred_at``; one missing counts as outside.
        unit: what a standard deviation of time's lead is worth in score.

    Returns:
        memory id → what it gains, for those that gain.
    """
    within = [
        mid for mid in best if mid in occurred and any(w.holds(occurred[mid]) for w in windows)
    ]
    if len(within) == len(best):
        return {}
    mean = sum(best.values()) / len(best)
    inside = [mid for mid in within if best[mid] >= mean]
    if not inside:
        return {}
    lead = unit * math.sqrt(len(best) / len(inside) - 1.0)
    return dict.fromkeys(inside, lead)


# -- reading -------------------------------------------------------------------

_MONTHS = {
    "january": 1, "jan": 1, "february": 2, "feb": 2, "march": 3, "mar": 3,
    "april": 4, "apr": 4, "may": 5, "june": 6, "jun": 6, "july": 7, "jul": 7,
    "august": 8, "aug": 8, "september": 9, "sept": 9, "sep": 9, "october": 10,
    "oct": 10, "november": 11, "nov": 11, "december": 12, "dec": 12,
}  # fmt: skip
# Month names that are also a verb, a name or another word ("we may", "march on",
# "April said"), and every abbreviation ("Jan" is a name too): dates only with a
# day or year, or after a word that introduces a time.
_AMBIGUOUS_MONTHS = frozenset({"may", "march", "april", "june", "august"}) | {
    name for name in _MONTHS if len(name) <= 4 and name not in {"may", "june", "july"}
}
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
}  # fmt: skip
_UNITS = ("day", "week", "month", "year")

_MONTH = "|".join(sorted(_MONTHS, key=len, reverse=True))
_WEEKDAY = "|".join(_WEEKDAYS)
_NUMBER = r"\d{1,3}|" + "|".join(_NUMBERS)
_UNIT = "|".join(_UNITS)
_ORD = r"(?:st|nd|rd|th)?"
_DAYS = rf"(?<![\d.:/-])\d{{1,2}}{_ORD}(?:\s*(?:-|–|to)\s*\d{{1,2}}{_ORD})?(?![\d:%])"
_YEAR = r"(?<![\w./:$£€-])(?:19|20)\d{2}(?![\w/:%$]|[.,-]\d)"

_PATTERN = re.compile(
    "|".join(
        (
            r"(?P<iso>(?<![\w./-])(?:19|20)\d{2}-[01]\d-[0-3]\d(?![\w/:-]))",
            rf"(?P<ago>\b(?P<ago_n>{_NUMBER})\s+(?P<ago_unit>{_UNIT})s?\s+ago\b)",
            rf"(?P<rolling>\b(?:(?:the|this)\s+)?(?:last|past|previous)\s+(?P<roll_n>{_NUMBER})\s+"
            rf"(?P<roll_unit>{_UNIT})s?\b|\b(?:the|this)\s+(?:last|past)\s+(?P<roll1_unit>{_UNIT})\b)",
            r"(?P<before_yesterday>\bthe\s+day\s+before\s+yesterday\b)",
            r"(?P<day_word>\b(?:today|tonight|yesterday|tomorrow|last\s+night|"
            r"this\s+(?:morning|afternoon|evening))\b)",
            r"(?P<weekend>\b(?:last|this|past)\s+weekend\b)",
            rf"(?P<so_far>\bearlier\s+this\s+(?P<so_far_unit>{_UNIT})\b)",
            rf"(?P<calendar>\b(?P<cal_which>last|previous|this|current|next)\s+(?P<cal_unit>{_UNIT})\b)",
            rf"(?P<weekday>\b(?:(?P<wd_which>last|this|next|past|previous)\s+)?(?P<wd>{_WEEKDAY})\b)",
            rf"(?P<month_date>(?:(?:the\s+)?(?P<days_before>{_DAYS})\s+(?:of\s+)?)?\b(?P<month>{_MONTH})\b\.?"
            rf"(?:\s+(?P<days_after>{_DAYS}))?(?:,?\s+(?P<month_year>{_YEAR}))?)",
            rf"(?P<year>{_YEAR})",
        )
    ),
    re.IGNORECASE,
)
# Words after which a bare month, or a year, names a time.
_INTRODUCERS = frozenset(
    """in on during since before after until till til by from of through throughout
    early late mid end start beginning around about between last this next""".split()
)
_JOINERS = frozenset({"and", "or", "to", "through", "until", "till", "-", "–", "nor"})
# A weekday that recurs, or one in a question about what is done or may be done,
# names no one day.
_RECURRING_AFTER = re.compile(
    rf"^\s*(?:(?:,|and|or|&|/)\s*(?:{_WEEKDAY})\b|(?:morning|afternoon|evening|night)s\b)",
    re.IGNORECASE,
)
_RECURRING_BEFORE = re.compile(
    rf"(?:\b(?:every|each)\s+|\b(?:{_WEEKDAY})\s*(?:,|and|or|&|/)\s*(?:on\s+)?)$", re.IGNORECASE
)
_HABITUAL = re.compile(
    r"\b(?:can|could|should|shall|will|would|might|must|do|does|don't|doesn't|usually|"
    r"always|never|ever|going\s+to)\b",
    re.IGNORECASE,
)
_DURATION = re.compile(
    r"\bhow\s+(?:long|soon|much\s+time|many\s+(?:more\s+)?(?:minutes|hours|days|nights|weeks|"
    r"months|years))\b|\b(?:minutes|hours|days|weeks|months|years)\s+(?:passed|elapsed|went\s+by|"
    r"later|earlier|apart)\b",
    re.IGNORECASE,
)
_DIRECT_RELATION = re.compile(
    r"\b(?P<rel>before|after|since|until|till|til|by|through|throughout|prior\s+to|up\s+to|"
    r"as\s+of|between|from)\s+(?:the\s+)?(?:(?:early|late|mid|end\s+of|start\s+of|"
    r"beginning\s+of)[\s-]*)?(?:(?:on|in)\s+)?$",
    re.IGNORECASE,
)
# "before the audit in August": a relation word, a few words that name an event,
# then the date that locates it.
_FAR_RELATION = re.compile(
    r"\b(?P<rel>before|after|since|until|till)\s+(?P<event>(?:[^\s,.;:?!]+\s+){1,5}?)"
    r"(?:in|on|during|at)\s+(?:(?:early|late|mid)[\s-]+)?$",
    re.IGNORECASE,
)
_RELATIONS: dict[str, Relation] = {
    "before": "before",
    "prior to": "before",
    "after": "after",
    "since": "since",
    "as of": "since",
    "until": "until",
    "till": "until",
    "til": "until",
    "by": "until",
    "through": "until",
    "throughout": "during",
    "up to": "until",
    "between": "between",
    "from": "between",
}


def read_times(question: str) -> list[TimeMention]:
    """The times ``question`` names, in order; empty when it names none, or when
    it asks how long something took ("how long after I had saved $1,200 by
    early June", "how many days passed between the launch in March and..."):
    such a question names a time to locate one of the events it measures
    between, not the time its answer lies in."""
    if _DURATION.search(question):
        return []
    found: list[tuple[int, int, _Calendar]] = []
    last_end = -1
    habitual = _HABITUAL.search(question) is not None
    for match in _PATTERN.finditer(question):
        before = question[: match.start()]
        joined = last_end >= 0 and question[last_end : match.start()].strip().lower() in _JOINERS
        period = _calendar(match, before, question[match.end() :], joined, habitual)
        if period is not None:
            found.append((match.start(), match.end(), period))
            last_end = match.end()
    return _relate(question, found)


def _calendar(
    match: re.Match[str], before: str, after: str, joined: bool, habitual: bool
) -> _Calendar | None:
    """The period one match names, ``None`` where its words name no time."""
    group = match.lastgroup
    text = match.group().lower()
    introduced = joined or _last_word(before) in _INTRODUCERS
    if group == "iso":
        y, m, d = (int(p) for p in text.split("-"))
        return _Calendar("date", year=y, month=m, day=d)
    if group == "ago":
        return _Calendar("ago", unit=_unit(match["ago_unit"]), count=_number(match["ago_n"]))
    if group == "rolling":
        unit = match["roll_unit"] or match["roll1_unit"]
        count = _number(match["roll_n"]) if match["roll_n"] else 1
        return _Calendar("rolling", unit=_unit(unit), count=count)
    if group == "before_yesterday":
        return _Calendar("ago", unit="day", count=2)
    if group == "day_word":
        word = text.split()[0]
        count = {"yesterday": 1, "last": 1, "tomorrow": -1}.get(word, 0)
        return _Calendar("ago", unit="day", count=count)
    if group == "weekend":
        return _Calendar("weekend", count=0 if text.startswith("this") else 1)
    if group == "so_far":
        return _Calendar("so_far", unit=_unit(match["so_far_unit"]))
    if group == "calendar":
        which = match["cal_which"].lower()
        count = {"last": 1, "previous": 1, "next": -1}.get(which, 0)
        return _Calendar("ago", unit=_unit(match["cal_unit"]), count=count)
    if group == "weekday":
        return _weekday(match, before, after, habitual)
    if group == "month_date":
        return _month_date(match, introduced)
    if group == "year" and introduced:
        return _Calendar("year", year=int(text))
    return None


def _weekday(match: re.Match[str], before: str, after: str, habitual: bool) -> _Calendar | None:
    which = (match["wd_which"] or "").lower()
    weekday = _WEEKDAYS.index(match["wd"].lower())
    if _RECURRING_AFTER.search(after) or _RECURRING_BEFORE.search(before):
        return None
    if which in ("last", "past", "previous"):
        return _Calendar("weekday", weekday=weekday, which="last")
    if which in ("this", "next"):
        return _Calendar("weekday", weekday=weekday, which="this" if which == "this" else "next")
    return None if habitual else _Calendar("weekday", weekday=weekday)


def _month_date(match: re.Match[str], introduced: bool) -> _Calendar | None:
    name = match["month"].lower()
    days = match["days_before"] or match["days_after"]
    year = match["month_year"]
    if name in _AMBIGUOUS_MONTHS and not (days or year or introduced):
        return None
    first = last = None
    if days:
        numbers = [int(n) for n in re.findall(r"\d+", days)]
        first, last = numbers[0], numbers[-1]
        if not 1 <= first <= last <= 31:
            return None
    return _Calendar(
        "date",
        year=int(year) if year else None,
        month=_MONTHS[name],
        day=first,
        last_day=last if last != first else None,
    )


def _relate(question: str, found: list[tuple[int, int, _Calendar]]) -> list[TimeMention]:
    """Mentions from the periods found: each with the relation the words before it
    give it, and "between A and B" / "from A to B" joined into one."""
    mentions: list[TimeMention] = []
    i = 0
    while i < len(found):
        start, end, period = found[i]
        before = question[:start]
        relation: Relation = "during"
        far = False
        phrase_start = start
        if direct := _DIRECT_RELATION.search(before):
            relation = _RELATIONS[" ".join(direct["rel"].lower().split())]
            phrase_start = direct.start()
        elif (far_match := _FAR_RELATION.search(before)) and not _has_time(far_match["event"]):
            relation = _RELATIONS[far_match["rel"].lower()]
            far = True
            phrase_start = far_match.start()
        elif m := re.search(r"\b(?:in|on|during)\s+(?:the\s+)?$", before, re.IGNORECASE):
            phrase_start = m.start()
        to = None
        if relation == "between":
            joined = i + 1 < len(found) and question[end : found[i + 1][0]].strip().lower() in (
                _JOINERS
            )
            if not joined:
                # Alone, "from last month" and "between" say where, not from when.
                relation = "during"
            else:
                i += 1
                end, to = found[i][1], found[i][2]
        mentions.append(
            TimeMention(
                phrase=question[phrase_start:end].strip(),
                relation=relation,
                period=period,
                to=to,
                far=far,
            )
        )
        i += 1
    return mentions


def _has_time(words: str) -> bool:
    return any(m.lastgroup for m in _PATTERN.finditer(words))


def _last_word(text: str) -> str:
    words = re.findall(r"[^\W\d_]+", text[-40:].lower())
    return words[-1] if words else ""


def _number(text: str) -> int:
    text = text.lower()
    return int(text) if text.isdigit() else _NUMBERS[text]


_Unit = Literal["day", "week", "month", "year"]
_UNIT_NAMES: dict[str, _Unit] = {"day": "day", "week": "week", "month": "month", "year": "year"}


def _unit(text: str) -> _Unit:
    return _UNIT_NAMES[text.lower().removesuffix("s")]


# -- calendar arithmetic -------------------------------------------------------


def _at(day: date) -> datetime:
    return datetime(day.year, day.month, day.day, tzinfo=UTC)


def _add_months(day: date, months: int) -> date:
    index = day.year * 12 + day.month - 1 + months
    return date(index // 12, index % 12 + 1, 1)


def _shift(now: datetime, unit: str, count: int) -> datetime:
    """``now`` moved by ``count`` units (a month or year lands on the same day,
    or the month's last where it has no such day)."""
    if unit in ("day", "week"):
        return now + timedelta(days=count * (7 if unit == "week" else 1))
    months = count * (12 if unit == "year" else 1)
    first = _add_months(now.date().replace(day=1), months)
    following = _add_months(first, 1)
    day = min(now.day, (following - timedelta(days=1)).day)
    return now.replace(year=first.year, month=first.month, day=day)


_STARTS: dict[str, Callable[[date], date]] = {
    "day": lambda d: d,
    "week": lambda d: d - timedelta(days=d.weekday()),
    "month": lambda d: d.replace(day=1),
    "year": lambda d: d.replace(month=1, day=1),
}
_NEXT: dict[str, Callable[[date], date]] = {
    "day": lambda d: d + timedelta(days=1),
    "week": lambda d: d + timedelta(weeks=1),
    "month": lambda d: _add_months(d, 1),
    "year": lambda d: d.replace(year=d.year + 1),
}


def _unit_containing(moment: datetime, unit: str) -> _Period:
    """The calendar day, week (from Monday), month or year ``moment`` falls in."""
    start = _STARTS[unit](moment.astimezone(UTC).date())
    return _at(start), _at(_NEXT[unit](start))
