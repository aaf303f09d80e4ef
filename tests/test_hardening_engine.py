"""Hostile queries against the engine (issue 15, engine side): a huge flat pipeline, catastrophic
regular expressions, values that grow without bound and long window computations each end in a
typed error for the one record, within about 1.5x the time limit, and the stream goes on."""

from __future__ import annotations

import subprocess
import sys

import orjson
import pytest

from nlq.errors import ExecutionError
from nlq.mql.engine import SEGMENT, aggregate
from nlq.mql.limits import MAX_STAGES
from tests.conftest import ROOT, WORLDS

NLQ = [sys.executable, "-c", "from nlq.commands import cli; cli()"]
GOOD = {"id": "ok", "db": "clinic", "gold_mql": "db.patients.countDocuments({})"}


def _exec_tasks(*records, timeout: float = 2) -> list[dict]:
    """`nlq exec --tasks -` in a child process (a crash of the interpreter cannot take pytest down)."""
    stdin = b"".join(orjson.dumps(r) + b"\n" for r in records)
    proc = subprocess.run(NLQ + ["exec", "--data", str(WORLDS), "--timeout", str(timeout), "--tasks", "-"],
                          input=stdin, capture_output=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
    assert b"Traceback" not in proc.stderr
    out = [orjson.loads(line) for line in proc.stdout.splitlines()]
    assert [r["id"] for r in out] == [r["id"] for r in records]
    return [r["execution"] for r in out]


# --- a flat pipeline of 50,000 stages ------------------------------------------------------------

def test_a_pipeline_of_fifty_thousand_stages_is_a_typed_error_and_the_stream_goes_on():
    flat = {"id": "flat", "db": "clinic", "gold": {"collection": "patients", "pipeline": [{"$match": {}}] * 50_000}}
    hostile, good = _exec_tasks(flat, GOOD)
    assert hostile["error"]["type"] == "exec_error"
    assert f"at most {MAX_STAGES} stages" in hostile["error"]["message"]
    assert good["error"] is None and good["rows_count"] == 1


def test_a_pipeline_of_mongodb_s_maximum_length_runs():
    docs = [{"_id": i} for i in range(5)]
    assert MAX_STAGES > 2 * SEGMENT
    pipeline = [{"$match": {"_id": {"$gte": 0}}}] * (MAX_STAGES - 1) + [{"$limit": 3}]
    assert aggregate(docs, pipeline) == docs[:3]


@pytest.mark.parametrize("wrap", [
    lambda p: [{"$facet": {"f": p}}],
    lambda p: [{"$lookup": {"from": "c", "pipeline": p, "as": "x"}}],
    lambda p: [{"$unionWith": {"coll": "c", "pipeline": p}}],
])
def test_every_sub_pipeline_is_bounded_too(wrap):
    with pytest.raises(ExecutionError, match=f"at most {MAX_STAGES} stages"):
        aggregate([{"_id": 1}], wrap([{"$match": {}}] * (MAX_STAGES + 1)), catalog=lambda name: [{"_id": 2}])


# --- regular expressions stop at the query's deadline ---------------------------------------------

# Exponential backtracking for PCRE, `re` and `regex` alike: minutes for 40 a's and a b.
CATASTROPHIC = "^(a|aa)+$"
_A = "a" * 40 + "b"


def _one(*stages) -> dict:
    return {"collection": "patients", "pipeline": [{"$limit": 1}, {"$project": {"s": {"$literal": _A}}}, *stages]}


REGEX_RUNAWAY = {
    "$match $regex": _one({"$match": {"s": {"$regex": CATASTROPHIC}}}),
    "$match $in": _one({"$match": {"s": {"$in": [{"$regularExpression": {"pattern": CATASTROPHIC, "options": ""}}]}}}),
    "$regexMatch": _one({"$project": {"x": {"$regexMatch": {"input": "$s", "regex": CATASTROPHIC}}}}),
    "$regexFind": _one({"$project": {"x": {"$regexFind": {"input": "$s", "regex": CATASTROPHIC}}}}),
    "$regexFindAll": _one({"$project": {"x": {"$regexFindAll": {"input": "$s", "regex": CATASTROPHIC}}}}),
}


def test_a_catastrophic_regular_expression_is_a_timeout_and_the_stream_goes_on():
    records = [{"id": f"rx{i}", "db": "clinic", "gold": gold} for i, gold in enumerate(REGEX_RUNAWAY.values())]
    # without a deadline inside the search each record runs for minutes: the child's timeout fails the test
    *hostile, good = _exec_tasks(*records, GOOD, timeout=0.5)
    for name, execution in zip(REGEX_RUNAWAY, hostile):
        assert execution["error"]["type"] == "timeout", (name, execution)
    assert good["error"] is None and good["rows_count"] == 1


def test_a_regular_expression_in_another_thread_stops_too():
    import threading

    from nlq.errors import QueryTimeout
    outcome = []

    def run():
        try:
            aggregate([{"s": _A}], [{"$match": {"s": {"$regex": CATASTROPHIC}}}], timeout=0.3)
        except QueryTimeout as exc:
            outcome.append(exc)
    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(60)
    assert not worker.is_alive() and len(outcome) == 1


def test_regular_expressions_read_pcre_syntax():
    docs = [{"s": "Émile 42"}, {"s": "emile"}, {"s": "x\n"}]
    assert aggregate(docs, [{"$match": {"s": {"$regex": r"^\p{Lu}"}}}]) == docs[:1]
    assert aggregate(docs, [{"$match": {"s": {"$regex": r"^[[:alpha:]]+$"}}}]) == docs[1:]  # POSIX classes are ASCII; $ also matches before a final newline
    assert aggregate(docs, [{"$match": {"s": {"$regex": r"x\z"}}}]) == []  # \z: the very end, not before a newline
    assert aggregate(docs, [{"$match": {"s": {"$regex": r"(?>e|em)ile"}}}]) == []  # an atomic group
    found = aggregate(docs[:1], [{"$project": {"_id": 0, "m": {"$regexFind": {"input": "$s", "regex": r"(?<n>\d++)"}}}}])
    assert found == [{"m": {"match": "42", "idx": 6, "captures": ["42"]}}]


# --- values an expression builds are capped at 16 MiB (the BSON document size limit) -------------

def _doubling(step) -> dict:
    """A value that doubles at each of 60 steps (2^60 bytes at the end, if nothing stopped it)."""
    return {"$reduce": {"input": {"$range": [0, 60]}, "initialValue": "ab", "in": step}}


def _nested_lets(levels: int = 30):
    value = "x"
    for _ in range(levels):
        value = {"$let": {"vars": {"v": value}, "in": ["$$v", "$$v"]}}
    return value


GROWTH = {
    "$concat": _doubling({"$concat": ["$$value", "$$value"]}),
    "$replaceAll": _doubling({"$replaceAll": {"input": "$$value", "find": "a", "replacement": "aaa"}}),
    "$replaceOne": {"$replaceOne": {"input": "a", "find": "a", "replacement": {"$reduce": {
        "input": {"$range": [0, 30]}, "initialValue": "ab", "in": {"$concat": ["$$value", "$$value"]}}}}},
    "object sharing parts": _doubling({"a": "$$value", "b": "$$value"}),
    "array sharing parts": _doubling(["$$value", "$$value"]),
    "$mergeObjects sharing parts": _doubling({"$mergeObjects": [{"a": "$$value"}, {"b": "$$value"}]}),
    "$arrayToObject sharing parts": _doubling({"$arrayToObject": [[["a", "$$value"], ["b", "$$value"]]]}),
    "$setField sharing parts": _doubling({"$setField": {"field": "b", "input": {"a": "$$value"}, "value": "$$value"}}),
    "$zip sharing parts": _doubling({"$zip": {"inputs": [["$$value"], ["$$value"]]}}),
    "nested $let": _nested_lets(),
    "$map": {"$map": {"input": {"$range": [0, 5000]}, "in": "x" * 4096}},
    "$concatArrays": _doubling({"$concatArrays": [["$$value"], ["$$value"]]}),
}


@pytest.mark.parametrize("name", sorted(GROWTH))
def test_a_value_growing_without_bound_is_a_memory_limit(name):
    from nlq.errors import MemoryLimit
    with pytest.raises(MemoryLimit, match="16 MiB") as caught:
        aggregate([{"_id": 1}], [{"$project": {"x": GROWTH[name]}}], timeout=60)
    assert "BSON document size limit" in str(caught.value)


def test_string_operators_measure_before_they_build():
    from nlq.errors import MemoryLimit
    big = "a" * (5 << 20)
    with pytest.raises(MemoryLimit):  # 15 MiB of input, 20 MiB of output: refused before joining
        aggregate([{"s": big}], [{"$project": {"x": {"$concat": ["$s", "$s", "$s", "$s"]}}}])
    assert aggregate([{"s": big}], [{"$project": {"_id": 0, "n": {"$strLenBytes": {"$concat": ["$s", "$s", "$s"]}}}}]) \
        == [{"n": 15 << 20}]
    with pytest.raises(MemoryLimit):
        aggregate([{"s": big}], [{"$project": {"x": {"$replaceAll": {"input": "$s", "find": "a", "replacement": "bbbb"}}}}])


def test_a_result_document_sharing_parts_is_measured_without_walking_every_copy():
    from nlq.errors import ResultTooLarge
    value: object = "x" * 100
    for _ in range(40):  # 2^40 copies of one string, 40 objects in memory
        value = {"a": value, "b": value}
    with pytest.raises(ResultTooLarge, match="16 MiB"):
        aggregate([{"_id": 1, "v": value}], [])


def test_legitimate_reductions_still_work():
    flat = {"$reduce": {"input": [[1, 2], [3], [4, 5]], "initialValue": [], "in": {"$concatArrays": ["$$value", "$$this"]}}}
    merged = {"$reduce": {"input": {"$range": [0, 3]}, "initialValue": {},
                          "in": {"$mergeObjects": ["$$value", {"$arrayToObject": [[[{"$toString": "$$this"}, "$$this"]]]}]}}}
    assert aggregate([{"_id": 1}], [{"$project": {"_id": 0, "f": flat, "m": merged}}]) == \
        [{"f": [1, 2, 3, 4, 5], "m": {"0": 0, "1": 1, "2": 2}}]


# --- long buffered computations check the deadline as they go ----------------------------------

class _Stop(Exception):
    pass


def _stop_after(calls: int):
    count = [0]

    def check():
        count[0] += 1
        if count[0] > calls:
            raise _Stop()
    return check, count


def test_a_large_sort_checks_the_deadline_between_runs_and_merges():
    from nlq.mql.stages.ordering import _SORT_RUN, sort_documents
    docs = [{"r": (i * 7919) % 100_003} for i in range(4 * _SORT_RUN)]
    check, count = _stop_after(10**9)
    assert sort_documents(list(docs), [(("r",), False)], check) == sorted(docs, key=lambda d: d["r"])
    assert count[0] >= 4 + 4 + 3  # keys, runs, merges
    check, _ = _stop_after(6)
    with pytest.raises(_Stop):  # stopped in the middle: the sort is not one uninterruptible call
        sort_documents(list(docs), [(("r",), True)], check)


@pytest.mark.parametrize("output", [
    {"$sum": "$r", "window": {"documents": [-1000, 1000]}},
    {"$sum": "$r"},
    {"$avg": "$r", "window": {"range": [-10, 10]}},
    {"$shift": {"output": "$r", "by": 1}},
    {"$rank": {}},
    {"$derivative": {"input": "$r"}, "window": {"documents": [-1, 0]}},
    {"$integral": {"input": "$r"}, "window": {"documents": [-1000, 0]}},
    {"$covariancePop": ["$r", "$r"], "window": {"documents": [-1000, 0]}},
    {"$locf": "$r"},
    {"$expMovingAvg": {"input": "$r", "N": 3}},
])
def test_window_functions_check_the_deadline_while_they_compute(output):
    from nlq.mql.expressions import bindings
    from nlq.mql.stages.windows import _compile_window_output, _Partition
    docs = [{"_id": i, "r": (i * 7919) % 100_003} for i in range(20_000)]
    fn = _compile_window_output("w", output, [(("r",), False)])
    check, count = _stop_after(10**9)
    fn.compute(_Partition(docs, [bindings(d) for d in docs], [d["r"] for d in docs]), False, check)
    assert count[0] >= len(docs) // 1024  # a check at least every 1024 documents of every pass
