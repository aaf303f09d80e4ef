"""$graphLookup, $unionWith and $documents through the engine entry point: the manual's examples with exact
outputs, edge cases, and MongoDB's errors."""


from __future__ import annotations


import pytest
from bson.int64 import Int64

from nlq.errors import ExecutionError
from nlq.mql.engine import aggregate

def ids(rows, key="_id"):
    return [r[key] for r in rows]



# ---------------------------------------------------------------- $graphLookup
# https://www.mongodb.com/docs/manual/reference/operator/aggregation/graphLookup/

EMPLOYEES = [
    {"_id": 1, "name": "Dev"},
    {"_id": 2, "name": "Eliot", "reportsTo": "Dev"},
    {"_id": 3, "name": "Ron", "reportsTo": "Eliot"},
    {"_id": 4, "name": "Andrew", "reportsTo": "Eliot"},
    {"_id": 5, "name": "Asya", "reportsTo": "Ron"},
    {"_id": 6, "name": "Dan", "reportsTo": "Andrew"},
]


def catalog(name):
    return {"employees": EMPLOYEES, "airports": AIRPORTS}.get(name, [])


def test_graph_lookup_manual_example():
    rows = aggregate(EMPLOYEES, [{"$graphLookup": {
        "from": "employees", "startWith": "$reportsTo", "connectFromField": "reportsTo",
        "connectToField": "name", "as": "reportingHierarchy"}}], catalog=catalog)
    hierarchy = {r["name"]: sorted(ids(r["reportingHierarchy"])) for r in rows}
    assert hierarchy == {"Dev": [], "Eliot": [1], "Ron": [1, 2], "Andrew": [1, 2], "Asya": [1, 2, 3],
                         "Dan": [1, 2, 4]}
    assert rows[4]["reportingHierarchy"][0] == {"_id": 3, "name": "Ron", "reportsTo": "Eliot"}


AIRPORTS = [
    {"_id": 0, "airport": "JFK", "connects": ["BOS", "ORD"]},
    {"_id": 1, "airport": "BOS", "connects": ["JFK", "PWM"]},
    {"_id": 2, "airport": "ORD", "connects": ["JFK"]},
    {"_id": 3, "airport": "PWM", "connects": ["BOS", "LHR"]},
    {"_id": 4, "airport": "LHR", "connects": ["PWM"]},
]


def test_graph_lookup_max_depth_depth_field_array_edges():
    traveler = [{"_id": 1, "name": "Dev", "nearestAirport": "JFK"}]
    rows = aggregate(traveler, [{"$graphLookup": {
        "from": "airports", "startWith": "$nearestAirport", "connectFromField": "connects",
        "connectToField": "airport", "maxDepth": 2, "depthField": "numConnections", "as": "destinations"}}],
        catalog=catalog)
    depths = {d["airport"]: d["numConnections"] for d in rows[0]["destinations"]}
    assert depths == {"JFK": 0, "BOS": 1, "ORD": 1, "PWM": 2}
    assert all(type(v) is Int64 for v in depths.values())
    assert "numConnections" not in AIRPORTS[0]  # the foreign documents are not modified


def test_graph_lookup_restrict_and_start_array():
    rows = aggregate([{"start": ["BOS", "LHR"]}], [{"$graphLookup": {
        "from": "airports", "startWith": "$start", "connectFromField": "connects", "connectToField": "airport",
        "as": "reach", "restrictSearchWithMatch": {"airport": {"$ne": "PWM"}}}}], catalog=catalog)
    assert sorted(r["airport"] for r in rows[0]["reach"]) == ["BOS", "JFK", "LHR", "ORD"]


def test_graph_lookup_errors():
    with pytest.raises(ExecutionError, match="maxDepth requires a nonnegative argument"):
        aggregate([], [{"$graphLookup": {"from": "a", "startWith": "$x", "connectFromField": "x",
                                         "connectToField": "y", "as": "z", "maxDepth": -1}}])
    with pytest.raises(ExecutionError, match="requires 'from', 'as'"):
        aggregate([], [{"$graphLookup": {"from": "a"}}])


# ---------------------------------------------------------------- $unionWith / $documents
# https://www.mongodb.com/docs/manual/reference/operator/aggregation/unionWith/
# https://www.mongodb.com/docs/manual/reference/operator/aggregation/documents/


def test_union_with():
    sales = {"sales_2018": [{"store": "B", "q": 1}], "sales_2019": [{"store": "C", "q": 2}, {"store": "D", "q": 9}]}
    rows = aggregate([{"store": "A", "q": 5}], [
        {"$set": {"_id": "$store"}},
        {"$unionWith": {"coll": "sales_2018", "pipeline": [{"$set": {"_id": "$store"}}]}},
        {"$unionWith": "sales_2019"},
        {"$group": {"_id": None, "total": {"$sum": "$q"}}},
    ], catalog=lambda n: sales.get(n, []))
    assert rows == [{"_id": None, "total": 17}]
    rows = aggregate([{"a": 1}], [{"$unionWith": {"coll": "nope"}}])
    assert rows == [{"a": 1}]


def test_documents_and_union_with_documents():
    assert aggregate([], [{"$documents": [{"x": 10}, {"x": 2}]}, {"$sort": {"x": 1}}]) == [{"x": 2}, {"x": 10}]
    rows = aggregate([{"x": 1}], [{"$unionWith": {"pipeline": [{"$documents": [{"x": 2}]}]}}])
    assert rows == [{"x": 1}, {"x": 2}]
    with pytest.raises(ExecutionError, match="error during \\$documents"):
        aggregate([], [{"$documents": [1, 2]}])
