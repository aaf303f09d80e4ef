"""nlq.mql.scope: which fields exist after each stage, which `$$` names are bound, at any depth."""

from __future__ import annotations

import doctest

import pytest

from nlq.mql import grammar, scope, shapes
from nlq.mql.query import Query
from nlq.mql.scope import Node, walk

SCHEMA = {
    "orders": Node.from_paths("orders", ["_id", "user", "items[]", "items[].sku", "items[].qty", "total",
                                         "meta", "meta.<*>", "meta.<*>.n"]),
    "users": Node.from_paths("users", ["_id", "uid", "name", "tags[]"]),
}


def test_doctests():
    for module in (scope, shapes, grammar):
        assert doctest.testmod(module).failed == 0, module.__name__


def unresolved(pipeline, collection="orders") -> list[tuple[str, int]]:
    return [(r.path, r.stage) for r in walk(Query(collection, pipeline), SCHEMA).references if not r.found]


@pytest.mark.parametrize("pipeline, expected", [
    # physical paths, through arrays and dynamic maps
    ([{"$match": {"items.sku": "a", "meta.x.n": 1, "items.0.qty": 2}}], []),
    ([{"$match": {"itmes.sku": "a"}}], [("itmes.sku", 0)]),
    # $group replaces the document; $project keeps what it names
    ([{"$group": {"_id": "$user", "n": {"$sum": 1}}}, {"$match": {"n": 1, "total": 2}}], [("total", 1)]),
    ([{"$project": {"total": 1}}, {"$sort": {"user": 1, "_id": 1}}], [("user", 1)]),
    ([{"$project": {"user": 0}}, {"$sort": {"user": 1, "total": 1}}], [("user", 1)]),
    # fields introduced by name: $lookup as, $unwind includeArrayIndex, $count, $graphLookup depthField
    ([{"$lookup": {"from": "users", "localField": "user", "foreignField": "uid", "as": "u"}},
      {"$match": {"u.name": "x", "u.nmae": "y"}}], [("u.nmae", 1)]),
    ([{"$unwind": {"path": "$items", "includeArrayIndex": "i"}}, {"$sort": {"i": 1, "j": 1}}], [("j", 1)]),
    ([{"$count": "n"}, {"$match": {"n": 1, "total": 1}}], [("total", 1)]),
    ([{"$graphLookup": {"from": "users", "startWith": "$user", "connectFromField": "uid", "connectToField": "uid",
                        "as": "chain", "depthField": "d"}}, {"$match": {"chain.d": 1, "chain.name": "x"}}], []),
    # $lookup.pipeline reads the foreign documents, with the let variables bound to local shapes
    ([{"$lookup": {"from": "users", "let": {"u": "$user", "it": "$items"}, "as": "j", "pipeline": [
        {"$match": {"$expr": {"$and": [{"$eq": ["$uid", "$$u"]}, {"$in": ["$$it.sku", "$tags"]}]}}},
        {"$project": {"name": 1, "total": 1, "x": "$$it.skuu"}}]}},
      {"$match": {"j.name": "a", "j.uid": 1}}], [("$$it.skuu", 0), ("total", 0), ("j.uid", 1)]),
    # $facet: each sub-pipeline sees the input; the output holds one field per facet
    ([{"$facet": {"a": [{"$match": {"total": 1}}], "b": [{"$match": {"totl": 1}}]}},
      {"$project": {"a": 1, "c": 1}}], [("totl", 0), ("c", 1)]),
    # $unionWith: the documents may be of either collection (or of its pipeline's output)
    ([{"$unionWith": {"coll": "users", "pipeline": [{"$project": {"name": 1}}]}},
      {"$match": {"name": 1, "total": 2, "uid": 3}}], [("uid", 1)]),
    ([{"$unionWith": "users"}, {"$match": {"uid": 3, "nope": 1}}], [("nope", 1)]),
    # $map / $filter / $reduce bind the element shape
    ([{"$project": {"m": {"$map": {"input": "$items", "as": "it", "in": "$$it.qyt"}},
                    "f": {"$filter": {"input": "$items", "cond": {"$gt": ["$$this.qty", 1]}}},
                    "r": {"$reduce": {"input": "$items", "initialValue": 0,
                                      "in": {"$add": ["$$value", "$$this.qty", "$$this.sku.x"]}}}}},
      {"$match": {"f.sku": "a"}}], [("$$it.qyt", 0), ("$$this.sku.x", 0)]),
    # computed values are open; an unknown stage makes everything after it open
    ([{"$addFields": {"c": {"$add": ["$total", 1]}}}, {"$match": {"c.anything": 1}}], []),
    ([{"$frobnicate": {"x": 1}}, {"$match": {"whatever": 1}}], []),
    ([{"$match": {"a": 1}, "$limit": 1}, {"$match": {"whatever": 1}}], []),  # a malformed stage
    # a constant array of documents has their fields
    ([{"$addFields": {"k": [{"a": 1}, 2]}}, {"$unwind": "$k"}, {"$match": {"k.a": 1, "k.b": 2}}], [("k.b", 2)]),
])
def test_scoped_references(pipeline, expected):
    assert unresolved(pipeline) == expected


def test_variables_are_bound_where_their_declaration_says():
    pipeline = [{"$lookup": {"from": "users", "let": {"u": "$user"}, "as": "j",
                             "pipeline": [{"$match": {"$expr": {"$eq": ["$uid", "$$u"]}}}]}},
                {"$project": {"a": "$$u", "b": {"$let": {"vars": {"v": 1}, "in": "$$v"}}, "c": "$$v"}}]
    walked = walk(Query("orders", pipeline), SCHEMA)
    assert [(n, bound) for n, bound, _ in walked.variables] == [("$$u", True), ("$$u", False), ("$$v", True),
                                                               ("$$v", False)]


def test_collections_comparisons_and_limits():
    pipeline = [{"$match": {"$or": [{"user": "a"}, {"total": {"$in": [1, 2]}}]}},
                {"$lookup": {"from": "userz", "as": "u", "pipeline": [{"$limit": 2}]}}, {"$limit": 5}]
    walked = walk(Query("orders", pipeline), SCHEMA)
    assert [(c.name, c.stage, c.found) for c in walked.collections] == [("orders", None, True), ("userz", 1, False)]
    assert [(c.path, c.value, c.alternative[1]) for c in walked.comparisons] == [("user", "a", 0), ("total", 1, 1),
                                                                                  ("total", 2, 1)]
    assert [where for _, where in walked.limits] == [(1, "$lookup", "pipeline", 0, "$limit"), (2, "$limit")]


def test_nested_projection_positions_are_real_positions():
    walked = walk(Query("orders", [{"$project": {"items": {"sku": 1, "n": "$total"}}}]), SCHEMA)
    assert [(r.path, r.where) for r in walked.references] == [("total", (0, "$project", "items", "n")),
                                                             ("items.sku", (0, "$project", "items", "sku"))]
    assert walked.output.resolve(["items", "sku"]) is not None and walked.output.resolve(["user"]) is None


def test_a_stage_without_a_declaration_is_walked_for_operators_only():
    walked = walk([{"$frobnicate": {"x": {"$rand": {}}}}], {})
    assert [(n, k) for n, k, _ in walked.operators] == [("$frobnicate", "stage"), ("$rand", "expression")]
    assert walked.output.open
