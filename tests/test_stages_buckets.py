"""$bucket and $bucketAuto through the engine entry point: the manual's examples with exact
outputs, edge cases, and MongoDB's errors."""


from __future__ import annotations

import math

import pytest

from nlq.errors import ExecutionError
from nlq.mql.engine import aggregate
from nlq.mql.stages.buckets import round_down, round_up


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
