"""Core stages, exact rows, one group per manual page."""

from __future__ import annotations

import pytest

from nlq.errors import ExecutionError, UnsupportedOperatorError
from nlq.mql.engine import aggregate
from nlq.mql.values import Decimal128, Int64


def run(docs, *stages, **collections):
    return aggregate(docs, list(stages), catalog=lambda name: collections.get(name, []))


# --- $project
# https://www.mongodb.com/docs/manual/reference/operator/aggregation/project/
BOOKS = [{"_id": 1, "title": "abc123", "isbn": "0001122223334",
          "author": {"last": "zzz", "first": "aaa"}, "copies": 5, "lastModified": "2016-07-28"}]


def test_project_inclusion_keeps_id_and_document_order():
    assert run(BOOKS, {"$project": {"author": 1, "title": 1}}) == [
        {"_id": 1, "title": "abc123", "author": {"last": "zzz", "first": "aaa"}}]


def test_project_suppress_id_and_embedded_paths():
    assert run(BOOKS, {"$project": {"_id": 0, "author.last": 1, "title": 1}}) == [
        {"title": "abc123", "author": {"last": "zzz"}}]
    assert run(BOOKS, {"$project": {"_id": 0, "author": {"last": 1}}}) == [{"author": {"last": "zzz"}}]


def test_project_exclusion():
    assert run(BOOKS, {"$project": {"lastModified": 0, "author.first": 0, "isbn": 0}}) == [
        {"_id": 1, "title": "abc123", "author": {"last": "zzz"}, "copies": 5}]


def test_project_computed_fields_and_literal():
    out = run(BOOKS, {"$project": {"title": 1, "lastName": "$author.last", "one": {"$literal": 1},
                                   "flag": {"$literal": "$x"}}})
    assert out == [{"_id": 1, "title": "abc123", "lastName": "zzz", "one": 1, "flag": "$x"}]


def test_project_remove_variable():
    docs = [{"_id": 1, "a": 1, "b": ""}, {"_id": 2, "a": 2, "b": "x"}]
    out = run(docs, {"$project": {"a": 1, "b": {"$cond": [{"$eq": ["", "$b"]}, "$$REMOVE", "$b"]}}})
    assert out == [{"_id": 1, "a": 1}, {"_id": 2, "a": 2, "b": "x"}]


def test_project_inclusion_over_array_of_documents():
    docs = [{"_id": 1, "a": [{"b": 1, "c": 2}, {"c": 3}, 5, [{"b": 4}]]}]
    assert run(docs, {"$project": {"a.b": 1}}) == [{"_id": 1, "a": [{"b": 1}, {}, [{"b": 4}]]}]


def test_project_computed_dotted_path_over_array_sets_each_element():
    docs = [{"_id": 1, "x": 9, "a": [{"b": 1}, {"c": 3}]}]
    assert run(docs, {"$project": {"_id": 0, "a.k": "$x"}}) == [{"a": [{"k": 9}, {"k": 9}]}]


def test_project_mixing_inclusion_and_exclusion_is_an_error():
    with pytest.raises(ExecutionError, match="exclusion"):
        run(BOOKS, {"$project": {"title": 1, "isbn": 0}})
    assert run(BOOKS, {"$project": {"title": 1, "_id": 0}}) == [{"title": "abc123"}]


def test_project_spec_errors():
    with pytest.raises(ExecutionError):
        run(BOOKS, {"$project": {}})
    with pytest.raises(ExecutionError, match="collision"):
        run(BOOKS, {"$project": {"author": 1, "author.last": 1}})
    with pytest.raises(ExecutionError):
        run(BOOKS, {"$project": {"author": {}}})


def test_project_does_not_mutate_input():
    docs = [{"_id": 1, "a": {"b": 1, "c": 2}}]
    run(docs, {"$project": {"a.b": 0}})
    run(docs, {"$addFields": {"a.d": 4}})
    assert docs == [{"_id": 1, "a": {"b": 1, "c": 2}}]


# --- $addFields / $set / $unset
# https://www.mongodb.com/docs/manual/reference/operator/aggregation/addFields/
SCORES = [{"_id": 1, "student": "Maya", "homework": [10, 5, 10], "quiz": [10, 8], "extraCredit": 0},
          {"_id": 2, "student": "Ryan", "homework": [5, 6, 5], "quiz": [8, 8], "extraCredit": 8}]


def test_add_fields_two_stages():
    out = run(SCORES, {"$addFields": {"totalHomework": {"$sum": "$homework"}, "totalQuiz": {"$sum": "$quiz"}}},
              {"$addFields": {"totalScore": {"$add": ["$totalHomework", "$totalQuiz", "$extraCredit"]}}},
              {"$project": {"_id": 1, "totalScore": 1}})
    assert out == [{"_id": 1, "totalScore": 43}, {"_id": 2, "totalScore": 40}]


def test_add_fields_embedded_document_merges():
    docs = [{"_id": 1, "type": "car", "specs": {"doors": 4, "wheels": 4}},
            {"_id": 2, "type": "motorcycle", "specs": {"doors": 0, "wheels": 2}},
            {"_id": 3, "type": "jet ski"}]
    assert run(docs, {"$addFields": {"specs.fuel_type": "unleaded"}}) == [
        {"_id": 1, "type": "car", "specs": {"doors": 4, "wheels": 4, "fuel_type": "unleaded"}},
        {"_id": 2, "type": "motorcycle", "specs": {"doors": 0, "wheels": 2, "fuel_type": "unleaded"}},
        {"_id": 3, "type": "jet ski", "specs": {"fuel_type": "unleaded"}}]
    assert run(docs[:1], {"$set": {"specs": {"fuel_type": "diesel"}}}) == [
        {"_id": 1, "type": "car", "specs": {"doors": 4, "wheels": 4, "fuel_type": "diesel"}}]


def test_add_fields_overwrites_in_place_and_sees_only_the_input():
    docs = [{"_id": 1, "a": 1, "b": 2}]
    assert run(docs, {"$set": {"a": 10, "c": "$a"}}) == [{"_id": 1, "a": 10, "b": 2, "c": 1}]


def test_add_fields_over_array_of_documents():
    docs = [{"_id": 1, "a": [{"b": 1}, {"b": 2}]}]
    assert run(docs, {"$addFields": {"a.c": 0}}) == [{"_id": 1, "a": [{"b": 1, "c": 0}, {"b": 2, "c": 0}]}]


def test_unset():
    docs = [{"_id": 1, "title": "A", "isbn": "1", "author": {"last": "z", "first": "a"}}]
    assert run(docs, {"$unset": "isbn"}) == [{"_id": 1, "title": "A", "author": {"last": "z", "first": "a"}}]
    assert run(docs, {"$unset": ["isbn", "author.first"]}) == [{"_id": 1, "title": "A", "author": {"last": "z"}}]


# --- $group
# https://www.mongodb.com/docs/manual/reference/operator/aggregation/group/
SALES = [
    {"_id": 1, "item": "abc", "price": Decimal128("10"), "quantity": 2},
    {"_id": 2, "item": "jkl", "price": Decimal128("20"), "quantity": 1},
    {"_id": 3, "item": "xyz", "price": Decimal128("5"), "quantity": 10},
    {"_id": 4, "item": "xyz", "price": Decimal128("5"), "quantity": 20},
    {"_id": 5, "item": "abc", "price": Decimal128("10"), "quantity": 10},
]


def test_group_by_item_with_sum():
    out = run(SALES, {"$group": {"_id": "$item", "totalQty": {"$sum": "$quantity"}, "n": {"$sum": 1}}})
    assert out == [{"_id": "abc", "totalQty": 12, "n": 2}, {"_id": "jkl", "totalQty": 1, "n": 1},
                   {"_id": "xyz", "totalQty": 30, "n": 2}]


def test_group_null_id_counts_everything():
    assert run(SALES, {"$group": {"_id": None, "count": {"$count": {}}}}) == [{"_id": None, "count": 5}]


def test_group_key_equality_across_numeric_types_and_null_missing():
    docs = [{"k": 1}, {"k": 1.0}, {"k": Int64(1)}, {"k": None}, {}, {"k": "1"}]
    out = run(docs, {"$group": {"_id": "$k", "n": {"$sum": 1}}})
    assert out == [{"_id": 1, "n": 3}, {"_id": None, "n": 2}, {"_id": "1", "n": 1}]


def test_group_by_object_id():
    docs = [{"a": 1, "b": "x"}, {"a": 1, "b": "x"}, {"a": 2, "b": "x"}]
    out = run(docs, {"$group": {"_id": {"a": "$a", "b": "$b"}, "n": {"$sum": 1}}})
    assert out == [{"_id": {"a": 1, "b": "x"}, "n": 2}, {"_id": {"a": 2, "b": "x"}, "n": 1}]


def test_group_errors():
    with pytest.raises(ExecutionError, match="_id"):
        run(SALES, {"$group": {"n": {"$sum": 1}}})
    with pytest.raises(ExecutionError, match="'.'"):
        run(SALES, {"$group": {"_id": None, "a.b": {"$sum": 1}}})
    with pytest.raises(ExecutionError, match="inside an object"):
        run(SALES, {"$group": {"_id": None, "a": 1}})


def test_group_uses_registered_accumulators_through_compile_accumulator(monkeypatch):
    import nlq.mql.stages.grouping as grouping

    class Concat:
        def __init__(self):
            self.parts = []

        def add(self, vars):
            self.parts.append(vars["CURRENT"]["item"])

        def result(self):
            return "".join(self.parts)

    seen = []

    def fake_compile(name, arg):
        seen.append((name, arg))
        return Concat
    monkeypatch.setattr(grouping, "compile_accumulator", fake_compile)
    out = run(SALES, {"$group": {"_id": None, "all": {"$push": "$item"}}})
    assert seen == [("$push", "$item")] and out == [{"_id": None, "all": "abcjklxyzxyzabc"}]


# --- $sort
# https://www.mongodb.com/docs/manual/reference/operator/aggregation/sort/
# https://www.mongodb.com/docs/manual/reference/bson-type-comparison-order/ (arrays, mixed types)
def test_sort_multi_key_stable():
    docs = [{"_id": 1, "a": 2, "b": 1}, {"_id": 2, "a": 1, "b": 1}, {"_id": 3, "a": 2, "b": 2},
            {"_id": 4, "a": 1, "b": 1}]
    assert [d["_id"] for d in run(docs, {"$sort": {"b": -1, "a": 1}})] == [3, 2, 4, 1]


def test_sort_mixed_types_follow_bson_order():
    docs = [{"_id": 1, "v": "a"}, {"_id": 2, "v": 3}, {"_id": 3}, {"_id": 4, "v": None}, {"_id": 5, "v": {"x": 1}},
            {"_id": 6, "v": True}, {"_id": 7, "v": 1.5}]
    assert [d["_id"] for d in run(docs, {"$sort": {"v": 1}})] == [3, 4, 7, 2, 1, 5, 6]


def test_sort_arrays_by_smallest_ascending_largest_descending():
    docs = [{"_id": 1, "v": [1, 9]}, {"_id": 2, "v": 5}, {"_id": 3, "v": [3, 4]}, {"_id": 4, "v": []}]
    assert [d["_id"] for d in run(docs, {"$sort": {"v": 1}})] == [4, 1, 3, 2]
    assert [d["_id"] for d in run(docs, {"$sort": {"v": -1}})] == [1, 2, 3, 4]


def test_sort_dotted_path_through_array_of_documents():
    docs = [{"_id": 1, "a": [{"b": 7}, {"b": 2}]}, {"_id": 2, "a": [{"b": 4}]}]
    assert [d["_id"] for d in run(docs, {"$sort": {"a.b": 1}})] == [1, 2]
    assert [d["_id"] for d in run(docs, {"$sort": {"a.b": -1}})] == [1, 2]


def test_sort_errors():
    with pytest.raises(ExecutionError):
        run([], {"$sort": {"a": 2}})
    with pytest.raises(ExecutionError):
        run([], {"$sort": {}})
    with pytest.raises(UnsupportedOperatorError, match="meta"):
        run([], {"$sort": {"score": {"$meta": "textScore"}}})


# --- $skip, $limit, $count
# https://www.mongodb.com/docs/manual/reference/operator/aggregation/count/
def test_skip_limit_count():
    docs = [{"_id": i} for i in range(10)]
    assert run(docs, {"$skip": 7}) == [{"_id": 7}, {"_id": 8}, {"_id": 9}]
    assert run(docs, {"$limit": 2}) == [{"_id": 0}, {"_id": 1}]
    assert run(docs, {"$match": {"_id": {"$gte": 4}}}, {"$count": "n"}) == [{"n": 6}]
    assert run(docs, {"$match": {"_id": {"$gte": 40}}}, {"$count": "n"}) == []
    for bad in ({"$limit": 0}, {"$limit": -1}, {"$skip": -1}, {"$limit": 1.5}, {"$count": "$x"}, {"$count": "a.b"}):
        with pytest.raises(ExecutionError):
            run(docs, bad)


# --- $unwind
# https://www.mongodb.com/docs/manual/reference/operator/aggregation/unwind/
CLOTHING = [{"_id": 1, "item": "Shirt", "sizes": ["S", "M", "L"]}, {"_id": 2, "item": "Shorts", "sizes": []},
            {"_id": 3, "item": "Hat", "sizes": "M"}, {"_id": 4, "item": "Gloves"},
            {"_id": 5, "item": "Scarf", "sizes": None}]


def test_unwind_string_form():
    assert run(CLOTHING, {"$unwind": "$sizes"}) == [
        {"_id": 1, "item": "Shirt", "sizes": "S"}, {"_id": 1, "item": "Shirt", "sizes": "M"},
        {"_id": 1, "item": "Shirt", "sizes": "L"}, {"_id": 3, "item": "Hat", "sizes": "M"}]


def test_unwind_preserve_and_index():
    out = run(CLOTHING, {"$unwind": {"path": "$sizes", "preserveNullAndEmptyArrays": True,
                                     "includeArrayIndex": "arrayIndex"}})
    assert out == [
        {"_id": 1, "item": "Shirt", "sizes": "S", "arrayIndex": Int64(0)},
        {"_id": 1, "item": "Shirt", "sizes": "M", "arrayIndex": Int64(1)},
        {"_id": 1, "item": "Shirt", "sizes": "L", "arrayIndex": Int64(2)},
        {"_id": 2, "item": "Shorts", "arrayIndex": None},
        {"_id": 3, "item": "Hat", "sizes": "M", "arrayIndex": None},
        {"_id": 4, "item": "Gloves", "arrayIndex": None},
        {"_id": 5, "item": "Scarf", "sizes": None, "arrayIndex": None}]
    assert type(out[0]["arrayIndex"]) is Int64


def test_unwind_embedded_path():
    docs = [{"_id": 1, "a": {"b": [1, 2], "c": 0}}]
    assert run(docs, {"$unwind": "$a.b"}) == [{"_id": 1, "a": {"b": 1, "c": 0}}, {"_id": 1, "a": {"b": 2, "c": 0}}]


def test_unwind_errors():
    with pytest.raises(ExecutionError, match=r"prefixed with a '\$'"):
        run(CLOTHING, {"$unwind": "sizes"})
    with pytest.raises(ExecutionError):
        run(CLOTHING, {"$unwind": {"path": "$sizes", "bogus": 1}})


# --- $lookup
# https://www.mongodb.com/docs/manual/reference/operator/aggregation/lookup/
ORDERS = [{"_id": 1, "item": "almonds", "price": 12, "quantity": 2}, {"_id": 2, "item": "pecans", "price": 20,
                                                                      "quantity": 1}, {"_id": 3}]
INVENTORY = [{"_id": 1, "sku": "almonds", "instock": 120}, {"_id": 2, "sku": "bread", "instock": 80},
             {"_id": 3, "sku": "cashews", "instock": 60}, {"_id": 4, "sku": "pecans", "instock": 70},
             {"_id": 5, "sku": None}, {"_id": 6}]


def test_lookup_equality_with_null_and_missing():
    out = run(ORDERS, {"$lookup": {"from": "inventory", "localField": "item", "foreignField": "sku",
                                   "as": "inventory_docs"}}, inventory=INVENTORY)
    assert [[d["_id"] for d in o["inventory_docs"]] for o in out] == [[1], [4], [5, 6]]
    assert out[0] == {**ORDERS[0], "inventory_docs": [INVENTORY[0]]}


def test_lookup_local_array_and_foreign_array():
    classes = [{"_id": 1, "title": "Reading", "enrollmentlist": ["giraffe2", "pinkpanther", "shark"]},
               {"_id": 2, "title": "Math", "enrollmentlist": ["giraffe1", "shark"]}]
    members = [{"_id": 1, "name": "giraffe2"}, {"_id": 2, "name": "pinkpanther"}, {"_id": 3, "name": "shark"},
               {"_id": 4, "name": ["giraffe1", "x"]}]
    out = run(classes, {"$lookup": {"from": "members", "localField": "enrollmentlist", "foreignField": "name",
                                    "as": "m"}}, members=members)
    assert [[d["_id"] for d in o["m"]] for o in out] == [[1, 2, 3], [3, 4]]


def test_lookup_dotted_paths_through_arrays_of_documents():
    orders = [{"_id": 1, "lines": [{"sku": "a"}, {"sku": "b"}]}]
    items = [{"_id": 10, "info": [{"code": "b"}]}, {"_id": 11, "info": {"code": "a"}},
             {"_id": 12, "info": {"code": "c"}}]
    out = run(orders, {"$lookup": {"from": "items", "localField": "lines.sku", "foreignField": "info.code",
                                   "as": "hits"}}, items=items)
    assert [d["_id"] for d in out[0]["hits"]] == [10, 11]


def test_lookup_numeric_equality_across_types():
    out = run([{"_id": 1, "k": 2}], {"$lookup": {"from": "c", "localField": "k", "foreignField": "k", "as": "j"}},
              c=[{"k": 2.0}, {"k": Int64(2)}, {"k": "2"}])
    assert out[0]["j"] == [{"k": 2.0}, {"k": Int64(2)}]


def test_lookup_let_pipeline():
    orders = [{"_id": 1, "item": "almonds", "ordered": 2}, {"_id": 2, "item": "pecans", "ordered": 100}]
    warehouses = [{"_id": 1, "stock_item": "almonds", "warehouse": "A", "instock": 120},
                  {"_id": 2, "stock_item": "pecans", "warehouse": "A", "instock": 80},
                  {"_id": 3, "stock_item": "almonds", "warehouse": "B", "instock": 60}]
    out = run(orders, {"$lookup": {
        "from": "warehouses", "let": {"order_item": "$item", "order_qty": "$ordered"},
        "pipeline": [{"$match": {"$expr": {"$and": [{"$eq": ["$stock_item", "$$order_item"]},
                                                    {"$gte": ["$instock", "$$order_qty"]}]}}},
                     {"$project": {"stock_item": 0, "_id": 0}}],
        "as": "stockdata"}}, warehouses=warehouses)
    assert out == [{**orders[0], "stockdata": [{"warehouse": "A", "instock": 120}, {"warehouse": "B", "instock": 60}]},
                   {**orders[1], "stockdata": []}]


def test_lookup_concise_form_with_pipeline():
    restaurants = [{"_id": 1, "name": "American Steak House", "beverages": ["water", "soda"]},
                   {"_id": 2, "name": "Honest John Pizza", "beverages": ["soda"]}]
    orders = [{"_id": 1, "item": "filet", "restaurant_name": "American Steak House", "drink": "soda"},
              {"_id": 2, "item": "cheese pizza", "restaurant_name": "Honest John Pizza", "drink": "lemonade"}]
    out = run(orders, {"$lookup": {"from": "restaurants", "localField": "restaurant_name", "foreignField": "name",
                                   "let": {"orders_drink": "$drink"},
                                   "pipeline": [{"$match": {"$expr": {"$in": ["$$orders_drink", "$beverages"]}}}],
                                   "as": "matches"}}, restaurants=restaurants)
    assert [[d["_id"] for d in o["matches"]] for o in out] == [[1], []]


def test_nested_lookup_sees_outer_let_variables():
    outer = [{"_id": 1, "x": 1}, {"_id": 2, "x": 2}]
    c = [{"v": 1}, {"v": 2}]
    out = run(outer, {"$lookup": {"from": "c", "let": {"a": "$x"}, "as": "j", "pipeline": [
        {"$lookup": {"from": "c", "as": "k", "pipeline": [{"$match": {"$expr": {"$eq": ["$v", "$$a"]}}}]}},
        {"$limit": 1}]}}, c=c)
    assert [o["j"][0]["k"] for o in out] == [[{"v": 1}], [{"v": 2}]]


def test_lookup_errors():
    with pytest.raises(ExecutionError):
        run([], {"$lookup": {"from": "c", "localField": "a", "as": "x"}})
    with pytest.raises(ExecutionError):
        run([], {"$lookup": {"from": "c", "localField": "a", "foreignField": "b"}})
    with pytest.raises(ExecutionError):
        run([], {"$lookup": {"from": "c", "let": {"A": 1}, "pipeline": [], "as": "x"}})


# --- $facet, $replaceRoot / $replaceWith, $sortByCount
# https://www.mongodb.com/docs/manual/reference/operator/aggregation/facet/
# https://www.mongodb.com/docs/manual/reference/operator/aggregation/replaceRoot/
# https://www.mongodb.com/docs/manual/reference/operator/aggregation/sortByCount/
def test_facet():
    docs = [{"_id": i, "t": "ab"[i % 2]} for i in range(5)]
    out = run(docs, {"$facet": {"byT": [{"$sortByCount": "$t"}], "n": [{"$count": "n"}],
                                "none": [{"$match": {"t": "z"}}]}})
    assert out == [{"byT": [{"_id": "a", "count": 3}, {"_id": "b", "count": 2}], "n": [{"n": 5}], "none": []}]
    with pytest.raises(ExecutionError, match="facet"):
        run(docs, {"$facet": {"x": [{"$facet": {"y": []}}]}})


def test_replace_root_and_with():
    docs = [{"_id": 1, "name": {"first": "John", "last": "Backus"}}]
    assert run(docs, {"$replaceRoot": {"newRoot": "$name"}}) == [{"first": "John", "last": "Backus"}]
    assert run(docs, {"$replaceWith": {"$mergeObjects": [{"_id": "$_id"}, "$name"]}}) == [
        {"_id": 1, "first": "John", "last": "Backus"}]
    with pytest.raises(ExecutionError, match="must evaluate to an object"):
        run([{"_id": 2}], {"$replaceRoot": {"newRoot": "$name"}})


def test_sort_by_count_sorts_by_count_descending():
    docs = [{"tags": ["a", "b"]}, {"tags": ["b"]}, {"tags": ["c", "b", "a"]}]
    assert run(docs, {"$unwind": "$tags"}, {"$sortByCount": "$tags"}) == [
        {"_id": "b", "count": 3}, {"_id": "a", "count": 2}, {"_id": "c", "count": 1}]
    with pytest.raises(ExecutionError):
        run(docs, {"$sortByCount": "tags"})


def test_sort_then_limit_keeps_the_stable_top_n():
    docs = [{"_id": i, "k": (i * 7919) % 13} for i in range(5000)]
    expected = sorted(docs, key=lambda d: d["k"])[:25]
    assert run(docs, {"$sort": {"k": 1}}, {"$limit": 25}) == expected
    expected_desc = sorted(docs, key=lambda d: -d["k"])[:3000]
    assert run(docs, {"$sort": {"k": -1}}, {"$limit": 3000}) == expected_desc


def test_project_computed_id_comes_first():
    out = run([{"_id": 1, "a": 2, "b": 3}], {"$project": {"b": 1, "_id": "$a"}})
    assert list(out[0].items()) == [("_id", 2), ("b", 3)]


# --- properties: the hash-indexed $lookup agrees with the $eq predicate; top-N sort = sort + slice
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_scalars = st.one_of(st.none(), st.integers(-3, 3), st.sampled_from([1.0, 2.5, "a", "b", True]))
_values = st.recursive(_scalars, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                         st.dictionaries(st.sampled_from("bk"), inner, max_size=2)),
                       max_leaves=6)
_docs = st.lists(st.dictionaries(st.sampled_from("abk"), _values, max_size=3), max_size=8)


@settings(max_examples=200, deadline=None)
@given(foreign=_docs, local=_values)
def test_lookup_index_agrees_with_equality_predicate(foreign, local):
    # MongoDB defines the join as {foreignField: {$in: <local values>}} on the foreign side.
    from nlq.mql.match import compile_filter
    from nlq.mql.stages.joins import _local_values

    [out] = run([{"_id": 0, "k": local}], {"$lookup": {"from": "f", "localField": "k", "foreignField": "a.b",
                                                       "as": "j"}}, f=foreign)
    predicate = compile_filter({"a.b": {"$in": _local_values({"k": local}, ("k",))}})
    assert out["j"] == [d for d in foreign if predicate(d)]


@settings(max_examples=100, deadline=None)
@given(docs=_docs, n=st.integers(1, 5), descending=st.booleans())
def test_sort_limit_is_sort_then_slice(docs, n, descending):
    spec = {"$sort": {"a": -1 if descending else 1, "k": 1}}
    assert run(docs, spec, {"$limit": n}) == run(docs, spec)[:n]


# --- $lookup localField/foreignField semantics, transcribed from MongoDB's own test suite
# (mongodb/mongo jstests/aggregation/sources/lookup/lookup_equijoin_semantics.js); the
# manual page: https://www.mongodb.com/docs/manual/reference/operator/aggregation/lookup/
NAN_DEC = Decimal128("NaN")
NULLS_MISSING = [{"_id": 0, "no_a": 1}, {"_id": 1, "a": None}, {"_id": 2, "a": [None, 1]}, {"_id": 10, "a": []},
                 {"_id": 20, "a": 1}, {"_id": 21, "a": {"x": None}}, {"_id": 22, "a": [[None, 1], 2]}]
NANS = [{"_id": 0, "a": float("nan")}, {"_id": 1, "a": NAN_DEC}, {"_id": 2, "a": [1, float("nan")]},
        {"_id": 3, "a": [1, NAN_DEC]}, {"_id": 10, "a": None}, {"_id": 11, "no_a": 42}]
TOP_SCALAR = [{"_id": 0, "a": 1, "y": 2}, {"_id": 1, "a": [1]}, {"_id": 2, "a": [1, 2, 3]}, {"_id": 3, "a": [1, [2, 3]]},
              {"_id": 4, "a": [1, [1, 2]]}, {"_id": 5, "a": [1, 2, 1]}, {"_id": 6, "a": [1, None]},
              {"_id": 7, "a": [1, []]}, {"_id": 10, "a": 2}, {"_id": 11, "a": [[1], 2]}, {"_id": 12, "a": [2, 3]},
              {"_id": 13, "a": {"y": 1}}, {"_id": 14, "no_a": 1}]
PATH_SCALAR = [{"_id": 0, "a": {"x": 1, "y": 2}}, {"_id": 1, "a": [{"x": 1}, {"x": 2}]},
               {"_id": 2, "a": [{"x": 1}, {"x": None}]}, {"_id": 3, "a": [{"x": 1}, {"x": []}]},
               {"_id": 4, "a": [{"x": 1}, {"no_x": 2}]}, {"_id": 5, "a": {"x": [1, 2]}},
               {"_id": 6, "a": [{"x": [1, 2]}]}, {"_id": 7, "a": [{"x": [1, 2]}, {"no_x": 2}]},
               {"_id": 10, "a": {"x": 2, "y": 1}}, {"_id": 11, "a": {"x": [2, 3], "y": 1}},
               {"_id": 12, "a": [{"no_x": 1}, {"x": 2}, {"x": 3}]}, {"_id": 13, "a": {"x": [[1], 2]}},
               {"_id": 14, "a": [{"x": [[1], 2]}]}, {"_id": 15, "a": {"no_x": 1}}]
DEEP = [{"_id": 0, "a": {"b": {"c": 1}}}, {"_id": 1, "a": {"b": {"c": [[2, 3], 1]}}},
        {"_id": 2, "a": {"b": [{"c": 2}, {"c": 1}]}}, {"_id": 3, "a": {"b": [{"c": None}, {"c": 1}]}},
        {"_id": 4, "a": {"b": [{"no_c": 2}, {"c": 1}]}}, {"_id": 5, "a": {"b": [{"c": []}, {"c": 1}]}},
        {"_id": 6, "a": {"b": [{"c": [[2, 3], 1]}]}}, {"_id": 7, "a": {"b": [{"c": 1}, {"c": [[2, 3], 4]}]}},
        {"_id": 8, "a": [{"b": {"c": 2}}, {"b": {"c": 1}}]}, {"_id": 9, "a": [{"b": {"c": None}}, {"b": {"c": 1}}]},
        {"_id": 10, "a": [{"b": {"no_c": 2}}, {"b": {"c": 1}}]}, {"_id": 11, "a": [{"b": {"c": []}}, {"b": {"c": 1}}]},
        {"_id": 12, "a": [{"b": {"c": [[2, 3], 1]}}]}, {"_id": 13, "a": [{"b": {"c": 4}}, {"b": {"c": [[2, 3], 1]}}]},
        {"_id": 14, "a": [{"no_b": 2}, {"b": {"c": 1}}]}, {"_id": 15, "a": [{"b": [{"c": 1}]}]},
        {"_id": 16, "a": [{"b": {"c": 3}}, {"b": [{"c": 1}, {"c": 2}]}]},
        {"_id": 17, "a": [{"b": {"c": None}}, {"b": [{"c": 1}]}]},
        {"_id": 18, "a": [{"b": {"no_c": 2}}, {"b": [{"c": 1}]}]}, {"_id": 19, "a": [{"b": {"c": []}}, {"b": [{"c": 1}]}]},
        {"_id": 20, "a": [{"b": [{"c": [[2, 3], 1]}]}]}, {"_id": 21, "a": [{"b": {"c": 4}}, {"b": [{"c": [[2, 3], 1]}]}]},
        {"_id": 22, "a": [{"no_b": 2}, {"b": [{"no_c": 3}, {"c": 1}]}]},
        {"_id": 100, "a": {"b": {"c": [[1, 2], 3]}}}, {"_id": 101, "a": {"b": [{"c": [[1, 2], 3]}]}},
        {"_id": 102, "a": [{"b": {"c": [[1, 2], 3]}}]}, {"_id": 103, "a": [{"b": [{"c": [[1, 2], 3]}]}]}]
TOP_ARRAY = [{"_id": 0, "a": [[1, 2], 3], "y": 4}, {"_id": 1, "a": [[1, 2]]}, {"_id": 2, "a": [1, 2], "y": 3},
             {"_id": 10, "a": [[[1, 2], 3], 4]}, {"_id": 11, "a": [2, 1]}, {"_id": 12, "a": [[2, 1], 3], "y": [1, 2]},
             {"_id": 13, "a": [[2, 1], 3], "y": [[1, 2], 3]}, {"_id": 14, "a": None}, {"_id": 15, "no_a": [1, 2]}]
MISSING_ON_PATH = [{"_id": 0, "a": {"no_x": 1}}, {"_id": 1, "a": {"no_x": [1, 2]}},
                   {"_id": 2, "a": [{"no_x": 1}, {"no_x": 2}]}, {"_id": 3, "a": [{"no_x": 2}, {"x": 1}]},
                   {"_id": 4, "a": [{"no_x": [1, 2]}, {"x": 1}]}, {"_id": 5, "a": {"x": None}},
                   {"_id": 6, "a": [{"x": None}, {"x": 1}]}, {"_id": 7, "a": [{"x": None}, {"x": [1]}]},
                   {"_id": 8, "no_a": 1}, {"_id": 9, "a": [1]}, {"_id": 10, "a": []}, {"_id": 11, "a": [[1]]},
                   {"_id": 12, "a": [[]]}, {"_id": 20, "a": {"x": 2, "y": 1}}, {"_id": 21, "a": [{"x": 2}, {"x": 3}]}]
SCALARS_ON_PATH = [{"_id": 0, "a": 1}, {"_id": 1, "no_a": 1}, {"_id": 2, "a": [1]}, {"_id": 3, "a": {"b": 1}},
                   {"_id": 4, "a": {"no_b": 1}}, {"_id": 5, "a": {"b": [1]}}, {"_id": 6, "a": [{"b": {"no_c": 1}}, 1]},
                   {"_id": 7, "a": {"b": [{"no_c": 1}, 1]}}]
EMPTY_TOP = [{"_id": 0, "a": [[]]}, {"_id": 1, "a": [[], 1]}, {"_id": 2, "a": [[], None]}, {"_id": 3, "a": []},
             {"_id": 10, "no_a": 1}, {"_id": 11, "a": None}, {"_id": 12, "a": [None]}, {"_id": 13, "a": [None, 1]},
             {"_id": 20, "a": 1}, {"_id": 21, "a": [[[], 1], 2]}, {"_id": 22, "a": [1, 2]},
             {"_id": 23, "a": [[None, 1], 2]}]
NUMERIC_SCALAR = [{"_id": 0, "a": [{"x": 1}, {"x": 2}]}, {"_id": 1, "a": [{"x": [2, 3, 1]}]},
                  {"_id": 2, "a": [{"x": 1}, {"y": 1}]}, {"_id": 10, "a": [{"x": 2}, {"x": 1}]},
                  {"_id": 11, "a": [{"x": [2, 3]}]}, {"_id": 12, "a": {"x": 1}}, {"_id": 13, "a": {"x": [1, 2]}},
                  {"_id": 14, "a": [{"y": 1}, {"x": 1}]}]
NUMERIC_NULL = [{"_id": 0, "a": {"x": 1}}, {"_id": 1, "a": {"x": [1, 2]}}, {"_id": 2, "a": [{"y": 1}, {"x": 1}]},
                {"_id": 3, "a": [{"x": None}, {"x": 1}]}, {"_id": 4, "a": [{"x": [1, None]}, {"x": 1}]},
                {"_id": 5, "a": [1, 2]}, {"_id": 10, "a": [{"x": 1}, {"y": 1}]}, {"_id": 11, "a": [{"x": [1, 2]}]}]

# (docs, path, other side's document with its field at "b", ids of docs expected to join)
LOOKUP_CASES = [
    (NULLS_MISSING, "a", {"_id": 0, "b": None}, [0, 1, 2, 10], [0, 1, 2]),
    (NULLS_MISSING, "a", {"_id": 0, "no_b": 1}, [0, 1, 2, 10], [0, 1, 2]),
    (NANS, "a", {"_id": 0, "b": float("nan")}, [0, 1, 2, 3], [0, 1, 2, 3]),
    (TOP_SCALAR, "a", {"_id": 0, "b": 1}, [0, 1, 2, 3, 4, 5, 6, 7], [0, 1, 2, 3, 4, 5, 6, 7]),
    (PATH_SCALAR, "a.x", {"_id": 0, "b": 1}, [0, 1, 2, 3, 4, 5, 6, 7], [0, 1, 2, 3, 4, 5, 6, 7]),
    (DEEP, "a.b.c", {"_id": 0, "b": 1}, list(range(23)), list(range(23))),
    (TOP_ARRAY, "a", {"_id": 0, "b": [1, 2]}, [0, 1, 2, 11], [2, 11]),
    (TOP_ARRAY, "a", {"_id": 0, "b": [[1, 2], 42]}, [0, 1], [0, 1, 2]),
    (MISSING_ON_PATH, "a.x", {"_id": 0, "b": None}, [0, 1, 2, 5, 6, 7, 8, 9, 10, 11, 12], [0, 1, 2, 3, 4, 5, 6, 7, 8]),
    (MISSING_ON_PATH, "a.x", {"_id": 0, "no_b": 1}, [0, 1, 2, 5, 6, 7, 8, 9, 10, 11, 12],
     [0, 1, 2, 3, 4, 5, 6, 7, 8]),
    (SCALARS_ON_PATH, "a.b.c", {"_id": 0, "b": None}, [0, 1, 2, 3, 4, 5, 6, 7], [0, 1, 3, 4, 6, 7]),
    (EMPTY_TOP, "a", {"_id": 0, "b": []}, [0, 1, 2], [2, 10, 11, 12, 13]),
    (EMPTY_TOP, "a", {"_id": 0, "b": [[], 42]}, [0, 1, 2], [0, 1, 2, 3]),
    (NUMERIC_SCALAR, "a.0.x", {"_id": 0, "b": 1}, [0, 1, 2], [0, 1, 2]),
    (NUMERIC_NULL, "a.0.x", {"_id": 0, "b": None}, [0, 1, 2, 3, 4, 5], [0, 1, 2, 3, 4, 10, 11]),
]


@pytest.mark.parametrize("docs, path, other, as_local, as_foreign", LOOKUP_CASES,
                         ids=[f"{c[1]}-{i}" for i, c in enumerate(LOOKUP_CASES)])
def test_lookup_equijoin_semantics_of_mongodb(docs, path, other, as_local, as_foreign):
    # docs on the local side, one foreign document
    out = run(docs, {"$lookup": {"from": "f", "localField": path, "foreignField": "b", "as": "m"}}, f=[other])
    assert sorted(d["_id"] for d in out if d["m"]) == sorted(as_local)
    # one local document, docs on the foreign side
    [one] = run([other], {"$lookup": {"from": "f", "localField": "b", "foreignField": path, "as": "m"}}, f=docs)
    assert sorted(d["_id"] for d in one["m"]) == sorted(as_foreign)


# --- $sort over arrays and missing, transcribed from MongoDB's own tests
# (mongodb/mongo jstests/core/query/sort/sorta.js, jstests/core/sort_array.js)
def test_sort_missing_null_empty_array_minkey_maxkey():
    from nlq.mql.values import MaxKey, MinKey

    docs = [{"_id": 0, "a": MinKey()}, {"_id": 1, "a": []}, {"_id": 2, "a": []}, {"_id": 3, "a": None}, {"_id": 4},
            {"_id": 5, "a": None}, {"_id": 6, "a": 1}, {"_id": 7, "a": [2]}, {"_id": 8, "a": MaxKey()}]
    shuffled = [docs[i] for i in (5, 8, 1, 7, 0, 3, 6, 2, 4)]
    assert [d["_id"] for d in run(shuffled, {"$sort": {"a": 1, "_id": 1}})] == list(range(9))


def test_sort_arrays_after_match_and_compound_mixed_directions():
    docs = [{"_id": 0, "a": [3, 0, 1]}, {"_id": 1, "a": [8, 4, -1]}]
    assert run(docs, {"$match": {"a": {"$gte": 2}}}, {"$sort": {"a": 1}}) == [docs[1], docs[0]]
    docs = [{"_id": 0, "a": [3, 0, 1]}, {"_id": 1, "a": [0, 4, -1]}]
    assert run(docs, {"$match": {"a": {"$gte": 2}}}, {"$sort": {"a": -1}}) == [docs[1], docs[0]]
    docs = [{"_id": 0, "x": [{"y": [4, 0, 1], "z": 7}, {"y": 0, "z": 9}]},
            {"_id": 1, "x": [{"y": 1, "z": 7}, {"y": 0, "z": [8, 6]}]}]
    assert [d["_id"] for d in run(docs, {"$sort": {"x.y": 1, "x.z": -1}})] == [0, 1]
    assert [d["_id"] for d in run(docs, {"$sort": {"x.y": -1, "x.z": 1}})] == [0, 1]
    docs = [{"_id": 0, "a": 1, "d": [{"e": {"f": 1, "g": [6, 5, 4]}}, {"e": {"g": [3, 2, 1]}}]},
            {"_id": 1, "a": 2, "d": [{"e": {"f": 2, "g": [5, 4, 3]}}, {"e": {"g": [2, 1, 0]}}]}]
    assert [d["_id"] for d in run(docs, {"$sort": {"d.e.g": 1}})] == [1, 0]


def test_add_fields_dotted_paths_as_mongodb_own_tests_say():
    # mongodb/mongo jstests/aggregation/sources/addFields/dotted_paths.js
    doc = {"_id": 1, "arrayField": [1, {"subField": [2, {}]}, [1]], "objField": {"p": {"q": 1}, "subArr": [1]},
           "otherField": "value"}
    nested = {"newSubObj": [{"p": "newValue"}]}

    def add(spec):
        [out] = run([doc], {"$addFields": spec})
        return out
    assert add({"objField.subArr": "newValue"})["objField"] == {"p": {"q": 1}, "subArr": "newValue"}
    assert add({"objField.newSubPath.b": {"$literal": "newValue"}})["objField"] == {
        "p": {"q": 1}, "subArr": [1], "newSubPath": {"b": "newValue"}}
    assert add({"objField.newSubPath.b": nested})["objField"]["newSubPath"] == {"b": nested}
    assert add({"newField.newSubPath.b": "newValue"})["newField"] == {"newSubPath": {"b": "newValue"}}
    sub = {"newSubPath": {"b": "newValue"}}
    assert add({"arrayField.newSubPath.b": "newValue"})["arrayField"] == [sub, {"subField": [2, {}], **sub}, [sub]]
    sub = {"subField": {"b": nested}}
    assert add({"arrayField.subField.b": {"$literal": nested}})["arrayField"] == [
        sub, {"subField": [{"b": nested}, {"b": nested}]}, [sub]]
    assert doc["arrayField"] == [1, {"subField": [2, {}]}, [1]]  # the input is untouched


def test_lookup_matches_each_foreign_document_once_in_foreign_order():
    """A foreign document whose foreignField array repeats a value, or holds several of the local
    values, is joined once, in the foreign collection's order (single and array localFields)."""
    foreign = [{"_id": "a", "k": [1, 1, 2]}, {"_id": "b", "k": 2}, {"_id": "c", "k": [2, 1]}, {"_id": "d", "k": 3}]
    docs = [{"_id": 1, "x": 1}, {"_id": 2, "x": 2}, {"_id": 3, "x": [2, 1, 1]}, {"_id": 4, "x": 9},
            {"_id": 5}, {"_id": 6, "x": []}]
    out = run(docs, {"$lookup": {"from": "f", "localField": "x", "foreignField": "k", "as": "j"}},
              {"$project": {"j": "$j._id"}}, f=foreign)
    assert out == [{"_id": 1, "j": ["a", "c"]}, {"_id": 2, "j": ["a", "b", "c"]}, {"_id": 3, "j": ["a", "b", "c"]},
                   {"_id": 4, "j": []}, {"_id": 5, "j": []}, {"_id": 6, "j": []}]
