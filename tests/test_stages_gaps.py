"""$densify and $fill through the engine entry point: the manual's examples with exact
outputs, edge cases, and MongoDB's errors."""


from __future__ import annotations

import datetime as dt

import pytest

from nlq.errors import ExecutionError
from nlq.mql.engine import aggregate

UTC = dt.timezone.utc


def D(*args) -> dt.datetime:
    return dt.datetime(*args, tzinfo=UTC)



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
