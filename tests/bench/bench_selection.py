"""Benchmark: selection by evidence among systems' answers (docs/SELECTION.md), out of database.

On the shared TEND v1 records with documents (2,620 = 524 questions x 5 phrasings), the systems
Kimi K3 direct and Kimi K3 through a SQL pivot (recorded outputs) and `rules` (generated here):
each run alone, the plain vote, the oracle and selection, with leave-one-database-out
cross-validation, for the three systems and for the two Kimi runs alone; the ECE of
`repair.confidence` and precision/coverage at thresholds. Then `rules --candidates 3` alone,
its alternatives chosen by the one-system model, on the shared and the train-a records (63
other databases). Needs ../shared.

The runs and the executed candidates are cached under out/selection/ (git-ignored): delete the
folder to rebuild them (rules generation and execution of 3 x 2,620 candidates: a few minutes).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.bench import select_fit
from tests.conftest import ROOT, SHARED, TEND_V1

OUT = ROOT / "out" / "selection"
RECORDED = SHARED / "recorded"
NLQ = str(Path(sys.executable).parent / "nlq")


def _run(*args: str, stdin=None) -> None:
    subprocess.run([NLQ, *args], check=True, stdin=stdin)


def runs() -> list[Path]:
    """The three runs (built once): kimi direct, kimi SQL pivot, rules."""
    OUT.mkdir(parents=True, exist_ok=True)
    data = str(TEND_V1 / "mongodb_data")
    index = OUT / "index.jsonl"
    if not index.exists():
        _run("index", "--data", data, "-o", str(index))
    made = []
    for name, source in (("kimi", "kimi-k3.tend-v1.jsonl"), ("kimi-sql-pivot", "kimi-k3-sql-pivot.tend-v1.jsonl")):
        path = OUT / f"{name}.jsonl"
        if not path.exists():
            _run("import", "--map", "prediction=prediction.mql,method=prediction.method", str(RECORDED / source),
                 "-o", str(path))
        made.append(path)
    rules = OUT / "rules.jsonl"
    if not rules.exists():
        tasks = OUT / "tasks.jsonl"
        _run("import", "--format", "tend-v1", "--paraphrases", str(TEND_V1 / "test.jsonl"), "-o", str(tasks))
        _run("generate", "--method", "rules", "--index", str(index), "--candidates", "3", str(tasks),
             "-o", str(rules))
    return made + [rules]


def train_a_evidence() -> Path | None:
    """The executed candidates of `rules --candidates 3` on the train-a records (63 other
    databases, no recorded model outputs), built once: what the one-system model is also fitted
    and measured on (`make select-fit`). None without the split."""
    split = TEND_V1 / "train-a"
    if not (split / "train-a.jsonl").exists():
        return None
    out = OUT / "train-a"
    out.mkdir(parents=True, exist_ok=True)
    data, index, tasks, rules = str(split / "mongodb_data"), out / "index.jsonl", out / "tasks.jsonl", out / "rules.jsonl"
    evidence = out / "evidence.jsonl"
    if evidence.exists():
        return evidence
    if not index.exists():
        _run("index", "--data", data, "-o", str(index))
    if not tasks.exists():
        _run("import", "--format", "tend-v1", "--paraphrases", str(split / "train-a.jsonl"), "-o", str(tasks))
    if not rules.exists():
        _run("generate", "--method", "rules", "--index", str(index), "--candidates", "3", str(tasks), "-o", str(rules))
    select_fit.cache([str(rules)], data, str(index), str(evidence))
    return evidence


def main() -> None:
    if not (TEND_V1 / "test.jsonl").exists() or not RECORDED.exists():
        print("bench_selection: skipped (../shared/recorded or ../shared/tend-v1 is not present)")
        return
    paths = runs()
    evidence = OUT / "evidence.jsonl"
    if not evidence.exists():
        select_fit.cache([str(p) for p in paths], str(TEND_V1 / "mongodb_data"), str(OUT / "index.jsonl"),
                         str(evidence))
    for label, without in (("Kimi direct + Kimi SQL pivot + rules", ()), ("Kimi direct + Kimi SQL pivot", ("rules",))):
        records = select_fit.load(str(evidence), without, alternatives=False)
        select_fit.prepare_groups(records)
        trained = select_fit.subsets(records)  # as the shipped model is fitted (make select-fit)
        select_fit.prepare_groups(trained)
        select_fit.report(label, select_fit.evaluate(records, trained))
    # one system with its alternatives (rules --candidates | repair), on both splits
    more = train_a_evidence()
    pooled = select_fit.one_system([str(evidence)] + ([str(more)] if more else []), "rules")
    select_fit.report("rules with its alternatives (shared" + (" + train-a)" if more else ")"),
                      select_fit.evaluate(pooled))


if __name__ == "__main__":
    main()
