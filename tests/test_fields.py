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


def test_fields_the_pipeline_computed_are_not_stored_paths():
    pipeline = [{"$lookup": {"from": "orders", "localField": "id", "foreignField": "uid", "as": "o"}},
                {"$addFields": {"n": {"$size": "$o"}}}, {"$match": {"n": {"$gt": 1}, "o.total": 3, "age": 2}}]
    assert read_paths("users", pipeline) == {("users", "id"), ("orders", "uid"), ("users", "age")}


def test_a_lookup_after_a_group_still_reads_its_foreign_field():
    pipeline = [{"$group": {"_id": "$code"}}, {"$lookup": {"from": "codes", "localField": "_id",
                                                             "foreignField": "code", "as": "c"}}]
    assert read_paths("readings", pipeline) == {("readings", "code"), ("codes", "code")}


def test_variables_holding_stored_documents_name_their_paths():
    pipeline = [{"$project": {"n": {"$size": {"$filter": {"input": "$visits", "as": "v",
                                                          "cond": {"$eq": ["$$v.type", "urgent"]}}}}}}]
    assert read_paths("patients", pipeline) == {("patients", "visits"), ("patients", "visits.type")}


@pytest.mark.parametrize("query, expected", [
    ('db.schools.find({zipcode: "63109"}, {students: {$elemMatch: {school: 102}}})', {"zipcode", "students"}),
    ('db.students.find({semester: 1, grades: {$gte: 85}}, {"grades.$": 1})', {"semester", "grades"}),
    ('db.c.find({}, {a: {$slice: 2}, b: 1})', {"a", "b"}),
])
def test_the_helper_fields_of_a_find_lowering_are_no_stored_paths(query, expected):
    # the `$lookup ... as: "__nlq_<n>"` field and the `v` of its `$documents` are the pipeline's own
    from nlq.mql.mongosh import parse_query

    assert read_paths("c", parse_query(query).pipeline) == {("c", path) for path in expected}


def test_a_field_a_lookup_made_is_no_stored_path_of_the_collection():
    pipeline = [{"$lookup": {"as": "j", "pipeline": [{"$documents": [{"k": 1}]}]}}, {"$match": {"j.k": 1}},
                {"$lookup": {"from": "o", "localField": "x", "foreignField": "y", "as": "m"}}, {"$sort": {"m": 1}}]
    assert read_paths("c", pipeline) == {("c", "x"), ("o", "y")}
