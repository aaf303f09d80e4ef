"""The shipped DataWorlds (fixtures/worlds) and their tasks (fixtures/tasks).

Checks that generation is byte-identical, that every manifest agrees with the
data it documents, and that every gold pipeline runs on the embedded engine
with a non-empty, deterministic result and no forbidden operator.
"""

from __future__ import annotations

import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from nlq import io
from nlq.mql import registry
from tests.conftest import FIXTURES, WORLDS

DBS = ("clinic", "racing", "club")
TASKS = FIXTURES / "tasks"
SCHEMA_FLEX = {"dynamic_key", "event_stream", "polymorphic", "missing_present", "attribute_bag"}
ANTI_SQL = {"strong", "medium", "weak"}
MANIFEST_LISTS = ("dynamic_maps", "arrays", "sparse", "polymorphic", "attribute_bags")
# A dynamic map proliferates keys: many distinct keys across documents, each instance a subset.
MIN_DYNAMIC_KEYS = 6
MIN_KEY_RATIO = 1.5


def _jsonl(path: Path) -> list[dict]:
    with open(path, "rb") as f:
        return [line.record for line in io.iter_lines(f)]


def _manifest(db: str) -> dict:
    return io.load_json_file(WORLDS / db / "manifest.json")


def _collections(db: str) -> dict[str, list[dict]]:
    return {p.stem: _jsonl(p) for p in sorted((WORLDS / db).glob("*.jsonl"))}


def _tasks(db: str) -> list[dict]:
    return _jsonl(TASKS / f"{db}.jsonl")


def walk(value, dynamic: set[str], path: str = ""):
    """Yield (path, value) for every node under `value`, in manifest notation.

    An array field is named `a[]` and its elements' fields `a[].b`; the keys of
    a map listed in `dynamic` collapse to `<*>`.
    """
    if isinstance(value, dict):
        for key, child in value.items():
            step = "<*>" if path in dynamic else key
            child_path = f"{path}.{step}" if path else step
            if isinstance(child, list):
                child_path += "[]"
                yield child_path, child
                for element in child:
                    if isinstance(element, dict):
                        yield from walk(element, dynamic, child_path)
            else:
                yield child_path, child
                yield from walk(child, dynamic, child_path)


def _lattice(docs: list[dict], dynamic: set[str]) -> dict[str, list]:
    nodes = defaultdict(list)
    for doc in docs:
        for path, value in walk(doc, dynamic):
            nodes[path].append(value)
    return nodes


def _key_stats(objects: list[dict]) -> tuple[int, float, float]:
    """(distinct keys across instances, mean keys per instance, share of instances holding
    the most common key) of non-empty objects."""
    objects = [o for o in objects if isinstance(o, dict) and o]
    counts: dict[str, int] = defaultdict(int)
    for o in objects:
        for k in o:
            counts[k] += 1
    n = max(1, len(objects))
    return len(counts), sum(counts.values()) / n, max(counts.values(), default=0) / n


def _looks_dynamic(objects: list[dict]) -> bool:
    """Key proliferation: many distinct keys, each instance holding a small subset, and no
    key that every instance has (a record always has its core fields; a map does not)."""
    distinct, mean, top = _key_stats(objects)
    return distinct >= MIN_DYNAMIC_KEYS and distinct >= MIN_KEY_RATIO * mean and top < 1.0


def _objects(values: list) -> list[dict]:
    """Object values of a lattice node; for an array node, its object elements."""
    return ([v for v in values if isinstance(v, dict)]
            + [e for v in values if isinstance(v, list) for e in v if isinstance(e, dict)])


# ---------------------------------------------------------------------------
# generation


def test_generation_is_byte_identical(tmp_path):
    script = FIXTURES / "generate.py"
    subprocess.run([sys.executable, str(script), "--out", str(tmp_path)], check=True,
                   capture_output=True)
    shipped = sorted(p.relative_to(FIXTURES) for p in (FIXTURES / "worlds").rglob("*") if p.is_file())
    shipped += sorted(p.relative_to(FIXTURES) for p in TASKS.glob("*.jsonl"))
    regenerated = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file())
    assert sorted(shipped) == regenerated
    for rel in shipped:
        assert (tmp_path / rel).read_bytes() == (FIXTURES / rel).read_bytes(), rel


@pytest.mark.parametrize("db", DBS)
def test_world_size_and_shape(db):
    colls = _collections(db)
    total = sum(len(docs) for docs in colls.values())
    assert 2 <= len(colls) <= 4
    assert 2000 <= total <= 5000
    assert set(_manifest(db)["collections"]) == set(colls)


def test_worlds_stay_small():
    size = sum(p.stat().st_size for p in WORLDS.rglob("*.jsonl"))
    assert size < 5 * 1024 * 1024


@pytest.mark.parametrize("db", DBS)
def test_documents_use_extended_json_types(db):
    """Every collection has ObjectIds, every world has dates, and documents round-trip."""
    import datetime

    from nlq.mql.values import ObjectId

    world_kinds = set()
    for name, docs in _collections(db).items():
        kinds = {type(v) for d in docs for _, v in walk(d, set())}
        assert ObjectId in kinds, name
        world_kinds |= kinds
        for doc in docs[:50]:
            assert io.loads(io.dumps(doc)) == doc
    assert any(issubclass(k, datetime.datetime) for k in world_kinds)


# ---------------------------------------------------------------------------
# manifests agree with the data


@pytest.mark.parametrize("db", DBS)
def test_manifest_lists_are_well_formed(db):
    manifest = _manifest(db)
    assert set(manifest) == {"collections", "join_edges", "notes"}
    assert manifest["notes"].strip()
    for coll, entry in manifest["collections"].items():
        assert set(entry) == set(MANIFEST_LISTS), coll
        for key in MANIFEST_LISTS:
            assert entry[key] == list(dict.fromkeys(entry[key])), (coll, key)
    assert manifest["join_edges"]


@pytest.mark.parametrize("db", DBS)
def test_every_listed_path_exists(db):
    manifest, colls = _manifest(db), _collections(db)
    for coll, entry in manifest["collections"].items():
        nodes = _lattice(colls[coll], set(entry["dynamic_maps"]))
        for key in MANIFEST_LISTS:
            for path in entry[key]:
                assert path in nodes, f"{db}.{coll}: {key} path {path} is in no document"
        for path in entry["arrays"] + entry["attribute_bags"]:
            assert path.endswith("[]") and all(isinstance(v, list) for v in nodes[path]), path
        for path in entry["dynamic_maps"]:
            assert all(isinstance(v, dict) for v in nodes[path]), path


@pytest.mark.parametrize("db", DBS)
def test_dynamic_maps_have_data_keys_and_static_objects_do_not(db):
    manifest, colls = _manifest(db), _collections(db)
    for coll, entry in manifest["collections"].items():
        dynamic = set(entry["dynamic_maps"])
        for path, values in _lattice(colls[coll], dynamic).items():
            objects = _objects(values)
            if path in dynamic:
                distinct, mean, top = _key_stats(objects)
                assert _looks_dynamic(objects), \
                    f"{db}.{coll}.{path}: {distinct} keys, {mean:.1f} per map, top key in {top:.0%}"
            elif objects:
                assert not _looks_dynamic(objects), f"{db}.{coll}.{path} looks like a map but is not listed"


@pytest.mark.parametrize("db", DBS)
def test_array_and_bag_lists_are_complete(db):
    manifest, colls = _manifest(db), _collections(db)
    for coll, entry in manifest["collections"].items():
        nodes = _lattice(colls[coll], set(entry["dynamic_maps"]))
        arrays = {p for p, vs in nodes.items() if any(isinstance(v, list) for v in vs)}
        assert arrays == set(entry["arrays"]), coll
        bags = {p for p in arrays
                if all(isinstance(e, dict) and set(e) == {"k", "v"} for v in nodes[p] for e in v)}
        bags = {p for p in bags if any(nodes[p])}
        assert bags == set(entry["attribute_bags"]), coll


HOLES = (None, [], "", "missing")


def _listed_paths(db: str, kind: str):
    """(collection, path, holders, field name) of every path the manifest lists as `kind`."""
    manifest, colls = _manifest(db), _collections(db)
    for coll, entry in manifest["collections"].items():
        docs = colls[coll]
        nodes = _lattice(docs, set(entry["dynamic_maps"]))
        for path in entry[kind]:
            holders, key = _parents(docs, nodes, path)
            yield coll, path, holders, key


def _parents(docs: list[dict], nodes: dict[str, list], path: str) -> tuple[list[dict], str]:
    """The objects that hold the last step of `path`, and that step's field name."""
    parent, _, step = path.rpartition(".")
    if not parent:
        holders = docs
    elif parent.endswith("[]"):
        holders = [e for v in nodes[parent] for e in v if isinstance(e, dict)]
    else:
        holders = [v for v in nodes[parent] if isinstance(v, dict)]
    return holders, step.removesuffix("[]")


@pytest.mark.parametrize("db", DBS)
def test_sparse_paths_are_really_sparse(db):
    """Each sparse path is sometimes missing, null, empty or a sentinel where its parent
    exists, and sometimes set."""
    for coll, path, holders, key in _listed_paths(db, "sparse"):
        assert any(key not in h or h[key] in HOLES for h in holders), f"{coll}.{path} is never absent"
        assert any(key in h and h[key] not in HOLES for h in holders), f"{coll}.{path} is never set"


def _shape(value):
    """A value's structure: its BSON type, an object's field names, an array's element shapes."""
    from nlq.mql.values import bson_type

    t = bson_type(value)
    if t == "object":
        return t, tuple(sorted(value))
    if t == "array":
        return t, tuple(sorted({repr(_shape(e)) for e in value}))
    return t


def _variant(path: str, holders: list[dict], key: str) -> str | None:
    """How a listed polymorphic path really varies, or None when it does not."""
    from nlq.mql.values import bson_type

    values = [h[key] for h in holders if key in h]
    if not values:
        return None
    if len(values) < len(holders):
        return "missing in some holders, present in others"
    flat = [e for v in values for e in (v if path.endswith("[]") else [v])]
    if len({bson_type(v) for v in flat}) > 1:
        return "several BSON types"
    if len({repr(_shape(v)) for v in flat}) > 1:
        return "several shapes"
    # a discriminator: some field is always there with one value and never with another
    groups: dict[str, list[set]] = defaultdict(list)
    for h in holders:
        if isinstance(h[key], str):
            groups[h[key]].append(set(h))
    always = {v: set.intersection(*g) for v, g in groups.items()}
    ever = {v: set.union(*g) for v, g in groups.items()}
    if any(always[a] - ever[b] for a in groups for b in groups):
        return "a discriminator of its holders' shape"
    return None


@pytest.mark.parametrize("db", DBS)
def test_polymorphic_paths_vary(db):
    """A polymorphic path is a real variant: present in some holders only, of several
    BSON types, of several shapes, or a discriminator (a value that decides which
    fields its holder has)."""
    for coll, path, holders, key in _listed_paths(db, "polymorphic"):
        assert _variant(path, holders, key) is not None, f"{coll}.{path} is listed as polymorphic but never varies"


def test_variant_rejects_a_plain_string_field():
    holders = [{"name": "a", "x": 1}, {"name": "b", "x": 2}]
    assert _variant("name", holders, "name") is None
    assert _variant("name", holders + [{"x": 3}], "name") == "missing in some holders, present in others"
    assert _variant("x", holders + [{"name": "c", "x": "3"}], "x") == "several BSON types"
    assert _variant("t[]", [{"t": [{"a": 1}, {"b": 1}]}], "t") == "several shapes"
    assert _variant("kind", [{"kind": "a", "x": 1}, {"kind": "b", "y": 1}], "kind") == \
        "a discriminator of its holders' shape"


@pytest.mark.parametrize("db", DBS)
def test_join_edges_are_witnessed(db):
    manifest, colls = _manifest(db), _collections(db)
    for edge in manifest["join_edges"]:
        sides = []
        for side in (edge["from"], edge["to"]):
            coll, path = side.split(".", 1)
            dynamic = set(manifest["collections"][coll]["dynamic_maps"])
            values = _lattice(colls[coll], dynamic)[path]
            flat = [e for v in values for e in (v if isinstance(v, list) else [v])]
            sides.append({str(v) for v in flat if v is not None})
        source, target = sides
        assert source and source <= target, edge


# ---------------------------------------------------------------------------
# tasks

MAX_ROWS = 50


def _all_tasks() -> list[dict]:
    return [task for db in DBS for task in _tasks(db)]


def _run(db: str, task: dict, *, reverse: bool = False) -> list[dict]:
    """Execute a gold on the embedded engine, optionally with every collection reversed."""
    from nlq.mql import engine

    colls = _world(db)
    if reverse:
        colls = {name: docs[::-1] for name, docs in colls.items()}
    gold = task["gold"]
    return engine.aggregate(colls.get(gold["collection"], []), gold["pipeline"],
                            catalog=lambda name: colls.get(name, []))


_WORLD_CACHE: dict[str, dict[str, list[dict]]] = {}


def _world(db: str) -> dict[str, list[dict]]:
    if db not in _WORLD_CACHE:
        _WORLD_CACHE[db] = _collections(db)
    return _WORLD_CACHE[db]


def _canonical(rows: list[dict]) -> list[bytes]:
    return [io.dumps(row, sort_keys=True) for row in rows]


@pytest.mark.parametrize("db", DBS)
def test_task_records_are_well_formed(db):
    tasks = _tasks(db)
    assert len(tasks) >= 40
    assert [t["id"] for t in tasks] == [f"{db}/{n}" for n in range(1, len(tasks) + 1)]
    assert len({t["question"] for t in tasks}) == len(tasks)
    colls = set(_collections(db))
    for task in tasks:
        assert set(task) == {"id", "db", "question", "gold", "labels"}, task["id"]
        assert task["db"] == db
        assert task["question"].strip() and task["question"][-1] in "?.", task["id"]
        assert set(task["gold"]) == {"collection", "pipeline"} and task["gold"]["collection"] in colls
        labels = task["labels"]
        assert set(labels) == {"schema_flex", "anti_sql", "trap"}, task["id"]
        assert labels["schema_flex"] in SCHEMA_FLEX and labels["anti_sql"] in ANTI_SQL
        assert isinstance(labels["trap"], bool)


@pytest.mark.parametrize("db", DBS)
def test_every_label_is_present_in_every_world(db):
    tasks = _tasks(db)
    assert {t["labels"]["schema_flex"] for t in tasks} == SCHEMA_FLEX
    assert {t["labels"]["anti_sql"] for t in tasks} == ANTI_SQL
    traps = sum(t["labels"]["trap"] for t in tasks) / len(tasks)
    assert 0.15 <= traps <= 0.35, f"{traps:.0%} traps"


def test_at_least_120_tasks():
    assert len(_all_tasks()) >= 120


@pytest.mark.parametrize("task", _all_tasks(), ids=lambda t: t["id"])
def test_gold_uses_no_forbidden_or_unknown_operator(task):
    from nlq.mql import analyze

    pipeline = task["gold"]["pipeline"]
    assert analyze.forbidden(pipeline) == []
    assert analyze.unknown_operators(pipeline) == []
    text = io.dumps(pipeline).decode()
    assert not [name for name in registry.FORBIDDEN if f'"{name}"' in text or f'"{name}.' in text]


@pytest.mark.parametrize("task", _all_tasks(), ids=lambda t: t["id"])
def test_gold_runs_non_empty_small_and_deterministic(task):
    from nlq.mql import analyze

    db = task["db"]
    rows = _run(db, task)
    assert 0 < len(rows) <= MAX_ROWS
    assert _canonical(_run(db, task)) == _canonical(rows)
    reversed_rows = _canonical(_run(db, task, reverse=True))
    if analyze.order_sensitive(task["gold"]["pipeline"]):
        # A root $sort must be total: ties broken so that input order cannot show through.
        assert reversed_rows == _canonical(rows)
    else:
        assert sorted(reversed_rows) == sorted(_canonical(rows))
        assert len(rows) == 1, "a multi-row gold must declare its order with a root $sort"


@pytest.mark.parametrize("db", DBS)
def test_golds_run_through_the_embedded_backend(db):
    from nlq.backends import EmbeddedBackend

    backend = EmbeddedBackend(WORLDS)
    assert db in backend.databases()
    for task in _tasks(db):
        gold = task["gold"]
        rows = backend.aggregate(db, gold["collection"], gold["pipeline"])
        assert _canonical(rows) == _canonical(_run(db, task)), task["id"]


def _sort_key(row: dict, path: str):
    value = row
    for step in path.split("."):
        value = value.get(step) if isinstance(value, dict) else None
    return value


@pytest.mark.parametrize("task", _all_tasks(), ids=lambda t: t["id"])
def test_every_sort_is_total(task):
    """Each $sort meets no two rows with equal sort keys (a unique tie-breaker), so that
    neither input order nor the engine's group order can show through."""
    pipeline = task["gold"]["pipeline"]
    for i, stage in enumerate(pipeline):
        if "$sort" not in stage:
            continue
        prefix = dict(task, gold={"collection": task["gold"]["collection"], "pipeline": pipeline[:i]})
        rows = _run(task["db"], prefix)
        keys = [io.dumps([_sort_key(row, path) for path in stage["$sort"]]) for row in rows]
        assert len(set(keys)) == len(keys), f"stage {i}: ties under {stage['$sort']}"
