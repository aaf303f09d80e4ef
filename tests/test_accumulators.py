"""Accumulators, called directly as $group calls them: factory() -> add(vars)* -> result()."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from bson.decimal128 import Decimal128
from bson.int64 import Int64

from nlq.errors import ExecutionError, ForbiddenOperatorError, UnknownOperatorError
from nlq.mql.accumulators import compile_accumulator
from nlq.mql.numeric import Summation
from nlq.mql.values import MISSING


def run(name, arg, docs):
    state = compile_accumulator(name, arg)()
    for doc in docs:
        state.add({"CURRENT": doc, "ROOT": doc})
    return state.result()


def same(actual, expected) -> bool:
    """Equal with the same Python type (int vs Int64 vs float matters)."""
    if isinstance(expected, float) and math.isnan(expected):
        return isinstance(actual, float) and math.isnan(actual)
    if type(actual) is not type(expected):
        return False
    if isinstance(expected, list):
        return len(actual) == len(expected) and all(same(a, e) for a, e in zip(actual, expected))
    if isinstance(expected, dict):
        return list(actual) == list(expected) and all(same(actual[k], expected[k]) for k in expected)
    return actual == expected


N = [{"n": v} for v in (1, 2, 3)]

CASES = [
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/sum/
    ("$sum", "$n", N, 6),
    ("$sum", "$n", [{"n": 1}, {"n": "x"}, {}, {"n": None}, {"n": [5]}], 1),  # non-numerics (and arrays) ignored
    ("$sum", "$n", [{}, {"n": "x"}], 0),
    ("$sum", 1, N, 3),
    ("$sum", "$n", [{"n": 2**31 - 1}, {"n": 1}], Int64(2**31)),  # int overflow -> long
    ("$sum", "$n", [{"n": Int64(1)}, {"n": 1}], Int64(2)),  # long wins even when small
    ("$sum", "$n", [{"n": Int64(2**63 - 1)}, {"n": 1}], float(2**63)),  # long overflow -> double
    ("$sum", "$n", [{"n": 1}, {"n": 0.5}], 1.5),
    ("$sum", "$n", [{"n": 0.1}] * 10, 1.0),  # compensated summation
    # non-decimals are summed apart and converted with 34 digits, then added to the decimals
    ("$sum", "$n", [{"n": 1}, {"n": Decimal128("0.5")}, {"n": 0.25}],
     Decimal128("1.750000000000000000000000000000000")),
    ("$sum", "$n", [{"n": math.inf}, {"n": 1.0}], math.inf),
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/avg/
    ("$avg", "$n", N, 2.0),
    ("$avg", "$n", [{"n": 1}, {"n": "x"}, {}], 1.0),
    ("$avg", "$n", [{}, {"n": None}], None),
    ("$avg", "$n", [{"n": Decimal128("1")}, {"n": 2}], Decimal128("1.5")),
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/min/ (and max/)
    ("$min", "$n", [{"n": 3}, {}, {"n": None}, {"n": 2.5}], 2.5),
    ("$min", "$n", [{}, {"n": None}], None),
    ("$max", "$n", [{"n": 3}, {"n": "a"}, {"n": None}], "a"),  # strings sort after numbers
    ("$max", "$n", [{"n": [1, 2]}, {"n": 5}], [1, 2]),  # arrays compare as arrays in $group
    ("$min", "$n", [{"n": Int64(5)}, {"n": 5.0}, {"n": 7}], Int64(5)),  # first of equals kept
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/first/ (and last/)
    ("$first", "$n", [{}, {"n": 1}], None),  # missing kept as null
    ("$first", "$n", N, 1),
    ("$last", "$n", [{"n": 1}, {}], None),
    ("$last", "$n", N, 3),
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/push/
    ("$push", "$n", [{"n": 1}, {}, {"n": None}, {"n": 1}], [1, None, 1]),  # missing skipped, null kept
    ("$push", {"a": "$n"}, [{"n": 1}, {}], [{"a": 1}, {}]),
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/addToSet/
    ("$addToSet", "$n", [{"n": 1}, {"n": 1.0}, {"n": Int64(1)}, {}, {"n": None}, {"n": "1"}], [1, None, "1"]),
    ("$addToSet", "$n", [{"n": {"a": 1, "b": 2}}, {"n": {"b": 2, "a": 1}}, {"n": {"a": 1, "b": 2}}],
     [{"a": 1, "b": 2}, {"b": 2, "a": 1}]),  # field order matters for document equality
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/count-accumulator/
    ("$count", {}, N, 3),
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/mergeObjects/
    ("$mergeObjects", "$o", [{"o": {"a": 1, "b": 1}}, {}, {"o": None}, {"o": {"b": 2}}], {"a": 1, "b": 2}),
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/stdDevPop/ (and stdDevSamp/)
    ("$stdDevPop", "$n", [{"n": 1}, {"n": 3}, {"n": "x"}], 1.0),
    ("$stdDevPop", "$n", [{"n": 5}], 0.0),
    ("$stdDevPop", "$n", [{}], None),
    ("$stdDevSamp", "$n", [{"n": 1}, {"n": 3}], math.sqrt(2)),
    ("$stdDevSamp", "$n", [{"n": 1}], None),
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/firstN/ (lastN/, maxN/, minN/)
    ("$firstN", {"input": "$n", "n": 2}, [{"n": 1}, {}, {"n": 3}], [1, None]),
    ("$firstN", {"input": "$n", "n": 5}, N, [1, 2, 3]),
    ("$lastN", {"input": "$n", "n": 2}, N * 3, [2, 3]),
    ("$maxN", {"input": "$n", "n": 2}, [{"n": 1}, {"n": None}, {}, {"n": 7}, {"n": 3}], [7, 3]),
    ("$minN", {"input": "$n", "n": 2}, [{"n": 5}, {"n": None}, {"n": 7}, {"n": 3}], [3, 5]),
    ("$minN", {"input": "$n", "n": 3}, [{}], []),
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/top/ (bottom/, topN/, bottomN/)
    ("$top", {"sortBy": {"s": -1}, "output": ["$p", "$s"]}, [{"p": "a", "s": 1}, {"p": "b", "s": 9}], ["b", 9]),
    ("$bottom", {"sortBy": {"s": -1}, "output": "$p"}, [{"p": "a", "s": 1}, {"p": "b", "s": 9}], "a"),
    ("$topN", {"n": 2, "sortBy": {"s": 1}, "output": "$p"},
     [{"p": c, "s": s} for c, s in zip("abcde", (5, 3, 4, 1, 2))], ["d", "e"]),
    ("$bottomN", {"n": 2, "sortBy": {"s": 1}, "output": "$p"},
     [{"p": c, "s": s} for c, s in zip("abcde", (5, 3, 4, 1, 2))], ["c", "a"]),
    ("$topN", {"n": 2, "sortBy": {"g": 1, "s": -1}, "output": "$p"},
     [{"p": "x", "g": 1, "s": 1}, {"p": "y", "g": 1, "s": 2}, {"p": "z", "g": 0, "s": 0}], ["z", "y"]),
    ("$topN", {"n": 2, "sortBy": {"s": 1}, "output": "$p"}, [{"s": None, "p": 1}, {"p": 2}, {"s": 0, "p": 3}],
     [1, 2]),  # null and missing sort first; missing output -> null
    ("$top", {"sortBy": {"s": 1}, "output": "$p"}, [{"s": 1}], None),
    ("$bottom", {"sortBy": {"x.y": 1}, "output": "$p"},
     [{"x": {"y": 5}, "p": 1}, {"x": {"y": 9}, "p": 2}, {"p": 3}], 2),
    ("$top", {"sortBy": {"t": 1}, "output": "$p"}, [{"t": [5, 1], "p": "arr"}, {"t": 3, "p": "num"}], "arr"),
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/median/ (percentile/)
    ("$median", {"input": "$n", "method": "approximate"}, [{"n": v} for v in (60, 89, 63, 97, "x")], 63.0),
    ("$median", {"input": "$n", "method": "approximate"}, [{}], None),
    ("$percentile", {"input": "$n", "p": [0.1, 0.9], "method": "approximate"}, [{"n": "x"}], [None, None]),
    ("$percentile", {"input": "$n", "p": [0.5, 0.9, 0], "method": "approximate"},
     [{"n": v} for v in range(1, 11)], [5.0, 9.0, 1.0]),
]


@pytest.mark.parametrize("name, arg, docs, expected", CASES)
def test_accumulator(name, arg, docs, expected):
    assert same(run(name, arg, docs), expected), run(name, arg, docs)


def test_fresh_state_per_factory_call():
    factory = compile_accumulator("$push", "$n")
    a, b = factory(), factory()
    a.add({"CURRENT": {"n": 1}})
    assert b.result() == [] and a.result() == [1]


def test_push_does_not_copy_values_it_keeps():
    inner = {"x": [1]}
    assert run("$push", "$o", [{"o": inner}])[0] is inner


ERRORS = [
    ("$mergeObjects", "$o", [{"o": 1}], "requires object inputs"),
    ("$firstN", {"input": "$n", "n": 0}, N, "'n' must be greater than 0"),
    ("$firstN", {"input": "$n", "n": 1.5}, N, "integral"),
    ("$firstN", {"input": "$n"}, N, "requires 'n'"),
    ("$topN", {"n": 1, "output": "$n"}, N, "requires 'sortBy'"),
    ("$top", {"sortBy": {"a": 2}, "output": "$n"}, N, "must be 1 (for ascending) or -1"),
    ("$count", 1, N, "$count takes no arguments"),
    ("$median", {"input": "$n"}, N, "requires 'method'"),
    ("$percentile", {"input": "$n", "p": [1.5], "method": "approximate"}, N, "'p'"),
]


@pytest.mark.parametrize("name, arg, docs, message", ERRORS)
def test_accumulator_errors(name, arg, docs, message):
    with pytest.raises(ExecutionError) as error:
        run(name, arg, docs)
    assert message in str(error.value)


def test_unknown_and_forbidden():
    with pytest.raises(UnknownOperatorError, match=r"did you mean \$sum"):
        compile_accumulator("$summ", "$n")
    with pytest.raises(UnknownOperatorError):
        compile_accumulator("$size", "$n")  # an expression, not an accumulator
    with pytest.raises(ForbiddenOperatorError):
        compile_accumulator("$accumulator", {})


def test_missing_is_not_none():
    assert run("$last", "$n", [{"n": MISSING}]) is None


def test_sum_mixes_infinities_and_large_integers():
    assert run("$sum", "$n", [{"n": 1}, {"n": math.inf}, {"n": 2.5}]) == math.inf
    assert run("$sum", "$n", [{"n": Int64(2**53 + 1)}, {"n": 0.5}, {"n": 0.5}]) == float(2**53 + 2)
    assert math.isnan(run("$sum", "$n", [{"n": math.inf}, {"n": -math.inf}]))


# --- $sum's integer shortcut: the double-double started late is the one started at once ------

def _state(total) -> tuple:
    """Everything a Summation reports, with doubles by their bits (-0.0 is not 0.0)."""
    def bits(x):
        return x.hex() if isinstance(x, float) else (type(x).__name__, str(x))
    return (bits(total.result()), bits(total.mean()), bits(total.double()), total.width, total.count)


_NUMBER = st.one_of(
    st.integers(-2**31, 2**31 - 1), st.integers(-2**52 - 5, 2**52 + 5), st.integers(-2**63, 2**63 - 1),
    st.sampled_from([2**52, -2**52, 2**52 + 1, 2**53, 2**53 + 1, -2**53 - 1, 2**62, -2**63]),
    st.integers(-2**63, 2**63 - 1).map(Int64), st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.1, -0.0, 1e16, 2.0**53, Decimal128("1.5")]))


@settings(max_examples=400, deadline=None)
@given(st.lists(_NUMBER, max_size=12), st.lists(st.integers(2**50, 2**52), max_size=6))
def test_sum_integer_shortcut_matches_the_step_by_step_double_double(values, big):
    """While only integers come, the sum keeps their exact total and starts the
    compensated double-double later; results, averages and doubles are bit-identical
    to a sum that runs the double-double from the first value (totals past 2**52,
    longs, doubles, NaN and decimals arriving after integers included)."""
    for sequence in (values, big + values, values + big, big + big + values):
        late, eager = Summation(), Summation()
        eager._start()
        for v in sequence:
            late.add(v)
            eager.add(v)
            assert _state(late) == _state(eager)
        assert (late.high.hex(), late.low.hex(), late.special.hex()) == \
            (eager.high.hex(), eager.low.hex(), eager.special.hex()) or not late.started
