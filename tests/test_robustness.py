"""Bad input never crashes a command: one output record per input line, in
order, typed failures for what cannot be handled, and no traceback."""

from __future__ import annotations

import orjson
import pytest

from nlq.commands import cli
from tests.conftest import WORLDS

GOOD = {"id": "clinic/ok", "db": "clinic", "question": "How many patients are there?",
        "gold_mql": "db.patients.countDocuments({})"}
LINES = [
    orjson.dumps(GOOD).decode(),
    "{truncated",                                   # malformed JSON
    "[1, 2, 3]",                                    # not an object
    '{"id": "x", "db": "clinic", "question": 7}',   # wrong type
    orjson.dumps({**GOOD, "id": "fb", "gold_mql": "db.patients.aggregate([{$out: 'x'}])"}).decode(),
    orjson.dumps({**GOOD, "id": "uk", "gold_mql": "db.patients.aggregate([{$sortby: {a: 1}}])"}).decode(),
    orjson.dumps({**GOOD, "id": "js", "gold_mql": "db.patients.find({$where: function() { return 1 }})"}).decode(),
    orjson.dumps({**GOOD, "id": "nodb", "db": "atlantis"}).decode(),
    '{"id": "bad-date", "when": {"$date": "not a date"}}',
    orjson.dumps(GOOD).decode(),
]
STDIN = "\n".join(LINES) + "\n"



def commands(clinic_index_file):
    return {
        "witness": ["witness", "--index", str(clinic_index_file)],
        "generate": ["generate", "--index", str(clinic_index_file)],
        "score": ["score", "--data", str(WORLDS)],
        "exec": ["exec", "--data", str(WORLDS), "--tasks", "-"],
        "import": ["import", "--format", "tend-v1"],
    }


@pytest.mark.parametrize("name", ["witness", "generate", "score", "exec", "import"])
def test_garbage_in_one_record_out_per_line(runner, clinic_index_file, name):
    result = runner.invoke(cli, commands(clinic_index_file)[name], input=STDIN)
    assert result.exit_code == 0, result.output
    assert result.exception is None and "Traceback" not in result.stderr
    out = [orjson.loads(line) for line in result.stdout.splitlines()]
    assert len(out) == len(LINES)
    assert out[1]["line"] == 2 and out[1]["failure"]["type"] == "malformed_input"
    assert out[2]["line"] == 3 and "expected a JSON object" in out[2]["failure"]["message"]
    assert out[8]["line"] == 9
    for record in out:
        failure = record.get("failure")
        if failure:
            assert set(failure) == {"stage", "type", "message"} and failure["message"]


# the first line each command cannot take: a task record is not a benchmark record
@pytest.mark.parametrize("name, first_bad", [("witness", 2), ("generate", 2), ("score", 2), ("exec", 2),
                                             ("import", 1)])
def test_strict_stops_at_the_first_bad_line(runner, clinic_index_file, name, first_bad):
    result = runner.invoke(cli, commands(clinic_index_file)[name] + ["--strict"], input=STDIN)
    assert result.exit_code == 1
    assert f"line {first_bad}" in result.stderr and "Traceback" not in result.stderr


def test_score_types_every_bad_gold(runner, clinic_index_file):
    result = runner.invoke(cli, commands(clinic_index_file)["score"], input=STDIN)
    by_id = {r.get("id"): r for r in map(orjson.loads, result.stdout.splitlines())}
    assert by_id["clinic/ok"]["score"]["outcome"] == "no_submission"
    for bad in ("fb", "uk", "js", "nodb"):
        assert by_id[bad]["score"]["outcome"] == "gold_error", bad


# The reviewer's triggers: each bad record is followed by a good one that must still be written.
BAD_THEN_GOOD = [
    {"id": "list-db", "db": ["clinic"], "question": "How many patients?", "gold_mql": GOOD["gold_mql"]},
    {**GOOD, "id": "after-list-db"},
    {**GOOD, "id": "oops", "witnesses": "oops"},
    {**GOOD, "id": "after-oops"},
    {**GOOD, "id": "num-question", "question": ["How", "many"]},
    {**GOOD, "id": "after-num-question"},
    {**GOOD, "id": "bad-prediction", "prediction": 7},
    {**GOOD, "id": "after-bad-prediction"},
]
# command -> the field every good record gains, and the failure type of each bad record
EXPECTED = {
    "witness": ("witnesses", {"list-db": "input_error", "num-question": "missing_question"}),
    "generate": ("prediction", {"list-db": "input_error", "oops": "input_error",
                                "num-question": "missing_question"}),
    "score": ("score", {}),
    "exec": ("execution", {}),
}


@pytest.mark.parametrize("name", list(EXPECTED))
def test_wrong_field_types_are_typed_and_the_next_record_is_written(runner, clinic_index_file, name):
    stdin = b"".join(orjson.dumps(r) + b"\n" for r in BAD_THEN_GOOD)
    result = runner.invoke(cli, commands(clinic_index_file)[name], input=stdin)
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.stderr
    out = [orjson.loads(line) for line in result.stdout.splitlines()]
    assert [r["id"] for r in out] == [r["id"] for r in BAD_THEN_GOOD]
    field, failures = EXPECTED[name]
    for record in out:
        if record["id"] in failures:
            assert record["failure"]["type"] == failures[record["id"]], record
            assert record["failure"]["stage"] == name
            if record["id"] == "list-db":
                assert record["failure"]["message"] == "the record's db must be a string, not an array"
        else:
            assert record.get("failure") is None and record[field] is not None, record


def test_score_types_wrong_field_types():
    from nlq import score
    from nlq.backends import EmbeddedBackend

    out = {r["id"]: r["score"] for r in score.run([dict(r) for r in BAD_THEN_GOOD], EmbeddedBackend(WORLDS))}
    assert (out["list-db"]["outcome"], out["list-db"]["error"]["type"]) == ("gold_error", "input_error")
    assert (out["bad-prediction"]["outcome"], out["bad-prediction"]["error"]["type"]) == ("invalid", "input_error")
    assert {s["outcome"] for k, s in out.items() if k.startswith("after")} == {"no_submission"}


def test_exec_types_a_non_string_db():
    from nlq.backends import EmbeddedBackend
    from nlq.execute import run_tasks

    out = list(run_tasks([dict(r) for r in BAD_THEN_GOOD[:2]], EmbeddedBackend(WORLDS)))
    assert out[0]["execution"]["error"] == {"stage": "exec", "type": "input_error",
                                            "message": "the record's db must be a string, not an array"}
    assert out[1]["execution"]["error"] is None and out[1]["execution"]["rows_count"] == 1


def test_witness_bug_is_an_internal_error_and_the_stream_goes_on(clinic_index_file, monkeypatch):
    from nlq import index, witness

    real = witness.find

    def find(question, ix, **opts):
        if "boom" in question:
            raise KeyError("boom")
        return real(question, ix, **opts)

    monkeypatch.setattr(witness, "find", find)
    records = [{**GOOD, "id": "x", "question": "boom?"}, dict(GOOD)]
    out = list(witness.run(records, index.load(str(clinic_index_file))))
    assert out[0]["failure"] == {"stage": "witness", "type": "internal_error", "message": "KeyError: 'boom'"}
    assert "witnesses" in out[1] and "failure" not in out[1]


def test_method_bug_is_an_internal_error_and_the_stream_goes_on(clinic_index_file, monkeypatch):
    from nlq import generate, index, methods

    impl = methods.get("rules")
    real = impl.generate

    def method(task, context):
        assert "gold_mql" not in task  # the frame still hides the gold
        if "boom" in task["question"]:
            raise ZeroDivisionError("division by zero")
        return real(task, context)

    monkeypatch.setattr(impl, "generate", method)
    records = [{**GOOD, "id": "x", "question": "boom?"}, dict(GOOD)]
    out = list(generate.run(records, "rules", generate.Context(index.load(str(clinic_index_file)))))
    assert out[0]["prediction"] is None
    assert out[0]["failure"] == {"stage": "generate", "type": "internal_error",
                                 "message": "ZeroDivisionError: division by zero"}
    assert out[1]["prediction"]["collection"] == "patients" and "failure" not in out[1]


@pytest.mark.parametrize("record, kind", [
    ({"id": "q", "db": "clinic"}, "missing_question"),
    ({"id": "q", "db": "clinic", "question": 7}, "missing_question"),
    ({"id": "q", "db": "atlantis", "question": "How many patients?"}, "unknown_db"),
])
def test_generate_failures_use_the_witness_names(clinic_index_file, record, kind):
    from nlq import generate, index

    [out] = generate.run([record], "rules", generate.Context(index.load(str(clinic_index_file))))
    assert (out["failure"]["stage"], out["failure"]["type"]) == ("generate", kind)


def test_keyboard_interrupt_is_not_swallowed(clinic_index_file, monkeypatch):
    from nlq import index, witness

    def find(question, ix, **opts):
        raise KeyboardInterrupt

    monkeypatch.setattr(witness, "find", find)
    with pytest.raises(KeyboardInterrupt):
        list(witness.run([dict(GOOD)], index.load(str(clinic_index_file))))
