"""Array expression operators: exact values, null/missing propagation, MongoDB's errors."""

from __future__ import annotations

import pytest

from nlq.errors import ExecutionError
from nlq.mql.expressions import compile_expression, evaluate
from nlq.mql.ops_array import RANGE_MAX_ELEMENTS
from nlq.mql.values import MISSING
from tests.helpers import assert_raises
from tests.test_accumulators import same

DOC = {"a": [1, 2, 3, 4], "e": [], "n": None, "s": "str", "o": {"x": 1, "y": [2]},
       "docs": [{"k": "b", "v": 2}, {"k": "a", "v": 1}], "mixed": [3, None, "a", 1, [0], {"z": 1}]}

CASES = [
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/arrayElemAt/
    ({"$arrayElemAt": ["$a", 0]}, 1),
    ({"$arrayElemAt": ["$a", -1]}, 4),
    ({"$arrayElemAt": ["$a", 15]}, MISSING),
    ({"$arrayElemAt": ["$a", 1.0]}, 2),
    ({"$arrayElemAt": ["$n", 0]}, None),
    ({"$arrayElemAt": ["$missing", 0]}, None),
    ({"$arrayElemAt": ["$a", "$missing"]}, None),
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/first-array-element/ (last-array-element/)
    ({"$first": "$a"}, 1),
    ({"$last": "$a"}, 4),
    ({"$first": "$e"}, MISSING),
    ({"$last": "$missing"}, None),
    ({"$first": [[5, 6]]}, 5),
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/size/
    ({"$size": "$a"}, 4),
    ({"$size": "$e"}, 0),
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/isArray/
    ({"$isArray": "$a"}, True),
    ({"$isArray": ["$s"]}, False),
    ({"$isArray": "$missing"}, False),
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/in/
    ({"$in": [2.0, "$a"]}, True),
    ({"$in": ["x", "$a"]}, False),
    ({"$in": [None, [None]]}, True),
    ({"$in": ["$missing", [None]]}, False),
    ({"$in": [[2], [[2], 3]]}, True),
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/indexOfArray/
    ({"$indexOfArray": ["$a", 3]}, 2),
    ({"$indexOfArray": [[1, 2, 1], 1, 1]}, 2),
    ({"$indexOfArray": [[1, 2, 1], 1, 1, 2]}, -1),
    ({"$indexOfArray": ["$a", 9]}, -1),
    ({"$indexOfArray": ["$n", 1]}, None),
    ({"$indexOfArray": [[None], None]}, 0),
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/slice/
    ({"$slice": ["$a", 2]}, [1, 2]),
    ({"$slice": ["$a", -2]}, [3, 4]),
    ({"$slice": ["$a", 1, 2]}, [2, 3]),
    ({"$slice": ["$a", -3, 2]}, [2, 3]),
    ({"$slice": ["$a", -10, 2]}, [1, 2]),
    ({"$slice": ["$a", 10, 2]}, []),
    ({"$slice": ["$n", 1]}, None),
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/concatArrays/
    ({"$concatArrays": ["$a", [5], "$e"]}, [1, 2, 3, 4, 5]),
    ({"$concatArrays": ["$a", "$missing"]}, None),
    ({"$concatArrays": []}, []),
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/range/
    ({"$range": [0, 5]}, [0, 1, 2, 3, 4]),
    ({"$range": [0, 10, 3]}, [0, 3, 6, 9]),
    ({"$range": [5, 0, -2]}, [5, 3, 1]),
    ({"$range": [5, 0]}, []),
    ({"$range": [0, 2.0]}, [0, 1]),
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/reverseArray/
    ({"$reverseArray": "$a"}, [4, 3, 2, 1]),
    ({"$reverseArray": "$missing"}, None),
    ({"$reverseArray": [[]]}, []),
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/zip/
    ({"$zip": {"inputs": [[1, 2, 3], ["a", "b"]]}}, [[1, "a"], [2, "b"]]),
    ({"$zip": {"inputs": [[1, 2, 3], ["a"]], "useLongestLength": True}}, [[1, "a"], [2, None], [3, None]]),
    ({"$zip": {"inputs": [[1, 2], ["a"]], "useLongestLength": True, "defaults": [0, "z"]}}, [[1, "a"], [2, "z"]]),
    ({"$zip": {"inputs": ["$a", "$missing"]}}, None),
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/objectToArray/
    ({"$objectToArray": "$o"}, [{"k": "x", "v": 1}, {"k": "y", "v": [2]}]),
    ({"$objectToArray": "$missing"}, None),
    ({"$objectToArray": {"$literal": {}}}, []),
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/arrayToObject/
    ({"$arrayToObject": "$docs"}, {"b": 2, "a": 1}),
    ({"$arrayToObject": [[["x", 1], ["y", 2], ["x", 3]]]}, {"x": 3, "y": 2}),  # the last value wins
    ({"$arrayToObject": {"$objectToArray": "$o"}}, {"x": 1, "y": [2]}),
    ({"$arrayToObject": "$n"}, None),
    ({"$arrayToObject": [[]]}, {}),
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/filter/
    ({"$filter": {"input": "$a", "cond": {"$gt": ["$$this", 2]}}}, [3, 4]),
    ({"$filter": {"input": "$a", "as": "num", "cond": {"$lt": ["$$num", 3]}, "limit": 1}}, [1]),
    ({"$filter": {"input": "$a", "cond": True, "limit": None}}, [1, 2, 3, 4]),
    ({"$filter": {"input": "$missing", "cond": True}}, None),
    ({"$filter": {"input": "$docs", "cond": {"$eq": ["$$this.k", "a"]}}}, [{"k": "a", "v": 1}]),
    ({"$filter": {"input": "$a", "cond": {"$eq": ["$$this", "$$ROOT.a.0"]}}}, []),
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/map/
    ({"$map": {"input": "$a", "as": "x", "in": {"$multiply": ["$$x", 10]}}}, [10, 20, 30, 40]),
    ({"$map": {"input": "$docs", "in": "$$this.k"}}, ["b", "a"]),
    ({"$map": {"input": "$docs", "in": "$$this.nothing"}}, [None, None]),
    ({"$map": {"input": "$n", "in": 1}}, None),
    ({"$map": {"input": "$a", "in": "$s"}}, ["str"] * 4),  # $field still reads CURRENT
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/reduce/
    ({"$reduce": {"input": "$a", "initialValue": 0, "in": {"$add": ["$$value", "$$this"]}}}, 10),
    ({"$reduce": {"input": [["a"], ["b", "c"]], "initialValue": [],
                  "in": {"$concatArrays": ["$$value", "$$this"]}}}, ["a", "b", "c"]),
    ({"$reduce": {"input": "$e", "initialValue": 7, "in": 0}}, 7),
    ({"$reduce": {"input": "$missing", "initialValue": 0, "in": 0}}, None),
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/sortArray/
    ({"$sortArray": {"input": [3, 1, 2], "sortBy": 1}}, [1, 2, 3]),
    ({"$sortArray": {"input": "$mixed", "sortBy": 1}}, [None, 1, 3, "a", {"z": 1}, [0]]),
    ({"$sortArray": {"input": "$mixed", "sortBy": -1}}, [[0], {"z": 1}, "a", 3, 1, None]),
    ({"$sortArray": {"input": "$docs", "sortBy": {"k": 1}}}, [{"k": "a", "v": 1}, {"k": "b", "v": 2}]),
    ({"$sortArray": {"input": "$docs", "sortBy": {"v": -1}}}, [{"k": "b", "v": 2}, {"k": "a", "v": 1}]),
    ({"$sortArray": {"input": "$missing", "sortBy": 1}}, None),
    ({"$sortArray": {"input": [{"a": {"b": 2}}, 5, {"a": {"b": 1}}], "sortBy": {"a.b": 1}}},
     [5, {"a": {"b": 1}}, {"a": {"b": 2}}]),  # non-documents sort as missing the field
    ({"$sortArray": {"input": [{"a": 3, "b": 1}, {"a": 1, "b": 2}, {"a": 3, "b": 0}], "sortBy": {"a": -1, "b": 1}}},
     [{"a": 3, "b": 0}, {"a": 3, "b": 1}, {"a": 1, "b": 2}]),
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/firstN-array-element/ (lastN, maxN, minN)
    ({"$firstN": {"n": 2, "input": "$a"}}, [1, 2]),
    ({"$firstN": {"n": 10, "input": [None, 1]}}, [None, 1]),
    ({"$lastN": {"n": 2, "input": "$a"}}, [3, 4]),
    ({"$maxN": {"n": 2, "input": [1, None, 7, 3]}}, [7, 3]),
    ({"$minN": {"n": 3, "input": [9, None, 7, 3]}}, [3, 7, 9]),
    ({"$firstN": {"n": 1, "input": "$missing"}}, None),
]


@pytest.mark.parametrize("spec, expected", CASES)
def test_array(spec, expected):
    result = evaluate(spec, DOC)
    assert (result is MISSING) if expected is MISSING else same(result, expected), result


ERRORS = [
    ({"$arrayElemAt": ["$s", 0]}, "$arrayElemAt's first argument must be an array, but is string"),
    ({"$arrayElemAt": ["$a", "x"]}, "$arrayElemAt's second argument must be a numeric value"),
    ({"$arrayElemAt": ["$a", 1.5]}, "must be representable as a 32-bit integral value"),
    ({"$first": "$s"}, "$first's argument must be an array, but is string"),
    ({"$size": "$missing"}, "The argument to $size must be an array. Type of the argument: missing"),
    ({"$size": "$n"}, "Type of the argument: null"),
    ({"$in": [1, "$missing"]}, "$in requires an array as a second argument, found: missing"),
    ({"$indexOfArray": ["$s", 1]}, "$indexOfArray requires an array as a first argument, found: string"),
    ({"$indexOfArray": ["$a", 1, -1]}, "nonnegative"),
    ({"$slice": ["$a", 0, 0]}, "Third argument to $slice must be positive"),
    ({"$slice": ["$s", 1]}, "First argument to $slice must be an array"),
    ({"$concatArrays": ["$a", "$s"]}, "$concatArrays only supports arrays, not string"),
    ({"$range": [0, 5, 0]}, "$range requires a non-zero step value"),
    ({"$range": [0, "$s"]}, "$range requires a numeric ending value"),
    ({"$range": [0, RANGE_MAX_ELEMENTS + 1]}, "$range would use too much memory"),
    ({"$reverseArray": "$s"}, "The argument to $reverseArray must be an array"),
    ({"$zip": {"inputs": ["$a", "$s"]}}, "$zip found a non-array expression in input"),
    ({"$zip": {"inputs": ["$a"], "defaults": [1]}}, "cannot specify defaults unless useLongestLength is true"),
    ({"$objectToArray": "$s"}, "$objectToArray requires a document input, found: string"),
    ({"$arrayToObject": [[["a", 1], {"k": "b", "v": 2}]]}, "consistent input format"),
    ({"$arrayToObject": [[[1, 2]]]}, "$arrayToObject requires the key to be a string"),
    ({"$arrayToObject": [[["a", 1, 2]]]}, "size 2 arrays"),
    ({"$filter": {"input": "$s", "cond": True}}, "input to $filter must be an array not string"),
    ({"$filter": {"input": "$a", "cond": True, "limit": 0}}, "limit must be greater than 0"),
    ({"$filter": {"input": "$a"}}, "$filter requires 'cond'"),
    ({"$filter": {"input": "$a", "cond": True, "as": "Bad"}}, "not a valid variable name"),
    ({"$map": {"input": "$s", "in": 1}}, "input to $map must be an array not string"),
    ({"$reduce": {"input": "$s", "initialValue": 0, "in": 1}}, "$reduce requires that 'input' be an array"),
    ({"$sortArray": {"input": "$s", "sortBy": 1}}, "The input argument to $sortArray must be an array"),
    ({"$sortArray": {"input": "$a"}}, "exactly the fields 'input' and 'sortBy'"),
    ({"$sortArray": {"input": "$a", "sortBy": {"x": 2}}}, "must be 1 (for ascending) or -1"),
    ({"$firstN": {"n": 0, "input": "$a"}}, "'n' must be greater than 0"),
    ({"$lastN": {"n": 1, "input": "$s"}}, "input must be an array"),
    ({"$map": {"input": "$a", "in": "$$undefinedVar"}}, "use of undefined variable"),
]


@pytest.mark.parametrize("spec, message", ERRORS)
def test_array_errors(spec, message):
    assert_raises(ExecutionError, message, evaluate, spec, DOC)


def test_filter_returns_the_same_element_objects():
    doc = {"items": [{"a": 1}]}
    assert evaluate({"$filter": {"input": "$items", "cond": True}}, doc)[0] is doc["items"][0]


def test_map_variables_do_not_leak_into_outer_scope():
    vars_ = {"CURRENT": DOC, "ROOT": DOC}
    compile_expression({"$map": {"input": "$a", "as": "x", "in": "$$x"}})(vars_)
    assert "x" not in vars_
