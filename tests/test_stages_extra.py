"""Advanced stages through the engine entry point: the manual's examples with
exact outputs, edge cases, and MongoDB's errors."""

from __future__ import annotations

import datetime as dt
import math

import pytest
from bson.int64 import Int64

from nlq.errors import ExecutionError, QueryTimeout
from nlq.mql.engine import aggregate
from nlq.mql.stages_extra import round_down, round_up

UTC = dt.timezone.utc


def D(*args) -> dt.datetime:
    return dt.datetime(*args, tzinfo=UTC)


def ids(rows, key="_id"):
    return [r[key] for r in rows]


# ---------------------------------------------------------------- $bucket
# https://www.mongodb.com/docs/manual/reference/operator/aggregation/bucket/

ARTISTS = [
    {"_id": 1, "last_name": "Bernard", "first_name": "Emil", "year_born": 1868, "year_died": 1941,
     "nationality": "France"},
    {"_id": 2, "last_name": "Rippl-Ronai", "first_name": "Joszef", "year_born": 1861, "year_died": 1927,
     "nationality": "Hungary"},
    {"_id": 3, "last_name": "Ostroumova", "first_name": "Anna", "year_born": 1871, "year_died": 1955,
     "nationality": "Russia"},
    {"_id": 4, "last_name": "Van Gogh", "first_name": "Vincent", "year_born": 1853, "year_died": 1890,
     "nationality": "Holland"},
    {"_id": 5, "last_name": "Maurer", "first_name": "Alfred", "year_born": 1868, "year_died": 1932,
     "nationality": "USA"},
    {"_id": 6, "last_name": "Munch", "first_name": "Edvard", "year_born": 1863, "year_died": 1944,
     "nationality": "Norway"},
    {"_id": 7, "last_name": "Redon", "first_name": "Odilon", "year_born": 1840, "year_died": 1916,
     "nationality": "France"},
    {"_id": 8, "last_name": "Diriks", "first_name": "Edvard", "year_born": 1855, "year_died": 1930,
     "nationality": "Norway"},
]


def test_bucket_manual_example():
    pipeline = [
        {"$bucket": {
            "groupBy": "$year_born", "boundaries": [1840, 1850, 1860, 1870, 1880], "default": "Other",
            "output": {"count": {"$sum": 1},
                       "artists": {"$push": {"name": {"$concat": ["$first_name", " ", "$last_name"]},
                                             "year_born": "$year_born"}}}}},
        {"$match": {"count": {"$gt": 3}}},
    ]
    assert aggregate(ARTISTS, pipeline) == [{
        "_id": 1860, "count": 4,
        "artists": [{"name": "Emil Bernard", "year_born": 1868}, {"name": "Joszef Rippl-Ronai", "year_born": 1861},
                    {"name": "Alfred Maurer", "year_born": 1868}, {"name": "Edvard Munch", "year_born": 1863}]}]


def test_bucket_default_count_and_default_bucket_order():
    docs = [{"v": 5}, {"v": 15}, {"v": 100}, {"v": None}, {}, {"v": "text"}, {"v": 0}]
    rows = aggregate(docs, [{"$bucket": {"groupBy": "$v", "boundaries": [0, 10, 20], "default": -1}}])
    # the default bucket sorts by its _id among the others; null, missing, strings and 100 fall into it
    assert rows == [{"_id": -1, "count": 4}, {"_id": 0, "count": 2}, {"_id": 10, "count": 1}]


def test_bucket_errors():
    with pytest.raises(ExecutionError, match="no default was specified"):
        aggregate([{"v": 50}], [{"$bucket": {"groupBy": "$v", "boundaries": [0, 10]}}])
    with pytest.raises(ExecutionError, match="must be sorted"):
        aggregate([], [{"$bucket": {"groupBy": "$v", "boundaries": [10, 0]}}])
    with pytest.raises(ExecutionError, match="at least 2 values"):
        aggregate([], [{"$bucket": {"groupBy": "$v", "boundaries": [0]}}])
    with pytest.raises(ExecutionError, match="same type"):
        aggregate([], [{"$bucket": {"groupBy": "$v", "boundaries": [0, "a"]}}])
    with pytest.raises(ExecutionError, match="'default' field must be less than the lowest boundary"):
        aggregate([], [{"$bucket": {"groupBy": "$v", "boundaries": [0, 10], "default": 5}}])
    with pytest.raises(ExecutionError, match="'groupBy' field must be defined as a \\$-prefixed path"):
        aggregate([], [{"$bucket": {"groupBy": "v", "boundaries": [0, 10]}}])


# ---------------------------------------------------------------- $bucketAuto
# https://www.mongodb.com/docs/manual/reference/operator/aggregation/bucketAuto/

ARTWORK_PRICES = [199.99, 280.00, 76.04, 167.30, 483.00, 385.00, 159.00, 118.42]


def test_bucket_auto_manual_example():
    docs = [{"_id": i, "price": p} for i, p in enumerate(ARTWORK_PRICES)]
    assert aggregate(docs, [{"$bucketAuto": {"groupBy": "$price", "buckets": 4}}]) == [
        {"_id": {"min": 76.04, "max": 159.00}, "count": 2},
        {"_id": {"min": 159.00, "max": 199.99}, "count": 2},
        {"_id": {"min": 199.99, "max": 385.00}, "count": 2},
        {"_id": {"min": 385.00, "max": 483.00}, "count": 2},
    ]


def test_bucket_auto_keeps_equal_values_together_and_output():
    docs = [{"v": v} for v in [1, 1, 1, 1, 2, 3]]
    rows = aggregate(docs, [{"$bucketAuto": {"groupBy": "$v", "buckets": 3,
                                             "output": {"n": {"$sum": 1}, "vs": {"$addToSet": "$v"}}}}])
    assert rows == [{"_id": {"min": 1, "max": 2}, "n": 4, "vs": [1]},
                    {"_id": {"min": 2, "max": 3}, "n": 2, "vs": [2, 3]}]


def test_bucket_auto_more_buckets_than_documents():
    rows = aggregate([{"v": 3}, {"v": 1}], [{"$bucketAuto": {"groupBy": "$v", "buckets": 5}}])
    assert rows == [{"_id": {"min": 1, "max": 3}, "count": 1}, {"_id": {"min": 3, "max": 3}, "count": 1}]


def test_bucket_auto_granularity_preferred_numbers():
    docs = [{"v": v} for v in range(1, 11)]
    rows = aggregate(docs, [{"$bucketAuto": {"groupBy": "$v", "buckets": 5, "granularity": "1-2-5"}}])
    assert rows == [{"_id": {"min": 0.5, "max": 5.0}, "count": 4},
                    {"_id": {"min": 5.0, "max": 10.0}, "count": 5},
                    {"_id": {"min": 10.0, "max": 20.0}, "count": 1}]


def test_bucket_auto_granularity_powers_of_two():
    docs = [{"v": v} for v in range(1, 9)]
    rows = aggregate(docs, [{"$bucketAuto": {"groupBy": "$v", "buckets": 2, "granularity": "POWERSOF2"}}])
    assert rows == [{"_id": {"min": 0.5, "max": 8}, "count": 7}, {"_id": {"min": 8, "max": 16}, "count": 1}]


ROUNDING = [
    ("R5", 3, 4.0, 2.5), ("R5", 10, 16.0, 6.3), ("R5", 63, 100.0, 40.0), ("E6", 0.8, 1.0, 0.68),
    ("E12", 100, 120.0, 82.0), ("R20", 1.05, 1.12, 1.0), ("1-2-5", 7, 10.0, 5.0), ("E192", 919, 920.0, 909.0),
    ("POWERSOF2", 5, 8, 4), ("POWERSOF2", 0.3, 0.5, 0.25), ("R10", 0, 0, 0),
]


@pytest.mark.parametrize("granularity,value,up,down", ROUNDING)
def test_granularity_rounders(granularity, value, up, down):
    assert math.isclose(round_up(granularity, value), up) and math.isclose(round_down(granularity, value), down)


def test_bucket_auto_errors():
    with pytest.raises(ExecutionError, match="'buckets' field must be greater than 0"):
        aggregate([], [{"$bucketAuto": {"groupBy": "$v", "buckets": 0}}])
    with pytest.raises(ExecutionError, match="requires 'groupBy' and 'buckets'"):
        aggregate([], [{"$bucketAuto": {"groupBy": "$v"}}])
    with pytest.raises(ExecutionError, match="Unknown rounding granularity"):
        aggregate([], [{"$bucketAuto": {"groupBy": "$v", "buckets": 2, "granularity": "R7"}}])
    with pytest.raises(ExecutionError, match="can only round non-negative numbers"):
        aggregate([{"v": -5}, {"v": 1}], [{"$bucketAuto": {"groupBy": "$v", "buckets": 1, "granularity": "R5"}}])
    with pytest.raises(ExecutionError, match="can only round numeric values"):
        aggregate([{"v": "a"}], [{"$bucketAuto": {"groupBy": "$v", "buckets": 1, "granularity": "R5"}}])


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


# ---------------------------------------------------------------- $densify
# https://www.mongodb.com/docs/manual/reference/operator/aggregation/densify/


def test_densify_time_series_explicit_bounds():
    weather = [{"metadata": {"sensorId": 5578}, "timestamp": D(2021, 5, 18, h), "temp": t}
               for h, t in ((0, 12), (4, 11), (8, 11), (12, 12))]
    rows = aggregate(weather, [{"$densify": {"field": "timestamp", "range": {
        "step": 1, "unit": "hour", "bounds": [D(2021, 5, 18, 0), D(2021, 5, 18, 8)]}}}])
    assert [r["timestamp"].hour for r in rows] == [0, 1, 2, 3, 4, 5, 6, 7, 8, 12]
    assert rows[1] == {"timestamp": D(2021, 5, 18, 1)}
    assert rows[0] is weather[0]


def test_densify_partitions_full_and_partition_bounds():
    coffee = [{"altitude": 600, "variety": "Arabica Typica", "score": 68.3},
              {"altitude": 750, "variety": "Arabica Typica", "score": 69.5},
              {"altitude": 950, "variety": "Arabica Typica", "score": 70.5},
              {"altitude": 1250, "variety": "Gesha", "score": 88.15},
              {"altitude": 1700, "variety": "Gesha", "score": 85.5},
              {"altitude": 1600, "variety": "Gesha", "score": 91}]
    full = aggregate(coffee, [{"$densify": {"field": "altitude", "partitionByFields": ["variety"],
                                            "range": {"step": 200, "bounds": "full"}}}])
    by_variety = {}
    for r in full:
        by_variety.setdefault(r["variety"], []).append(r["altitude"])
    assert by_variety == {
        "Arabica Typica": [600, 750, 800, 950, 1000, 1200, 1400, 1600],
        "Gesha": [600, 800, 1000, 1200, 1250, 1400, 1600, 1700]}
    assert {"altitude": 800, "variety": "Arabica Typica"} in full
    part = aggregate(coffee, [{"$densify": {"field": "altitude", "partitionByFields": ["variety"],
                                            "range": {"step": 200, "bounds": "partition"}}}])
    assert [r["altitude"] for r in part] == [600, 750, 800, 950, 1250, 1450, 1600, 1650, 1700]


def test_densify_explicit_bounds_partitions_and_empty_input():
    # https://jira.mongodb.org/browse/SERVER-82446 (expected results of the fixed server)
    spec = {"$densify": {"field": "num", "partitionByFields": ["key"], "range": {"step": 1, "bounds": [4, 8]}}}
    assert [r["num"] for r in aggregate([], [spec])] == [4, 5, 6, 7]
    docs = [{"key": 1, "num": 2}, {"key": 1, "num": 4}, {"key": 1, "num": 6}]
    rows = aggregate(docs, [spec])
    assert [r["num"] for r in rows] == [2, 4, 5, 6, 7]
    assert rows[2] == {"num": 5, "key": 1}


def test_densify_passes_null_fields_and_errors():
    rows = aggregate([{"v": 1}, {"v": None}, {"v": 3}], [{"$densify": {"field": "v", "range": {
        "step": 1, "bounds": "full"}}}])
    assert rows == [{"v": None}, {"v": 1}, {"v": 2}, {"v": 3}]
    with pytest.raises(ExecutionError, match="Densify field type must be numeric"):
        aggregate([{"v": "a"}], [{"$densify": {"field": "v", "range": {"step": 1, "bounds": "full"}}}])
    with pytest.raises(ExecutionError, match="strictly positive numeric value"):
        aggregate([], [{"$densify": {"field": "v", "range": {"step": 0, "bounds": "full"}}}])


# ---------------------------------------------------------------- $setWindowFields
# https://www.mongodb.com/docs/manual/reference/operator/aggregation/setWindowFields/

CAKES = [
    {"_id": 0, "type": "chocolate", "orderDate": D(2020, 5, 18, 14, 10, 30), "state": "CA", "price": 13,
     "quantity": 120},
    {"_id": 1, "type": "chocolate", "orderDate": D(2021, 3, 20, 11, 30, 5), "state": "WA", "price": 14,
     "quantity": 140},
    {"_id": 2, "type": "vanilla", "orderDate": D(2021, 1, 11, 6, 31, 15), "state": "CA", "price": 12,
     "quantity": 145},
    {"_id": 3, "type": "vanilla", "orderDate": D(2020, 2, 8, 13, 13, 23), "state": "WA", "price": 13,
     "quantity": 104},
    {"_id": 4, "type": "strawberry", "orderDate": D(2019, 5, 18, 16, 9, 1), "state": "CA", "price": 41,
     "quantity": 162},
    {"_id": 5, "type": "strawberry", "orderDate": D(2019, 1, 8, 6, 12, 3), "state": "WA", "price": 43,
     "quantity": 134},
]


def window(output, sort_by=None, partition="$state"):
    spec = {"output": output}
    if partition is not None:
        spec["partitionBy"] = partition
    if sort_by is not None:
        spec["sortBy"] = sort_by
    return aggregate(CAKES, [{"$setWindowFields": spec}])


def test_cumulative_sum_manual_example():
    rows = window({"cumulativeQuantityForState": {"$sum": "$quantity",
                                                  "window": {"documents": ["unbounded", "current"]}}},
                  {"orderDate": 1})
    assert [(r["_id"], r["cumulativeQuantityForState"]) for r in rows] == [
        (4, 162), (0, 282), (2, 427), (5, 134), (3, 238), (1, 378)]
    assert rows[0] == {**CAKES[4], "cumulativeQuantityForState": 162}


def test_whole_partition_and_moving_average():
    rows = window({"total": {"$sum": "$quantity"},
                   "avg": {"$avg": "$quantity", "window": {"documents": [-1, 0]}}}, {"orderDate": 1})
    assert [(r["_id"], r["total"], r["avg"]) for r in rows] == [
        (4, 427, 162.0), (0, 427, 141.0), (2, 427, 132.5), (5, 378, 134.0), (3, 378, 119.0), (1, 378, 122.0)]


def test_range_window_manual_example():
    rows = window({"quantityFromSimilarOrders": {"$sum": "$quantity", "window": {"range": [-10, 10]}}},
                  {"price": 1})
    assert [(r["_id"], r["quantityFromSimilarOrders"]) for r in rows] == [
        (2, 265), (0, 265), (4, 162), (3, 244), (1, 244), (5, 134)]


def test_time_range_window_with_unit():
    rows = window({"recentOrders": {"$push": "$orderDate", "window": {"range": ["unbounded", 10],
                                                                       "unit": "month"}}}, {"orderDate": 1})
    counts = [(r["_id"], len(r["recentOrders"])) for r in rows]
    assert counts == [(4, 1), (0, 3), (2, 3), (5, 1), (3, 2), (1, 3)]


def test_rank_dense_rank_document_number_shift():
    rows = window({"rank": {"$rank": {}}, "dense": {"$denseRank": {}}, "n": {"$documentNumber": {}},
                   "next": {"$shift": {"output": "$quantity", "by": 1, "default": "Not available"}}},
                  {"quantity": -1})
    assert [(r["_id"], r["rank"], r["dense"], r["n"], r["next"]) for r in rows] == [
        (4, 1, 1, 1, 145), (2, 2, 2, 2, 120), (0, 3, 3, 3, "Not available"),
        (1, 1, 1, 1, 134), (5, 2, 2, 2, 104), (3, 3, 3, 3, "Not available")]


def test_rank_ties():
    docs = [{"s": 10}, {"s": 20}, {"s": 10}, {"s": 30}]
    rows = aggregate(docs, [{"$setWindowFields": {"sortBy": {"s": 1}, "output": {
        "r": {"$rank": {}}, "d": {"$denseRank": {}}}}}])
    assert [(r["s"], r["r"], r["d"]) for r in rows] == [(10, 1, 1), (10, 1, 1), (20, 3, 2), (30, 4, 3)]


def test_exp_moving_avg_derivative_integral_covariance():
    docs = [{"x": 0, "y": 0}, {"x": 1, "y": 10}, {"x": 2, "y": 30}, {"x": 3, "y": 60}]
    rows = aggregate(docs, [{"$setWindowFields": {"sortBy": {"x": 1}, "output": {
        "ema": {"$expMovingAvg": {"input": "$y", "N": 2}},
        "slope": {"$derivative": {"input": "$y"}, "window": {"documents": [-1, 0]}},
        "area": {"$integral": {"input": "$y"}, "window": {"documents": ["unbounded", "current"]}},
        "cov": {"$covariancePop": ["$x", "$y"]},
        "covs": {"$covarianceSamp": ["$x", "$x"]},
    }}}])
    assert [r["slope"] for r in rows] == [None, 10.0, 20.0, 30.0]
    assert [r["area"] for r in rows] == [0.0, 5.0, 25.0, 70.0]
    assert [round(r["ema"], 6) for r in rows] == [0.0, 6.666667, 22.222222, 47.407407]
    assert rows[0]["cov"] == pytest.approx(25.0)
    assert rows[0]["covs"] == pytest.approx(5 / 3)


def test_derivative_with_dates_and_unit():
    docs = [{"t": D(2021, 1, 1, 0), "km": 0}, {"t": D(2021, 1, 1, 1), "km": 50}, {"t": D(2021, 1, 1, 3), "km": 250}]
    rows = aggregate(docs, [{"$setWindowFields": {"sortBy": {"t": 1}, "output": {
        "kmh": {"$derivative": {"input": "$km", "unit": "hour"},
                "window": {"range": [-1, 0], "unit": "hour"}}}}}])
    assert [r["kmh"] for r in rows] == [None, 50.0, None]


def test_locf_and_linear_fill_window_functions():
    docs = [{"t": 1, "v": 10}, {"t": 2}, {"t": 3, "v": None}, {"t": 4, "v": 40}, {"t": 5}]
    rows = aggregate(docs, [{"$setWindowFields": {"sortBy": {"t": 1}, "output": {
        "locf": {"$locf": "$v"}, "lin": {"$linearFill": "$v"}}}}])
    assert [r["locf"] for r in rows] == [10, 10, 10, 40, 40]
    assert [r["lin"] for r in rows] == [10, 20.0, 30.0, 40, None]


def test_window_without_partition_keeps_order_and_copies():
    docs = [{"a": 2}, {"a": 1}]
    rows = aggregate(docs, [{"$setWindowFields": {"output": {"all": {"$push": "$a"}}}}])
    assert rows == [{"a": 2, "all": [2, 1]}, {"a": 1, "all": [2, 1]}]
    assert docs == [{"a": 2}, {"a": 1}]


def test_window_errors():
    with pytest.raises(ExecutionError, match="\\$rank must be specified with a top level sortBy"):
        window({"r": {"$rank": {}}})
    with pytest.raises(ExecutionError, match="Unrecognized window function, \\$nope"):
        window({"r": {"$nope": 1}})
    with pytest.raises(ExecutionError, match="Lower bound must not exceed upper bound"):
        window({"r": {"$sum": 1, "window": {"documents": [1, -1]}}}, {"price": 1})
    with pytest.raises(ExecutionError, match="Range-based window requires"):
        window({"r": {"$sum": 1, "window": {"range": [-1, 1]}}})
    with pytest.raises(ExecutionError, match="Expected the sortBy field to be a number"):
        window({"r": {"$sum": 1, "window": {"range": [-1, 1]}}}, {"state": 1})
    with pytest.raises(ExecutionError, match="\\$derivative requires explicit window bounds"):
        window({"r": {"$derivative": {"input": "$price"}}}, {"price": 1})


# ---------------------------------------------------------------- $fill
# https://www.mongodb.com/docs/manual/reference/operator/aggregation/fill/


def test_fill_value_locf_and_linear():
    reviews = [{"score": 1}, {"score": None, "x": 1}, {}]
    assert aggregate(reviews, [{"$fill": {"output": {"score": {"value": 0}}}}]) == [
        {"score": 1}, {"score": 0, "x": 1}, {"score": 0}]
    stock = [{"time": D(2021, 3, 8, 9, m), "price": p} for m, p in ((0, 500), (5, None), (10, None), (15, 515))]
    rows = aggregate(stock, [{"$fill": {"sortBy": {"time": 1}, "output": {"price": {"method": "linear"}}}}])
    assert [r["price"] for r in rows] == [500, 505.0, 510.0, 515]
    rows = aggregate(list(reversed(stock)), [{"$fill": {"sortBy": {"time": 1},
                                                        "output": {"price": {"method": "locf"}}}}])
    assert [r["price"] for r in rows] == [500, 500, 500, 515]


def test_fill_partition_by_fields():
    docs = [{"g": "a", "t": 1, "v": 1}, {"g": "b", "t": 1, "v": 7}, {"g": "a", "t": 2}, {"g": "b", "t": 2}]
    rows = aggregate(docs, [{"$fill": {"sortBy": {"t": 1}, "partitionByFields": ["g"],
                                       "output": {"v": {"method": "locf"}}}}])
    assert [(r["g"], r["v"]) for r in rows] == [("a", 1), ("a", 1), ("b", 7), ("b", 7)]


def test_fill_errors():
    with pytest.raises(ExecutionError, match="Method 'linear' requires a 'sortBy'"):
        aggregate([], [{"$fill": {"output": {"v": {"method": "linear"}}}}])
    with pytest.raises(ExecutionError, match="Method must be either 'linear' or 'locf'"):
        aggregate([], [{"$fill": {"sortBy": {"t": 1}, "output": {"v": {"method": "mean"}}}}])


def test_buffering_stages_honour_the_deadline():
    docs = ({"v": i} for i in range(10**7))
    with pytest.raises(QueryTimeout):
        aggregate(docs, [{"$setWindowFields": {"sortBy": {"v": 1}, "output": {"s": {"$sum": "$v"}}}}],
                  timeout=0.2)
