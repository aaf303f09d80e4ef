"""Behaviour every streaming command shares: progress on stderr only, records in order."""

from __future__ import annotations

import orjson
import pytest

from nlq.commands import cli
from tests.conftest import WORLDS

TASK = orjson.dumps({"id": "c/1", "db": "clinic", "question": "How many patients are there?"}).decode()



@pytest.mark.parametrize("command", ["witness", "generate"])
def test_progress_goes_to_stderr_and_never_into_the_stream(runner, clinic_index_file, command):
    result = runner.invoke(cli, [command, "--index", str(clinic_index_file), "--progress"], input=TASK + "\n")
    assert result.exit_code == 0, result.output
    assert "rec" in result.stderr and f"{command}:" in result.stderr
    assert [orjson.loads(line)["id"] for line in result.stdout.splitlines()] == ["c/1"]


def test_import_progress(runner):
    line = orjson.dumps({"record_id": 1, "db_id": "d", "nl_queries": ["q?"], "MQL": "db.a.find({})"}).decode()
    result = runner.invoke(cli, ["import", "--format", "tend-v1", "--progress"], input=line + "\n")
    assert result.exit_code == 0 and "import:" in result.stderr
    assert orjson.loads(result.stdout)["id"] == "d/1"


# ---------------------------------------------------------------------------
# usage errors exit 2 (SPEC: 0 success, 1 data/runtime error, 2 usage error)

CLINIC_COUNT = "db.patients.countDocuments({})"
DEAD_URI = "mongodb://127.0.0.1:1/?serverSelectionTimeoutMS=100"
BOTH = "give either --data or --uri, not both"


@pytest.mark.parametrize("args, message", [
    (["index", "--data", str(WORLDS), "--uri", "mongodb://localhost", "clinic"], BOTH),
    (["index", "--data", str(WORLDS), "--uri", f"file:{WORLDS}", "clinic"], BOTH),
    (["index", "clinic"], "no database: give --data DIR"),
    (["exec", "--db", "clinic", CLINIC_COUNT], "no database: give --data DIR"),
    (["score"], "no database: give --data DIR"),
    (["index", "--data", str(WORLDS), "--sample", "-5", "clinic"], "Invalid value for '--sample'"),
    (["index", "--data", str(WORLDS), "--max-depth", "0", "clinic"], "Invalid value for '--max-depth'"),
    (["exec", "--data", str(WORLDS), "--timeout", "0", "--db", "clinic", CLINIC_COUNT],
     "Invalid value for '--timeout'"),
    (["exec", "--data", str(WORLDS), "--max-rows", "0", "--db", "clinic", CLINIC_COUNT],
     "Invalid value for '--max-rows'"),
    (["card", "--max-entries", "-1"], "Invalid value for '--max-entries'"),
    (["generate", "-m", "card", "--index", str(WORLDS.parent / "tasks" / "clinic.jsonl")],
     "needs a model: set NLQ_BASE_URL, NLQ_API_KEY and NLQ_MODEL"),
    (["generate", "-m", "sampled", "--model", "m", "--base-url", "http://127.0.0.1:9/v1", "--index",
      str(WORLDS.parent / "tasks" / "clinic.jsonl")], "no database: give --data DIR"),
])
def test_usage_errors_exit_2(runner, args, message):
    result = runner.invoke(cli, args, input="", env={"NLQ_DATA": None, "NLQ_URI": None, "NLQ_MODEL": None,
                                                    "NLQ_BASE_URL": None})
    assert result.exit_code == 2, (result.exit_code, result.output)
    assert message in result.stderr


def test_witness_hard_max_below_zero_is_a_usage_error(runner, clinic_index_file):
    result = runner.invoke(cli, ["witness", "--index", str(clinic_index_file), "--hard-max", "-1"], input=TASK + "\n")
    assert result.exit_code == 2 and "Invalid value for '--hard-max'" in result.stderr and result.stdout == ""


def test_library_callers_still_get_typed_errors(tmp_path):
    from nlq import card
    from nlq.backends import open_backend
    from nlq.errors import InputError

    with pytest.raises(InputError, match="not both"):
        open_backend(data=str(tmp_path), uri="mongodb://localhost")
    with pytest.raises(InputError, match="not both"):
        open_backend(data=str(tmp_path), uri=f"file:{tmp_path}")
    with pytest.raises(InputError, match="no database"):
        open_backend()
    assert open_backend(uri=f"file:{tmp_path}").root == tmp_path
    with pytest.raises(InputError, match="--max-entries must be at least 0"):
        card.build({"db": "w", "collections": {}, "lattice": []}, max_entries=-1)


# ---------------------------------------------------------------------------
# an explicit flag overrides the other option's environment default


def test_data_flag_overrides_nlq_uri(runner):
    result = runner.invoke(cli, ["exec", "--data", str(WORLDS), "--db", "clinic", CLINIC_COUNT],
                           env={"NLQ_URI": DEAD_URI, "NLQ_DATA": None})
    assert result.exit_code == 0, result.output
    assert orjson.loads(result.stdout) == {"count": 900}


def test_uri_flag_overrides_nlq_data(runner, tmp_path):
    # --uri wins: the (unreachable) server is used, not the folder of NLQ_DATA
    result = runner.invoke(cli, ["exec", "--uri", DEAD_URI, "--db", "clinic", CLINIC_COUNT],
                           env={"NLQ_DATA": str(WORLDS), "NLQ_URI": None})
    assert result.exit_code == 1 and "127.0.0.1:1" in result.stderr
    result = runner.invoke(cli, ["exec", "--uri", f"file:{WORLDS}", "--db", "clinic", CLINIC_COUNT],
                           env={"NLQ_DATA": str(tmp_path), "NLQ_URI": None})
    assert result.exit_code == 0 and orjson.loads(result.stdout) == {"count": 900}


def test_environment_alone_chooses_the_backend(runner):
    args = ["exec", "--db", "clinic", CLINIC_COUNT]
    result = runner.invoke(cli, args, env={"NLQ_DATA": str(WORLDS), "NLQ_URI": None})
    assert result.exit_code == 0 and orjson.loads(result.stdout) == {"count": 900}
    result = runner.invoke(cli, args, env={"NLQ_URI": f"file:{WORLDS}", "NLQ_DATA": None})
    assert result.exit_code == 0 and orjson.loads(result.stdout) == {"count": 900}


def test_both_environment_variables_and_no_flag_is_a_usage_error(runner):
    result = runner.invoke(cli, ["exec", "--db", "clinic", CLINIC_COUNT],
                           env={"NLQ_DATA": str(WORLDS), "NLQ_URI": DEAD_URI})
    assert result.exit_code == 2 and "NLQ_DATA and NLQ_URI are both set" in result.stderr


def test_two_flags_are_a_usage_error_whatever_the_environment(runner):
    args = ["exec", "--data", str(WORLDS), "--uri", f"file:{WORLDS}", "--db", "clinic", CLINIC_COUNT]
    for env in ({"NLQ_DATA": None, "NLQ_URI": None}, {"NLQ_DATA": str(WORLDS), "NLQ_URI": f"file:{WORLDS}"}):
        result = runner.invoke(cli, args, env=env)
        assert result.exit_code == 2 and BOTH in result.stderr and result.stdout == ""
