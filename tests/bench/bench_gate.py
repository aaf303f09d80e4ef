"""Benchmark: the admissibility gate on every gold (false positives) and on mutants of the golds
(recall per mistake class), with the gate's time per pipeline.

Corpora: the 135 fixture tasks and, when ../shared is present, the 524 TEND v1 tasks.
"""

from __future__ import annotations

import statistics
import time

from nlq import gate
from tests.gate_mutants import CLASSES, recall
from tests.golds import fixture_golds, tend_v1_golds


def main() -> None:
    for corpus in (fixture_golds(), tend_v1_golds()):
        if corpus is None:
            print("bench_gate: TEND v1 skipped (../shared/tend-v1 is not present)")
            continue
        times, rejected = [], []
        for task in corpus.tasks:
            started = time.perf_counter()
            found = gate.run(task["query"], corpus.indexes[task["db"]], task["question"])
            times.append((time.perf_counter() - started) * 1000)
            if found:
                rejected.append(f"{task['id']}: {found[0].message}")
        print(f"{corpus.name}: gate false positives {len(rejected)} / {len(corpus.tasks)} golds; "
              f"median {statistics.median(times):.2f} ms, max {max(times):.1f} ms per pipeline")
        for line in rejected:
            print(f"  rejected gold {line}")
        result = recall(corpus)
        for kind in CLASSES:
            caught, total, missed = result[kind]
            share = f"{100 * caught / total:.1f}%" if total else "n/a"
            print(f"  {kind:<20} recall {share:>6}  ({caught} / {total} mutants)")
            for note in missed[:3]:
                print(f"      missed {note}")


if __name__ == "__main__":
    main()
