"""Property suite: hostile records for every streaming command (issue 15).

Hypothesis builds batches of input lines — valid task records with fields of the wrong
type, records nested past the limits, huge strings and numbers, NaN, invalid UTF-8, a byte
order mark, bare carriage returns, truncated JSON, and pipelines that run away (deep, long,
catastrophic regular expressions, doubling values) — and checks the invariants of every
streaming command: exit 0, no traceback, exactly one output record per input line, in
order, and every failure typed `{stage, type, message}`. `index`, `card` and `report`
(which read whole files) must end in exit 0 or a one-line `nlq: ...` error, never a traceback.

`make test` runs a few examples per command; `make fuzz` runs many more
(NLQ_FUZZ_EXAMPLES per property, 200 by default there; `make fuzz FUZZ_EXAMPLES=1000`).
"""

from __future__ import annotations

import os

import orjson
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from nlq.commands import cli
from tests.conftest import WORLDS

EXAMPLES = int(os.environ.get("NLQ_FUZZ_EXAMPLES", "6"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize="NLQ_FUZZ_EXAMPLES" not in os.environ,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.function_scoped_fixture])

GOOD = {"db": "clinic", "question": "How many patients are there?", "gold_mql": "db.patients.countDocuments({})"}
A = "a" * 30 + "b"


def _deep(depth: int, leaf="1") -> str:
    return '{"a":' * depth + leaf + "}" * depth


# --- hostile values ------------------------------------------------------------------------------

scalars = st.one_of(st.none(), st.booleans(), st.integers(min_value=-(2 ** 63), max_value=2 ** 63 - 1),
                    st.floats(allow_nan=False), st.text(max_size=30),
                    st.sampled_from(["", "\r", "\ufeff", "\x00", "$", "$$NOW", "$$ROOT", "é" * 3]))
wrong_types = st.one_of(scalars, st.lists(scalars, max_size=3), st.dictionaries(st.text(max_size=5), scalars, max_size=3))

pipelines = st.sampled_from([
    [{"$match": {}}] * 1001,                                                         # too many stages
    [{"$limit": 1}, {"$project": {"x": {"$regexMatch": {"input": A, "regex": "^(a|aa)+$"}}}}],
    [{"$limit": 1}, {"$project": {"x": {"$reduce": {"input": {"$range": [0, 60]}, "initialValue": "ab",
                                                   "in": {"$concat": ["$$value", "$$value"]}}}}}],
    [{"$limit": 1}, {"$project": {"x": {"$reduce": {"input": {"$range": [0, 60]}, "initialValue": 1,
                                                   "in": ["$$value", "$$value"]}}}}],
    [{"$project": {"r": {"$range": [0, 10 ** 9]}}}],
    [{"$out": "x"}],
    [{"$sortby": {"a": 1}}],
    [{"$group": {"_id": "$name", "n": {"$sum": 1}}}, {"$sort": {"n": -1}}],
    [{"$match": {"name": {"$regex": "["}}}],
    [{"$setWindowFields": {"sortBy": {"_id": 1}, "output": {"s": {"$sum": "$x", "window": {"documents": [-5, 5]}}}}}],
    [{"$project": {"x": {"$add": ["$a", "x"]}}}],
    "not a pipeline",
])
golds = st.one_of(st.builds(lambda p: {"collection": "patients", "pipeline": p}, pipelines),
                  st.sampled_from(["db.patients.aggregate([", "db.patients.find({$where: 'sleep(1)'})",
                                   "db.patients.countDocuments({})", "x" * 5000]),
                  wrong_types)


@st.composite
def records(draw) -> dict:
    record = {**GOOD}
    for field in draw(st.lists(st.sampled_from(["id", "db", "question", "gold_mql", "gold", "prediction",
                                                "pred_mql", "witnesses", "candidates", "labels"]),
                               max_size=3, unique=True)):
        record[field] = draw(wrong_types)
    if draw(st.booleans()):
        record["gold"] = draw(golds)
    if draw(st.booleans()):
        record["prediction"] = {"collection": "patients", "pipeline": draw(pipelines), "method": "fuzz"}
    return record


def _line(kind: str, record: dict) -> bytes:
    body = orjson.dumps(record)
    if kind == "deep":
        return body[:-1] + b',"deep":' + _deep(300).encode() + b"}"
    if kind == "huge question":
        return orjson.dumps({**record, "question": "How many " * 20_000})
    if kind == "nan":
        return body[:-1] + b',"x":NaN,"y":1e400,"z":-Infinity}'
    if kind == "invalid utf-8":
        return body[:-1] + b',"x":"\xff\xfe\xc3"}'
    if kind == "carriage return":
        return body.replace(b",", b",\r", 1)
    if kind == "truncated":
        return body[: len(body) // 2]
    if kind == "not an object":  # (a first line starting with '[' would be a JSON-array benchmark file)
        return b'7 "x"' if record.get("db") == "clinic" else b'"a string"'
    if kind == "huge number":
        return body[:-1] + b',"big":123456789012345678901234567890,"neg":-9223372036854775809}'
    if kind == "extended json":
        return body[:-1] + b',"n":{"$numberLong":"x"},"d":{"$date":"never"},"o":{"$oid":"zz"}}'
    if kind == "blank":
        return b"   "
    return body


kinds = st.sampled_from(["plain", "plain", "deep", "huge question", "nan", "invalid utf-8", "carriage return",
                         "truncated", "not an object", "extended json", "blank", "huge number"])


@st.composite
def batches(draw) -> tuple[bytes, int]:
    """(stdin, number of records): lines with unique ids r0, r1, ..., maybe a BOM first
    (a blank line is no record: readers skip it)."""
    lines = []
    for i, (kind, record) in enumerate(draw(st.lists(st.tuples(kinds, records()), min_size=1, max_size=5))):
        if "id" not in record or type(record["id"]) is not str:
            record = {**record, "id": f"r{i}"}
        else:
            record["id"] = f"r{i}"
        lines.append(_line(kind, record))
    data = b"\n".join(lines) + b"\n"
    if draw(st.booleans()):
        data = b"\xef\xbb\xbf" + data
    return data, sum(1 for line in lines if line.strip())


# --- invariants ----------------------------------------------------------------------------------

def _streaming(result, n: int) -> None:
    assert result.exit_code == 0, (result.exit_code, result.stderr[-3000:], repr(result.exception))
    assert "Traceback" not in result.stderr
    out = [orjson.loads(line) for line in result.stdout.splitlines()]
    assert len(out) == n, (len(out), n, result.stdout[:3000])
    ids = [r["id"] for r in out if type(r) is dict and type(r.get("id")) is str and r["id"][:1] == "r"]
    assert ids == sorted(ids, key=lambda i: int(i[1:])), ids  # in order
    for record in out:
        assert type(record) is dict
        for value in (record, *(v for v in record.values() if type(v) is dict)):
            failure = value.get("failure") if type(value) is dict else None
            if failure is not None:
                assert set(failure) == {"stage", "type", "message"} and failure["message"], failure


def _whole_file(result) -> None:
    assert "Traceback" not in result.stderr
    assert result.exit_code in (0, 1), (result.exit_code, result.stderr[-3000:], repr(result.exception))
    if result.exit_code == 1:
        assert result.stderr.startswith("nlq: "), result.stderr[-2000:]
    assert result.exception is None or isinstance(result.exception, SystemExit)


def streaming_commands(index_file) -> dict[str, list[str]]:
    query = ["--data", str(WORLDS), "--timeout", "0.5"]
    return {
        "import": ["import", "--format", "tend-v1"],
        "exec": ["exec", *query, "--tasks", "-"],
        "witness": ["witness", "--index", str(index_file)],
        "generate": ["generate", "--method", "rules", "--index", str(index_file)],
        "score": ["score", *query],
        "repair": ["repair", *query, "--index", str(index_file)],
    }


@pytest.mark.parametrize("name", ["import", "exec", "witness", "generate", "score", "repair"])
def test_streaming_commands_keep_one_typed_record_per_line(runner, clinic_index_file, name):
    args = streaming_commands(clinic_index_file)[name]

    @FUZZ
    @given(batches())
    def check(batch):
        data, n = batch
        _streaming(runner.invoke(cli, args, input=data), n)
    check()


@FUZZ
@given(st.lists(st.tuples(kinds, records()), min_size=1, max_size=4), st.booleans())
def test_index_reads_hostile_data_files_without_a_traceback(tmp_path_factory, lines, skip_bad):
    from click.testing import CliRunner
    root = tmp_path_factory.mktemp("world")
    (root / "shop").mkdir()
    (root / "shop" / "items.jsonl").write_bytes(b"\n".join(_line(kind, record) for kind, record in lines) + b"\n")
    args = ["index", "--data", str(root)] + (["--skip-bad-lines"] if skip_bad else [])
    _whole_file(CliRunner().invoke(cli, args))


@FUZZ
@given(batches())
def test_card_and_report_read_hostile_input_without_a_traceback(batch):
    from click.testing import CliRunner
    data, _ = batch
    for args in (["card"], ["card", "--format", "json"], ["report"], ["report", "--format", "markdown"]):
        _whole_file(CliRunner().invoke(cli, args, input=data))
