"""When does a dated plan or a time-bounded state stop holding? A small, pure resolver of time
expressions to an *end* (``valid_to``), relative to the date the statement was made.

``induction/timex.py`` dates what a sentence is about (its start: "yesterday", "in May 2023"); this
module answers the other question, how long a state lasts: "I'm moving to Berlin in spring 2026" holds
until spring 2026 is over, "no strenuous activity for a few months" until three months after it was
said, "I'm staying with my aunt until the end of the semester" until the term ends. Each pattern of
``PATTERNS`` names the linguistic class it covers; the table of cases (each with a sentence written for
this module, from no benchmark) is in tests/test_induction_timeexpr.py.

    >>> from datetime import datetime
    >>> b = find_end("I'm planning to move to Berlin in spring 2026.", datetime(2025, 11, 2))
    >>> b.cls, b.end.date().isoformat()
    ('season_year', '2026-06-01')

Which statements get an end (``valid_to_for``): a plan, from any expression that points past the date it
was said (a plan for a time that is over is no longer a plan, whether or not it happened); a stated
state (a constraint, a circumstance, a preference), only from a *bounding* expression ("until …", "for
the next …", "for a few months", "this semester", "for the rest of the year"). A perfect-tense duration
("I've been vegetarian for three years now") says how long something has lasted, not when it ends.
Without a date there is no frame to read a deadline against, so nothing is resolved.

Seasons are the northern-hemisphere meteorological ones (spring = March-May, ...); a semester or term
ends with May, August or December. The end is exclusive: the state holds strictly before it.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from induction.timex import find_times

_NUM = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
        "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "a couple of": 2, "couple of": 2, "a few": 3, "few": 3,
        "several": 3, "a couple": 2}
_NUM_RE = (r"\d+|a couple(?: of)?|couple of|a few|few|several|an|a|one|two|three|four|five|six|seven|eight|nine|ten|"
           r"eleven|twelve")
_UNIT_RE = r"(day|week|fortnight|month|year|wk|mth|yr)s?"
_UNIT_NAME = {"wk": "week", "mth": "month", "yr": "year"}
# "May" only capitalised: lower-case "may" is the modal verb
_MONTHS = {m.lower(): i for i, m in enumerate(calendar.month_name) if m} | {
    m.lower(): i for i, m in enumerate(calendar.month_abbr) if m and m != "May"}
_MONTH_RE = "(?:" + "|".join(sorted((m for m in _MONTHS if m != "may"), key=len, reverse=True)) + "|(?-i:May))"
_WEEKDAYS = {d.lower(): i for i, d in enumerate(calendar.day_name)}
_WEEKDAY_RE = "|".join(_WEEKDAYS)
_SEASON_START = {"spring": 3, "summer": 6, "fall": 9, "autumn": 9, "winter": 12}
_SEASON_RE = "spring|summer|fall|autumn|winter"
# "for three years now", "I've been … for", "since": how long something has lasted, not when it ends
_PERFECT = re.compile(r"\b(?:have|has|had|'ve|'d) been\b|\bhave had\b|\b'?ve had\b|\bsince\b|\bfor \S+(?: \S+)? now\b",
                      re.I)


@dataclass(frozen=True)
class Bound:
    """A time expression and the end it gives the statement's validity (exclusive)."""

    text: str
    span: tuple[int, int]
    end: datetime
    cls: str
    bounding: bool  # an expression that bounds a state ("until", "for the next"), not only a plan's date


def _num(word: str) -> int:
    w = word.lower().strip()
    return int(w) if w.isdigit() else _NUM.get(w, 1)


def _month_start(y: int, m: int, tz: object) -> datetime:
    y, m = y + (m - 1) // 12, (m - 1) % 12 + 1
    return datetime(y, m, 1, tzinfo=tz)  # type: ignore[arg-type]


def _midnight(d: datetime) -> datetime:
    return d.replace(hour=0, minute=0, second=0, microsecond=0)


def _add(ref: datetime, n: int, unit: str) -> datetime:
    u = unit.lower().rstrip("s")
    u = _UNIT_NAME.get(u, u)
    if u == "fortnight":
        u, n = "week", 2 * n
    if u == "day":
        return _midnight(ref) + timedelta(days=n + 1)
    if u == "week":
        return _midnight(ref) + timedelta(weeks=n, days=1)
    if u == "month":
        y, m = divmod(ref.year * 12 + ref.month - 1 + n, 12)
        day = min(ref.day, calendar.monthrange(y, m + 1)[1])
        return _midnight(ref.replace(year=y, month=m + 1, day=day)) + timedelta(days=1)
    day = min(ref.day, calendar.monthrange(ref.year + n, ref.month)[1])
    return _midnight(ref.replace(year=ref.year + n, day=day)) + timedelta(days=1)


def _season_end(year: int, season: str, tz: object) -> datetime:
    """End (exclusive) of the season that starts in ``year``."""
    return _month_start(year, _SEASON_START[season] + 3, tz)


def _season_year(ref: datetime, season: str, which: str) -> int:
    """The year the named season starts in: ``this`` = the season of the current year (winter: the one
    running now or starting this December), ``next`` = the first one starting after the current one,
    ``bare`` = the first one not yet over."""
    start = _SEASON_START[season]
    y = ref.year - 1 if season == "winter" and ref.month < 3 else ref.year
    if which == "this":
        return y
    current_over = ref >= _season_end(y, season, ref.tzinfo)
    in_it = ref >= _month_start(y, start, ref.tzinfo) and not current_over
    if which == "next":
        return y + 1 if (in_it or current_over) else y
    return y + 1 if current_over else y


def _unit_end(ref: datetime, unit: str, step: int) -> datetime:
    """End of this (step 0) / next (step 1) week, weekend, month or year."""
    d = _midnight(ref)
    u = unit.lower()
    if u == "week":
        return d - timedelta(days=d.weekday()) + timedelta(weeks=step + 1)
    if u == "weekend":
        return d + timedelta(days=7 - d.weekday() + 7 * step)  # the Monday after that weekend
    if u == "month":
        return _month_start(d.year, d.month + step + 1, d.tzinfo)
    return datetime(d.year + step + 1, 1, 1, tzinfo=d.tzinfo)


def _semester_end(ref: datetime) -> datetime:
    m = ref.month
    return _month_start(ref.year, 6 if m <= 5 else 9 if m <= 8 else 13, ref.tzinfo)


def _next_month_end(ref: datetime, month: int, until: bool) -> datetime:
    """The named month's next occurrence not yet over; ``until`` ends at its start ("until June")."""
    y = ref.year if _month_start(ref.year, month + 1, ref.tzinfo) > ref else ref.year + 1
    return _month_start(y, month if until else month + 1, ref.tzinfo)


def _weekday_end(ref: datetime, name: str, nxt: bool) -> datetime:
    d = _midnight(ref)
    delta = (_WEEKDAYS[name.lower()] - d.weekday()) % 7
    if nxt and delta == 0:
        delta = 7
    return d + timedelta(days=delta + 1)


def _easter(year: int) -> tuple[int, int]:
    """(month, day) of Western Easter Sunday (the anonymous Gregorian computus)."""
    a, b, c = year % 19, year // 100, year % 100
    d, e = b // 4, b % 4
    g = (8 * b + 13) // 25
    h = (19 * a + b - d - g + 15) % 30
    i, k = c // 4, c % 4
    l_ = (32 + 2 * e + 2 * i - h - k) % 7
    m = (a + 11 * h + 22 * l_) // 451
    n = h + l_ - 7 * m + 114
    return n // 31, n % 31 + 1


def _holiday_end(ref: datetime, name: str) -> datetime:
    """Until a fixed holiday comes: its next occurrence (Christmas Day, New Year's Day, Easter Sunday, Halloween)."""
    key = name.lower().replace("'s", "").replace("xmas", "christmas").split()[0]
    for y in (ref.year, ref.year + 1):
        month, day = _easter(y) if key == "easter" else {"christmas": (12, 25), "new": (1, 1), "halloween": (10, 31)}[key]
        d = datetime(y, month, day, tzinfo=ref.tzinfo)
        if d > ref:
            return d
    return datetime(ref.year + 1, 1, 1, tzinfo=ref.tzinfo)


def _day_of_month_end(ref: datetime, day: int) -> datetime:
    """'until the 20th': that day of this month, or of the next if it is past; the end of that day."""
    d = _midnight(ref)
    for k in (0, 1, 2):
        y, m = divmod(d.year * 12 + d.month - 1 + k, 12)
        if day <= calendar.monthrange(y, m + 1)[1]:
            end = datetime(y, m + 1, day, tzinfo=ref.tzinfo) + timedelta(days=1)
            if end > ref:
                return end
    raise ValueError(day)


_Resolver = Callable[[re.Match[str], datetime], datetime | None]


@dataclass(frozen=True)
class Pattern:
    cls: str
    covers: str  # the linguistic class, in words
    regex: re.Pattern[str]
    resolve: _Resolver
    bounding: bool = False


def _rx(p: str) -> re.Pattern[str]:
    return re.compile(p, re.I)


def _safe(f: _Resolver) -> _Resolver:
    def g(m: re.Match[str], ref: datetime) -> datetime | None:
        try:
            return f(m, ref)
        except (ValueError, KeyError, OverflowError):
            return None
    return g


PATTERNS: tuple[Pattern, ...] = (
    Pattern("date_range", "'from' a day 'to / until / through / -' a later day ('away from 3 to 10 May', 'from May 3 "
            "through May 10'): until the second day is over",
            _rx(rf"\bfrom (?:the )?[\w ,]{{1,20}}?(?: (?:to|until|till|through|thru) |\s*[-\u2013]\s*)(?:the )?(?:(\d{{1,2}})(?:st|nd|rd|th)? "
                rf"(?:of )?({_MONTH_RE})|({_MONTH_RE}) (\d{{1,2}})(?:st|nd|rd|th)?)(?:,? ((?:19|20)\d\d))?\b"),
            _safe(lambda m, r: _date_end(m, r)), True),
    Pattern("until_end_of", "'until / till / through (the) end of' + a period (semester, term, month, year, week, "
            "summer, …): the state holds until that period is over",
            _rx(rf"\b(?:until|till|til|through|to) (?:the )?end of (?:the |this |my )?(semester|term|school year|month|year|week|"
                rf"{_SEASON_RE})\b"),
            _safe(lambda m, r: _semester_end(r) if m.group(1).lower() in ("semester", "term", "school year")
                  else _season_end(_season_year(r, m.group(1).lower(), "bare"), m.group(1).lower(), r.tzinfo)
                  if m.group(1).lower() in _SEASON_START else _unit_end(r, m.group(1), 0)), True),
    Pattern("until_end_of_month", "'until / till / through (the) end of' + a month name: until that month is over",
            _rx(rf"\b(?:until|till|til|through|to) (?:the )?end of ({_MONTH_RE})\b(?! \d)"),
            _safe(lambda m, r: _next_month_end(r, _MONTHS[m.group(1).lower()], False)), True),
    Pattern("until_date", "'until / till' + a day of a month ('until 5 July', 'till March 3rd', 'until the 9th of "
            "June 2026'): until that day is over",
            _rx(rf"\b(?:until|till|til|through) (?:the )?(?:(\d{{1,2}})(?:st|nd|rd|th)? (?:of )?({_MONTH_RE})|({_MONTH_RE}) "
                rf"(?:the )?(\d{{1,2}})(?:st|nd|rd|th)?)(?:,? ((?:19|20)\d\d))?\b"),
            _safe(lambda m, r: _date_end(m, r)), True),
    Pattern("rest_of", "'for the rest of' + this period: until the current week, month, year or semester ends",
            _rx(r"\bfor the rest of (?:the |this )?(semester|term|week|month|year)\b"),
            _safe(lambda m, r: _semester_end(r) if m.group(1).lower() in ("semester", "term") else _unit_end(r, m.group(1), 0)),
            True),
    Pattern("this_term", "'this semester / this term / this school year': until the academic term ends",
            _rx(r"\b(?:this|the current) (?:semester|term|school year)\b"), _safe(lambda m, r: _semester_end(r)), True),
    Pattern("for_next", "'for / over / during the next | coming | following' + a count + a unit: a duration from "
            "the moment it was said",
            _rx(rf"\b(?:for|over|during|in) the (?:next|coming|following) (?:({_NUM_RE}) )?{_UNIT_RE}\b"),
            _safe(lambda m, r: _add(r, _num(m.group(1) or "1"), m.group(2))), True),
    Pattern("for_duration", "'for' + a count + a unit, not in the perfect ('I've been … for three years'): a "
            "duration from the moment it was said",
            _rx(rf"\bfor (?:another |at least |about |around )?({_NUM_RE}) (?:more )?{_UNIT_RE}\b(?! ago| now)"),
            _safe(lambda m, r: _add(r, _num(m.group(1)), m.group(2))), True),
    Pattern("until_day_of_month", "'until / till the' + an ordinal day, no month ('till the 20th'): this month's, or the "
            "next month's when it is past",
            _rx(r"\b(?:until|till|til|through) the (\d{1,2})(?:st|nd|rd|th)\b(?! (?:of )?[A-Za-z]{3})"),
            _safe(lambda m, r: _day_of_month_end(r, int(m.group(1)))), True),
    Pattern("until_rel", "'until / till' + tomorrow, tonight, the weekend, or next week / month / year: until that time "
            "comes ('until the end of next week': until it is over)",
            _rx(r"\b(?:until|till|til) (the end of )?(tomorrow|tonight|the weekend|(?:next|the coming) (?:week|weekend|month|year))\b"),
            _safe(lambda m, r: _until_rel(m, r)), True),
    Pattern("until_holiday", "'until / till / before' + a holiday (Christmas, xmas, New Year, Easter, Halloween): until it "
            "comes",
            _rx(r"\b(?:until|till|til|before) (?:after )?(christmas|xmas|new year's|new year|easter|halloween)\b"),
            _safe(lambda m, r: _holiday_end(r, m.group(1))), True),
    Pattern("through_named", "'through / thru' + a month or a weekday ('through March', 'thru Friday'): until it is over "
            "(inclusive, unlike 'until')",
            _rx(rf"\b(?:through|thru) (?:(?:the )?end of )?(?:({_MONTH_RE})|({_WEEKDAY_RE}))\b(?! \d)"),
            _safe(lambda m, r: _next_month_end(r, _MONTHS[m.group(1).lower()], False) if m.group(1)
                  else _weekday_end(r, m.group(2), False)), True),
    Pattern("for_the_period", "'for / over / throughout the' + a period of the calendar ('for the weekend', 'over the "
            "holidays', 'for the summer'): until the current or next such period is over",
            _rx(rf"\b(?:for|over|throughout) the (day|week|weekend|month|year|holidays|{_SEASON_RE})\b(?! (?:of|after|before)\b)"),
            _safe(lambda m, r: _period_end(r, m.group(1))), True),
    Pattern("compound_duration", "a time-bounded arrangement named with a hyphenated duration ('on a three-month "
            "secondment', 'doing a six-week course', 'for a two-week stay'): that long from when it was said",
            _rx(rf"\b(?:on|doing|taking|in|for|during|with|starting|started|start|begin|beginning) (?:a|an|my|our|the) "
                rf"({_NUM_RE}|\d+)-{_UNIT_RE}(?!-old)(?= (?!(?:week|weekend|weekends|day|days)\b)[a-z])"),
            _safe(lambda m, r: _add(r, _num(m.group(1)), m.group(2))), True),
    Pattern("until_month", "'until / till' + a month name (and year): until that month begins",
            _rx(rf"\b(?:until|till|til) (?:early |mid-?)?({_MONTH_RE})(?:,? ((?:19|20)\d\d))?\b(?! \d)"),
            _safe(lambda m, r: _month_start(int(m.group(2)), _MONTHS[m.group(1).lower()], r.tzinfo) if m.group(2)
                  else _next_month_end(r, _MONTHS[m.group(1).lower()], True)), True),
    Pattern("until_weekday", "'until / till' + a weekday: until that day is over",
            _rx(rf"\b(?:until|till|til) (?:next )?({_WEEKDAY_RE})\b"),
            _safe(lambda m, r: _weekday_end(r, m.group(1), False)), True),
    Pattern("season_year", "a season with its year ('in spring 2026', 'by the summer of 2027'): until that season "
            "is over",
            _rx(rf"\b(?:in |by |during |over |for )?(?:the )?({_SEASON_RE})(?: of)? ((?:19|20)\d\d)\b"),
            _safe(lambda m, r: _season_end(int(m.group(2)), m.group(1).lower(), r.tzinfo))),
    Pattern("month_year", "a month with its year ('in March 2027', 'by June 2026'): until that month is over",
            _rx(rf"\b(?:in |by |during |for )?({_MONTH_RE}),? ((?:19|20)\d\d)\b"),
            _safe(lambda m, r: _month_start(int(m.group(2)), _MONTHS[m.group(1).lower()] + 1, r.tzinfo))),
    Pattern("date", "a day with its month (and year): 'on 14 March', 'by March 14, 2027': until that day is over",
            _rx(rf"\b(?:on |by |before )?(?:(\d{{1,2}})(?:st|nd|rd|th)? (?:of )?({_MONTH_RE})|({_MONTH_RE}) (\d{{1,2}})"
                rf"(?:st|nd|rd|th)?)(?:,? ((?:19|20)\d\d))?\b"),
            _safe(lambda m, r: _date_end(m, r))),
    Pattern("season_deictic", "'this / next' + a season, or a bare 'in (the) spring': until that season is over",
            _rx(rf"\b(this|next|in the|in|over the|by the|by) ({_SEASON_RE})\b"),
            _safe(lambda m, r: _season_end(_season_year(r, m.group(2).lower(), {"this": "this", "next": "next"}.get(
                m.group(1).lower(), "bare")), m.group(2).lower(), r.tzinfo))),
    Pattern("by_month", "'by / in / this' + a bare month name: until the next such month is over",
            _rx(rf"\b(?:by|in|this|before|next) ({_MONTH_RE})\b"),
            _safe(lambda m, r: _next_month_end(r, _MONTHS[m.group(1).lower()], False))),
    Pattern("rel_unit", "'this / next / the coming' + week, weekend, month or year: until that period is over",
            _rx(r"\b(this|next|the coming) (week|weekend|month|year)\b"),
            _safe(lambda m, r: _unit_end(r, m.group(2), 0 if m.group(1).lower() == "this" else 1))),
    Pattern("in_n", "'in' + a count + a unit ('in three weeks'): until that day is over",
            _rx(rf"\bin (?:about |around )?({_NUM_RE}) {_UNIT_RE}\b(?! ago)"),
            _safe(lambda m, r: _add(r, _num(m.group(1)), m.group(2)))),
    Pattern("weekday", "'on / this / next' + a weekday: until that day is over",
            _rx(rf"\b(on|this|next) ({_WEEKDAY_RE})\b"),
            _safe(lambda m, r: _weekday_end(r, m.group(2), m.group(1).lower() == "next"))),
    Pattern("day_word", "today / tonight / tomorrow / the day after tomorrow: until that day is over",
            _rx(r"\b(the day after tomorrow|tomorrow|tonight|today|this (?:morning|afternoon|evening))\b"),
            _safe(lambda m, r: _midnight(r) + timedelta(days={"the day after tomorrow": 3, "tomorrow": 2}.get(
                m.group(1).lower(), 1)))),
    Pattern("year", "'in / by / during' + a year, or 'next year': until that year is over",
            _rx(r"\b(?:in|by|during|before) ((?:19|20)\d\d)\b"),
            _safe(lambda m, r: datetime(int(m.group(1)) + 1, 1, 1, tzinfo=r.tzinfo))),
)


def _until_rel(m: re.Match[str], ref: datetime) -> datetime:
    what, to_end = m.group(2).lower(), bool(m.group(1))
    d = _midnight(ref)
    if what in ("tomorrow", "tonight"):
        return d + timedelta(days=2 if what == "tomorrow" and to_end else 1)
    if what == "the weekend":
        sat = d + timedelta(days=(5 - d.weekday()) % 7)
        return sat + timedelta(days=2) if to_end else sat
    unit = what.split()[-1]
    return _unit_end(ref, unit, 1 if to_end else 0)


def _period_end(ref: datetime, what: str) -> datetime:
    w = what.lower()
    if w in _SEASON_START:
        return _season_end(_season_year(ref, w, "bare"), w, ref.tzinfo)
    if w == "day":
        return _midnight(ref) + timedelta(days=1)
    if w == "holidays":  # the next holiday season of the calendar year: Christmas to New Year
        return datetime(ref.year + 1, 1, 2, tzinfo=ref.tzinfo)
    return _unit_end(ref, w, 0)


def _date_end(m: re.Match[str], ref: datetime) -> datetime | None:
    day, mon = (m.group(1), m.group(2)) if m.group(1) else (m.group(4), m.group(3))
    month = _MONTHS[mon.lower()]
    if m.group(5):
        return datetime(int(m.group(5)), month, int(day), tzinfo=ref.tzinfo) + timedelta(days=1)
    d = datetime(ref.year, month, int(day), tzinfo=ref.tzinfo) + timedelta(days=1)
    return d if d > ref else d.replace(year=ref.year + 1)


def find_ends(text: str, ref: datetime | None) -> list[Bound]:
    """Every expression of ``PATTERNS`` in ``text`` (left to right, non-overlapping; earlier patterns win a
    tie) with the end it gives, read against ``ref``; none without a reference date."""
    if ref is None:
        return []
    perfect = bool(_PERFECT.search(text))
    taken: list[tuple[int, int]] = []
    out: list[Bound] = []
    for p in PATTERNS:
        for m in p.regex.finditer(text):
            s, e = m.span()
            if any(s < b and a < e for a, b in taken):
                continue
            if p.cls == "for_duration" and perfect:
                continue
            end = p.resolve(m, ref)
            if end is None:
                continue
            taken.append((s, e))
            out.append(Bound(text=m.group(0), span=(s, e), end=end, cls=p.cls, bounding=p.bounding))
    return sorted(out, key=lambda b: b.span)


def find_end(text: str, ref: datetime | None) -> Bound | None:
    found = find_ends(text, ref)
    return found[0] if found else None


_BOUNDABLE = frozenset({"constraint", "circumstance", "preference", "belief"})
# An intention said with its date is a plan whatever cue word the kind reader took: "we're planning a road trip
# in August", "we want to relocate in spring 2026", "I'd like to be in Rome by June", "hoping to sell the flat
# next year".
_INTENT = re.compile(r"\b(?:plan(?:ning|s)? (?:a|an|the|our|my|some)\b|(?:want|wants|wanted|would like|'d like|hope|hoping|"
                     r"intend|intending|aim|aiming|mean|meaning) to\b|(?:thinking|dreaming) (?:of|about)\b|"
                     r"(?:I'm|I am|we're|we are|im) (?:off|heading|moving|flying|going)\b)", re.I)
# A past-tense verb of the speaker: what happened, which no date after it turns into a plan.
_SAID_PAST = re.compile(r"\b(?:I|we)\s+(?:(?:just|already|finally|then)\s+)?(?:was|were|did|went|came|saw|met|took|"
                        r"made|left|ran|won|lost|\w{2,}ed)\b", re.I)
_GRAIN_DAYS = {"day": 1, "week": 7}


def _scheduled(text: str, ref: datetime) -> Bound | None:
    """An event dated after the day it was said is an appointment ("I've got my driving test this Friday",
    "the movers come on 3 March"): it holds until that day (week, month, year) is over. Its date comes
    from ``induction.timex``, which reads "on Friday" as the last one and "this / next Friday" by the
    calendar; an event told in the past tense stays what happened."""
    if _SAID_PAST.search(text):
        return None
    day = _midnight(ref)
    ends = find_ends(text, ref)
    for t in find_times(text, ref):
        start = t.start if t.start.tzinfo is not None else t.start.replace(tzinfo=ref.tzinfo)
        if start <= day or _STARTS.search(text[: t.span[0]]):
            continue
        same = next((b for b in ends if b.span[0] < t.span[1] and t.span[0] < b.span[1] and b.end > start), None)
        if same is not None:
            end = same.end
        elif t.granularity in _GRAIN_DAYS:
            end = start + timedelta(days=_GRAIN_DAYS[t.granularity])
        elif t.granularity == "month":
            end = _month_start(start.year, start.month + 1, start.tzinfo)
        else:
            end = datetime(start.year + 1, 1, 1, tzinfo=start.tzinfo)
        return Bound(text=t.text, span=t.span, end=end, cls="scheduled_event", bounding=False)
    return None


# An expression that says when a state *starts* ("starting next week", "from Monday", "as of March") ends nothing.
_STARTS = re.compile(r"\b(?:starting|start|starts|from|beginning|begins|as of|effective|after|since)\s+(?:on\s+|in\s+)?$", re.I)
# The period it is said in: "I'm swamped this week", "the lift is out today" hold for that period.
_CURRENT = re.compile(r"^(?:this (?:week|weekend|month|year|spring|summer|fall|autumn|winter)|today|tonight|"
                      r"this (?:morning|afternoon|evening))$", re.I)
# ... unless the statement says something begins or was decided then ("today I decided to go vegan", "I'm
# starting a new job this month"): a lasting state that opens in the period, not one bounded by it.
_BEGINS = re.compile(r"\b(?:start\w*|begin\w*|began|becom\w+|became|decid\w+|switch\w*|chang\w+|turn\w*|"
                     r"going|gonna|from now on|anymore|any more|no longer)\b", re.I)
_STATES = frozenset({"constraint", "circumstance", "belief"})


def _ends(text: str, ref: datetime) -> list[Bound]:
    """The expressions that can end something said at ``ref``: after it, and not a start ("from Monday")."""
    return [b for b in find_ends(text, ref) if b.end > ref and not _STARTS.search(text[: b.span[0]])]


def valid_to_for(kind: str, text: str, ref: datetime | None) -> Bound | None:
    """The bound that ends a statement of ``kind`` said at ``ref``, if any:

    - a plan (or an intention said with its date, ``_INTENT``): the first expression that ends after ``ref``;
    - a constraint, circumstance, preference or belief: the first *bounding* one ("until", "for the next");
      a constraint, circumstance or belief also ends with the period it is said in ("this week", "today")
      and, said ahead of its date, with that date ("I'm in Leeds next Tuesday", ``_scheduled``);
    - an event: only a date after the day it was said (an appointment, ``_scheduled``);
    - an experience (what happened): nothing.

    An expression that opens a state ("starting next week", "from Monday") ends nothing."""
    if ref is None:
        return None
    ends = _ends(text, ref)
    if kind == "plan" or (kind in _BOUNDABLE and _INTENT.search(text) and not _SAID_PAST.search(text)):
        if ends or kind == "plan":
            return ends[0] if ends else None
    if kind in _BOUNDABLE:
        b = next((b for b in ends if b.bounding), None)
        if b is not None or kind not in _STATES:
            return b
        b = None if _BEGINS.search(text) or _SAID_PAST.search(text) else next(
            (b for b in ends if _CURRENT.match(b.text.strip())), None)
        return b if b is not None else _scheduled(text, ref)
    if kind == "event":
        return _scheduled(text, ref)
    return None


__all__ = ("Bound", "PATTERNS", "Pattern", "find_end", "find_ends", "valid_to_for")
