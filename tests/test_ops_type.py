"""Type operators: $type, $isNumber, $convert and the $toX shorthands."""

from __future__ import annotations

import datetime as dt
import math

import pytest
from bson.binary import Binary
from bson.decimal128 import Decimal128
from bson.int64 import Int64
from bson.objectid import ObjectId
from bson.regex import Regex
from bson.timestamp import Timestamp

from nlq.errors import ExecutionError, UnsupportedOperatorError
from nlq.mql.expressions import evaluate
from tests.helpers import assert_raises
from tests.test_accumulators import same

UTC = dt.timezone.utc
D = dt.datetime(2018, 3, 27, 16, 58, 51, 538000, tzinfo=UTC)
OID = ObjectId("5ab9cbfa31c2ab715d42129e")
DOC = {"d": D, "oid": OID, "n": None, "s": "str", "o": {}, "a": [1]}

CASES = [
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/type/
    ({"$type": "a"}, "string"),
    ({"$type": 1}, "int"),
    ({"$type": 2**40}, "long"),
    ({"$type": Int64(1)}, "long"),
    ({"$type": 1.0}, "double"),
    ({"$type": Decimal128("1")}, "decimal"),
    ({"$type": "$n"}, "null"),
    ({"$type": "$missing"}, "missing"),
    ({"$type": ["$a"]}, "array"),
    ({"$type": "$o"}, "object"),
    ({"$type": "$d"}, "date"),
    ({"$type": "$oid"}, "objectId"),
    ({"$type": True}, "bool"),
    ({"$type": {"$literal": Regex("a")}}, "regex"),
    ({"$type": {"$literal": Timestamp(1, 1)}}, "timestamp"),
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/isNumber/
    ({"$isNumber": 1}, True),
    ({"$isNumber": Decimal128("1")}, True),
    ({"$isNumber": "1"}, False),
    ({"$isNumber": True}, False),
    ({"$isNumber": "$missing"}, False),
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/toString/
    ({"$toString": 2.5}, "2.5"),
    ({"$toString": 1.0}, "1"),
    ({"$toString": 0.1}, "0.1"),
    ({"$toString": 1e20}, "1e+20"),
    ({"$toString": -0.0}, "-0"),
    ({"$toString": math.inf}, "Infinity"),
    ({"$toString": 123}, "123"),
    ({"$toString": Int64(2**40)}, str(2**40)),
    ({"$toString": Decimal128("2.50")}, "2.50"),
    ({"$toString": True}, "true"),
    ({"$toString": "$oid"}, "5ab9cbfa31c2ab715d42129e"),
    ({"$toString": "$d"}, "2018-03-27T16:58:51.538Z"),
    ({"$toString": "$n"}, None),
    ({"$toString": "$missing"}, None),
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/toInt/
    ({"$toInt": 5.9}, 5),
    ({"$toInt": -5.9}, -5),
    ({"$toInt": "42"}, 42),
    ({"$toInt": "-42"}, -42),
    ({"$toInt": True}, 1),
    ({"$toInt": Int64(7)}, 7),
    ({"$toInt": Decimal128("5.5")}, 5),
    ({"$toInt": "$missing"}, None),
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/toLong/
    ({"$toLong": "$d"}, Int64(1522169931538)),
    ({"$toLong": "9000000000"}, Int64(9_000_000_000)),
    ({"$toLong": 5}, Int64(5)),
    ({"$toLong": 1.9}, Int64(1)),
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/toDouble/
    ({"$toDouble": "5.5"}, 5.5),
    ({"$toDouble": "1e3"}, 1000.0),
    ({"$toDouble": "-Infinity"}, -math.inf),
    ({"$toDouble": False}, 0.0),
    ({"$toDouble": Decimal128("2.5")}, 2.5),
    ({"$toDouble": "$d"}, 1522169931538.0),
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/toDecimal/
    ({"$toDecimal": 2.5}, Decimal128("2.50000000000000")),
    ({"$toDecimal": 0.1}, Decimal128("0.100000000000000")),
    ({"$toDecimal": "1.230"}, Decimal128("1.230")),
    ({"$toDecimal": True}, Decimal128("1")),
    ({"$toDecimal": 7}, Decimal128("7")),
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/toBool/
    ({"$toBool": 0}, False),
    ({"$toBool": 0.5}, True),
    ({"$toBool": Decimal128("0")}, False),
    ({"$toBool": ""}, True),
    ({"$toBool": "false"}, True),
    ({"$toBool": "$d"}, True),
    ({"$toBool": "$oid"}, True),
    ({"$toBool": "$n"}, None),
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/toDate/
    ({"$toDate": Int64(1522169931538)}, D),
    ({"$toDate": 1522169931538.0}, D),
    ({"$toDate": "2018-03-27T16:58:51.538Z"}, D),
    ({"$toDate": "2018-03-27T18:58:51.538+02:00"}, D),
    ({"$toDate": "2018-03-27T18:58:51.538+0200"}, D),
    ({"$toDate": "2018-03-27"}, dt.datetime(2018, 3, 27, tzinfo=UTC)),
    ({"$toDate": "$oid"}, dt.datetime(2018, 3, 27, 4, 43, 38, tzinfo=UTC)),
    ({"$toDate": "$d"}, D),
    ({"$toDate": "$n"}, None),
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/toObjectId/
    ({"$toObjectId": "5ab9cbfa31c2ab715d42129e"}, OID),
    ({"$toObjectId": "$oid"}, OID),
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/convert/
    ({"$convert": {"input": "5", "to": "int"}}, 5),
    ({"$convert": {"input": "5", "to": 16}}, 5),
    ({"$convert": {"input": 5, "to": 2}}, "5"),
    ({"$convert": {"input": 5, "to": 1.0}}, 5.0),
    ({"$convert": {"input": 5, "to": {"type": "long"}}}, Int64(5)),
    ({"$convert": {"input": "x", "to": "int", "onError": "bad"}}, "bad"),
    ({"$convert": {"input": "$missing", "to": "int", "onNull": "none"}}, "none"),
    ({"$convert": {"input": "$n", "to": "int", "onNull": 0}}, 0),
    ({"$convert": {"input": "$n", "to": "int"}}, None),
    ({"$convert": {"input": "x", "to": "$missing"}}, None),
    ({"$convert": {"input": "3", "to": "$$target"}}, 3.0),
    ({"$convert": {"input": [1], "to": "bool"}}, True),
    ({"$convert": {"input": 1, "to": "array", "onError": "no"}}, "no"),
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/toUUID/
    ({"$toUUID": "0e3b9063-8abd-4eb3-9f9f-f4c59fd30a60"},
     Binary(bytes.fromhex("0e3b90638abd4eb39f9ff4c59fd30a60"), 4)),
    ({"$toUUID": "$missing"}, None),
]


@pytest.mark.parametrize("spec, expected", CASES)
def test_type(spec, expected):
    result = evaluate(spec, DOC, {"target": "double"})
    assert same(result, expected), result


ERRORS = [
    ({"$toInt": "1.5"}, "Failed to parse number '1.5'"),
    ({"$toInt": " 1"}, "Failed to parse number"),
    ({"$toInt": 2**31}, "Conversion would overflow target type"),
    ({"$toInt": 1e10}, "Conversion would overflow target type"),
    ({"$toInt": math.nan}, "Attempt to convert NaN value to integer"),
    ({"$toInt": "$d"}, "Unsupported conversion from date to int in $convert with no onError value"),
    ({"$toLong": "99999999999999999999"}, "Overflow"),
    ({"$toDouble": "abc"}, "Failed to parse number 'abc'"),
    ({"$toDouble": "$oid"}, "Unsupported conversion from objectId to double"),
    ({"$toString": "$o"}, "Unsupported conversion from object to string"),
    ({"$toString": "$a"}, "Unsupported conversion from array to string"),
    ({"$toDate": "not a date"}, "Error parsing date string"),
    ({"$toDate": 5}, "Unsupported conversion from int to date"),
    ({"$toObjectId": "abc"}, "Invalid string length for parsing to OID, expected 24 but found 3"),
    ({"$toObjectId": "zzzzzzzzzzzzzzzzzzzzzzzz"}, "Invalid character"),
    ({"$convert": {"input": 1, "to": "float"}}, "Unknown type name: float"),
    ({"$convert": {"input": 1, "to": 99}}, "does not correspond to a BSON type"),
    ({"$convert": {"input": 1, "to": "object"}}, "Unsupported conversion from int to object"),
    ({"$toUUID": "not-a-uuid"}, "Failed to parse UUID string"),
    ({"$convert": {"input": 1}}, "Missing 'to' parameter to $convert"),
    ({"$convert": {"input": 1, "to": "int", "bogus": 1}}, "unknown argument: bogus"),
]


@pytest.mark.parametrize("spec, message", ERRORS)
def test_type_errors(spec, message):
    assert_raises(ExecutionError, message, evaluate, spec, DOC)


def test_convert_to_a_real_but_unsupported_type_is_typed():
    with pytest.raises(UnsupportedOperatorError):
        evaluate({"$convert": {"input": "x", "to": "binData"}}, DOC)
