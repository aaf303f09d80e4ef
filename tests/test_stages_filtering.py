"""$redact through the engine entry point: the manual's examples with exact
outputs, edge cases, and MongoDB's errors."""


from __future__ import annotations


import pytest

from nlq.errors import ExecutionError
from nlq.mql.engine import aggregate


# ---------------------------------------------------------------- $redact
# https://www.mongodb.com/docs/manual/reference/operator/aggregation/redact/

FORECAST = {
    "_id": 1, "title": "123 Department Report", "tags": ["G", "STLW"], "year": 2014,
    "subsections": [
        {"subtitle": "Section 1: Overview", "tags": ["SI", "G"],
         "content": "Section 1: This is the content of section 1."},
        {"subtitle": "Section 2: Analysis", "tags": ["STLW"],
         "content": "Section 2: This is the content of section 2."},
        {"subtitle": "Section 3: Budgeting", "tags": ["TK"],
         "content": {"text": "Section 3: This is the content of section 3.", "tags": ["HCS"]}},
    ],
}


def test_redact_manual_example():
    access = ["STLW", "G"]
    rows = aggregate([FORECAST], [
        {"$match": {"year": 2014}},
        {"$redact": {"$cond": {"if": {"$gt": [{"$size": {"$setIntersection": ["$tags", access]}}, 0]},
                               "then": "$$DESCEND", "else": "$$PRUNE"}}},
    ])
    expected = {key: FORECAST[key] for key in ("_id", "title", "tags", "year")}
    expected["subsections"] = FORECAST["subsections"][:2]
    assert rows == [expected]


def test_redact_keep_prune_and_errors():
    doc = {"level": 5, "a": {"level": 1}}
    keep = {"$cond": [{"$eq": ["$level", 5]}, "$$KEEP", "$$PRUNE"]}
    assert aggregate([doc], [{"$redact": keep}]) == [doc]
    assert aggregate([{"level": 1}], [{"$redact": keep}]) == []
    with pytest.raises(ExecutionError, match="should not return anything aside from"):
        aggregate([doc], [{"$redact": "keep"}])
