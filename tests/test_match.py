"""Query predicate semantics (`$match`), one group per manual page."""

from __future__ import annotations

import re

import pytest

from nlq.errors import ExecutionError, ForbiddenOperatorError, UnknownOperatorError, UnsupportedOperatorError
from nlq.mql.match import compile_filter, equality_keys, path_values
from nlq.mql.values import MISSING, Decimal128, Int64, MaxKey, MinKey, Regex, group_key


def ids(docs, filter):
    pred = compile_filter(filter)
    return [d["_id"] for d in docs if pred(d)]


# --- Query on embedded documents and arrays, implicit array traversal
# https://www.mongodb.com/docs/manual/tutorial/query-arrays/
# https://www.mongodb.com/docs/manual/tutorial/query-array-of-documents/
INVENTORY = [
    {"_id": 1, "tags": ["blank", "red"], "dim": [14, 21], "instock": [{"wh": "A", "qty": 5}, {"wh": "C", "qty": 15}]},
    {"_id": 2, "tags": ["red", "blank"], "dim": [14, 21], "instock": [{"wh": "C", "qty": 5}]},
    {"_id": 3, "tags": ["red", "blank", "plain"], "dim": [10, 15.25], "instock": [{"wh": "A", "qty": 60}]},
    {"_id": 4, "tags": ["blank", "red"], "dim": [22.85, 30],
     "instock": [{"wh": "A", "qty": 40}, {"wh": "B", "qty": 5}]},
    {"_id": 5, "tags": ["blue"], "dim": [10, 15.25], "instock": [{"wh": "B", "qty": 15}, {"wh": "C", "qty": 35}]},
]


def test_array_exact_match_is_order_sensitive():
    assert ids(INVENTORY, {"tags": ["red", "blank"]}) == [2]


def test_array_contains_element():
    assert ids(INVENTORY, {"tags": "red"}) == [1, 2, 3, 4]


def test_array_element_conditions_may_be_met_by_different_elements():
    assert ids(INVENTORY, {"dim": {"$gt": 15, "$lt": 20}}) == [1, 2, 3, 5]


def test_elem_match_needs_one_element_for_all_conditions():
    assert ids(INVENTORY, {"dim": {"$elemMatch": {"$gt": 22, "$lt": 30}}}) == [4]


def test_array_index_position():
    assert ids(INVENTORY, {"dim.1": {"$gt": 25}}) == [4]


def test_size():
    assert ids(INVENTORY, {"tags": {"$size": 3}}) == [3]


def test_array_of_documents_field_path():
    assert ids(INVENTORY, {"instock.qty": {"$lte": 5}}) == [1, 2, 4]
    assert ids(INVENTORY, {"instock.0.qty": {"$lte": 20}}) == [1, 2, 5]


def test_array_of_documents_equality_is_exact_and_ordered():
    assert ids(INVENTORY, {"instock": {"wh": "A", "qty": 5}}) == [1]
    assert ids(INVENTORY, {"instock": {"qty": 5, "wh": "A"}}) == []


def test_elem_match_on_documents_vs_separate_conditions():
    assert ids(INVENTORY, {"instock": {"$elemMatch": {"qty": 5, "wh": "A"}}}) == [1]
    assert ids(INVENTORY, {"instock": {"$elemMatch": {"qty": {"$gt": 10, "$lte": 20}}}}) == [1, 5]
    assert ids(INVENTORY, {"instock.qty": {"$gt": 10, "$lte": 20}}) == [1, 4, 5]
    assert ids(INVENTORY, {"instock.qty": 5, "instock.wh": "A"}) == [1, 4]


def test_numeric_component_is_also_a_field_name():
    docs = [{"_id": 1, "a": {"0": 7}}, {"_id": 2, "a": [7]}, {"_id": 3, "a": [{"0": 7}]}]
    assert ids(docs, {"a.0": 7}) == [1, 2, 3]


def test_nested_arrays_are_not_traversed_by_paths():
    docs = [{"_id": 1, "a": [[{"b": 1}]]}, {"_id": 2, "a": [{"b": 1}]}]
    assert ids(docs, {"a.b": 1}) == [2]


# --- Query for null or missing fields
# https://www.mongodb.com/docs/manual/tutorial/query-for-null-fields/
NULLS = [{"_id": 1, "item": None}, {"_id": 2}, {"_id": 3, "item": [None, 1]}, {"_id": 4, "item": 0}]


def test_equality_to_null_matches_null_missing_and_arrays_with_null():
    assert ids(NULLS, {"item": None}) == [1, 2, 3]


def test_ne_null_and_exists():
    assert ids(NULLS, {"item": {"$ne": None}}) == [4]
    assert ids(NULLS, {"item": {"$exists": False}}) == [2]
    assert ids(NULLS, {"item": {"$exists": True}}) == [1, 3, 4]


def test_type_null_matches_only_null():
    assert ids(NULLS, {"item": {"$type": 10}}) == [1, 3]
    assert ids(NULLS, {"item": {"$type": "null"}}) == [1, 3]


def test_null_through_array_of_documents_missing_in_an_element():
    docs = [{"_id": 1, "a": [{"b": 1}, {"c": 2}]}, {"_id": 2, "a": [{"b": 1}]}]
    assert ids(docs, {"a.b": None}) == [1]
    assert ids(docs, {"a.b": {"$exists": False}}) == []


def test_null_through_arrays_as_mongodb_own_tests_say():
    # mongodb/mongo jstests/core/null2.js: only elements that are documents lacking the field
    docs = [{"_id": 1, "a": [{"b": 5}]}, {"_id": 2, "a": [{}]}, {"_id": 3, "a": []}, {"_id": 4, "a": [{}, {"b": 5}]},
            {"_id": 5, "a": [5, {"b": 5}]}]
    assert ids(docs, {"a.b": None}) == [2, 4]
    assert ids(docs, {"a.b": {"$in": [None]}}) == [2, 4]


def test_in_with_null_matches_missing():
    assert ids(NULLS, {"item": {"$in": [None, 0]}}) == [1, 2, 3, 4]
    assert ids(NULLS, {"item": {"$nin": [None]}}) == [4]


# --- Comparison query operators and type bracketing
# https://www.mongodb.com/docs/manual/reference/bson-type-comparison-order/
# https://www.mongodb.com/docs/manual/reference/operator/query/gt/
MIXED = [{"_id": 1, "v": 5}, {"_id": 2, "v": "9"}, {"_id": 3, "v": 7.5}, {"_id": 4, "v": Int64(10)},
         {"_id": 5, "v": Decimal128("6.5")}, {"_id": 6, "v": None}, {"_id": 7}, {"_id": 8, "v": [1, 20]},
         {"_id": 9, "v": True}]


def test_comparisons_stay_in_the_type_bracket():
    assert ids(MIXED, {"v": {"$gt": 5}}) == [3, 4, 5, 8]
    assert ids(MIXED, {"v": {"$lt": "a"}}) == [2]
    assert ids(MIXED, {"v": {"$lte": 5}}) == [1, 8]


def test_numbers_compare_across_numeric_types():
    assert ids(MIXED, {"v": 10}) == [4]
    assert ids(MIXED, {"v": 7.5}) == [3]
    assert ids(MIXED, {"v": Decimal128("6.5")}) == [5]
    # [1, 20]: 20 >= 6.5 and 1 < 8 — different elements may satisfy each condition
    assert ids(MIXED, {"v": {"$gte": Decimal128("6.5"), "$lt": 8}}) == [3, 5, 8]


def test_gte_null_matches_null_and_missing_gt_null_nothing():
    assert ids(MIXED, {"v": {"$gte": None}}) == [6, 7]
    assert ids(MIXED, {"v": {"$gt": None}}) == []


def test_minkey_maxkey_compare_with_every_type():
    assert ids(MIXED, {"v": {"$gt": MinKey()}}) == [1, 2, 3, 4, 5, 6, 7, 8, 9]
    assert ids(MIXED, {"v": {"$lt": MaxKey()}}) == [1, 2, 3, 4, 5, 6, 7, 8, 9]


def test_bool_is_not_a_number():
    assert ids(MIXED, {"v": 1}) == [8]
    assert ids(MIXED, {"v": True}) == [9]


def test_dates_compare_as_dates():
    import datetime as dt

    utc = dt.timezone.utc
    docs = [{"_id": 1, "d": dt.datetime(2020, 1, 1, tzinfo=utc)}, {"_id": 2, "d": dt.datetime(2021, 1, 1, tzinfo=utc)},
            {"_id": 3, "d": "2022-01-01"}]
    assert ids(docs, {"d": {"$gte": dt.datetime(2020, 6, 1, tzinfo=utc)}}) == [2]


# --- $in / $nin / $all
# https://www.mongodb.com/docs/manual/reference/operator/query/in/
# https://www.mongodb.com/docs/manual/reference/operator/query/all/
def test_in_with_regex_and_arrays():
    docs = [{"_id": 1, "tags": ["school", "home"]}, {"_id": 2, "tags": ["bea"]}, {"_id": 3, "tags": "beach"},
            {"_id": 4}]
    assert ids(docs, {"tags": {"$in": [re.compile("^be"), "home"]}}) == [1, 2, 3]
    assert ids(docs, {"tags": {"$in": [Regex("^BE", "i")]}}) == [2, 3]
    assert ids(docs, {"tags": {"$nin": ["home"]}}) == [2, 3, 4]


def test_in_matches_a_whole_array_operand_element():
    docs = [{"_id": 1, "a": [1, 2]}, {"_id": 2, "a": 1}, {"_id": 3, "a": [[1, 2]]}]
    assert ids(docs, {"a": {"$in": [[1, 2]]}}) == [1, 3]


def test_all():
    docs = [{"_id": 1, "tags": ["appliance", "school", "book"]}, {"_id": 2, "tags": ["school", "book"]},
            {"_id": 3, "tags": "appliance"}, {"_id": 4, "tags": [["appliance", "school"]]}]
    assert ids(docs, {"tags": {"$all": ["appliance", "school"]}}) == [1]
    assert ids(docs, {"tags": {"$all": ["appliance"]}}) == [1, 3]
    assert ids(docs, {"tags": {"$all": [["appliance", "school"]]}}) == [4]
    assert ids(docs, {"tags": {"$all": []}}) == []


def test_all_with_elem_match():
    docs = [{"_id": 1, "qty": [{"size": "S", "num": 10}, {"size": "M", "num": 45}]},
            {"_id": 2, "qty": [{"size": "M", "num": 100}, {"size": "L", "num": 30}]}]
    f = {"qty": {"$all": [{"$elemMatch": {"size": "M", "num": {"$gt": 50}}},
                          {"$elemMatch": {"num": 30}}]}}
    assert ids(docs, f) == [2]


# --- $exists, $type
# https://www.mongodb.com/docs/manual/reference/operator/query/exists/
# https://www.mongodb.com/docs/manual/reference/operator/query/type/
def test_type_aliases_codes_number_and_arrays():
    docs = [{"_id": 1, "z": 1}, {"_id": 2, "z": 1.5}, {"_id": 3, "z": "x"}, {"_id": 4, "z": [1, "x"]},
            {"_id": 5, "z": []}, {"_id": 6, "z": Int64(1)}, {"_id": 7, "z": {"a": 1}}]
    assert ids(docs, {"z": {"$type": "string"}}) == [3, 4]
    assert ids(docs, {"z": {"$type": 2}}) == [3, 4]
    assert ids(docs, {"z": {"$type": "number"}}) == [1, 2, 4, 6]
    assert ids(docs, {"z": {"$type": "array"}}) == [4, 5]
    assert ids(docs, {"z": {"$type": ["double", "object"]}}) == [2, 7]
    assert ids(docs, {"z": {"$type": "long"}}) == [6]
    with pytest.raises(ExecutionError):
        compile_filter({"z": {"$type": "strnig"}})


# --- $regex
# https://www.mongodb.com/docs/manual/reference/operator/query/regex/
PRODUCTS = [{"_id": 100, "sku": "abc123", "description": "Single line description."},
            {"_id": 101, "sku": "abc789", "description": "First line\nSecond line"},
            {"_id": 102, "sku": "xyz456", "description": "Many spaces before     line"},
            {"_id": 103, "sku": "xyz789", "description": "Multiple\nline description"},
            {"_id": 104, "sku": "Abc789", "description": "SKU starts with A"}]


def test_regex_forms_and_options():
    assert ids(PRODUCTS, {"sku": {"$regex": "789$"}}) == [101, 103, 104]
    assert ids(PRODUCTS, {"sku": {"$regex": "^ABC", "$options": "i"}}) == [100, 101, 104]
    assert ids(PRODUCTS, {"sku": Regex("^ABC", "i")}) == [100, 101, 104]
    assert ids(PRODUCTS, {"description": {"$regex": "^S", "$options": "m"}}) == [100, 101, 104]
    assert ids(PRODUCTS, {"description": {"$regex": "^S"}}) == [100, 104]
    assert ids(PRODUCTS, {"description": {"$regex": "m.*line", "$options": "si"}}) == [102, 103]
    assert ids(PRODUCTS, {"sku": {"$regex": "abc # category\n123", "$options": "x"}}) == [100]
    assert ids(PRODUCTS, {"sku": {"$in": [re.compile("^xyz")]}}) == [102, 103]


def test_regex_errors():
    with pytest.raises(ExecutionError):
        compile_filter({"a": {"$options": "i"}})
    with pytest.raises(ExecutionError):
        compile_filter({"a": {"$regex": "("}})


def test_regex_does_not_match_non_strings():
    assert ids([{"_id": 1, "a": 123}, {"_id": 2, "a": "123"}], {"a": {"$regex": "1"}}) == [2]


# --- $not, $ne, $nor, $or, $and
# https://www.mongodb.com/docs/manual/reference/operator/query/not/
# https://www.mongodb.com/docs/manual/reference/operator/query/nor/
def test_not_matches_missing_and_negates_the_whole_path():
    docs = [{"_id": 1, "price": 1.99}, {"_id": 2, "price": 2.5}, {"_id": 3}, {"_id": 4, "price": [1, 3]},
            {"_id": 5, "price": []}]
    assert ids(docs, {"price": {"$not": {"$gt": 1.99}}}) == [1, 3, 5]
    assert ids(docs, {"price": {"$ne": 1}}) == [1, 2, 3, 5]


def test_not_with_regex():
    docs = [{"_id": 1, "item": "pXa"}, {"_id": 2, "item": "abc"}, {"_id": 3}]
    assert ids(docs, {"item": {"$not": re.compile("^p.*")}}) == [2, 3]
    assert ids(docs, {"item": {"$not": {"$regex": "^p.*"}}}) == [2, 3]


def test_not_errors():
    with pytest.raises(ExecutionError):
        compile_filter({"a": {"$not": 5}})
    with pytest.raises(ExecutionError):
        compile_filter({"a": {"$not": {}}})


def test_logical_operators():
    docs = [{"_id": 1, "p": 1.99, "s": True}, {"_id": 2, "p": 1.99}, {"_id": 3, "s": False}, {"_id": 4, "p": 5}]
    assert ids(docs, {"$nor": [{"p": 1.99}, {"s": False}]}) == [4]
    assert ids(docs, {"$or": [{"p": 5}, {"s": True}]}) == [1, 4]
    assert ids(docs, {"$and": [{"p": 1.99}, {"s": {"$exists": True}}]}) == [1]
    with pytest.raises(ExecutionError):
        compile_filter({"$or": []})


# --- $mod, bits, $expr, $comment
# https://www.mongodb.com/docs/manual/reference/operator/query/mod/
# https://www.mongodb.com/docs/manual/reference/operator/query/bitsAllSet/
def test_mod_truncates_and_keeps_sign():
    docs = [{"_id": 1, "q": 0}, {"_id": 2, "q": 5}, {"_id": 3, "q": 12}, {"_id": 4, "q": 12.7},
            {"_id": 5, "q": -9}, {"_id": 6, "q": "12"}]
    assert ids(docs, {"q": {"$mod": [4, 0]}}) == [1, 3, 4]
    assert ids(docs, {"q": {"$mod": [4, -1]}}) == [5]
    with pytest.raises(ExecutionError):
        compile_filter({"q": {"$mod": [4]}})
    with pytest.raises(ExecutionError):
        compile_filter({"q": {"$mod": [0, 1]}})


def test_bits_operators():
    docs = [{"_id": 1, "a": 54}, {"_id": 2, "a": 20}, {"_id": 3, "a": 20.0}, {"_id": 4, "a": -5}]
    # 54 = 0b110110, 20 = 0b10100; -5 is ...11111011 in two's complement (only bit 2 clear)
    assert ids(docs, {"a": {"$bitsAllSet": [1, 5]}}) == [1, 4]
    assert ids(docs, {"a": {"$bitsAllSet": 50}}) == [1, 4]
    assert ids(docs, {"a": {"$bitsAnySet": [1, 5]}}) == [1, 4]
    assert ids(docs, {"a": {"$bitsAllClear": [1, 5]}}) == [2, 3]
    assert ids(docs, {"a": {"$bitsAnyClear": [1, 5]}}) == [2, 3]
    assert ids(docs, {"a": {"$bitsAnyClear": [2]}}) == [4]
    assert ids(docs, {"a": {"$bitsAllSet": [60]}}) == [4]


def test_expr_and_comment():
    docs = [{"_id": 1, "spent": 400, "budget": 450}, {"_id": 2, "spent": 500, "budget": 400}]
    assert ids(docs, {"$expr": {"$gt": ["$spent", "$budget"]}, "$comment": "over budget"}) == [2]


def test_expr_sees_lookup_variables():
    scope = {"limit": 450}
    pred = compile_filter({"$expr": {"$gt": ["$spent", "$$limit"]}}, scope)
    assert [pred({"spent": 500}), pred({"spent": 400})] == [True, False]
    scope["limit"] = 300  # re-bound in place, as $lookup does per document
    assert pred({"spent": 400}) is True


# --- errors: unknown, forbidden, unsupported
def test_unknown_query_operator_suggests():
    with pytest.raises(UnknownOperatorError, match=r"\$gte"):
        compile_filter({"a": {"$gtee": 1}})
    with pytest.raises(UnknownOperatorError, match="top level"):
        compile_filter({"$gt": 1})



def test_whole_document_operators_come_from_the_declarations():
    # the operators a filter takes in place of a field name are those declared over filters, an
    # expression or the whole document's data; each evaluated one works there and nowhere else
    from nlq.mql import registry

    whole = {n for n in registry.names(registry.QUERY) if registry.whole_document_query(n)}
    assert {"$and", "$or", "$nor", "$expr", "$comment"} <= whole
    assert not whole & {"$eq", "$in", "$not", "$elemMatch", "$exists", "$size", "$regex"}
    samples = {"$and": [{"a": 1}], "$or": [{"a": 1}], "$nor": [{"a": 2}], "$expr": {"$eq": ["$a", 1]},
               "$comment": "why"}
    assert {n for n in whole if registry.evaluator(n, registry.QUERY)} == set(samples)
    for name, arg in samples.items():
        assert compile_filter({name: arg})({"a": 1}) is True, name
        assert ids([{"_id": 1, "v": [{"a": 1}]}], {"v": {"$elemMatch": {name: arg}}}) == [1], name

def test_forbidden_and_unsupported_query_operators():
    with pytest.raises(ForbiddenOperatorError):
        compile_filter({"$where": "this.a > 1"})
    with pytest.raises(UnsupportedOperatorError):
        compile_filter({"$text": {"$search": "x"}})
    with pytest.raises(UnsupportedOperatorError):
        compile_filter({"loc": {"$near": [0, 0]}})
    # $sampleRate keeps documents at random: a known operator the engine does not run
    with pytest.raises(UnsupportedOperatorError, match=r"\$sampleRate"):
        compile_filter({"$sampleRate": 0.5})


def test_mixing_operators_and_fields_is_an_error():
    with pytest.raises(ExecutionError):
        compile_filter({"a": {"$gt": 1, "b": 2}})


def test_document_equality_is_field_order_sensitive():
    docs = [{"_id": 1, "s": {"h": 14, "w": 21}}, {"_id": 2, "s": {"w": 21, "h": 14}}]
    assert ids(docs, {"s": {"h": 14, "w": 21}}) == [1]


# --- helpers used by $lookup
def test_path_values_and_equality_keys():
    doc = {"a": [{"b": 1}, {}, {"b": [2, 3]}]}
    assert path_values(doc, ("a", "b")) == [1, MISSING, [2, 3]]
    assert equality_keys(doc, ("a", "b")) == {group_key(v) for v in (1, None, [2, 3], 2, 3)}
