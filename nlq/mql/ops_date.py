"""Date expression operators: field extractors ($year ... $isoDayOfWeek),
$dateFromParts, $dateToParts, $dateAdd, $dateSubtract, $dateDiff and
$dateTrunc, with the `timezone` argument (Olson names via zoneinfo, or UTC
offsets "+HH:MM", "+HHMM", "+HH"); the timestamp parts $tsSecond and
$tsIncrement. Date text ($dateToString, $dateFromString) is in ops_date_format.

Dates are timezone-aware UTC datetimes with millisecond precision; local
arithmetic happens on naive wall-clock datetimes which are converted back to
UTC. Manual: https://www.mongodb.com/docs/manual/reference/operator/aggregation/#date-expression-operators
"""

from __future__ import annotations

import calendar
import datetime as _dt
import functools
import re
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from bson.decimal128 import Decimal128
from bson.int64 import Int64
from bson.objectid import ObjectId
from bson.timestamp import Timestamp

from nlq.errors import ExecutionError
from nlq.mql import registry
from nlq.mql.expressions import compile_expression, compile_named, unary_operator
from nlq.mql.registry import EXPRESSION
from nlq.mql.values import MISSING, UTC, bson_type, is_nullish

_NAIVE_EPOCH = _dt.datetime(1970, 1, 1)
_REF = _dt.datetime(2000, 1, 1)  # $dateTrunc's reference instant (local wall time)
_REF_UTC = _dt.datetime(2000, 1, 1, tzinfo=UTC)
_REF_UTC_MS = 946_684_800_000
_EPOCH_UTC = _dt.datetime(1970, 1, 1, tzinfo=UTC)
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September",
           "October", "November", "December"]
UNITS = ("year", "quarter", "month", "week", "day", "hour", "minute", "second", "millisecond")
_FIXED_MS = {"week": 7 * 86_400_000, "day": 86_400_000, "hour": 3_600_000, "minute": 60_000,
             "second": 1000, "millisecond": 1}
_DAYS = {"monday": 1, "tuesday": 2, "wednesday": 3, "thursday": 4, "friday": 5, "saturday": 6, "sunday": 7}


# ---------------------------------------------------------------- conversions


def to_date(value, op: str) -> _dt.datetime:
    """A date operand: a date, a Timestamp (its seconds) or an ObjectId (its creation time)."""
    if isinstance(value, _dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        return value
    if isinstance(value, Timestamp):
        return _dt.datetime.fromtimestamp(value.time, UTC)
    if isinstance(value, ObjectId):
        return value.generation_time
    raise ExecutionError(f"{op}: can't convert from BSON type {bson_type(value)} to Date", code=16006)


_OFFSET_RE = re.compile(r"^([+-])(\d{2})(?::?(\d{2}))?$")


@functools.lru_cache(maxsize=512)
def zone_info(name: str):
    if name in ("UTC", "GMT", "Z", "utc"):
        return UTC
    m = _OFFSET_RE.match(name)
    if m:
        sign, hh, mm = m.group(1), int(m.group(2)), int(m.group(3) or 0)
        if mm >= 60:
            return None
        delta = _dt.timedelta(hours=hh, minutes=mm)
        if delta >= _dt.timedelta(hours=24):  # "+99:00" is no time zone
            return None
        return _dt.timezone(-delta if sign == "-" else delta)
    try:
        if name.startswith("/") or ".." in name or not name:
            raise ValueError(name)
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        return None


def timezone(value, op: str):
    """The tzinfo of a `timezone` argument value (an Olson name or a UTC offset)."""
    if type(value) is not str:
        raise ExecutionError(f"{op}: timezone must evaluate to a string, found {bson_type(value)}", code=40517)
    tz = zone_info(value)
    if tz is None:
        raise ExecutionError(f"{op}: unrecognized time zone identifier: \"{value}\"", code=40485)
    return tz


def to_local(d: _dt.datetime, tz) -> _dt.datetime:
    """The naive wall-clock time of instant `d` in `tz` (milliseconds kept, microseconds dropped)."""
    if tz is UTC or tz is None:
        local = d.astimezone(UTC) if d.tzinfo is not UTC else d
    else:
        try:
            local = d.astimezone(tz)
        except OverflowError:
            raise _out_of_range(d) from None
    us = local.microsecond
    if us % 1000:
        return local.replace(tzinfo=None, microsecond=us - us % 1000)
    return local.replace(tzinfo=None)


def from_local(local: _dt.datetime, tz) -> _dt.datetime:
    """The UTC instant whose wall-clock time in `tz` is `local` (naive)."""
    if tz is UTC or tz is None:
        return local.replace(tzinfo=UTC)
    try:
        return local.replace(tzinfo=tz).astimezone(UTC)
    except OverflowError:
        raise _out_of_range(local) from None


def utc_offset(d: _dt.datetime, tz) -> _dt.timedelta:
    if tz is UTC or tz is None:
        return _dt.timedelta(0)
    try:
        return d.astimezone(tz).utcoffset()
    except OverflowError:
        raise _out_of_range(d) from None


def _out_of_range(d: _dt.datetime) -> ExecutionError:
    """A date whose local time in a time zone falls outside the years 1-9999 Python dates hold."""
    return ExecutionError(f"the date {d.isoformat()} shifted to the time zone falls outside the years 1 to 9999 "
                          f"that the embedded engine can represent")


def _ms(local: _dt.datetime) -> int:
    delta = local - _NAIVE_EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000


def check_year(d: _dt.datetime, op: str) -> None:
    if d.year < 0 or d.year > 9999:
        raise ExecutionError(f"{op} is only defined on year 0-9999, tried to use year {d.year}", code=18537)


def _integer(value, op: str, name: str) -> int:
    t = type(value)
    n = None
    if t is int or t is Int64:
        n = int(value)
    elif t is float and value == value and abs(value) != float("inf") and value == int(value):
        n = int(value)
    elif t is Decimal128:
        dec = value.to_decimal()
        if dec.is_finite() and dec == dec.to_integral_value():
            n = int(dec)
    if n is not None and -2**63 <= n < 2**63:  # MongoDB reads these as 64-bit integers
        return n
    shown = value if t is not str else f'"{value}"'
    raise ExecutionError(f"{op}: '{name}' must evaluate to an integer, found {bson_type(value)} with value {shown}",
                         code=40515)


# ---------------------------------------------------------------- calendar pieces


def week_of_year(local: _dt.datetime) -> int:
    """`$week`: weeks start on Sunday; days before the year's first Sunday are week 0."""
    yday0 = local.timetuple().tm_yday - 1
    dow0 = local.isoweekday() % 7  # Sunday = 0
    return (yday0 - dow0 + 7) // 7


def day_of_week(local: _dt.datetime) -> int:
    """`$dayOfWeek`: 1 (Sunday) to 7 (Saturday)."""
    return local.isoweekday() % 7 + 1


_EXTRACTORS = {
    "$year": lambda d: d.year,
    "$month": lambda d: d.month,
    "$dayOfMonth": lambda d: d.day,
    "$hour": lambda d: d.hour,
    "$minute": lambda d: d.minute,
    "$second": lambda d: d.second,
    "$millisecond": lambda d: d.microsecond // 1000,
    "$dayOfWeek": day_of_week,
    "$dayOfYear": lambda d: d.timetuple().tm_yday,
    "$week": week_of_year,
    "$isoWeek": lambda d: d.isocalendar()[1],
    "$isoWeekYear": lambda d: d.isocalendar()[0],
    "$isoDayOfWeek": lambda d: d.isoweekday(),
}


def _date_and_zone(args, op: str):
    """Compile the operand of an extractor: `<date>`, `[<date>]` or `{date, timezone}`."""
    if type(args) is dict and args and not next(iter(args)).startswith("$"):
        named = compile_named(args, name=op, required=("date",), optional=("timezone",))
        return named["date"], named.get("timezone")
    if type(args) is list:
        if len(args) != 1:
            raise ExecutionError(f"expression {op} takes exactly 1 arguments. {len(args)} were passed in.",
                                 code=16020)
        args = args[0]
    return compile_expression(args), None


def compile_zone(tz_fn, op: str):
    """fn(vars) -> tzinfo | MISSING (MISSING when the timezone evaluates to null/missing)."""
    if tz_fn is None:
        return lambda vars: UTC
    def zone(vars):
        v = tz_fn(vars)
        return MISSING if is_nullish(v) else timezone(v, op)
    return zone


def _extractor(op: str):
    extract = _EXTRACTORS[op]

    def compile_(args):
        date_fn, tz_fn = _date_and_zone(args, op)
        if tz_fn is None:
            def extract_utc(vars):
                v = date_fn(vars)
                if v is None or v is MISSING:
                    return None
                if type(v) is _dt.datetime and v.tzinfo is UTC:
                    return extract(v)  # fast path: stored dates are already UTC
                return extract(to_local(to_date(v, op), UTC))
            return extract_utc
        zone = compile_zone(tz_fn, op)

        def extract_tz(vars):
            v = date_fn(vars)
            tz = zone(vars)
            if is_nullish(v) or tz is MISSING:
                return None
            return extract(to_local(to_date(v, op), tz))
        return extract_tz
    return compile_


for _op in _EXTRACTORS:
    registry.implements(EXPRESSION, _op)(_extractor(_op))


# ---------------------------------------------------------------- $dateFromParts / $dateToParts

_CAL_PARTS = ("year", "month", "day", "hour", "minute", "second", "millisecond")
_ISO_PARTS = ("isoWeekYear", "isoWeek", "isoDayOfWeek", "hour", "minute", "second", "millisecond")
_DEFAULTS = {"month": 1, "day": 1, "isoWeek": 1, "isoDayOfWeek": 1, "hour": 0, "minute": 0, "second": 0,
             "millisecond": 0}


@registry.implements(EXPRESSION, "$dateFromParts")
def _date_from_parts(args):
    op = "$dateFromParts"
    if type(args) is not dict:
        raise ExecutionError(f"{op} only supports an object as its argument", code=40519)
    calendar_keys = {"year", "month", "day"} & set(args)
    iso_keys = {"isoWeekYear", "isoWeek", "isoDayOfWeek"} & set(args)
    if calendar_keys and iso_keys:
        raise ExecutionError(f"{op} does not allow mixing natural dates with ISO dates", code=40489)
    iso = bool(iso_keys)
    if not iso and "year" not in args:
        raise ExecutionError(f"{op} requires either 'year' or 'isoWeekYear' to be present", code=40516)
    if iso and "isoWeekYear" not in args:
        raise ExecutionError(f"{op} requires either 'year' or 'isoWeekYear' to be present", code=40516)
    names = _ISO_PARTS if iso else _CAL_PARTS
    named = compile_named(args, name=op, optional=names + ("timezone",))
    fns = [(n, named.get(n)) for n in names]
    zone = compile_zone(named.get("timezone"), op)

    def date_from_parts(vars):
        values = {}
        null = False
        for name, fn in fns:
            if fn is None:
                values[name] = _DEFAULTS[name]
                continue
            v = fn(vars)
            if is_nullish(v):
                null = True
                continue
            n = _integer(v, op, name)
            if name in ("year", "isoWeekYear"):
                if not 1 <= n <= 9999:
                    raise ExecutionError(f"{op}: '{name}' must evaluate to an integer in the range 1 to 9999, "
                                         f"found {n}", code=40523 if name == "year" else 31095)
            elif not -32768 <= n <= 32767:
                raise ExecutionError(f"{op}: '{name}' must evaluate to a value in the range [-32768, 32767]; "
                                     f"found {n}", code=31034)
            values[name] = n
        tz = zone(vars)
        if null or tz is MISSING:
            return None
        try:
            if iso:
                start = _dt.datetime.combine(_dt.date.fromisocalendar(values["isoWeekYear"], 1, 1), _dt.time())
                local = start + _dt.timedelta(weeks=values["isoWeek"] - 1, days=values["isoDayOfWeek"] - 1)
            else:
                months = values["year"] * 12 + values["month"] - 1
                local = _dt.datetime(months // 12, months % 12 + 1, 1) + _dt.timedelta(days=values["day"] - 1)
            local += _dt.timedelta(hours=values["hour"], minutes=values["minute"], seconds=values["second"],
                                   milliseconds=values["millisecond"])
            return from_local(local, tz)
        except (OverflowError, ValueError):
            raise ExecutionError(f"{op}: the computed date is out of the supported range (years 1 to 9999)",
                                 code=40523) from None
    return date_from_parts


@registry.implements(EXPRESSION, "$dateToParts")
def _date_to_parts(args):
    op = "$dateToParts"
    named = compile_named(args, name=op, required=("date",), optional=("timezone", "iso8601"))
    date_fn = named["date"]
    iso_fn = named.get("iso8601")
    zone = compile_zone(named.get("timezone"), op)

    def date_to_parts(vars):
        v = date_fn(vars)
        tz = zone(vars)
        iso = False
        if iso_fn is not None:
            iso = iso_fn(vars)
            if is_nullish(iso):
                return None
            if type(iso) is not bool:
                raise ExecutionError(f"{op}: iso8601 must evaluate to a bool, found {bson_type(iso)}", code=40521)
        if is_nullish(v) or tz is MISSING:
            return None
        d = to_local(to_date(v, op), tz)
        if iso:
            y, w, wd = d.isocalendar()
            head = {"isoWeekYear": y, "isoWeek": w, "isoDayOfWeek": wd}
        else:
            head = {"year": d.year, "month": d.month, "day": d.day}
        head.update(hour=d.hour, minute=d.minute, second=d.second, millisecond=d.microsecond // 1000)
        return head
    return date_to_parts


# ---------------------------------------------------------------- $dateAdd / $dateSubtract / $dateDiff / $dateTrunc


def _unit(value, op: str, name: str = "unit") -> str:
    if type(value) is not str:
        raise ExecutionError(f"{op} requires '{name}' to be a string, but got {bson_type(value)}", code=5439013)
    if value not in UNITS:
        raise ExecutionError(f"{op}: unknown time unit value: {value}", code=9)
    return value


def _start_of_week(value, op: str) -> int:
    if type(value) is not str:
        raise ExecutionError(f"{op} requires 'startOfWeek' to be a string, but got {bson_type(value)}",
                             code=5439015)
    low = value.lower()
    for name, number in _DAYS.items():
        if low == name or low == name[:3]:
            return number
    raise ExecutionError(f"{op} parameter 'startOfWeek' must be a valid day of the week, but got {value}",
                         code=5439016)


def add_units(d: _dt.datetime, unit: str, amount: int, tz) -> _dt.datetime:
    """`d` plus `amount` units: calendar units move the local wall clock (month ends clamp), fixed units
    add elapsed time."""
    if unit in ("year", "quarter", "month"):
        months = amount * (12 if unit == "year" else 3 if unit == "quarter" else 1)
        local = to_local(d, tz)
        total = local.year * 12 + local.month - 1 + months
        y, m = divmod(total, 12)
        m += 1
        if not 1 <= y <= 9999:
            raise OverflowError
        day = min(local.day, calendar.monthrange(y, m)[1])
        return from_local(local.replace(year=y, month=m, day=day), tz)
    if unit in ("week", "day"):
        local = to_local(d, tz) + _dt.timedelta(days=amount * (7 if unit == "week" else 1))
        return from_local(local, tz)
    return d + _dt.timedelta(milliseconds=amount * _FIXED_MS[unit])


def _date_arith(op: str, sign: int):
    def compile_(args):
        named = compile_named(args, name=op, required=("startDate", "unit", "amount"), optional=("timezone",))
        start_fn, unit_fn, amount_fn = named["startDate"], named["unit"], named["amount"]
        zone = compile_zone(named.get("timezone"), op)

        def date_arith(vars):
            start, unit, amount = start_fn(vars), unit_fn(vars), amount_fn(vars)
            tz = zone(vars)
            if is_nullish(start) or is_nullish(unit) or is_nullish(amount) or tz is MISSING:
                return None
            try:
                d = to_date(start, op)
            except ExecutionError:
                raise ExecutionError(f"{op} requires startDate to be convertible to a date", code=5166403) from None
            unit = _unit(unit, op)
            try:
                n = _integer(amount, op, "amount")
            except ExecutionError:
                raise ExecutionError(f"{op} expects integer amount of time units", code=5166405) from None
            try:
                return add_units(to_date(d, op), unit, sign * n, tz)
            except (OverflowError, ValueError):
                raise ExecutionError(f"{op} overflowed", code=5166406) from None
        return date_arith
    return compile_


registry.implements(EXPRESSION, "$dateAdd")(_date_arith("$dateAdd", 1))
registry.implements(EXPRESSION, "$dateSubtract")(_date_arith("$dateSubtract", -1))


def date_diff(start: _dt.datetime, end: _dt.datetime, unit: str, tz, start_of_week: int = 7) -> int:
    """The number of `unit` boundaries crossed from `start` to `end` (in `tz`)."""
    try:
        return _boundaries_crossed(start, end, unit, tz, start_of_week)
    except OverflowError:  # a week start before the year 1
        raise _out_of_range(start) from None


def _boundaries_crossed(start: _dt.datetime, end: _dt.datetime, unit: str, tz, start_of_week: int) -> int:
    if unit in ("year", "quarter", "month", "week", "day"):
        s, e = to_local(start, tz), to_local(end, tz)
        if unit == "year":
            return e.year - s.year
        if unit == "quarter":
            return (e.year * 4 + (e.month - 1) // 3) - (s.year * 4 + (s.month - 1) // 3)
        if unit == "month":
            return (e.year * 12 + e.month) - (s.year * 12 + s.month)
        sd, ed = s.date(), e.date()
        if unit == "day":
            return (ed - sd).days
        sw = sd - _dt.timedelta(days=(sd.isoweekday() - start_of_week) % 7)
        ew = ed - _dt.timedelta(days=(ed.isoweekday() - start_of_week) % 7)
        return (ew - sw).days // 7
    size = _FIXED_MS[unit]
    s_ms = _ms(start.astimezone(UTC).replace(tzinfo=None))
    e_ms = _ms(end.astimezone(UTC).replace(tzinfo=None))
    if unit == "hour" and tz is not UTC:
        # Hour boundaries of zones with sub-hour offsets (e.g. +05:30) fall off the UTC hour.
        s_ms += int(utc_offset(start, tz).total_seconds() * 1000) % size
        e_ms += int(utc_offset(end, tz).total_seconds() * 1000) % size
    return e_ms // size - s_ms // size


@registry.implements(EXPRESSION, "$dateDiff")
def _date_diff(args):
    op = "$dateDiff"
    named = compile_named(args, name=op, required=("startDate", "endDate", "unit"),
                          optional=("timezone", "startOfWeek"))
    start_fn, end_fn, unit_fn = named["startDate"], named["endDate"], named["unit"]
    sow_fn = named.get("startOfWeek")
    zone = compile_zone(named.get("timezone"), op)

    def date_diff_(vars):
        start, end, unit = start_fn(vars), end_fn(vars), unit_fn(vars)
        tz = zone(vars)
        if is_nullish(start) or is_nullish(end) or is_nullish(unit) or tz is MISSING:
            return None
        unit = _unit(unit, op)
        sow = 7
        if unit == "week" and sow_fn is not None:
            v = sow_fn(vars)
            if is_nullish(v):
                return None
            sow = _start_of_week(v, op)
        s = to_date(start, op)
        e = to_date(end, op)
        return Int64(date_diff(s, e, unit, tz, sow))
    return date_diff_


def truncate(d: _dt.datetime, unit: str, bin_size: int, tz, start_of_week: int = 7) -> _dt.datetime:
    """`$dateTrunc`: the start of the `bin_size`-`unit` period containing `d`, periods counted from
    2000-01-01 local (for weeks, from the first `start_of_week` day on or after it)."""
    if unit in ("year", "quarter", "month"):
        local = to_local(d, tz)
        span = bin_size * (12 if unit == "year" else 3 if unit == "quarter" else 1)
        months = (local.year - 2000) * 12 + local.month - 1
        months -= months % span
        y, m = divmod(months, 12)
        return from_local(_dt.datetime(2000 + y, m + 1, 1), tz)
    if unit in ("week", "day"):
        local = to_local(d, tz)
        ref = _REF
        if unit == "week":
            ref = _REF + _dt.timedelta(days=(start_of_week - _REF.isoweekday()) % 7)
        span = bin_size * (7 if unit == "week" else 1)
        days = (local - ref).days
        days -= days % span
        return from_local(ref + _dt.timedelta(days=days), tz)
    # Hours and smaller are fixed lengths of elapsed time counted from the reference instant
    # (2000-01-01 local midnight, with the zone's offset of that day), as the server does.
    span = bin_size * _FIXED_MS[unit]
    ref_ms = _REF_UTC_MS - int(utc_offset(_REF_UTC, tz).total_seconds() * 1000)
    ms = _ms(d.astimezone(UTC).replace(tzinfo=None))
    ms -= (ms - ref_ms) % span
    return _EPOCH_UTC + _dt.timedelta(milliseconds=ms)


@registry.implements(EXPRESSION, "$dateTrunc")
def _date_trunc(args):
    op = "$dateTrunc"
    named = compile_named(args, name=op, required=("date", "unit"), optional=("binSize", "timezone", "startOfWeek"))
    date_fn, unit_fn = named["date"], named["unit"]
    bin_fn, sow_fn = named.get("binSize"), named.get("startOfWeek")
    zone = compile_zone(named.get("timezone"), op)

    def date_trunc(vars):
        v, unit = date_fn(vars), unit_fn(vars)
        tz = zone(vars)
        size = 1
        if bin_fn is not None:
            size = bin_fn(vars)
            if is_nullish(size):
                return None
        if is_nullish(v) or is_nullish(unit) or tz is MISSING:
            return None
        if type(unit) is not str:
            raise ExecutionError(f"{op} requires 'unit' to be a string, but got {bson_type(unit)}", code=5439013)
        if unit not in UNITS:
            raise ExecutionError(f"{op} parameter 'unit' value cannot be recognized as a time unit: {unit}",
                                 code=5439014)
        try:
            size = _integer(size, op, "binSize")
        except ExecutionError:
            raise ExecutionError(f"{op} requires 'binSize' to be a 64-bit integer, but got value '{size}' of type "
                                 f"{bson_type(size)}", code=5439017) from None
        if size <= 0:
            raise ExecutionError(f"{op} requires 'binSize' to be greater than 0, but got value {size}",
                                 code=5439018)
        sow = 7
        if unit == "week" and sow_fn is not None:
            s = sow_fn(vars)
            if is_nullish(s):
                return None
            sow = _start_of_week(s, op)
        d = to_date(v, op)
        try:
            return truncate(d, unit, size, tz, sow)
        except (OverflowError, ValueError):
            raise ExecutionError(f"{op}: the truncated date is out of the supported range", code=5439019) from None
    return date_trunc


# ---------------------------------------------------------------- $tsSecond / $tsIncrement
# https://www.mongodb.com/docs/manual/reference/operator/aggregation/tsSecond/


def _ts_part(op: str, part: str):
    def ts(v):
        if not isinstance(v, Timestamp):
            raise ExecutionError(f"Argument to {op} must be a timestamp, but is {bson_type(v)}", code=5687301)
        return Int64(v.time if part == "time" else v.inc)
    return unary_operator(op, ts)


registry.implements(EXPRESSION, "$tsSecond")(_ts_part("$tsSecond", "time"))
registry.implements(EXPRESSION, "$tsIncrement")(_ts_part("$tsIncrement", "inc"))


__all__ = ["to_date", "timezone", "to_local", "from_local", "add_units", "date_diff", "truncate", "UNITS"]
