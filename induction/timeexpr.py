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

_NUM = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
        "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "a couple of": 2, "couple of": 2, "a few": 3, "few": 3,
        "several": 3, "a couple": 2}
_NUM_RE = (r"\d+|a couple(?: of)?|couple of|a few|few|several|an|a|one|two|three|four|five|six|seven|eight|nine|ten|"
           r"eleven|twelve")
_UNIT_RE = r"(day|week|month|year)s?"
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
    Pattern("until_end_of", "'until / till / through the end of' + a period (semester, term, month, year, week, "
            "summer, …): the state holds until that period is over",
            _rx(rf"\b(?:until|till|til|through|to) the end of (?:the |this |my )?(semester|term|school year|month|year|week|"
                rf"{_SEASON_RE})\b"),
            _safe(lambda m, r: _semester_end(r) if m.group(1).lower() in ("semester", "term", "school year")
                  else _season_end(_season_year(r, m.group(1).lower(), "bare"), m.group(1).lower(), r.tzinfo)
                  if m.group(1).lower() in _SEASON_START else _unit_end(r, m.group(1), 0)), True),
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


_BOUNDABLE = frozenset({"constraint", "circumstance", "preference"})


def valid_to_for(kind: str, text: str, ref: datetime | None) -> Bound | None:
    """The bound that ends a statement of ``kind`` said at ``ref``, if any: for a plan the first expression
    that ends after ``ref``, for a constraint, circumstance or preference the first *bounding* one; nothing
    for what happened (an event, an experience) or a belief."""
    if kind == "plan":
        return next((b for b in find_ends(text, ref) if ref is not None and b.end > ref), None)
    if kind in _BOUNDABLE:
        return next((b for b in find_ends(text, ref) if b.bounding and ref is not None and b.end > ref), None)
    return None


__all__ = ("Bound", "PATTERNS", "Pattern", "find_end", "find_ends", "valid_to_for")
