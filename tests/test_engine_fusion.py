"""The fused `$unwind` + `$group` (and `$objectToArray` + `$unwind` + `$group`) give the general
pipeline's results: same rows, same order, same numeric types, same errors. A `{$match: {}}`
between the stages turns the fusion off, which gives the reference result."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nlq.errors import NlqError
from nlq.mql.accumulators import compile_values
from nlq.mql.engine import StageContext, _stage_compiler, compile_pipeline
from nlq.mql.numeric import Summation
from nlq.mql.stages import fusion
from nlq.mql.values import Decimal128, Int64

NAN = float("nan")
scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from([2**31, -2**31 - 1, 2**52, 2**53 + 1, 2**63 - 1]),
    st.sampled_from([1.0, -0.0, 2.5, 0.1, NAN, math.inf, 1e300]), st.builds(Int64, st.integers(-3, 3)),
    st.sampled_from([Decimal128("1"), Decimal128("1.0"), Decimal128("NaN"), Decimal128("0.1")]),
    st.sampled_from(["", "a", "b", "1"]))
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3)
                      | st.fixed_dictionaries({}, optional={"k": inner, "x": inner, "v": inner}), max_leaves=5)
elements = st.one_of(values, st.fixed_dictionaries({}, optional={"k": values, "x": values, "y": scalars}))


@st.composite
def documents(draw):
    out = []
    for i in range(draw(st.integers(0, 25))):
        doc = {"_id": draw(st.sampled_from([i, i % 3, None, "s"]))}
        for name, strategy in (("a", st.one_of(st.lists(elements, max_size=4), values)), ("n", values),
                               ("c", st.one_of(st.fixed_dictionaries({}, optional={"d": st.lists(elements, max_size=3),
                                                                                    "e": values}), values)),
                               ("m", st.one_of(st.dictionaries(st.sampled_from(["p", "q", "k", "v"]), values,
                                                               max_size=3), st.none()))):
            if draw(st.booleans()):
                doc[name] = draw(strategy)
        out.append(doc)
    return out


PATHS = ["$a", "$a.k", "$a.x", "$a.x.k", "$n", "$n.k", "$c.d", "$c.d.k", "$c.e", "$_id", "$nope"]
KEYS = PATHS + [None, "lit", 1, True]
ACCUMULATORS = ["$sum", "$avg", "$min", "$max", "$first", "$last", "$push", "$addToSet"]


@st.composite
def groups(draw, paths=PATHS, keys=KEYS):
    spec = {"_id": draw(st.sampled_from(keys))}
    for i in range(draw(st.integers(0, 4))):
        choice = draw(st.integers(0, 9))
        if choice == 0:
            spec[f"f{i}"] = {"$count": {}}
        elif choice == 1:
            spec[f"f{i}"] = {"$sum": draw(st.sampled_from([1, 2, Int64(3), 2.5, 0.1]))}
        else:
            spec[f"f{i}"] = {draw(st.sampled_from(ACCUMULATORS)): draw(st.sampled_from(paths))}
    return spec


def canonical(value):
    """A comparable form keeping what `==` hides: numeric types, NaN, -0.0, key order."""
    if type(value) is dict:
        return ("doc", [(k, canonical(v)) for k, v in value.items()])
    if type(value) is list:
        return ("array", [canonical(v) for v in value])
    if type(value) is float:
        return ("double", "nan" if value != value else repr(value))
    return (type(value).__name__, repr(value))


def run(docs, pipeline):
    try:
        return canonical(list(compile_pipeline(pipeline)(docs)))
    except NlqError as error:
        return (type(error).__name__, str(error))


def general(pipeline):
    """The pipeline with `{$match: {}}` after every stage (nothing adjacent to fuse)."""
    out = []
    for stage in pipeline:
        out += [stage, {"$match": {}}]
    return out


def assert_fused(pipeline, n_stages):
    """The pipeline compiles to `n_stages` functions (n_stages < len(pipeline): a fusion happened)."""
    ctx = StageContext()
    compiled = [_stage_compiler(next(iter(s)))(next(iter(s.values())), ctx) for s in pipeline]
    assert len(fusion.fuse(pipeline, compiled, ctx)) == n_stages


UNWINDS = ["$a", {"path": "$a", "preserveNullAndEmptyArrays": True}, "$c.d",
           {"path": "$c.d", "preserveNullAndEmptyArrays": True}, {"path": "$a", "preserveNullAndEmptyArrays": False}]


@settings(max_examples=600, deadline=None)
@given(docs=documents(), unwind=st.sampled_from(UNWINDS), group=groups())
def test_fused_unwind_group_equals_the_general_pipeline(docs, unwind, group):
    pipeline = [{"$unwind": unwind}, {"$group": group}]
    assert run(docs, pipeline) == run(docs, general(pipeline))


SHAPES = [{"$project": {"kv": {"$objectToArray": "$m"}}}, {"$project": {"_id": 0, "kv": {"$objectToArray": "$m"}}},
          {"$addFields": {"kv": {"$objectToArray": "$m"}}}, {"$set": {"kv": {"$objectToArray": "$a"}}},
          {"$project": {"kv": {"$objectToArray": "$n"}}}, {"$project": {"kv": {"$objectToArray": ["$m"]}}}]
KV_PATHS = ["$kv", "$kv.k", "$kv.v", "$kv.v.k", "$kv.k.x", "$kv.x", "$_id", "$n", "$m"]


@settings(max_examples=600, deadline=None)
@given(docs=documents(), shape=st.sampled_from(SHAPES),
       unwind=st.sampled_from(["$kv", {"path": "$kv", "preserveNullAndEmptyArrays": True}]),
       group=groups(KV_PATHS, KV_PATHS + ["$kv.k"] * 4 + [None]))
def test_fused_object_to_array_unwind_group_equals_the_general_pipeline(docs, shape, unwind, group):
    pipeline = [shape, {"$unwind": unwind}, {"$group": group}]
    assert run(docs, pipeline) == run(docs, general(pipeline))


def test_the_fusion_happens_only_where_its_preconditions_hold():
    group = {"$group": {"_id": "$a.k", "n": {"$sum": "$a.x"}, "c": {"$sum": 1}}}
    assert_fused([{"$unwind": "$a"}, group], 1)
    assert_fused([{"$project": {"a": {"$objectToArray": "$m"}}}, {"$unwind": "$a"}, group], 1)
    assert_fused([{"$unwind": {"path": "$a", "includeArrayIndex": "i"}}, group], 2)
    assert_fused([{"$unwind": "$a.b"}, {"$group": {"_id": "$a", "n": {"$sum": 1}}}], 2)  # holds the element
    assert_fused([{"$unwind": "$a"}, {"$group": {"_id": {"$toLower": "$a"}}}], 2)
    assert_fused([{"$unwind": "$a"}, {"$group": {"_id": None, "d": {"$push": "$$ROOT"}}}], 2)
    assert_fused([{"$unwind": "$a"}, {"$group": {"_id": None, "d": {"$mergeObjects": "$a"}}}], 2)  # may raise
    assert_fused([{"$unwind": "$a"}, {"$group": {"_id": None, "d": {"$stdDevPop": "$a"}}}], 2)
    assert_fused([{"$unwind": "$a"}, {"$match": {}}, group], 3)
    assert_fused([{"$project": {"a": {"$objectToArray": "$m"}, "b": 1}}, {"$unwind": "$a"}, group], 2)


def test_errors_and_their_order_are_the_general_ones():
    docs = [{"m": {"x": 1}}, {"m": 5}, {"m": {"y": 2}}]
    pipeline = [{"$project": {"kv": {"$objectToArray": "$m"}}}, {"$unwind": "$kv"},
                {"$group": {"_id": "$kv.k", "t": {"$sum": "$kv.v"}}}]
    result = run(docs, pipeline)
    assert result[0] == "ExecutionError" and "$objectToArray requires a document input" in result[1]
    assert result == run(docs, general(pipeline))


def test_numeric_sums_keep_their_type_and_exactness_across_the_fused_fold():
    docs = [{"a": [{"k": "x", "v": v} for v in vs]} for vs in
            ([1, 2**31], [2**52, 1, -1], [0.1, 0.2, 0.3], [1, Int64(2)], [Decimal128("0.1"), 1, 0.5], [NAN, 1])]
    docs += [{"a": [{"k": "big", "v": 2**40} for _ in range(5000)]}, {"a": [{"k": "big", "v": 3.5}]}]
    for acc in ("$sum", "$avg"):
        pipeline = [{"$unwind": "$a"}, {"$group": {"_id": "$a.k", "t": {acc: "$a.v"}, "n": {"$sum": 1}}}]
        assert run(docs, pipeline) == run(docs, general(pipeline))


def test_groups_keep_one_key_for_equal_numbers_and_documents_of_equal_value():
    docs = [{"a": [{"k": 1}, {"k": 1.0}, {"k": Int64(1)}, {"k": Decimal128("1")}, {"k": True}, {"k": "1"},
                   {"k": {"p": 1, "q": 2}}, {"k": {"q": 2, "p": 1}}, {"k": {"p": 1.0, "q": 2}}, {"k": NAN},
                   {"k": Decimal128("NaN")}, {}, {"k": None}, {"k": [1, 2]}, {"k": [1.0, 2]}]}]
    pipeline = [{"$unwind": "$a"}, {"$group": {"_id": "$a.k", "n": {"$sum": 1}, "ks": {"$push": "$a.k"}}}]
    assert run(docs, pipeline) == run(docs, general(pipeline))
    rows = list(compile_pipeline(pipeline)(docs))
    assert [row["n"] for row in rows] == [4, 1, 1, 2, 1, 2, 2, 2]


def test_large_arrays_and_many_groups_fold_in_several_passes():
    docs = [{"_id": i, "a": [{"k": j % 7000, "v": j} for j in range(3000)]} for i in range(30)]
    pipeline = [{"$unwind": "$a"}, {"$group": {"_id": "$a.k", "v": {"$push": "$a.v"}, "f": {"$first": "$_id"},
                                                 "l": {"$last": "$_id"}, "t": {"$sum": "$a.v"}}}]
    assert run(docs, pipeline) == run(docs, general(pipeline))


@settings(max_examples=500, deadline=None)
@given(start=st.lists(st.integers(-2**53, 2**53), max_size=3),
       batch=st.lists(st.one_of(st.integers(-2**33, 2**33), st.sampled_from([2**52, -2**52, 2**31, 2**52 - 1]),
                                st.integers(-2**60, 2**60)), max_size=20))
def test_summation_add_many_is_the_state_of_one_add_each(start, batch):
    one, many = Summation(), Summation()
    for v in start:
        one.add(v)
        many.add(v)
    for v in batch:
        one.add(v)
    many.add_many(batch)
    assert [getattr(one, s) for s in Summation.__slots__] == [getattr(many, s) for s in Summation.__slots__]
    assert repr(one.result()) == repr(many.result()) and repr(one.mean()) == repr(many.mean())


@pytest.mark.parametrize("spec", [("$sum", "x"), ("$sum", None), ("$avg", 1), ("$mergeObjects", "$a"),
                                  ("$push", "$$ROOT"), ("$max", {"$abs": "$a"})])
def test_accumulators_outside_the_value_fold_are_refused(spec):
    assert compile_values(*spec) is None
