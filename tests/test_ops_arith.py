"""Arithmetic, bitwise and accumulator-form expressions: exact values and types."""

from __future__ import annotations

import datetime as dt
import math

import pytest
from bson.decimal128 import Decimal128
from bson.int64 import Int64

from nlq.errors import ExecutionError
from nlq.mql.expressions import evaluate
from nlq.mql.values import MISSING
from tests.helpers import assert_raises
from tests.test_accumulators import same

UTC = dt.timezone.utc
D = dt.datetime(2020, 1, 1, tzinfo=UTC)
DOC = {"i": 7, "neg": -7, "f": 2.5, "l": Int64(10), "d": Decimal128("1.5"), "s": "x", "n": None, "date": D,
       "zero": 0, "arr": [1, 2, "x", 3.5]}

CASES = [
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/add/
    ({"$add": [1, 2]}, 3),
    ({"$add": ["$i", "$f"]}, 9.5),
    ({"$add": ["$i", "$l"]}, Int64(17)),
    ({"$add": [2**31 - 1, 1]}, Int64(2**31)),
    ({"$add": [Int64(2**63 - 1), 1]}, float(2**63)),
    ({"$add": ["$d", 1]}, Decimal128("2.5")),
    ({"$add": ["$i", "$n"]}, None),
    ({"$add": ["$i", "$missing"]}, None),
    ({"$add": []}, 0),
    ({"$add": ["$date", 1000]}, D + dt.timedelta(seconds=1)),
    ({"$add": [1000, "$date", 1.6]}, D + dt.timedelta(milliseconds=1002)),
    ({"$add": ["$date", 0.5, 0.5]}, D + dt.timedelta(milliseconds=2)),  # each double rounds on its own
    ({"$add": [0.1, 0.2, 0.3]}, 0.1 + 0.2 + 0.3),  # doubles add one by one (MongoDB 7/8 AddState)
    ({"$add": [1, 0.5, Decimal128("1")]}, Decimal128("2.50000000000000")),
    ({"$add": [Int64(2**63 - 1), 1, 1.5]}, float(2**63) + 1.5),
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/subtract/
    ({"$subtract": [5, 7]}, -2),
    ({"$subtract": ["$date", {"$literal": dt.datetime(2019, 12, 31, tzinfo=UTC)}]}, Int64(86_400_000)),
    ({"$subtract": ["$date", 60_000]}, D - dt.timedelta(minutes=1)),
    ({"$subtract": ["$f", "$d"]}, Decimal128("1.00000000000000")),  # the double becomes 15 digits
    ({"$subtract": ["$n", 1]}, None),
    ({"$subtract": [-2**31, 1]}, Int64(-2**31 - 1)),
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/multiply/
    ({"$multiply": [2, 3, 4]}, 24),
    ({"$multiply": [2**20, 2**20]}, Int64(2**40)),
    ({"$multiply": [Int64(2**40), 2**40]}, float(2**80)),
    ({"$multiply": [2**31, 2**31, 2**31, 0]}, 0.0),  # overflowed to double before the zero
    ({"$multiply": ["$f", 2]}, 5.0),
    ({"$multiply": ["$d", 2]}, Decimal128("3.0")),
    ({"$multiply": [2, "$missing"]}, None),
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/divide/
    ({"$divide": [9, 3]}, 3.0),
    ({"$divide": [1, 4]}, 0.25),
    ({"$divide": ["$d", 3]}, Decimal128("0.5")),
    ({"$divide": [1, None]}, None),
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/mod/
    ({"$mod": [7, 3]}, 1),
    ({"$mod": [-7, 3]}, -1),  # sign of the dividend
    ({"$mod": [7, -3]}, 1),
    ({"$mod": [7.5, 2]}, 1.5),
    ({"$mod": ["$l", 3]}, Int64(1)),
    ({"$mod": [Decimal128("7.5"), 2]}, Decimal128("1.5")),
    ({"$mod": ["$n", 2]}, None),
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/abs/
    ({"$abs": "$neg"}, 7),
    ({"$abs": -2.5}, 2.5),
    ({"$abs": -2**31}, Int64(2**31)),
    ({"$abs": Decimal128("-1.5")}, Decimal128("1.5")),
    ({"$abs": "$n"}, None),
    ({"$abs": "$missing"}, None),
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/ceil/ (floor/)
    ({"$ceil": 2.1}, 3.0),
    ({"$ceil": -2.9}, -2.0),
    ({"$ceil": 5}, 5),
    ({"$floor": -2.1}, -3.0),
    ({"$floor": Decimal128("2.7")}, Decimal128("2")),
    ({"$floor": Int64(3)}, Int64(3)),
    ({"$floor": None}, None),
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/exp/ (ln/, log/, log10/, sqrt/)
    ({"$exp": 0}, 1.0),
    ({"$ln": 1}, 0.0),
    ({"$ln": math.e}, 1.0),
    ({"$log10": 1000}, 3.0),
    ({"$log": [8, 2]}, 3.0),
    ({"$log": [100, 10]}, 2.0),
    ({"$sqrt": 25}, 5.0),
    ({"$sqrt": Decimal128("2.25")}, Decimal128("1.5")),
    ({"$sqrt": "$missing"}, None),
    ({"$log": [None, 2]}, None),
    ({"$ln": math.nan}, math.nan),
    ({"$sqrt": Decimal128("NaN")}, Decimal128("NaN")),
    ({"$log": [math.nan, 10]}, math.nan),
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/pow/
    ({"$pow": [5, 2]}, 25),
    ({"$pow": [5, -2]}, 0.04),
    ({"$pow": [-5, 0.5]}, math.nan),
    ({"$pow": [2, 40]}, Int64(2**40)),
    ({"$pow": [Int64(2), 3]}, Int64(8)),
    ({"$pow": [-1, -3]}, -1),
    ({"$pow": [2, 0.5]}, math.sqrt(2)),
    ({"$pow": [Decimal128("2"), 2]}, Decimal128("4")),
    ({"$pow": [None, 2]}, None),
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/round/ : half rounds to even
    ({"$round": [2.5, 0]}, 2.0),
    ({"$round": [3.5]}, 4.0),
    ({"$round": [-2.5, 0]}, -2.0),
    ({"$round": [19.25, 1]}, 19.2),
    ({"$round": [28.73, -1]}, 30.0),
    ({"$round": [34.32, -1]}, 30.0),
    ({"$round": [1234, -2]}, 1200),
    ({"$round": [1250, -2]}, 1200),
    ({"$round": [1350, -2]}, 1400),
    ({"$round": [Int64(1234), 2]}, Int64(1234)),
    ({"$round": [Decimal128("1.2345"), 2]}, Decimal128("1.23")),
    ({"$round": [None, 1]}, None),
    ({"$round": [1.5, None]}, None),
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/trunc/
    ({"$trunc": [19.25, 1]}, 19.2),
    ({"$trunc": [-2.7]}, -2.0),
    ({"$trunc": [28.73, -1]}, 20.0),
    ({"$trunc": [Decimal128("-1.99"), 1]}, Decimal128("-1.9")),
    ({"$trunc": "$missing"}, None),
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/bitAnd/ (bitOr/, bitXor/, bitNot/)
    ({"$bitAnd": [12, 10]}, 8),
    ({"$bitOr": [12, 10]}, 14),
    ({"$bitXor": [12, 10]}, 6),
    ({"$bitAnd": [12, Int64(10)]}, Int64(8)),
    ({"$bitNot": 0}, -1),
    ({"$bitNot": Int64(5)}, Int64(-6)),
    ({"$bitOr": [1, None]}, None),
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/sum/ : expression forms
    ({"$sum": "$arr"}, 6.5),  # a single array operand is traversed
    ({"$sum": ["$arr"]}, 6.5),
    ({"$sum": ["$arr", 1]}, 1),  # in an operand list an array is a non-number
    ({"$sum": [1, "$s", "$n", "$missing", 2]}, 3),
    ({"$sum": "$missing"}, 0),
    ({"$sum": [2**31 - 1, 1]}, Int64(2**31)),
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/avg/
    ({"$avg": "$arr"}, 6.5 / 3),
    ({"$avg": [1, 2, "$s"]}, 1.5),
    ({"$avg": "$s"}, None),
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/max/ (min/)
    ({"$max": "$arr"}, "x"),
    ({"$max": [1, "$n", "$missing"]}, 1),
    ({"$min": "$arr"}, 1),
    ({"$min": ["$n", "$missing"]}, None),
    ({"$min": [[1, 2], 5]}, 5),  # operand list: arrays are values (and sort after numbers)
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/stdDevPop/ (stdDevSamp/)
    ({"$stdDevPop": [1, 3]}, 1.0),
    ({"$stdDevSamp": [1, 3]}, math.sqrt(2)),
    ({"$stdDevSamp": [1]}, None),
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/median/ (percentile/)
    ({"$median": {"input": [60, 89, 63, 97], "method": "approximate"}}, 63.0),
    ({"$median": {"input": ["$i", "$f", "$s"], "method": "approximate"}}, 2.5),
    ({"$median": {"input": "$s", "method": "approximate"}}, None),
    ({"$percentile": {"input": "$arr", "p": [0.5, 1], "method": "approximate"}}, [2.0, 3.5]),
    ({"$percentile": {"input": "$s", "p": [0.5, 1], "method": "approximate"}}, [None, None]),
]


@pytest.mark.parametrize("spec, expected", CASES)
def test_arithmetic(spec, expected):
    result = evaluate(spec, DOC)
    assert same(result, expected), result


ERRORS = [
    ({"$add": [1, "$s"]}, "$add only supports numeric or date types, not string"),
    ({"$add": ["$date", "$date"]}, "only one date allowed in an $add expression"),
    ({"$subtract": [1, "$date"]}, "can't $subtract date from int"),
    ({"$subtract": ["$s", 1]}, "can't $subtract int from string"),
    ({"$multiply": [1, "$s"]}, "$multiply only supports numeric types, not string"),
    ({"$divide": [1, 0]}, "can't $divide by zero"),
    ({"$divide": [1, Decimal128("0")]}, "can't $divide by zero"),
    ({"$divide": ["$s", 1]}, "$divide only supports numeric types"),
    ({"$mod": [1, 0]}, "can't $mod by zero"),
    ({"$abs": "$s"}, "$abs only supports numeric types, not string"),
    ({"$abs": Int64(-2**63)}, "can't take $abs of long long min"),
    ({"$ln": 0}, "$ln's argument must be a positive number, but is 0"),
    ({"$log10": -1}, "$log10's argument must be a positive number"),
    ({"$sqrt": -1}, "$sqrt's argument must be greater than or equal to 0"),
    ({"$log": [10, 1]}, "$log's base must be a positive number not equal to 1"),
    ({"$pow": [0, -1]}, "$pow cannot take a base of 0 and a negative exponent"),
    ({"$pow": ["$s", 1]}, "$pow's base must be numeric, not string"),
    ({"$round": [1.5, 200]}, "place"),
    ({"$round": ["$s", 1]}, "$round only supports numeric types"),
    ({"$bitAnd": [1, 1.5]}, "$bitAnd only supports int and long operands"),
    ({"$bitNot": "$s"}, "$bitNot only supports int and long"),
    ({"$subtract": [1]}, "takes 2 arguments"),
]


@pytest.mark.parametrize("spec, message", ERRORS)
def test_arithmetic_errors(spec, message):
    assert_raises(ExecutionError, message, evaluate, spec, DOC)


def test_missing_and_null_propagate_as_null_not_missing():
    assert evaluate({"$multiply": ["$missing", 2]}, {}) is None
    assert evaluate({"$sum": "$missing"}, {}) is not MISSING


@pytest.mark.parametrize("spec, code", [
    ({"$divide": [1, 0]}, 16608),
    ({"$mod": [1, 0]}, 16610),
    ({"$add": ["a", 1]}, 16554),
    ({"$multiply": ["a", 1]}, 16555),
    ({"$size": 1}, 17124),
    ({"$in": [1, 1]}, 40081),
    ({"$arrayElemAt": [1, 0]}, 28689),
    ({"$switch": {"branches": [{"case": False, "then": 1}]}}, 40066),
    ({"$toInt": "x"}, 241),
])
def test_errors_carry_mongodb_codes(spec, code):
    with pytest.raises(ExecutionError) as error:
        evaluate(spec, {})
    assert error.value.code == code
