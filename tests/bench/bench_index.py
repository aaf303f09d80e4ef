"""`index` and `witness` speed: targets < 1 s for all 23 TEND v1 databases, < 3 s for a
269k-document world at --sample 400, witness lookups well under 2 ms per question.

Prints, for each corpus present: index wall time (with and without reading the
files), the generated world's size and index time, and p50/p95 of
`witness.find` per question (fixture tasks when present, else questions built
from the generated world's stored values).
"""

from __future__ import annotations

import random
import statistics
import time
from pathlib import Path

import orjson

from nlq import index as grounding
from nlq import witness
from nlq.backends import EmbeddedBackend

ROOT = Path(__file__).resolve().parents[2]
TEND_V1 = ROOT.parent / "shared" / "tend-v1" / "mongodb_data"
WORLDS = ROOT / "fixtures" / "worlds"
TASKS = ROOT / "fixtures" / "tasks"
WORLD_SIZE = 269_177  # the TEND release's witness documents


class MemoryBackend:
    """The backend interface over in-memory collections (sampling as EmbeddedBackend does)."""

    name = "memory"

    def __init__(self, dbs: dict[str, dict[str, list[dict]]]):
        self.dbs = dbs

    def databases(self):
        return sorted(self.dbs)

    def collections(self, db):
        return sorted(self.dbs[db])

    def count(self, db, coll):
        return len(self.dbs[db][coll])

    def sample(self, db, coll, n, seed=0):
        docs = self.dbs[db][coll]
        if n >= len(docs):
            return list(docs)
        return [docs[i] for i in sorted(random.Random(seed).sample(range(len(docs)), n))]


CODES = ["HBA1C", "GLU", "LDL", "HDL", "TG", "CREA", "EGFR", "ALT", "AST", "TSH", "B12", "K", "NA"]
WARDS = ["Cardiology", "Endocrinology", "Nephrology", "General Medicine", "Oncology"]
CITIES = ["Oslo", "São Paulo", "Lyon", "Kyoto", "Accra", "Perth", "Quito", "Tartu"]


def generated_world(size: int = WORLD_SIZE, seed: int = 0, distinct: int = 5000) -> dict[str, list[dict]]:
    """A nested world with maps of maps, maps inside arrays, sparse and polymorphic paths.

    `distinct` documents per collection are drawn at random; the others are
    shallow copies of them with their own `patient_id` (fast to build, and the
    index never modifies a document)."""
    rng = random.Random(seed)
    n_patients = size // 4
    n_histories = size // 2
    n_events = size - n_patients - n_histories
    patients = []
    for i in range(min(distinct, n_patients)):
        doc = {"patient_id": f"P{i:06d}", "city": rng.choice(CITIES),
               "profile": {"sex": rng.choice("FM"), "birth_year": rng.randint(1930, 2005),
                           "smoking": rng.choice(["never", "former", "current"])},
               "visits": [{"ward": rng.choice(WARDS), "day": rng.randint(1, 28),
                           "doses_by_drug": {f"drug-{rng.randint(1, 40)}": rng.choice([5, 10, 20])
                                             for _ in range(rng.randint(1, 3))}}
                          for _ in range(rng.randint(0, 4))]}
        if rng.random() < 0.3:
            doc["allergies"] = rng.sample(["latex", "penicillin", "peanuts", "iodine"], rng.randint(0, 2))
        patients.append(doc)
    histories = []
    for _ in range(min(distinct, n_histories)):
        years = rng.sample(range(1985, 2025), rng.randint(1, 4))
        histories.append({"patient_id": f"P{rng.randrange(n_patients):06d}", "lab": rng.choice(["Central", "North"]),
                          "values_by_year": {str(y): {c: {"readings": [round(rng.gauss(5, 1), 1)
                                                                       for _ in range(rng.randint(1, 3))]}
                                                      for c in rng.sample(CODES, rng.randint(1, 4))}
                                             for y in sorted(years)}})
    events = [{"patient_id": f"P{rng.randrange(n_patients):06d}", "kind": rng.choice(["call", "visit", "lab"]),
               "detail": rng.choice([{"minutes": rng.randint(1, 60)}, {"ward": rng.choice(WARDS)}, "none"])}
              for _ in range(min(distinct, n_events))]
    return {"patients": _widen(patients, n_patients, lambda i: f"P{i:06d}"),
            "lab_histories": _widen(histories, n_histories, lambda i: f"P{rng.randrange(n_patients):06d}"),
            "events": _widen(events, n_events, lambda i: f"P{rng.randrange(n_patients):06d}")}


def _widen(docs: list[dict], n: int, patient_id) -> list[dict]:
    return [{**docs[i % len(docs)], "patient_id": patient_id(i)} for i in range(n)]


def timed(fn):
    start = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - start


def bench_tend_v1() -> None:
    if not TEND_V1.exists():
        print(f"TEND v1: {TEND_V1} absent, skipped")
        return
    indexes, cold = timed(lambda: list(grounding.build(EmbeddedBackend(TEND_V1))))
    backend = EmbeddedBackend(TEND_V1)
    for db in backend.databases():
        for name in backend.collections(db):  # read the files once
            backend.documents(db, name)
    _, warm = timed(lambda: list(grounding.build(backend)))
    paths = sum(len(ix["lattice"]) for ix in indexes)
    print(f"TEND v1 ({len(indexes)} databases, {paths} lattice paths): index {cold:.3f} s including "
          f"reading the files, {warm:.3f} s from memory (target < 1 s)")


def bench_generated_world() -> dict:
    world, made = timed(lambda: generated_world())
    backend = MemoryBackend({"generated": world})
    index, took = timed(lambda: next(grounding.build(backend, sample=400)))
    maps = {c: p for c, p in grounding.dynamic_maps(index).items() if p}
    size = len(orjson.dumps(index, default=str))
    print(f"generated world ({sum(len(d) for d in world.values())} documents, built in {made:.1f} s): "
          f"index --sample 400 {took:.3f} s (target < 3 s); {len(index['lattice'])} paths, "
          f"{len(index['values'])} value terms, {size / 1e6:.2f} MB; dynamic maps {maps}")
    return index


def bench_witness(world_index: dict) -> None:
    questions: list[tuple[str, dict]] = []
    if TASKS.exists() and WORLDS.exists():
        backend = EmbeddedBackend(WORLDS)
        indexes = {ix["db"]: ix for ix in grounding.build(backend)}
        for path in sorted(TASKS.glob("*.jsonl")):
            for line in path.read_bytes().splitlines():
                task = orjson.loads(line)
                if task.get("db") in indexes and isinstance(task.get("question"), str):
                    questions.append((task["question"], indexes[task["db"]]))
    source = "fixture tasks"
    if not questions:
        rng = random.Random(1)
        terms = sorted(world_index["values"])
        for _ in range(500):
            picks = rng.sample(terms, 2)
            questions.append((f"How many patients in \"{picks[0]}\" had {picks[1]} readings in "
                              f"{rng.randint(1985, 2024)} at {rng.choice(WARDS)}?", world_index))
        source = "generated questions"
    times = []
    for question, index in questions:
        start = time.perf_counter()
        witness.find(question, index)
        times.append((time.perf_counter() - start) * 1000)
    times.sort()
    p95 = times[min(len(times) - 1, int(0.95 * len(times)))]
    print(f"witness ({len(times)} {source}): p50 {statistics.median(times):.3f} ms, p95 {p95:.3f} ms per question")


def main() -> None:
    bench_tend_v1()
    world_index = bench_generated_world()
    bench_witness(world_index)


if __name__ == "__main__":
    main()
