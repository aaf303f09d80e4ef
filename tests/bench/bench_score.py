"""Benchmark: `nlq score` on 1,000 records (gold + prediction execution) on the embedded engine.

Records are the TEND v1 golds, each submitted as its own prediction (in
mongosh form, so the prediction is parsed too), cycled up to 1,000 records.
Target: < 10 s. Needs ../shared/tend-v1; prints a skip line without it.
"""

from __future__ import annotations

import itertools
import time
from pathlib import Path

import orjson

from nlq import score
from nlq.backends import EmbeddedBackend

TEND_V1 = Path(__file__).resolve().parents[3] / "shared" / "tend-v1"
N = 1000


def records(root: Path, n: int = N) -> list[dict]:
    tasks = [orjson.loads(line) for line in (root / "test.jsonl").read_bytes().splitlines()]
    return [{"id": f"{t['db_id']}/{t['record_id']}#{i}", "db": t["db_id"], "gold_mql": t["MQL"],
             "prediction": {"mql": t["MQL"]}}
            for i, t in zip(range(n), itertools.cycle(tasks))]


def main() -> None:
    if not TEND_V1.exists():
        print(f"bench_score: skipped ({TEND_V1} is not present)")
        return
    backend = EmbeddedBackend(TEND_V1 / "mongodb_data")
    batch = records(TEND_V1)
    for db in {r["db"] for r in batch}:  # file loading is not scoring
        for name in backend.collections(db):
            backend.documents(db, name)
    started = time.perf_counter()
    out = list(score.run(batch, backend))
    elapsed = time.perf_counter() - started
    correct = sum(r["score"]["exc"] for r in out)
    print(f"bench_score: {len(out)} records (gold + prediction execution) in {elapsed:.2f} s "
          f"({1000 * elapsed / len(out):.2f} ms/record; target < 10 s); EXC = {correct}/{len(out)}")


if __name__ == "__main__":
    main()
