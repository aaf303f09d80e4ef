"""What every stage family uses: document paths (no array traversal), stream
materialization with the deadline check, integer arguments, option checks and
the named sentinels (`Marker`)."""

from __future__ import annotations

import math

from bson.decimal128 import Decimal128
from bson.int64 import Int64

from nlq.errors import ExecutionError
from nlq.mql.values import MISSING, bson_type, is_number, number_value

# ---------------------------------------------------------------------------
# Paths in documents (no array traversal: `$unwind`, `$lookup as`, `$count`...)


def split_path(path: str, what: str) -> tuple[str, ...]:
    """`a.b` -> ('a', 'b'), rejecting empty components and `$`-prefixed names."""
    if type(path) is not str or not path:
        raise ExecutionError(f"{what} must be a non-empty string")
    parts = tuple(path.split("."))
    for part in parts:
        if not part:
            raise ExecutionError(f"{what} '{path}' has an empty field name")
        if part.startswith("$"):
            raise ExecutionError(f"{what} '{path}': field names may not start with '$'")
    return parts


def get_nested(doc, parts: tuple[str, ...]):
    """The value at a dotted path through embedded documents (MISSING through anything else)."""
    value = doc
    for part in parts:
        if type(value) is not dict:
            return MISSING
        value = value.get(part, MISSING)
        if value is MISSING:
            return MISSING
    return value


def set_nested(doc: dict, parts: tuple[str, ...], value) -> dict:
    """A new document with `value` at the dotted path (copies only the dicts along the path;
    a non-document on the way is replaced by a new embedded document)."""
    out = dict(doc)
    if len(parts) == 1:
        if value is MISSING:
            out.pop(parts[0], None)
        else:
            out[parts[0]] = value
        return out
    inner = doc.get(parts[0], MISSING)
    out[parts[0]] = set_nested(inner if type(inner) is dict else {}, parts[1:], value)
    return out


def checked(docs, check):
    for doc in docs:
        check()
        yield doc


def materialize(stream, check) -> list:
    out = []
    append = out.append
    for doc in stream:
        check()
        append(doc)
    return out


def non_negative_int(value, stage: str, *, positive: bool = False) -> int:
    if not is_number(value) or isinstance(value, bool):
        raise ExecutionError(f"the {stage} value must be a number, got {bson_type(value)}")
    n = number_value(value)
    if n != n or n in (float("inf"), float("-inf")) or n != int(n):
        raise ExecutionError(f"the {stage} value cannot be converted to an integer: {value}")
    n = int(n)
    if n >= 2**63:
        raise ExecutionError(f"the {stage} value cannot be represented as a 64-bit integer: {value}")
    if n < 0 or (positive and n == 0):
        raise ExecutionError(f"the {stage} value must be {'positive' if positive else 'non-negative'}: {value}")
    return n


class Marker:
    """A named sentinel: a projection leaf that is not an expression (INCLUDE, EXCLUDE),
    a `$redact` verdict (`$$KEEP` ...)."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return self.name


# Field names of projection-like and sort specifications.


def field_parts(key, stage: str, prefix: tuple[str, ...]) -> tuple[str, ...]:
    if type(key) is not str or not key:
        raise ExecutionError(f"Invalid {stage} :: caused by :: field names must be non-empty strings")
    if key.startswith("$"):
        raise ExecutionError(f"Invalid {stage} :: caused by :: FieldPath field names may not start with '$'. "
                             f"Consider using $getField or $setField.")
    parts = tuple(key.split("."))
    if any(not p for p in parts):
        raise ExecutionError(f"Invalid {stage} :: caused by :: FieldPath field names may not be empty strings.")
    return prefix + parts



# Number and option checks shared by $bucket, $densify, $setWindowFields and $fill.

def is_num(v) -> bool:
    t = type(v)
    return t is int or t is float or t is Int64 or t is Decimal128


def as_float(v) -> float:
    return float(v.to_decimal()) if type(v) is Decimal128 else float(v)


def integral_number(v) -> bool:
    """A finite number with no fractional part (NaN and infinities are not)."""
    f = as_float(v)
    return math.isfinite(f) and f == int(f)


def check_keys(stage: str, spec, allowed: set, code: int = 40245):
    if type(spec) is not dict:
        raise ExecutionError(f"the argument to {stage} must be an object, but found type: {bson_type(spec)}")
    for key in spec:
        if key not in allowed:
            raise ExecutionError(f"Unrecognized option to {stage}: {key}", code=code)


TIME_UNITS = ("year", "quarter", "month", "week", "day", "hour", "minute", "second", "millisecond")


def is_operator(spec) -> bool:
    return type(spec) is dict and len(spec) >= 1 and next(iter(spec)).startswith("$")
