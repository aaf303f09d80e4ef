"""`rules` generation: latency per question, EXC on TEND v1 and the fixtures, calibration.

Prints, for each corpus present: p50/p95 latency of `generate` (rules, per
question, witnesses precomputed) and of witness+generate together; EXC and
the outcome decomposition; EXC of predictions with confidence >= 0.75 vs the
rest (the calibration goal is a ratio of at least 2).
"""

from __future__ import annotations

import collections
import statistics
import time
from pathlib import Path

import orjson

from nlq import generate, importers, score, witness
from nlq import index as grounding
from nlq.backends import EmbeddedBackend

ROOT = Path(__file__).resolve().parents[2]
TEND_V1 = ROOT.parent / "shared" / "tend-v1"
WORLDS = ROOT / "fixtures" / "worlds"
TASKS = ROOT / "fixtures" / "tasks"
HIGH = 0.75


def tend_v1_tasks() -> list[dict]:
    return list(importers.run(str(TEND_V1 / "test.jsonl"), "tend-v1", strict=True))


def fixture_tasks() -> list[dict]:
    tasks = []
    for path in sorted(TASKS.glob("*.jsonl")):
        tasks += [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]
    return tasks


def measure(name: str, backend, tasks: list[dict]) -> None:
    indexes = {doc["db"]: doc for doc in grounding.build(backend, sorted({t["db"] for t in tasks}))}
    context = generate.Context(indexes)
    witnessed, both, alone = [], [], []
    for task in tasks:
        t0 = time.perf_counter()
        w = next(witness.run([task], indexes))
        t1 = time.perf_counter()
        p = next(generate.run([w], "rules", context))
        t2 = time.perf_counter()
        witnessed.append(p)
        both.append((t2 - t0) * 1000)
        alone.append((t2 - t1) * 1000)
    scored = list(score.run(witnessed, backend))
    n = len(scored)
    outcomes = collections.Counter(s["score"]["outcome"] for s in scored)
    exc = sum(s["score"]["exc"] for s in scored) / n
    high = [s for s in scored if (s.get("prediction") or {}).get("confidence", 0) >= HIGH]
    low = [s for s in scored if s not in high]
    rate = lambda rs: sum(s["score"]["exc"] for s in rs) / len(rs) if rs else 0.0  # noqa: E731
    print(f"{name}: n={n}  EXC={exc:.1%}  outcomes={dict(sorted(outcomes.items()))}")
    print(f"  latency generate p50={statistics.median(alone):.2f} ms  p95={_p95(alone):.2f} ms;"
          f"  witness+generate p50={statistics.median(both):.2f} ms  p95={_p95(both):.2f} ms")
    ratio = rate(high) / rate(low) if rate(low) else float("inf")
    print(f"  calibration: EXC conf>={HIGH} {rate(high):.1%} (n={len(high)}) vs rest {rate(low):.1%} "
          f"(n={len(low)}): ratio {ratio:.2f}")


def _p95(values: list[float]) -> float:
    return sorted(values)[int(0.95 * (len(values) - 1))]


def main() -> None:
    if TEND_V1.exists():
        measure("TEND v1 (524 tasks)", EmbeddedBackend(TEND_V1 / "mongodb_data"), tend_v1_tasks())
    else:
        print("TEND v1: ../shared/tend-v1 absent, skipped")
    tasks = fixture_tasks()
    if tasks:
        measure(f"fixtures ({len(tasks)} tasks)", EmbeddedBackend(WORLDS), tasks)


if __name__ == "__main__":
    main()
