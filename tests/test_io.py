"""JSONL streams and MongoDB Extended JSON (canonical and relaxed in, relaxed out).

Extended JSON v2: https://www.mongodb.com/docs/manual/reference/mongodb-extended-json/
"""

from __future__ import annotations

import datetime as dt
import io as stdio
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nlq import io
from nlq.errors import InputError
from nlq.mql.values import (UTC, Binary, Decimal128, Int64, MaxKey, MinKey, ObjectId, Regex, Timestamp,
                            bson_type, equal)

CANONICAL = {
    "oid": {"$oid": "5d505646cf6d4fe581014ab2"},
    "date_iso": {"$date": "2019-08-11T17:54:14.692Z"},
    "date_ms": {"$date": {"$numberLong": "1565546054692"}},
    "int": {"$numberInt": "7"},
    "long": {"$numberLong": "9007199254740993"},
    "double": {"$numberDouble": "1.5"},
    "inf": {"$numberDouble": "Infinity"},
    "ninf": {"$numberDouble": "-Infinity"},
    "nan": {"$numberDouble": "NaN"},
    "dec": {"$numberDecimal": "1.10"},
    "re": {"$regularExpression": {"pattern": "^a.c$", "options": "im"}},
    "bin": {"$binary": {"base64": "AQID", "subType": "04"}},
    "ts": {"$timestamp": {"t": 1565545664, "i": 1}},
    "min": {"$minKey": 1},
    "max": {"$maxKey": 1},
}


def test_canonical_extended_json_reads_to_bson_types():
    doc = io.from_extjson(CANONICAL)
    assert doc["oid"] == ObjectId("5d505646cf6d4fe581014ab2")
    assert doc["date_iso"] == dt.datetime(2019, 8, 11, 17, 54, 14, 692000, tzinfo=UTC)
    assert doc["date_ms"] == doc["date_iso"]
    assert type(doc["int"]) is int and doc["int"] == 7
    assert type(doc["long"]) is Int64 and doc["long"] == 9007199254740993
    assert doc["double"] == 1.5 and doc["inf"] == math.inf and doc["ninf"] == -math.inf
    assert math.isnan(doc["nan"])
    assert doc["dec"] == Decimal128("1.10")
    assert doc["re"] == Regex("^a.c$", "im")
    assert doc["bin"] == Binary(b"\x01\x02\x03", 4)
    assert doc["ts"] == Timestamp(1565545664, 1)
    assert isinstance(doc["min"], MinKey) and isinstance(doc["max"], MaxKey)
    assert [bson_type(doc[k]) for k in ("int", "long", "double", "dec", "date_iso")] == [
        "int", "long", "double", "decimal", "date"]


def test_relaxed_output_keeps_every_type():
    doc = io.from_extjson(CANONICAL)
    relaxed = io.to_extjson(doc)
    assert relaxed["int"] == 7 and relaxed["double"] == 1.5
    assert relaxed["long"] == 9007199254740993  # relaxed form writes longs as plain numbers
    assert relaxed["date_iso"] == {"$date": "2019-08-11T17:54:14.692Z"}
    assert relaxed["nan"] == {"$numberDouble": "NaN"}
    assert relaxed["dec"] == {"$numberDecimal": "1.10"}
    back = io.loads(io.dumps(doc))
    for key in CANONICAL:
        if key == "nan":
            assert math.isnan(back[key])
        elif key == "long":
            assert back[key] == doc[key]  # value survives; relaxed JSON has no long marker
        else:
            assert back[key] == doc[key] and type(back[key]) is type(doc[key]), key


def test_dates_outside_iso_range_use_number_long():
    old = dt.datetime(1900, 1, 1, tzinfo=UTC)
    assert io.to_extjson(old) == {"$date": {"$numberLong": "-2208988800000"}}
    assert io.from_extjson(io.to_extjson(old)) == old


def test_legacy_regex_form_stays_a_query_operator():
    query = {"name": {"$regex": "^a", "$options": "i"}}
    assert io.from_extjson(query) == query


def test_malformed_wrapper_is_an_input_error():
    with pytest.raises(InputError, match=r"\$oid"):
        io.from_extjson({"$oid": "not-hex"})


def test_read_records_keeps_bad_lines_in_place():
    data = b'{"a": 1}\n\n{"a": \n[1, 2]\n{"a": {"$oid": "zz"}}\n{"a": 2}\n'
    out = list(io.read_records(stdio.BytesIO(data)))
    assert out[0] == {"a": 1} and out[-1] == {"a": 2}
    assert [r["line"] for r in out[1:-1]] == [3, 4, 5]
    assert all(r["failure"]["type"] == "malformed_input" for r in out[1:-1])
    assert "expected a JSON object" in out[2]["failure"]["message"]


@pytest.mark.parametrize("text", ["99999999999999999999999", "9223372036854775808", "-9223372036854775809",
                                  "18446744073709551615"])
def test_integers_beyond_64_bits_are_malformed_input(text):
    data = b'{"a": 1}\n{"n": ' + text.encode() + b'}\n{"a": 2}\n'
    out = list(io.read_records(stdio.BytesIO(data)))
    assert [r.get("a") for r in out] == [1, None, 2]
    assert out[1]["line"] == 2 and out[1]["failure"]["type"] == "malformed_input"
    assert out[1]["failure"]["message"].startswith(f"line 2: malformed JSON: the integer {text} is outside the 64-bit")
    with pytest.raises(InputError, match="line 2: .*64-bit"):
        list(io.read_records(stdio.BytesIO(data), strict=True))


def test_integers_at_the_64_bit_limits_and_digits_in_strings_are_read():
    doc = io.loads(b'{"max": 9223372036854775807, "min": -9223372036854775808, "s": "123456789012345678901234"}')
    assert doc == {"max": 2**63 - 1, "min": -2**63, "s": "123456789012345678901234"}
    assert bson_type(doc["max"]) == "long"


def test_dbref_and_code_from_pymongo_are_written_as_extended_json():
    from bson.code import Code
    from bson.dbref import DBRef

    oid = ObjectId("5d505646cf6d4fe581014ab2")
    doc = {"r": DBRef("patients", oid), "d": DBRef("patients", 7, "clinic", extra=1),
           "c": Code("function() { return 1; }"), "s": Code("f(x)", {"x": Int64(3)})}
    text = io.dumps(doc)
    assert io.loads(text) == {
        # a DBRef is a plain document on the server: it reads back as one
        "r": {"$ref": "patients", "$id": oid}, "d": {"$ref": "patients", "$id": 7, "$db": "clinic", "extra": 1},
        "c": Code("function() { return 1; }"), "s": Code("f(x)", {"x": 3})}
    back = io.loads(text)
    assert (bson_type(back["c"]), bson_type(back["s"])) == ("javascript", "javascriptWithScope")
    assert back["s"].scope == {"x": 3} and io.dumps(back) == text
    assert text.startswith(b'{"r":{"$ref":"patients","$id":{"$oid":"5d505646cf6d4fe581014ab2"}},'
                           b'"d":{"$ref":"patients","$id":7,"$db":"clinic","extra":1},"c":{"$code":')


def test_son_and_far_dates_from_pymongo_are_written():
    from bson.datetime_ms import DatetimeMS
    from bson.son import SON

    assert io.dumps({"s": SON([("b", 1), ("a", [SON([("x", 2)])])]), "d": DatetimeMS(-10**15)}) == \
        b'{"s":{"b":1,"a":[{"x":2}]},"d":{"$date":{"$numberLong":"-1000000000000000"}}}'


def test_code_sorts_after_regex_and_before_maxkey():
    from bson.code import Code

    values = [MaxKey(), Code("b", {}), Code("a"), Regex("x"), "s"]
    from nlq.mql.values import sort_key
    assert sorted(values, key=sort_key) == ["s", Regex("x"), Code("a"), Code("b", {}), MaxKey()]


def test_strict_reading_raises_with_the_line_number():
    with pytest.raises(InputError, match="line 2"):
        list(io.read_records(stdio.BytesIO(b'{"a": 1}\n{oops\n'), strict=True))


def test_write_records_is_jsonl():
    buf = stdio.BytesIO()
    n = io.write_records([{"a": Int64(3)}, {"b": dt.datetime(2020, 1, 2, tzinfo=UTC)}], buf)
    assert n == 2
    assert buf.getvalue() == b'{"a":{"$numberLong":"3"}}\n{"b":{"$date":"2020-01-02T00:00:00.000Z"}}\n'


# --- round-trip properties -------------------------------------------------------------

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-2**31, 2**31 - 1),
    st.integers(-2**63, 2**63 - 1).map(Int64),
    st.floats(allow_nan=False),
    st.text(max_size=20),
    st.binary(min_size=12, max_size=12).map(ObjectId),
    st.datetimes(min_value=dt.datetime(1, 1, 1), max_value=dt.datetime(9999, 12, 31))
      .map(lambda d: d.replace(microsecond=d.microsecond // 1000 * 1000, tzinfo=UTC)),
    st.decimals(min_value=-10**12, max_value=10**12, allow_nan=False, places=4).map(lambda d: Decimal128(str(d))),
    st.tuples(st.text(alphabet="abc.*^$", max_size=6), st.sampled_from(["", "i", "im", "imsx"]))
      .map(lambda t: Regex(*t)),
    st.binary(max_size=8).map(lambda b: Binary(b, 0)),
)
keys = st.text(alphabet="abcdefgh_", min_size=1, max_size=6)


def _containers(inner):
    return st.one_of(st.lists(inner, max_size=4), st.dictionaries(keys, inner, max_size=4))


values = st.recursive(scalars, _containers, max_leaves=20)


def same(a, b) -> bool:
    """Equal and of the same Python type all the way down (Int64 is read back as
    int when it fits the relaxed form, which is documented, so compare by value)."""
    if isinstance(a, dict):
        return isinstance(b, dict) and list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(map(same, a, b))
    if isinstance(a, Int64):
        return b == a
    return type(a) is type(b) and (a == b or equal(a, b))


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(keys, values, max_size=5))
def test_round_trip_through_relaxed_extended_json(doc):
    assert same(doc, io.loads(io.dumps(doc)))


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200))
def test_arbitrary_bytes_never_crash_the_reader(data):
    for record in io.read_records(stdio.BytesIO(data)):
        assert isinstance(record, dict)


def test_an_output_path_gets_its_missing_folders(tmp_path):
    target = tmp_path / "out" / "runs" / "a.jsonl"
    assert io.write_records([{"a": 1}], str(target)) == 1
    assert target.read_bytes() == b'{"a":1}\n'


def test_a_malformed_line_names_its_line_once_and_the_column():
    lines = list(io.iter_lines(stdio.BytesIO(b'{"a": 1}\n{"a" 2}\n{"a":\n')))
    assert lines[1].error == "line 2: malformed JSON: unexpected character, expected ':' after key (column 6)"
    assert lines[2].error == "line 3: malformed JSON: unexpected end of data (at the end of the line)"
