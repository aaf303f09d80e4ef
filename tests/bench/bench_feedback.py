"""Benchmark: empty-result bisection on golds whose root `$match` literal was changed to a value
stored nowhere — how often it names the mutated stage, and its time per diagnosis."""

from __future__ import annotations

import time

from tests.gate_mutants import bisection_localization
from tests.golds import fixture_golds, tend_v1_golds


def main() -> None:
    for corpus in (fixture_golds(), tend_v1_golds()):
        if corpus is None:
            print("bench_feedback: TEND v1 skipped (../shared/tend-v1 is not present)")
            continue
        started = time.perf_counter()
        hit, total, missed = bisection_localization(corpus)
        elapsed = time.perf_counter() - started
        print(f"{corpus.name}: bisection localizes {hit} / {total} empty mutants "
              f"({100 * hit / max(total, 1):.1f}%), {elapsed:.1f} s in all")
        for note in missed[:3]:
            print(f"  missed {note}")


if __name__ == "__main__":
    main()
