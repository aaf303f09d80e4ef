"""`rules` generation per TEND v1 split: EXC, latency, honesty of its confidence, abstentions.

    python -m tests.bench.bench_rules                       # every split present, the fixtures, repair
    python -m tests.bench.bench_rules --split train-a       # one split (shared | train-a | fixtures)
    python -m tests.bench.bench_rules --split shared --no-repair --by-db

Prints, for each split (SPLITS: the shared TEND v1 test split and train-a,
disjoint databases; every phrasing of each record) and the fixtures: p50/p95
latency of `generate` (witnesses precomputed) and of witness+generate; EXC
at beta = 2 (the scorer's default) and at beta = 0 (no surplus value at
all), overall and per phrasing (`labels.paraphrase`); the reliability table
of the shipped `confidence` (in-sample on these splits: the shipped model is
fitted on them) and, the figure to quote, the out-of-database one: every
record's confidence by a model fitted without its database
(`calibrate_rules.cross_validated`, grouped by database, over every split
run together), its ECE and the precision and coverage at the recommended
threshold (RECOMMENDED). Then the abstentions: the records whose reading
left out a word stating a constraint (`prediction.unresolved`, on which
`nlq ask` abstains by default) or failed, their share, how often they would
have been right, and the EXC of the answers not abstained. `--by-db` adds
EXC per database. Last (unless `--no-repair`), the candidates
(`--candidates 3`): how often they are right, the ECE of their own
calibrated confidence, how many records they could rescue; and EXC of
`rules | repair` and `rules --candidates 3 | repair` (LLM-free gate,
execution and a confidence-weighted result vote) beside rules alone.
"""

from __future__ import annotations

import argparse
import collections
import statistics
import time
from pathlib import Path

import orjson

from nlq import generate, importers, score, witness
from nlq import index as grounding
from nlq.backends import EmbeddedBackend
from nlq.methods.rules import calibration

ROOT = Path(__file__).resolve().parents[2]
TEND_V1 = ROOT.parent / "shared" / "tend-v1"
WORLDS = ROOT / "fixtures" / "worlds"
TASKS = ROOT / "fixtures" / "tasks"
RECOMMENDED = calibration.RECOMMENDED_THRESHOLD
BINS = 10
# split -> (records, databases): the shared TEND v1 test split and train-a (other databases)
SPLITS = {"shared": (TEND_V1 / "test.jsonl", TEND_V1 / "mongodb_data"),
          "train-a": (TEND_V1 / "train-a" / "train-a.jsonl", TEND_V1 / "train-a" / "mongodb_data")}


def present(split: str) -> bool:
    return all(path.exists() for path in SPLITS[split])


def split_tasks(split: str, paraphrases: bool = True) -> list[dict]:
    """Every record of a split as tasks (each phrasing its own task when `paraphrases`)."""
    return list(importers.run(str(SPLITS[split][0]), "tend-v1", strict=True, paraphrases=paraphrases))


def backend_of(split: str) -> EmbeddedBackend:
    return EmbeddedBackend(SPLITS[split][1])


def tend_v1_tasks(paraphrases: bool = True) -> list[dict]:
    return split_tasks("shared", paraphrases)


def fixture_tasks() -> list[dict]:
    tasks = []
    for path in sorted(TASKS.glob("*.jsonl")):
        tasks += [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]
    return tasks


def predict(backend, tasks: list[dict], method: str = "rules", strict: bool = True,
            **options) -> tuple[list[dict], list, list]:
    """Witness, generate and score every task (beta 2, plus `exc0` at beta 0 when `strict`):
    the scored records and the generate / witness+generate latencies (ms)."""
    indexes = {doc["db"]: doc for doc in grounding.build(backend, sorted({t["db"] for t in tasks}))}
    context = generate.Context(indexes, **options)
    predicted, both, alone = [], [], []
    for task in tasks:
        t0 = time.perf_counter()
        w = next(witness.run([dict(task)], indexes))
        t1 = time.perf_counter()
        p = next(generate.run([w], method, context))
        t2 = time.perf_counter()
        predicted.append(p)
        both.append((t2 - t0) * 1000)
        alone.append((t2 - t1) * 1000)
    scored = list(score.run(predicted, backend))
    for record, judged in zip(scored, score.run(predicted, backend, beta=0) if strict else ()):
        record["exc0"] = judged["score"]["exc"]
    alternatives = [(c, {**r, "prediction": c}) for r in scored for c in r.get("candidates", [])]
    for (candidate, _), judged in zip(alternatives, score.run([a for _, a in alternatives], backend)):
        candidate["exc"] = judged["score"]["exc"]  # each other reading, scored like the prediction
    return scored, alone, both


def confidence_of(record: dict) -> float:
    return (record.get("prediction") or {}).get("confidence", 0.0)


def reliability(pairs: list[tuple[float, int]], bins: int = BINS) -> list[tuple[float, float, int, float, float]]:
    """(low, high, n, mean confidence, accuracy) per equal-width confidence bin."""
    table = []
    for b in range(bins):
        low, high = b / bins, (b + 1) / bins
        inside = [(c, y) for c, y in pairs if low <= c < high or b == bins - 1 and c == 1.0]
        if inside:
            table.append((low, high, len(inside), sum(c for c, _ in inside) / len(inside),
                          sum(y for _, y in inside) / len(inside)))
    return table


def ece(pairs: list[tuple[float, int]], bins: int = BINS) -> float:
    """Expected calibration error: the count-weighted gap between confidence and accuracy per bin."""
    return sum(n * abs(mean - acc) for _, _, n, mean, acc in reliability(pairs, bins)) / max(1, len(pairs))


def rate(records: list[dict], key: str = "exc") -> float:
    return sum(r["score"]["exc"] if key == "exc" else r[key] for r in records) / len(records) if records else 0.0


def report(name: str, scored: list[dict], alone: list, both: list) -> None:
    n = len(scored)
    outcomes = collections.Counter(s["score"]["outcome"] for s in scored)
    print(f"{name}: n={n}  EXC beta=2 {rate(scored):.1%}  beta=0 {rate(scored, 'exc0'):.1%}  "
          f"outcomes={dict(sorted(outcomes.items()))}")
    print(f"  latency generate p50={statistics.median(alone):.2f} ms  p95={_p95(alone):.2f} ms;"
          f"  witness+generate p50={statistics.median(both):.2f} ms  p95={_p95(both):.2f} ms")
    phrasings = collections.defaultdict(list)
    for s in scored:
        phrasings[s.get("labels", {}).get("paraphrase")].append(s)
    if len(phrasings) > 1:
        print("  phrasing     n   EXC b=2   EXC b=0")
        for k in sorted(phrasings):
            print(f"  {k:>8} {len(phrasings[k]):>5}   {rate(phrasings[k]):6.1%}    {rate(phrasings[k], 'exc0'):6.1%}")
        others = [rate(phrasings[k]) for k in sorted(phrasings) if k != 1]
        print(f"  phrasing 1 {rate(phrasings[1]):.1%} vs mean of the others {statistics.mean(others):.1%} "
              f"(gap {rate(phrasings[1]) - statistics.mean(others):+.1%})")
    pairs = [(confidence_of(s), s["score"]["exc"]) for s in scored]
    print("  shipped confidence (in-sample where the shipped model was fitted on this split):")
    print_reliability(pairs)


def print_reliability(pairs: list[tuple[float, int]]) -> None:
    print("  confidence bin     n   mean conf   accuracy")
    for low, high, n, mean, acc in reliability(pairs):
        print(f"  [{low:.1f}, {high:.1f}) {n:>8}      {mean:.3f}      {acc:.3f}")
    kept = [y for c, y in pairs if c >= RECOMMENDED]
    precision = sum(kept) / len(kept) if kept else 0.0
    print(f"  ECE {ece(pairs):.3f};  at the recommended threshold {RECOMMENDED}: precision {precision:.1%}, "
          f"coverage {len(kept) / len(pairs):.1%} ({len(kept)} of {len(pairs)})")


def out_of_database(name: str, validated: list[tuple[dict, float]]) -> None:
    """The reliability, ECE, precision and coverage of out-of-database confidences."""
    pairs = [(c, r["score"]["exc"]) for r, c in validated]
    dbs = len({r["db"] for r, _ in validated})
    print(f"  out-of-database confidence ({name}; {dbs} databases, each scored by a model fitted without it):")
    print_reliability(pairs)


def abstentions(scored: list[dict]) -> None:
    """What `nlq ask` abstains on by default (a constraint left out, or no prediction) and the rest."""
    left_out = [s for s in scored if (s.get("prediction") or {}).get("unresolved")]
    failed = [s for s in scored if not s.get("prediction")]
    answered = [s for s in scored if s.get("prediction") and not s["prediction"].get("unresolved")]
    kinds = collections.Counter(u["kind"] for s in left_out for u in {u["kind"]: u for u in
                                                                        s["prediction"]["unresolved"]}.values())
    print(f"  abstained {len(left_out) + len(failed)} of {len(scored)} ({(len(left_out) + len(failed)) / len(scored):.1%}):"
          f" {len(left_out)} left a constraint out (by kind {dict(sorted(kinds.items()))}; they would have been"
          f" right {rate(left_out):.1%}), {len(failed)} without a prediction;"
          f" EXC of the answers not abstained {rate(answered):.1%} (n={len(answered)})")
    for kind in sorted(kinds):
        these = [s for s in left_out if any(u["kind"] == kind for u in s["prediction"]["unresolved"])]
        print(f"    {kind:<11} {len(these):>5} answers (at least one such word), right {rate(these):.1%}")
    high = [s for s in left_out if confidence_of(s) >= RECOMMENDED]
    print(f"  answers leaving a constraint out at or above {RECOMMENDED}: {len(high)} (must be 0)")


def by_database(scored: list[dict]) -> None:
    """EXC per database (beta 2), the answers not abstained, and the abstention rate."""
    groups = collections.defaultdict(list)
    for s in scored:
        groups[s["db"]].append(s)
    print("  database                          n   EXC b=2   abstained   EXC of the answers not abstained")
    for db in sorted(groups):
        rs = groups[db]
        kept = [s for s in rs if s.get("prediction") and not s["prediction"].get("unresolved")]
        print(f"  {db:<30} {len(rs):>4}    {rate(rs):6.1%}     {1 - len(kept) / len(rs):6.1%}     "
              f"{rate(kept):6.1%} (n={len(kept)})")


def repair_gain(backend, tasks: list[dict], k: int = 3) -> None:
    """EXC of `rules` alone, of `rules | repair` and of `rules --candidates k | repair` (LLM-free)."""
    from nlq import repair

    scored, _, _ = predict(backend, tasks, candidates=k)
    others = [(c["confidence"], c["exc"]) for r in scored for c in r.get("candidates", []) if "exc" in c]
    if others:
        print(f"  candidates (K={k}): {len(others)} other readings, right {sum(y for _, y in others) / len(others):.1%}; "
              f"ECE of their confidence {ece(others):.3f}; right where the prediction is wrong: "
              f"{sum(not r['score']['exc'] and any(c.get('exc') for c in r.get('candidates', [])) for r in scored)}"
              f" of {len(scored)} records")
    indexes = {doc["db"]: doc for doc in grounding.build(backend, sorted({t["db"] for t in tasks}))}
    plain = [{key: v for key, v in r.items() if key not in ("score", "exc0")} for r in scored]
    for r in plain:
        r["candidates"] = [{key: c[key] for key in ("collection", "pipeline", "confidence", "reading", "method")}
                           for c in r.get("candidates", [])]
    alone = [{key: v for key, v in r.items() if key != "candidates"} for r in plain]
    with_alone = list(score.run(repair.run(alone, backend, indexes), backend))
    with_candidates = list(score.run(repair.run(plain, backend, indexes), backend))
    changed = sum(r["prediction"] is not None and r["prediction"].get("pipeline") != p["prediction"]["pipeline"]
                  for r, p in zip(with_candidates, scored) if p.get("prediction"))
    print(f"  repair (LLM-free): rules {rate(scored):.1%}; rules | repair {rate(with_alone):.1%}; "
          f"rules --candidates {k} | repair {rate(with_candidates):.1%} ({changed} answers changed)")


def _p95(values: list[float]) -> float:
    return sorted(values)[int(0.95 * (len(values) - 1))]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.bench_rules", description=__doc__.splitlines()[0])
    parser.add_argument("--split", action="append", choices=[*SPLITS, "fixtures"],
                        help="a split to run (repeatable; default: every split present and the fixtures)")
    parser.add_argument("--no-repair", action="store_true", help="skip the candidates and repair figures (slow)")
    parser.add_argument("--by-db", action="store_true", help="EXC and abstentions per database")
    args = parser.parse_args(argv or [])
    wanted = args.split or [*SPLITS, "fixtures"]
    runs = {}
    for name in wanted:
        if name == "fixtures":
            continue
        if not present(name):
            print(f"TEND v1 {name}: {SPLITS[name][0]} absent, skipped")
            continue
        tasks = split_tasks(name)
        scored, alone, both = predict(backend_of(name), tasks)
        runs[name] = scored
        report(f"TEND v1 {name} ({len(tasks)} tasks: every phrasing)", scored, alone, both)
        abstentions(scored)
        if args.by_db:
            by_database(scored)
    if runs:
        from tests.bench import calibrate_rules

        pooled = [{**r, "split": name} for name, scored in runs.items() for r in scored]
        validated = calibrate_rules.cross_validated(pooled)
        together = " + ".join(runs)
        for name in runs:
            out_of_database(f"{calibrate_rules.FOLDS}-fold by database over {together}, here {name}",
                            [(r, c) for r, c in validated if r["split"] == name])
        if not args.no_repair:
            for name in runs:
                print(f"TEND v1 {name}, candidates and repair:")
                repair_gain(backend_of(name), split_tasks(name))
    if "fixtures" in wanted:
        tasks = fixture_tasks()
        if tasks:
            scored, alone, both = predict(EmbeddedBackend(WORLDS), tasks)
            report(f"fixtures ({len(tasks)} tasks)", scored, alone, both)
            abstentions(scored)
            if not args.no_repair:
                repair_gain(EmbeddedBackend(WORLDS), tasks)


if __name__ == "__main__":
    import sys

    main(sys.argv[1:])
