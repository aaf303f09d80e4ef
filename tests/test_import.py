"""`nlq import` and nlq.importers: TEND v1 / TEND-native records -> task records."""

from __future__ import annotations

import json

import orjson
import pytest

from nlq.commands import cli
from nlq.errors import InputError
from nlq.importers import map_record, parse_map, run, to_task
from tests.conftest import FIXTURES, SHARED, need

V1 = {"record_id": 3, "db_id": "concert_singer", "nl_queries": ["How many singers?", "Count the singers."],
      "ref_sql": "SELECT count(*) FROM singer", "MQL": "db.singer.countDocuments({})"}
NATIVE = {"record_id": 8346, "db_id": "student_club", "NLQ": "Top members?", "NLQ_colloquial": "Best members?",
          "MQL": 'db.members.aggregate([{"$limit": 1}])'}


def line(obj) -> str:
    return orjson.dumps(obj).decode()


def test_tend_v1_record():
    assert to_task(V1, "tend-v1") == {
        "id": "concert_singer/3", "db": "concert_singer", "question": "How many singers?",
        "paraphrases": ["Count the singers."], "gold_mql": "db.singer.countDocuments({})",
        "labels": {"benchmark": "tend-v1", "db_id": "concert_singer", "ref_sql": "SELECT count(*) FROM singer"}}


def test_tend_native_record():
    assert to_task(NATIVE, "tend-native") == {
        "id": "student_club/8346", "db": "student_club", "question": "Top members?",
        "paraphrases": ["Best members?"], "gold_mql": 'db.members.aggregate([{"$limit": 1}])',
        "labels": {"benchmark": "tend-native", "db_id": "student_club"}}


def test_cli_jsonl_exact_lines(runner):
    bad = {"record_id": 4, "db_id": "x"}
    result = runner.invoke(cli, ["import", "--format", "tend-v1"],
                           input="\n".join([line(V1), "{not json", line(bad), line([1])]) + "\n")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    malformed = json.loads(lines[1])  # the JSON decoder's own wording follows the prefix
    assert malformed["failure"]["message"].startswith("line 2: malformed JSON: ")
    lines[1] = line({"line": 2, "failure": dict(malformed["failure"], message="...")})
    assert lines == [
        line(to_task(V1, "tend-v1")),
        line({"line": 2, "failure": {"stage": "import", "type": "malformed_input", "message": "..."}}),
        line({"id": "x/4", "line": 3, "failure": {"stage": "import", "type": "input_error",
                                                  "message": "tend-v1 record lacks nl_queries, MQL"}}),
        line({"line": 4, "failure": {"stage": "import", "type": "malformed_input",
                                     "message": "line 4: expected a JSON object, got list"}}),
    ]


def test_cli_json_array_input_and_output_file(runner, tmp_path):
    source = tmp_path / "native.json"
    source.write_text(json.dumps([NATIVE, {"db_id": "y"}, "oops"], indent=2))
    target = tmp_path / "tasks.jsonl"
    result = runner.invoke(cli, ["import", "--format", "tend-native", str(source), "-o", str(target)])
    assert result.exit_code == 0 and result.stdout == ""
    assert target.read_text().splitlines() == [
        line(to_task(NATIVE, "tend-native")),
        line({"item": 2, "failure": {"stage": "import", "type": "input_error",
                                     "message": "tend-native record lacks record_id, NLQ, MQL"}}),
        line({"item": 3, "failure": {"stage": "import", "type": "malformed_input",
                                     "message": "item 3: expected a JSON object, got str"}}),
    ]


def test_both_formats_accept_both_layouts(tmp_path):
    as_array = tmp_path / "a.json"
    as_array.write_text(json.dumps([V1]))
    as_lines = tmp_path / "b.jsonl"
    as_lines.write_text(line(NATIVE) + "\n")
    assert [r["id"] for r in run(str(as_array), "tend-v1")] == ["concert_singer/3"]
    assert [r["id"] for r in run(str(as_lines), "tend-native")] == ["student_club/8346"]


def test_strict_stops_with_exit_1(runner):
    result = runner.invoke(cli, ["import", "--format", "tend-v1", "--strict"],
                           input=line(V1) + "\n" + line({"record_id": 1}) + "\n")
    assert result.exit_code == 1
    assert result.stdout.splitlines() == [line(to_task(V1, "tend-v1"))]
    assert "line 2: tend-v1 record lacks db_id, nl_queries, MQL" in result.stderr


def test_truncated_json_array_is_a_clear_error(runner, tmp_path):
    source = tmp_path / "cut.json"
    source.write_text('[\n  {"record_id": 1,\n')
    result = runner.invoke(cli, ["import", "--format", "tend-native", str(source)])
    assert result.exit_code == 1 and "malformed JSON array" in result.stderr and result.stdout == ""


def test_wrong_field_types_are_failures():
    bad = dict(V1, nl_queries=[])
    with pytest.raises(InputError, match="nl_queries"):
        to_task(bad, "tend-v1")


def test_unknown_format_is_a_usage_error(runner):
    result = runner.invoke(cli, ["import", "--format", "spider", "-"], input="")
    assert result.exit_code == 2


def test_help_ends_with_an_example(runner):
    result = runner.invoke(cli, ["import", "--help"])
    assert result.exit_code == 0 and "| nlq import --format tend-v1" in result.stdout.splitlines()[-1]


def test_help_example_runs(runner):
    result = runner.invoke(cli, ["import", "--format", "tend-v1"],
                           input='{"record_id": 1, "db_id": "clinic", "nl_queries": ["How many patients are there?"], '
                                 '"MQL": "db.patients.countDocuments({})"}\n')
    assert json.loads(result.stdout)["id"] == "clinic/1"


def test_shared_tend_v1(runner, tend_v1):
    result = runner.invoke(cli, ["import", "--format", "tend-v1", str(tend_v1 / "test.jsonl")])
    records = [json.loads(x) for x in result.stdout.splitlines()]
    assert result.exit_code == 0 and len(records) == 524
    assert not any("failure" in r for r in records)
    assert all(r["labels"]["ref_sql"] and len(r["paraphrases"]) >= 1 for r in records)


def test_shared_tend_native(runner, tend_native):
    result = runner.invoke(cli, ["import", "--format", "tend-native", str(tend_native / "TEND_lean.json")])
    records = [json.loads(x) for x in result.stdout.splitlines()]
    assert result.exit_code == 0 and len(records) == 1210
    assert not any("failure" in r for r in records)
    assert len({r["id"] for r in records}) == 1210
    assert all(len(r["paraphrases"]) == 1 for r in records)


def test_paraphrases_make_one_task_per_phrasing_exact_lines(runner):
    record = {"record_id": 3, "db_id": "clinic", "nl_queries": ["How many patients?", "Count the patients."],
              "MQL": "db.patients.countDocuments({})"}
    result = runner.invoke(cli, ["import", "--format", "tend-v1", "--paraphrases"],
                           input=json.dumps(record) + "\n{broken\n")
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    common = '"paraphrases":[],"gold_mql":"db.patients.countDocuments({})"'
    assert lines[:2] == [
        '{"id":"clinic/3/p1","db":"clinic","question":"How many patients?",' + common
        + ',"labels":{"benchmark":"tend-v1","db_id":"clinic","paraphrase":1}}',
        '{"id":"clinic/3/p2","db":"clinic","question":"Count the patients.",' + common
        + ',"labels":{"benchmark":"tend-v1","db_id":"clinic","paraphrase":2}}']
    assert json.loads(lines[2])["failure"]["type"] == "malformed_input" and len(lines) == 3


def test_shared_tend_v1_paraphrases(tend_v1):
    tasks = list(run(str(tend_v1 / "test.jsonl"), "tend-v1", paraphrases=True))
    assert len(tasks) == len({t["id"] for t in tasks}) == 2620
    assert sorted({t["labels"]["paraphrase"] for t in tasks}) == [1, 2, 3, 4, 5]


# --- another system's predictions (--map) ----------------------------------------------

OTHER = FIXTURES / "predictions" / "other-system.jsonl"
CLINIC = FIXTURES / "tasks" / "clinic.jsonl"


def test_parse_map_pairs_and_errors():
    assert parse_map(["question=nl, db=db_id", "prediction=out.mql"]) == {
        "question": "nl", "db": "db_id", "prediction": "out.mql"}
    for bad, message in ((["nl"], "expected TARGET=FIELD"), (["answer=x"], "unknown target 'answer'"),
                         (["db=a,db=b"], "names 'db' twice"), (["db="], "expected TARGET=FIELD")):
        with pytest.raises(InputError, match=message):
            parse_map(bad)


def test_map_record_reads_any_field_names():
    record = {"nl": "How many?", "db_id": "clinic", "out": {"query": [{"$count": "n"}], "coll": "patients"},
              "qid": 7, "split": "dev"}
    task = map_record(record, parse_map(["question=nl,db=db_id,prediction=out.query,collection=out.coll,id=qid"]),
                      number=1, method="other")
    assert task == {"id": "7", "db": "clinic", "question": "How many?", "labels": {"split": "dev"},
                    "prediction": {"collection": "patients", "pipeline": [{"$count": "n"}], "method": "other"}}


def test_map_record_defaults_gold_and_no_submission():
    record = {"question": "Q?", "db": "club", "gold_mql": "db.members.countDocuments({})", "prediction": None,
              "labels": {"paraphrase": 2}}
    task = map_record(record, {}, number=4)
    assert task == {"id": "club/4", "db": "club", "question": "Q?", "gold_mql": "db.members.countDocuments({})",
                    "labels": {"paraphrase": 2}, "prediction": None}


def test_map_record_errors_are_typed():
    with pytest.raises(InputError, match=r"record lacks prediction \(field 'pred'\)"):
        map_record({"question": "Q", "db": "x"}, {"prediction": "pred"}, number=1)
    with pytest.raises(InputError, match="bare pipeline and no collection"):
        map_record({"question": "Q", "db": "x", "prediction": [{"$limit": 1}]}, {}, number=1)
    with pytest.raises(InputError, match="the prediction is a int"):
        map_record({"question": "Q", "db": "x", "prediction": 3}, {}, number=1)


def test_cli_maps_and_joins_the_shipped_example(runner):
    result = runner.invoke(cli, ["import", "--map", "question=nl,db=db_id,prediction=pred", "--tasks", str(CLINIC),
                                 "--method", "other", str(OTHER)])
    assert result.exit_code == 0, result.stderr
    records = [json.loads(x) for x in result.stdout.splitlines()]
    # joined by question (the third one is upper-cased in the file): gold and labels come from the tasks
    assert [r["id"] for r in records] == ["clinic/1", "clinic/2", "clinic/4", "clinic/5", "clinic/6"]
    assert all("gold" in r and r["labels"]["schema_flex"] for r in records)
    assert records[0]["prediction"]["method"] == "other" and records[3]["prediction"] is None


def test_the_shipped_example_scores_without_glue(runner):
    imported = runner.invoke(cli, ["import", "--map", "question=nl,db=db_id,prediction=pred", "--tasks",
                                   str(CLINIC), str(OTHER)])
    scored = runner.invoke(cli, ["score", "--data", str(FIXTURES / "worlds")], input=imported.stdout)
    assert scored.exit_code == 0, scored.stderr
    outcomes = [json.loads(x)["score"]["outcome"] for x in scored.stdout.splitlines()]
    assert outcomes == ["correct", "wrong_rows", "correct", "no_submission", "empty"]


def test_unmatched_and_ambiguous_predictions_are_failures_in_place(runner, tmp_path):
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("\n".join(line(t) for t in (
        {"id": "a/1", "db": "a", "question": "Same?"}, {"id": "a/2", "db": "a", "question": "same?"},
        {"id": "a/3", "db": "a", "question": "Other?"})) + "\n")
    preds = "\n".join(line(p) for p in ({"question": "Nope?", "db": "a", "prediction": "db.c.find()"},
                                        {"question": "Same?", "db": "a", "prediction": "db.c.find()"},
                                        {"question": "other?  ", "db": "a", "prediction": "db.c.find()"},
                                        {"id": "a/2", "question": "Same?", "db": "a", "prediction": "x"})) + "\n"
    result = runner.invoke(cli, ["import", "--tasks", str(tasks)], input=preds)
    assert result.exit_code == 0, result.stderr
    records = [json.loads(x) for x in result.stdout.splitlines()]
    assert [r.get("failure", {}).get("type") for r in records] == ["unmatched_task", "unmatched_task", None, None]
    assert "matches several tasks" in records[1]["failure"]["message"] and records[0]["line"] == 1
    assert [r.get("id") for r in records[2:]] == ["a/3", "a/2"]  # by question, then by id


def test_mapped_usage_errors(runner):
    for args in (["import", "--format", "tend-v1", "--map", "db=x"], ["import", "--map", "nope=x"], ["import"]):
        result = runner.invoke(cli, args, input="")
        assert result.exit_code == 2, (args, result.output)


def test_recorded_predictions_of_another_system(runner, tend_v1):
    recorded = need(SHARED / "recorded" / "kimi-k3.tend-v1.jsonl")
    head = b"".join(recorded.read_bytes().splitlines(keepends=True)[:40])
    result = runner.invoke(cli, ["import", "--map", "prediction=prediction.mql,method=prediction.method"],
                           input=head)
    assert result.exit_code == 0, result.stderr
    records = [json.loads(x) for x in result.stdout.splitlines()]
    assert len(records) == 40 and not any("failure" in r for r in records)
    assert all(r["prediction"]["method"] == "kimi-k3-direct" and r["gold_mql"] and r["labels"]["paraphrase"]
               for r in records)
    scored = runner.invoke(cli, ["score", "--data", str(tend_v1 / "mongodb_data")], input=result.stdout)
    assert scored.exit_code == 0, scored.stderr
    excs = [json.loads(x)["score"]["exc"] for x in scored.stdout.splitlines()]
    assert len(excs) == 40 and sum(excs) >= 20  # the recorded model is right on most of them


def test_a_null_parent_of_a_mapped_prediction_is_no_submission():
    """`--map prediction=prediction.mql` over a record whose `prediction` is null (a model that
    returned nothing) is a no-submission that keeps its id, so it pairs with the other runs."""
    mapping = parse_map(["prediction=prediction.mql,method=prediction.method"])
    out = map_record({"id": "w/1/p1", "db": "w", "question": "How many?", "prediction": None},
                     mapping, number=7)
    assert out["id"] == "w/1/p1" and out["prediction"] is None


def test_a_failed_mapped_record_keeps_its_id(tmp_path):
    source = tmp_path / "runs.jsonl"
    source.write_text('{"id": "w/1", "db": "w", "question": "Q?", "prediction": {"mql": "db.c.find()"}}\n'
                      '{"id": "w/2", "db": "w", "question": "Q?"}\n'
                      '{"db": "w", "question": "Q?"}\n')
    out = list(run(str(source), "mapped", mapping=parse_map(["prediction=prediction.mql"])))
    assert out[0]["prediction"] == {"mql": "db.c.find()"}
    assert out[1]["id"] == "w/2" and out[1]["failure"]["type"] == "input_error" and out[1]["line"] == 2
    assert "id" not in out[2] and out[2]["line"] == 3
