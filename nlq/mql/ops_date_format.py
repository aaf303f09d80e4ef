"""Date text: $dateToString (format specifiers, timezone offsets) and
$dateFromString (formats, ISO 8601 and the server's lenient forms).

Manual: https://www.mongodb.com/docs/manual/reference/operator/aggregation/dateToString/
and https://www.mongodb.com/docs/manual/reference/operator/aggregation/dateFromString/
"""

from __future__ import annotations

import datetime as _dt
import functools
import re

from nlq.errors import ExecutionError
from nlq.mql import registry
from nlq.mql.expressions import compile_named
from nlq.mql.ops_date import (MONTHS, check_year, compile_zone, day_of_week, from_local, timezone, to_date, to_local,
                              utc_offset, week_of_year, zone_info)
from nlq.mql.registry import EXPRESSION
from nlq.mql.values import MISSING, UTC, bson_type, is_nullish

# ---------------------------------------------------------------- $dateToString

_ISO_Z = "%Y-%m-%dT%H:%M:%S.%LZ"
_ISO = "%Y-%m-%dT%H:%M:%S.%L"


def _fmt_offset_hhmm(off: _dt.timedelta) -> str:
    minutes = int(off.total_seconds()) // 60
    sign = "-" if minutes < 0 else "+"
    minutes = abs(minutes)
    return f"{sign}{minutes // 60:02d}{minutes % 60:02d}"


def _fmt_offset_minutes(off: _dt.timedelta) -> str:
    # the manual's own example output: "270" for +04:30, "-300" for America/New_York in winter
    minutes = int(off.total_seconds()) // 60
    return str(minutes)


# Specifiers computed by a function (the plain numeric ones are template fields, see _TEMPLATE).
_SPECIFIERS = {
    "j": lambda d, o: f"{d.timetuple().tm_yday:03d}",
    "w": lambda d, o: str(day_of_week(d)),
    "u": lambda d, o: str(d.isoweekday()),
    "U": lambda d, o: f"{week_of_year(d):02d}",
    "V": lambda d, o: f"{d.isocalendar()[1]:02d}",
    "G": lambda d, o: f"{d.isocalendar()[0]:04d}",
    "z": lambda d, o: _fmt_offset_hhmm(o),
    "Z": lambda d, o: _fmt_offset_minutes(o),
    "b": lambda d, o: MONTHS[d.month - 1][:3],
    "B": lambda d, o: MONTHS[d.month - 1],
}


_TEMPLATE = {"Y": "{0.year:04d}", "m": "{0.month:02d}", "d": "{0.day:02d}", "H": "{0.hour:02d}",
             "M": "{0.minute:02d}", "S": "{0.second:02d}", "L": "{1:03d}"}


class DateFormat:
    """A compiled `$dateToString` format: one `str.format` template; the specifiers that
    need computing (%j %U %V %z ...) fill positional slots."""

    __slots__ = ("template", "computed", "needs_offset")

    def __init__(self, template: str, computed: tuple, needs_offset: bool):
        self.template, self.computed, self.needs_offset = template, computed, needs_offset

    def render(self, local: _dt.datetime, off: _dt.timedelta | None) -> str:
        extra = [f(local, off) for f in self.computed] if self.computed else ()
        return self.template.format(local, local.microsecond // 1000, extra)


def _format_tokens(fmt: str):
    """The pieces of a date format string, in order: `(character, None)` for a literal
    character (`%%` is a literal '%'), `(None, letter)` for a `%letter` specifier."""
    i, n = 0, len(fmt)
    while i < n:
        c = fmt[i]
        if c != "%":
            yield c, None
            i += 1
            continue
        if i + 1 >= n:
            raise ExecutionError("Unmatched '%' at end of format string", code=18535)
        spec = fmt[i + 1]
        yield ("%", None) if spec == "%" else (None, spec)
        i += 2


def _invalid_specifier(spec: str) -> ExecutionError:
    return ExecutionError(f"Invalid format character '%{spec}' in format string", code=18536)


@functools.lru_cache(maxsize=256)
def compile_format(fmt: str) -> DateFormat:
    """Compile a date format string (MongoDB's specifiers; errors for unknown ones)."""
    out: list[str] = []
    computed: list = []
    needs_offset = False
    for c, spec in _format_tokens(fmt):
        if spec is None:
            out.append("{{" if c == "{" else "}}" if c == "}" else c)
        elif spec in _TEMPLATE:
            out.append(_TEMPLATE[spec])
        elif spec in _SPECIFIERS:
            out.append("{2[%d]}" % len(computed))
            computed.append(_SPECIFIERS[spec])
            needs_offset = needs_offset or spec in "zZ"
        else:
            raise _invalid_specifier(spec)
    return DateFormat("".join(out), tuple(computed), needs_offset)


def format_date(d: _dt.datetime, fmt: DateFormat, tz) -> str:
    local = to_local(d, tz)
    check_year(local, "$dateToString")
    return fmt.render(local, utc_offset(d, tz) if fmt.needs_offset else None)


@registry.implements(EXPRESSION, "$dateToString")
def _date_to_string(args):
    op = "$dateToString"
    named = compile_named(args, name=op, required=("date",), optional=("format", "timezone", "onNull"))
    date_fn = named["date"]
    on_null = named.get("onNull")
    zone = compile_zone(named.get("timezone"), op)
    fmt_spec = args.get("format", MISSING)
    const_fmt = None
    if fmt_spec is not MISSING and type(fmt_spec) is str and not fmt_spec.startswith("$"):
        const_fmt = compile_format(fmt_spec)
    fmt_fn = named.get("format")

    def date_to_string(vars):
        v = date_fn(vars)
        if is_nullish(v):
            return on_null(vars) if on_null is not None else None
        tz = zone(vars)
        if tz is MISSING:
            return None
        if const_fmt is not None:
            parts = const_fmt
        elif fmt_fn is None:
            parts = compile_format(_default_format(tz))
        else:
            f = fmt_fn(vars)
            if is_nullish(f):
                return None
            if type(f) is not str:
                raise ExecutionError(f"{op} requires that 'format' be a string, found: {bson_type(f)} with value "
                                     f"{f!r}", code=18533)
            parts = compile_format(f)
        return format_date(to_date(v, op), parts, tz)
    return date_to_string


def _default_format(tz) -> str:
    """Manual: without `format`, a non-UTC timezone gives "%Y-%m-%dT%H:%M:%S.%L", UTC gives "...%LZ"."""
    return _ISO_Z if tz is UTC else _ISO


# ---------------------------------------------------------------- $dateFromString

_FROM_SPECS = {
    "Y": r"(?P<Y>\d{1,4})", "m": r"(?P<m>\d{1,2})", "d": r"(?P<d>\d{1,2})", "H": r"(?P<H>\d{1,2})",
    "M": r"(?P<M>\d{1,2})", "S": r"(?P<S>\d{1,2})", "L": r"(?P<L>\d{1,3})", "j": r"(?P<j>\d{1,3})",
    "G": r"(?P<G>\d{1,4})", "V": r"(?P<V>\d{1,2})", "u": r"(?P<u>\d)", "w": r"(?P<w>\d)",
    "U": r"(?P<U>\d{1,2})", "z": r"(?P<z>[+-]\d{2}:?\d{2}|Z)", "Z": r"(?P<Z>[+-]?\d{1,4})",
    "b": r"(?P<b>[A-Za-z]{3})", "B": r"(?P<B>[A-Za-z]+)",
}


@functools.lru_cache(maxsize=256)
def _parse_format(fmt: str) -> re.Pattern:
    out = []
    seen = set()
    for c, spec in _format_tokens(fmt):
        if spec is None:
            out.append(re.escape(c))
        elif spec in _FROM_SPECS and spec not in seen:
            out.append(_FROM_SPECS[spec])
            seen.add(spec)
        elif spec in _FROM_SPECS:
            out.append(r"\d+")
        else:
            raise _invalid_specifier(spec)
    return re.compile("".join(out) + r"\Z", re.IGNORECASE)


_ISO_PARSE = re.compile(
    r"^\s*(?P<Y>\d{4})-(?P<m>\d{1,2})-(?P<d>\d{1,2})"
    r"(?:[T ](?P<H>\d{1,2}):(?P<M>\d{2})(?::(?P<S>\d{2})(?:\.(?P<frac>\d+))?)?)?"
    r"\s*(?P<tz>Z|[+-]\d{2}(?::?\d{2})?|UTC|GMT|[A-Za-z]+/[A-Za-z_/+-]+)?\s*$")
_SLASH_PARSE = re.compile(
    r"^\s*(?:(?P<Y>\d{4})/(?P<m>\d{1,2})/(?P<d>\d{1,2})|(?P<m2>\d{1,2})/(?P<d2>\d{1,2})/(?P<Y2>\d{4}))"
    r"(?:[T ](?P<H>\d{1,2}):(?P<M>\d{2})(?::(?P<S>\d{2})(?:\.(?P<frac>\d+))?)?)?\s*$")
_NAME_PARSE = re.compile(
    r"^\s*(?:(?P<B>[A-Za-z]+)\.?\s+(?P<d>\d{1,2})(?:st|nd|rd|th)?,?\s+(?P<Y>\d{4})"
    r"|(?P<d2>\d{1,2})\s+(?P<B2>[A-Za-z]+)\.?,?\s+(?P<Y2>\d{4}))"
    r"(?:[T ,]\s*(?P<H>\d{1,2}):(?P<M>\d{2})(?::(?P<S>\d{2})(?:\.(?P<frac>\d+))?)?)?\s*$")


def _month_number(name: str) -> int | None:
    low = name.lower()
    for i, full in enumerate(MONTHS):
        f = full.lower()
        if low == f or (len(low) >= 3 and f.startswith(low)) or (low == "sept" and i == 8):
            return i + 1
    return None


class _ParseFailure(Exception):
    pass


def _parse_offset(text: str) -> _dt.timedelta:
    if text in ("Z", "UTC", "GMT"):
        return _dt.timedelta(0)
    sign = -1 if text[0] == "-" else 1
    digits = text[1:].replace(":", "")
    hh, mm = int(digits[:2]), int(digits[2:4] or 0)
    return sign * _dt.timedelta(hours=hh, minutes=mm)


def _build(y, mo, d, h=0, mi=0, s=0, ms=0) -> _dt.datetime:
    try:
        return _dt.datetime(y, mo, d, h, mi, s, ms * 1000)
    except ValueError as exc:
        raise _ParseFailure(str(exc)) from None


def parse_date_string(s: str, fmt: str | None):
    """Parse a date string. Returns (naive wall time, embedded tzinfo-or-None)."""
    if fmt is None:
        m = _ISO_PARSE.match(s)
        if m:
            g = m.groupdict()
            frac = (g["frac"] or "0")[:3].ljust(3, "0")
            local = _build(int(g["Y"]), int(g["m"]), int(g["d"]), int(g["H"] or 0), int(g["M"] or 0),
                           int(g["S"] or 0), int(frac))
            tz = g["tz"]
            if tz is None:
                return local, None
            if "/" in tz:
                zone = zone_info(tz)
                if zone is None:
                    raise _ParseFailure(f"unrecognized time zone identifier \"{tz}\"")
                return local, zone
            return local, _dt.timezone(_parse_offset(tz))
        for pattern in (_SLASH_PARSE, _NAME_PARSE):
            m = pattern.match(s)
            if m:
                g = m.groupdict()
                y = g.get("Y") or g.get("Y2")
                d = g.get("d") or g.get("d2")
                if "B" in g:
                    mo = _month_number(g["B"] or g["B2"])
                    if mo is None:
                        raise _ParseFailure("The timezone could not be found in the database")
                else:
                    mo = int(g["m"] or g["m2"])
                frac = (g["frac"] or "0")[:3].ljust(3, "0")
                return _build(int(y), int(mo), int(d), int(g["H"] or 0), int(g["M"] or 0), int(g["S"] or 0),
                              int(frac)), None
        raise _ParseFailure("Unexpected character or incomplete date")
    m = _parse_format(fmt).match(s)
    if m is None:
        raise _ParseFailure(f"the date string does not match the format \"{fmt}\"")
    g = {k: v for k, v in m.groupdict().items() if v is not None}
    h, mi, sec = int(g.get("H", 0)), int(g.get("M", 0)), int(g.get("S", 0))
    ms = int(g["L"].ljust(3, "0")) if "L" in g else 0
    if "G" in g or "V" in g or "u" in g:
        if "G" not in g:
            raise _ParseFailure("an incomplete date/time string has been found, with elements missing: \"year\"")
        try:
            day = _dt.date.fromisocalendar(int(g["G"]), int(g.get("V", 1)), int(g.get("u", 1)))
        except ValueError as exc:
            raise _ParseFailure(str(exc)) from None
        local = _build(day.year, day.month, day.day, h, mi, sec, ms)
    else:
        missing = [name for key, name in (("Y", "year"),) if key not in g]
        month = g.get("m")
        if month is None and ("b" in g or "B" in g):
            month = _month_number(g.get("b") or g.get("B"))
            if month is None:
                raise _ParseFailure("unknown month name")
        if "j" in g and "Y" in g:
            base = _build(int(g["Y"]), 1, 1, h, mi, sec, ms)
            local = base + _dt.timedelta(days=int(g["j"]) - 1)
            if local.year != base.year:
                raise _ParseFailure("day of year out of range")
        else:
            if month is None:
                missing.append("month")
            if "d" not in g:
                missing.append("day")
            if missing:
                raise _ParseFailure("an incomplete date/time string has been found, with elements missing: "
                                    + ", ".join(f'"{x}"' for x in missing))
            local = _build(int(g["Y"]), int(month), int(g["d"]), h, mi, sec, ms)
    if "z" in g:
        return local, _dt.timezone(_parse_offset(g["z"]))
    if "Z" in g:
        return local, _dt.timezone(_dt.timedelta(minutes=int(g["Z"])))  # "270", "+270" or "-300"
    return local, None


@registry.implements(EXPRESSION, "$dateFromString")
def _date_from_string(args):
    op = "$dateFromString"
    named = compile_named(args, name=op, required=("dateString",),
                          optional=("format", "timezone", "onError", "onNull"))
    s_fn = named["dateString"]
    fmt_fn = named.get("format")
    tz_fn = named.get("timezone")
    on_error, on_null = named.get("onError"), named.get("onNull")
    if fmt_fn is not None and type(args["format"]) is str and not args["format"].startswith("$"):
        _parse_format(args["format"])  # invalid specifiers fail at compile time, as in MongoDB

    def date_from_string(vars):
        s = s_fn(vars)
        if is_nullish(s):
            return on_null(vars) if on_null is not None else None
        fmt = None
        if fmt_fn is not None:
            fmt = fmt_fn(vars)
            if is_nullish(fmt):
                return None
            if type(fmt) is not str:
                raise ExecutionError(f"{op}: format requires a string, found: {bson_type(fmt)}", code=40684)
        tz = UTC
        if tz_fn is not None:
            tzv = tz_fn(vars)
            if is_nullish(tzv):
                return None
            tz = timezone(tzv, op)
        if type(s) is not str:
            if on_error is not None:
                return on_error(vars)
            raise ExecutionError(f"{op} requires that 'dateString' be a string, found: {bson_type(s)} with value "
                                 f"{s!r}", code=241)
        try:
            local, embedded = parse_date_string(s, fmt)
        except _ParseFailure as exc:
            if on_error is not None:
                return on_error(vars)
            raise ExecutionError(f"Error parsing date string '{s}'; {exc}", code=241) from None
        if embedded is not None:
            if tz_fn is not None:
                if on_error is not None:
                    return on_error(vars)
                raise ExecutionError(f"{op}: you cannot pass in a date/time string with time zone information "
                                     f"('{s}') together with a timezone argument", code=40554)
            tz = embedded
        try:
            return from_local(local, tz)
        except (OverflowError, ValueError):
            if on_error is not None:
                return on_error(vars)
            raise ExecutionError(f"Error parsing date string '{s}'; date out of range", code=241) from None
    return date_from_string


__all__ = ["compile_format", "format_date", "parse_date_string"]
