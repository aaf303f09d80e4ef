"""Run the shared TEND v1 gold queries on the engine and on mongomock-ng, and compare.

Test-only code (it imports `mongomock_ng`, which nlq itself never does); used by
tests/test_differential.py and tests/bench/bench_vs_mongomock.py.

Both engines get identical documents: TEND v1's documents carry no `_id`, so
each one receives a deterministic ObjectId (`_id` = its collection ordinal and
position), as a live MongoDB would assign one on insert. Results are compared
after normalising what is representation, not meaning: naive datetimes (which
mongomock-ng returns) are read as UTC, and documents compare as mappings (field
order ignored). Numeric types stay significant: an int where MongoDB answers a
double is a disagreement. Rows compare in order when the pipeline's last
order-defining stage is a `$sort` (nothing after it reorders or regroups), as a
multiset otherwise.

    python -m tests.differential.harness      # print the current disagreements
"""

from __future__ import annotations

import datetime as _dt
import json
import time
from collections import Counter
from pathlib import Path

from bson.objectid import ObjectId

from nlq.mql import engine
from nlq.mql.mongosh import parse_query
from nlq.mql.values import UTC, bson_type, sort_key

ROOT = Path(__file__).resolve().parents[2]
TEND_V1 = ROOT.parent / "shared" / "tend-v1"
VERDICTS = Path(__file__).resolve().parent / "tend_v1_verdicts.jsonl"

# Stages that keep the order of their input; any other stage ($group, $unionWith, ...) makes
# the order unspecified again until the next $sort.
_ORDER_KEEPING = {"$match", "$project", "$addFields", "$set", "$unset", "$limit", "$skip",
                  "$lookup", "$unwind", "$replaceRoot", "$replaceWith", "$redact", "$graphLookup", "$count"}


def records() -> list[dict]:
    with open(TEND_V1 / "test.jsonl", "rb") as f:
        return [json.loads(line) for line in f if line.strip()]


def load_database(db_id: str) -> dict[str, list[dict]]:
    """The collections of one TEND v1 database, each document given a deterministic `_id`."""
    from nlq.io import load_json_file

    data = load_json_file(TEND_V1 / "mongodb_data" / f"{db_id}.json")
    out = {}
    for c, (name, docs) in enumerate(sorted(data.items())):
        out[name] = [doc if "_id" in doc else {"_id": ObjectId(f"{c:08x}{i:016x}"), **doc}
                     for i, doc in enumerate(docs)]
    return out


def ordered(pipeline: list) -> bool:
    """Whether the result order is defined: a `$sort` with only order-keeping stages after it."""
    result = False
    for stage in pipeline:
        name = next(iter(stage)) if isinstance(stage, dict) and stage else None
        if name == "$sort":
            result = True
        elif name not in _ORDER_KEEPING:
            result = False
    return result


def canonical(value):
    """A hashable, order-comparable form: dates read as UTC, documents as sorted mappings,
    numbers tagged with their BSON type."""
    if isinstance(value, dict):
        return ("object", tuple(sorted((k, canonical(v)) for k, v in value.items())))
    if isinstance(value, (list, tuple)):
        return ("array", tuple(canonical(v) for v in value))
    if isinstance(value, _dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        return ("date", sort_key(value))
    return (bson_type(value), sort_key(value))


def compare(pipeline: list, mine: list, theirs: list, names: tuple[str, str] = ("engine", "mongomock")) -> str | None:
    """None when the two results agree, else a short description of the first difference
    (`names` label the two sides)."""
    me, them = names
    a = [canonical(r) for r in mine]
    b = [canonical(r) for r in theirs]
    if ordered(pipeline):
        if a == b:
            return None
        if len(a) != len(b):
            return f"{me} {len(a)} rows, {them} {len(b)} rows"
        i = next(i for i, (x, y) in enumerate(zip(a, b)) if x != y)
        return f"row {i}: {me} {mine[i]!r} vs {them} {theirs[i]!r}"
    if Counter(a) == Counter(b):
        return None
    if len(a) != len(b):
        return f"{me} {len(a)} rows, {them} {len(b)} rows"
    only_a = list((Counter(a) - Counter(b)).elements())
    only_b = list((Counter(b) - Counter(a)).elements())
    ra = mine[a.index(only_a[0])]
    rb = theirs[b.index(only_b[0])]
    return f"{len(only_a)} rows differ, e.g. {me} {ra!r} vs {them} {rb!r}"


class Mongomock:
    """One mongomock-ng client holding the TEND v1 databases as they are needed."""

    def __init__(self):
        import mongomock_ng

        self.client = mongomock_ng.MongoClient()
        self.loaded: set[str] = set()

    def aggregate(self, db_id: str, collections: dict, collection: str, pipeline: list) -> list[dict]:
        db = self.client[db_id]
        if db_id not in self.loaded:
            for name, docs in collections.items():
                if docs:
                    db[name].insert_many([dict(d) for d in docs])
            self.loaded.add(db_id)
        return list(db[collection].aggregate(pipeline))


def run_engine(collections: dict, collection: str, pipeline: list) -> list[dict]:
    return engine.aggregate(collections.get(collection, []), pipeline,
                            catalog=lambda name: collections.get(name, []))


def outcome(fn):
    """(rows, None) or (None, 'ErrorType: message') for one run."""
    try:
        return fn(), None
    except Exception as exc:  # both engines' failures are data for the comparison
        return None, f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"


def disagreements(progress=None) -> dict[int, dict]:
    """Run every gold query on both engines; `{record_id: {db_id, difference}}` where they differ."""
    mock = Mongomock()
    dbs: dict[str, dict] = {}
    found = {}
    for record in records():
        db_id = record["db_id"]
        if db_id not in dbs:
            dbs[db_id] = load_database(db_id)
        query = parse_query(record["MQL"])
        mine, my_error = outcome(lambda: run_engine(dbs[db_id], query.collection, query.pipeline))
        theirs, their_error = outcome(lambda: mock.aggregate(db_id, dbs[db_id], query.collection, query.pipeline))
        if my_error or their_error:
            diff = None if (my_error and their_error) else f"engine error: {my_error}" if my_error \
                else f"mongomock error: {their_error}"
        else:
            diff = compare(query.pipeline, mine, theirs)
        if diff:
            found[record["record_id"]] = {"db_id": db_id, "difference": diff}
        if progress:
            progress(record)
    return found


def time_both(repeat_engine: int = 1) -> dict:
    """Seconds each engine spends on all gold queries (data loading excluded)."""
    mock = Mongomock()
    dbs: dict[str, dict] = {}
    work = []
    for record in records():
        db_id = record["db_id"]
        if db_id not in dbs:
            dbs[db_id] = load_database(db_id)
            mock.aggregate(db_id, dbs[db_id], "__warmup__", [])
        work.append((db_id, parse_query(record["MQL"])))
    t0 = time.perf_counter()
    for _ in range(repeat_engine):
        for db_id, q in work:
            outcome(lambda: run_engine(dbs[db_id], q.collection, q.pipeline))
    t_engine = (time.perf_counter() - t0) / repeat_engine
    t0 = time.perf_counter()
    for db_id, q in work:
        outcome(lambda: mock.aggregate(db_id, dbs[db_id], q.collection, q.pipeline))
    t_mock = time.perf_counter() - t0
    return {"queries": len(work), "engine": t_engine, "mongomock": t_mock}


def main() -> None:
    found = disagreements()
    for rid, d in sorted(found.items()):
        print(json.dumps({"record_id": rid, **d}))
    print(f"{len(found)} disagreements")


if __name__ == "__main__":
    main()
