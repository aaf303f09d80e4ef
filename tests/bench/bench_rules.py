"""`rules` generation: latency, EXC per phrasing at beta 2 and 0, and how honest its confidence is.

Prints, for each corpus present (TEND v1 with every phrasing of each record,
the fixtures): p50/p95 latency of `generate` (witnesses precomputed) and of
witness+generate; EXC at beta = 2 (the scorer's default) and at beta = 0 (no
surplus value at all), overall and per phrasing (`labels.paraphrase`); the
reliability table of `confidence` (bins vs accuracy, counts), the expected
calibration error (ECE), and the precision and coverage at the recommended
threshold (RECOMMENDED). For TEND v1 also a by-database split: the
calibration is refitted on half of the databases (`calibrate_rules.fit`) and
its ECE measured on the other half — what to expect on unseen databases.
Last, the candidates (`--candidates 3`): how often they are right, the ECE
of their own calibrated confidence, how many records they could rescue; and
EXC of `rules | repair` and `rules --candidates 3 | repair` (LLM-free gate,
execution and a confidence-weighted result vote) beside rules alone.
"""

from __future__ import annotations

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


def tend_v1_tasks(paraphrases: bool = True) -> list[dict]:
    return list(importers.run(str(TEND_V1 / "test.jsonl"), "tend-v1", strict=True, paraphrases=paraphrases))


def fixture_tasks() -> list[dict]:
    tasks = []
    for path in sorted(TASKS.glob("*.jsonl")):
        tasks += [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]
    return tasks


def predict(backend, tasks: list[dict], method: str = "rules", **options) -> tuple[list[dict], list, list]:
    """Witness, generate and score every task (beta 2, plus `exc0` at beta 0):
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
    for record, strict in zip(scored, score.run(predicted, backend, beta=0)):
        record["exc0"] = strict["score"]["exc"]
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
    print_reliability(pairs)


def print_reliability(pairs: list[tuple[float, int]]) -> None:
    print("  confidence bin     n   mean conf   accuracy")
    for low, high, n, mean, acc in reliability(pairs):
        print(f"  [{low:.1f}, {high:.1f}) {n:>8}      {mean:.3f}      {acc:.3f}")
    kept = [y for c, y in pairs if c >= RECOMMENDED]
    precision = sum(kept) / len(kept) if kept else 0.0
    print(f"  ECE {ece(pairs):.3f};  at the recommended threshold {RECOMMENDED}: precision {precision:.1%}, "
          f"coverage {len(kept) / len(pairs):.1%} ({len(kept)} of {len(pairs)})")


def by_database_split(scored: list[dict]) -> None:
    """Fit the calibration on every other database (sorted by name), measure ECE on the rest, and swap."""
    from tests.bench import calibrate_rules

    dbs = sorted({s["db"] for s in scored})
    halves = (set(dbs[0::2]), set(dbs[1::2]))
    for fit_on, held_out in (halves, halves[::-1]):
        model = calibrate_rules.fit([s for s in scored if s["db"] in fit_on])
        test = [s for s in scored if s["db"] in held_out]
        pairs = [(calibration.apply(model, calibrate_rules.features(s)), s["score"]["exc"]) for s in test]
        kept = [y for c, y in pairs if c >= RECOMMENDED]
        print(f"  split by db: fit on {len(fit_on)} dbs ({sum(s['db'] in fit_on for s in scored)} tasks), "
              f"held-out {len(held_out)} dbs ({len(test)} tasks): ECE {ece(pairs):.3f}, "
              f"precision at {RECOMMENDED} {sum(kept) / len(kept) if kept else 0.0:.1%}, "
              f"coverage {len(kept) / len(pairs):.1%} (n={len(kept)})")


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


def main() -> None:
    if TEND_V1.exists():
        tasks = tend_v1_tasks()
        scored, alone, both = predict(EmbeddedBackend(TEND_V1 / "mongodb_data"), tasks)
        report(f"TEND v1 ({len(tasks)} tasks: every phrasing)", scored, alone, both)
        by_database_split(scored)
        repair_gain(EmbeddedBackend(TEND_V1 / "mongodb_data"), tasks)
    else:
        print("TEND v1: ../shared/tend-v1 absent, skipped")
    tasks = fixture_tasks()
    if tasks:
        report(f"fixtures ({len(tasks)} tasks)", *predict(EmbeddedBackend(WORLDS), tasks))
        repair_gain(EmbeddedBackend(WORLDS), tasks)


if __name__ == "__main__":
    main()
