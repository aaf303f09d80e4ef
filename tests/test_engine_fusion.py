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
    lookup = {"$lookup": {"from": "x", "localField": "k", "foreignField": "_id", "as": "a"}}
    assert_fused([lookup, {"$unwind": "$a"}, group], 1)
    assert_fused([{"$lookup": {**lookup["$lookup"], "as": "a.b"}}, {"$unwind": "$a.b"}, group], 2)
    assert_fused([{"$lookup": {**lookup["$lookup"], "pipeline": []}}, {"$unwind": "$a"}, group], 2)


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


@st.composite
def joins(draw):
    """Orders and customers whose join keys mix types, arrays, nulls and missing fields."""
    keys = st.one_of(st.sampled_from([1, 1.0, Int64(1), Decimal128("1"), 2, "1", "a", True, None, NAN, 2**53 + 1]),
                     st.lists(st.sampled_from([1, 2, "a", None, [1]]), max_size=3))
    orders, customers = [], []
    for i in range(draw(st.integers(0, 15))):
        doc = {"_id": i, "amount": draw(st.sampled_from([1, 2.5, Int64(7), "x", None]))}
        if draw(st.integers(0, 4)):
            doc["customer"] = draw(keys)
        if draw(st.integers(0, 3)) == 0:
            doc["c"] = "own"  # replaced by the join, or left out by a preserving $unwind
        orders.append(doc)
    for _ in range(draw(st.integers(0, 8))):
        doc = {"_id": draw(keys), "city": draw(st.sampled_from(["p", "q", None, 1, 1.0]))}
        if draw(st.booleans()):
            doc["tags"] = draw(st.lists(st.sampled_from(["p", 1, None]), max_size=2))
        customers.append(doc)
    return orders, customers


@settings(max_examples=500, deadline=None)
@given(data=joins(), foreign=st.sampled_from(["_id", "tags", "city", "nope"]),
       local=st.sampled_from(["customer", "amount", "nope"]),
       preserve=st.booleans(), group=groups(["$c", "$c.city", "$c._id", "$amount", "$customer", "$_id"],
                                            ["$c.city", "$c._id", "$customer", None, "$c"]))
def test_fused_lookup_unwind_group_equals_the_general_pipeline(data, foreign, local, preserve, group):
    orders, customers = data
    pipeline = [{"$lookup": {"from": "customers", "localField": local, "foreignField": foreign, "as": "c"}},
                {"$unwind": {"path": "$c", "preserveNullAndEmptyArrays": preserve}}, {"$group": group}]
    ctx = StageContext(lambda name: customers if name == "customers" else [])

    def run_with_catalog(stages):
        try:
            return canonical(list(compile_pipeline(stages, ctx)(orders)))
        except NlqError as error:
            return (type(error).__name__, str(error))
    assert run_with_catalog(pipeline) == run_with_catalog(general(pipeline))


@settings(max_examples=300, deadline=None)
@given(data=joins(), foreign=st.sampled_from(["_id", "tags", "city"]))
def test_the_foreign_index_shortcut_keeps_the_keys_of_an_equality(data, foreign):
    from nlq.mql.match import equality_keys  # noqa: PLC0415
    from nlq.mql.stages.joins import _ForeignIndex  # noqa: PLC0415
    _, customers = data
    expected: dict = {}
    for i, doc in enumerate(customers):
        for key in equality_keys(doc, (foreign,)):
            expected.setdefault(key, []).append(i)
    assert _ForeignIndex(customers, (foreign,), lambda: None).index == expected


def test_joins_match_by_bson_equality_whatever_came_first():
    """Repeated local values are remembered by value: 1, then True (equal in Python, not in BSON)."""
    local = [1, True, 1.0, Int64(1), Decimal128("1"), "1", None, "missing", [1, "a"], NAN, True, 1, [], [[1]]]
    orders = [{"_id": i} if v == "missing" else {"_id": i, "customer": v} for i, v in enumerate(local)]
    customers = [{"_id": 1, "city": "int"}, {"_id": True, "city": "bool"}, {"_id": "1", "city": "str"},
                 {"_id": None, "city": "null"}, {"city": "missing"}, {"_id": [1], "city": "array"},
                 {"_id": 1.0, "city": "double"}, {"_id": NAN, "city": "nan"}, {"_id": "a", "city": "a"}]
    pipeline = [{"$lookup": {"from": "customers", "localField": "customer", "foreignField": "_id", "as": "c"}},
                {"$unwind": "$c"}, {"$group": {"_id": "$_id", "cities": {"$push": "$c.city"}}}]
    ctx = StageContext(lambda name: customers)
    rows = list(compile_pipeline(pipeline, ctx)(orders))
    assert canonical(rows) == canonical(list(compile_pipeline(general(pipeline), ctx)(orders)))
    cities = {row["_id"]: row["cities"] for row in rows}
    assert cities[0] == cities[2] == cities[3] == cities[4] == cities[11] == ["int", "array", "double"]
    assert cities[1] == cities[10] == ["bool"]
    assert cities[6] == cities[7] == ["null", "missing"]
    assert cities[8] == ["int", "array", "double", "a"] and cities[9] == ["nan"]
    assert cities[12] == ["null", "missing"] and cities[13] == ["array"]
