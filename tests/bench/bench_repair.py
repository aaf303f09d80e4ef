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

First, on the shipped fixtures, the SAG loop (`generate --method sag`, k=3, R=6) against the
scripted fake HTTP server: a model whose first answer to each task is a mutant of its gold (one
mistake of one class, the classes taken in turn) and which answers with the gold once it is shown
a repair turn, then a model that never fixes its mistake (the cost ceiling: every round used). It
measures the loop's mechanics, not a model: rounds per attempt (1 when the gate and the execution
feedback miss the mistake), model calls per task, EXC after the loop, and milliseconds per task.
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict

from nlq import io, repair, score
from tests.conftest import SHARED
from tests.golds import tend_v1_golds

RECORDED = SHARED / "recorded" / "kimi-k3.tend-v1.jsonl"


def _exc(records, backend) -> list[int]:
    return [r["score"]["exc"] for r in score.run(records, backend)]


def scripted_loop(fixes: bool = True) -> None:
    from nlq import generate
    from nlq.llm import ChatClient, ModelConfig
    from tests.fakellm import FakeLLM, reply
    from tests.gate_mutants import CLASSES, mutants
    from tests.golds import fixture_golds

    corpus = fixture_golds()
    first: dict[str, tuple[str, dict]] = {}      # question -> (class, first answer)
    for n, task in enumerate(corpus.tasks):
        found = {m.kind: m for m in mutants(task, corpus.indexes[task["db"]])}
        kinds = [CLASSES[(n + i) % len(CLASSES)] for i in range(len(CLASSES))]
        kind = next((k for k in kinds if k in found), None)
        answer = found[kind].query if kind else task["query"]
        first[task["question"]] = (kind or "none", {"collection": answer.collection, "pipeline": answer.pipeline})
    gold = {t["question"]: {"collection": t["query"].collection, "pipeline": t["query"].pipeline}
            for t in corpus.tasks}

    def respond(body):
        user = body["messages"][1]["content"]
        question = next(q for q in gold if user.endswith(f"Question: {q}"))
        repaired = fixes and any("It has these problems" in m["content"] for m in body["messages"][2:])
        return reply(io.dumps(gold[question] if repaired else first[question][1]).decode())

    records = [{k: v for k, v in t.items() if k != "query"} for t in corpus.tasks]
    with FakeLLM() as fake:
        fake.responder = respond
        model = ChatClient(ModelConfig(model="scripted", base_url=fake.url, concurrency=2))
        context = generate.Context(corpus.indexes, backend=corpus.backend, model=model)
        started = time.perf_counter()
        out = list(generate.run(iter(records), "sag", context))
        elapsed = time.perf_counter() - started
        model.close()
    scored = list(score.run(out, corpus.backend))
    by_kind: dict = defaultdict(list)
    for record, result in zip(records, scored):
        by_kind[first[record["question"]][0]].append(result)
    n = len(scored)
    after = "the gold after feedback" if fixes else "the same mutant after every feedback"
    print(f"scripted SAG loop on the {n} fixture tasks (k=3, R=6; first answer a gold mutant, {after}): "
          f"{1000 * elapsed / n:.0f} ms per task, {len(fake.requests)} requests")
    print(f"  {'first answer':<20} {'tasks':>5} {'rounds/attempt':>15} {'calls/task':>11} {'EXC':>6}  rounds per attempt (answered records)")
    for kind in (*CLASSES, "none"):
        group = by_kind.get(kind) or []
        if not group:
            continue
        rounds = [r for g in group if g.get("repair") for r in g["repair"]["rounds"]]
        calls = [g["prediction"]["usage"]["model_calls"] if g.get("prediction") else g["failure"]["usage"]["model_calls"]
                 for g in group]
        exc = sum(g["score"]["exc"] for g in group)
        hist = ", ".join(f"{k}: {v}" for k, v in sorted(Counter(rounds).items()))
        print(f"  {kind:<20} {len(group):>5} {sum(rounds) / max(len(rounds), 1):>15.2f} "
              f"{sum(calls) / len(calls):>11.2f} {100 * exc / len(group):>5.1f}%  {{{hist}}}")


def main() -> None:
    scripted_loop()
    scripted_loop(fixes=False)
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
