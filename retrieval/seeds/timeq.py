"""Time expressions in a request -> a date window, resolved against the user's latest session date.

Small on purpose (graph/ sits below induction/, whose timex annotates statements): months with or
without a year, years, "last/this week|month|year", "yesterday", "N days|weeks|months|years ago".
Anything else yields no window and the time route stays silent.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta

_MONTHS = {m: i for i, m in enumerate(("january february march april may june july august september october "
                                        "november december").split(), start=1)}
_MONTHS.update({m[:3]: i for m, i in list(_MONTHS.items())})
_MON = "|".join(sorted(_MONTHS, key=len, reverse=True))
_MONTH_YEAR = re.compile(rf"\b(?:in |during |of )?({_MON})\.?,? ((?:19|20)\d\d)\b", re.I)
_MONTH = re.compile(rf"\b(?:in|during|since|last) ({_MON})\b", re.I)
_YEAR = re.compile(r"\b(?:in|during|of|since) ((?:19|20)\d\d)\b", re.I)
_REL = re.compile(r"\b(last|this|past|previous) (week|weekend|month|year)\b", re.I)
_AGO = re.compile(r"\b(a|an|one|two|three|four|five|six|\d+) (day|week|month|year)s? ago\b", re.I)
_NUM = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}
_DAYS = {"day": 1, "week": 7, "weekend": 7, "month": 31, "year": 366}


def _month_window(y: int, m: int) -> tuple[datetime, datetime]:
    start = datetime(y, m, 1)
    end = datetime(y + (m == 12), m % 12 + 1, 1)
    return start, end


def time_window(query: str, ref: datetime | None) -> tuple[datetime, datetime] | None:
    """Naive-UTC [start, end) named by ``query``, or None.

    >>> time_window("what did she do in May 2023?", None)
    (datetime.datetime(2023, 5, 1, 0, 0), datetime.datetime(2023, 6, 1, 0, 0))
    >>> time_window("where did I go last week", datetime(2024, 3, 15))[0]
    datetime.datetime(2024, 3, 8, 0, 0)
    """
    ref = ref.replace(tzinfo=None) if ref is not None else None
    m = _MONTH_YEAR.search(query)
    if m:
        return _month_window(int(m.group(2)), _MONTHS[m.group(1).lower()])
    m = _YEAR.search(query)
    if m:
        y = int(m.group(1))
        return datetime(y, 1, 1), datetime(y + 1, 1, 1)
    if ref is None:
        return None
    m = _MONTH.search(query)
    if m:
        mo = _MONTHS[m.group(1).lower()]
        y = ref.year if mo <= ref.month else ref.year - 1
        return _month_window(y, mo)
    if re.search(r"\byesterday\b", query, re.I):
        d = datetime(ref.year, ref.month, ref.day) - timedelta(days=1)
        return d, d + timedelta(days=1)
    m = _REL.search(query)
    if m:
        span = timedelta(days=_DAYS[m.group(2).lower()])
        day = datetime(ref.year, ref.month, ref.day)
        return (day - span, day + timedelta(days=1))
    m = _AGO.search(query)
    if m:
        n = _NUM.get(m.group(1).lower()) or int(m.group(1))
        span = timedelta(days=_DAYS[m.group(2).lower()])
        centre = datetime(ref.year, ref.month, ref.day) - n * span
        return centre - span, centre + span
    return None
