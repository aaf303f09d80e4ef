"""Hostile queries under a 2 s limit: the time each takes to end, and how (issue 15).

    python -m tests.bench hardening

Each case ends in a typed error (or a result) within about 1.5x the limit; the
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


def _lets(levels: int = 60):
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
    "60 nested $let doubling": _one({"$project": {"x": _lets()}}),
    "$map to 4M objects": _one({"$project": {"x": {"$size": {"$map": {
        "input": {"$range": [0, 4_000_000]}, "in": {"a": "$$this", "b": A}}}}}}),
}


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
    for name, pipeline in CASES.items():
        elapsed, outcome = _run(docs, pipeline)
        print(f"{name:34s} {elapsed:6.2f} s  {outcome}", flush=True)
    million = [{"_id": i, "r": (i * 7919) % 1_000_003} for i in range(1_000_000)]
    for name, output in (("$setWindowFields documents [-1000, 1000]", {"$sum": "$r", "window": {"documents": [-1000, 1000]}}),
                         ("$setWindowFields range [-10, 10]", {"$avg": "$r", "window": {"range": [-10, 10]}})):
        elapsed, outcome = _run(million, [{"$setWindowFields": {"sortBy": {"r": 1}, "output": {"w": output}}},
                                          {"$count": "n"}])
        print(f"{name + ' (10^6 docs)':34s} {elapsed:6.2f} s  {outcome}", flush=True)


if __name__ == "__main__":
    main()
