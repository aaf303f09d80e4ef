"""Benchmark: the embedded engine against mongomock-ng (issue 3, item 4).

Prints, in one run, as ratios (engine time / mongomock-ng time, target: mongomock-ng
at least 5x slower):

1. all shared TEND v1 gold queries on both engines (same documents, data loading
   excluded; the engine's time is the mean of 3 passes, mongomock-ng runs once);
2. the generated 100k-document `$unwind`+`$group` (nested arrays of subdocuments,
   `tests.bench.bench_engine.nested_documents`). mongomock-ng needs minutes at
   that size, so it runs on two smaller sizes and its 100k time is extrapolated
   linearly from the larger one; the output says so and shows both sizes so the
   linearity can be judged. Results of both engines are checked equal on the
   small size before timing means anything.

Plus the engine's peak traced memory (tracemalloc) on the 100k run. mongomock-ng
is test-only and imported here only. Prints figures; asserts nothing.
"""

from __future__ import annotations

import time

from nlq.mql.engine import aggregate
from tests.bench.bench_engine import UNWIND_GROUP, nested_documents, plain_python_unwind_group, time_call

FULL = 100_000
MOCK_SIZES = (2_000, 10_000)


def _mongomock_collection(docs: list[dict]):
    import mongomock_ng

    collection = mongomock_ng.MongoClient()["bench"]["customers"]
    collection.insert_many([dict(d) for d in docs])
    return collection


def _seconds(fn) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def tend_v1() -> None:
    from tests.differential import harness

    if not (harness.TEND_V1 / "mongodb_data").exists():
        print(f"TEND v1 golds: skipped ({harness.TEND_V1} is not present)")
        return
    t = harness.time_both(repeat_engine=3)
    print(f"TEND v1 golds ({t['queries']} queries, same documents, loading excluded):")
    print(f"  engine      {t['engine'] * 1000:8.1f} ms  ({t['engine'] / t['queries'] * 1e6:.0f} µs/query, mean of 3 passes)")
    print(f"  mongomock-ng{t['mongomock'] * 1000:8.1f} ms  ({t['mongomock'] / t['queries'] * 1e6:.0f} µs/query)")
    print(f"  ratio: engine is {t['mongomock'] / t['engine']:.1f}x faster (target >= 5x)")


def unwind_group() -> None:
    from tests.differential.harness import canonical

    small = nested_documents(MOCK_SIZES[0])
    mine = sorted(aggregate(small, UNWIND_GROUP), key=lambda r: r["_id"])
    theirs = sorted(_mongomock_collection(small).aggregate(UNWIND_GROUP), key=lambda r: r["_id"])
    same = [canonical(r) for r in mine] == [canonical(r) for r in theirs]
    print(f"$unwind+$group {UNWIND_GROUP}")
    print(f"  results on {MOCK_SIZES[0]:,} documents: {'identical' if same else 'DIFFERENT'} on both engines")

    mock_times = {}
    for n in MOCK_SIZES:
        collection = _mongomock_collection(nested_documents(n))
        mock_times[n] = _seconds(lambda: list(collection.aggregate(UNWIND_GROUP)))
        print(f"  mongomock-ng on {n:>7,} documents: {mock_times[n]:8.3f} s (measured)")
    largest = MOCK_SIZES[-1]
    mock_full = mock_times[largest] * FULL / largest
    print(f"  mongomock-ng on {FULL:>7,} documents: {mock_full:8.3f} s (EXTRAPOLATED linearly from {largest:,}; "
          f"measured growth {MOCK_SIZES[0]:,}->{largest:,}: x{mock_times[largest] / mock_times[MOCK_SIZES[0]]:.1f} "
          f"for x{largest / MOCK_SIZES[0]:.0f} documents; growth above x{largest / MOCK_SIZES[0]:.0f} means the "
          f"linear extrapolation understates mongomock-ng's time)")

    docs = nested_documents(FULL)
    aggregate(docs, UNWIND_GROUP)  # warm-up: imports and compiled operators
    engine_full = min(_seconds(lambda: aggregate(docs, UNWIND_GROUP)) for _ in range(3))
    loop = _seconds(lambda: plain_python_unwind_group(docs))
    _, peak = time_call(lambda: aggregate(docs, UNWIND_GROUP))
    engine_small = min(_seconds(lambda: aggregate(docs[:largest], UNWIND_GROUP)) for _ in range(3))
    print(f"  engine       on {FULL:>7,} documents: {engine_full:8.3f} s (measured, best of 3; "
          f"plain Python loop {loop:.3f} s)")
    print(f"  engine peak traced memory on {FULL:,} documents: {peak / 1e6:.2f} MB (tracemalloc, input excluded)")
    print(f"  ratio at {FULL:,}: engine is {mock_full / engine_full:.0f}x faster (vs extrapolated mongomock-ng; "
          f"target >= 5x)")
    print(f"  ratio at {largest:,} (both measured): engine is {mock_times[largest] / engine_small:.0f}x faster")


def main() -> None:
    try:
        import mongomock_ng  # noqa: F401  (test-only dependency)
    except ImportError:
        print("skipped: mongomock-ng is not installed (pip install mongomock-ng)")
        return
    tend_v1()
    unwind_group()


if __name__ == "__main__":
    main()
