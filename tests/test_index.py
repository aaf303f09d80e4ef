"""nlq.index and `nlq index`: lattice completeness, dynamic-map detection, values, joins."""

from __future__ import annotations

import datetime as dt
import json

import orjson
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from nlq.commands import cli
from nlq import index as grounding
from nlq import io
from nlq.backends import EmbeddedBackend
from nlq.errors import InputError
from nlq.mql.values import Decimal128, Int64, ObjectId, bson_type, sort_key
from tests.conftest import WORLDS, need

UTC = dt.timezone.utc
FIXTURE_DBS = ("clinic", "racing", "club")


def write_world(root, db: str, collections: dict[str, list[dict]]):
    """A DataWorld folder `root/db/<collection>.jsonl`."""
    folder = root / db
    folder.mkdir(parents=True, exist_ok=True)
    for coll, docs in collections.items():
        (folder / f"{coll}.jsonl").write_bytes(b"".join(io.dumps(d) + b"\n" for d in docs))
    return root


def maps_of(collections: dict[str, list[dict]], **kw) -> dict[str, list[str]]:
    return grounding.dynamic_maps(grounding.index_documents("w", collections, **kw))


def entry(index: dict, collection: str, path: str) -> dict:
    found = [e for e in index["lattice"] if e["collection"] == collection and e["path"] == path]
    assert len(found) == 1, (collection, path)
    return found[0]


# ---------------------------------------------------------------------------
# lattice completeness: an independent brute-force path enumerator


def concrete_paths(value, prefix=()):
    """Every path of a document as a tuple of segments ('[]' for array elements)."""
    if isinstance(value, dict):
        for key, child in value.items():
            yield prefix + (key,)
            yield from concrete_paths(child, prefix + (key,))
    elif isinstance(value, list):
        for child in value:
            yield prefix + ("[]",)
            yield from concrete_paths(child, prefix + ("[]",))


def lattice_trie(index: dict) -> dict[str, dict]:
    """{collection: trie} of the lattice paths, segments split on '.' and '[]'."""
    tries: dict[str, dict] = {}
    for e in index["lattice"]:
        node = tries.setdefault(e["collection"], {})
        for seg in split_path(e["path"]):
            node = node.setdefault(seg, {})
    return tries


def split_path(path: str) -> list[str]:
    segs = []
    for part in path.split("."):
        name = part.replace("[]", "")
        if name:
            segs.append(name)
        segs.extend(["[]"] * part.count("[]"))
    return segs


def covered(trie: dict, segments: tuple) -> bool:
    """True when a concrete path matches a lattice path, `<*>` standing for any key."""
    if not segments:
        return True
    head, rest = segments[0], segments[1:]
    if head in trie and covered(trie[head], rest):
        return True
    return head != "[]" and "<*>" in trie and covered(trie["<*>"], rest)


def assert_complete(index: dict, collections: dict[str, list[dict]]):
    tries = lattice_trie(index)
    for coll, docs in collections.items():
        for doc in docs:
            for segments in concrete_paths(doc):
                assert covered(tries.get(coll, {}), segments), (coll, segments)


def whole(backend, db):
    """Index a database with a sample that covers every collection."""
    biggest = max([backend.count(db, c) for c in backend.collections(db)] + [1])
    return next(grounding.build(backend, [db], sample=biggest))


@pytest.mark.parametrize("db", FIXTURE_DBS)
def test_lattice_is_complete_on_fixture_worlds(db):
    backend = EmbeddedBackend(need(WORLDS / db).parent)
    index = whole(backend, db)
    assert_complete(index, {c: backend.documents(db, c) for c in backend.collections(db)})


def test_lattice_is_complete_on_tend_v1(tend_v1):
    backend = EmbeddedBackend(tend_v1 / "mongodb_data")
    for db in backend.databases():
        index = whole(backend, db)
        assert_complete(index, {c: backend.documents(db, c) for c in backend.collections(db)})


def test_lattice_is_complete_on_atlas(atlas):
    backend = EmbeddedBackend(atlas)
    for db in backend.databases():
        assert_complete(whole(backend, db), {c: backend.documents(db, c) for c in backend.collections(db)})


scalars = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6), st.floats(allow_nan=False),
                    st.text(max_size=6), st.sampled_from(["1987", "1990", "HBA1C", "A12"]))
# keys with '.', '[]' or '<*>' cannot be told apart in the path syntax (nor does MQL allow dotted names)
keys = st.one_of(st.text(min_size=1, max_size=5).filter(lambda k: not k.startswith("$") and not set(k) & set(".[]<>")),
                 st.sampled_from(["1987", "1988", "2001", "GLU", "x"]))
values = st.recursive(scalars, lambda children: st.one_of(
    st.lists(children, max_size=3), st.dictionaries(keys, children, max_size=4)), max_leaves=12)
documents = st.lists(st.dictionaries(keys, values, max_size=5), min_size=1, max_size=8)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents, documents)
def test_lattice_is_complete_on_random_documents(a, b):
    collections = {"a": a, "b": b}
    index = grounding.index_documents("r", collections, max_depth=64)
    assert_complete(index, collections)
    for e in index["lattice"]:
        assert e["present"] + e["missing"] == index["collections"][e["collection"]]["sampled"]
        assert e["kind"] in ("scalar", "object", "array", "dynamic_map")
    assert io.dumps(index) == io.dumps(grounding.index_documents("r", collections, max_depth=64))


# ---------------------------------------------------------------------------
# dynamic maps: the fixture manifests, TEND v1, Atlas


def manifest_maps(db: str) -> dict[str, list[str]]:
    manifest = json.loads((WORLDS / db / "manifest.json").read_text())
    return {coll: sorted(spec["dynamic_maps"]) for coll, spec in manifest["collections"].items()}


def manifest_edges(db: str) -> list[tuple[str, str]]:
    manifest = json.loads((WORLDS / db / "manifest.json").read_text())
    return sorted((e["from"], e["to"]) for e in manifest["join_edges"])


@pytest.mark.parametrize("db", FIXTURE_DBS)
@pytest.mark.parametrize("seed", [0, 1, 7])
def test_dynamic_maps_equal_the_manifest(db, seed):
    backend = EmbeddedBackend(need(WORLDS / db).parent)
    index = next(grounding.build(backend, [db], seed=seed))
    assert grounding.dynamic_maps(index) == manifest_maps(db)


@pytest.mark.parametrize("db", FIXTURE_DBS)
def test_join_edges_equal_the_manifest(db):
    backend = EmbeddedBackend(need(WORLDS / db).parent)
    index = next(grounding.build(backend, [db]))
    found = sorted((f"{e['from']['collection']}.{e['from']['path']}", f"{e['to']['collection']}.{e['to']['path']}")
                   for e in index["join_edges"])
    assert found == manifest_edges(db)


def test_no_dynamic_map_in_tend_v1(tend_v1):
    backend = EmbeddedBackend(tend_v1 / "mongodb_data")
    dbs = backend.databases()
    assert len(dbs) == 23
    for index in grounding.build(backend):
        assert all(paths == [] for paths in grounding.dynamic_maps(index).values()), index["db"]


def test_atlas_exports_read_as_a_mongodb_user_expects(atlas):
    """theaters: `location` is a static record holding `address` (a static object of
    strings: street1, city, state, zipcode, plus a sparse street2 that is sometimes
    null) and a GeoJSON `geo` point whose `coordinates` is an array of exactly two
    doubles; no dynamic map anywhere. accounts: `products` is an array of strings.
    Extended JSON types survive: ObjectId ids, int theaterId."""
    backend = EmbeddedBackend(atlas)
    mflix = next(grounding.build(backend, ["sample_mflix"]))
    analytics = next(grounding.build(backend, ["sample_analytics"]))
    assert grounding.dynamic_maps(mflix) == {"sessions": [], "theaters": [], "users": []}
    assert grounding.dynamic_maps(analytics) == {"accounts": []}
    assert mflix["collections"]["theaters"] == {"count": 1564, "sampled": 400}
    assert entry(mflix, "theaters", "_id")["types"] == {"objectId": 400}
    assert entry(mflix, "theaters", "theaterId")["types"] == {"int": 400}
    assert entry(mflix, "theaters", "location")["kind"] == "object"
    address = entry(mflix, "theaters", "location.address")
    assert address["kind"] == "object"
    children = [e["path"] for e in mflix["lattice"] if e["path"].startswith("location.address.")]
    assert children == ["location.address.city", "location.address.state", "location.address.street1",
                        "location.address.street2", "location.address.zipcode"]
    street2 = entry(mflix, "theaters", "location.address.street2")
    assert street2["missing"] > 0 and street2["null"] > 0 and set(street2["types"]) == {"null", "string"}
    coords = entry(mflix, "theaters", "location.geo.coordinates")
    assert coords["kind"] == "array" and coords["array_len"] == {"min": 2, "max": 2, "mean": 2.0}
    assert entry(mflix, "theaters", "location.geo.coordinates[]")["types"] == {"double": 800}
    assert "Point" in {m["stored"] for m in mflix["values"]["point"]}
    products = entry(analytics, "accounts", "products[]")
    assert products["kind"] == "scalar" and set(products["types"]) == {"string"}
    assert mflix["top_fields"]["theaters"] == ["_id", "location", "theaterId"]


# ---------------------------------------------------------------------------
# detection thresholds, one rule at a time


def test_year_keys_make_a_map_even_in_one_document():
    assert maps_of({"c": [{"values_by_year": {"1987": {"v": 1}, "1990": {"v": 2}}}]}) == {"c": ["values_by_year"]}


@pytest.mark.parametrize("keys", [
    ["2019-01", "2019-02"], ["2019-01-05", "2019-02-11"], ["HBA1C", "A12", "B12"],
    ["5f1c0a9e", "77ab31cd"], ["42", "17", "3.5"], ["New York", "Los Angeles"],
])
def test_data_like_keys_make_a_map(keys):
    doc = {"m": {k: i for i, k in enumerate(keys)}}
    assert maps_of({"c": [doc]}) == {"c": ["m"]}


def test_keys_that_recur_as_values_make_a_map():
    codes = [{"code": c} for c in ("GLU", "LDL", "TSH")]
    docs = [{"by_code": {"GLU": 1.0, "LDL": 2.0}}, {"by_code": {"GLU": 3.0, "TSH": 1.5}}]
    assert maps_of({"labs": docs, "codes": codes}) == {"codes": [], "labs": ["by_code"]}
    # the same keys recur as nothing: a small record of descriptive names
    assert maps_of({"labs": docs}) == {"labs": []}


def test_a_single_key_recurring_as_a_value_is_not_enough():
    docs = [{"meta": {"source": 1}}, {"meta": {"source": 2}}]
    assert maps_of({"c": docs, "d": [{"x": "source"}]}) == {"c": [], "d": []}


def test_key_proliferation_makes_a_map():
    names = ["combat", "durability", "intelligence", "power", "speed", "strength", "agility", "stamina",
             "focus", "reach"]
    docs = [{"attrs": {names[i % 10]: i, names[(i + 3) % 10]: i + 1}} for i in range(20)]
    assert maps_of({"c": docs}) == {"c": ["attrs"]}


def test_too_few_distinct_keys_do_not_proliferate():
    names = ["combat", "durability", "intelligence", "power", "speed", "strength", "agility"]
    docs = [{"attrs": {names[i % 7]: i, names[(i + 3) % 7]: i + 1}} for i in range(20)]
    assert len(names) < grounding.MIN_PROLIFERATION_KEYS
    assert maps_of({"c": docs}) == {"c": []}


def test_high_key_overlap_is_a_record_with_optional_fields():
    names = [f"field_{c}" for c in "abcdefghij"]
    docs = [{"rec": {n: 1 for j, n in enumerate(names) if j != i % 10}} for i in range(20)]
    assert maps_of({"c": docs}) == {"c": []}


def test_variants_of_a_record_share_keys_so_are_not_a_map():
    # 10 distinct keys, 5 per object (ratio 2), but consecutive objects share their keys (Jaccard ~1)
    first = [f"alpha_{c}" for c in "abcde"]
    second = [f"beta_{c}" for c in "abcde"]
    docs = [{"rec": {k: 1 for k in (first if i < 10 else second)}} for i in range(20)]
    assert maps_of({"c": docs}) == {"c": []}
    shuffled = [{"rec": {k: 1 for k in (first if i % 2 else second)}} for i in range(20)]  # Jaccard 0
    assert maps_of({"c": shuffled}) == {"c": ["rec"]}


def test_regular_embedded_record_is_not_a_map():
    docs = [{"vitals": {"systolic": 120 + i, "diastolic": 80, "weight_kg": 70.5}} for i in range(50)]
    docs += [{"address": {"street": "1 Main St", "city": "Paris", "zip": "75001"}}]
    assert maps_of({"c": docs}) == {"c": []}


def test_heterogeneous_values_under_data_keys_are_not_a_map():
    docs = [{"m": {"1987": 1, "1988": "x", "1989": [1], "1990": {"a": 1}}}]
    assert maps_of({"c": docs}) == {"c": []}


def test_nulls_do_not_break_homogeneity():
    docs = [{"m": {"1987": 1, "1988": None, "1989": 2.5}}]
    assert maps_of({"c": docs}) == {"c": ["m"]}


def test_all_caps_field_names_without_digits_are_not_codes():
    docs = [{"CITY": "Oslo", "STATE": "NO", "loc": {"CITY": "Oslo", "REGION": "East"}} for _ in range(3)]
    assert maps_of({"c": docs}) == {"c": []}


def test_maps_of_maps_and_maps_inside_arrays():
    docs = [{"values_by_year": {"2019": {"HBA1C": {"n": 1}, "B12": {"n": 2}}},
             "visits": [{"doses": {"A12": 5, "B7": 10}}, {"doses": {"C3": 1}}]}]
    index = grounding.index_documents("w", {"c": docs})
    assert grounding.dynamic_maps(index) == {"c": ["values_by_year", "values_by_year.<*>", "visits[].doses"]}
    assert [e["path"] for e in index["lattice"]] == [
        "values_by_year", "values_by_year.<*>", "values_by_year.<*>.<*>", "values_by_year.<*>.<*>.n",
        "visits", "visits[]", "visits[].doses", "visits[].doses.<*>"]
    m = entry(index, "c", "values_by_year.<*>")
    assert m["example_keys"] == ["B12", "HBA1C"] and m["distinct_keys"] == 2
    assert m["concrete"] == ["values_by_year.2019"]
    assert entry(index, "c", "values_by_year.<*>.<*>.n")["concrete"] == [
        "values_by_year.2019.B12.n", "values_by_year.2019.HBA1C.n"]


def parent_path(path: str) -> str:
    """`a.b` -> `a`, `a[]` -> `a` (test keys hold no dots)."""
    return path[:-2] if path.endswith("[]") else path.rsplit(".", 1)[0]


def assert_concrete_closed(index: dict) -> None:
    """Every kept concrete path's parent is kept by the entry above (when that one is concrete too)."""
    entries = {(e["collection"], e["path"]): e for e in index["lattice"]}
    for (coll, path), e in entries.items():
        if "concrete" not in e:
            continue
        assert len(e["concrete"]) <= grounding.MAX_CONCRETE
        above = entries[(coll, parent_path(path))]
        for c in e["concrete"]:
            if "concrete" in above:
                assert parent_path(c) in above["concrete"], (path, c)


def test_concrete_paths_are_closed_under_parents_bounded_and_counted():
    # 40 years x 3 codes x {n, r[]}: more concrete paths than the bound at every level
    docs = [{"m": {str(1950 + y): {code: {"n": y, "r": [y]} for code in ("A1", "B2", "C3")}
                   for y in range(i, i + 10)}} for i in range(0, 31)]
    index = grounding.index_documents("w", {"c": docs})
    assert_concrete_closed(index)
    years = entry(index, "c", "m.<*>")
    codes = entry(index, "c", "m.<*>.<*>")
    assert len(years["concrete"]) == grounding.MAX_CONCRETE and years["concrete_dropped"] == 40 - 32
    assert codes["concrete_dropped"] == 40 * 3 - 32
    # siblings take turns: every kept year with children shows one code before any year shows two
    kept_years = {parent_path(c) for c in codes["concrete"]}
    assert len(kept_years) == grounding.MAX_CONCRETE
    for leaf in ("m.<*>.<*>.n", "m.<*>.<*>.r", "m.<*>.<*>.r[]"):
        e = entry(index, "c", leaf)
        assert len(e["concrete"]) == 32 and e["concrete_dropped"] == 40 * 3 - 32
    assert grounding.index_documents("w", {"c": docs}) == index


def test_concrete_paths_within_the_bound_are_all_kept():
    docs = [{"values_by_year": {"2019": {"HBA1C": {"n": 1}}, "2020": {"B12": {"n": 2}}}}]
    index = grounding.index_documents("w", {"c": docs})
    assert_concrete_closed(index)
    assert all("concrete_dropped" not in e for e in index["lattice"])
    assert entry(index, "c", "values_by_year.<*>.<*>.n")["concrete"] == [
        "values_by_year.2019.HBA1C.n", "values_by_year.2020.B12.n"]


@pytest.mark.parametrize("db", ["clinic", "racing", "club"])
def test_fixture_concrete_paths_are_closed(db):
    assert_concrete_closed(next(grounding.build(EmbeddedBackend(need(WORLDS / db).parent), [db])))


def test_example_keys_most_frequent_first_and_bounded():
    docs = [{"m": {str(1900 + j): j for j in range(i, i + 3)}} for i in range(20)]
    m = entry(grounding.index_documents("w", {"c": docs}), "c", "m")
    assert m["example_keys"] == ["1902", "1903", "1904", "1905", "1906", "1907", "1908", "1909"]
    assert m["distinct_keys"] == 22


# ---------------------------------------------------------------------------
# entries, prefixes, top fields


def test_presence_null_missing_empty_and_array_len():
    docs = [{"a": [1, 2]}, {"a": []}, {"a": None}, {"b": ""}, {"a": [3]}]
    index = grounding.index_documents("w", {"c": docs})
    assert entry(index, "c", "a") == {
        "collection": "c", "path": "a", "kind": "array", "types": {"array": 3, "null": 1},
        "present": 4, "null": 1, "missing": 1, "empty": 1, "array_len": {"min": 0, "max": 2, "mean": 1.0}}
    assert entry(index, "c", "a[]") == {
        "collection": "c", "path": "a[]", "kind": "scalar", "types": {"int": 3},
        "present": 2, "null": 0, "missing": 3, "empty": 0, "array_len": None}
    assert entry(index, "c", "b")["empty"] == 1


def test_prefixes_and_top_fields():
    docs = [{"_id": 1, "z": 1, "m": {"1987": {"r": [{"v": 1}]}}}]
    index = grounding.index_documents("w", {"c": docs})
    assert index["prefixes"] == {"c": ["_id", "m", "m.<*>", "m.<*>.r", "m.<*>.r.v", "z"]}
    assert index["top_fields"] == {"c": ["_id", "m", "z"]}
    assert [e["path"] for e in index["lattice"]] == ["_id", "m", "m.<*>", "m.<*>.r", "m.<*>.r[]", "m.<*>.r[].v", "z"]


def test_max_depth_bounds_the_walk():
    docs = [{"a": {"b": {"c": {"d": 1}}}}]
    index = grounding.index_documents("w", {"c": docs}, max_depth=2)
    assert [e["path"] for e in index["lattice"]] == ["a", "a.b"]


def test_empty_collection():
    index = grounding.index_documents("w", {"c": []})
    assert index["collections"] == {"c": {"count": 0, "sampled": 0}}
    assert index["lattice"] == [] and index["top_fields"] == {"c": []}


# ---------------------------------------------------------------------------
# the value index


def test_values_strings_numbers_dates_and_keys():
    when = dt.datetime(1987, 3, 5, tzinfo=UTC)
    docs = [{"name": "Hôpital St-Louis", "beds": 120, "score": 2010.0, "opened": when,
             "by_year": {"1987": 1}}]
    values = grounding.index_documents("w", {"c": docs})["values"]
    assert values["hopital st louis"] == [
        {"stored": "Hôpital St-Louis", "kind": "value", "collection": "c", "path": "name", "frequency": 1}]
    assert values["120"][0]["stored"] == 120
    assert values["2010"][0]["stored"] == 2010.0
    assert values["1987 03 05"] == [
        {"stored": when, "kind": "value", "collection": "c", "path": "opened", "frequency": 1}]
    assert values["1987"] == [
        {"stored": "1987", "kind": "key", "collection": "c", "path": "by_year", "frequency": 1},
        {"stored": when, "kind": "value", "collection": "c", "path": "opened", "frequency": 1, "part": "year"}]


def test_values_skip_booleans_object_ids_and_long_strings():
    docs = [{"_id": ObjectId("5ca4bbc7a2dd94ee5816238c"), "ok": True, "note": "x" * 65, "tag": "y" * 64}]
    values = grounding.index_documents("w", {"c": docs})["values"]
    assert sorted(values) == ["y" * 64]


def test_value_bounds_drop_the_least_frequent(monkeypatch):
    docs = [{"a": f"v{i}"} for i in range(10) for _ in range(i + 1)]
    monkeypatch.setattr(grounding, "MAX_VALUES_PER_PATH", 3)
    assert sorted(grounding.index_documents("w", {"c": docs})["values"]) == ["v7", "v8", "v9"]
    monkeypatch.setattr(grounding, "MAX_VALUES_PER_PATH", 1000)
    monkeypatch.setattr(grounding, "MAX_TERMS", 2)
    assert sorted(grounding.index_documents("w", {"c": docs})["values"]) == ["v8", "v9"]
    monkeypatch.setattr(grounding, "MAX_MATCHES_PER_TERM", 1)
    docs = [{"a": "x", "b": "x"}, {"a": "x"}]
    assert grounding.index_documents("w", {"c": docs})["values"]["x"] == [
        {"stored": "x", "kind": "value", "collection": "c", "path": "a", "frequency": 2}]


# ---------------------------------------------------------------------------
# sampling through the backend, determinism


class CountingBackend:
    """A backend without `documents`: the index may only sample and count."""

    name = "fake"

    def __init__(self, data):
        self.data = data
        self.calls = []

    def databases(self):
        return sorted(self.data)

    def collections(self, db):
        return sorted(self.data[db])

    def count(self, db, coll):
        self.calls.append(("count", db, coll))
        return len(self.data[db][coll])

    def sample(self, db, coll, n, seed=0):
        self.calls.append(("sample", db, coll, n, seed))
        return self.data[db][coll][seed:seed + n]


def test_build_samples_and_counts_through_the_backend():
    backend = CountingBackend({"w": {"c": [{"i": i} for i in range(10)]}, "v": {"d": [{"x": 1}]}})
    indexes = list(grounding.build(backend, sample=4, seed=2))
    assert [ix["db"] for ix in indexes] == ["v", "w"]
    assert indexes[1]["collections"] == {"c": {"count": 10, "sampled": 4}}
    assert indexes[1]["params"] == {"sample": 4, "seed": 2, "max_depth": 12}
    assert ("sample", "w", "c", 4, 2) in backend.calls and ("count", "w", "c") in backend.calls


def test_build_rejects_bad_options():
    with pytest.raises(InputError):
        list(grounding.build(CountingBackend({}), sample=0))


def test_index_is_deterministic_for_a_seed(tmp_path):
    docs = [{"i": i, "m": {str(1900 + i % 30): i}} for i in range(500)]
    backend = EmbeddedBackend(write_world(tmp_path, "w", {"c": docs}))
    one = io.dumps(next(grounding.build(backend, sample=50, seed=3)))
    assert one == io.dumps(next(grounding.build(EmbeddedBackend(tmp_path), sample=50, seed=3)))
    assert one != io.dumps(next(grounding.build(backend, sample=50, seed=4)))


# ---------------------------------------------------------------------------
# the command


def test_cli_index_writes_one_document_per_database(tmp_path, runner):
    write_world(tmp_path, "w", {"c": [{"values_by_year": {"1987": 1}}]})
    write_world(tmp_path, "v", {"d": [{"x": "a"}]})
    result = runner.invoke(cli, ["index", "--data", str(tmp_path)])
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert [orjson.loads(line)["db"] for line in lines] == ["v", "w"]
    w = orjson.loads(lines[1])
    assert list(w) == ["db", "params", "collections", "lattice", "prefixes", "top_fields", "join_edges", "values"]
    # the documents hold no _id: each gets one at load, as an insert would, and the index lists it first
    assert w["lattice"][0] == {"collection": "c", "path": "_id", "kind": "scalar", "types": {"objectId": 1},
                               "present": 1, "null": 0, "missing": 0, "empty": 0, "array_len": None}
    assert w["lattice"][1] == {"collection": "c", "path": "values_by_year", "kind": "dynamic_map",
                               "types": {"object": 1}, "present": 1, "null": 0, "missing": 0, "empty": 0,
                               "array_len": None, "example_keys": ["1987"], "distinct_keys": 1}


def test_cli_index_db_options_and_output_file(tmp_path, runner):
    write_world(tmp_path, "w", {"c": [{"a": 1}]})
    write_world(tmp_path, "v", {"d": [{"x": "a"}]})
    out = tmp_path / "ix.jsonl"
    result = runner.invoke(cli, ["index", "--data", str(tmp_path), "--db", "w", "--sample", "5", "-o", str(out)])
    assert result.exit_code == 0 and result.stdout == ""
    assert [orjson.loads(line)["db"] for line in out.read_bytes().splitlines()] == ["w"]
    result = runner.invoke(cli, ["index", "--data", str(tmp_path), "w", "--db", "v"])
    assert [orjson.loads(line)["db"] for line in result.stdout.splitlines()] == ["w", "v"]


def test_cli_index_errors(tmp_path, runner):
    write_world(tmp_path, "w", {"c": [{"a": 1}]})
    result = runner.invoke(cli, ["index", "--data", str(tmp_path), "--db", "nope"])
    assert result.exit_code == 1
    assert result.stderr.splitlines()[0] == f"nlq: no database 'nope' under {tmp_path} (found: w)"
    result = runner.invoke(cli, ["index", "--data", str(tmp_path), "--sample", "0"])
    assert result.exit_code == 2 and "Invalid value for '--sample': 0 is not in the range x>=1" in result.stderr
    with pytest.raises(InputError, match="--sample must be at least 1"):  # library callers
        next(grounding.build(EmbeddedBackend(tmp_path), sample=0))


def test_cli_index_writes_a_database_named_twice_once(tmp_path, runner):
    write_world(tmp_path, "w", {"c": [{"a": 1}]})
    write_world(tmp_path, "v", {"d": [{"x": "a"}]})
    result = runner.invoke(cli, ["index", "--data", str(tmp_path), "w", "v", "--db", "w", "--db", "v", "--db", "w"])
    assert result.exit_code == 0, result.stderr
    assert [orjson.loads(line)["db"] for line in result.stdout.splitlines()] == ["w", "v"]


def test_cli_index_help_has_an_example(runner):
    result = runner.invoke(cli, ["index", "--help"])
    assert result.exit_code == 0
    assert result.stdout.rstrip().splitlines()[-1].strip() == "nlq index --data example clinic | nlq card"


def test_docstring_examples():
    import doctest

    import nlq.index

    assert doctest.testmod(nlq.index).failed == 0


def test_load_reads_every_database_of_an_index_file(tmp_path):
    path = tmp_path / "ix.jsonl"
    path.write_bytes(io.dumps(grounding.index_documents("a", {"c": []})) + b"\n" + io.dumps(grounding.index_documents("b", {"c": []})))
    assert sorted(grounding.load(str(path))) == ["a", "b"]
    path.write_bytes(b'{"x": 1}\n')
    with pytest.raises(InputError, match="not an index document"):
        grounding.load(str(path))



_SCALARS = [
    "", "TG", "é", 0, -1, 2**31 - 1, 2**31, -2**31, -2**31 - 1, 2**62, 0.0, -0.0, 2.5, float("nan"),
    float("inf"), float("-inf"), True, None, Int64(7), Int64(2**40), ObjectId("5f0c3b0e9d1e8a0001a1b2c3"),
    dt.datetime(2021, 3, 4, tzinfo=dt.timezone.utc), Decimal128("1.50"), {"a": 1}, [1, "x"],
]


@pytest.mark.parametrize("value", _SCALARS, ids=repr)
def test_fast_type_and_order_keys_agree_with_the_general_ones(value):
    """The index's shortcuts for common types give bson_type's and sort_key's answers."""
    assert (grounding._PLAIN_TYPES.get(type(value)) or bson_type(value)) == bson_type(value)
    stored = grounding._Decimal(value) if type(value) is Decimal128 else value
    assert grounding._order_key(stored) == (sort_key(value), bson_type(value))
