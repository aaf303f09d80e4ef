"""Set expression operators (BSON equality, duplicates and order ignored)."""

from __future__ import annotations

import pytest

from nlq.errors import ExecutionError
from nlq.mql.expressions import evaluate
from nlq.mql.values import group_key

DOC = {"a": [1, 2, 2, 3], "b": [3.0, 4], "e": [], "n": None, "s": "x", "nested": [[1, 2], [3]]}


def as_set(values):
    return sorted(group_key(v) for v in values)


SET_CASES = [
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/setUnion/
    ({"$setUnion": ["$a", "$b"]}, [1, 2, 3, 4]),
    ({"$setUnion": ["$a"]}, [1, 2, 3]),
    ({"$setUnion": []}, []),
    ({"$setUnion": ["$nested", [[1, 2]]]}, [[1, 2], [3]]),  # arrays are elements, not sub-sets
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/setIntersection/
    ({"$setIntersection": ["$a", "$b"]}, [3]),
    ({"$setIntersection": ["$a", "$e"]}, []),
    ({"$setIntersection": []}, []),
    ({"$setIntersection": [["a", "b", "a"], ["b", "a"]]}, ["a", "b"]),
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/setDifference/
    ({"$setDifference": ["$a", "$b"]}, [1, 2]),
    ({"$setDifference": ["$b", "$a"]}, [4]),
    ({"$setDifference": ["$e", "$a"]}, []),
]


@pytest.mark.parametrize("spec, expected", SET_CASES)
def test_set_results(spec, expected):
    result = evaluate(spec, DOC)
    assert as_set(result) == as_set(expected) and len(result) == len(expected), result


VALUE_CASES = [
    ({"$setUnion": ["$a", "$n"]}, None),
    ({"$setUnion": ["$a", "$missing"]}, None),
    ({"$setIntersection": ["$a", "$missing"]}, None),
    ({"$setDifference": ["$n", "$a"]}, None),
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/setEquals/
    ({"$setEquals": [[1, 2, 2], [2.0, 1]]}, True),
    ({"$setEquals": [[1, 2], [1, 2], [1]]}, False),
    ({"$setEquals": ["$e", []]}, True),
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/setIsSubset/
    ({"$setIsSubset": [[1, 1], "$a"]}, True),
    ({"$setIsSubset": ["$a", "$b"]}, False),
    ({"$setIsSubset": ["$e", "$b"]}, True),
    ({"$setIsSubset": [[[1, 2]], "$nested"]}, True),
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/allElementsTrue/ (anyElementTrue/)
    ({"$allElementsTrue": [[True, 1, "false"]]}, True),
    ({"$allElementsTrue": [[True, 0]]}, False),
    ({"$allElementsTrue": [[]]}, True),
    ({"$allElementsTrue": [[[False]]]}, True),
    ({"$allElementsTrue": [[None]]}, False),
    ({"$anyElementTrue": [[None, False, 0]]}, False),
    ({"$anyElementTrue": [[]]}, False),
    ({"$anyElementTrue": ["$a"]}, True),
]


@pytest.mark.parametrize("spec, expected", VALUE_CASES)
def test_set_values(spec, expected):
    assert evaluate(spec, DOC) == expected


ERRORS = [
    ({"$setUnion": ["$a", "$s"]}, "All operands of $setUnion must be arrays. One argument is of type: string"),
    ({"$setIntersection": ["$a", 1]}, "All operands of $setIntersection must be arrays"),
    ({"$setDifference": ["$s", "$a"]},
     "both operands of $setDifference must be arrays. First argument is of type: string"),
    ({"$setDifference": ["$a", "$s"]}, "Second argument is of type: string"),
    ({"$setEquals": ["$a", "$n"]}, "All operands of $setEquals must be arrays. One argument is of type: null"),
    ({"$setEquals": ["$a"]}, "$setEquals takes at least 2 arguments"),
    ({"$setIsSubset": ["$missing", "$a"]},
     "both operands of $setIsSubset must be arrays. First argument is of type: missing"),
    ({"$allElementsTrue": ["$n"]}, "$allElementsTrue's argument must be an array, but is null"),
    ({"$anyElementTrue": ["$s"]}, "$anyElementTrue's argument must be an array, but is string"),
]


@pytest.mark.parametrize("spec, message", ERRORS)
def test_set_errors(spec, message):
    with pytest.raises(ExecutionError) as error:
        evaluate(spec, DOC)
    assert message in str(error.value)
