"""Limits: deadline, row and byte caps, nesting depth (issue 3, item 5; SPEC §7)."""

from __future__ import annotations

import time

import pytest

from nlq.errors import ExecutionError, MemoryLimit, QueryTimeout, ResultTooLarge
from nlq.mql.engine import aggregate

DOCS = [{"_id": i, "k": i % 7} for i in range(1000)]

RUNAWAY = {
    "range_unwind": [{"$project": {"r": {"$range": [0, 1_000_000]}}}, {"$unwind": "$r"},
                     {"$group": {"_id": "$r", "n": {"$sum": 1}}}],
    "cartesian_lookup": [{"$lookup": {"from": "c", "pipeline": [], "as": "x"}}, {"$unwind": "$x"},
                         {"$count": "n"}],
    "cartesian_equality_lookup": [{"$lookup": {"from": "c", "localField": "z", "foreignField": "z", "as": "x"}},
                                  {"$unwind": "$x"}, {"$sort": {"x._id": -1}}],
    "facet_of_lookup": [{"$facet": {"a": [{"$lookup": {"from": "c", "pipeline": [{"$match": {}}], "as": "x"}},
                                          {"$unwind": "$x"}, {"$group": {"_id": "$x.k", "n": {"$sum": 1}}}]}}],
}


@pytest.mark.parametrize("name", sorted(RUNAWAY))
def test_runaway_pipelines_stop_near_the_time_limit(name):
    started = time.monotonic()
    with pytest.raises(QueryTimeout):
        aggregate(DOCS, RUNAWAY[name], catalog=lambda n: DOCS, timeout=0.2)
    elapsed = time.monotonic() - started
    # target: within 1.5x the limit (0.3 s); the bound is generous so the test is not flaky
    assert elapsed < 0.5, f"{name} took {elapsed:.3f} s"


# One document, one expression that runs for seconds: the deadline is checked inside expression loops.
_BIG = {"$range": [0, 40000]}
EXPRESSION_RUNAWAY = {
    "reduce_concat": {"$size": {"$reduce": {"input": _BIG, "initialValue": [],
                                            "in": {"$concatArrays": ["$$value", [1, 2, 3]]}}}},
    "map_of_filter": {"$map": {"input": _BIG, "as": "i",
                               "in": {"$size": {"$filter": {"input": _BIG, "cond": {"$gt": ["$$this", "$$i"]}}}}}},
    "reduce_set_union": {"$size": {"$reduce": {"input": _BIG, "initialValue": [],
                                               "in": {"$setUnion": ["$$value", ["$$this"]]}}}},
    "map_of_sort_array": {"$map": {"input": {"$range": [0, 2000]},
                                   "in": {"$first": {"$sortArray": {"input": _BIG, "sortBy": -1}}}}},
    "map_of_in": {"$map": {"input": {"$range": [0, 5000]}, "in": {"$in": [-1, _BIG]}}},
}


@pytest.mark.parametrize("name", sorted(EXPRESSION_RUNAWAY))
def test_expression_loops_stop_near_the_time_limit(name):
    started = time.monotonic()
    with pytest.raises(QueryTimeout):
        aggregate(DOCS, [{"$limit": 1}, {"$project": {"x": EXPRESSION_RUNAWAY[name]}}], timeout=0.2)
    elapsed = time.monotonic() - started
    # an upper bound that proves the check exists (without it these run for many seconds)
    assert elapsed < 0.5, f"{name} took {elapsed:.3f} s"


def test_expression_deadline_is_only_set_while_a_query_runs():
    from nlq.mql.expressions import _DEADLINE, evaluate

    aggregate(DOCS, [{"$limit": 1}, {"$project": {"x": {"$size": {"$map": {"input": _BIG, "in": 1}}}}}],
              timeout=5)
    assert _DEADLINE.get() is None
    assert evaluate({"$size": {"$map": {"input": _BIG, "in": 1}}}, {}) == 40000


def test_concat_arrays_refuses_an_array_too_large_for_memory():
    doubling = {"$reduce": {"input": {"$range": [0, 40]}, "initialValue": [0],
                            "in": {"$concatArrays": ["$$value", "$$value"]}}}
    with pytest.raises(MemoryLimit, match="too much memory|16 MiB"):
        aggregate(DOCS, [{"$limit": 1}, {"$project": {"x": {"$size": doubling}}}], timeout=30)


def test_row_cap():
    assert len(aggregate(DOCS, [], max_rows=1000)) == 1000
    with pytest.raises(ResultTooLarge, match="1000 rows"):
        aggregate(DOCS + [{"_id": -1}], [], max_rows=1000)


def test_byte_cap():
    docs = [{"s": "x" * 1000} for _ in range(100)]
    assert len(aggregate(docs, [], max_bytes=200_000)) == 100
    with pytest.raises(ResultTooLarge, match="byte"):
        aggregate(docs, [], max_bytes=50_000)


def _nested(depth: int) -> dict:
    doc: dict = {"v": 1}
    for _ in range(depth):
        doc = {"a": doc}
    return doc


@pytest.mark.parametrize("pipeline", [
    [],
    [{"$group": {"_id": "$$ROOT"}}],
    [{"$match": {"a": {"x": 1}}}],
    [{"$sort": {"a": 1}}],
    [{"$project": {"a": 1}}],
])
def test_pathologically_deep_documents_are_a_clear_error(pipeline):
    with pytest.raises(ExecutionError, match="nested"):
        aggregate([_nested(5000), {"a": 1}], pipeline)


def test_documents_within_mongodb_nesting_limit_are_fine():
    assert aggregate([_nested(90)], [{"$project": {"_id": 0}}]) == [_nested(90)]


def test_aggregate_leaves_the_garbage_collector_as_it_found_it():
    import gc

    aggregate(DOCS, [{"$group": {"_id": "$k"}}])
    with pytest.raises(QueryTimeout):
        aggregate(DOCS, RUNAWAY["range_unwind"], timeout=0.05)
    assert gc.get_freeze_count() == 0
