"""Hostile queries against the engine (issue 15, engine side): a huge flat pipeline, catastrophic
regular expressions, values that grow without bound and long window computations each end in a
typed error for the one record, within about 1.5x the time limit, and the stream goes on."""

from __future__ import annotations

import subprocess
import sys

import orjson
import pytest

from nlq.errors import ExecutionError
from nlq.mql.engine import SEGMENT, aggregate
from nlq.mql.limits import MAX_STAGES
from tests.conftest import ROOT, WORLDS

NLQ = [sys.executable, "-c", "from nlq.commands import cli; cli()"]
GOOD = {"id": "ok", "db": "clinic", "gold_mql": "db.patients.countDocuments({})"}


def _exec_tasks(*records, timeout: float = 2) -> list[dict]:
    """`nlq exec --tasks -` in a child process (a crash of the interpreter cannot take pytest down)."""
    stdin = b"".join(orjson.dumps(r) + b"\n" for r in records)
    proc = subprocess.run(NLQ + ["exec", "--data", str(WORLDS), "--timeout", str(timeout), "--tasks", "-"],
                          input=stdin, capture_output=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
    assert b"Traceback" not in proc.stderr
    out = [orjson.loads(line) for line in proc.stdout.splitlines()]
    assert [r["id"] for r in out] == [r["id"] for r in records]
    return [r["execution"] for r in out]


# --- a flat pipeline of 50,000 stages ------------------------------------------------------------

def test_a_pipeline_of_fifty_thousand_stages_is_a_typed_error_and_the_stream_goes_on():
    flat = {"id": "flat", "db": "clinic", "gold": {"collection": "patients", "pipeline": [{"$match": {}}] * 50_000}}
    hostile, good = _exec_tasks(flat, GOOD)
    assert hostile["error"]["type"] == "exec_error"
    assert f"at most {MAX_STAGES} stages" in hostile["error"]["message"]
    assert good["error"] is None and good["rows_count"] == 1


def test_a_pipeline_of_mongodb_s_maximum_length_runs():
    docs = [{"_id": i} for i in range(5)]
    assert MAX_STAGES > 2 * SEGMENT
    pipeline = [{"$match": {"_id": {"$gte": 0}}}] * (MAX_STAGES - 1) + [{"$limit": 3}]
    assert aggregate(docs, pipeline) == docs[:3]


@pytest.mark.parametrize("wrap", [
    lambda p: [{"$facet": {"f": p}}],
    lambda p: [{"$lookup": {"from": "c", "pipeline": p, "as": "x"}}],
    lambda p: [{"$unionWith": {"coll": "c", "pipeline": p}}],
])
def test_every_sub_pipeline_is_bounded_too(wrap):
    with pytest.raises(ExecutionError, match=f"at most {MAX_STAGES} stages"):
        aggregate([{"_id": 1}], wrap([{"$match": {}}] * (MAX_STAGES + 1)), catalog=lambda name: [{"_id": 2}])
