"""The cascade on recorded model outputs: EXC and model calls saved as the threshold varies.

For every TEND v1 task (every phrasing) that a frontier model answered in
../shared/recorded/kimi-k3.tend-v1.jsonl, the cascade keeps rules' answer
when its confidence is at least T and the gate admits it, and otherwise takes
the recorded model prediction as the fallback's answer (no endpoint needed:
the recording stands in for the call). Prints, per T: EXC of the cascade,
the share of questions rules answered (= model calls saved), and the
precision of rules on the questions it kept — beside rules alone and the
model alone.

Then the same end to end (REPLAYED thresholds): `generate --method cascade
--fallback nlq-only` through `generate.run`, the fallback's model being the
scripted fake server (tests/fakellm.py) on 127.0.0.1 replaying each
question's recorded reply. That measures the real routing, decoding and
metering: EXC, and the model calls the predictions' `usage` counts.
"""

from __future__ import annotations

import orjson

from nlq import gate, score
from nlq.backends import EmbeddedBackend
from tests.bench import bench_rules

RECORDED = bench_rules.ROOT.parent / "shared" / "recorded" / "kimi-k3.tend-v1.jsonl"
THRESHOLDS = (0.0, 0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 1.01)
REPLAYED = (0.6, 0.8, 0.9)


def curve(rules: list[dict], model_exc: dict[str, int], indexes: dict) -> list[tuple[float, float, float, float, int]]:
    """(T, cascade EXC, share answered by rules, rules precision on it, n) per threshold."""
    admitted = {}
    for r in rules:
        p = r.get("prediction")
        admitted[r["id"]] = p is not None and not gate.run(
            {"collection": p["collection"], "pipeline": p["pipeline"]}, indexes[r["db"]], r["question"])
    rows = []
    for t in THRESHOLDS:
        kept = [r for r in rules if admitted[r["id"]] and r["prediction"]["confidence"] >= t]
        ids = {r["id"] for r in kept}
        exc = sum(r["score"]["exc"] for r in kept) + sum(model_exc[r["id"]] for r in rules if r["id"] not in ids)
        precision = sum(r["score"]["exc"] for r in kept) / len(kept) if kept else float("nan")
        rows.append((t, exc / len(rules), len(kept) / len(rules), precision, len(rules)))
    return rows


def replayed(backend, tasks: list[dict], recorded: list[dict], indexes: dict) -> None:
    """The cascade end to end, its fallback model replaying the recorded replies (see the module docstring)."""
    from nlq import generate
    from nlq.llm import ChatClient, ModelConfig
    from tests.fakellm import FakeLLM, reply

    answers = {r["question"]: (r.get("prediction") or {}).get("mql") or "" for r in recorded}
    by_length = sorted(answers, key=len, reverse=True)  # the longest recorded question the prompt holds

    def respond(body: dict) -> dict:
        asked = next(m["content"] for m in reversed(body["messages"]) if m["role"] == "user")
        return reply(next((answers[q] for q in by_length if q in asked), ""))

    known = {r["id"] for r in recorded}
    tasks = [t for t in tasks if t["id"] in known]
    print("  end to end (generate --method cascade --fallback nlq-only, the fake server replaying the recording):")
    print("  threshold   cascade EXC   answered by rules   model calls (usage)")
    with FakeLLM() as fake:
        fake.responder = respond
        client = ChatClient(ModelConfig(model="kimi-k3-replay", base_url=fake.url, api_key="replay", cache=None,
                                        max_retries=0))
        for t in REPLAYED:
            context = generate.Context(indexes, model=client, fallback="nlq-only", threshold=t)
            out = list(score.run(generate.run([dict(task) for task in tasks], "cascade", context), backend))
            paths = [((r.get("prediction") or {}).get("cascade") or {}).get("path") for r in out]
            calls = sum(((r.get("prediction") or r.get("failure") or {}).get("usage") or {}).get("model_calls", 0)
                        for r in out)
            print(f"  {t:>9.2f}   {bench_rules.rate(out):>10.1%}   {paths.count('rules') / len(out):>17.1%}   "
                  f"{calls:>8} of {len(out)}")


def main() -> None:
    if not (bench_rules.TEND_V1.exists() and RECORDED.exists()):
        print("cascade: ../shared/tend-v1 or ../shared/recorded absent, skipped")
        return
    backend = EmbeddedBackend(bench_rules.TEND_V1 / "mongodb_data")
    tasks = bench_rules.tend_v1_tasks()
    known = {t["id"] for t in tasks}
    recorded = [orjson.loads(line) for line in RECORDED.read_bytes().splitlines() if line.strip()]
    recorded = [r for r in recorded if r["id"] in known]
    model_exc = {s["id"]: s["score"]["exc"] for s in score.run(recorded, backend)}
    rules, _, _ = bench_rules.predict(backend, tasks)
    from nlq import index as grounding
    indexes = {d["db"]: d for d in grounding.build(backend, sorted({t["db"] for t in tasks}))}
    rules = [r for r in rules if r["id"] in model_exc]
    print(f"TEND v1, every phrasing with a recorded model answer: n={len(rules)}; "
          f"rules alone EXC {bench_rules.rate(rules):.1%}, model alone (Kimi K3, recorded) "
          f"{sum(model_exc[r['id']] for r in rules) / len(rules):.1%}")
    print("  threshold   cascade EXC   answered by rules (calls saved)   rules precision there")
    for t, exc, share, precision, _ in curve(rules, model_exc, indexes):
        print(f"  {t:>9.2f}   {exc:>10.1%}   {share:>31.1%}   {precision:>21.1%}")
    replayed(backend, tasks, recorded, indexes)


if __name__ == "__main__":
    main()
