"""Benchmark: the embedded engine on all TEND v1 golds, a 100k-document $unwind+$group, and limits.

Reusable pieces for the engine-vs-other-engine comparison:

- `tend_v1_queries()` -> [(db, collection, pipeline)] of every gold (parsed once);
- `run_tend_v1(aggregate_fn, queries)` times `aggregate_fn(db, collection, pipeline)` over them;
- `nested_documents(n)` and `UNWIND_GROUP`: the generated workload;
- `time_call(fn)` -> (seconds, peak bytes under tracemalloc).

Prints figures; asserts nothing (STYLE rule 18).
"""

from __future__ import annotations

import json
import random
import time
import tracemalloc
from pathlib import Path
from typing import Callable

from nlq.errors import QueryTimeout
from nlq.mql.engine import aggregate

TEND_V1 = Path(__file__).resolve().parents[3] / "shared" / "tend-v1"

UNWIND_GROUP = [{"$unwind": "$orders"},
                {"$group": {"_id": "$orders.sku", "qty": {"$sum": "$orders.qty"}, "n": {"$sum": 1}}}]


def nested_documents(n: int = 100_000, seed: int = 0) -> list[dict]:
    """`n` customer documents, each with 1-5 embedded orders `{sku, qty, price}`."""
    rng = random.Random(seed)
    return [{"_id": i, "name": f"c{i}", "city": rng.choice(("Oslo", "Lima", "Pune", "Kobe")),
             "orders": [{"sku": f"s{rng.randrange(50)}", "qty": rng.randrange(1, 10), "price": rng.random() * 100}
                        for _ in range(rng.randrange(1, 6))]}
            for i in range(n)]


def plain_python_unwind_group(docs: list[dict]) -> dict:
    """The same aggregation as a hand-written loop (the floor to compare with)."""
    out: dict = {}
    for doc in docs:
        for order in doc["orders"]:
            entry = out.setdefault(order["sku"], [0, 0])
            entry[0] += order["qty"]
            entry[1] += 1
    return out


def tend_v1_queries(root: Path = TEND_V1) -> list[tuple[str, str, list]]:
    """(db, collection, pipeline) of every TEND v1 gold query."""
    from nlq.mql.mongosh import parse_query

    out = []
    with open(root / "test.jsonl", "rb") as f:
        for line in f:
            record = json.loads(line)
            query = parse_query(record["MQL"])
            out.append((record["db_id"], query.collection, query.pipeline))
    return out


def run_tend_v1(aggregate_fn: Callable[[str, str, list], list], queries) -> dict:
    """Run every query once; returns {seconds, queries, errors, rows}."""
    errors = rows = 0
    started = time.perf_counter()
    for db, collection, pipeline in queries:
        try:
            rows += len(aggregate_fn(db, collection, pipeline))
        except Exception:  # noqa: BLE001 - counted, the bench goes on
            errors += 1
    return {"seconds": time.perf_counter() - started, "queries": len(queries), "errors": errors, "rows": rows}


def time_call(fn: Callable[[], object]) -> tuple[float, int]:
    """(seconds, peak traced bytes) of one call."""
    tracemalloc.start()
    started = time.perf_counter()
    try:
        fn()
        return time.perf_counter() - started, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def runaway_stop_seconds(timeout: float = 0.2) -> float:
    """How long a huge $range+$unwind pipeline runs before the deadline stops it."""
    docs = [{"_id": i} for i in range(1000)]
    pipeline = [{"$project": {"r": {"$range": [0, 1_000_000]}}}, {"$unwind": "$r"},
                {"$group": {"_id": "$r", "n": {"$sum": 1}}}]
    started = time.monotonic()
    try:
        aggregate(docs, pipeline, timeout=timeout)
    except QueryTimeout:
        pass
    return time.monotonic() - started


def main() -> None:
    if TEND_V1.exists():
        from nlq.backends import EmbeddedBackend

        backend = EmbeddedBackend(TEND_V1 / "mongodb_data")
        queries = tend_v1_queries()
        for db in {q[0] for q in queries}:  # file loading is not execution
            for name in backend.collections(db):
                backend.documents(db, name)
        result = run_tend_v1(lambda db, c, p: backend.aggregate(db, c, p), queries)
        print(f"TEND v1 golds: {result['queries']} queries in {result['seconds'] * 1000:.0f} ms "
              f"({result['seconds'] / max(1, result['queries']) * 1e6:.0f} µs/query), "
              f"{result['errors']} errors, {result['rows']} rows")
    else:
        print(f"TEND v1 golds: skipped ({TEND_V1} is not present)")

    docs = nested_documents()
    started = time.perf_counter()
    plain_python_unwind_group(docs)
    loop_s = time.perf_counter() - started
    started = time.perf_counter()
    aggregate(docs, UNWIND_GROUP)
    engine_s = time.perf_counter() - started
    _, peak = time_call(lambda: aggregate(docs, UNWIND_GROUP))
    _, sort_peak = time_call(lambda: aggregate(docs, [{"$unwind": "$orders"}, {"$sort": {"orders.qty": -1}},
                                                      {"$limit": 1}]))
    print(f"100k nested documents $unwind+$group: {engine_s:.3f} s (plain Python loop {loop_s:.3f} s, "
          f"x{engine_s / loop_s:.1f}); peak memory {peak / 1e3:.0f} kB streaming, "
          f"{sort_peak / 1e6:.1f} MB for $unwind+$sort+$limit 1 (top-N buffer)")
    match_first = [{"$match": {"city": "Oslo", "orders.qty": {"$gte": 9}}}, {"$count": "n"}]
    started = time.perf_counter()
    aggregate(docs, match_first)
    print(f"100k documents $match-first count: {time.perf_counter() - started:.3f} s")
    print(f"runaway $range+$unwind with a 0.2 s limit stopped after {runaway_stop_seconds():.3f} s "
          f"(target < 0.30 s)")


if __name__ == "__main__":
    main()
