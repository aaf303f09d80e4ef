"""The embedded engine at TEND-native scale: `nlq index` of a 269k-document world, and six
engine workloads beside a hand-written Python loop computing the same result.

The world (11 databases, 32 collections, 269,177 documents, about 160 MB of
Extended JSON lines with nested arrays, dynamic maps, maps of maps, sparse and
polymorphic fields, ObjectId `_id`s and dates in some collections) is generated
deterministically into a temporary folder and removed afterwards; it is never
committed. Collection sizes follow the TEND-native release's per-collection
document counts.

Prints, each figure beside its target (never asserted):

- `nlq index --data WORLD` wall time, CPU time and peak RSS of the process (CPU < 3 s,
  < 400 MB), for the world as `<db>/<collection>.jsonl`, with half of its collections as
  single-array `<db>/<collection>.json` files, and with all of them so (only the sampled
  documents are converted and walked: 400 per collection, about 9,000 documents and 400,000
  values here; an array file is parsed, then dropped after its sample);
- each workload: nlq's time, the hand loop's time, the ratio (<= 10x, the
  `$sort`+`$limit` one <= 5x), and whether both results are equal;
- the CLI's import time (`nlq --help`) and `python -c "import nlq.score"`.

    python -m tests.bench scale
    python -m tests.bench.bench_scale engine     # only the engine workloads (or index, imports)
"""

from __future__ import annotations

import heapq
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import zlib
from collections import defaultdict
from pathlib import Path

import orjson

from nlq.mql.engine import aggregate

# (database, collection, documents): the TEND-native release's counts (european_football_2's
# four collections, absent from the release's schema audit, make up the 269,177 total).
COLLECTIONS = [
    ("california_schools", "school_profiles", 17686), ("california_schools", "district_rollups", 1428),
    ("california_schools", "county_equity_assessment_panels", 58),
    ("card_games", "card_print_dossiers", 56822), ("card_games", "set_release_ecosystems", 551),
    ("codebase_community", "community_threads", 42912), ("codebase_community", "user_reputation_profiles", 40325),
    ("codebase_community", "tag_topic_ecosystems", 1032),
    ("debit_card_specializing", "fuel_customer_spend_profiles", 32461),
    ("debit_card_specializing", "fuel_station_market_catalog", 5716),
    ("debit_card_specializing", "fuel_product_payment_timeline", 591),
    ("european_football_2", "match_ledgers", 25979), ("european_football_2", "player_profiles", 11060),
    ("european_football_2", "team_seasons", 288), ("european_football_2", "league_catalog", 99),
    ("financial", "account_ledgers", 4500), ("financial", "party_relationship_graphs", 4500),
    ("financial", "district_market_contexts", 77), ("financial", "counterparty_flow_profiles", 15),
    ("formula_1", "race_weekends_v2", 954), ("formula_1", "f1_actor_profiles", 1120),
    ("student_club", "club_event_plans_v2", 42), ("student_club", "club_member_accounts_v2", 33),
    ("superhero", "hero_dossiers", 750), ("superhero", "publisher_universes", 25),
    ("superhero", "ability_catalog", 173), ("superhero", "alignment_rosters", 4),
    ("thrombosis_prediction", "patient_clinical_profiles", 1238),
    ("thrombosis_prediction", "diagnosis_risk_panels", 103), ("thrombosis_prediction", "measurement_code_bags", 25),
    ("toxicology", "molecular_components", 18267), ("toxicology", "molecule_graphs", 343),
]

NLQ = [sys.executable, "-c", "from nlq.commands import cli; cli(prog_name='nlq')"]  # the `nlq` command
WORDS = ["alpha", "delta", "north", "river", "stone", "maple", "cobalt", "ember", "harbor", "summit",
         "quartz", "violet", "meadow", "falcon", "granite", "willow"]
CODES = ["HBA1C", "GLU", "LDL", "HDL", "TG", "CREA", "EGFR", "ALT", "AST", "TSH", "B12", "K2", "NA3"]
STATUS = ["active", "closed", "pending", "archived"]


def _doc(rng: random.Random, i: int, with_id: bool, with_dates: bool) -> dict:
    doc: dict = {}
    if with_id:  # ObjectIds whose order is not the file order
        doc["_id"] = {"$oid": f"{(i * 2654435761) % (1 << 32):08x}{zlib.crc32(str(i).encode()):08x}{i:08x}"}
    doc["code"] = f"K{i:07d}"
    doc["name"] = f"{rng.choice(WORDS)} {rng.choice(WORDS)} {i % 997}"
    doc["status"] = rng.choice(STATUS)
    doc["profile"] = {"region": rng.choice(WORDS), "tier": rng.randint(1, 5),
                      "contact": {"city": rng.choice(WORDS).title(), "zip": f"{rng.randint(1000, 99999)}"}}
    if with_dates:
        doc["opened"] = {"$date": f"{rng.randint(1990, 2023)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
                                  "T00:00:00Z"}
    doc["metrics_by_year"] = {str(y): {"value": round(rng.uniform(0, 1000), 2), "rank": rng.randint(1, 500)}
                              for y in sorted(rng.sample(range(1995, 2025), rng.randint(1, 4)))}
    doc["code_counts"] = {c: rng.randint(0, 40) for c in rng.sample(CODES, rng.randint(0, 4))}
    doc["items"] = [{"sku": f"S{rng.randrange(500):03d}", "qty": rng.randint(1, 9), "price": round(rng.random() * 90, 2),
                     "tags": rng.sample(WORDS, rng.randint(0, 3))}
                    for _ in range(rng.randint(0, 4))]
    doc["history"] = [{"year": rng.randint(1995, 2024), "event": rng.choice(STATUS), "delta": rng.randint(-50, 50)}
                      for _ in range(rng.randint(0, 3))]
    if rng.random() < 0.3:
        doc["notes"] = " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 8)))
    doc["detail"] = rng.choice([{"minutes": rng.randint(1, 90)}, {"ward": rng.choice(WORDS)}, "none", None])
    return doc


def write_world(root: Path, *, suffix: str = ".jsonl", seed: int = 0) -> tuple[int, int]:
    """Write the world under `root` as `<db>/<collection><suffix>` (suffix "mixed": every second
    collection a `.json` array, the others `.jsonl`); returns (documents, bytes).

    Every third collection carries ObjectId `_id`s, every second one dates; the rest
    is plain JSON, as TEND's own files are."""
    n_docs = n_bytes = 0
    for k, (db, coll, count) in enumerate(COLLECTIONS):
        rng = random.Random(zlib.crc32(f"{seed}/{db}/{coll}".encode()))
        folder = root / db
        folder.mkdir(parents=True, exist_ok=True)
        lines = [orjson.dumps(_doc(rng, i, k % 3 == 0, k % 2 == 0)) for i in range(count)]
        own = suffix if suffix != "mixed" else (".json" if k % 2 else ".jsonl")  # mixed: every second one an array
        data = b"".join(line + b"\n" for line in lines) if own == ".jsonl" else \
            b"[" + b",\n".join(lines) + b"]\n"
        (folder / f"{coll}{own}").write_bytes(data)
        n_docs += count
        n_bytes += len(data)
    return n_docs, n_bytes


# The `nlq` command, printing its peak resident memory (VmHWM) at exit: the rusage of a child
# also counts the memory of this process it was forked from, not only its own.
NLQ_MEASURED = [sys.executable, "-c", "import atexit, sys\n"
                "def peak():\n"
                "    for line in open('/proc/self/status'):\n"
                "        if line.startswith('VmHWM'): print('peak-kB', line.split()[1], file=sys.stderr)\n"
                "atexit.register(peak)\n"
                "from nlq.commands import cli; cli(prog_name='nlq')"]


def run_index(data: Path, out: Path) -> tuple[float, float, float]:
    """(wall seconds, CPU seconds, peak RSS in MB) of `nlq index --data data -o out` in a fresh
    process (on a shared machine the CPU time is the steadier figure)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(NLQ_MEASURED + ["index", "--data", str(data), "-o", str(out)], check=True,
                          stderr=subprocess.PIPE, text=True)
    elapsed = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    peaks = [line.split()[1] for line in done.stderr.splitlines() if line.startswith("peak-kB")]
    return elapsed, cpu, int(peaks[-1]) / 1024 if peaks else float("nan")


def bench_index() -> None:
    tmp = Path(tempfile.mkdtemp(prefix="nlq-scale-"))
    try:
        started = time.perf_counter()
        docs, size = write_world(tmp / "jsonl")
        print(f"world: {docs:,} documents, {len(COLLECTIONS)} collections, "
              f"{len({db for db, _, _ in COLLECTIONS})} databases, {size / 1e6:.0f} MB of JSON lines "
              f"(generated in {time.perf_counter() - started:.1f} s)")
        seconds, cpu, rss = run_index(tmp / "jsonl", tmp / "index.jsonl")
        print(f"nlq index, <db>/<collection>.jsonl: {seconds:.2f} s wall, {cpu:.2f} s CPU (target < 3 s), "
              f"peak RSS {rss:.0f} MB (target < 400 MB)")
        for suffix, what in [("mixed", "half of the collections as single-array <db>/<collection>.json"),
                             (".json", "every collection as a single-array <db>/<collection>.json")]:
            folder = tmp / suffix.strip(".")
            write_world(folder, suffix=suffix)
            seconds, cpu, rss = run_index(folder, tmp / "index-other.jsonl")
            same = (tmp / "index.jsonl").read_bytes() == (tmp / "index-other.jsonl").read_bytes()
            print(f"nlq index, the same world with {what}: {seconds:.2f} s wall, {cpu:.2f} s CPU "
                  f"(target < 3 s), peak RSS {rss:.0f} MB (target < 400 MB); index {'identical' if same else 'DIFFERENT'}")
            shutil.rmtree(folder, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# ---------------------------------------------------------------------------
# engine workloads: (name, target ratio, documents, pipeline, catalog, hand loop, canonical form)


def _customers(n: int, rng: random.Random) -> list[dict]:
    return [{"_id": i, "name": f"c{i}", "city": rng.choice(WORDS),
             "orders": [{"sku": f"s{rng.randrange(50)}", "qty": rng.randrange(1, 10), "price": rng.random() * 100}
                        for _ in range(rng.randrange(1, 6))]}
            for i in range(n)]


def _unwind_group():
    docs = _customers(100_000, random.Random(1))
    pipeline = [{"$unwind": "$orders"},
                {"$group": {"_id": "$orders.sku", "qty": {"$sum": "$orders.qty"}, "n": {"$sum": 1}}}]

    def hand():
        out: dict = {}
        for doc in docs:
            for order in doc["orders"]:
                entry = out.get(order["sku"])
                if entry is None:
                    out[order["sku"]] = entry = [0, 0]
                entry[0] += order["qty"]
                entry[1] += 1
        return out

    def canon(rows):
        return {r["_id"]: [r["qty"], r["n"]] for r in rows} if isinstance(rows, list) else rows
    return "$unwind+$group, 100k documents", 10, docs, pipeline, {}, hand, canon


def _lookup_group():
    rng = random.Random(2)
    customers = [{"_id": i, "city": rng.choice(WORDS)} for i in range(5_000)]
    orders = [{"_id": i, "customer": rng.randrange(5_200), "amount": rng.randint(1, 500)} for i in range(20_000)]
    pipeline = [{"$lookup": {"from": "customers", "localField": "customer", "foreignField": "_id", "as": "c"}},
                {"$unwind": "$c"}, {"$group": {"_id": "$c.city", "total": {"$sum": "$amount"}, "n": {"$sum": 1}}}]

    def hand():
        by_id = defaultdict(list)
        for c in customers:
            by_id[c["_id"]].append(c)
        out: dict = {}
        for order in orders:
            for c in by_id.get(order["customer"], ()):
                entry = out.get(c["city"])
                if entry is None:
                    out[c["city"]] = entry = [0, 0]
                entry[0] += order["amount"]
                entry[1] += 1
        return out

    def canon(rows):
        return {r["_id"]: [r["total"], r["n"]] for r in rows} if isinstance(rows, list) else rows
    return "$lookup 20k x 5k + $group", 10, orders, pipeline, {"customers": customers}, hand, canon


def _sort_limit():
    rng = random.Random(3)
    docs = [{"_id": i, "city": rng.choice(WORDS), "score": rng.randint(0, 10_000)} for i in range(200_000)]
    pipeline = [{"$sort": {"city": 1, "score": -1}}, {"$limit": 10}]

    def hand():
        return heapq.nsmallest(10, docs, key=lambda d: (d["city"], -d["score"]))

    def canon(rows):
        return [r["_id"] for r in rows]
    return "$sort 200k on two keys + $limit 10", 5, docs, pipeline, {}, hand, canon


def _match_project():
    rng = random.Random(4)
    docs = [{"_id": i, "name": f"n{i}", "city": rng.choice(WORDS), "qty": rng.randint(0, 99),
             "extra": {"a": i, "b": [1, 2, 3]}} for i in range(200_000)]
    pipeline = [{"$match": {"city": "ember", "qty": {"$gte": 90}}}, {"$project": {"_id": 0, "name": 1, "qty": 1}}]

    def hand():
        return [{"name": d["name"], "qty": d["qty"]} for d in docs if d["city"] == "ember" and d["qty"] >= 90]
    return "selective $match + $project, 200k documents", 10, docs, pipeline, {}, hand, lambda rows: rows


def _object_to_array():
    rng = random.Random(5)
    docs = [{"_id": i, "m": {str(y): rng.randint(0, 100) for y in rng.sample(range(1990, 2025), rng.randint(1, 5))}}
            for i in range(100_000)]
    pipeline = [{"$project": {"kv": {"$objectToArray": "$m"}}}, {"$unwind": "$kv"},
                {"$group": {"_id": "$kv.k", "total": {"$sum": "$kv.v"}}}]

    def hand():
        out: dict = {}
        for doc in docs:
            for k, v in doc["m"].items():
                out[k] = out.get(k, 0) + v
        return out

    def canon(rows):
        return {r["_id"]: r["total"] for r in rows} if isinstance(rows, list) else rows
    return "$objectToArray+$unwind+$group, 100k documents", 10, docs, pipeline, {}, hand, canon


def _rank():
    rng = random.Random(6)
    docs = [{"_id": i, "city": rng.choice(WORDS), "score": rng.randint(0, 1000)} for i in range(100_000)]
    pipeline = [{"$setWindowFields": {"partitionBy": "$city", "sortBy": {"score": -1},
                                      "output": {"r": {"$rank": {}}}}}]

    def hand():
        parts = defaultdict(list)
        for doc in docs:
            parts[doc["city"]].append(doc)
        out = {}
        for members in parts.values():
            members.sort(key=lambda d: -d["score"])
            rank, previous = 0, None
            for position, doc in enumerate(members, start=1):
                if doc["score"] != previous:
                    rank, previous = position, doc["score"]
                out[doc["_id"]] = rank
        return out

    def canon(rows):
        return {r["_id"]: r["r"] for r in rows} if isinstance(rows, list) else rows
    return "$setWindowFields $rank, 100k documents", 10, docs, pipeline, {}, hand, canon


WORKLOADS = [_unwind_group, _lookup_group, _sort_limit, _match_project, _object_to_array, _rank]


def _best_of(fn, repeat: int = 5) -> tuple[float, object]:
    """The least CPU time of `repeat` calls (steadier than wall time on a shared machine)."""
    best, result = float("inf"), None
    for _ in range(repeat):
        started = time.process_time()
        result = fn()
        best = min(best, time.process_time() - started)
    return best, result


def bench_engine() -> None:
    for make in WORKLOADS:
        name, target, docs, pipeline, catalog, hand, canon = make()
        nlq_s, rows = _best_of(lambda: aggregate(docs, pipeline, catalog=lambda c: catalog.get(c, []),
                                                 timeout=600))
        hand_s, expected = _best_of(hand)
        same = canon(rows) == canon(expected)
        ratio = nlq_s / hand_s
        print(f"{name}: nlq {nlq_s * 1000:.0f} ms CPU, hand loop {hand_s * 1000:.0f} ms, x{ratio:.1f} "
              f"(target <= {target}x{'' if ratio <= target else ', MISSED'}); results "
              f"{'equal' if same else 'DIFFERENT'}")


def bench_imports() -> None:
    for label, argv in (("nlq --help", NLQ + ["--help"]),
                        ("import nlq.score", [sys.executable, "-c", "import nlq.score"])):
        best = min(_timed_run(argv) for _ in range(3))
        print(f"startup, {label}: {best[0] * 1000:.0f} ms wall, {best[1] * 1000:.0f} ms CPU (best of 3)")


def _timed_run(argv: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one run of `argv`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.perf_counter() - started, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


PARTS = {"index": bench_index, "engine": bench_engine, "imports": bench_imports}


def main(parts=tuple(PARTS)) -> None:
    unknown = [part for part in parts if part not in PARTS]
    if unknown:
        sys.exit(f"unknown part {unknown[0]!r}: the parts are {', '.join(PARTS)}")
    for part in parts:
        PARTS[part]()


if __name__ == "__main__":
    main(sys.argv[1:] or tuple(PARTS))
