"""BSON values as nlq holds them in Python, and MongoDB's order over them.

Representation (the same objects pymongo returns with ``tz_aware=True``):

=============  ==============================================
BSON type      Python
=============  ==============================================
double         float
int            int (not bool)
long           bson.int64.Int64 (an int subclass)
decimal        bson.decimal128.Decimal128
string         str
object         dict (insertion order is field order)
array          list
objectId       bson.objectid.ObjectId
bool           bool
date           datetime.datetime, timezone-aware UTC
null           None
regex          bson.regex.Regex
binData        bson.binary.Binary / bytes
timestamp      bson.timestamp.Timestamp
minKey/maxKey  bson.min_key.MinKey / bson.max_key.MaxKey
=============  ==============================================

A field that does not exist is :data:`MISSING`, never ``None``: MongoDB keeps
null and missing apart in expressions, ``$type`` and results.

Comparison follows the manual's "Comparison/Sort Order" page
(https://www.mongodb.com/docs/manual/reference/bson-type-comparison-order/):
MinKey < null < numbers < strings < objects < arrays < binData < ObjectId <
bool < date < timestamp < regex < MaxKey; numbers compare by value across
int/long/double/decimal; NaN is below every other number.
"""

from __future__ import annotations

import datetime as _dt
import math
from decimal import Decimal

from bson.binary import Binary
from bson.code import Code
from bson.decimal128 import Decimal128
from bson.int64 import Int64
from bson.max_key import MaxKey
from bson.min_key import MinKey
from bson.objectid import ObjectId
from bson.regex import Regex
from bson.timestamp import Timestamp

UTC = _dt.timezone.utc
EPOCH = _dt.datetime(1970, 1, 1, tzinfo=UTC)


class _Missing:
    """The absence of a field. Falsy, a singleton, never equal to None."""

    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "MISSING"

    def __bool__(self) -> bool:
        return False

    def __reduce__(self):
        return (_Missing, ())


MISSING = _Missing()

# Type brackets of the comparison order. Missing sorts with null.
# JavaScript code (with scope) sorts after regex and before MaxKey, as in MongoDB's canonical order.
(MINKEY, NULL, NUMBER, STRING, OBJECT, ARRAY, BINDATA, OBJECTID, BOOL, DATE, TIMESTAMP, REGEX, CODE, CODE_WITH_SCOPE,
 MAXKEY) = range(15)


def bson_type(value) -> str:
    """The `$type` alias of a value: 'double', 'int', 'string', ... or 'missing'."""
    if value is None:
        return "null"
    t = type(value)
    if t is bool:
        return "bool"
    if t is int:
        return "int" if -2**31 <= value < 2**31 else "long"
    if t is Int64:
        return "long"
    if t is float:
        return "double"
    if t is str:
        return "string"
    if t is dict:
        return "object"
    if t is list:
        return "array"
    if value is MISSING:
        return "missing"
    if isinstance(value, _dt.datetime):
        return "date"
    if isinstance(value, Decimal128):
        return "decimal"
    if isinstance(value, ObjectId):
        return "objectId"
    if isinstance(value, (Regex,)) or _is_pattern(value):
        return "regex"
    if isinstance(value, (Binary, bytes)):
        return "binData"
    if isinstance(value, Timestamp):
        return "timestamp"
    if isinstance(value, MinKey):
        return "minKey"
    if isinstance(value, MaxKey):
        return "maxKey"
    if isinstance(value, Code):
        return "javascript" if value.scope is None else "javascriptWithScope"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, (list, tuple)):
        return "array"
    if isinstance(value, int):
        return "long" if not (-2**31 <= value < 2**31) else "int"
    raise TypeError(f"not a BSON value: {type(value).__name__}")


# `$type` accepts aliases and the numeric codes of the BSON spec.
TYPE_CODES = {
    "double": 1, "string": 2, "object": 3, "array": 4, "binData": 5, "undefined": 6,
    "objectId": 7, "bool": 8, "date": 9, "null": 10, "regex": 11, "dbPointer": 12,
    "javascript": 13, "symbol": 14, "javascriptWithScope": 15, "int": 16,
    "timestamp": 17, "long": 18, "decimal": 19, "minKey": -1, "maxKey": 127,
}
CODE_TYPES = {code: name for name, code in TYPE_CODES.items()}
NUMBER_TYPES = frozenset({"double", "int", "long", "decimal"})


def _is_pattern(value) -> bool:
    return type(value).__name__ == "Pattern" and hasattr(value, "pattern") and hasattr(value, "flags")


def is_number(value) -> bool:
    """True for int/long/double/decimal (never for bool)."""
    t = type(value)
    return t is int or t is float or t is Int64 or t is Decimal128


def to_decimal(value) -> Decimal:
    """A numeric BSON value as decimal.Decimal (exact for ints and doubles)."""
    if isinstance(value, Decimal128):
        return value.to_decimal()
    return Decimal(value)


def number_value(value):
    """A comparable Python number: int, float or Decimal (Decimal128 unwrapped)."""
    if type(value) is Decimal128:
        return value.to_decimal()
    return value


def type_bracket(value) -> int:
    """The position of a value's type in the comparison order."""
    if value is None or value is MISSING:
        return NULL
    t = type(value)
    if t is int or t is float or t is Int64 or t is Decimal128:
        return NUMBER
    if t is str:
        return STRING
    if t is dict:
        return OBJECT
    if t is list:
        return ARRAY
    if t is bool:
        return BOOL
    return _SLOW_BRACKETS[bson_type(value)]


_SLOW_BRACKETS = {
    "minKey": MINKEY, "null": NULL, "missing": NULL, "double": NUMBER, "int": NUMBER, "long": NUMBER,
    "decimal": NUMBER, "string": STRING, "object": OBJECT, "array": ARRAY, "binData": BINDATA,
    "objectId": OBJECTID, "bool": BOOL, "date": DATE, "timestamp": TIMESTAMP, "regex": REGEX,
    "maxKey": MAXKEY, "javascript": CODE, "javascriptWithScope": CODE_WITH_SCOPE,
}


def _number_key(value):
    v = number_value(value)
    if v != v:  # NaN sorts below every number and equals itself
        return (0, 0)
    if isinstance(v, Decimal) and v.is_infinite():
        v = math.inf if v > 0 else -math.inf
    return (1, v)


def sort_key(value):
    """A tuple key realising MongoDB's total order over BSON values.

    `sort_key(a) < sort_key(b)` iff MongoDB orders a before b; equal keys mean
    equal values (1 == 1.0 == Decimal128("1")).
    """
    b = type_bracket(value)
    if b == NUMBER:
        return (b, _number_key(value))
    if b == STRING:
        return (b, value)
    if b == NULL or b == MINKEY or b == MAXKEY:
        return (b,)
    if b == OBJECT:
        return (b, tuple((type_bracket(v), k, sort_key(v)) for k, v in value.items()))
    if b == ARRAY:
        return (b, tuple(sort_key(v) for v in value))
    if b == BOOL:
        return (b, value)
    if b == DATE:
        return (b, date_to_millis(value))
    if b == OBJECTID:
        return (b, value.binary)
    if b == BINDATA:
        data = bytes(value)
        subtype = getattr(value, "subtype", 0)
        return (b, len(data), subtype, data)
    if b == TIMESTAMP:
        return (b, value.time, value.inc)
    if b == REGEX:
        return (b, value.pattern, regex_options(value))
    if b == CODE:
        return (b, str(value))
    if b == CODE_WITH_SCOPE:
        return (b, str(value), sort_key(value.scope))
    raise TypeError(f"cannot order {type(value).__name__}")


_FLAG_LETTERS = (("i", 2), ("l", 4), ("m", 8), ("s", 16), ("u", 32), ("x", 64))  # re.I, re.L, re.M, ...


def regex_options(value) -> str:
    """The options letters of a bson Regex or compiled pattern, sorted ('im', 'sx').

    bson.regex.Regex keeps its flags as the `re` module's bit mask; MongoDB and
    Extended JSON spell them as letters. The `u` flag Python sets on every str
    pattern is not a MongoDB option and is dropped for compiled patterns.
    """
    flags = value.flags
    if isinstance(flags, str):
        return "".join(sorted(flags))
    letters = "".join(letter for letter, bit in _FLAG_LETTERS if flags & bit)
    return letters.replace("u", "") if _is_pattern(value) else letters


def compare(a, b) -> int:
    """-1, 0 or 1 as MongoDB orders a and b (the `$cmp` of the manual)."""
    ka, kb = sort_key(a), sort_key(b)
    return (ka > kb) - (ka < kb)


def equal(a, b) -> bool:
    """BSON equality: numbers by value, documents field by field in order."""
    if a is b:
        return True
    return sort_key(a) == sort_key(b)


def group_key(value):
    """A hashable key under which equal BSON values (1, 1.0, Int64(1)) collide.

    Used for `$group` keys, `$addToSet`, set operators and result multisets.
    Missing and null share a group, as in MongoDB's `$group`.
    """
    return sort_key(value)


_MISSING_EXPRESSION_KEY = (NULL - 0.5,)  # after MinKey, before null


def expression_key(value):
    """`sort_key` as aggregation expressions compare: missing sorts just below null.

    In `$eq`/`$cmp`/`$in`... a missing field is not null: `{$eq: ["$nope", null]}`
    is false and `{$lt: ["$nope", null]}` is true.
    """
    return _MISSING_EXPRESSION_KEY if value is MISSING else sort_key(value)


def expression_compare(a, b) -> int:
    """-1, 0 or 1: the `$cmp` of two aggregation values (fast for same-kind numbers and strings)."""
    ta, tb = type(a), type(b)
    if (ta is int or ta is float) and (tb is int or tb is float):
        if a < b:
            return -1
        if a > b:
            return 1
        if a == b:
            return 0
        # a NaN is involved: it equals itself and sorts below every other number
    elif ta is str and tb is str:
        return (a > b) - (a < b)
    ka, kb = expression_key(a), expression_key(b)
    return (ka > kb) - (ka < kb)


def expression_equal(a, b) -> bool:
    """BSON equality in aggregation expressions (1 == 1.0; missing equals only missing)."""
    ta = type(a)
    if ta is type(b) and (ta is int or ta is str):
        return a == b
    return expression_compare(a, b) == 0


def date_to_millis(value: _dt.datetime) -> int:
    """Milliseconds since the epoch of a (naive = UTC, or aware) datetime."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    delta = value - EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000


def millis_to_date(ms: int) -> _dt.datetime:
    """The UTC datetime at `ms` milliseconds since the epoch."""
    return EPOCH + _dt.timedelta(milliseconds=int(ms))


def iso_date_string(value: _dt.datetime) -> str:
    """A date in UTC as MongoDB prints it (`$toString`, Extended JSON): '2018-03-27T16:58:51.538Z'.

    A naive datetime is taken as UTC.
    """
    ms = date_to_millis(value)
    d = millis_to_date(ms)
    return f"{d.year:04d}-{d.month:02d}-{d.day:02d}T{d.hour:02d}:{d.minute:02d}:{d.second:02d}.{ms % 1000:03d}Z"


def parse_iso_date(text: str) -> _dt.datetime:
    """The UTC datetime of an ISO 8601 string ('Z' or an offset; none means UTC); ValueError if invalid."""
    s = text.strip()
    if s.endswith("Z") or s.endswith("z"):
        s = s[:-1] + "+00:00"
    value = _dt.datetime.fromisoformat(s)
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


def is_nullish(value) -> bool:
    """Null or missing: what most operators answer with null."""
    return value is None or value is MISSING


def is_truthy(value) -> bool:
    """Aggregation truthiness: false, null, missing, 0 and NaN-free zero are false.

    Manual, $cond / boolean expressions: "evaluates as false: boolean false,
    null, undefined, 0 (any numeric type); everything else, including empty
    arrays and strings, is true".
    """
    if value is None or value is MISSING or value is False:
        return False
    if value is True:
        return True
    t = type(value)
    if t is int or t is float or t is Int64:
        return value != 0
    if t is Decimal128:
        return value.to_decimal() != 0
    return True


__all__ = [
    "MISSING", "UTC", "EPOCH", "bson_type", "type_bracket", "sort_key", "compare", "equal",
    "group_key", "is_number", "to_decimal", "number_value", "date_to_millis", "millis_to_date",
    "is_truthy", "is_nullish", "iso_date_string", "parse_iso_date", "regex_options", "TYPE_CODES",
    "CODE_TYPES", "NUMBER_TYPES",
    "expression_key", "expression_compare", "expression_equal",
    "Binary", "Decimal128", "Int64", "MaxKey", "MinKey", "ObjectId", "Regex", "Timestamp",
]
