"""nlq.mql.fields: the collections and stored fields a pipeline reads."""

from __future__ import annotations

import doctest

import pytest

from nlq.mql import fields
from nlq.mql.fields import named_collections, read_paths


def test_doctests():
    assert doctest.testmod(fields).failed == 0


@pytest.mark.parametrize("pipeline, expected", [
    ([{"$match": {"$or": [{"a": 1}, {"b.c": {"$gt": 2}}]}}], {"a", "b.c"}),
    ([{"$match": {"visits": {"$elemMatch": {"date": {"$gte": 1}, "kind": "x"}}}}],
     {"visits", "visits.date", "visits.kind"}),
    ([{"$match": {"$expr": {"$gt": ["$a", "$$NOW"]}}}], {"a"}),
    ([{"$unwind": "$tags"}, {"$sort": {"tags": 1}}, {"$project": {"_id": 0, "name": 1, "x": "$$ROOT.y"}},
      {"$match": {"after_projection": 1}}], {"tags", "name", "y"}),
    ([{"$addFields": {"n": {"$size": "$items"}}}, {"$count": "c"}, {"$match": {"c": 1}}], {"items"}),
    ([{"$project": {"literal": {"$literal": "$notafield"}}}], set()),
])
def test_read_paths_of_the_collection(pipeline, expected):
    assert read_paths("c", pipeline) == {("c", p) for p in expected}


def test_lookup_reads_the_foreign_field_of_the_foreign_collection():
    pipeline = [{"$lookup": {"from": "orders", "localField": "user_id", "foreignField": "uid", "as": "o"}}]
    assert read_paths("users", pipeline) == {("users", "user_id"), ("orders", "uid")}


def test_named_collections():
    pipeline = [{"$unionWith": {"coll": "archive", "pipeline": [
        {"$lookup": {"from": "orders", "as": "o", "pipeline": [{"$graphLookup": {"from": "tree", "as": "t"}}]}}]}},
        {"$unionWith": "users"}]
    assert named_collections("users", pipeline) == ["users", "archive", "orders", "tree"]
    assert named_collections("x", [{"$documents": [{"a": 1}]}]) == []
