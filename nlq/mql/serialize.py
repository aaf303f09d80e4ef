"""A :class:`Query` written back out: canonical JSON, or readable mongosh.

    >>> from nlq.mql.query import Query
    >>> print(to_mongosh(Query("users", [{"$match": {"age": {"$gt": 30}}}, {"$limit": 5}])))
    db.users.aggregate([
      {$match: {age: {$gt: 30}}},
      {$limit: 5}
    ])

Both are exact inverses of :func:`nlq.mql.mongosh.parse_query`:
``parse_query(to_mongosh(q)) == q`` and ``parse_query(to_json(q)) == q``,
BSON types included (ints stay ints, doubles stay doubles, NumberLong stays
Int64, dates, ObjectIds, decimals and regexes keep their type).
"""

from __future__ import annotations

import base64
import datetime as _dt
import math
import re
import uuid

from nlq.mql.extjson import to_extjson
from nlq.mql.jsliteral import scan_regex_body
from nlq.mql.query import Query
from nlq.mql.values import (Binary, Decimal128, Int64, MaxKey, MinKey, ObjectId, Regex, Timestamp,
                            iso_date_string)

_IDENTIFIER = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")  # used with fullmatch: `$` would pass "a\n"
_FLAG_BITS = ((re.IGNORECASE, "i"), (re.LOCALE, "l"), (re.MULTILINE, "m"), (re.DOTALL, "s"),
              (re.UNICODE, "u"), (re.VERBOSE, "x"))
_JS_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f"}


def to_json(query: Query) -> dict:
    """`{"collection", "pipeline"}` with BSON values as Extended JSON.

    Relaxed Extended JSON (nlq.io.to_extjson), except that NumberLong values
    are written as `{"$numberLong": ...}` so that they stay longs.
    """
    return {"collection": query.collection, "pipeline": _extjson(query.pipeline)}


def _extjson(value):
    t = type(value)
    if t is dict:
        return {k: _extjson(v) for k, v in value.items()}
    if t is list:
        return [_extjson(v) for v in value]
    if t is Int64:
        return {"$numberLong": str(int(value))}
    return to_extjson(value)


def regex_flags(value) -> str:
    """The BSON flag letters of a bson Regex (whose flags may be an int) or re.Pattern."""
    flags = value.flags
    if isinstance(flags, str):
        return "".join(sorted(flags))
    return "".join(letter for bit, letter in _FLAG_BITS if flags & bit)


def to_mongosh(query: Query) -> str:
    """Readable mongosh text of a query, one stage per line."""
    if _IDENTIFIER.fullmatch(query.collection):
        target = f"db.{query.collection}"
    else:
        target = f"db.getCollection({quote(query.collection)})"
    if not query.pipeline:
        return f"{target}.aggregate([])"
    stages = ",\n".join("  " + literal(stage) for stage in query.pipeline)
    return f"{target}.aggregate([\n{stages}\n])"


def quote(text: str) -> str:
    """A double-quoted JavaScript string literal."""
    out = []
    for ch in text:
        escaped = _JS_ESCAPES.get(ch)
        if escaped is not None:
            out.append(escaped)
        elif ch < " " or ch == "\x7f" or ch in "\u2028\u2029" or "\ud800" <= ch <= "\udfff":
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def key(name: str) -> str:
    """An object key: bare when it is a JavaScript identifier (`$match`, `_id`), else quoted."""
    return name if _IDENTIFIER.fullmatch(name) else quote(name)


def literal(value) -> str:
    """The mongosh literal of a BSON value (compact, on one line)."""
    t = type(value)
    if t is dict:
        if not value:
            return "{}"
        return "{" + ", ".join(f"{key(k)}: {literal(v)}" for k, v in value.items()) + "}"
    if t is list:
        return "[" + ", ".join(literal(v) for v in value) + "]"
    if t is str:
        return quote(value)
    if value is None:
        return "null"
    if t is bool:
        return "true" if value else "false"
    if t is int:
        return str(value)
    if t is float:
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return repr(value)
    if t is Int64:
        n = int(value)
        return f"NumberLong({n})" if abs(n) < 2**53 else f'NumberLong("{n}")'
    if isinstance(value, _dt.datetime):
        return f'ISODate("{iso_date_string(value)}")'
    if isinstance(value, ObjectId):
        return f'ObjectId("{value}")'
    if isinstance(value, Decimal128):
        return f'NumberDecimal("{value}")'
    if isinstance(value, Regex) or type(value).__name__ == "Pattern":
        return _regex(value.pattern, regex_flags(value))
    if isinstance(value, Timestamp):
        return f"Timestamp({value.time}, {value.inc})"
    if isinstance(value, MinKey):
        return "MinKey()"
    if isinstance(value, MaxKey):
        return "MaxKey()"
    if isinstance(value, (Binary, bytes)):
        subtype = getattr(value, "subtype", 0)
        if subtype == 4 and len(value) == 16:
            return f'UUID("{uuid.UUID(bytes=bytes(value))}")'
        return f'BinData({subtype}, "{base64.b64encode(bytes(value)).decode()}")'
    if isinstance(value, int):
        return str(int(value))
    raise TypeError(f"cannot write {type(value).__name__} as a mongosh literal")


def _regex(pattern: str, flags: str) -> str:
    # A /literal/ only when it reads back as exactly this pattern; else RegExp("...").
    text = "/" + pattern + "/"
    if pattern and pattern[0] not in "*/" and scan_regex_body(text, 1) == len(text) - 1:
        return text + flags
    return f"RegExp({quote(pattern)}, {quote(flags)})" if flags else f"RegExp({quote(pattern)})"


__all__ = ["to_json", "to_mongosh", "literal", "quote", "key", "regex_flags"]
