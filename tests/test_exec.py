"""`nlq exec`: one query, --explain, --tasks (exact lines)."""

from __future__ import annotations

import json

import orjson
import pytest

from nlq.commands import cli
from tests.conftest import WORLDS
from nlq.execute import run_tasks


@pytest.fixture
def data(tmp_path):
    (tmp_path / "shop.json").write_bytes(orjson.dumps({
        "orders": [{"_id": 1, "item": "b", "qty": 2}, {"_id": 2, "item": "a", "qty": 5},
                   {"_id": 3, "item": "c", "qty": 1, "when": {"$date": "2024-01-02T00:00:00Z"}}],
        "items": [{"_id": "a", "price": 3}]}))
    return str(tmp_path)


def lines(result):
    return [json.loads(line) for line in result.output.splitlines()]


def test_exec_one_mongosh_query(runner, data):
    result = runner.invoke(cli, ["exec", "--data", data, "--db", "shop",
                                 "db.orders.find({}, {item: 1, _id: 0}).sort({item: 1}).limit(2)"])
    assert result.exit_code == 0, result.output
    assert result.output == '{"item":"a"}\n{"item":"b"}\n'


def test_exec_json_query_from_stdin_with_extended_json_out(runner, data):
    query = ('{"collection": "orders", "pipeline": [{"$match": {"qty": {"$lt": 2}}}, '
             '{"$project": {"_id": 0, "when": 1}}]}')
    result = runner.invoke(cli, ["exec", "--data", data, "--db", "shop", "-"], input=query)
    assert result.exit_code == 0, result.output
    assert result.output == '{"when":{"$date":"2024-01-02T00:00:00.000Z"}}\n'


def test_explain_prints_the_lowered_query(runner, data):
    result = runner.invoke(cli, ["exec", "--data", data, "--db", "shop", "--explain",
                                 "db.orders.find({qty: {$gt: 1}}).limit(1)"])
    assert result.exit_code == 0, result.output
    [explained] = lines(result)
    assert explained["collection"] == "orders" and explained["form"] == "find"
    assert explained["pipeline"] == [{"$match": {"qty": {"$gt": 1}}}, {"$limit": 1}]
    assert explained["mongosh"].startswith("db.orders.aggregate(")


def test_data_errors_exit_1_with_one_line(runner, data):
    for query, message in [("db.orders.aggregate([{$sortby: {a: 1}}])", "did you mean"),
                           ("db.orders.aggregate([{$out: 'x'}])", "forbidden"),
                           ("db.orders.find({a: ", "line 1")]:
        result = runner.invoke(cli, ["exec", "--data", data, "--db", "shop", query])
        assert result.exit_code == 1, result.output
        assert result.output.startswith("nlq: ") and message in result.output
    result = runner.invoke(cli, ["exec", "--data", data, "--db", "nope", "db.x.find()"])
    assert result.exit_code == 1 and "no database 'nope'" in result.output


def test_usage_errors_exit_2(runner, data):
    assert runner.invoke(cli, ["exec", "--data", data, "db.orders.find()"]).exit_code == 2  # no --db
    assert runner.invoke(cli, ["exec", "--data", data, "--db", "shop"]).exit_code == 2  # no query
    assert runner.invoke(cli, ["exec", "--data", data, "--tasks", "-", "db.orders.find()"]).exit_code == 2


TASKS = "\n".join([
    '{"id": "shop/1", "db": "shop", "gold_mql": "db.orders.countDocuments({qty: {$gte: 2}})"}',
    '{"id": "shop/2", "db": "shop", "gold": {"collection": "items", "pipeline": [{"$project": {"_id": 1}}]}}',
    '{"id": "shop/3", "db": "shop", "gold_mql": "db.orders.aggregate([{$group: {_id: null, n: {$summ: 1}}}])"}',
    '{"id": "shop/4", "gold_mql": "db.orders.find()"}',
    'not json',
    '{"id": "shop/6", "db": "shop"}',
    '{"id": "shop/7", "db": "elsewhere", "gold_mql": "db.orders.find()"}',
]) + "\n"


def test_tasks_every_record_flows_on_with_execution(runner, data):
    result = runner.invoke(cli, ["exec", "--data", data, "--tasks", "-", "--rows"], input=TASKS)
    assert result.exit_code == 0, result.output
    out = lines(result)
    assert len(out) == 7
    execution = [r["execution"] for r in out]
    assert execution[0]["rows_count"] == 1 and execution[0]["rows"] == [{"count": 2}]
    assert execution[0]["error"] is None and execution[0]["ms"] >= 0
    assert execution[1]["rows"] == [{"_id": "a"}]
    assert [e["error"]["type"] if e["error"] else None for e in execution] == [
        None, None, "unknown_operator", "input_error", "input_error", "input_error", "unknown_db"]
    assert all(e["error"] is None or e["error"]["stage"] == "exec" for e in execution)
    assert out[2]["gold_mql"].startswith("db.orders") and out[4]["line"] == 5
    assert "rows" not in execution[2]


def test_tasks_db_override(runner, data, tmp_path):
    result = runner.invoke(cli, ["exec", "--data", data, "--db", "shop", "--tasks", "-"],
                           input='{"id": "x", "db": "other", "gold_mql": "db.orders.find()"}\n')
    assert result.exit_code == 0
    [record] = lines(result)
    assert record["execution"]["rows_count"] == 3 and "rows" not in record["execution"]
    assert record["db"] == "other"


def test_run_tasks_library_keeps_input_fields(data):
    from nlq.backends import open_backend

    records = [{"id": "a", "db": "shop", "gold_mql": "db.orders.find({item: 'a'})", "labels": {"x": 1}}]
    [out] = run_tasks(records, open_backend(data=data))
    assert out["labels"] == {"x": 1} and out["execution"]["rows_count"] == 1
    assert records[0].get("execution") is None


def test_help_example_runs_on_fixtures(runner):
    if not (WORLDS / "clinic").exists():
        pytest.skip("fixtures/worlds/clinic is not present")
    result = runner.invoke(cli, ["exec", "--data", str(WORLDS), "--db", "clinic",
                                 "db.patients.find({}, {_id: 0}).limit(2)"])
    assert result.exit_code == 0 and len(result.output.splitlines()) == 2
    assert "Example" in runner.invoke(cli, ["exec", "--help"]).output


def test_tasks_help_example_runs_on_fixture_tasks(runner):
    tasks = WORLDS.parent / "tasks" / "clinic.jsonl"
    if not tasks.exists():
        pytest.skip("fixtures/tasks/clinic.jsonl is not present")
    result = runner.invoke(cli, ["exec", "--data", str(WORLDS), "--tasks", str(tasks), "--rows"])
    assert result.exit_code == 0
    out = lines(result)
    assert len(out) == len(tasks.read_text().splitlines())
    assert [r["id"] for r in out if r["execution"]["error"]] == []


# ---------------------------------------------------------------------------
# a collection the database does not hold: MongoDB's empty result, and a warning on stderr

def test_exec_warns_about_a_missing_collection_with_a_did_you_mean(runner):
    result = runner.invoke(cli, ["exec", "--data", str(WORLDS), "--db", "clinic", "db.patient.find({})"])
    assert result.exit_code == 0 and result.stdout == ""
    assert result.stderr == ("nlq: warning: database 'clinic' has no collection 'patient' "
                             "(did you mean 'patients'?); it reads as empty\n")


def test_exec_warns_about_a_missing_lookup_collection_once(runner, tmp_path):
    tasks = tmp_path / "t.jsonl"
    gold = {"collection": "patients", "pipeline": [
        {"$lookup": {"from": "labs", "localField": "patient_id", "foreignField": "patient_id", "as": "l"}},
        {"$limit": 1}]}
    tasks.write_text("\n".join(orjson.dumps({"id": i, "db": "clinic", "gold": gold}).decode() for i in range(3)))
    result = runner.invoke(cli, ["exec", "--data", str(WORLDS), "--tasks", str(tasks)])
    assert result.exit_code == 0
    assert [orjson.loads(line)["execution"]["rows_count"] for line in result.stdout.splitlines()] == [1, 1, 1]
    assert result.stderr.count("has no collection 'labs'") == 1
    assert "nlq: warning" not in result.stdout


def test_no_warning_for_existing_collections_or_documents_stages(runner):
    documents = '{"collection": "none", "pipeline": [{"$documents": [{"a": 1}]}]}'
    for query in ("db.patients.countDocuments({})", documents):
        result = runner.invoke(cli, ["exec", "--data", str(WORLDS), "--db", "clinic", query])
        assert result.exit_code == 0, result.output
        assert result.stderr == ""


def test_exec_notes_an_ignored_foreach_printjson_on_stderr(runner):
    result = runner.invoke(cli, ["exec", "--data", str(WORLDS), "--db", "clinic",
                                 "db.patients.find({}, {_id: 0, patient_id: 1}).limit(1).forEach(printjson)"])
    assert result.exit_code == 0, result.output
    assert len(result.stdout.splitlines()) == 1
    assert result.stderr == "nlq: warning: .forEach(printjson) ignored: nlq prints every row\n"
