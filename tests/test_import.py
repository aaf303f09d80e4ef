"""`nlq import` and nlq.importers: TEND v1 / TEND-native records -> task records."""

from __future__ import annotations

import json

import orjson
import pytest

from nlq.commands import cli
from nlq.errors import InputError
from nlq.importers import run, to_task

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
