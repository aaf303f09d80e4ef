"""Object expression operators: $mergeObjects, $getField, $setField, $unsetField."""

from __future__ import annotations

import pytest

from nlq.errors import ExecutionError
from nlq.mql.expressions import evaluate
from nlq.mql.values import MISSING
from tests.test_accumulators import same

DOC = {"a": {"x": 1, "y": 2}, "b": {"y": 3, "z": 4}, "n": None, "s": "str", "price.usd": 45, "$price": 7}

CASES = [
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/mergeObjects/
    ({"$mergeObjects": ["$a", "$b"]}, {"x": 1, "y": 3, "z": 4}),
    ({"$mergeObjects": ["$a", "$n", "$missing"]}, {"x": 1, "y": 2}),
    ({"$mergeObjects": "$a"}, {"x": 1, "y": 2}),
    ({"$mergeObjects": ["$n"]}, {}),
    ({"$mergeObjects": [{"k": "$a.x"}, {"k": "$missing"}]}, {"k": 1}),  # missing fields are not set
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/getField/
    ({"$getField": "price.usd"}, 45),
    ({"$getField": {"field": "price.usd"}}, 45),
    ({"$getField": {"field": {"$literal": "$price"}}}, 7),
    ({"$getField": {"field": "y", "input": "$b"}}, 3),
    ({"$getField": {"field": "q", "input": "$b"}}, MISSING),
    ({"$getField": {"field": "q", "input": "$n"}}, None),
    ({"$getField": {"field": "q", "input": "$missing"}}, None),
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/setField/
    ({"$setField": {"field": "w", "input": "$a", "value": 9}}, {"x": 1, "y": 2, "w": 9}),
    ({"$setField": {"field": "x", "input": "$a", "value": [0]}}, {"x": [0], "y": 2}),
    ({"$setField": {"field": "x", "input": "$a", "value": "$$REMOVE"}}, {"y": 2}),
    ({"$setField": {"field": "a.b", "input": {}, "value": 1}}, {"a.b": 1}),
    ({"$setField": {"field": {"$literal": "$p"}, "input": {}, "value": 1}}, {"$p": 1}),
    ({"$setField": {"field": "x", "input": "$n", "value": 1}}, None),
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/unsetField/
    ({"$unsetField": {"field": "x", "input": "$a"}}, {"y": 2}),
    ({"$unsetField": {"field": "q", "input": "$a"}}, {"x": 1, "y": 2}),
    ({"$unsetField": {"field": "price.usd", "input": "$$ROOT"}},
     {"a": {"x": 1, "y": 2}, "b": {"y": 3, "z": 4}, "n": None, "s": "str", "$price": 7}),
    ({"$unsetField": {"field": "x", "input": "$missing"}}, None),
]


@pytest.mark.parametrize("spec, expected", CASES)
def test_object(spec, expected):
    result = evaluate(spec, DOC)
    assert (result is MISSING) if expected is MISSING else same(result, expected), result


def test_set_field_does_not_modify_the_input():
    doc = {"a": {"x": 1}}
    evaluate({"$setField": {"field": "x", "input": "$a", "value": 2}}, doc)
    evaluate({"$unsetField": {"field": "x", "input": "$a"}}, doc)
    assert doc == {"a": {"x": 1}}


ERRORS = [
    ({"$mergeObjects": ["$a", "$s"]}, "$mergeObjects requires object inputs, but input 'str' is of type string"),
    ({"$getField": {"field": "x", "input": "$s"}}, "$getField requires 'input' to evaluate to type Object"),
    ({"$getField": {"field": 5}}, "$getField requires 'field' to evaluate to type String"),
    ({"$setField": {"field": "x", "input": "$s", "value": 1}}, "$setField requires 'input' to evaluate to type Object"),
    ({"$setField": {"field": "$x", "input": {}, "value": 1}}, "field path"),
    ({"$setField": {"field": 1, "input": {}, "value": 1}}, "constant of type String"),
    ({"$setField": {"field": "x", "input": {}}}, "$setField requires 'value'"),
    ({"$unsetField": {"field": "x", "input": 3}}, "$unsetField requires 'input' to evaluate to type Object"),
]


@pytest.mark.parametrize("spec, message", ERRORS)
def test_object_errors(spec, message):
    with pytest.raises(ExecutionError) as error:
        evaluate(spec, DOC)
    assert message in str(error.value)


# https://www.mongodb.com/docs/manual/reference/operator/aggregation/bsonSize/ (binarySize/)
@pytest.mark.parametrize("spec, expected", [
    ({"$bsonSize": {"$literal": {}}}, 5),
    ({"$bsonSize": {"$literal": {"a": 1}}}, 12),
    ({"$bsonSize": "$n"}, None),
    ({"$binarySize": "abc"}, 3),
    ({"$binarySize": "é"}, 2),
    ({"$binarySize": "$missing"}, None),
])
def test_data_size(spec, expected):
    assert evaluate(spec, DOC) == expected


def test_data_size_errors():
    with pytest.raises(ExecutionError, match="requires a document input"):
        evaluate({"$bsonSize": "$s"}, DOC)
    with pytest.raises(ExecutionError, match="requires a string or BinData argument"):
        evaluate({"$binarySize": 1}, DOC)
