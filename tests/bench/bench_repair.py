"""Benchmark: LLM-free `repair` on real model output — the recorded Kimi K3 predictions on TEND v1
(5 phrasings per task, one call each, no feedback).

Arms, each scored by `nlq score` against the gold:
- `as recorded`: each phrasing's own prediction;
- `gated`: repair with that prediction alone (gate + execution; the answer changes only when it
  cannot run);
- `vote`: the 5 phrasings' predictions of one task as the candidates of each phrasing (its own
  first), gated result-space voting;
- `vote, no gate`: the same vote with every executed candidate voting;
and the gate's verdict against correctness of the recorded predictions, and the accuracy/coverage
of `vote` with `--min-vote`. Needs ../shared (recorded outputs and TEND v1 data).
"""

from __future__ import annotations

import time
from collections import defaultdict

from nlq import io, repair, score
from tests.conftest import SHARED
from tests.golds import tend_v1_golds

RECORDED = SHARED / "recorded" / "kimi-k3.tend-v1.jsonl"


def _exc(records, backend) -> list[int]:
    return [r["score"]["exc"] for r in score.run(records, backend)]


def main() -> None:
    corpus = tend_v1_golds()
    if corpus is None or not RECORDED.exists():
        print("bench_repair: skipped (../shared/recorded or ../shared/tend-v1 is not present)")
        return
    backend, indexes = corpus.backend, corpus.indexes
    records = [r for r in io.read_records(str(RECORDED)) if r.get("db") in indexes]
    by_task = defaultdict(list)
    for r in records:
        by_task[r["id"].rsplit("/", 1)[0]].append(r)
    n = len(records)
    base = _exc(records, backend)
    print(f"recorded Kimi K3 predictions on TEND v1: {n} records ({len(by_task)} tasks x phrasings)")
    print(f"  as recorded      EXC {100 * sum(base) / n:5.1f}%")

    started = time.perf_counter()
    gated = list(repair.run(records, backend, indexes))
    elapsed = time.perf_counter() - started
    print(f"  gated            EXC {100 * sum(_exc(gated, backend)) / n:5.1f}%  "
          f"({1000 * elapsed / n:.1f} ms per record)")
    for label, checks in (("gate (path, value, limit)", {"path", "value", "limit"}),
                          ("execution feedback", {"exec", "forbidden", "empty", "leaked_id", "parse"})):
        flagged = [any(v["check"] in checks for v in r.get("repair", {}).get("violations") or ())
                   for r in gated]
        wrong = sum(1 for f, e in zip(flagged, base) if f and not e)
        right = sum(1 for f, e in zip(flagged, base) if f and e)
        print(f"  {label} flags {sum(flagged)} predictions: {wrong} of the {n - sum(base)} wrong, "
              f"{right} of the {sum(base)} correct")

    def with_siblings(r):
        others = [o["prediction"] for o in by_task[r["id"].rsplit("/", 1)[0]] if o is not r]
        return {**r, "candidates": others}

    for label, options in (("vote", repair.Options()), ("vote, no gate", repair.Options(gate=False))):
        started = time.perf_counter()
        voted = list(repair.run([with_siblings(r) for r in records], backend, indexes, options=options))
        elapsed = time.perf_counter() - started
        exc = _exc(voted, backend)
        print(f"  {label:<16} EXC {100 * sum(exc) / n:5.1f}%  ({1000 * elapsed / n:.1f} ms per record)")
        if label == "vote":
            shares = [r.get("repair", {}).get("vote_share", 0.0) for r in voted]
            for threshold in (0.6, 0.8, 1.0):
                kept = [e for e, s in zip(exc, shares) if s >= threshold]
                print(f"    min-vote {threshold:.1f}: answers {100 * len(kept) / n:5.1f}% of records, "
                      f"EXC {100 * sum(kept) / max(len(kept), 1):5.1f}% of those")


if __name__ == "__main__":
    main()
