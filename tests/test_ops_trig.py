"""Trigonometry and timestamp expression operators."""

from __future__ import annotations

import math

import pytest
from bson.decimal128 import Decimal128
from bson.int64 import Int64
from bson.timestamp import Timestamp

from nlq.errors import ExecutionError
from nlq.mql.expressions import evaluate
from tests.helpers import assert_raises


def run(spec, doc=None):
    return evaluate(spec, doc or {"n": None, "s": "x", "ts": Timestamp(1622731060, 7)})


# https://www.mongodb.com/docs/manual/reference/operator/aggregation/sin/ (and cos, tan, asin, acos, atan,
# atan2, asinh, acosh, atanh, sinh, cosh, tanh, degreesToRadians, radiansToDegrees): int/long/double
# inputs give doubles, null/missing give null, NaN stays NaN.
VALUES = [
    ({"$sin": 0}, 0.0),
    ({"$sin": math.pi / 2}, 1.0),
    ({"$cos": 0}, 1.0),
    ({"$tan": Int64(0)}, 0.0),
    ({"$asin": 1}, math.pi / 2),
    ({"$acos": 1}, 0.0),
    ({"$atan": 1}, math.pi / 4),
    ({"$atan2": [1, 1]}, math.pi / 4),
    ({"$atan2": [1, -1]}, 3 * math.pi / 4),
    ({"$asinh": 0}, 0.0),
    ({"$acosh": 1}, 0.0),
    ({"$atanh": 0.5}, math.atanh(0.5)),
    ({"$sinh": 1}, math.sinh(1)),
    ({"$cosh": 0}, 1.0),
    ({"$tanh": 1}, math.tanh(1)),
    ({"$degreesToRadians": 180}, math.pi),
    ({"$radiansToDegrees": math.pi}, 180.0),
    ({"$atan": float("inf")}, math.pi / 2),
    ({"$tanh": float("-inf")}, -1.0),
    ({"$cosh": float("inf")}, float("inf")),
]


@pytest.mark.parametrize("spec,expected", VALUES)
def test_trig_values(spec, expected):
    result = run(spec)
    assert type(result) is float
    assert math.isclose(result, expected, abs_tol=1e-15)


# https://www.mongodb.com/docs/manual/reference/operator/aggregation/degreesToRadians/ (decimal example)
def test_decimal_in_decimal_out():
    result = run({"$degreesToRadians": Decimal128("180")})
    assert type(result) is Decimal128
    assert abs(float(result.to_decimal()) - math.pi) < 1e-15
    assert type(run({"$atan2": [Decimal128("1"), 1]})) is Decimal128


NULLS = [{"$sin": "$n"}, {"$cos": "$missing"}, {"$atan2": ["$n", 1]}, {"$atan2": [1, "$missing"]},
         {"$tsSecond": "$n"}, {"$tsIncrement": "$missing"}]


@pytest.mark.parametrize("spec", NULLS)
def test_null_propagation(spec):
    assert run(spec) is None


def test_nan_passes_through():
    assert math.isnan(run({"$sin": float("nan")}))
    assert math.isnan(run({"$acos": float("nan")}))


ERRORS = [
    ({"$sin": "$s"}, "$sin only supports numeric types, not string"),
    ({"$sin": float("inf")}, "cannot apply $sin to inf, value must in (-inf,inf)"),
    ({"$acos": 2}, "cannot apply $acos to 2, value must in [-1,1]"),
    ({"$asin": -1.5}, "cannot apply $asin to -1.5, value must in [-1,1]"),
    ({"$acosh": 0.5}, "cannot apply $acosh to 0.5, value must in [1,inf]"),
    ({"$atanh": 2}, "cannot apply $atanh to 2, value must in [-1,1]"),
    ({"$atan2": [1, "x"]}, "$atan2 only supports numeric types, not string"),
    ({"$sin": [1, 2]}, "takes 1 arguments"),
    ({"$tsSecond": 5}, "Argument to $tsSecond must be a timestamp, but is int"),
]


@pytest.mark.parametrize("spec,message", ERRORS)
def test_trig_errors(spec, message):
    assert_raises(ExecutionError, message, run, spec)


# https://www.mongodb.com/docs/manual/reference/operator/aggregation/tsSecond/
# https://www.mongodb.com/docs/manual/reference/operator/aggregation/tsIncrement/
def test_timestamp_parts():
    seconds, inc = run({"$tsSecond": "$ts"}), run({"$tsIncrement": "$ts"})
    assert (seconds, inc) == (1622731060, 7)
    assert type(seconds) is Int64 and type(inc) is Int64
