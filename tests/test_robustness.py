"""Bad input never crashes a command: one output record per input line, in
order, typed failures for what cannot be handled, and no traceback."""

from __future__ import annotations

import orjson
import pytest

from commands import cli
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


@pytest.fixture(scope="module")
def index_file(tmp_path_factory):
    from nlq import index
    from nlq.backends import EmbeddedBackend

    path = tmp_path_factory.mktemp("idx") / "clinic.index.jsonl"
    path.write_bytes(b"".join(orjson.dumps(doc) + b"\n" for doc in index.build(EmbeddedBackend(WORLDS), ["clinic"])))
    return path


def commands(index_file):
    return {
        "witness": ["witness", "--index", str(index_file)],
        "generate": ["generate", "--index", str(index_file)],
        "score": ["score", "--data", str(WORLDS)],
        "exec": ["exec", "--data", str(WORLDS), "--tasks", "-"],
        "import": ["import", "--format", "tend-v1"],
    }


@pytest.mark.parametrize("name", ["witness", "generate", "score", "exec", "import"])
def test_garbage_in_one_record_out_per_line(runner, index_file, name):
    result = runner.invoke(cli, commands(index_file)[name], input=STDIN)
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
def test_strict_stops_at_the_first_bad_line(runner, index_file, name, first_bad):
    result = runner.invoke(cli, commands(index_file)[name] + ["--strict"], input=STDIN)
    assert result.exit_code == 1
    assert f"line {first_bad}" in result.stderr and "Traceback" not in result.stderr


def test_score_types_every_bad_gold(runner, index_file):
    result = runner.invoke(cli, commands(index_file)["score"], input=STDIN)
    by_id = {r.get("id"): r for r in map(orjson.loads, result.stdout.splitlines())}
    assert by_id["clinic/ok"]["score"]["outcome"] == "no_submission"
    for bad in ("fb", "uk", "js", "nodb"):
        assert by_id[bad]["score"]["outcome"] == "gold_error", bad
