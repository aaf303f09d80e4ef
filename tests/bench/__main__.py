"""`make bench`: run every tests/bench/bench_*.py main() in turn, or the ones named.

    python -m tests.bench            # all
    python -m tests.bench rules      # only bench_rules.py
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
import time

import tests.bench as package


def main(argv: list[str]) -> int:
    wanted = set(argv)
    names = sorted(info.name for info in pkgutil.iter_modules(package.__path__) if info.name.startswith("bench_"))
    failed = []
    for name in names:
        if wanted and name.removeprefix("bench_") not in wanted:
            continue
        print(f"\n=== {name} ===", flush=True)
        start = time.perf_counter()
        try:
            importlib.import_module(f"tests.bench.{name}").main()
        except Exception as exc:  # one broken bench must not hide the others' figures
            print(f"{name} failed: {type(exc).__name__}: {exc}")
            failed.append(name)
        print(f"({name}: {time.perf_counter() - start:.1f} s)", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
