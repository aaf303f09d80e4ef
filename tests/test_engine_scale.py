"""The engine's fast paths keep MongoDB's results: the top-N of `$sort`+`$limit`, `$unwind`'s
shared copy before a `$group`, and bindings built once per stage."""

from __future__ import annotations

import datetime as dt

from hypothesis import given, settings
from hypothesis import strategies as st

from nlq.mql.engine import _unwind_may_share, aggregate
from nlq.mql.stages.ordering import parse_sort_spec, sort_documents, top_documents
from nlq.mql.values import Int64, MaxKey, MinKey, ObjectId

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from([1.0, -0.0, 2.5, float("nan"), float("inf")]),
    st.builds(Int64, st.integers(-3, 3)), st.sampled_from(["", "a", "b", "B", "é"]),
    st.sampled_from([ObjectId("000000000000000000000001"), dt.datetime(2020, 1, 1, tzinfo=dt.timezone.utc),
                     MinKey(), MaxKey()]))
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3) | st.fixed_dictionaries({"x": inner}),
                      max_leaves=4)
fields = st.sampled_from(["a", "b", "c.x"])


@st.composite
def documents(draw):
    out = []
    for i in range(draw(st.integers(0, 40))):
        doc = {"_id": i}
        for name in ("a", "b"):
            if draw(st.booleans()):
                doc[name] = draw(values)
        if draw(st.booleans()):
            doc["c"] = draw(st.one_of(values, st.fixed_dictionaries({"x": values})))
        out.append(doc)
    return out


@settings(max_examples=400, deadline=None)
@given(docs=documents(), spec=st.dictionaries(fields, st.sampled_from([1, -1]), min_size=1, max_size=3),
       limit=st.integers(1, 45))
def test_top_n_equals_the_full_stable_sort_cut_at_the_limit(docs, spec, limit):
    keys = parse_sort_spec(spec)
    expected = [d["_id"] for d in sort_documents(list(docs), keys)][:limit]
    assert [d["_id"] for d in top_documents(iter(docs), keys, limit, lambda: None)] == expected
    assert [d["_id"] for d in aggregate(docs, [{"$sort": spec}, {"$limit": limit}])] == expected


def test_top_n_keeps_arrival_order_among_ties():
    docs = [{"_id": i, "k": i % 2} for i in range(10)]
    assert [d["_id"] for d in aggregate(docs, [{"$sort": {"k": -1}}, {"$limit": 3}])] == [1, 3, 5]


def test_unwind_shares_its_copy_only_before_a_group_that_keeps_no_document():
    assert _unwind_may_share([{"$unwind": "$a"}, {"$group": {"_id": "$a.k", "n": {"$sum": 1}}}], 0)
    assert _unwind_may_share([{"$unwind": "$a"}, {"$unwind": "$a.b"}, {"$group": {"_id": "$a.b"}}], 0)
    assert not _unwind_may_share([{"$unwind": "$a"}, {"$group": {"_id": None, "d": {"$push": "$$ROOT"}}}], 0)
    assert not _unwind_may_share([{"$unwind": "$a"}, {"$group": {"_id": None, "d": {"$first": "$$CURRENT"}}}], 0)
    assert not _unwind_may_share([{"$unwind": "$a.b"}, {"$group": {"_id": None, "d": {"$push": "$a"}}}], 0)
    assert not _unwind_may_share([{"$unwind": "$a.b"}, {"$group": {"_id": {"$getField": "a"}}}], 0)
    assert not _unwind_may_share([{"$unwind": "$a"}, {"$match": {}}, {"$group": {"_id": "$a"}}], 0)
    assert not _unwind_may_share([{"$unwind": "$a"}], 0)


DOCS = [{"_id": 1, "a": [{"k": 1, "b": [1, 2]}, {"k": 2, "b": []}], "n": 5},
        {"_id": 2, "a": {"k": 3, "b": [4]}, "n": 6}, {"_id": 3, "a": [], "n": 7}, {"_id": 4, "n": 8},
        {"_id": 5, "a": [{"k": 1, "b": 9}], "n": 9}]

GROUPS = [
    {"_id": "$a.k", "n": {"$sum": "$n"}, "ks": {"$push": "$a.k"}},
    {"_id": None, "docs": {"$push": "$$ROOT"}},
    {"_id": None, "inner": {"$push": "$a"}, "first": {"$first": "$a"}},
    {"_id": "$a.k", "bs": {"$addToSet": "$a.b"}, "top": {"$top": {"sortBy": {"n": -1}, "output": "$a"}}},
]


def test_a_shared_unwind_gives_the_results_of_one_copy_per_element():
    """`{$match: {}}` between the stages turns the sharing off: the reference result."""
    for unwinds in ([{"$unwind": "$a"}], [{"$unwind": {"path": "$a", "preserveNullAndEmptyArrays": True}}],
                    [{"$unwind": "$a"}, {"$unwind": "$a.b"}], [{"$unwind": "$a.b"}]):
        for group in GROUPS:
            shared = aggregate(DOCS, unwinds + [{"$group": group}])
            fresh = aggregate(DOCS, unwinds + [{"$match": {}}, {"$group": group}])
            assert shared == fresh, (unwinds, group)
    assert DOCS[0]["a"][0] == {"k": 1, "b": [1, 2]}  # the input is never modified


def test_bindings_built_once_per_stage_see_each_document_and_lookup_variables():
    people = [{"_id": i, "city": c} for i, c in enumerate("xyx")]
    out = aggregate([{"_id": 0, "city": "x"}, {"_id": 1, "city": "y"}],
                    [{"$lookup": {"from": "people", "let": {"c": "$city"}, "as": "same",
                                  "pipeline": [{"$match": {"$expr": {"$eq": ["$city", "$$c"]}}},
                                               {"$project": {"_id": 1, "me": "$$ROOT._id", "c": "$$c"}}]}},
                     {"$project": {"ids": "$same._id", "cs": "$same.c", "root": "$$ROOT._id"}}],
                    catalog=lambda name: people)
    assert out == [{"_id": 0, "ids": [0, 2], "cs": ["x", "x"], "root": 0},
                   {"_id": 1, "ids": [1], "cs": ["y"], "root": 1}]
