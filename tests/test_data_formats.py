"""The files users have (issue 28): mongoexport's default and --jsonArray output, gzip, mongodump
folders; `_id` given at load as an insert gives it; decoding errors that name the byte."""

from __future__ import annotations

import datetime as dt
import gzip
import json
import re
from io import BytesIO

import bson
import pytest
from bson.int64 import Int64

from nlq import gate, io
from nlq import index as grounding
from nlq.backends import EmbeddedBackend, sampling
from nlq.backends.embedded import synthetic_id
from nlq.commands import cli
from nlq.errors import BackendError, InputError
from nlq.mql.mongosh import parse_query
from nlq.mql.values import ObjectId

UTC = dt.timezone.utc
PEOPLE = [{"name": "Ann", "age": 31}, {"name": "Bo", "age": 45}, {"name": "Cy", "age": 27}]


def lines(docs) -> bytes:
    return b"".join(json.dumps(d).encode() + b"\n" for d in docs)


def world(tmp_path, files: dict[str, bytes]):
    for name, data in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return EmbeddedBackend(tmp_path)


def plain(docs):
    return [{k: v for k, v in d.items() if k != "_id"} for d in docs]


# -- formats ------------------------------------------------------------------------------------

@pytest.mark.parametrize("name,data", [
    ("people.json", lines(PEOPLE)),  # mongoexport's default: one document per line, in a .json file
    ("people.json", json.dumps(PEOPLE).encode()),  # mongoexport --jsonArray
    ("people.json", b"\xef\xbb\xbf  \n" + json.dumps(PEOPLE, indent=2).encode()),  # --jsonArray --pretty, a BOM
    ("people.jsonl", lines(PEOPLE)),
    ("people.json.gz", gzip.compress(lines(PEOPLE))),
    ("people.json.gz", gzip.compress(json.dumps(PEOPLE).encode())),
    ("people.jsonl.gz", gzip.compress(lines(PEOPLE))),
    ("people.bson", b"".join(bson.encode(d) for d in PEOPLE)),
    ("people.bson.gz", gzip.compress(b"".join(bson.encode(d) for d in PEOPLE))),
])
def test_every_export_format_loads_the_same_documents(tmp_path, name, data):
    backend = world(tmp_path, {f"hr/{name}": data})
    assert backend.databases() == ["hr"] and backend.collections("hr") == ["people"]
    assert backend.count("hr", "people") == 3
    assert plain(backend.sample("hr", "people", 2, seed=1)) == plain(sampling.sample(PEOPLE, 2, 1))
    docs = backend.documents("hr", "people")
    assert plain(docs) == PEOPLE
    assert [d["_id"] for d in docs] == [synthetic_id("hr", "people", i) for i in range(3)]
    rows = backend.aggregate("hr", "people", [{"$match": {"age": {"$gt": 30}}}, {"$project": {"_id": 0, "name": 1}}])
    assert rows == [{"name": "Ann"}, {"name": "Bo"}]


def test_a_mongodump_folder_loads_with_its_metadata_and_prelude_ignored(tmp_path):
    oid = ObjectId("5f1d7a3b9c1e4b2a8d6f0a11")
    docs = [{"_id": oid, "n": Int64(5), "when": dt.datetime(2020, 5, 1, tzinfo=UTC), "tags": ["a"]},
            {"_id": 2, "n": 1.5, "nested": {"x": None}}]
    backend = world(tmp_path, {
        "dump/prelude.json": b'{"ServerVersion": "7.0.2", "ToolVersion": "100.9.0"}',
        "dump/shop/orders.bson": b"".join(bson.encode(d) for d in docs),
        "dump/shop/orders.metadata.json": b'{"indexes": [{"v": 2, "key": {"_id": 1}, "name": "_id_"}], "uuid": "x"}',
        "dump/shop/items.bson.gz": gzip.compress(bson.encode({"_id": "a"})),
        "dump/shop/items.metadata.json.gz": gzip.compress(b'{"indexes": []}'),
    })
    backend = EmbeddedBackend(tmp_path / "dump")
    assert backend.databases() == ["shop"]
    assert backend.collections("shop") == ["items", "orders"]
    orders = backend.documents("shop", "orders")
    assert orders == docs and type(orders[0]["n"]) is Int64 and orders[0]["when"].tzinfo is not None
    assert backend.documents("shop", "items") == [{"_id": "a"}]
    index = next(grounding.build(backend, ["shop"]))
    assert {e["path"] for e in index["lattice"] if e["collection"] == "orders"} >= {"_id", "n", "when", "tags"}


def test_a_damaged_bson_file_names_the_document_and_byte(tmp_path):
    data = bson.encode({"a": 1}) + b"\x40\x00\x00\x00garbage"
    backend = world(tmp_path, {"db/c.bson": data})
    with pytest.raises(BackendError, match=r"c\.bson, document 2 \(byte 12\): not valid BSON"):
        backend.documents("db", "c")


def test_a_damaged_gzip_file_is_a_clear_error(tmp_path):
    backend = world(tmp_path, {"db/c.jsonl.gz": gzip.compress(lines(PEOPLE))[:-12]})
    with pytest.raises(BackendError, match=r"c\.jsonl\.gz: cannot be"):
        backend.documents("db", "c")


def test_a_pretty_printed_document_in_a_json_file_says_how_json_files_are_read(tmp_path):
    backend = world(tmp_path, {"db/c.json": json.dumps(PEOPLE[0], indent=2).encode()})
    with pytest.raises(BackendError, match="does not open with '\\[' is read as one document per line"):
        backend.documents("db", "c")


def test_cli_exec_reads_mongoexport_default_output(tmp_path, runner):
    world(tmp_path, {"hr/people.json": lines(PEOPLE)})
    result = runner.invoke(cli, ["exec", "--data", str(tmp_path), "--db", "hr",
                                 "db.people.find({age: {$lt: 30}}, {_id: 0, name: 1})"])
    assert result.exit_code == 0, result.output
    assert [json.loads(line) for line in result.stdout.splitlines()] == [{"name": "Cy"}]


# -- _id as an insert gives it ---------------------------------------------------------------------

def test_a_document_without_id_gets_an_objectid_as_its_first_field(tmp_path):
    # The manual ("Documents", "Insert Documents"): an inserted document that omits _id gets an
    # ObjectId _id, and _id is always the first field (the server moves it to the front).
    backend = world(tmp_path, {"db/c.jsonl": lines([{"a": 1}, {"b": 2, "_id": 7}, {"_id": "k", "c": 3}])})
    docs = backend.documents("db", "c")
    assert [list(d) for d in docs] == [["_id", "a"], ["_id", "b"], ["_id", "c"]]
    assert isinstance(docs[0]["_id"], ObjectId) and docs[1]["_id"] == 7 and docs[2]["_id"] == "k"
    assert docs[0]["_id"] == synthetic_id("db", "c", 0)


def test_synthetic_ids_are_deterministic_unique_and_in_file_order(tmp_path):
    docs = [{"v": i} for i in range(50)]
    first = world(tmp_path / "a", {"db/c.jsonl": lines(docs)}).documents("db", "c")
    again = world(tmp_path / "b", {"db/c.json": json.dumps(docs).encode()}).documents("db", "c")
    assert first == again  # another run, another file form: the same ids
    ids = [d["_id"] for d in first]
    assert len(set(ids)) == 50 and ids == sorted(ids)
    assert ids[0] != synthetic_id("db", "other", 0)  # another collection, other ids
    # past the 3-byte counter the ids stay unique and ascending
    assert synthetic_id("db", "c", (1 << 24) - 1) < synthetic_id("db", "c", 1 << 24) < synthetic_id("db", "c", 1 << 25)
    # after every ObjectId a server made (timestamp ffffffff): a fresh insert's sorts last too
    assert ids[0] > ObjectId("65a0f00d" + "0" * 16) and ids[0].generation_time.year == 2106


def test_the_tend_v1_layout_gets_ids_too(tmp_path):
    backend = world(tmp_path, {"shop.json": json.dumps({"c": [{"a": 1}], "d": [{"_id": 5}]}).encode()})
    assert backend.documents("shop", "c") == [{"_id": synthetic_id("shop", "c", 0), "a": 1}]
    assert backend.documents("shop", "d") == [{"_id": 5}]


def test_group_by_id_gives_one_group_per_document_and_find_shows_id(tmp_path):
    backend = world(tmp_path, {"shop/Customers.json": lines(PEOPLE)})
    groups = backend.aggregate("shop", "Customers", [{"$group": {"_id": "$_id", "n": {"$sum": 1}}}])
    assert len(groups) == 3 and all(g["n"] == 1 for g in groups)
    assert all("_id" in row for row in backend.aggregate("shop", "Customers", [{"$match": {}}]))


def test_the_index_lists_id_and_the_gate_accepts_grouping_by_it(tmp_path):
    backend = world(tmp_path, {"shop/Customers.json": lines(PEOPLE)})
    index = next(grounding.build(backend, ["shop"]))
    id_entry = next(e for e in index["lattice"] if e["path"] == "_id")
    assert id_entry["types"] == {"objectId": 3} and id_entry["present"] == 3
    query = parse_query('db.Customers.aggregate([{$group: {_id: "$_id", n: {$sum: 1}}}])')
    assert gate.run(query, index, "how many customers") == []


def test_every_command_sees_the_same_ids(tmp_path, runner):
    world(tmp_path, {"shop/c.jsonl": lines(PEOPLE)})
    out = []
    for _ in range(2):
        result = runner.invoke(cli, ["exec", "--data", str(tmp_path), "--db", "shop", "db.c.find({name: 'Bo'})"])
        assert result.exit_code == 0, result.output
        out.append(json.loads(result.stdout))
    assert out[0] == out[1] == {"_id": {"$oid": str(synthetic_id("shop", "c", 1))}, "name": "Bo", "age": 45}


def test_array_files_sample_like_reading_them_whole(tmp_path):
    docs = [{"v": i, **({"_id": {"$oid": f"{(i * 7919) % 97:024x}"}} if i % 3 else {})} for i in range(60)]
    data = json.dumps(docs).encode()
    lazy = world(tmp_path / "a", {"db/c.json": data})
    whole = world(tmp_path / "b", {"db/c.json": data}).documents("db", "c")
    assert lazy.count("db", "c") == 60
    for n, seed in [(5, 0), (17, 3), (80, 1)]:
        assert lazy.sample("db", "c", n, seed) == sampling.sample(whole, n, seed)
    assert lazy.documents("db", "c") == whole


@pytest.mark.parametrize("data,message", [
    (b'[{"a": 1}, 5]', "element 2: expected a document, got a number"),
    (b'[{"a": 1}, [{"b": 2}]]', "element 2: expected a document, got an array"),
    (b'[{"a": 1}, {"$oid": "5f1d7a3b9c1e4b2a8d6f0a11"}]', "element 2: expected a document, got ObjectId"),
    (b'[{"a": 1}', "malformed JSON: unexpected end of data"),
    (b'[{"a": 1}] {"b": 2}', "malformed JSON"),
    (b'[{"a": "}"}, {"b": "\\\"["}, 7]', "element 3: expected a document"),
])
def test_an_array_file_that_is_not_one_of_documents_is_reported_by_the_index(tmp_path, data, message):
    backend = world(tmp_path, {"db/c.json": data})
    with pytest.raises((BackendError, InputError), match=re.escape(message)):
        backend.count("db", "c")
        backend.sample("db", "c", 10)  # a wrapper element is known once parsed
    with pytest.raises((BackendError, InputError), match=re.escape(message)):
        EmbeddedBackend(tmp_path).documents("db", "c")


@pytest.mark.parametrize("text", [
    json.dumps([{"s": "}{][,\\\"", "t": [{"u": "]"}, {}]}, {}, {"n": [[1, 2], {"v": {"w": "{"}}]}]).encode(),
    b'[ {"a": 1} ,\n\n {"b": "x\\\\"} ]', b"[]", b'[{"a": "}"}, 7]', b'[{"a": 1}, {"b": "open}]',
])
def test_array_spans_are_the_same_whatever_the_piece_size(text):
    from nlq.backends.embedded import _element_spans

    whole = _element_spans(text, chunk=1 << 30)
    assert all(_element_spans(text, chunk=k) == whole for k in (1, 2, 3, 5, 8, 13))
    if whole:
        assert [json.loads(text[i:j]) for i, j in zip(*whole)] == json.loads(text)


def test_array_spans_survive_brackets_quotes_and_escapes_in_strings(tmp_path):
    docs = [{"s": "}{][,"}, {"s": 'a\\"b\\', "t": ["x", {"u": "]"}]}, {}, {"n": [[1, 2], {"v": {}}]}]
    backend = world(tmp_path, {"db/c.json": json.dumps(docs).encode()})
    assert backend.count("db", "c") == 4
    assert plain(backend.sample("db", "c", 10)) == docs


# -- decoding errors ----------------------------------------------------------------------------

LATIN1 = b'{"name": "Jos\xe9"}\n'  # the byte \xe9 is column 14


def test_a_latin1_byte_in_a_line_file_is_reported_at_its_column(tmp_path):
    backend = world(tmp_path, {"db/c.jsonl": b'{"a": 1}\n' + LATIN1})
    with pytest.raises(BackendError) as caught:
        backend.documents("db", "c")
    assert "c.jsonl, line 2: malformed JSON: not valid UTF-8: the byte 0xe9 at column 14" in str(caught.value)
    assert "surrogates" not in str(caught.value)


def test_a_latin1_byte_in_an_array_file_is_reported_at_its_line_and_column(tmp_path):
    backend = world(tmp_path, {"db/c.json": b'[{"a": 1},\n' + LATIN1.rstrip() + b"]"})
    assert backend.count("db", "c") == 2  # counting splits the array without parsing its documents
    for read in (lambda: backend.sample("db", "c", 5), lambda: EmbeddedBackend(tmp_path).documents("db", "c")):
        with pytest.raises(InputError, match="not valid UTF-8: the byte 0xe9 at line 2 column 14"):
            read()


def test_jsonl_records_name_the_byte_too():
    [record] = io.read_records(BytesIO(LATIN1))
    assert record["line"] == 1 and record["failure"]["message"].startswith(
        "line 1: malformed JSON: not valid UTF-8: the byte 0xe9 at column 14")


# -- warnings a user needs ------------------------------------------------------------------------

def test_a_misspelled_field_is_warned_with_a_did_you_mean(tmp_path, runner):
    world(tmp_path, {"hr/people.jsonl": lines(PEOPLE + [{"name": "Di", "address": {"city": "Oslo"}}])})
    result = runner.invoke(cli, ["exec", "--data", str(tmp_path), "--db", "hr",
                                 "db.people.countDocuments({nmae: 'Ann', 'address.ctiy': 'Oslo', age: 3})"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {"count": 0}
    assert "no document of the 4 sampled in 'people' has the field 'nmae' (did you mean 'name'?); " \
           "it reads as missing" in result.stderr
    assert "has the field 'address.ctiy' (did you mean 'address.city'?)" in result.stderr
    assert "'age'" not in result.stderr and "'_id'" not in result.stderr  # stored fields, _id included


def test_fields_inside_arrays_and_computed_fields_are_not_warned(tmp_path, runner):
    world(tmp_path, {"hr/people.jsonl": lines([{"jobs": [{"title": "x"}], "n": 1}])})
    result = runner.invoke(cli, ["exec", "--data", str(tmp_path), "--db", "hr",
                                 "db.people.aggregate([{$match: {'jobs.title': 'x', 'jobs.0.title': 'x'}}, "
                                 "{$addFields: {m: '$n'}}, {$match: {m: 1}}])"])
    assert result.exit_code == 0, result.output
    assert "warning" not in result.stderr


def test_the_row_cap_error_names_the_option_that_lifts_it(tmp_path, runner):
    world(tmp_path, {"hr/people.jsonl": lines(PEOPLE)})
    result = runner.invoke(cli, ["exec", "--data", str(tmp_path), "--db", "hr", "--max-rows", "2", "db.people.find()"])
    assert result.exit_code != 0
    assert "more than 2 rows (the row cap; raise it with --max-rows)" in result.output + result.stderr


def test_the_time_limit_error_names_the_option_that_lifts_it():
    from nlq.errors import QueryTimeout
    from nlq.mql.engine import aggregate

    slow = [{"s": "a" * 30 + "!"} for _ in range(2000)]
    with pytest.raises(QueryTimeout, match=r"raise it with --timeout"):
        aggregate(slow, [{"$match": {"s": {"$regex": "(a+)+$"}}}], timeout=0.05)


def test_an_unreachable_server_costs_one_wait_whatever_the_command_asks_first(monkeypatch, runner):
    from nlq.backends.mongo import MongoBackend

    pings = []
    original = MongoBackend._reach

    def counted(self):
        pings.append(1)
        return original(self)

    monkeypatch.setattr(MongoBackend, "_reach", counted)
    uri = "mongodb://127.0.0.1:9/?serverSelectionTimeoutMS=200"
    result = runner.invoke(cli, ["exec", "--uri", uri, "--db", "shop", "db.c.find({a: 1})"])
    assert result.exit_code == 1 and "cannot use MongoDB at" in result.stderr
    assert len(pings) == 1  # exec used to wait once for the collection check and once more for the query
