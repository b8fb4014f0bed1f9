"""Resolve simple English time expressions against a reference date (the session date).

Covers what dialogue mostly says: yesterday / today / tomorrow / tonight, ``N days|weeks|months|years
ago``, ``last|this|next week|month|year|weekend|<weekday>``, ``in 2018``, ``in May 2023``,
``on 8 May``, ``May 8, 2023``. Anything else is left unresolved rather than guessed.

    >>> from datetime import datetime
    >>> r = resolve_first("I went there yesterday", datetime(2023, 5, 8))
    >>> r.text, r.start.date().isoformat(), r.label
    ('yesterday', '2023-05-07', '7 May 2023')
"""

from __future__ import annotations

import calendar
import re
from datetime import datetime, timedelta
from typing import Literal

from pydantic import BaseModel, ConfigDict

Granularity = Literal["day", "week", "month", "year"]

_NUM = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
        "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "a couple of": 2, "couple of": 2, "a few": 3, "few": 3,
        "several": 3}
_MONTHS = {m.lower(): i for i, m in enumerate(calendar.month_name) if m} | {
    m.lower(): i for i, m in enumerate(calendar.month_abbr) if m}
_WEEKDAYS = {d.lower(): i for i, d in enumerate(calendar.day_name)}
_MONTH_RE = "|".join(sorted((m for m in _MONTHS if len(m) > 3 or m in ("may",)), key=len, reverse=True))
_NUM_RE = r"\d+|a couple of|couple of|a few|few|several|an|a|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve"

_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("ago", re.compile(rf"\b({_NUM_RE})\s+(day|week|month|year)s?\s+ago\b", re.I)),
    ("in_n", re.compile(rf"\bin\s+({_NUM_RE})\s+(day|week|month|year)s?\b", re.I)),
    ("rel", re.compile(r"\b(last|this|next|past|coming)\s+(week|weekend|month|year|summer|winter|spring|fall|autumn|"
                       r"monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b", re.I)),
    ("day", re.compile(r"\b(yesterday|today|tonight|tomorrow|this morning|this afternoon|this evening|last night)\b", re.I)),
    ("dmy", re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+({_MONTH_RE})\.?,?\s+(\d{{4}})\b", re.I)),
    ("mdy", re.compile(rf"\b({_MONTH_RE})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b", re.I)),
    ("my", re.compile(rf"\b(?:in\s+)?({_MONTH_RE})\s+(?:of\s+)?(\d{{4}})\b", re.I)),
    ("dm", re.compile(rf"\b(?:on\s+)?(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({_MONTH_RE})\b", re.I)),
    ("md", re.compile(rf"\b(?:on\s+)({_MONTH_RE})\s+(\d{{1,2}})(?:st|nd|rd|th)?\b", re.I)),
    ("year", re.compile(r"\b(?:in|since|during|back in|from|of)\s+((?:19|20)\d{2})\b", re.I)),
    ("on_wd", re.compile(r"\bon\s+(monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b", re.I)),
]
_SEASON_MONTH = {"spring": 3, "summer": 6, "fall": 9, "autumn": 9, "winter": 12}


class TimeRef(BaseModel):
    model_config = ConfigDict(frozen=True)
    text: str
    span: tuple[int, int]
    start: datetime
    granularity: Granularity
    relative: bool

    @property
    def label(self) -> str:
        if self.granularity == "day":
            return f"{self.start.day} {calendar.month_name[self.start.month]} {self.start.year}"
        if self.granularity == "week":
            return f"the week of {self.start.day} {calendar.month_name[self.start.month]} {self.start.year}"
        if self.granularity == "month":
            return f"{calendar.month_name[self.start.month]} {self.start.year}"
        return str(self.start.year)

    @property
    def iso(self) -> str:
        return {"day": self.start.strftime("%Y-%m-%d"), "week": self.start.strftime("%Y-%m-%d"),
                "month": self.start.strftime("%Y-%m"), "year": self.start.strftime("%Y")}[self.granularity]


def _n(word: str) -> int:
    w = word.lower()
    return int(w) if w.isdigit() else _NUM.get(w, 1)


def _add_months(d: datetime, months: int) -> datetime:
    y, m = divmod(d.month - 1 + months, 12)
    return d.replace(year=d.year + y, month=m + 1, day=1)


def _shift(ref: datetime, n: int, unit: str) -> tuple[datetime, Granularity]:
    if unit == "day":
        return ref + timedelta(days=n), "day"
    if unit == "week":
        d = ref + timedelta(weeks=n)
        return d - timedelta(days=d.weekday()), "week"
    if unit == "month":
        return _add_months(ref, n), "month"
    return ref.replace(year=ref.year + n, month=1, day=1), "year"


def _day(ref: datetime) -> datetime:
    return ref.replace(hour=0, minute=0, second=0, microsecond=0)


def _resolve(kind: str, m: re.Match[str], ref: datetime) -> tuple[datetime, Granularity, bool] | None:
    g = [x.lower() if x else x for x in m.groups()]
    ref = _day(ref)
    if kind == "ago":
        d, gran = _shift(ref, -_n(g[0]), g[1])
        return d, gran, True
    if kind == "in_n":
        d, gran = _shift(ref, _n(g[0]), g[1])
        return d, gran, True
    if kind == "day":
        off = {"yesterday": -1, "last night": -1, "tomorrow": 1}.get(g[0], 0)
        return ref + timedelta(days=off), "day", True
    if kind == "rel":
        which, unit = g
        step = {"last": -1, "past": -1, "this": 0, "next": 1, "coming": 1}[which]
        if unit in _WEEKDAYS:
            delta = _WEEKDAYS[unit] - ref.weekday()
            if step < 0:
                delta = delta - 7 if delta >= 0 else delta
            elif step > 0:
                delta = delta + 7 if delta <= 0 else delta
            return ref + timedelta(days=delta), "day", True
        if unit == "weekend":
            sat = ref + timedelta(days=(5 - ref.weekday()) + 7 * step)
            if step < 0 and ref.weekday() >= 5:
                sat = ref - timedelta(days=ref.weekday() - 5 + 7)
            return sat, "day", True
        if unit in _SEASON_MONTH:
            year = ref.year + step
            return ref.replace(year=year, month=_SEASON_MONTH[unit], day=1), "month", True
        d, gran = _shift(ref, step, unit)
        return d, gran, True
    if kind == "dmy":
        return _mk(int(g[2]), _MONTHS[g[1]], int(g[0]), "day")
    if kind == "mdy":
        return _mk(int(g[2]), _MONTHS[g[0]], int(g[1]), "day")
    if kind == "my":
        return _mk(int(g[1]), _MONTHS[g[0]], 1, "month")
    if kind in ("dm", "md"):
        day, mon = (int(g[0]), _MONTHS[g[1]]) if kind == "dm" else (int(g[1]), _MONTHS[g[0]])
        r = _mk(ref.year, mon, day, "day")
        return (r[0], r[1], True) if r else None
    if kind == "year":
        return datetime(int(g[0]), 1, 1), "year", False
    if kind == "on_wd":
        delta = _WEEKDAYS[g[0]] - ref.weekday()
        return ref + timedelta(days=delta - 7 if delta > 0 else delta), "day", True
    return None


def _mk(y: int, mon: int, d: int, gran: Granularity) -> tuple[datetime, Granularity, bool] | None:
    try:
        return datetime(y, mon, d), gran, False
    except ValueError:
        return None


def find_times(text: str, ref: datetime | None) -> list[TimeRef]:
    """All resolvable expressions, left to right, non-overlapping (earlier patterns win a tie).
    Without a reference date only absolute expressions resolve."""
    taken: list[tuple[int, int]] = []
    out: list[TimeRef] = []
    for kind, pat in _PATTERNS:
        for m in pat.finditer(text):
            s, e = m.span()
            if any(s < b and a < e for a, b in taken):
                continue
            if ref is None and kind not in ("dmy", "mdy", "my", "year"):
                continue
            if kind in ("my", "dm", "md", "dmy", "mdy") and re.search(r"\bmay\b", m.group(0)):
                continue  # lower-case "may" is the modal verb ("2 may be enough"); the month is written "May"
            r = _resolve(kind, m, ref or datetime(1970, 1, 1))
            if r is None:
                continue
            taken.append((s, e))
            out.append(TimeRef(text=m.group(0), span=(s, e), start=r[0], granularity=r[1], relative=r[2]))
    return sorted(out, key=lambda t: t.span)


def resolve_first(text: str, ref: datetime | None) -> TimeRef | None:
    found = find_times(text, ref)
    return found[0] if found else None


def annotate(text: str, refs: list[TimeRef]) -> str:
    """Insert the resolved date after each relative expression: ``yesterday`` -> ``yesterday (7 May 2023)``."""
    out, last = [], 0
    for r in refs:
        if not r.relative:
            continue
        s, e = r.span
        out.append(text[last:e] + f" ({r.label})")
        last = e
    out.append(text[last:])
    return "".join(out)


def parse_iso_time(value: str | None) -> tuple[datetime, Granularity] | None:
    """``2023-05-07`` / ``2023-05`` / ``2023`` (what the LLM extractor is asked to return)."""
    if not value:
        return None
    v = value.strip()
    for fmt, gran in (("%Y-%m-%d", "day"), ("%Y-%m", "month"), ("%Y", "year")):
        try:
            return datetime.strptime(v[:len(datetime(2000, 1, 1).strftime(fmt))], fmt), gran  # type: ignore[return-value]
        except ValueError:
            continue
    return None
