"""Property: evaluating any expression tree over odd but valid BSON values either gives a value
or raises a typed NlqError (MongoDB's error, as ExecutionError...) — never a TypeError,
ValueError, OverflowError, decimal or recursion error (SPEC §1: never a traceback).

Operators come from the registry (every implemented expression operator, accumulator and
window function); arguments are random small trees of ints at the 32/64-bit edges, decimals
(huge, NaN, infinities), doubles (NaN, infinities, extremes), strings (time zones, formats,
field paths), dates at the ends of the calendar, nulls, missing fields, arrays and objects, in
positional and named form.
"""

from __future__ import annotations

import datetime as dt
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nlq.errors import ExecutionError, NlqError
from nlq.mql import registry
from nlq.mql.engine import aggregate
from nlq.mql.expressions import evaluate
from nlq.mql.values import UTC, Decimal128, Int64, ObjectId, Regex, Timestamp

OPERATORS = sorted(n for n in registry.supported(registry.EXPRESSION) if n != "$literal")
ACCUMULATORS = registry.supported(registry.ACCUMULATOR)
WINDOW_FUNCTIONS = registry.supported(registry.WINDOW)

# Named arguments the expression operators take (a random subset is drawn per object).
NAMES = ("input", "as", "in", "cond", "initialValue", "date", "timezone", "format", "onNull", "onError", "unit",
         "amount", "startDate", "endDate", "startOfWeek", "binSize", "n", "sortBy", "find", "replacement",
         "regex", "options", "chars", "to", "field", "value", "inputs", "defaults", "useLongestLength",
         "branches", "default", "if", "then", "else", "vars", "limit", "dateString", "year", "month", "day",
         "hour", "minute", "second", "millisecond", "isoWeekYear", "isoWeek", "isoDayOfWeek", "iso8601",
         "case", "size", "subtype", "by", "output", "p", "method", "N", "alpha")

NUMBERS = [0, 1, -1, 2, 7, 2**31 - 1, -2**31, 2**31, 2**53 + 1, 2**63 - 1, -2**63, Int64(2**63 - 1), Int64(-2**63),
           *(Decimal128(x) for x in ("1e6000", "-1e6111", "1E-6176", "NaN", "Infinity", "-Infinity", "1.5", "-0",
                                     "123456789012345678901234567890123",
                                     "9.999999999999999999999999999999999E+6144")),
           math.nan, math.inf, -math.inf, 1e308, -1e308, 5e-324, -0.0, 0.5, -2.5, 1e20, 2.0**63, 8.64e15]
STRINGS = ["", "abc", "ÿé€😀", "+99:00", "-25:00", "+05:99", "+14:00", "America/New_York", "Mars/Base",
           "%Y-%m-%d", "%G-W%V-%u %j %Z%%", "%", "2020-02-30", "0001-01-01T00:00:00Z",
           "9999-12-31T23:59:59.999+14:00", "day",
           "week", "year", "month", "quarter", "millisecond", "sunday", "int", "long", "double", "decimal",
           "string", "date", "bool", "objectId", "^a", "(", "i", "$a", "$a.b", "$n", "$d", "$nope", "$$ROOT",
           "5d505646cf6d4fe581014ab2", "1e400", " 12 ", "NaN", "-Infinity", "99999999999999999999999", "k", "v"]
OTHERS = [dt.datetime(1970, 1, 1, tzinfo=UTC), dt.datetime(1, 1, 1, tzinfo=UTC),
          dt.datetime(9999, 12, 31, 23, 59, 59, 999000, tzinfo=UTC),
          dt.datetime(2021, 3, 14, 1, 59, 26, 535000, tzinfo=UTC),
          None, True, False, ObjectId("ffffffffffffffffffffffff"), Timestamp(2**32 - 1, 1), Regex("^a", "i"),
          [1e308, 1e308], [2**62, 2**62], [{"k": "a", "v": 1}], [[1, 2], [3, 4]], [], {"a": 1}, {}]
SCALARS = st.one_of(st.sampled_from(NUMBERS), st.sampled_from(NUMBERS), st.sampled_from(STRINGS),
                    st.sampled_from(OTHERS), st.integers(-1000, 1000), st.floats())
VALUES = st.one_of(SCALARS, SCALARS, SCALARS, st.lists(SCALARS, max_size=4),
                   st.builds(lambda op, args: {op: args}, st.sampled_from(OPERATORS), st.lists(SCALARS, max_size=3)))
ARGUMENTS = st.one_of(st.lists(VALUES, max_size=4), VALUES,
                      st.dictionaries(st.sampled_from(NAMES), VALUES, max_size=5))

DOCUMENT = {"a": {"b": [1, 2.5, None, "x"]}, "k": "v", "n": Decimal128("1e6000"),
            "d": dt.datetime(1, 1, 1, tzinfo=UTC)}


def typed_or_value(run) -> None:
    try:
        run()
    except NlqError:
        pass


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.sampled_from(OPERATORS), ARGUMENTS)
def test_expressions_raise_only_typed_errors(op, args):
    typed_or_value(lambda: evaluate({op: args}, DOCUMENT))


DOCS = st.lists(st.fixed_dictionaries({"v": SCALARS, "w": SCALARS}), max_size=5)


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(DOCS, st.sampled_from(ACCUMULATORS), st.one_of(st.just("$v"), VALUES,
                                                     st.dictionaries(st.sampled_from(NAMES), VALUES, max_size=3)))
def test_accumulators_raise_only_typed_errors(docs, op, arg):
    typed_or_value(lambda: aggregate(docs, [{"$group": {"_id": "$w", "x": {op: arg}}}], timeout=5))


WINDOWS = st.one_of(st.none(), st.fixed_dictionaries({"documents": st.lists(SCALARS, min_size=2, max_size=2)}),
                    st.fixed_dictionaries({"range": st.lists(SCALARS, min_size=2, max_size=2)}),
                    st.fixed_dictionaries({"range": st.lists(SCALARS, min_size=2, max_size=2), "unit": SCALARS}))


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(DOCS, st.sampled_from(WINDOW_FUNCTIONS), st.one_of(st.just("$v"), st.dictionaries(
    st.sampled_from(("input", "output", "n", "N", "alpha", "by", "unit", "default", "sortBy")),
    st.one_of(st.just("$v"), VALUES), max_size=3)), WINDOWS)
def test_window_functions_raise_only_typed_errors(docs, op, arg, window):
    output = {op: arg} if window is None else {op: arg, "window": window}
    typed_or_value(lambda: aggregate(docs, [{"$setWindowFields": {"sortBy": {"v": 1}, "output": {"x": output}}}],
                                     timeout=5))


# What the property found, kept as plain cases (value or MongoDB's error).
@pytest.mark.parametrize("expression, expected", [
    ({"$round": [{"$literal": Decimal128("1e6000")}, 2]}, Decimal128("1E+6000")),
    ({"$round": [Decimal128("1.5"), 2]}, Decimal128("1.50")),
    ({"$trunc": [Decimal128("-1e6111"), -5]}, Decimal128("-1E+6111")),
    ({"$mod": [math.inf, 3]}, "nan"),
    ({"$mod": [5.5, math.inf]}, 5.5),
    ({"$avg": [[1e308, 1e308]]}, math.inf),
    ({"$sum": [[1e308, 1e308, -1e308]]}, math.inf),
    ({"$sum": [[1e308, -1e308, 1.0]]}, 1.0),
    ({"$pow": [Decimal128("0"), Decimal128("NaN")]}, "nan"),
])
def test_odd_values_that_have_a_result(expression, expected):
    result = evaluate(expression, {})
    if expected == "nan":
        assert result != result or (type(result) is Decimal128 and result.to_decimal().is_nan())
    else:
        assert result == expected and type(result) is type(expected)


@pytest.mark.parametrize("expression, message", [
    ({"$dateToString": {"date": "$d", "timezone": "+99:00"}}, "unrecognized time zone"),
    ({"$hour": {"date": "$d", "timezone": "-24:00"}}, "unrecognized time zone"),
    ({"$second": {"date": "$first", "timezone": "America/New_York"}}, "outside the years 1 to 9999"),
    ({"$dateDiff": {"startDate": "$last", "endDate": "$first", "unit": "week", "timezone": "+14:00"}},
     "outside the years 1 to 9999"),
    ({"$dateTrunc": {"date": "$d", "unit": "second", "binSize": Decimal128("-1E+6111")}}, "64-bit integer"),
    ({"$convert": {"input": 1, "to": Decimal128("1E+6000")}}, "not an integer"),
    ({"$firstN": {"n": Decimal128("Infinity"), "input": [1]}}, "integral"),
    ({"$indexOfCP": ["abc", "b", Decimal128("-1E+6111")]}, "nonnegative"),
    ({"$arrayElemAt": [[1, 2], 1e20]}, "32-bit integral"),
    ({"$arrayElemAt": [[1, 2], Int64(2**40)]}, "32-bit integral"),
    ({"$slice": [[1, 2, 3], 1e20]}, "32-bit integral"),
    ({"$substrCP": ["abc", 0, 1e20]}, "32-bit integral"),
    ({"$substrBytes": ["abc", 0, math.inf]}, "32-bit integer"),
    ({"$substrBytes": ["abc", math.nan, 1]}, "32-bit integer"),
])
def test_odd_values_that_are_mongodb_errors(expression, message):
    document = {"d": dt.datetime(2020, 1, 1, tzinfo=UTC), "first": dt.datetime(1, 1, 1, tzinfo=UTC),
                "last": dt.datetime(9999, 12, 31, tzinfo=UTC)}
    with pytest.raises(ExecutionError, match=message):
        evaluate(expression, document)
