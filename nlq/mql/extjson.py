"""MongoDB Extended JSON v2 <-> Python BSON values
(https://www.mongodb.com/docs/manual/reference/mongodb-extended-json/).

Reading accepts canonical and relaxed Extended JSON (and the legacy
`{"$date": <ms>}` / `{"$oid"}` forms mongoexport writes); writing produces
relaxed Extended JSON, so ObjectIds, dates, longs, decimals, regexes and
binary survive a round trip (a long in the int32 range is written
`{"$numberLong": "5"}`, since a plain 5 reads back as an int). The query parser and serializer use
it for values; `nlq.io` uses it for JSONL records.

    >>> from_extjson({"n": {"$numberLong": "5"}})["n"]
    Int64(5)
"""

from __future__ import annotations

import base64
import datetime as _dt
import math

from bson.code import Code
from bson.datetime_ms import DatetimeMS
from bson.dbref import DBRef

from nlq.errors import InputError
from nlq.mql.numeric import INT32_MAX, INT32_MIN
from nlq.mql.values import (MISSING, Binary, Decimal128, Int64, MaxKey, MinKey, ObjectId, Regex, Timestamp,
                            date_to_millis, iso_date_string, millis_to_date, parse_iso_date, regex_options)

# ---------------------------------------------------------------------------
# Extended JSON -> Python BSON values


def _parse_iso_date(text: str) -> _dt.datetime:
    try:
        return parse_iso_date(text)
    except ValueError:
        raise InputError(f"invalid $date string {text!r}") from None


def _double(text: str) -> float:
    special = {"Infinity": math.inf, "-Infinity": -math.inf, "NaN": math.nan}
    if text in special:
        return special[text]
    return float(text)


def _date(v):
    if isinstance(v, str):
        return _parse_iso_date(v)
    if isinstance(v, dict) and "$numberLong" in v:
        return millis_to_date(v["$numberLong"])
    if isinstance(v, (int, float)):
        return millis_to_date(v)
    raise InputError(f"invalid $date value {v!r}")


def _binary(v, doc):
    if isinstance(v, dict):
        return Binary(base64.b64decode(v["base64"]), int(v.get("subType", "00"), 16))
    return Binary(base64.b64decode(v), int(doc.get("$type", "00"), 16))


def _regex(v, doc):
    return Regex(v["pattern"], v.get("options", ""))


# One-key wrappers of Extended JSON v2 (and the legacy forms) -> constructor.
_WRAPPERS = {
    "$oid": lambda v, d: ObjectId(v),
    "$date": lambda v, d: _date(v),
    "$numberInt": lambda v, d: int(v),
    "$numberLong": lambda v, d: Int64(int(v)),
    "$numberDouble": lambda v, d: _double(v),
    "$numberDecimal": lambda v, d: Decimal128(v),
    "$regularExpression": _regex,
    "$binary": _binary,
    "$timestamp": lambda v, d: Timestamp(int(v["t"]), int(v["i"])),
    "$minKey": lambda v, d: MinKey(),
    "$maxKey": lambda v, d: MaxKey(),
    "$undefined": lambda v, d: None,
    "$symbol": lambda v, d: str(v),
    "$code": lambda v, d: Code(_string(v, "$code"), _scope(d.get("$scope"))),
}
# Keys allowed beside the wrapper key in legacy forms.
# The legacy `{"$regex", "$options"}` form is deliberately not read as a value:
# inside a query it is the `$regex` operator, and must stay one.
_COMPANIONS = {"$binary": {"$type"}, "$code": {"$scope"}}


def _string(v, what: str) -> str:
    if type(v) is not str:
        raise InputError(f"invalid Extended JSON {what}: expected a string, got {v!r}")
    return v


def _scope(v):
    if v is None:
        return None
    if type(v) is not dict:
        raise InputError(f"invalid Extended JSON $scope: expected an object, got {v!r}")
    return from_extjson(v)


def from_extjson(value):
    """Convert parsed JSON (dicts/lists/scalars) with Extended JSON wrappers to BSON values.

    A dict is a wrapper only when its keys are exactly a wrapper key (plus the
    legacy companion key).
    """
    t = type(value)
    if t is dict:
        if value:
            converted = _wrapped(value)
            if converted is not value:
                return converted
        return {k: from_extjson(v) for k, v in value.items()}
    if t is list:
        return [from_extjson(v) for v in value]
    return value


def _wrapped(value: dict):
    """The BSON value of a non-empty dict that is a wrapper, else `value` itself."""
    first = next(iter(value))
    if first[:1] != "$" or first not in _WRAPPERS or not set(value) <= {first} | _COMPANIONS.get(first, set()):
        return value
    try:
        return _WRAPPERS[first](value[first], value)
    except InputError:
        raise
    except Exception as exc:  # malformed wrapper payload
        raise InputError(f"invalid Extended JSON {first}: {exc}") from None


def decode_parsed(value, dollar_strings: int | None = None):
    """`from_extjson` for a value fresh from a JSON parser, which nothing else holds: the
    wrappers are replaced in place, so the dicts and lists that need no conversion are kept
    as they are instead of being rebuilt. Returns the converted value (a wrapper at the top
    is replaced by its BSON value).

    `dollar_strings`: how many strings of the parsed text (keys and values) start with `$`, none
    of them written with an escape (`text.count(b'"$')` of a text without `\\u0024` counts at
    least those): every wrapper key is one of them, so the walk stops once the wrappers it
    has converted hold them all."""
    t = type(value)
    if t is dict:
        if value:
            converted = _wrapped(value)
            if converted is not value:
                return converted
            _decode_dict(value, math.inf if dollar_strings is None else dollar_strings)
    elif t is list:
        _decode_list(value, math.inf if dollar_strings is None else dollar_strings)
    return value


def _decode_dict(doc: dict, left) -> int | float:
    """Convert the wrappers below `doc`; returns how many `$` strings are `left` unaccounted
    (0: no wrapper can be left after them)."""
    for key, v in doc.items():
        t = type(v)
        if t is dict:
            if v:
                converted = _wrapped(v)
                if converted is not v:
                    doc[key] = converted  # the same key: the iteration goes on unharmed
                    left -= _dollar_strings(v)
                else:
                    left = _decode_dict(v, left)
                if left <= 0:
                    return 0
        elif t is list:
            left = _decode_list(v, left)
            if left <= 0:
                return 0
    return left


def _decode_list(items: list, left) -> int | float:
    for i, v in enumerate(items):
        t = type(v)
        if t is dict:
            if v:
                converted = _wrapped(v)
                if converted is not v:
                    items[i] = converted
                    left -= _dollar_strings(v)
                else:
                    left = _decode_dict(v, left)
                if left <= 0:
                    return 0
        elif t is list:
            left = _decode_list(v, left)
            if left <= 0:
                return 0
    return left


def _dollar_strings(value) -> int:
    """How many strings (keys and values) of a parsed value start with `$`."""
    t = type(value)
    if t is str:
        return value[:1] == "$"
    if t is dict:
        return sum((k[:1] == "$") + _dollar_strings(v) for k, v in value.items())
    if t is list:
        return sum(map(_dollar_strings, value))
    return 0


# ---------------------------------------------------------------------------
# Python BSON values -> relaxed Extended JSON


def to_extjson(value):
    """The relaxed Extended JSON form of a BSON value (plain JSON where possible)."""
    t = type(value)
    if t is dict:
        return {k: to_extjson(v) for k, v in value.items() if v is not MISSING}
    if t is list or t is tuple:
        return [None if v is MISSING else to_extjson(v) for v in value]
    if t is str or t is bool or t is int or value is None:
        return value
    if t is float:
        if math.isfinite(value):
            return value
        return {"$numberDouble": "NaN" if value != value else ("Infinity" if value > 0 else "-Infinity")}
    if t is Int64:  # a long in the int32 range would read back as an int: keep its type
        return {"$numberLong": str(int(value))} if INT32_MIN <= value <= INT32_MAX else int(value)
    if isinstance(value, _dt.datetime):
        ms = date_to_millis(value)
        if 0 <= ms < 253402300800000:
            return {"$date": iso_date_string(value)}
        return {"$date": {"$numberLong": str(ms)}}
    if isinstance(value, ObjectId):
        return {"$oid": str(value)}
    if isinstance(value, Decimal128):
        return {"$numberDecimal": str(value)}
    if isinstance(value, Regex) or type(value).__name__ == "Pattern":
        return {"$regularExpression": {"pattern": value.pattern, "options": regex_options(value)}}
    if isinstance(value, (Binary, bytes)):
        return {"$binary": {"base64": base64.b64encode(bytes(value)).decode(),
                            "subType": f"{getattr(value, 'subtype', 0):02x}"}}
    if isinstance(value, Timestamp):
        return {"$timestamp": {"t": value.time, "i": value.inc}}
    if isinstance(value, Code):
        if value.scope is None:
            return {"$code": str(value)}
        return {"$code": str(value), "$scope": to_extjson(value.scope)}
    if isinstance(value, DBRef):  # a DBRef is a plain document on the server (read back as one)
        return to_extjson(dict(value.as_doc()))
    if isinstance(value, str):  # other str subclasses
        return str(value)
    if isinstance(value, MinKey):
        return {"$minKey": 1}
    if isinstance(value, MaxKey):
        return {"$maxKey": 1}
    if isinstance(value, int):
        return int(value)
    if isinstance(value, DatetimeMS):  # pymongo's date beyond Python's years 1-9999
        return {"$date": {"$numberLong": str(int(value))}}
    if isinstance(value, dict):  # SON and other mappings pymongo may return
        return {k: to_extjson(v) for k, v in value.items() if v is not MISSING}
    if isinstance(value, (list, tuple)):
        return [None if v is MISSING else to_extjson(v) for v in value]
    if value is MISSING:
        return None
    raise TypeError(f"cannot write {type(value).__name__} as JSON")


__all__ = ["decode_parsed", "from_extjson", "to_extjson"]
