"""nlq.mql.serialize: parse ∘ serialize identity, over fixtures and generated pipelines."""

from __future__ import annotations

import datetime as dt
import math
from pathlib import Path

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nlq.io import from_extjson
from nlq.mql.mongosh import parse_query
from nlq.mql.query import Query
from nlq.mql.serialize import literal, regex_flags, to_json, to_mongosh
from nlq.mql.values import UTC, Binary, Decimal128, Int64, MaxKey, MinKey, ObjectId, Regex, Timestamp

ROUNDTRIP = Path(__file__).resolve().parent.parent / "fixtures" / "mql" / "roundtrip.jsonl"
CASES = [orjson.loads(line) for line in ROUNDTRIP.read_bytes().splitlines() if line.strip()]


def typed(value):
    """A comparable form that keeps BSON types apart (1 vs 1.0 vs Int64(1) vs True, NaN == NaN)."""
    t = type(value)
    if t is dict:
        return ("dict", tuple((k, typed(v)) for k, v in value.items()))
    if t is list:
        return ("list", tuple(typed(v) for v in value))
    if t is float and math.isnan(value):
        return ("float", "nan")
    if t is float:
        return ("float", value, math.copysign(1, value))
    if isinstance(value, Regex):
        return ("regex", value.pattern, regex_flags(value))
    if isinstance(value, Decimal128):
        return ("decimal", value.bid)
    if isinstance(value, Binary):
        return ("binary", value.subtype, bytes(value))
    if isinstance(value, Timestamp):
        return ("timestamp", value.time, value.inc)
    if isinstance(value, (MinKey, MaxKey)):
        return (t.__name__,)
    return (t.__name__, value)


def same(a: Query, b: Query) -> bool:
    return a.collection == b.collection and typed(a.pipeline) == typed(b.pipeline)


def test_fixture_file_covers_enough():
    assert len(CASES) >= 40


@pytest.mark.parametrize("case", CASES, ids=[c["mql"][:50] for c in CASES])
def test_roundtrip_fixture(case):
    query = parse_query(case["mql"])
    expected = Query(case["collection"], from_extjson(case["pipeline"]))
    assert same(query, expected)
    assert same(parse_query(to_mongosh(query)), query)
    assert same(parse_query(to_json(query)), query)
    assert same(parse_query(orjson.dumps(to_json(query)).decode()), query)
    assert parse_query(to_mongosh(query)) == query and parse_query(to_json(query)) == query


def test_mongosh_is_readable():
    q = Query("users", [{"$match": {"_id": ObjectId("5f1d7a3e2c4b1a0012345678"), "a.b": Int64(5),
                                    "t": dt.datetime(2020, 1, 2, tzinfo=UTC), "r": Regex("^x", "i"),
                                    "d": Decimal128("1.5")}}, {"$limit": 1}])
    assert to_mongosh(q) == (
        'db.users.aggregate([\n'
        '  {$match: {_id: ObjectId("5f1d7a3e2c4b1a0012345678"), "a.b": NumberLong(5), '
        't: ISODate("2020-01-02T00:00:00.000Z"), r: /^x/i, d: NumberDecimal("1.5")}},\n'
        '  {$limit: 1}\n'
        '])')
    assert to_mongosh(Query("order items", [])) == 'db.getCollection("order items").aggregate([])'


@pytest.mark.parametrize("pattern", ["a/b", "", "*x", "/", "[", "a\\", "line\nbreak", "[]/"])
def test_regexes_that_are_no_literal_use_regexp(pattern):
    text = literal(Regex(pattern, "i"))
    assert text.startswith("RegExp(")
    value = parse_query(f"db.c.find({{r: {text}}})").pipeline[0]["$match"]["r"]
    assert (value.pattern, regex_flags(value)) == (pattern, "i")


def test_to_json_keeps_longs_long():
    assert to_json(Query("c", [{"$limit": Int64(3)}])) == {"collection": "c", "pipeline": [{"$limit": {"$numberLong": "3"}}]}


# --- property tests -------------------------------------------------------------

EXTJSON_WRAPPERS = {"$oid", "$date", "$numberInt", "$numberLong", "$numberDouble", "$numberDecimal",
                    "$regularExpression", "$binary", "$timestamp", "$minKey", "$maxKey", "$undefined", "$symbol"}

keys = st.text(min_size=0, max_size=8).filter(lambda k: k not in EXTJSON_WRAPPERS) | st.sampled_from(
    ["$match", "$group", "_id", "a.b", "$sum", "x y", "__x", "$"])
dates = st.datetimes(min_value=dt.datetime(1, 1, 1), max_value=dt.datetime(9999, 12, 31)).map(
    lambda d: d.replace(microsecond=d.microsecond // 1000 * 1000, tzinfo=UTC))
decimals = st.decimals(allow_nan=False, allow_infinity=True, places=None).filter(
    lambda d: d.is_infinite() or (abs(d.as_tuple().exponent) < 6000 and len(d.as_tuple().digits) <= 34)
).map(lambda d: Decimal128(d)) | st.sampled_from([Decimal128("NaN"), Decimal128("-0"), Decimal128("1.10")])
scalars = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=12),
    st.integers(min_value=-(2**63), max_value=2**63 - 1).map(Int64),
    st.binary(min_size=12, max_size=12).map(ObjectId), dates, decimals,
    st.tuples(st.text(max_size=8), st.sets(st.sampled_from("imsx"))).map(lambda t: Regex(t[0], "".join(sorted(t[1])))),
    st.tuples(st.integers(0, 2**32 - 1), st.integers(0, 2**32 - 1)).map(lambda t: Timestamp(*t)),
    st.just(MinKey()), st.just(MaxKey()),
    st.tuples(st.sampled_from([0, 4, 5, 128]), st.binary(max_size=20)).map(lambda t: Binary(t[1], t[0])).filter(
        lambda b: b.subtype != 0),
)
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=4),
                      max_leaves=20)
pipelines = st.lists(st.dictionaries(keys, values, min_size=1, max_size=2), max_size=4)
collections = st.text(min_size=1, max_size=10) | st.sampled_from(["users", "order_items", "a.b", "x y"])


@settings(max_examples=300, deadline=None)
@given(collections, pipelines)
def test_roundtrip_property(collection, pipeline):
    query = Query(collection, pipeline)
    assert same(parse_query(to_mongosh(query)), query)
    assert same(parse_query(to_json(query)), query)
