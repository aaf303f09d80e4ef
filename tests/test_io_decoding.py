"""Reading JSON: the 64-bit integer check and the in-place Extended JSON conversion agree with
their reference definitions (the stdlib json integer hook; `from_extjson`'s rebuild)."""

from __future__ import annotations

import json
import math

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nlq import io
from nlq.errors import InputError
from nlq.mql.extjson import decode_parsed, from_extjson, to_extjson
from nlq.mql.numeric import INT64_MAX, INT64_MIN


def reference_check(text: bytes) -> str | None:
    """The integer that the json module's integer hook rejects first (the former check)."""
    try:
        json.loads(text, parse_int=lambda s: s if INT64_MIN <= int(s) <= INT64_MAX else _raise(s))
    except _Rejected as exc:
        return exc.args[0]
    return None


class _Rejected(Exception):
    pass


def _raise(s):
    raise _Rejected(s)


def checked(text: bytes) -> str | None:
    try:
        io._check_integers(text)
    except InputError as exc:
        return str(exc).split()[2]
    return None


@pytest.mark.parametrize("text, rejected", [
    (b"9223372036854775807", None), (b"9223372036854775808", "9223372036854775808"),
    (b"-9223372036854775808", None), (b"[-9223372036854775809]", "-9223372036854775809"),
    (b'{"a": 18446744073709551616}', "18446744073709551616"),
    (b'{"a": 99999999999999999999999}', "99999999999999999999999"),
    (b'{"99999999999999999999999": 1}', None), (b'"a\\"99999999999999999999999"', None),
    (b'["\\\\", 99999999999999999999999]', "99999999999999999999999"),
    (b"[1234567890123456789012.5, 1.5e99999999999999999999]", None),
    (b"[1e-1234567890123456789, 1E+1234567890123456789]", None),
    (b"[1000000000000000000, -1000000000000000000]", None),
])
def test_integers_beyond_64_bits_are_rejected_exactly(text, rejected):
    assert checked(text) == rejected == reference_check(text)


json_values = st.recursive(
    st.none() | st.booleans() | st.floats(allow_nan=False, allow_infinity=False)
    | st.integers(-(2**70), 2**70) | st.sampled_from([2**63 - 1, 2**63, -(2**63), -(2**63) - 1, 10**19, 2**64])
    | st.text(alphabet='0123456789"\\ab-.e', max_size=30),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(alphabet="0123456789\"\\k", max_size=25),
                                                                 inner, max_size=4),
    max_leaves=12)


@settings(max_examples=300, deadline=None)
@given(value=json_values, ascii_only=st.booleans())
def test_the_integer_check_agrees_with_the_json_modules_hook(value, ascii_only):
    text = json.dumps(value, ensure_ascii=ascii_only).encode()
    assert checked(text) == reference_check(text)


def typed(value):
    """A value with every type spelled out (1 == 1.0 == True must not hide a difference)."""
    if type(value) is dict:
        return ("dict", [(k, typed(v)) for k, v in value.items()])
    if type(value) is list:
        return ("list", [typed(v) for v in value])
    if type(value) is float and math.isnan(value):
        return ("float", "nan")
    return (type(value).__name__, repr(value))


wrapped = st.sampled_from([
    {"$oid": "5f0c1c2b9d3e4a0011223344"}, {"$date": "2021-03-04T05:06:07.123Z"}, {"$date": {"$numberLong": "-5"}},
    {"$numberLong": "5"}, {"$numberInt": "7"}, {"$numberDouble": "NaN"}, {"$numberDecimal": "1.50"},
    {"$regularExpression": {"pattern": "^a", "options": "i"}}, {"$binary": {"base64": "AAE=", "subType": "00"}},
    {"$timestamp": {"t": 1, "i": 2}}, {"$minKey": 1}, {"$maxKey": 1}, {"$code": "x", "$scope": {"n": {"$numberLong": "1"}}},
    {"$oid": "5f0c1c2b9d3e4a0011223344", "other": 1}, {"$unknown": 1}, {"$regex": "a", "$options": "i"},
])
documents = st.recursive(  # strings opening with $ (or holding '"$') make the walk stop later, never earlier
    st.none() | st.integers(-5, 5) | st.text(max_size=4) | st.sampled_from(["$x", 'a"$', "$"]) | wrapped,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(["a", "$b", "_id", "é"]), inner,
                                                                 max_size=3),
    max_leaves=14)


@settings(max_examples=300, deadline=None)
@given(value=documents)
def test_conversion_in_place_equals_the_rebuild(value):
    text = orjson.dumps(value)
    assert typed(decode_parsed(orjson.loads(text))) == typed(from_extjson(orjson.loads(text)))
    assert typed(io.loads(text)) == typed(from_extjson(orjson.loads(text)))
    if not io._may_hold_wrappers(text):  # what loads skips converting needs no conversion
        assert typed(from_extjson(orjson.loads(text))) == typed(orjson.loads(text))


def test_an_escaped_dollar_still_makes_a_wrapper():
    assert io.loads(b'{"a": {"\\u0024numberLong": "5"}}') == io.loads(b'{"a": {"$numberLong": "5"}}')
    assert type(io.loads(b'{"a": {"\\u0024numberLong": "5"}}')["a"]).__name__ == "Int64"


def test_a_malformed_wrapper_is_an_input_error_in_place_too():
    with pytest.raises(InputError, match=r"invalid Extended JSON \$oid"):
        io.loads(b'{"a": [{"$oid": "nothex"}]}')


def test_round_trip_through_loads_and_dumps():
    doc = {"a": [{"$numberLong": "5"}, {"b": {"$date": "2020-01-01T00:00:00Z"}}], "c": "plain"}
    assert orjson.loads(io.dumps(io.loads(orjson.dumps(doc)))) == to_extjson(from_extjson(doc))


def parsed_depth(value) -> int:
    if type(value) is dict:
        return 1 + max(map(parsed_depth, value.values()), default=0)
    if type(value) is list:
        return 1 + max(map(parsed_depth, value), default=0)
    return 0


bracketed = st.recursive(st.integers(0, 9) | st.text(alphabet='[]{}"\\a', max_size=6),
                         lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
                             st.text(alphabet='[]{}"\\k', max_size=4), inner, max_size=3), max_leaves=15)


@settings(max_examples=300, deadline=None)
@given(value=bracketed)
def test_nesting_depth_of_the_text_is_the_depth_of_the_value(value):
    text = json.dumps(value).encode()
    assert io.nesting_depth(text) == parsed_depth(json.loads(text))
