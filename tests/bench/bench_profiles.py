"""Benchmark: the `paper` and `nlq` profiles (nlq.profiles) on the gold corpora, model-free.

Per corpus (the fixture tasks; when ../shared is present, the TEND v1 split and train-a) and
profile, every database indexed and carded as that profile does:

- card recall: the share of the stored field paths the gold pipelines read (nlq.mql.fields) that
  the card shows (a `<*>` stands for any key, array markers are invisible), pooled over golds;
- card size: path lines and tokens (characters / 4, the usual estimate) per database, mean;
- witness recall: the share of the golds' compared literals (strings and numbers a `$match`
  compares with a stored field) that a witness of the question binds to that field (a stored
  value there, or a key of a map on the way); noise: the share of reported witnesses whose
  stored forms no gold literal of the question uses;
- gate: golds flagged (false positives: a gold is right by construction unless it is a defect,
  see tests/test_gate_golds.py) and the recall on mutants of the accepted golds per class
  (tests/gate_mutants.py), with each profile's checks (paper: the question-driven value check).

Per database, wins/losses of paper against nlq on card recall. These figures decide nlq's
defaults (docs/REPRODUCTION.md).
"""

from __future__ import annotations

import re
import statistics
from collections import defaultdict

from nlq import card, gate, importers, io, profiles, witness
from nlq import index as grounding
from nlq.backends import EmbeddedBackend
from nlq.mql import scope
from nlq.mql.fields import read_paths
from nlq.mql.mongosh import parse_query
from nlq.text import normalize
from tests.conftest import FIXTURES, TEND_V1, WORLDS
from tests.gate_mutants import CLASSES, EXPECTED, mutants

TRAIN_A = TEND_V1 / "train-a"
CARD_CAP = 400


def corpora():
    """(name, backend, tasks) of each corpus that is present."""
    tasks = [r for path in sorted((FIXTURES / "tasks").glob("*.jsonl")) for r in io.read_records(str(path))]
    yield "fixtures", EmbeddedBackend(WORLDS), tasks
    for name, root, split in (("tend-v1", TEND_V1, TEND_V1 / "test.jsonl"),
                              ("train-a", TRAIN_A, TRAIN_A / "train-a.jsonl")):
        if not split.exists():
            print(f"bench_profiles: {name} skipped ({split} is not present)")
            continue
        yield name, EmbeddedBackend(root / "mongodb_data"), list(importers.run(str(split), "tend-v1"))


def build_indexes(backend, dbs, values: dict) -> dict:
    return {doc["db"]: doc for doc in grounding.build(
        backend, dbs, max_depth=values["max_depth"], sampling=values["sampling"],
        array_elements=values["array_elements"], map_rule=values["map_rule"], collapse_rule=values["collapse_rule"])}


_LINE = re.compile(r"^  (\S.*?): ")


def card_paths(text: str, collections) -> dict[str, list[list[str]]]:
    """{collection: [path segments]} of the path lines a card shows."""
    out: dict[str, list[list[str]]] = defaultdict(list)
    current = None
    for line in text.splitlines():
        if not line.startswith(" ") and line.endswith(":") and line[:-1] in collections:
            current = line[:-1]
            continue
        m = _LINE.match(line)
        if current is not None and m:
            out[current].append(m.group(1).replace("[]", "").split("."))
    return out


def on_card(path: str, shown: list[list[str]]) -> bool:
    steps = [s for s in path.split(".") if not s.isdigit()]
    return any(len(p) == len(steps) and all(a == "<*>" or a == b for a, b in zip(p, steps)) for p in shown)


def gold_literals(query, ix) -> list[tuple[str, object]]:
    """(lattice mql path, literal) of each string or number a gold compares with a stored field."""
    walked = scope.walk(query, gate.prepare(ix).schema)
    out = []
    for comp in walked.comparisons:
        v = comp.value
        if isinstance(v, bool) or not isinstance(v, (str, int, float)) or comp.target is None or comp.target.open:
            continue
        for node in comp.target.nodes:
            out.append((node.collection, grounding.mql_path(node.path), v))
    return out


def literal_key(v) -> str:
    return normalize(v) if isinstance(v, str) else normalize(str(int(v) if float(v).is_integer() else v))


def witnessed(lit: tuple, found: list[dict]) -> bool:
    coll, path, value = lit
    key = literal_key(value)
    for w in found:
        for m in w.get("matches") or []:
            if m.get("collection") != coll or "part" in m:
                continue
            stored = m.get("stored")
            if not isinstance(stored, (str, int, float)) or isinstance(stored, bool) or literal_key(stored) != key:
                continue
            where = grounding.mql_path(m["path"])
            if where == path or (m.get("kind") == "key" and _map_prefix(where, path)):
                return True
    return False


def _map_prefix(map_path: str, path: str) -> bool:
    a, b = map_path.split("."), path.split(".")
    return len(a) < len(b) and all(x == "<*>" or x == y for x, y in zip(a, b))


def gate_checks(values: dict):
    def run(query, ix, question, witnesses):
        found = gate.check_path(query, ix, question) + gate.check_limit(query, ix, question)
        if values["value_check"] == "witnesses":
            found += gate.check_witnessed(query, ix, question, witnesses)
        else:
            found += gate.check_value(query, ix, question)
        return found
    return run


INDEX_ELEMENTS = ("sampling", "max_depth", "array_elements", "map_rule", "collapse_rule")
# the elements measured one at a time (nlq's profile with that one element set to the paper's)
FLIPPED = INDEX_ELEMENTS + ("card_cap", "map_line", "underscore_paths", "literals", "hard_max", "value_check")
_INDEXES: dict = {}


def measure(name: str, backend, tasks: list, values: dict) -> dict:
    dbs = sorted({t["db"] for t in tasks})
    key = (name,) + tuple(values[k] for k in INDEX_ELEMENTS)
    if key not in _INDEXES:
        _INDEXES[key] = build_indexes(backend, dbs, values)
    indexes = _INDEXES[key]
    cards = {db: card.build(ix, max_entries=CARD_CAP, card_cap=values["card_cap"], map_line=values["map_line"],
                            underscore_paths=values["underscore_paths"]) for db, ix in indexes.items()}
    shown = {db: card_paths(c["card"], indexes[db]["collections"]) for db, c in cards.items()}
    run_gate = gate_checks(values)
    hits = defaultdict(lambda: [0, 0])
    lits = [0, 0]
    reported = used = 0
    flagged = []
    caught = {k: [0, 0] for k in CLASSES}
    for task in tasks:
        query = parse_query(task.get("gold") or task["gold_mql"])
        ix = indexes[task["db"]]
        for coll, path in read_paths(query.collection, query.pipeline):
            if path == "_id":
                continue
            hits[task["db"]][1] += 1
            hits[task["db"]][0] += on_card(path, shown[task["db"]].get(coll, []))
        found = witness.find(task["question"], ix, hard_max=values["hard_max"], literals=values["literals"])
        golds = gold_literals(query, ix)
        lits[1] += len(golds)
        lits[0] += sum(witnessed(g, found) for g in golds)
        keys = {literal_key(v) for _, _, v in golds}
        for w in found:
            if not w.get("matches"):
                continue
            reported += 1
            used += any(isinstance(m.get("stored"), (str, int, float)) and not isinstance(m.get("stored"), bool)
                        and literal_key(m["stored"]) in keys for m in w["matches"])
        violations = run_gate(query, ix, task["question"], found)
        if violations:
            flagged.append(f"{task['id']}: {violations[0].message}")
            continue
        for m in mutants({**task, "query": query}, ix):
            entry = caught[m.kind]
            entry[1] += 1
            entry[0] += EXPECTED[m.kind] in {v.check for v in run_gate(m.query, ix, task["question"], found)}
    lines = [c["paths"] for c in cards.values()]
    tokens = [len(c["card"]) / 4 for c in cards.values()]
    return {"hits": hits, "lines": lines, "tokens": tokens, "lits": lits, "reported": reported, "used": used,
            "flagged": flagged, "caught": caught, "tasks": len(tasks)}


def pct(a: float, b: float) -> str:
    return f"{100 * a / b:.1f}%" if b else "n/a"


def recall_of(r: dict) -> tuple[int, int]:
    return sum(h[0] for h in r["hits"].values()), sum(h[1] for h in r["hits"].values())


def main() -> None:
    for name, backend, tasks in corpora():
        _INDEXES.clear()
        results = {p: measure(name, backend, tasks, profiles.resolve(p)) for p in ("nlq", "paper")}
        print(f"{name}: {len(tasks)} golds, {len(results['nlq']['hits'])} databases")
        for p, r in results.items():
            got = sum(h[0] for h in r["hits"].values())
            total = sum(h[1] for h in r["hits"].values())
            mutants_line = ", ".join(f"{k} {pct(*r['caught'][k])}" for k in CLASSES if r["caught"][k][1])
            print(f"  {p:<6} card recall {pct(got, total)} ({got}/{total} gold paths); card "
                  f"{statistics.mean(r['lines']):.0f} lines (max {max(r['lines'])}), "
                  f"{statistics.mean(r['tokens']):.0f} tokens (max {max(r['tokens']):.0f}) per db")
            print(f"         witness recall {pct(*r['lits'])} ({r['lits'][0]}/{r['lits'][1]} gold literals); "
                  f"noise {pct(r['reported'] - r['used'], r['reported'])} ({r['reported'] - r['used']}/"
                  f"{r['reported']} witnesses unused by the gold)")
            print(f"         gate flags {len(r['flagged'])}/{r['tasks']} golds; mutant recall: {mutants_line}")
            for line in r["flagged"][:5]:
                print(f"           flagged {line}")
        wins = losses = ties = 0
        for db, (a, n) in results["paper"]["hits"].items():
            b, m = results["nlq"]["hits"][db]
            x, y = (a / n if n else 0), (b / m if m else 0)
            wins += x > y
            losses += x < y
            ties += x == y
        print(f"  card recall per database, paper vs nlq: {wins} better, {losses} worse, {ties} equal")
        print("  one element at a time (nlq with the element set to the paper's): card recall, lines, "
              "witness recall, noise, gold flags, value-mutant recall")
        for element in FLIPPED:
            r = measure(name, backend, tasks, profiles.resolve("nlq", {element: profiles.ELEMENTS[element].paper}))
            got, total = recall_of(r)
            value_mutants = [sum(r["caught"][k][i] for k in ("miscased_literal", "wrong_path_literal")) for i in (0, 1)]
            print(f"    {element:<17} {pct(got, total):>6} {statistics.mean(r['lines']):5.0f}  "
                  f"{pct(*r['lits']):>6} {pct(r['reported'] - r['used'], r['reported']):>6}  "
                  f"{len(r['flagged']):>3}  {pct(*value_mutants):>6}")


if __name__ == "__main__":
    main()
