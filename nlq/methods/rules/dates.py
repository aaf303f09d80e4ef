"""Dates in the question ('hired before June 21, 2002', 'in March 2010', 'before 2005',
'born in January') compared with a field that stores dates, in the form it stores them.

    detect_dates(q, fields, mentions, witnesses, collection, consumed, used) -> [Filter]

A BSON date compares with a date; an ISO string ('2002-06-21', '2002-06-21 00:00:00')
compares as text, which is date order; a date written with its month's name ('June 21,
2002') only says its month. The date is bound to the date field the words before it name
('hired before' -> `hire_date`), else to the date field most documents hold.
"""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta, timezone

from nlq.methods.rules.ir import Field, Filter, Mention
from nlq.methods.rules.question import Question, word_match
from nlq.methods.rules.vocabulary import DATE_COMPARISONS, MONTHS


_MONTH = r"(?P<month>" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(?P<day>\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>(?:1[89]|20)\d\d)"
# (day, month, year) literals, the fullest first: a day is absent from 'March 2010', a year from 'in January'
DATE_LITERALS = (
    re.compile(r"\b(?P<year>\d{4})-(?P<month>\d{1,2})-(?P<day>\d{1,2})\b"),
    re.compile(r"\b" + _MONTH + r"\s+(?:the\s+)?" + _DAY + r",?\s+(?:of\s+)?" + _YEAR + r"\b", re.I),
    re.compile(r"\b(?:the\s+)?" + _DAY + r"\s+(?:of\s+)?" + _MONTH + r",?\s+(?:of\s+)?" + _YEAR + r"\b", re.I),
    re.compile(r"\b" + _MONTH + r",?\s+(?:of\s+)?" + _YEAR + r"\b", re.I),
    re.compile(r"\b(?:in|during)\s+(?:the\s+month\s+of\s+)?(?P<month>[A-Z][a-z]+)\b(?!\s+\d)"),
)


# A year compared with a date ('hired before 2005'): needs a comparator.
_YEAR_BOUND = re.compile(r"\b(?P<cmp>" + "|".join(c for c, _ in DATE_COMPARISONS) + r")[\s-]+(?:the\s+year\s+(?:of\s+)?)?"
                         + _YEAR + r"\b(?!-\d)")


# Field words that say only that it is a date.
DATE_WORDS = frozenset({"date", "datetime", "time", "day", "dt", "on", "at"})


def detect_dates(q: Question, fields: list[Field], mentions: list[Mention], witnesses: list[dict],
                 collection: str, consumed: set[int], used: set[int], years: bool = False) -> list[Filter]:
    """Filters for the question's unwitnessed date literals (a date stored as said is an
    equality `bind_witnesses` makes), each on the date field it dates; with `years`, for
    the years compared instead ('hired before 2005'), once numeric comparisons had theirs."""
    dated = [f for f in fields if f.dated and f.kind == "scalar"]
    if not dated:
        return []
    witnessed = {str(w.get("term", "")).lower() for w in witnesses
                 if any(m.get("collection") == collection for m in w.get("matches", []))}
    filters = []
    for start, said, end, op, when in date_literals(q):
        span = range(q.word_at(start), q.word_at(end))
        if years != (when[1] is None) or not span or set(span) & consumed or q.text[said:end].lower() in witnessed \
                or any(not m.field.dated and m.start < span[-1] + 1 and span[0] < m.end for m in mentions):
            continue
        at = span[0]
        target = dated_field(q, at, dated, mentions, when, fallback=not years or not any(f.years for f in fields))
        found = date_filters(target, op, when, at) if target is not None else []
        if found:
            filters += found
            consumed.update(span)
            used.update(m.start for m in mentions if m.field is target and abs(m.start - at) <= 4)
    return filters


def date_literals(q: Question) -> list[tuple[int, int, int, str, tuple]]:
    """(character start, where the date starts, end, operator, (year, month, day)) of every
    date said, its comparator first; a part not said is None ('March 2010' has no day,
    'in January' no year, 'before 2005' neither)."""
    found: list[tuple] = []
    taken: list[range] = []
    for rx in DATE_LITERALS:
        for m in rx.finditer(q.text):
            when = _when(m)
            if when is None or any(m.start() in r or m.end() - 1 in r for r in taken):
                continue
            taken.append(range(m.start(), m.end()))
            start, op = _comparator(q.text, m.start())
            found.append((start, m.start(), m.end(), op, when))
    for m in _YEAR_BOUND.finditer(q.text.lower()):
        if not any(m.start("year") in r for r in taken):
            op = dict(DATE_COMPARISONS)[m.group("cmp")]
            found.append((m.start(), m.start("year"), m.end(), op, (int(m.group("year")), None, None)))
    return sorted(found)


def _when(m: re.Match) -> tuple | None:
    """(year, month, day) of a date literal's match, None when it writes no date."""
    groups = m.groupdict()
    month = groups["month"]
    month = int(month) if month.isdigit() else MONTHS.get(month.lower())
    year = int(groups["year"]) if groups.get("year") else None
    day = int(groups["day"]) if groups.get("day") else None
    if month is None or not 1 <= month <= 12:
        return None
    try:
        date(year or 2000, month, day or 1)
    except ValueError:
        return None
    return year, month, day


def _comparator(text: str, start: int) -> tuple[int, str]:
    """(where it starts, operator) of the comparator right before a date, else (start, "$eq")."""
    before = text[max(0, start - 24):start].lower()
    for phrase, op in DATE_COMPARISONS:
        m = re.search(r"\b" + phrase + r"[\s-]+(?:the\s+(?:date\s+(?:of\s+)?)?)?$", before)
        if m is not None:
            return start - (len(before) - m.start()), op
    return start, "$eq"


def dated_field(q: Question, at: int, dated: list[Field], mentions: list[Mention], when: tuple,
                fallback: bool = True) -> Field | None:
    """The date field a date at word `at` dates: one a mention or a word shortly before
    names ('the hire date before', 'hired before'), else (with `fallback`) the one most
    documents hold.
    A month alone fits any date field; a day or a year, only one that stores them in order."""
    fits = [f for f in dated if f.ordered_dates or when[0] is None]
    near = range(max(0, at - 4), at)
    named = [m.field for m in mentions if m.field in fits and (m.end <= at and at - m.end <= 3 or 0 <= m.start - at <= 8)]
    named += [f for f in fits if any(word_match(q.stems[i], w) >= 0.8 for i in near for w in f.words
                                     if w not in DATE_WORDS)]
    pool = named or (fits if fallback else [])
    return max(pool, key=lambda f: (f.present, -len(f.arrays), f.mql)) if pool else None


def date_filters(f: Field, op: str, when: tuple, at: int) -> list[Filter]:
    """The filters comparing `f` with a date (year, month, day) in f's stored form: a span
    from its first instant to the next day's, month's or year's."""
    year, month, day = when
    if year is None:  # a month of any year: 'born in January'
        if op != "$eq" or f.type == "date":
            return []
        name = date(2000, month, 1).strftime("%B")
        pattern = rf"^\d{{4}}-{month:02d}-" if f.date_form in ("day", "time") else name[:3]
        return [Filter(f, "$regex", pattern, at)]
    first, after = _span(year, month, day)
    value = (lambda d: datetime(d.year, d.month, d.day, tzinfo=timezone.utc)) if f.type == "date" else (
        lambda d: _iso(d, year, month, day))
    if day is not None and f.date_form == "day" and op in ("$eq", "$lt", "$gte", "$gt", "$lte"):
        return [Filter(f, op, value(first), at)]  # a stored day compares with the day as said
    if op == "$eq":
        return [Filter(f, "$gte", value(first), at), Filter(f, "$lt", value(after), at)]
    bound = {"$lt": ("$lt", first), "$gte": ("$gte", first), "$gt": ("$gte", after), "$lte": ("$lt", after)}[op]
    return [Filter(f, bound[0], value(bound[1]), at)]


def _span(year: int, month: int | None, day: int | None) -> tuple[date, date]:
    """The first day of a year, month or day, and the first day after it."""
    if month is None:
        return date(year, 1, 1), date(year + 1, 1, 1)
    if day is None:
        return date(year, month, 1), date(year + (month == 12), month % 12 + 1, 1)
    first = date(year, month, day)
    return first, first + timedelta(days=1)


def _iso(d: date, year: int, month: int | None, day: int | None) -> str:
    """An ISO string for a bound: as long as the date said is precise ('2005', '2010-03', '2002-06-21')."""
    if month is None:
        return f"{d.year:04d}"
    if day is None:
        return f"{d.year:04d}-{d.month:02d}"
    return d.isoformat()
