"""BSON comparison order, equality and group keys.

Manual: https://www.mongodb.com/docs/manual/reference/bson-type-comparison-order/
"""

from __future__ import annotations

import datetime as dt
import math

from hypothesis import given
from hypothesis import strategies as st

from nlq.mql.values import (MISSING, UTC, Decimal128, Int64, MaxKey, MinKey, ObjectId, Regex, bson_type,
                            compare, equal, group_key, is_truthy, regex_options, sort_key)

# One value of each type, in the manual's order:
# MinKey, Null, Numbers, Symbol/String, Object, Array, BinData, ObjectId, Boolean, Date, Timestamp, Regex, MaxKey
ORDERED = [MinKey(), None, -5, "a", {"a": 1}, [1], b"\x00", ObjectId("5d505646cf6d4fe581014ab2"), False,
           dt.datetime(2020, 1, 1, tzinfo=UTC), Regex("a", "i"), MaxKey()]


def test_type_brackets_follow_the_manual_order():
    keys = [sort_key(v) for v in ORDERED]
    assert keys == sorted(keys)


def test_numbers_compare_by_value_across_types():
    assert equal(1, 1.0) and equal(1, Int64(1)) and equal(1, Decimal128("1.00"))
    assert compare(2, 1.5) == 1 and compare(Decimal128("0.1"), 0.2) == -1
    assert compare(math.nan, -math.inf) == -1  # NaN sorts below every number
    assert equal(math.nan, math.nan)


def test_null_and_missing_share_the_null_bracket_but_are_not_the_same_value():
    assert sort_key(None) == sort_key(MISSING)
    assert bson_type(None) == "null" and bson_type(MISSING) == "missing"


def test_objects_compare_pairwise_types_then_names_then_values():
    assert compare({"a": 1}, {"a": 1, "b": 0}) == -1   # fewer pairs sorts first
    assert compare({"a": 1}, {"b": 0}) == -1            # same type: field name decides
    assert compare({"a": "x"}, {"a": 5}) == 1           # strings after numbers
    assert not equal({"a": 1, "b": 2}, {"b": 2, "a": 1})  # documents are ordered


def test_arrays_compare_element_wise():
    assert compare([1, 2], [1, 3]) == -1 and compare([1], [1, 0]) == -1


def test_group_key_collides_equal_numbers_and_separates_bool():
    assert group_key(1) == group_key(1.0) == group_key(Decimal128("1"))
    assert group_key(True) != group_key(1)
    assert group_key({"a": 1}) == group_key({"a": 1.0})


def test_int_and_long_types():
    assert bson_type(5) == "int" and bson_type(2**40) == "long" and bson_type(Int64(5)) == "long"
    assert bson_type(True) == "bool" and bson_type(1.0) == "double"


def test_truthiness_of_aggregation_expressions():
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/cond/
    assert [is_truthy(v) for v in (False, None, MISSING, 0, 0.0, Decimal128("0"))] == [False] * 6
    assert all(is_truthy(v) for v in ([], "", {}, 1, "false"))


def test_regex_options_are_letters():
    assert regex_options(Regex("a", "mi")) == "im"
    import re

    assert regex_options(re.compile("a", re.I | re.X)) == "ix"


@given(st.lists(st.one_of(st.integers(-5, 5), st.floats(allow_nan=False, width=32), st.text(max_size=2),
                          st.none(), st.booleans()), max_size=8))
def test_sort_key_is_a_total_order_consistent_with_compare(items):
    ordered = sorted(items, key=sort_key)
    for a, b in zip(ordered, ordered[1:]):
        assert compare(a, b) <= 0
