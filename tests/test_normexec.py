"""The metric core: canonical values, row identity, EXC, EXF1, outcomes (SPEC §6, paper §II-D)."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nlq.mql.values import MISSING, Decimal128, Int64, ObjectId
from nlq.normexec import (ORDER_ONLY, ROW_SUBSET, ROW_SUPERSET, VALUE_MISMATCH, canonical, compare, exc,
                          diff, exf1, max_alignment, prepare, row_values)

OID = ObjectId("65a1b2c3d4e5f60718293a4b")
WHEN = dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=dt.timezone.utc)


# --- canonical values ---------------------------------------------------------------

def test_numbers_of_equal_value_are_equal_across_types():
    assert canonical(1) == canonical(1.0) == canonical(Int64(1)) == canonical(Decimal128("1"))
    assert hash(canonical(1)) == hash(canonical(1.0)) == hash(canonical(Decimal128("1.00")))
    assert canonical(Decimal128("0.1")) == canonical(0.1)
    assert canonical(2) != canonical(2.5)


def test_summation_noise_is_not_a_different_value():
    assert canonical(0.1 + 0.2) == canonical(0.3)
    assert canonical(1 / 3) != canonical(0.3333)


def test_nan_equals_nan_and_infinities_keep_sign():
    assert canonical(float("nan")) == canonical(Decimal128("NaN"))
    assert canonical(float("inf")) == canonical(Decimal128("Infinity")) != canonical(float("-inf"))


def test_booleans_are_not_numbers():
    assert canonical(True) != canonical(1)
    assert canonical(False) != canonical(0)


def test_null_and_missing_are_distinct():
    assert canonical(None) != canonical(MISSING)
    assert canonical([None]) != canonical([MISSING])
    # a top-level null is a value; a missing field is not there at all
    assert row_values({"a": 1, "b": None}) != row_values({"a": 1})
    assert row_values({"a": 1, "b": MISSING}) == row_values({"a": 1})


def test_dates_and_object_ids_keep_identity():
    assert canonical(WHEN) != canonical("2024-01-02T03:04:05.000Z")
    assert canonical(WHEN) != canonical(int(WHEN.timestamp() * 1000))
    assert canonical(OID) != canonical(str(OID))
    assert canonical(OID) == canonical(ObjectId(str(OID)))
    naive = WHEN.replace(tzinfo=None)
    assert canonical(naive) == canonical(WHEN)


def test_nested_key_order_irrelevant_but_names_and_array_order_significant():
    assert canonical({"a": 1, "b": {"x": [1, 2]}}) == canonical({"b": {"x": [1, 2.0]}, "a": 1})
    assert canonical({"a": 1}) != canonical({"b": 1})
    assert canonical([1, 2]) != canonical([2, 1])
    assert canonical({"a": [1, 2]}) != canonical({"a": [2, 1]})


def test_strings_do_not_collide_with_tagged_values():
    assert canonical("null") != canonical(None)
    assert canonical(["array", ()]) != canonical([])


@st.composite
def _documents(draw):
    keys = draw(st.lists(st.text(max_size=3), max_size=4, unique=True))
    scalars = st.one_of(st.integers(-5, 5), st.booleans(), st.none(), st.text(max_size=2),
                        st.floats(allow_nan=False, allow_infinity=False, width=32))
    return {k: draw(st.one_of(scalars, st.lists(scalars, max_size=3))) for k in keys}


@given(_documents(), st.randoms())
def test_key_order_never_matters(doc, rnd):
    items = list(doc.items())
    rnd.shuffle(items)
    assert canonical(dict(items)) == canonical(doc)
    assert hash(canonical(dict(items))) == hash(canonical(doc))


@given(st.lists(_documents(), max_size=6), st.randoms())
def test_unordered_exc_is_order_insensitive_and_reflexive(rows, rnd):
    shuffled = list(rows)
    rnd.shuffle(shuffled)
    assert exc(shuffled, rows) == 1
    assert exf1(shuffled, rows) == 1.0


# --- EXC ---------------------------------------------------------------------------

GOLD = [{"name": "Ann", "n": 3}, {"name": "Bob", "n": 5}]


def test_column_names_are_cosmetic():
    assert exc([{"who": "Ann", "count": 3}, {"who": "Bob", "count": 5}], GOLD) == 1


def test_surplus_of_two_is_accepted_and_three_rejected():
    two = [{**r, "h1": 0, "h2": "x"} for r in GOLD]
    three = [{**r, "h1": 0, "h2": "x", "h3": True} for r in GOLD]
    assert exc(two, GOLD) == 1
    assert exc(three, GOLD) == 0
    assert exc(three, GOLD, beta=3) == 1
    assert exc([{**r, "h1": 0} for r in GOLD], GOLD, beta=0) == 0


def test_retained_id_counts_as_a_surplus_value():
    with_id = [{"_id": OID, **r} for r in GOLD]
    assert exc(with_id, GOLD) == 1
    assert exc(with_id, GOLD, beta=0) == 0
    assert exc([{**r, "_id": OID, "a": 1, "b": 2} for r in GOLD], GOLD) == 0


def test_missing_gold_value_fails_even_with_room_for_surplus():
    assert exc([{"name": "Ann", "x": 1, "y": 2}, {"name": "Bob", "n": 5}], GOLD) == 0


def test_row_count_must_match():
    assert exc(GOLD + GOLD[:1], GOLD) == 0
    assert exc(GOLD[:1], GOLD) == 0


def test_duplicates_are_counted():
    gold = [{"a": 1}, {"a": 1}, {"a": 2}]
    assert exc([{"a": 1}, {"a": 2}, {"a": 2}], gold) == 0
    assert exc([{"a": 2}, {"a": 1}, {"a": 1.0}], gold) == 1
    # duplicated values inside a row are counted too
    assert exc([{"x": 1, "y": 2}], [{"x": 1, "y": 1}]) == 0
    assert exc([{"x": 1, "y": 1, "z": 2}], [{"x": 1, "y": 1}]) == 1


def test_order_enforced_only_when_gold_is_order_sensitive():
    reversed_rows = list(reversed(GOLD))
    assert exc(reversed_rows, GOLD, ordered=False) == 1
    assert exc(reversed_rows, GOLD, ordered=True) == 0
    assert exc([{**r, "_id": 1} for r in GOLD], GOLD, ordered=True) == 1


def test_null_is_not_missing_in_rows():
    assert exc([{"a": 1}], [{"a": 1, "b": None}]) == 0
    # a prediction with an extra null has one surplus value: accepted
    assert exc([{"a": 1, "b": None}], [{"a": 1}]) == 1


def test_one_equals_one_point_zero_in_rows():
    assert exc([{"avg": 2.0}], [{"avg": 2}]) == 1
    assert exc([{"avg": Decimal128("2.50")}], [{"avg": 2.5}]) == 1


def test_nested_values_are_strict():
    gold = [{"who": {"first": "Ann", "last": "Lee"}, "tags": ["a", "b"]}]
    assert exc([{"w": {"last": "Lee", "first": "Ann"}, "t": ["a", "b"]}], gold) == 1
    assert exc([{"w": {"last": "Lee", "given": "Ann"}, "t": ["a", "b"]}], gold) == 0
    assert exc([{"w": {"first": "Ann", "last": "Lee"}, "t": ["b", "a"]}], gold) == 0
    # a nested object is one value: flattening it is not the same row
    assert exc([{"first": "Ann", "last": "Lee", "t": ["a", "b"]}], gold) == 0


def test_matching_is_not_greedy():
    # Gold row {1,2,3} equals predicted row A exactly, so a greedy pass pairs
    # them and leaves gold row {1} with B = {1,2,3,4,5} (surplus 4): fail.
    # The maximum matching pairs {1} with A (surplus 2) and {1,2,3} with B.
    gold = [{"a": 1, "b": 2, "c": 3}, {"a": 1}]
    pred = [{"a": 1, "b": 2, "c": 3}, {"a": 1, "b": 2, "c": 3, "d": 4, "e": 5}]
    assert max_alignment(gold, pred) == 2
    assert exc(pred, gold) == 1
    # in input order, greedy first-fit fails too; ordered EXC rejects it
    assert exc(pred, gold, ordered=True) == 0


def test_matching_handles_many_duplicates_without_expanding_them():
    gold = [{"k": i % 3} for i in range(3000)]
    pred = [{"k": i % 3, "_id": None} for i in range(3000)]
    assert exc(pred, gold) == 1
    assert exc(pred[:-1] + [{"k": 7}], gold) == 0


def test_empty_rows_align_with_small_rows():
    assert exc([{"_id": None}], [{}]) == 1
    assert exc([{"a": 1, "b": 2, "c": 3}], [{}]) == 0


def test_bare_values_are_one_value_rows():
    assert exc([5], [{"n": 5}]) == 1


# --- EXF1 --------------------------------------------------------------------------

def test_exf1_arithmetic():
    gold = [{"a": 1}, {"a": 2}, {"a": 3}, {"a": 3}]
    pred = [{"x": 1}, {"x": 3}, {"x": 9}]
    # overlap = {1, 3} = 2; precision 2/3, recall 2/4; F1 = 2*(2/3)*(1/2)/(2/3+1/2) = 4/7
    assert exf1(pred, gold) == pytest.approx(4 / 7)
    assert exf1(pred + [{"x": 3}], gold) == pytest.approx(2 * (3 / 4) * (3 / 4) / (3 / 4 + 3 / 4))


def test_exf1_has_no_surplus_tolerance_and_no_order():
    assert exf1([{**r, "_id": 1} for r in GOLD], GOLD) == 0.0
    assert exf1(list(reversed(GOLD)), GOLD) == 1.0


def test_exf1_of_empty_results():
    assert exf1([], []) == 1.0
    assert exf1([], GOLD) == 0.0
    assert exf1(GOLD, []) == 0.0


def test_exf1_counts_duplicates():
    # overlap min(2,1) = 1: precision 1/1, recall 1/2 -> F1 = 2/3
    assert exf1([{"a": 1}], [{"a": 1}, {"a": 1}]) == pytest.approx(2 / 3)


# --- outcomes and near misses ------------------------------------------------------

def test_correct():
    c = compare([{"x": "Bob", "y": 5}, {"x": "Ann", "y": 3}], GOLD)
    assert (c.exc, c.exf1, c.outcome, c.near_miss) == (1, 1.0, "correct", None)


def test_empty_prediction():
    c = compare([], GOLD)
    assert (c.exc, c.exf1, c.outcome, c.near_miss) == (0, 0.0, "empty", None)


def test_empty_prediction_against_empty_gold_is_correct():
    c = compare([], [])
    assert (c.exc, c.exf1, c.outcome) == (1, 1.0, "correct")


def test_nonempty_prediction_against_empty_gold_is_a_superset():
    assert compare(GOLD, []).near_miss == ROW_SUPERSET


def test_order_only():
    c = compare(list(reversed(GOLD)), GOLD, ordered=True)
    assert (c.exc, c.exf1, c.outcome, c.near_miss) == (0, 1.0, "wrong_rows", ORDER_ONLY)


def test_row_subset():
    c = compare([{"x": "Bob", "y": 5, "_id": 1}], GOLD)
    assert (c.outcome, c.near_miss) == ("wrong_rows", ROW_SUBSET)
    assert c.exf1 == 0.0  # the surplus _id breaks the exact identity


def test_row_superset():
    c = compare(GOLD + [{"name": "Cy", "n": 1}], GOLD, ordered=True)
    assert (c.outcome, c.near_miss) == ("wrong_rows", ROW_SUPERSET)
    assert c.exf1 == pytest.approx(2 * (2 / 3) * 1 / (2 / 3 + 1))


def test_value_mismatch_same_count():
    c = compare([{"name": "Ann", "n": 4}, {"name": "Bob", "n": 5}], GOLD)
    assert (c.outcome, c.near_miss) == ("wrong_rows", VALUE_MISMATCH)
    assert c.exf1 == 0.5


def test_value_mismatch_fewer_rows_with_a_wrong_one():
    assert compare([{"name": "Ann", "n": 4}], GOLD).near_miss == VALUE_MISMATCH


def test_value_mismatch_more_rows_missing_a_gold_row():
    assert compare([{"name": "Ann", "n": 3}, {"name": "Bob"}, {"name": "Cy"}], GOLD).near_miss == VALUE_MISMATCH


def test_reordered_rows_with_wrong_values_are_value_mismatch():
    c = compare([{"name": "Bob", "n": 5}, {"name": "Ann", "n": 4}], GOLD, ordered=True)
    assert c.near_miss == VALUE_MISMATCH


def test_prepared_results_are_reusable():
    gold = prepare(GOLD)
    assert exc(GOLD, gold) == 1 and exc(prepare(GOLD[:1]), gold) == 0
    assert len(gold) == 2


# ---------------------------------------------------------------------------
# diff: why a verdict is not `correct`

def test_diff_names_the_gold_null_the_prediction_lacks():
    """A $group {_id: null} gold keeps its null as a value (TEND's rule); the diff says so."""
    d = diff([{"total": 5}], [{"_id": None, "total": 5}])
    assert d["rows"] == {"gold": 1, "pred": 1, "aligned": 0}
    assert d["missing"] == {"count": 1, "values": [None]} and d["surplus"] == {"count": 0, "values": []}
    assert d["order"] is None and d["summary"] == "1 gold value with no partner: null"


def test_diff_row_count_surplus_and_first_order_mismatch():
    gold = [{"n": "a", "v": 1}, {"n": "b", "v": 2}, {"n": "c", "v": 3}]
    pred = [{"n": "a", "v": 1}, {"n": "c", "v": 3}, {"n": "b", "v": 2}, {"n": "d", "v": 4}]
    d = diff(pred, gold, ordered=True)
    assert d["rows"] == {"gold": 3, "pred": 4, "aligned": 3}
    assert d["missing"]["count"] == 0 and d["surplus"] == {"count": 2, "values": ["d", 4]}
    assert d["order"] == {"position": 1, "gold": {"n": "b", "v": 2}, "pred": {"n": "c", "v": 3}}
    assert d["summary"] == '4 rows instead of 3; 2 surplus values: "d", 4 (a row may carry 2); first order mismatch at row 1'


def test_diff_counts_every_value_but_lists_a_few():
    gold = [{"v": i} for i in range(20)]
    d = diff([], gold)
    assert d["missing"]["count"] == 20 and d["missing"]["values"] == [0, 1, 2, 3, 4]
    assert d["summary"].startswith("0 rows instead of 20; 20 gold values with no partner: 0, 1, 2, 3, 4, ...")


def test_diff_of_values_regrouped_across_rows():
    d = diff([{"a": 1, "b": 2}, {"a": 3, "b": 4}], [{"a": 1, "b": 4}, {"a": 3, "b": 2}])
    assert d["missing"]["count"] == d["surplus"]["count"] == 0 and d["rows"]["aligned"] == 0
    assert d["summary"].startswith("the same values, grouped into rows differently (2 gold rows")


def test_diff_numbers_compare_across_types_as_exc_does():
    assert diff([{"x": 1.0}, {"x": 2}], [{"x": 1}, {"x": 3}])["missing"] == {"count": 1, "values": [3]}
