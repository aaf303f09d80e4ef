"""$setWindowFields and the window functions through the engine entry point: the manual's examples with exact
outputs, edge cases, and MongoDB's errors."""


from __future__ import annotations

import datetime as dt

import pytest

from nlq.errors import ExecutionError, QueryTimeout
from nlq.mql.engine import aggregate

UTC = dt.timezone.utc


def D(*args) -> dt.datetime:
    return dt.datetime(*args, tzinfo=UTC)



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



def test_buffering_stages_honour_the_deadline():
    docs = ({"v": i} for i in range(10**7))
    with pytest.raises(QueryTimeout):
        aggregate(docs, [{"$setWindowFields": {"sortBy": {"v": 1}, "output": {"s": {"$sum": "$v"}}}}],
                  timeout=0.2)
