"""Trigonometry expression operators.

Manual: https://www.mongodb.com/docs/manual/reference/operator/aggregation/#trigonometry-expression-operators
— inputs are numbers (null/missing give null, NaN stays NaN); int/long/double
give a double, decimal gives a decimal; a value outside an operator's domain is
an error naming the operator and the allowed interval.
"""

from __future__ import annotations

import math
from decimal import Decimal

from bson.decimal128 import Decimal128
from bson.int64 import Int64

from nlq.errors import ExecutionError
from nlq.mql import registry
from nlq.mql.expressions import compile_args, unary_operator
from nlq.mql.registry import EXPRESSION
from nlq.mql.values import MISSING, bson_type

_INF = math.inf

# name -> (function, lower bound, upper bound, bounds inclusive?, domain text in MongoDB's message)
_UNARY = {
    "$sin": (math.sin, -_INF, _INF, False, "(-inf,inf)"),
    "$cos": (math.cos, -_INF, _INF, False, "(-inf,inf)"),
    "$tan": (math.tan, -_INF, _INF, False, "(-inf,inf)"),
    "$asin": (math.asin, -1.0, 1.0, True, "[-1,1]"),
    "$acos": (math.acos, -1.0, 1.0, True, "[-1,1]"),
    "$atan": (math.atan, -_INF, _INF, True, "[-inf,inf]"),
    "$asinh": (math.asinh, -_INF, _INF, True, "[-inf,inf]"),
    "$acosh": (math.acosh, 1.0, _INF, True, "[1,inf]"),
    "$atanh": (math.atanh, -1.0, 1.0, True, "[-1,1]"),
    "$sinh": (math.sinh, -_INF, _INF, True, "[-inf,inf]"),
    "$cosh": (math.cosh, -_INF, _INF, True, "[-inf,inf]"),
    "$tanh": (math.tanh, -_INF, _INF, True, "[-inf,inf]"),
    "$degreesToRadians": (math.radians, -_INF, _INF, True, "[-inf,inf]"),
    "$radiansToDegrees": (math.degrees, -_INF, _INF, True, "[-inf,inf]"),
}


def _as_float(value) -> float:
    return float(value.to_decimal()) if type(value) is Decimal128 else float(value)


def _to_decimal128(x: float) -> Decimal128:
    if x != x:
        return Decimal128("NaN")
    if x in (_INF, -_INF):
        return Decimal128("Infinity" if x > 0 else "-Infinity")
    return Decimal128(Decimal(repr(x)))


def _shown(value) -> str:
    x = _as_float(value)
    if x in (_INF, -_INF):
        return "inf" if x > 0 else "-inf"
    return repr(value) if type(value) is not float else ("%g" % x)


def _unary(op: str):
    fn, lo, hi, inclusive, domain = _UNARY[op]

    def trig(v):
        t = type(v)
        if t is not int and t is not float and t is not Int64 and t is not Decimal128:
            raise ExecutionError(f"{op} only supports numeric types, not {bson_type(v)}", code=28765)
        x = _as_float(v)
        if x != x:
            return v if t is not int and t is not Int64 else x
        ok = (lo <= x <= hi) if inclusive else (lo < x < hi)
        if not ok:
            raise ExecutionError(f"cannot apply {op} to {_shown(v)}, value must in {domain}", code=50989)
        try:
            r = fn(x)
        except (ValueError, OverflowError):
            r = math.copysign(_INF, x) if op in ("$sinh",) else _INF
        return _to_decimal128(r) if t is Decimal128 else r
    return unary_operator(op, trig)


for _op in _UNARY:
    registry.implements(EXPRESSION, _op)(_unary(_op))


@registry.implements(EXPRESSION, "$atan2")
def _atan2(args):
    y_fn, x_fn = compile_args(args, name="$atan2", min_args=2, max_args=2)

    def atan2(vars):
        y, x = y_fn(vars), x_fn(vars)
        if y is None or y is MISSING or x is None or x is MISSING:
            return None
        for v in (y, x):
            t = type(v)
            if t is not int and t is not float and t is not Int64 and t is not Decimal128:
                raise ExecutionError(f"$atan2 only supports numeric types, not {bson_type(v)}", code=51044)
        r = math.atan2(_as_float(y), _as_float(x))
        return _to_decimal128(r) if type(y) is Decimal128 or type(x) is Decimal128 else r
    return atan2
