"""Date expression operators: the manual's examples (exact values), timezones
(Olson names and offsets), null/missing propagation and MongoDB's errors."""

from __future__ import annotations

import datetime as dt

import pytest
from bson.int64 import Int64
from bson.objectid import ObjectId
from bson.timestamp import Timestamp

from nlq.errors import ExecutionError
from nlq.mql.expressions import evaluate
from tests.helpers import assert_raises

UTC = dt.timezone.utc


def D(*args) -> dt.datetime:
    return dt.datetime(*args, tzinfo=UTC)


DOC = {"date": D(2014, 1, 1, 8, 15, 39, 736000), "n": None, "ts": Timestamp(1412180887, 1),
       "oid": ObjectId("5f1b2c3d0000000000000000"), "s": "x"}


def run(spec, doc=DOC):
    return evaluate(spec, doc)


# https://www.mongodb.com/docs/manual/reference/operator/aggregation/year/ (and the sibling extractor pages;
# the manual's example document is 2014-01-01T08:15:39.736Z)
EXTRACT = [
    ("$year", 2014), ("$month", 1), ("$dayOfMonth", 1), ("$hour", 8), ("$minute", 15), ("$second", 39),
    ("$millisecond", 736), ("$dayOfYear", 1), ("$dayOfWeek", 4), ("$week", 0), ("$isoWeek", 1),
    ("$isoWeekYear", 2014), ("$isoDayOfWeek", 3),
]


@pytest.mark.parametrize("op,expected", EXTRACT)
def test_extractors(op, expected):
    assert run({op: "$date"}) == expected
    assert run({op: ["$date"]}) == expected
    assert run({op: {"date": "$date"}}) == expected
    assert run({op: "$n"}) is None
    assert run({op: "$missing"}) is None
    assert run({op: {"date": "$date", "timezone": "$n"}}) is None


TZ = [
    ({"$hour": {"date": "$date", "timezone": "America/Chicago"}}, 2),
    ({"$hour": {"date": "$date", "timezone": "+04:30"}}, 12),
    ({"$minute": {"date": "$date", "timezone": "+0430"}}, 45),
    ({"$hour": {"date": "$date", "timezone": "-03"}}, 5),
    ({"$dayOfMonth": {"date": D(2014, 1, 1, 2), "timezone": "America/New_York"}}, 31),
    ({"$year": {"date": D(2014, 1, 1, 2), "timezone": "America/New_York"}}, 2013),
    ({"$hour": {"date": D(2021, 7, 1, 12), "timezone": "Europe/London"}}, 13),  # BST
    ({"$hour": {"date": D(2021, 1, 1, 12), "timezone": "Europe/London"}}, 12),  # GMT
    ({"$hour": {"date": "$date", "timezone": "UTC"}}, 8),
    ({"$year": "$ts"}, 2014),
    ({"$month": "$ts"}, 10),
    ({"$year": "$oid"}, 2020),
    ({"$week": D(2017, 1, 1)}, 1),  # a Sunday starts week 1
    ({"$week": D(2016, 12, 31)}, 52),
    ({"$isoWeek": D(2016, 1, 1)}, 53),
    ({"$isoWeekYear": D(2016, 1, 1)}, 2015),
    ({"$dayOfWeek": D(2017, 1, 1)}, 1),
    ({"$isoDayOfWeek": D(2017, 1, 1)}, 7),
    ({"$dayOfYear": D(2016, 12, 31)}, 366),
]


@pytest.mark.parametrize("spec,expected", TZ)
def test_timezones_and_calendar_corners(spec, expected):
    assert run(spec) == expected


# https://www.mongodb.com/docs/manual/reference/operator/aggregation/dateToString/
TO_STRING = [
    ({"$dateToString": {"format": "%Y-%m-%d", "date": "$date"}}, "2014-01-01"),
    ({"$dateToString": {"format": "%H:%M:%S:%L%z", "date": "$date", "timezone": "America/New_York"}},
     "03:15:39:736-0500"),
    ({"$dateToString": {"format": "%Z", "date": "$date", "timezone": "America/New_York"}}, "-300"),
    ({"$dateToString": {"format": "%Z", "date": "$date", "timezone": "+04:30"}}, "270"),  # the manual's own output
    ({"$dateToString": {"format": "%Z", "date": "$date", "timezone": "+04:45"}}, "285"),
    ({"$dateToString": {"format": "%z", "date": "$date"}}, "+0000"),
    ({"$dateToString": {"format": "%b %B", "date": "$date"}}, "Jan January"),
    ({"$dateToString": {"format": "%j %w %u %U %V %G", "date": "$date"}}, "001 4 3 00 01 2014"),
    ({"$dateToString": {"format": "100%% %d", "date": "$date"}}, "100% 01"),
    ({"$dateToString": {"date": "$date"}}, "2014-01-01T08:15:39.736Z"),
    ({"$dateToString": {"date": "$date", "timezone": "+01:00"}}, "2014-01-01T09:15:39.736"),
    ({"$dateToString": {"date": "$date", "timezone": "UTC"}}, "2014-01-01T08:15:39.736Z"),
    ({"$dateToString": {"date": "$n"}}, None),
    ({"$dateToString": {"date": "$missing", "onNull": "none"}}, "none"),
    ({"$dateToString": {"date": "$date", "format": "$n"}}, None),
    ({"$dateToString": {"date": "$date", "timezone": "$missing"}}, None),
    ({"$dateToString": {"date": D(2021, 7, 4, 23, 5), "format": "%Y/%m/%d %H", "timezone": "Asia/Kolkata"}},
     "2021/07/05 04"),
]


@pytest.mark.parametrize("spec,expected", TO_STRING)
def test_date_to_string(spec, expected):
    assert run(spec) == expected


def test_date_to_string_on_null_missing_omits_field():
    assert evaluate({"out": {"$dateToString": {"date": "$none", "onNull": "$alsoMissing"}}}, {}) == {}


# https://www.mongodb.com/docs/manual/reference/operator/aggregation/dateFromString/
FROM_STRING = [
    ({"$dateFromString": {"dateString": "2017-02-08T12:10:40.787", "timezone": "America/New_York"}},
     D(2017, 2, 8, 17, 10, 40, 787000)),
    ({"$dateFromString": {"dateString": "2017-02-08"}}, D(2017, 2, 8)),
    ({"$dateFromString": {"dateString": "2017-02-08 12:10 270", "format": "%Y-%m-%d %H:%M %Z"}},
     D(2017, 2, 8, 7, 40)),  # %Z as $dateToString writes it (no sign when positive)
    ({"$dateFromString": {"dateString": "2017-02-08T12:10:40Z"}}, D(2017, 2, 8, 12, 10, 40)),
    ({"$dateFromString": {"dateString": "2017-02-08T12:10:40+0500"}}, D(2017, 2, 8, 7, 10, 40)),
    ({"$dateFromString": {"dateString": "2017-02-08 12:10:40.5-03:00"}}, D(2017, 2, 8, 15, 10, 40, 500000)),
    ({"$dateFromString": {"dateString": "15-06-2018", "format": "%d-%m-%Y"}}, D(2018, 6, 15)),
    ({"$dateFromString": {"dateString": "06/15/2018"}}, D(2018, 6, 15)),
    ({"$dateFromString": {"dateString": "June 15, 2018"}}, D(2018, 6, 15)),
    ({"$dateFromString": {"dateString": "2018-W24-5", "format": "%G-W%V-%u"}}, D(2018, 6, 15)),
    ({"$dateFromString": {"dateString": "2018 166", "format": "%Y %j"}}, D(2018, 6, 15)),
    ({"$dateFromString": {"dateString": "15 Jun 2018 10:20:30.040", "format": "%d %b %Y %H:%M:%S.%L"}},
     D(2018, 6, 15, 10, 20, 30, 40000)),
    ({"$dateFromString": {"dateString": "2018-06-15 +0200", "format": "%Y-%m-%d %z"}}, D(2018, 6, 14, 22)),
    ({"$dateFromString": {"dateString": "20177-02-09T03:35:02.055", "onError": "bad"}}, "bad"),
    ({"$dateFromString": {"dateString": 5, "onError": "bad"}}, "bad"),
    ({"$dateFromString": {"dateString": "$n", "onNull": "none"}}, "none"),
    ({"$dateFromString": {"dateString": "$missing"}}, None),
    ({"$dateFromString": {"dateString": "2017-02-08", "timezone": "$n"}}, None),
]


@pytest.mark.parametrize("spec,expected", FROM_STRING)
def test_date_from_string(spec, expected):
    assert run(spec) == expected


# https://www.mongodb.com/docs/manual/reference/operator/aggregation/dateFromParts/
FROM_PARTS = [
    ({"$dateFromParts": {"year": 2017, "month": 2, "day": 8, "hour": 12}}, D(2017, 2, 8, 12)),
    ({"$dateFromParts": {"isoWeekYear": 2017, "isoWeek": 6, "isoDayOfWeek": 3}}, D(2017, 2, 8)),
    ({"$dateFromParts": {"year": 2016, "month": 12, "day": 31, "hour": 23, "minute": 46, "second": 12,
                         "timezone": "America/New_York"}}, D(2017, 1, 1, 4, 46, 12)),
    ({"$dateFromParts": {"year": 2017, "month": 14, "day": 1, "hour": 12}}, D(2018, 2, 1, 12)),
    ({"$dateFromParts": {"year": 2017, "month": 0, "day": 1}}, D(2016, 12, 1)),
    ({"$dateFromParts": {"year": 2017, "month": 3, "day": 0}}, D(2017, 2, 28)),
    ({"$dateFromParts": {"year": 2017, "month": 1, "day": 1, "hour": -1}}, D(2016, 12, 31, 23)),
    ({"$dateFromParts": {"year": 2017, "millisecond": 1500}}, D(2017, 1, 1, 0, 0, 1, 500000)),
    ({"$dateFromParts": {"year": 2017.0, "month": Int64(2)}}, D(2017, 2, 1)),
    ({"$dateFromParts": {"year": 2017, "month": "$n"}}, None),
    ({"$dateFromParts": {"year": "$missing"}}, None),
    ({"$dateFromParts": {"year": 2017, "timezone": "+05:30"}}, D(2016, 12, 31, 18, 30)),
]


@pytest.mark.parametrize("spec,expected", FROM_PARTS)
def test_date_from_parts(spec, expected):
    assert run(spec) == expected


# https://www.mongodb.com/docs/manual/reference/operator/aggregation/dateToParts/
def test_date_to_parts():
    date = D(2017, 1, 1, 1, 29, 9, 123000)
    assert run({"$dateToParts": {"date": date}}) == {
        "year": 2017, "month": 1, "day": 1, "hour": 1, "minute": 29, "second": 9, "millisecond": 123}
    assert run({"$dateToParts": {"date": date, "iso8601": True}}) == {
        "isoWeekYear": 2016, "isoWeek": 52, "isoDayOfWeek": 7, "hour": 1, "minute": 29, "second": 9,
        "millisecond": 123}
    assert run({"$dateToParts": {"date": date, "timezone": "America/New_York"}}) == {
        "year": 2016, "month": 12, "day": 31, "hour": 20, "minute": 29, "second": 9, "millisecond": 123}
    assert run({"$dateToParts": {"date": "$n"}}) is None
    parts = run({"$dateToParts": {"date": "$date"}})
    assert run({"$dateFromParts": parts}) == DOC["date"]


# https://www.mongodb.com/docs/manual/reference/operator/aggregation/dateAdd/
# https://www.mongodb.com/docs/manual/reference/operator/aggregation/dateSubtract/
ARITH = [
    ({"$dateAdd": {"startDate": D(2020, 10, 31, 12, 10, 5), "unit": "day", "amount": 3}}, D(2020, 11, 3, 12, 10, 5)),
    ({"$dateAdd": {"startDate": D(2021, 1, 31), "unit": "month", "amount": 1}}, D(2021, 2, 28)),
    ({"$dateAdd": {"startDate": D(2020, 1, 31), "unit": "month", "amount": 1}}, D(2020, 2, 29)),
    ({"$dateAdd": {"startDate": D(2020, 2, 29), "unit": "year", "amount": 1}}, D(2021, 2, 28)),
    ({"$dateAdd": {"startDate": D(2020, 11, 30), "unit": "quarter", "amount": 1}}, D(2021, 2, 28)),
    ({"$dateAdd": {"startDate": D(2021, 1, 1), "unit": "week", "amount": 2}}, D(2021, 1, 15)),
    ({"$dateAdd": {"startDate": D(2021, 1, 1), "unit": "hour", "amount": 25}}, D(2021, 1, 2, 1)),
    ({"$dateAdd": {"startDate": D(2021, 1, 1), "unit": "millisecond", "amount": 1500}}, D(2021, 1, 1, 0, 0, 1, 500000)),
    ({"$dateAdd": {"startDate": D(2021, 1, 1), "unit": "minute", "amount": 2.0}}, D(2021, 1, 1, 0, 2)),
    # A day across the US DST change keeps the local wall-clock time; 24 hours do not.
    ({"$dateAdd": {"startDate": D(2021, 3, 13, 17), "unit": "day", "amount": 1, "timezone": "America/New_York"}},
     D(2021, 3, 14, 16)),
    ({"$dateAdd": {"startDate": D(2021, 3, 13, 17), "unit": "hour", "amount": 24, "timezone": "America/New_York"}},
     D(2021, 3, 14, 17)),
    ({"$dateSubtract": {"startDate": D(2021, 3, 31), "unit": "month", "amount": 1}}, D(2021, 2, 28)),
    ({"$dateSubtract": {"startDate": D(2021, 1, 1), "unit": "second", "amount": 1}}, D(2020, 12, 31, 23, 59, 59)),
    ({"$dateAdd": {"startDate": "$n", "unit": "day", "amount": 1}}, None),
    ({"$dateAdd": {"startDate": "$date", "unit": "$missing", "amount": 1}}, None),
    ({"$dateAdd": {"startDate": "$date", "unit": "day", "amount": "$n"}}, None),
]


@pytest.mark.parametrize("spec,expected", ARITH)
def test_date_add_subtract(spec, expected):
    assert run(spec) == expected


# https://www.mongodb.com/docs/manual/reference/operator/aggregation/dateDiff/ ("counts the number of
# boundaries crossed": one day from 23:59 to 00:01, zero years from Jan 1 to Dec 31)
DIFF = [
    (D(2020, 12, 31, 23, 59), D(2021, 1, 1, 0, 1), "day", {}, 1),
    (D(2020, 12, 31, 23, 59), D(2021, 1, 1, 0, 1), "year", {}, 1),
    (D(2021, 1, 1), D(2021, 12, 31), "year", {}, 0),
    (D(2021, 1, 31), D(2021, 2, 1), "month", {}, 1),
    (D(2021, 1, 1), D(2022, 3, 1), "month", {}, 14),
    (D(2021, 3, 31), D(2021, 4, 1), "quarter", {}, 1),
    (D(2021, 5, 1), D(2021, 1, 1), "month", {}, -4),
    (D(2021, 1, 1, 10, 59), D(2021, 1, 1, 11, 0), "hour", {}, 1),
    (D(2021, 1, 1, 10, 0), D(2021, 1, 1, 10, 59), "hour", {}, 0),
    (D(2021, 1, 1, 10, 0, 0, 999000), D(2021, 1, 1, 10, 0, 1), "second", {}, 1),
    (D(2021, 1, 1), D(2021, 1, 1, 0, 0, 0, 5000), "millisecond", {}, 5),
    # 2021-01-03 is a Sunday (default startOfWeek), 2021-01-04 a Monday
    (D(2021, 1, 2), D(2021, 1, 3), "week", {}, 1),
    (D(2021, 1, 3), D(2021, 1, 9), "week", {}, 0),
    (D(2021, 1, 3), D(2021, 1, 4), "week", {"startOfWeek": "mon"}, 1),
    (D(2021, 1, 4), D(2021, 1, 10), "week", {"startOfWeek": "Monday"}, 0),
    # 03:00Z on Jan 2 is still Jan 1 in New York
    (D(2021, 1, 1, 12), D(2021, 1, 2, 3), "day", {"timezone": "America/New_York"}, 0),
    (D(2021, 1, 1, 12), D(2021, 1, 2, 3), "day", {}, 1),
    # +05:30 hour boundaries fall on :30 UTC
    (D(2021, 1, 1, 10, 20), D(2021, 1, 1, 10, 40), "hour", {"timezone": "+05:30"}, 1),
]


@pytest.mark.parametrize("start,end,unit,extra,expected", DIFF)
def test_date_diff(start, end, unit, extra, expected):
    result = run({"$dateDiff": {"startDate": start, "endDate": end, "unit": unit, **extra}})
    assert result == expected and type(result) is Int64


def test_date_diff_nulls():
    assert run({"$dateDiff": {"startDate": "$n", "endDate": "$date", "unit": "day"}}) is None
    assert run({"$dateDiff": {"startDate": "$date", "endDate": "$missing", "unit": "day"}}) is None
    assert run({"$dateDiff": {"startDate": "$date", "endDate": "$date", "unit": "$n"}}) is None


# https://www.mongodb.com/docs/manual/reference/operator/aggregation/dateTrunc/
ORDER = D(2020, 5, 18, 14, 10, 30)
TRUNC = [
    ({"unit": "week", "binSize": 2, "timezone": "America/Los_Angeles", "startOfWeek": "Monday"},
     D(2020, 5, 11, 7)),
    ({"unit": "month", "binSize": 6}, D(2020, 1, 1)),
    ({"unit": "year"}, D(2020, 1, 1)),
    ({"unit": "quarter"}, D(2020, 4, 1)),
    ({"unit": "day"}, D(2020, 5, 18)),
    ({"unit": "hour"}, D(2020, 5, 18, 14)),
    ({"unit": "hour", "binSize": 5}, D(2020, 5, 18, 13)),
    ({"unit": "minute", "binSize": 15}, D(2020, 5, 18, 14)),
    ({"unit": "second", "binSize": 20}, D(2020, 5, 18, 14, 10, 20)),
    ({"unit": "week"}, D(2020, 5, 17)),  # Sunday
    ({"unit": "week", "startOfWeek": "sat"}, D(2020, 5, 16)),
    # hours and smaller count elapsed time from 2000-01-01 local midnight: +05:30 puts hour
    # boundaries on :30 UTC; New York's January offset (-05:00) is the reference even in summer
    ({"unit": "hour", "timezone": "+05:30"}, D(2020, 5, 18, 13, 30)),
    ({"unit": "hour", "binSize": 2, "timezone": "America/New_York"}, D(2020, 5, 18, 13)),
    ({"unit": "day", "timezone": "America/New_York"}, D(2020, 5, 18, 4)),
    ({"unit": "day", "timezone": "Asia/Tokyo"}, D(2020, 5, 17, 15)),  # 23:10 local
    ({"unit": "month", "binSize": "$n"}, None),
    ({"unit": "$missing"}, None),
    ({"unit": "day", "timezone": "$n"}, None),
]


@pytest.mark.parametrize("extra,expected", TRUNC)
def test_date_trunc(extra, expected):
    assert run({"$dateTrunc": {"date": ORDER, **extra}}) == expected


def test_date_trunc_null_date():
    assert run({"$dateTrunc": {"date": "$n", "unit": "day"}}) is None


def test_milliseconds_are_truncated_not_rounded():
    date = D(2021, 1, 1, 0, 0, 0, 999999)
    assert run({"$millisecond": date}) == 999
    assert run({"$dateToString": {"date": date, "format": "%L"}}) == "999"


ERRORS = [
    ({"$year": "$s"}, "can't convert from BSON type string to Date"),
    ({"$year": {"date": "$date", "timezone": "Mars/Olympus"}}, 'unrecognized time zone identifier: "Mars/Olympus"'),
    ({"$year": {"date": "$date", "timezone": 5}}, "timezone must evaluate to a string, found int"),
    ({"$year": ["$date", "$date"]}, "takes exactly 1 arguments"),
    ({"$dateToString": {"date": "$date", "format": "%Q"}}, "Invalid format character '%Q' in format string"),
    ({"$dateToString": {"date": "$date", "format": "abc%"}}, "Unmatched '%' at end of format string"),
    ({"$dateToString": {"date": "$date", "format": 5}}, "'format' be a string"),
    ({"$dateFromString": {"dateString": "nope"}}, "Error parsing date string 'nope'"),
    ({"$dateFromString": {"dateString": "2018-13-01"}}, "Error parsing date string"),
    ({"$dateFromString": {"dateString": "06-2018", "format": "%m-%Y"}}, 'elements missing: "day"'),
    ({"$dateFromString": {"dateString": "2017-02-08T12:10:40Z", "timezone": "Europe/Paris"}},
     "cannot pass in a date/time string with time zone information"),
    ({"$dateFromParts": {"year": 2017, "isoWeek": 1}}, "does not allow mixing natural dates with ISO dates"),
    ({"$dateFromParts": {"month": 1}}, "requires either 'year' or 'isoWeekYear' to be present"),
    ({"$dateFromParts": {"year": 10000}}, "'year' must evaluate to an integer in the range 1 to 9999, found 10000"),
    ({"$dateFromParts": {"year": 2017, "month": 1.5}}, "'month' must evaluate to an integer, found double"),
    ({"$dateFromParts": {"year": 2017, "day": 40000}}, "must evaluate to a value in the range [-32768, 32767]"),
    ({"$dateToParts": {"date": "$date", "iso8601": 1}}, "iso8601 must evaluate to a bool, found int"),
    ({"$dateAdd": {"startDate": "$date", "unit": "day", "amount": 1.5}}, "expects integer amount of time units"),
    ({"$dateAdd": {"startDate": "$date", "unit": "fortnight", "amount": 1}}, "unknown time unit value: fortnight"),
    ({"$dateAdd": {"startDate": "x", "unit": "day", "amount": 1}}, "requires startDate to be convertible to a date"),
    ({"$dateDiff": {"startDate": "$date", "endDate": "$date", "unit": "week", "startOfWeek": "funday"}},
     "'startOfWeek' must be a valid day of the week"),
    ({"$dateTrunc": {"date": "$date", "unit": "day", "binSize": 0}}, "'binSize' to be greater than 0"),
    ({"$dateTrunc": {"date": "$date", "unit": "eon"}}, "cannot be recognized as a time unit: eon"),
]


@pytest.mark.parametrize("spec,message", ERRORS)
def test_date_errors(spec, message):
    assert_raises(ExecutionError, message, run, spec)
