"""The MongoDB backend over the wire: real pymongo against a local wire-protocol server.

The server (tests/wire.py, on mockupdb) answers from the embedded engine over
the fixture worlds, so whatever the MongoBackend does — listing, counting,
sampling, cursors and batches, caps, server errors, timeouts — goes through
pymongo's connection pool and BSON exactly as against a mongod.
"""

from __future__ import annotations

import json
import time

import pytest
from bson import ObjectId

from nlq.commands import cli
from nlq import execute, index, io, score
from nlq.backends import EmbeddedBackend
from nlq.backends import mongo as mongo_backend
from nlq.backends.mongo import MongoBackend
from nlq.errors import BackendError, ExecutionError, ForbiddenOperatorError, QueryTimeout, ResultTooLarge
from tests.conftest import FIXTURES, WORLDS

# Slow on any engine: 900 documents each summing a 200 000-element range.
SLOW = [{"$project": {"s": {"$sum": {"$range": [0, 200_000]}}}}, {"$group": {"_id": None, "s": {"$sum": "$s"}}}]


@pytest.fixture
def embedded():
    return EmbeddedBackend(WORLDS)


@pytest.fixture
def backend(wire_server):
    with MongoBackend(wire_server.uri, timeout=10) as b:
        yield b


def _tasks() -> list[dict]:
    records = []
    for path in sorted((FIXTURES / "tasks").glob("*.jsonl")):
        records.extend(json.loads(line) for line in path.read_text().splitlines() if line.strip())
    return records


def test_listing_and_counts_match_the_files(backend, embedded):
    assert backend.databases() == embedded.databases()
    for db in embedded.databases():
        assert backend.collections(db) == embedded.collections(db)
        for coll in embedded.collections(db):
            assert backend.count(db, coll) == embedded.count(db, coll)


def test_unknown_database_names_the_ones_found(backend, embedded):
    with pytest.raises(BackendError, match=r"no database 'nosuch' at mongodb://127\.0\.0\.1:\d+/ "
                                           r"\(found: clinic, club, racing\)"):
        backend.collections("nosuch")
    with pytest.raises(BackendError, match=r"\(found: clinic, club, racing\)"):
        embedded.collections("nosuch")


def test_index_of_an_unknown_database_exits_1_on_both_backends(runner, wire_server):
    for flag, target in (("--uri", wire_server.uri), ("--data", str(WORLDS))):
        result = runner.invoke(cli, ["index", flag, target, "--db", "nosuch"])
        assert result.exit_code == 1, (flag, result.output)
        assert "no database 'nosuch'" in result.output and "found: clinic, club, racing" in result.output


@pytest.mark.parametrize("scan_limit", [mongo_backend.ID_SCAN_LIMIT, 0], ids=["id-scan", "index-walk"])
def test_same_seed_same_sample_on_both_backends(backend, embedded, monkeypatch, scan_limit):
    monkeypatch.setattr(mongo_backend, "ID_SCAN_LIMIT", scan_limit)
    for coll in ("patients", "lab_histories", "measurement_codes"):
        for n, seed in ((7, 0), (7, 1), (40, 3), (10_000, 0)):
            over_wire = backend.sample("clinic", coll, n, seed)
            assert over_wire == embedded.sample("clinic", coll, n, seed), (coll, n, seed)
            assert len(over_wire) == min(n, embedded.count("clinic", coll))
    assert backend.sample("clinic", "patients", 7, 0) != backend.sample("clinic", "patients", 7, 1)


def test_index_walk_crosses_id_types(wire_server, tmp_path, monkeypatch):
    # _ids of four BSON types: $gt stays within one type, the walk must still see them all in order
    docs = ([{"_id": i, "v": i} for i in range(6)] + [{"_id": f"s{i}", "v": i} for i in range(5)]
            + [{"_id": {"k": i}, "v": i} for i in range(4)] + [{"_id": ObjectId(f"{i:024x}")} for i in range(3)]
            + [{"_id": True}, {"_id": 2.5}])
    (tmp_path / "mixed.json").write_bytes(io.dumps({"things": docs}))
    monkeypatch.setattr(mongo_backend, "ID_SCAN_LIMIT", 0)
    local = EmbeddedBackend(tmp_path)
    wire_server.backend = local
    with MongoBackend(wire_server.uri) as remote:
        for n, seed in ((5, 0), (9, 2), (16, 4)):
            assert remote.sample("mixed", "things", n, seed) == local.sample("mixed", "things", n, seed)


def test_index_and_card_agree_on_both_backends(runner, wire_server):
    # a sample smaller than the collections, so the drawing rule matters
    args = ["index", "--db", "clinic", "--sample", "25", "--seed", "5"]
    over_wire = runner.invoke(cli, args + ["--uri", wire_server.uri])
    from_files = runner.invoke(cli, args + ["--data", str(WORLDS)])
    assert over_wire.exit_code == 0 and from_files.exit_code == 0, over_wire.output + from_files.output
    assert over_wire.output == from_files.output
    cards = [runner.invoke(cli, ["card"], input=out.output).output for out in (over_wire, from_files)]
    assert cards[0] == cards[1] and cards[0]


def test_fixture_golds_give_the_same_rows_over_the_wire(backend, embedded):
    records = _tasks()
    assert len(records) >= 20
    over_wire = list(execute.run_tasks(records, backend, rows=True))
    from_files = list(execute.run_tasks(records, embedded, rows=True))
    for a, b in zip(over_wire, from_files, strict=True):
        assert a["execution"]["error"] is None, a["id"]
        assert a["execution"]["rows"] == b["execution"]["rows"], a["id"]


def test_rows_span_batches_and_caps_apply(backend, wire_server):
    rows = backend.aggregate("clinic", "patients", [{"$project": {"_id": 1}}])
    assert len(rows) == 900  # 101 in the first batch, the rest by getMore
    assert "getmore" in wire_server.commands
    assert len(backend.aggregate("clinic", "patients", [], max_rows=900)) == 900
    with pytest.raises(ResultTooLarge):
        backend.aggregate("clinic", "patients", [], max_rows=899)
    with pytest.raises(ResultTooLarge):
        backend.aggregate("clinic", "patients", [], max_bytes=10_000)
    assert wire_server.open_cursors() == 0  # a capped read kills its cursor


def test_the_time_limit_travels_as_max_time_ms(backend, wire_server):
    backend.aggregate("clinic", "patients", [{"$limit": 1}], timeout=1.5)
    sent = [r for r in wire_server.requests if "aggregate" in r][-1]
    assert 0 < sent["maxTimeMS"] <= 1500
    assert sent["pipeline"][-1] == {"$limit": 100_001} and sent["allowDiskUse"] is False


def test_a_query_over_its_limit_is_a_query_timeout(backend, wire_server):
    with pytest.raises(QueryTimeout, match=r"time limit of 0\.5 s"):
        backend.aggregate("clinic", "patients", SLOW, timeout=0.5)
    wire_server.fail("aggregate", 50, "operation exceeded time limit", "MaxTimeMSExpired")
    with pytest.raises(QueryTimeout):
        backend.aggregate("clinic", "patients", [])


def test_server_errors_are_execution_errors(backend, wire_server):
    with pytest.raises(ExecutionError) as info:
        backend.aggregate("clinic", "patients", [{"$project": {"x": {"$toInt": "$patient_id"}}}])
    assert "P00001" in str(info.value) or "convert" in str(info.value).lower()
    wire_server.fail("aggregate", 16020, "Expression $add takes exactly 2 arguments")
    with pytest.raises(ExecutionError, match="takes exactly 2 arguments") as info:
        backend.aggregate("clinic", "patients", [])
    assert info.value.code == 16020


def test_forbidden_stages_never_reach_the_server(backend, wire_server):
    with pytest.raises(ForbiddenOperatorError):
        backend.aggregate("clinic", "patients", [{"$out": "x"}])
    assert "aggregate" not in wire_server.commands


def test_a_server_that_never_answers_is_a_typed_error(wire_server):
    wire_server.hang("aggregate")
    with MongoBackend(wire_server.uri, timeout=1) as backend:
        started = time.monotonic()
        with pytest.raises(QueryTimeout):
            backend.aggregate("clinic", "patients", [], timeout=0.5)
        # bounded by the client-side timeout (the bound is generous: it tells a hang from an answer)
        assert time.monotonic() - started < 5
        assert wire_server.commands.count("aggregate") == 1  # no silent retry
        wire_server.hang("listDatabases")
        wire_server.hang("listCollections")
        with pytest.raises(BackendError, match="exceeded the time limit of 1 s"):
            backend.collections("clinic")


def test_an_unreachable_server_is_a_backend_error():
    with MongoBackend("mongodb://127.0.0.1:1/?serverSelectionTimeoutMS=200") as backend:
        with pytest.raises(BackendError, match="cannot use MongoDB at mongodb://127.0.0.1:1/") as info:
            backend.aggregate("clinic", "patients", [])
    assert info.value.hint.startswith("is MongoDB running at")


def test_score_keeps_going_past_a_timed_out_record(wire_server):
    [gold] = [r for r in _tasks() if r["id"] == "clinic/1"]
    slow = {**gold, "id": "slow", "prediction": {"collection": "patients", "pipeline": SLOW}}
    fine = {**gold, "id": "fine", "prediction": gold["gold"]}
    with MongoBackend(wire_server.uri) as backend:
        out = list(score.run([slow, fine], backend, timeout=0.5))
    assert [r["score"]["outcome"] for r in out] == ["exec_error", "correct"]
    assert out[0]["score"]["error"]["type"] == "timeout"


def test_commands_close_the_backend(runner, wire_server, monkeypatch):
    closed = []
    monkeypatch.setattr(MongoBackend, "close", lambda self: closed.append(self.uri))
    result = runner.invoke(cli, ["index", "--uri", wire_server.uri, "--db", "club"])
    assert result.exit_code == 0 and closed == [wire_server.uri]
    result = runner.invoke(cli, ["exec", "--uri", wire_server.uri, "--db", "nosuch", "db.x.find({})"])
    assert closed == [wire_server.uri] * 2
    with MongoBackend(wire_server.uri) as backend:
        backend.databases()
    assert len(closed) == 3


def test_a_closed_client_is_not_used_again(wire_server):
    from pymongo.errors import InvalidOperation

    backend = MongoBackend(wire_server.uri)
    with backend:
        backend.databases()
    with pytest.raises(InvalidOperation):
        backend._client.list_database_names()


def test_index_over_the_wire_builds(backend):
    [doc] = index.build(backend, ["racing"], sample=10)
    assert doc["db"] == "racing" and doc["collections"]
