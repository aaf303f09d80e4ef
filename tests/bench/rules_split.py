"""`rules` EXC per database on one TEND v1 split: what a change wins and loses, database by database.

    python -m tests.bench.rules_split --split shared|train-a [--out run.jsonl] [--phrasing 1,3]
    python -m tests.bench.rules_split --compare before.jsonl after.jsonl

The first form generates with `rules` for every phrasing of every record of
the split, scores at beta = 2 and beta = 0 (with --against an earlier run, only
the predictions that differ from it are scored again), prints EXC overall, per phrasing
and per database, and (with --out) writes one line per task (`id`, `db`,
`phrasing`, `exc`, `exc0`, `question`, `pipeline`) outside the project. The
second form reads two such files and lists, per database, the EXC before and
after and which databases won or lost — how a rule is judged (by how many
databases it helps), never by a single question.
"""

from __future__ import annotations

import argparse
import collections
from pathlib import Path

import orjson

from nlq import generate, importers, score, witness
from nlq import index as grounding
from nlq.backends import EmbeddedBackend

ROOT = Path(__file__).resolve().parents[2]
# ../shared beside the checkout, or two levels up from a git worktree kept under a folder of worktrees
TEND_V1 = next((p / "shared" / "tend-v1" for p in (ROOT.parent, ROOT.parent.parent) if (p / "shared").exists()),
               ROOT.parent / "shared" / "tend-v1")
SPLITS = {"shared": (TEND_V1 / "test.jsonl", TEND_V1 / "mongodb_data"),
          "train-a": (TEND_V1 / "train-a" / "train-a.jsonl", TEND_V1 / "train-a" / "mongodb_data")}


def run(split: str, phrasings: set[int] | None = None, dbs: set[str] | None = None,
        against: dict[str, dict] | None = None) -> list[dict]:
    records, data = SPLITS[split]
    tasks = [t for t in importers.run(str(records), "tend-v1", strict=True, paraphrases=True)
             if (not phrasings or t.get("labels", {}).get("paraphrase") in phrasings) and (not dbs or t["db"] in dbs)]
    backend = EmbeddedBackend(data)
    indexes = {doc["db"]: doc for doc in grounding.build(backend, sorted({t["db"] for t in tasks}))}
    context = generate.Context(indexes)
    predicted = [next(generate.run([next(witness.run([dict(t)], indexes))], "rules", context)) for t in tasks]
    if against:  # score only what changed: an unchanged prediction keeps the earlier run's scores
        kept = [p for p in predicted if _same(p, against.get(p["id"]))]
        predicted = [p for p in predicted if not _same(p, against.get(p["id"]))]
        rows = [{**against[p["id"]], "confidence": (p.get("prediction") or {}).get("confidence"),
                 "unresolved": _left_out(p.get("prediction") or {})} for p in kept]
    else:
        rows = []
    for record, strict in zip(score.run(predicted, backend), score.run(predicted, backend, beta=0)):
        prediction = record.get("prediction") or {}
        rows.append({"id": record["id"], "db": record["db"], "phrasing": record.get("labels", {}).get("paraphrase"),
                     "exc": record["score"]["exc"], "exc0": strict["score"]["exc"], "question": record["question"],
                     "outcome": record["score"].get("outcome"),
                     "gold_rows": record["score"].get("gold_rows"), "pred_rows": record["score"].get("pred_rows"), "collection": prediction.get("collection"),
                     "pipeline": prediction.get("pipeline"), "confidence": prediction.get("confidence"),
                     "unresolved": _left_out(prediction)})
    return rows


def _left_out(prediction: dict) -> list[str]:
    """The kinds of the words a reading left out (`prediction.unresolved`), in question order."""
    return [u["kind"] for u in prediction.get("unresolved") or ()]


def _same(record: dict, earlier: dict | None) -> bool:
    prediction = record.get("prediction") or {}
    return earlier is not None and earlier.get("collection") == prediction.get("collection") \
        and earlier.get("pipeline") == prediction.get("pipeline")


def per_db(rows: list[dict]) -> dict[str, tuple[int, int]]:
    out = collections.defaultdict(lambda: [0, 0])
    for r in rows:
        out[r["db"]][0] += r["exc"]
        out[r["db"]][1] += 1
    return {db: tuple(v) for db, v in sorted(out.items())}


def summary(rows: list[dict]) -> None:
    n = len(rows)
    print(f"n={n}  EXC beta=2 {sum(r['exc'] for r in rows) / n:.1%}  beta=0 {sum(r['exc0'] for r in rows) / n:.1%}")
    phrasings = collections.defaultdict(list)
    for r in rows:
        phrasings[r["phrasing"]].append(r)
    for k in sorted(phrasings, key=str):
        p = phrasings[k]
        print(f"  phrasing {k}: n={len(p)}  beta=2 {sum(r['exc'] for r in p) / len(p):.1%}  "
              f"beta=0 {sum(r['exc0'] for r in p) / len(p):.1%}")
    for db, (right, total) in per_db(rows).items():
        print(f"  {db:<32} {right:>4}/{total:<4} {right / total:6.1%}")


def compare(before: list[dict], after: list[dict]) -> None:
    b, a = per_db(before), per_db(after)
    won, lost = [], []
    for db in sorted(set(b) | set(a)):
        rb, ra = b.get(db, (0, 0))[0], a.get(db, (0, 0))[0]
        if ra > rb:
            won.append(f"{db} +{ra - rb}")
        elif ra < rb:
            lost.append(f"{db} {ra - rb}")
    nb, na = sum(r["exc"] for r in before), sum(r["exc"] for r in after)
    print(f"EXC {nb}/{len(before)} ({nb / len(before):.1%}) -> {na}/{len(after)} ({na / len(after):.1%}); "
          f"{len(won)} dbs won, {len(lost)} lost")
    print("  won:  " + ", ".join(won))
    print("  lost: " + ", ".join(lost))
    keyed = {r["id"]: r for r in before}
    flips = collections.Counter((keyed[r["id"]]["exc"], r["exc"]) for r in after if r["id"] in keyed)
    print(f"  tasks right->wrong {flips[(1, 0)]}, wrong->right {flips[(0, 1)]}")


def _read(path: str) -> list[dict]:
    return [orjson.loads(line) for line in Path(path).read_bytes().splitlines() if line.strip()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=sorted(SPLITS), default="shared")
    parser.add_argument("--phrasing", default="", help="comma-separated phrasing numbers (default: all five)")
    parser.add_argument("--db", default="", help="comma-separated databases (default: all)")
    parser.add_argument("--out", help="write one JSON line per task here")
    parser.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"))
    parser.add_argument("--against", help="an earlier --out file: score only the predictions that changed")
    args = parser.parse_args()
    if args.compare:
        compare(*map(_read, args.compare))
        return
    if not SPLITS[args.split][0].exists():
        print(f"{args.split}: ../shared/tend-v1 absent, skipped")
        return
    phrasings = {int(p) for p in args.phrasing.split(",") if p}
    against = {r["id"]: r for r in _read(args.against)} if args.against else None
    rows = run(args.split, phrasings, {d for d in args.db.split(",") if d}, against)
    summary(rows)
    if args.out:
        Path(args.out).write_bytes(b"".join(orjson.dumps(r, option=orjson.OPT_NON_STR_KEYS) + b"\n" for r in rows))


if __name__ == "__main__":
    main()
