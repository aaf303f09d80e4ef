"""The memory of verified answers on TEND v1: how much `rules` gains from answers confirmed before.

    python -m tests.bench memory                   # both splits, when present
    python -m tests.bench.bench_memory --fit       # also refit nlq/memory/calibration.json (make calibrate-memory)
    python -m tests.bench.bench_memory --no-repair # without the `rules --candidates 3 | repair` figures

For each split (the shared one, train-a) and each database, the first half of
its records (by record id) is added to a fresh memory as verified answers
(their gold, in their first phrasing: what a user would have confirmed); the
second half is answered in all five phrasings by `rules` without memory and
with it. With memory, `rules` answers with the nearest entry adapted to the
question when the memory candidate's calibrated confidence beats its own
reading's. The memory candidate's calibration is fitted here with
cross-validation grouped by database (each database's figures come from a
model fitted on the other databases of both splits), so every figure printed
is out of database; `--fit` writes the model fitted on all of them.

Printed per split: EXC of rules alone, of the memory candidate alone, of rules
with memory, and of an oracle that picks the right one of the two; the wins
and losses per database; the ECE of the memory candidate's confidence and of
the chosen answer's confidence; the same for `rules --candidates 3 | repair`
with the memory candidate among the candidates.

No repeated-question benchmark is built from TEND: a question asked again in
another phrasing is one of the same record's five paraphrases, and a record is
never answered from an entry of itself or its paraphrases (the leak rule);
every other record of a database is a different task, which is what the halves
above already measure.
"""

from __future__ import annotations

import collections
import sys
import tempfile
from pathlib import Path

import orjson

from nlq import generate, importers, mql, repair, score, witness
from nlq import index as grounding
from nlq.backends import EmbeddedBackend
from nlq.memory import Entry, Memory
from nlq.memory import recall as memory_recall
from nlq.methods.rules import MEMORY_FLOOR
from tests.bench import bench_rules, calibrate_rules

ROOT = Path(__file__).resolve().parents[2]
TEND_V1 = ROOT.parent / "shared" / "tend-v1"
SPLITS = {"shared": (TEND_V1 / "test.jsonl", TEND_V1 / "mongodb_data"),
          "train-a": (TEND_V1 / "train-a" / "train-a.jsonl", TEND_V1 / "train-a" / "mongodb_data")}
FOLDS = 5


def record_number(task: dict) -> int:
    return int(memory_recall.record_group(task["id"]).rsplit("/", 1)[1])


def halves(tasks: list[dict]) -> tuple[list[dict], list[dict]]:
    """(first phrasing of the first half of each database's records, every phrasing of the second half)."""
    by_db = collections.defaultdict(set)
    for t in tasks:
        by_db[t["db"]].add(record_number(t))
    remembered, answered = [], []
    for t in tasks:
        numbers = sorted(by_db[t["db"]])
        first = set(numbers[:len(numbers) // 2])
        if record_number(t) in first:
            if t["labels"]["paraphrase"] == 1:
                remembered.append(t)
        else:
            answered.append(t)
    return remembered, answered


def remember(memory: Memory, tasks: list[dict]) -> int:
    for t in tasks:
        query = mql.parse(t["gold_mql"])
        memory.add(Entry(db=t["db"], question=t["question"], collection=query.collection,
                         pipeline=query.pipeline, verified_by="gold", source=t["id"]))
    return len(memory)


def run_split(name: str, with_repair: bool = True) -> list[dict] | None:
    """Score rules' reading and the memory candidate of every answered record of one split."""
    path, data = SPLITS[name]
    if not path.exists():
        print(f"{name}: not present")
        return None
    tasks = list(importers.run(str(path), "tend-v1", strict=True, paraphrases=True))
    backend = EmbeddedBackend(data)
    tasks = [t for t in tasks if t["db"] in set(backend.databases())]
    remembered, answered = halves(tasks)
    indexes = {doc["db"]: doc for doc in grounding.build(backend, sorted({t["db"] for t in tasks}))}
    with tempfile.TemporaryDirectory() as tmp, Memory(Path(tmp) / "memory.sqlite") as memory:
        remember(memory, remembered)
        context = generate.Context(indexes)
        cache: dict = {}
        predicted, candidates, witnessed = [], [], []
        for task in answered:
            w = next(witness.run([dict(task)], indexes))
            witnessed.append(w)
            p = next(generate.run([dict(w)], "rules", context))
            predicted.append(p)
            cand = None
            if p.get("prediction"):
                cand = memory_recall.candidate(memory, generate.task_view(w), indexes[task["db"]],
                                               reading=p["prediction"], own_confidence=p["prediction"]["confidence"],
                                               cache=cache, k=1)
            candidates.append(cand)
        if with_repair:
            through_repair(name, witnessed, indexes, backend, memory)
    scored = list(score.run(predicted, backend))
    with_mem = [{**r, "prediction": c} for r, c in zip(scored, candidates) if c]
    judged = iter(score.run(with_mem, backend))
    rows = []
    for r, c in zip(scored, candidates):
        row = {"db": r["db"], "id": r["id"], "rules": r["score"]["exc"],
               "rules_conf": (r.get("prediction") or {}).get("confidence", 0.0), "split": name}
        if c:
            row.update(memory=next(judged)["score"]["exc"], signals=c["signals"])
        rows.append(row)
    print(f"{name}: {len(remembered)} entries remembered, {len(answered)} phrasings answered "
          f"({sum('memory' in r for r in rows)} with a memory candidate)")
    return rows


def through_repair(name: str, witnessed: list[dict], indexes: dict, backend, memory: Memory) -> None:
    """EXC of `rules --candidates 3 | repair` (no model: gate, execution, confidence-weighted vote)
    without and with the memory (its candidate among the others, by the shipped calibration)."""
    per_db = []
    for label, options in (("without memory", {}), ("with memory", {"memory": memory})):
        context = generate.Context(indexes, candidates=3, **options)
        generated = [next(generate.run([dict(w)], "rules", context)) for w in witnessed]
        repaired = list(repair.run(generated, backend, indexes))
        by_db: collections.Counter = collections.Counter()
        for r in score.run(repaired, backend):
            by_db[r["db"]] += r["score"]["exc"]
        per_db.append(by_db)
        print(f"{name}: rules --candidates 3 | repair, {label}: {100 * sum(by_db.values()) / len(witnessed):.1f}% EXC")
    dbs = {w["db"] for w in witnessed}
    wins = sum(per_db[1][db] > per_db[0][db] for db in dbs)
    losses = sorted(db for db in dbs if per_db[1][db] < per_db[0][db])
    print(f"{name}: repair with memory: databases helped {wins}, hurt {len(losses)}, "
          f"unchanged {len(dbs) - wins - len(losses)}" + (f" (hurt: {', '.join(losses)})" if losses else ""))


def folds(rows: list[dict]) -> dict[str, int]:
    """Database -> fold, a stable split of the databases into FOLDS groups."""
    dbs = sorted({r["db"] for r in rows})
    return {db: i % FOLDS for i, db in enumerate(dbs)}


def out_of_database(rows: list[dict]) -> None:
    """Each row's memory probability from a model fitted on the other folds' databases."""
    fold = folds(rows)
    for k in range(FOLDS):
        train = [(r["signals"], r["memory"]) for r in rows if "memory" in r and fold[r["db"]] != k]
        model = calibrate_rules.logistic(train)
        for r in rows:
            if "memory" in r and fold[r["db"]] == k:
                r["p"] = memory_recall.probability(r["signals"], model)


def summary(name: str, rows: list[dict]) -> None:
    n = len(rows)
    chosen = []
    for r in rows:
        use = "p" in r and r["p"] > r["rules_conf"] and r["p"] >= MEMORY_FLOOR
        chosen.append((r["memory"] if use else r["rules"], r["p"] if use else r["rules_conf"], r["db"], r["rules"]))
    alone = sum(r["rules"] for r in rows)
    mem = sum(r.get("memory", 0) for r in rows)
    both = sum(c[0] for c in chosen)
    oracle = sum(max(r["rules"], r.get("memory", 0)) for r in rows)
    print(f"\n{name}: {n} answered phrasings (beta 2)")
    print(f"  rules alone            {100 * alone / n:5.1f}%")
    print(f"  memory candidate alone {100 * mem / n:5.1f}%")
    print(f"  rules with memory      {100 * both / n:5.1f}%   ({100 * (both - alone) / n:+.1f} points)")
    print(f"  oracle of the two      {100 * oracle / n:5.1f}%")
    print(f"  memory chosen for {sum(1 for r in rows if 'p' in r and r['p'] > r['rules_conf'] and r['p'] >= MEMORY_FLOOR)}"
          f" of {n}")
    print(f"  ECE memory candidate (out of database) {bench_rules.ece([(r['p'], r['memory']) for r in rows if 'p' in r]):.3f}")
    print(f"  ECE chosen answer's confidence        {bench_rules.ece([(c[1], c[0]) for c in chosen]):.3f}")
    per_db = collections.defaultdict(lambda: [0, 0, 0])
    for c in chosen:
        per_db[c[2]][0] += c[3]
        per_db[c[2]][1] += c[0]
        per_db[c[2]][2] += 1
    wins = sorted(db for db, (a, b, _) in per_db.items() if b > a)
    losses = sorted(db for db, (a, b, _) in per_db.items() if b < a)
    print(f"  databases helped {len(wins)}, hurt {len(losses)}, unchanged {len(per_db) - len(wins) - len(losses)}")
    for db in losses:
        a, b, m = per_db[db]
        print(f"    hurt: {db} {100 * a / m:.1f} -> {100 * b / m:.1f} ({m} phrasings)")


def fit_all(rows: list[dict]) -> dict:
    model = calibrate_rules.logistic([(r["signals"], r["memory"]) for r in rows if "memory" in r])
    model["fitted_on"] = (f"{sum('memory' in r for r in rows)} memory candidates over "
                          f"{len({r['db'] for r in rows})} TEND v1 databases (both development splits): the first "
                          "half of each database's records remembered, the second half answered in five phrasings")
    return model


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    results = {name: run_split(name, with_repair="--no-repair" not in argv) for name in SPLITS}
    rows = [r for part in results.values() if part for r in part]
    if not rows:
        return
    out_of_database(rows)
    for name, part in results.items():
        if part:
            summary(name, part)
    if "--fit" in argv:
        model = fit_all(rows)
        memory_recall.CALIBRATION.write_bytes(orjson.dumps(model, option=orjson.OPT_INDENT_2) + b"\n")
        print(f"wrote {memory_recall.CALIBRATION}")


if __name__ == "__main__":
    main()
