"""Behaviour every streaming command shares: progress on stderr only, records in order."""

from __future__ import annotations

import orjson
import pytest

from commands import cli
from tests.conftest import WORLDS

TASK = orjson.dumps({"id": "c/1", "db": "clinic", "question": "How many patients are there?"}).decode()


@pytest.fixture(scope="module")
def index_file(tmp_path_factory):
    from nlq import index
    from nlq.backends import EmbeddedBackend

    path = tmp_path_factory.mktemp("idx") / "clinic.index.jsonl"
    path.write_bytes(b"".join(orjson.dumps(doc) + b"\n" for doc in index.build(EmbeddedBackend(WORLDS), ["clinic"])))
    return path


@pytest.mark.parametrize("command", ["witness", "generate"])
def test_progress_goes_to_stderr_and_never_into_the_stream(runner, index_file, command):
    result = runner.invoke(cli, [command, "--index", str(index_file), "--progress"], input=TASK + "\n")
    assert result.exit_code == 0, result.output
    assert "rec" in result.stderr and f"{command}:" in result.stderr
    assert [orjson.loads(line)["id"] for line in result.stdout.splitlines()] == ["c/1"]


def test_import_progress(runner):
    line = orjson.dumps({"record_id": 1, "db_id": "d", "nl_queries": ["q?"], "MQL": "db.a.find({})"}).decode()
    result = runner.invoke(cli, ["import", "--format", "tend-v1", "--progress"], input=line + "\n")
    assert result.exit_code == 0 and "import:" in result.stderr
    assert orjson.loads(result.stdout)["id"] == "d/1"
