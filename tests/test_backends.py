"""The MongoDB backend against a fake client (no server runs here), and the embedded one."""

from __future__ import annotations

import re
import warnings

import pytest

from nlq.backends import EmbeddedBackend, open_backend
from nlq.backends.mongo import MongoBackend, redact
from nlq.errors import BackendError, ExecutionError, ForbiddenOperatorError, QueryTimeout, ResultTooLarge

mongomock_ng = pytest.importorskip("mongomock_ng")


@pytest.fixture
def client():
    c = mongomock_ng.MongoClient(tz_aware=True)
    c.shop.orders.insert_many([{"_id": i, "item": "abc"[i % 3], "qty": i} for i in range(10)])
    c.shop.items.insert_many([{"_id": "a"}, {"_id": "b"}])
    return c


@pytest.fixture
def backend(client):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield MongoBackend("mongodb://reader:s3cret@db.example:27017/", client_factory=lambda uri: client)


def test_listing_and_counting(backend):
    assert backend.databases() == ["shop"]
    assert backend.collections("shop") == ["items", "orders"]
    assert backend.count("shop", "orders") == 10
    with pytest.raises(BackendError, match="no database 'nope'"):
        backend.collections("nope")


def test_sample_is_deterministic_and_seeded(backend):
    first = backend.sample("shop", "orders", 3, seed=7)
    assert first == backend.sample("shop", "orders", 3, seed=7)
    assert len(first) == 3 and [d["_id"] for d in first] == sorted(d["_id"] for d in first)
    assert [d["_id"] for d in backend.sample("shop", "orders", 50)] == list(range(10))


def test_aggregate_passes_limits_and_caps_rows(backend):
    rows = backend.aggregate("shop", "orders", [{"$match": {"item": "a"}}, {"$sort": {"qty": -1}}])
    assert [r["qty"] for r in rows] == [9, 6, 3, 0]
    assert len(backend.aggregate("shop", "orders", [], max_rows=10)) == 10
    with pytest.raises(ResultTooLarge):
        backend.aggregate("shop", "orders", [], max_rows=9)


def test_forbidden_pipelines_are_never_sent():
    calls = []

    class Spy:
        def __getitem__(self, name):
            calls.append(name)
            return self

        def aggregate(self, *args, **kwargs):
            calls.append("aggregate")
            return iter([])
    backend = MongoBackend("mongodb://h/", client_factory=lambda uri: Spy())
    with pytest.raises(ForbiddenOperatorError, match=r"^\$out is forbidden \(nlq runs only read-only"):
        backend.aggregate("db", "c", [{"$match": {}}, {"$out": "x"}])
    assert "aggregate" not in calls


class _FakeCollection:
    """Records the aggregate call and raises what a server would."""

    def __init__(self, error=None, rows=()):
        self.error, self.rows, self.calls = error, list(rows), []

    def aggregate(self, pipeline, **kwargs):
        self.calls.append((pipeline, kwargs))
        if self.error is not None:
            raise self.error
        return iter(self.rows)


class _FakeClient:
    def __init__(self, collection):
        self.collection = collection

    def __getitem__(self, name):
        return {"c": self.collection} if name == "db" else {}


def test_aggregate_options_sent_to_the_server():
    coll = _FakeCollection(rows=[{"a": 1}])
    backend = MongoBackend("mongodb://h/", client_factory=lambda uri: _FakeClient(coll))
    assert backend.aggregate("db", "c", [{"$match": {}}], timeout=1.5, max_rows=7) == [{"a": 1}]
    pipeline, kwargs = coll.calls[0]
    assert pipeline == [{"$match": {}}, {"$limit": 8}]
    assert kwargs == {"allowDiskUse": False}  # maxTimeMS comes from pymongo.timeout (tests/test_wire.py)


def test_server_errors_become_typed_errors():
    from pymongo.errors import ExecutionTimeout, OperationFailure, ServerSelectionTimeoutError

    cases = [(ExecutionTimeout("operation exceeded time limit", 50), QueryTimeout),
             (OperationFailure("bad", 16020, {"errmsg": "Expression $add takes exactly 2 arguments", "code": 16020}),
              ExecutionError),
             (ServerSelectionTimeoutError("localhost:27017: connection refused"), BackendError)]
    for error, expected in cases:
        client = _FakeClient(_FakeCollection(error))
        backend = MongoBackend("mongodb://u:pw@localhost/", client_factory=lambda uri: client)
        with pytest.raises(expected) as info:
            backend.aggregate("db", "c", [])
        if expected is BackendError:
            assert info.value.hint == "is MongoDB running at mongodb://u:***@localhost/?"
            assert "pw" not in str(info.value)
        if expected is ExecutionError:
            assert "takes exactly 2 arguments" in str(info.value)


def test_bad_uri_is_a_backend_error():
    def refuse(uri):
        from pymongo.errors import InvalidURI

        raise InvalidURI("Invalid URI scheme")
    with pytest.raises(BackendError, match="Invalid URI scheme") as info:
        MongoBackend("nosql://x", client_factory=refuse)
    assert info.value.hint.startswith("check the URI")


def test_unreachable_server_hint_names_the_host():
    def refuse(uri):
        from pymongo.errors import ServerSelectionTimeoutError

        raise ServerSelectionTimeoutError("127.0.0.1:1: Connection refused")
    with pytest.raises(BackendError, match="Connection refused") as info:
        MongoBackend("mongodb://u:pw@127.0.0.1:1", client_factory=refuse)
    assert info.value.hint == "is MongoDB running at mongodb://u:***@127.0.0.1:1?"


def test_redact():
    assert redact("mongodb+srv://user:p%40ss@cluster0.example.net/db") == \
        "mongodb+srv://user:***@cluster0.example.net/db"
    assert redact("mongodb://localhost:27017") == "mongodb://localhost:27017"
    # a password with an unescaped '@' is hidden up to the last '@' before the hosts
    assert redact("mongodb://u:sec@ret@host/db?w=1") == "mongodb://u:***@host/db?w=1"
    assert redact("mongodb://u:a/b@h1:27017,h2") == "mongodb://u:***@h1:27017,h2"
    assert redact("mongodb://user@host") == "mongodb://user@host"
    assert redact("not a uri") == "not a uri"


def test_open_backend_chooses_by_option(tmp_path):
    assert open_backend(data=str(tmp_path)).name == "embedded"
    assert open_backend(uri=f"file:{tmp_path}").name == "embedded"


def test_exec_command_over_uri_uses_the_mongo_backend(runner, client, monkeypatch):
    import json

    from nlq.commands import cli
    from nlq.backends import mongo

    monkeypatch.setattr(mongo, "_pymongo_client", lambda uri: client)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = runner.invoke(cli, ["exec", "--uri", "mongodb://localhost/", "--db", "shop",
                                     "db.orders.find({item: 'b'}, {_id: 1}).sort({_id: -1})"])
    assert result.exit_code == 0, result.output
    assert [json.loads(line) for line in result.output.splitlines()] == [{"_id": 7}, {"_id": 4}, {"_id": 1}]


# ---------------------------------------------------------------------------
# malformed data lines: reported once with the file and the line; fatal, or skipped on request

@pytest.fixture
def bad_data(tmp_path):
    folder = tmp_path / "data" / "shop"
    folder.mkdir(parents=True)
    (folder / "items.jsonl").write_text('{"_id": 1}\n{"_id": 2,\n{"_id": 3}\n[4]\n')
    (folder / "tags.json").write_text('[{"_id": 1}, 5]')
    return tmp_path / "data"


@pytest.mark.parametrize("args", [
    ["exec", "--db", "shop", "db.items.countDocuments({})"],
    ["index", "shop"],
])
def test_a_malformed_data_line_stops_with_the_file_and_line_once(runner, bad_data, args):
    from nlq.commands import cli

    result = runner.invoke(cli, args[:1] + ["--data", str(bad_data)] + args[1:])
    assert result.exit_code == 1 and result.stdout == ""
    first = result.stderr.splitlines()[0]
    assert first == (f"nlq: {bad_data / 'shop' / 'items.jsonl'}, line 2: malformed JSON: "
                     "unexpected end of data (at the end of the line) (and 1 more)")
    assert len(re.findall(r"line \d+", first)) == 1 and "--skip-bad-lines" in result.stderr  # and the way out


def test_skip_bad_lines_skips_them_with_one_warning_per_file(runner, bad_data):
    from nlq.commands import cli

    # a collection is read when a query first uses it: here both (and each file warns once)
    result = runner.invoke(cli, ["exec", "--data", str(bad_data), "--db", "shop", "--skip-bad-lines",
                                 'db.items.aggregate([{$unionWith: "tags"}, {$unionWith: "items"}, '
                                 '{$count: "count"}])'])
    assert result.exit_code == 0, result.output
    assert result.stdout == '{"count":5}\n'
    warnings_ = result.stderr.splitlines()
    assert warnings_ == [f"nlq: warning: {bad_data / 'shop' / 'items.jsonl'}: skipped 2 malformed lines "
                         "(first: line 2: malformed JSON: unexpected end of data (at the end of the line))",
                         f"nlq: warning: {bad_data / 'shop' / 'tags.json'}: skipped 1 malformed line "
                         "(first: element 2: expected a document, got a number)"]


def test_an_array_element_that_is_not_a_document_is_fatal_by_default(bad_data):
    (bad_data / "shop" / "items.jsonl").unlink()
    with pytest.raises(BackendError, match=r"tags.json, element 2: expected a document, got a number$"):
        EmbeddedBackend(bad_data).count("shop", "tags")  # read when first used, not when listed
