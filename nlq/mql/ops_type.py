"""Type expression operators: $type, $isNumber, $convert and its $toX shorthands.

Manual: https://www.mongodb.com/docs/manual/reference/operator/aggregation/convert/
A null or missing input converts to null (or `onNull`); a failed conversion
raises MongoDB's error unless `onError` is given. Doubles print as MongoDB
prints them (shortest round trip, "1" not "1.0"), dates as
"%Y-%m-%dT%H:%M:%S.%LZ".
"""

from __future__ import annotations

import datetime as _dt
import functools
import math
import re
import uuid
from decimal import Decimal, InvalidOperation

from bson.binary import Binary
from bson.decimal128 import Decimal128
from bson.int64 import Int64
from bson.objectid import ObjectId
from bson.timestamp import Timestamp

from nlq.errors import ExecutionError, UnsupportedOperatorError
from nlq.mql.expressions import compile_args, compile_expression, unary_operator
from nlq.mql.numeric import INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN, double_to_decimal, make_decimal, to_float
from nlq.mql.registry import EXPRESSION, implements
from nlq.mql.values import (CODE_TYPES, MISSING, TYPE_CODES, UTC, bson_type, date_to_millis, is_number,
                             iso_date_string, millis_to_date)

_INTEGER = re.compile(r"[+-]?[0-9]+\Z")
_FLOAT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\Z")
_SPECIAL = {"infinity": math.inf, "+infinity": math.inf, "-infinity": -math.inf, "inf": math.inf,
            "+inf": math.inf, "-inf": -math.inf, "nan": math.nan, "+nan": math.nan, "-nan": math.nan}
_OBJECT_ID = re.compile(r"[0-9a-fA-F]{24}\Z")


class _ConversionError(Exception):
    """A conversion MongoDB refuses; becomes ExecutionError unless onError is given."""


def _unsupported(value, target: str):
    raise _ConversionError(f"Unsupported conversion from {bson_type(value)} to {target}")


def format_double(x: float) -> str:
    """A double as MongoDB's $toString writes it: 2.5 -> '2.5', 1.0 -> '1', 1e20 -> '1e+20'."""
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x != x:
        return "NaN"
    if x == 0:
        return "-0" if math.copysign(1.0, x) < 0 else "0"
    text = repr(x)
    return text[:-2] if text.endswith(".0") else text


def _number_in_range(value, low: int, high: int, target: str) -> int:
    """Truncate a double/decimal toward zero, refusing NaN, infinities and overflow."""
    if type(value) is Decimal128:
        d = value.to_decimal()
        if d.is_nan():
            raise _ConversionError("Attempt to convert NaN value to integer")
        if d.is_infinite():
            raise _ConversionError("Attempt to convert infinity value to integer")
        n = int(d)
    else:
        if value != value:
            raise _ConversionError("Attempt to convert NaN value to integer")
        if math.isinf(value):
            raise _ConversionError("Attempt to convert infinity value to integer")
        n = int(value)
    if not low <= n <= high:
        raise _ConversionError(f"Conversion would overflow target type: {value}")
    return n


def _parse_integer(text: str, low: int, high: int) -> int:
    if not _INTEGER.match(text):
        raise _ConversionError(f"Failed to parse number '{text}': Did not consume whole string.")
    n = int(text)
    if not low <= n <= high:
        raise _ConversionError(f"Failed to parse number '{text}': Overflow")
    return n


def _parse_decimal(text: str) -> Decimal:
    lowered = text.lower()
    if lowered in _SPECIAL:
        return Decimal(_SPECIAL[lowered])
    if not _FLOAT.match(text):
        raise _ConversionError(f"Failed to parse number '{text}': Did not consume whole string.")
    return Decimal(text)


def to_int(v):
    t = type(v)
    if t is bool:
        return int(v)
    if t is int or t is Int64:
        if not INT32_MIN <= v <= INT32_MAX:
            raise _ConversionError(f"Conversion would overflow target type: {v}")
        return int(v)
    if t is float or t is Decimal128:
        return _number_in_range(v, INT32_MIN, INT32_MAX, "int")
    if t is str:
        return _parse_integer(v, INT32_MIN, INT32_MAX)
    _unsupported(v, "int")


def to_long(v):
    t = type(v)
    if t is bool:
        return Int64(int(v))
    if t is int or t is Int64:
        if not INT64_MIN <= v <= INT64_MAX:
            raise _ConversionError(f"Conversion would overflow target type: {v}")
        return Int64(v)
    if t is float or t is Decimal128:
        return Int64(_number_in_range(v, INT64_MIN, INT64_MAX, "long"))
    if t is str:
        return Int64(_parse_integer(v, INT64_MIN, INT64_MAX))
    if isinstance(v, _dt.datetime):
        return Int64(date_to_millis(v))
    _unsupported(v, "long")


def to_double(v):
    t = type(v)
    if t is bool or t is int or t is Int64 or t is float:
        return float(v)
    if t is Decimal128:
        d = v.to_decimal()
        f = float(d)
        if d.is_finite() and math.isinf(f):
            raise _ConversionError(f"Conversion would overflow target type: {v}")
        return f
    if t is str:
        lowered = v.lower()
        if lowered in _SPECIAL:
            return _SPECIAL[lowered]
        if not _FLOAT.match(v):
            raise _ConversionError(f"Failed to parse number '{v}': Did not consume whole string.")
        f = float(v)
        if math.isinf(f):
            raise _ConversionError(f"Failed to parse number '{v}': Out of range")
        return f
    if isinstance(v, _dt.datetime):
        return float(date_to_millis(v))
    _unsupported(v, "double")


def to_decimal(v):
    t = type(v)
    if t is Decimal128:
        return v
    if t is bool or t is int or t is Int64:
        return make_decimal(Decimal(int(v)))
    if t is float:
        return make_decimal(double_to_decimal(v))  # 2.5 -> 2.50000000000000, as the manual shows
    if t is str:
        try:
            return make_decimal(_parse_decimal(v))
        except InvalidOperation:
            raise _ConversionError(f"Failed to parse number '{v}'") from None
    if isinstance(v, _dt.datetime):
        return make_decimal(Decimal(date_to_millis(v)))
    _unsupported(v, "decimal")


def to_bool(v):
    t = type(v)
    if t is bool:
        return v
    if t is int or t is float or t is Int64:
        return v != 0
    if t is Decimal128:
        return not v.to_decimal().is_zero()
    return True  # every other type (string, date, objectId, object, array, ...) is true


def to_string(v):
    t = type(v)
    if t is str:
        return v
    if t is bool:
        return "true" if v else "false"
    if t is int or t is Int64:
        return str(int(v))
    if t is float:
        return format_double(v)
    if t is Decimal128:
        return str(v)
    if isinstance(v, ObjectId):
        return str(v)
    if isinstance(v, _dt.datetime):
        return iso_date_string(v)
    _unsupported(v, "string")


@functools.cache
def _date_string_parser():
    """MongoDB converts strings to dates with the $dateFromString parser (default format, UTC);
    reuse that operator's implementation rather than a second parser."""
    return compile_expression({"$dateFromString": {"dateString": "$$text"}})


def _parse_date(text: str) -> _dt.datetime:
    try:
        return _date_string_parser()({"CURRENT": {}, "ROOT": {}, "text": text})
    except ExecutionError as error:
        raise _ConversionError(str(error)) from None


def to_date(v):
    t = type(v)
    if isinstance(v, _dt.datetime):
        return v if v.tzinfo is not None else v.replace(tzinfo=UTC)
    if t is Int64 or t is float or t is Decimal128 or (t is int and not INT32_MIN <= v <= INT32_MAX):
        if t is float or t is Decimal128:
            ms = _number_in_range(v, INT64_MIN, INT64_MAX, "date")
        else:
            ms = int(v)
        try:
            return millis_to_date(ms)
        except (OverflowError, ValueError):
            raise _ConversionError(f"Conversion would overflow target type: {v}") from None
    if t is str:
        return _parse_date(v)
    if isinstance(v, ObjectId):
        return millis_to_date(date_to_millis(v.generation_time))
    if isinstance(v, Timestamp):
        return millis_to_date(v.time * 1000)
    _unsupported(v, "date")


def to_object_id(v):
    if isinstance(v, ObjectId):
        return v
    if type(v) is str:
        if len(v) != 24:
            raise _ConversionError(f"Failed to parse objectId '{v}': Invalid string length for parsing to OID, "
                                   f"expected 24 but found {len(v)}")
        if not _OBJECT_ID.match(v):
            raise _ConversionError(f"Failed to parse objectId '{v}': Invalid character found in hex string")
        return ObjectId(v)
    _unsupported(v, "objectId")


CONVERTERS = {
    "double": to_double, "string": to_string, "objectId": to_object_id, "bool": to_bool, "date": to_date,
    "int": to_int, "long": to_long, "decimal": to_decimal,
}


def _no_conversion(target: str):
    return lambda v: _unsupported(v, target)


# Other BSON types are valid `to` values that no input converts to (an onError-able failure).
for _type_name in TYPE_CODES:
    if _type_name not in CONVERTERS and _type_name != "binData":
        CONVERTERS[_type_name] = _no_conversion(_type_name)


def _target(to) -> str:
    """The target type name of `to` (an alias or a numeric type code)."""
    if type(to) is str:
        if to in CONVERTERS:
            return to
        if to == "binData":
            raise UnsupportedOperatorError("the embedded engine does not support $convert to binData")
        raise ExecutionError(f"Unknown type name: {to}")
    if is_number(to):
        f = to_float(to)
        if f != f or f in (float("inf"), float("-inf")) or f != int(f):
            raise ExecutionError(f"In $convert, numeric 'to' argument is not an integer: {to}")
        name = CODE_TYPES.get(int(f))
        if name in CONVERTERS:
            return name
        if name == "binData":
            raise UnsupportedOperatorError("the embedded engine does not support $convert to binData")
        raise ExecutionError(f"In $convert, numeric value for 'to' does not correspond to a BSON type: {to}")
    raise ExecutionError(f"$convert's 'to' argument must be a string or number, but is {bson_type(to)}")


def _convert_fn(input_fn, converter_fn, on_error, on_null):
    """The evaluator of a $convert; `converter_fn(vars)` is the converter, or None when `to` is null."""
    def evaluate(vars):
        value = input_fn(vars)
        converter = converter_fn(vars)
        if converter is None:
            return None
        if value is None or value is MISSING:
            return on_null(vars) if on_null is not None else None
        try:
            return converter(value)
        except _ConversionError as error:
            if on_error is not None:
                return on_error(vars)
            raise ExecutionError(f"{error} in $convert with no onError value", code=241) from None
    return evaluate


@implements(EXPRESSION, "$convert")
def _convert(args):
    if type(args) is not dict:
        raise ExecutionError("$convert expects an object of named arguments but found: " + bson_type(args))
    for key in args:
        if key not in ("input", "to", "onError", "onNull"):
            raise ExecutionError(f"$convert found an unknown argument: {key}")
    for key in ("input", "to"):
        if key not in args:
            raise ExecutionError(f"Missing '{key}' parameter to $convert")
    to_spec = args["to"]
    if type(to_spec) is dict and set(to_spec) <= {"type", "subtype"} and "type" in to_spec:
        to_spec = to_spec["type"]  # MongoDB 8.0 form {to: {type: ..., subtype: ...}}
    if (type(to_spec) is str and not to_spec.startswith("$")) or is_number(to_spec):
        converter = CONVERTERS[_target(to_spec)]  # a constant target, resolved once

        def converter_fn(vars):
            return converter
    else:
        to_fn = compile_expression(to_spec)

        def converter_fn(vars):
            to = to_fn(vars)
            return None if to is None or to is MISSING else CONVERTERS[_target(to)]
    on_error = compile_expression(args["onError"]) if "onError" in args else None
    on_null = compile_expression(args["onNull"]) if "onNull" in args else None
    return _convert_fn(compile_expression(args["input"]), converter_fn, on_error, on_null)


def _shorthand(name: str, target: str):
    def compile_(args):
        (input_fn,) = compile_args(args, name=name, min_args=1, max_args=1)
        converter = CONVERTERS[target]
        return _convert_fn(input_fn, lambda vars: converter, None, None)
    return compile_


for _name, _target_name in (("$toString", "string"), ("$toInt", "int"), ("$toLong", "long"),
                            ("$toDouble", "double"), ("$toDecimal", "decimal"), ("$toBool", "bool"),
                            ("$toDate", "date"), ("$toObjectId", "objectId")):
    implements(EXPRESSION, _name)(_shorthand(_name, _target_name))


@implements(EXPRESSION, "$type")
def _type(args):
    (fn,) = compile_args(args, name="$type", min_args=1, max_args=1)
    return lambda vars: bson_type(fn(vars))


@implements(EXPRESSION, "$isNumber")
def _is_number(args):
    (fn,) = compile_args(args, name="$isNumber", min_args=1, max_args=1)
    return lambda vars: is_number(fn(vars))


def _to_uuid(v) -> Binary:
    """$toUUID (MongoDB 8.0): a UUID string to binData subtype 4."""
    if type(v) is not str:
        raise ExecutionError(f"Unsupported conversion from {bson_type(v)} to binData in $convert with no onError "
                             f"value", code=241)
    try:
        return Binary.from_uuid(uuid.UUID(v))
    except ValueError:
        raise ExecutionError(f"Failed to parse UUID string '{v}' in $convert with no onError value",
                             code=241) from None


implements(EXPRESSION, "$toUUID")(unary_operator("$toUUID", _to_uuid))

