"""Boolean, comparison, conditional and variable operators."""

from __future__ import annotations

import datetime as dt

import pytest
from bson.decimal128 import Decimal128
from bson.int64 import Int64
from bson.max_key import MaxKey
from bson.min_key import MinKey
from bson.objectid import ObjectId

from nlq.errors import ExecutionError
from nlq.mql.expressions import evaluate
from nlq.mql.values import MISSING
from tests.helpers import assert_raises
from tests.test_accumulators import same

DOC = {"t": True, "f": False, "z": 0, "one": 1, "n": None, "s": "abc", "e": [], "o": {"a": 1},
       "date": dt.datetime(2020, 1, 1, tzinfo=dt.timezone.utc)}

CASES = [
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/and/ (or/, not/)
    ({"$and": [1, "green"]}, True),
    ({"$and": []}, True),
    ({"$and": [[], "$s"]}, True),  # an empty array is true
    ({"$and": [None, True]}, False),
    ({"$and": ["$missing"]}, False),
    ({"$and": ["$z"]}, False),
    ({"$and": [Decimal128("0")]}, False),
    ({"$or": []}, False),
    ({"$or": [False, "$n", 0, "$one"]}, True),
    ({"$or": ["$missing", None]}, False),
    ({"$not": [True]}, False),
    ({"$not": "$missing"}, True),
    ({"$not": [[False]]}, False),  # [false] is an array: truthy
    ({"$not": ["$e"]}, False),
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/eq/ and the comparison order page
    # https://www.mongodb.com/docs/manual/reference/bson-type-comparison-order/
    ({"$eq": [1, 1.0]}, True),
    ({"$eq": [Int64(2), Decimal128("2.0")]}, True),
    ({"$eq": ["$n", None]}, True),
    ({"$eq": ["$missing", None]}, False),  # missing is not null in aggregation expressions
    ({"$eq": ["$missing", "$alsoMissing"]}, True),
    ({"$lt": ["$missing", None]}, True),
    ({"$gt": [MinKey(), "$missing"]}, False),
    ({"$ne": ["$missing", None]}, True),
    ({"$eq": [{"a": 1, "b": 2}, {"b": 2, "a": 1}]}, False),  # field order matters
    ({"$eq": [[1, 2], [1, 2]]}, True),
    ({"$gt": ["a", 5]}, True),  # strings sort after numbers
    ({"$gt": [{}, "zzz"]}, True),
    ({"$gt": [[], {}]}, True),
    ({"$gt": [ObjectId("000000000000000000000000"), []]}, True),
    ({"$gt": [False, ObjectId("ffffffffffffffffffffffff")]}, True),
    ({"$gt": ["$date", True]}, True),
    ({"$gt": [MaxKey(), "$date"]}, True),
    ({"$lt": [None, 0]}, True),
    ({"$gte": [2, 2.0]}, True),
    ({"$lte": ["b", "a"]}, False),
    ({"$lt": [float("nan"), -1e308]}, True),
    ({"$eq": [float("nan"), float("nan")]}, True),
    ({"$gt": [[1, 3], [1, 2, 9]]}, True),
    ({"$cmp": [1, 2]}, -1),
    ({"$cmp": [2, 2.0]}, 0),
    ({"$cmp": ["b", "a"]}, 1),
    ({"$cmp": ["$missing", None]}, -1),
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/cond/
    ({"$cond": {"if": {"$gte": ["$one", 1]}, "then": "y", "else": "n"}}, "y"),
    ({"$cond": [{"$gt": ["$one", 5]}, "y", "n"]}, "n"),
    ({"$cond": ["$missing", 1, 2]}, 2),
    ({"$cond": ["$e", 1, 2]}, 1),
    ({"$cond": [True, "$missing", 2]}, MISSING),
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/ifNull/
    ({"$ifNull": ["$missing", "default"]}, "default"),
    ({"$ifNull": ["$n", "default"]}, "default"),
    ({"$ifNull": ["$z", "default"]}, 0),
    ({"$ifNull": ["$missing", "$n", "$s", "x"]}, "abc"),
    ({"$ifNull": ["$missing", "$alsoMissing"]}, MISSING),
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/switch/
    ({"$switch": {"branches": [{"case": {"$eq": ["$one", 0]}, "then": "zero"},
                               {"case": {"$eq": ["$one", 1]}, "then": "one"}], "default": "many"}}, "one"),
    ({"$switch": {"branches": [{"case": False, "then": 1}], "default": "d"}}, "d"),
    ({"$switch": {"branches": [{"case": "$s", "then": 1}, {"case": True, "then": 2}]}}, 1),
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/let/
    ({"$let": {"vars": {"low": 1, "high": "$one"}, "in": {"$add": ["$$low", "$$high"]}}}, 2),
    ({"$let": {"vars": {"x": 1}, "in": {"$let": {"vars": {"x": 2, "y": "$$x"}, "in": ["$$x", "$$y"]}}}}, [2, 1]),
    ({"$let": {"vars": {"doc": "$o"}, "in": "$$doc.a"}}, 1),
    ({"$let": {"vars": {"m": "$missing"}, "in": {"$ifNull": ["$$m", "none"]}}}, "none"),
    ({"$let": {"vars": {"CURRENT": "$o"}, "in": "$a"}}, 1),  # rebinding CURRENT moves field paths
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/literal/
    ({"$literal": "$one"}, "$one"),
    ({"$literal": {"$add": [1, 2]}}, {"$add": [1, 2]}),
    ({"$literal": [1, "$x"]}, [1, "$x"]),
]


@pytest.mark.parametrize("spec, expected", CASES)
def test_conditional(spec, expected):
    result = evaluate(spec, DOC)
    assert (result is MISSING) if expected is MISSING else same(result, expected), result


ERRORS = [
    ({"$switch": {"branches": [{"case": False, "then": 1}]}},
     "$switch could not find a matching branch for an input, and no default was specified."),
    ({"$switch": {"branches": []}}, "$switch requires at least one branch"),
    ({"$switch": {"branches": [{"then": 1}]}}, "$switch requires each branch have a 'case' expression"),
    ({"$cond": {"if": True, "then": 1}}, "Missing 'else' parameter to $cond"),
    ({"$cond": [True, 1]}, "$cond takes 3 arguments"),
    ({"$ifNull": ["$x"]}, "$ifNull takes at least 2 arguments"),
    ({"$eq": [1]}, "$eq takes 2 arguments"),
    ({"$not": [1, 2]}, "$not takes 1 arguments"),
    ({"$let": {"vars": {"Upper": 1}, "in": 1}}, "not a valid variable name"),
    ({"$let": {"vars": {}}}, "Missing 'in' parameter to $let"),
    ({"$let": {"vars": {"x": "$$y"}, "in": 1}}, "use of undefined variable: y"),
]


@pytest.mark.parametrize("spec, message", ERRORS)
def test_conditional_errors(spec, message):
    assert_raises(ExecutionError, message, evaluate, spec, DOC)


def test_cond_evaluates_only_the_chosen_branch():
    assert evaluate({"$cond": [True, 1, {"$divide": [1, 0]}]}, {}) == 1
    assert evaluate({"$switch": {"branches": [{"case": True, "then": 1}], "default": {"$divide": [1, 0]}}}, {}) == 1


def test_and_or_short_circuit():
    assert evaluate({"$and": [False, {"$divide": [1, 0]}]}, {}) is False
    assert evaluate({"$or": [True, {"$divide": [1, 0]}]}, {}) is True
