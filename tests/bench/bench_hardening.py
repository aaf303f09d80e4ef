"""Hostile queries under a 2 s limit: the time each takes to end, and how (issue 15).

    python -m tests.bench hardening

Each case ends in a typed error (or a result) within about 1.5x the limit (the worst
ratio is printed last), the hostile runaway set of array operators included; the
figures include the engine's own teardown, not process start-up. The load of the
machine is printed with them: on a shared machine every figure grows with it.
"""

from __future__ import annotations

import os
import time

from nlq.errors import NlqError
from nlq.mql.engine import aggregate

TIMEOUT = 2.0
A = "a" * 40 + "b"
CATASTROPHIC = "^(a|aa)+$"


def _doubling(step) -> dict:
    return {"$reduce": {"input": {"$range": [0, 60]}, "initialValue": "ab", "in": step}}


def _lets(levels: int = 30):  # 90 levels of query: deeper is refused as input_too_deep (MongoDB's limit)
    value = "x"
    for _ in range(levels):
        value = {"$let": {"vars": {"v": value}, "in": ["$$v", "$$v"]}}
    return value


def _one(*stages) -> list:
    return [{"$limit": 1}, {"$project": {"s": {"$literal": A}}}, *stages]


CASES = {
    "50,000 $match stages": [{"$match": {}}] * 50_000,
    "1,000 $match stages (runs)": [{"$match": {}}] * 1000,
    "$match $regex ^(a|aa)+$": _one({"$match": {"s": {"$regex": CATASTROPHIC}}}),
    "$regexMatch": _one({"$project": {"x": {"$regexMatch": {"input": "$s", "regex": CATASTROPHIC}}}}),
    "$regexFind": _one({"$project": {"x": {"$regexFind": {"input": "$s", "regex": CATASTROPHIC}}}}),
    "$regexFindAll": _one({"$project": {"x": {"$regexFindAll": {"input": "$s", "regex": CATASTROPHIC}}}}),
    "$concat doubling in $reduce": _one({"$project": {"x": _doubling({"$concat": ["$$value", "$$value"]})}}),
    "$replaceAll growth in $reduce": _one({"$project": {"x": _doubling(
        {"$replaceAll": {"input": "$$value", "find": "a", "replacement": "aaa"}})}}),
    "object sharing parts in $reduce": _one({"$project": {"x": _doubling({"a": "$$value", "b": "$$value"})}}),
    "30 nested $let doubling": _one({"$project": {"x": _lets()}}),
    "$map to 4M objects": _one({"$project": {"x": {"$size": {"$map": {
        "input": {"$range": [0, 4_000_000]}, "in": {"a": "$$this", "b": A}}}}}}),
}

# The hostile runaway set (issue 29): one array operator over the largest arrays a value may hold
# (1.3 million numbers is about the 16 MiB cap), repeated 200 times inside a $map, so that the query
# can only end at its deadline and the overshoot is what a single operator call costs past it.
BIG = 1_300_000
_RANGE = {"$range": [0, BIG]}
_BACKWARDS = {"$reverseArray": _RANGE}
_PAIRS = {"$map": {"input": {"$range": [0, 300_000]}, "in": [{"$toString": "$$this"}, "$$this"]}}
RUNAWAY = {
    "$sortArray": {"$size": {"$sortArray": {"input": _BACKWARDS, "sortBy": 1}}},
    "$sortArray by field": {"$size": {"$sortArray": {"input": {"$map": {"input": {"$range": [0, 300_000]}, "in": {
        "a": {"$mod": [{"$multiply": ["$$this", 7919]}, 1_000_003]}}}}, "sortBy": {"a": 1}}}},
    "$zip": {"$size": {"$zip": {"inputs": [{"$range": [0, 400_000]}, {"$range": [0, 400_000]}],
                                "useLongestLength": True}}},
    "$zip (past 16 MiB)": {"$size": {"$zip": {"inputs": [_RANGE, _BACKWARDS], "useLongestLength": True}}},
    "$setUnion": {"$size": {"$setUnion": [_RANGE, _BACKWARDS]}},
    "$setIntersection": {"$size": {"$setIntersection": [_RANGE, _BACKWARDS]}},
    "$setDifference": {"$size": {"$setDifference": [_RANGE, _BACKWARDS]}},
    "$setEquals": {"$setEquals": [_RANGE, _BACKWARDS]},
    "$setIsSubset": {"$setIsSubset": [_RANGE, _BACKWARDS]},
    "$concatArrays": {"$size": {"$concatArrays": [_RANGE, _BACKWARDS]}},
    "$reverseArray": {"$size": _BACKWARDS},
    "$range": {"$size": _RANGE},
    "$map": {"$size": {"$map": {"input": _RANGE, "in": "$$this"}}},
    "$filter": {"$size": {"$filter": {"input": _RANGE, "cond": True}}},
    "$reduce": {"$reduce": {"input": _RANGE, "initialValue": 0, "in": {"$add": ["$$value", 1]}}},
    "$in": {"$in": [-1, _RANGE]},
    "$indexOfArray": {"$indexOfArray": [_RANGE, -1]},
    "$maxN": {"$size": {"$maxN": {"input": _RANGE, "n": BIG}}},
    "$firstN": {"$size": {"$firstN": {"input": _RANGE, "n": BIG}}},
    "$slice": {"$size": {"$slice": [_RANGE, BIG]}},
    "$max of an array": {"$max": [_RANGE]},
    "$sum of an array": {"$sum": [_RANGE]},
    "$median of an array": {"$median": {"input": _RANGE, "method": "approximate"}},
    "$allElementsTrue": {"$allElementsTrue": [{"$range": [1, BIG]}]},
    "$arrayToObject": {"$size": {"$objectToArray": {"$arrayToObject": _PAIRS}}},
    "$objectToArray of a huge document": {"$size": {"$objectToArray": "$$ROOT"}},
}
for _name, _expr in RUNAWAY.items():
    CASES[f"runaway {_name}"] = [{"$limit": 1}, {"$project": {"x": {"$size": {"$map": {
        "input": {"$range": [0, 200]}, "in": _expr}}}}}]
HUGE_DOCUMENT = {"_id": 0, **{f"k{i}": i for i in range(600_000)}}  # about 16 MiB as BSON, for $objectToArray


def _run(docs, pipeline) -> tuple[float, str]:
    started = time.monotonic()
    try:
        rows = aggregate(docs, pipeline, timeout=TIMEOUT)
        outcome = f"{len(rows)} rows"
    except NlqError as exc:
        outcome = exc.type
    return time.monotonic() - started, outcome


def main() -> None:
    print(f"limit {TIMEOUT:g} s; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    docs = [{"_id": i} for i in range(10)]
    worst = (0.0, "")
    for name, pipeline in CASES.items():
        elapsed, outcome = _run([HUGE_DOCUMENT] if "huge document" in name else docs, pipeline)
        print(f"{name:34s} {elapsed:6.2f} s  {outcome}", flush=True)
        worst = max(worst, (elapsed / TIMEOUT, name))
    million = [{"_id": i, "r": (i * 7919) % 1_000_003} for i in range(1_000_000)]
    for name, output in (("$setWindowFields documents [-1000, 1000]", {"$sum": "$r", "window": {"documents": [-1000, 1000]}}),
                         ("$setWindowFields range [-10, 10]", {"$avg": "$r", "window": {"range": [-10, 10]}})):
        elapsed, outcome = _run(million, [{"$setWindowFields": {"sortBy": {"r": 1}, "output": {"w": output}}},
                                          {"$count": "n"}])
        print(f"{name + ' (10^6 docs)':34s} {elapsed:6.2f} s  {outcome}", flush=True)
        worst = max(worst, (elapsed / TIMEOUT, name))
    print(f"worst overshoot: {worst[0]:.2f}x the limit ({worst[1]})")


if __name__ == "__main__":
    main()
