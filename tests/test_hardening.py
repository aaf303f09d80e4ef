"""Hostile records: one regression test per finding of the hardening probe (issue 15).

Each bad record gets a bounded, typed failure and the stream goes on; a limit is an
option with a default, never a recursion accident.
"""

from __future__ import annotations

import io as stdio
import os
import subprocess
import sys

import orjson
import pytest
from bson.int64 import Int64

from nlq.commands import cli
from nlq import io, score
from nlq.backends import EmbeddedBackend
from nlq.backends.mongo import MongoBackend, _scrub, redact
from nlq.errors import InputTooDeep, OutputError
from tests.conftest import ROOT, WORLDS

GOOD = {"id": "clinic/ok", "db": "clinic", "question": "How many patients are there?",
        "gold_mql": "db.patients.countDocuments({})"}


def _deep(depth: int, leaf=1):
    value = leaf
    for _ in range(depth):
        value = {"a": value}
    return value


def _jsonl(*records) -> bytes:
    return b"".join(r if isinstance(r, bytes) else orjson.dumps(r) + b"\n" for r in records)


def _out(result) -> list[dict]:
    assert "Traceback" not in result.stderr, result.stderr
    return [orjson.loads(line) for line in result.stdout.splitlines()]


# --- 1. nesting: a typed input_too_deep for the record, the stream goes on -------------------------

def _deep_text(depth: int) -> bytes:
    return b'{"id": "deep", "x": ' + b'{"a": ' * depth + b"1" + b"}" * depth + b"}\n"


@pytest.mark.parametrize("depth", [201, 300, 1100])
@pytest.mark.parametrize("command", ["witness", "generate", "score", "exec", "import"])
def test_a_deep_record_is_input_too_deep_and_the_stream_goes_on(runner, clinic_index_file, command, depth):
    args = {"witness": ["witness", "--index", str(clinic_index_file)],
            "generate": ["generate", "--index", str(clinic_index_file)],
            "score": ["score", "--data", str(WORLDS)],
            "exec": ["exec", "--data", str(WORLDS), "--tasks", "-"],
            "import": ["import", "--format", "tend-v1"]}[command]
    result = runner.invoke(cli, args, input=_jsonl(_deep_text(depth), GOOD))
    assert result.exit_code == 0, result.output
    out = _out(result)
    assert len(out) == 2
    assert out[0]["line"] == 1 and out[0]["failure"]["type"] == "input_too_deep"
    assert "200 levels" in out[0]["failure"]["message"]


def test_nesting_limit_is_an_option(runner):
    text = _jsonl(_deep_text(20), GOOD)
    out = _out(runner.invoke(cli, ["exec", "--data", str(WORLDS), "--tasks", "-", "--max-nesting", "10"], input=text))
    assert out[0]["failure"]["type"] == "input_too_deep" and "10 levels" in out[0]["failure"]["message"]
    assert out[1]["execution"]["rows_count"] == 1
    out = _out(runner.invoke(cli, ["exec", "--data", str(WORLDS), "--tasks", "-"], input=text))
    assert out[0]["id"] == "deep"
    assert runner.invoke(cli, ["witness", "--index", "x", "--max-nesting", "251"]).exit_code == 2


def test_a_record_at_the_limit_is_read_and_written_back():
    text = _deep_text(199)
    record = io.loads(text)
    assert io.loads(io.dumps(record)) == record
    with pytest.raises(InputTooDeep):
        io.loads(_deep_text(200))


def test_nesting_depth_ignores_brackets_inside_strings():
    assert io.nesting_depth(b'{"a": "[[[{{{", "b": ["\\"[", {"c": []}]}') == 4
    assert io.nesting_depth("[]") == 1 and io.nesting_depth(b"7") == 0
    io.check_nesting(orjson.dumps({"s": "[" * 500}), 2)


def test_a_record_too_deep_to_write_becomes_a_typed_failure_in_its_place():
    buf = stdio.BytesIO()
    assert io.write_records([{"id": "a"}, {"id": "b", "x": _deep(300)}, {"id": "c"}], buf) == 3
    out = [orjson.loads(line) for line in buf.getvalue().splitlines()]
    assert [r["id"] for r in out] == ["a", "b", "c"]
    assert out[1]["failure"] == {"stage": "output", "type": "unwritable",
                                 "message": "record 2 cannot be written as JSON: it nests more than 254 levels"}


def test_deep_data_files_are_a_typed_error(tmp_path):
    (tmp_path / "d.json").write_bytes(b'{"c": [' + b"[" * 300 + b"]" * 300 + b"]}")
    with pytest.raises(InputTooDeep, match="d.json"):
        io.load_json_file(tmp_path / "d.json")


def test_a_json_array_benchmark_file_bounds_each_item(runner):
    item = {"record_id": 1, "db_id": "clinic", "nl_queries": ["q"], "MQL": "db.p.find()"}
    text = b"[" + orjson.dumps(item) + b"," + _deep_text(230).strip() + b"," + orjson.dumps(item) + b"]"
    out = _out(runner.invoke(cli, ["import", "--format", "tend-v1"], input=text))
    assert [r.get("failure", {}).get("type") for r in out] == [None, "input_too_deep", None]
    assert out[1]["item"] == 2


# --- 3. --timeout takes finite numbers only ------------------------------------------------------------

@pytest.mark.parametrize("value", ["nan", "NaN", "inf", "-inf", "0", "-1"])
def test_timeout_must_be_a_finite_positive_number(runner, value):
    result = runner.invoke(cli, ["exec", "--data", str(WORLDS), "--db", "clinic", "--timeout", value,
                                 "db.patients.countDocuments({})"])
    assert result.exit_code == 2 and "--timeout" in result.stderr


# --- 4. a full disk is one line and exit 1 ---------------------------------------------------------------

@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full on this system")
def test_a_full_disk_is_a_one_line_error(tmp_path):
    nlq = [sys.executable, "-c", "from nlq.commands import cli; cli()"]
    for redirect in (["-o", "/dev/full"], []):
        with open("/dev/full", "wb") as full:
            proc = subprocess.run(nlq + ["exec", "--data", str(WORLDS), "--db", "clinic",
                                         "db.patients.countDocuments({})"] + redirect,
                                  stdout=full if not redirect else subprocess.DEVNULL, stderr=subprocess.PIPE,
                                  cwd=ROOT, timeout=120)
        assert proc.returncode == 1, proc.stderr
        assert proc.stderr.decode().startswith("nlq: cannot write") and b"Traceback" not in proc.stderr
        assert b"No space left on device" in proc.stderr


def test_write_errors_are_output_errors():
    class Full(stdio.BytesIO):
        def write(self, data):
            raise OSError(28, "No space left on device")

    with pytest.raises(OutputError, match="No space left"):
        io.write_records([{"a": 1}], Full())


# --- 5. import splits lines at \n only -------------------------------------------------------------------

def test_import_keeps_a_bare_carriage_return_inside_a_record(runner):
    text = b'{"record_id": 1, "db_id": "clinic",\r "nl_queries": ["q"],\r\n "MQL": "db.p.find()"}\r\n'
    text = text.replace(b"\r\n ", b"\r ")
    out = _out(runner.invoke(cli, ["import", "--format", "tend-v1"], input=text + text))
    assert [r["id"] for r in out] == ["clinic/1", "clinic/1"]


# --- 9. URI secrets are never shown ----------------------------------------------------------------------

@pytest.mark.parametrize("uri, shown", [
    ("mongodb://u:p?ss@h/db", "mongodb://u:***@h/db"),
    ("mongodb://u:p/w?x@h1:27017,h2/db?replicaSet=r", "mongodb://u:***@h1:27017,h2/db?replicaSet=r"),
    ("mongodb://u:pw@h/?tlsCertificateKeyFilePassword=kfp&w=1",
     "mongodb://u:***@h/?tlsCertificateKeyFilePassword=***&w=1"),
    ("mongodb://h/?authMechanism=MONGODB-AWS&authMechanismProperties=AWS_SESSION_TOKEN:tok",
     "mongodb://h/?authMechanism=MONGODB-AWS&authMechanismProperties=***"),
    ("mongodb://h/?proxyPassword=pp", "mongodb://h/?proxyPassword=***"),
    ("mongodb:user:pw@h", "***@h"),
    ("user:pw@host", "***@host"),
    ("mongodb://user@host/db", "mongodb://user@host/db"),
])
def test_redact_hides_every_secret(uri, shown):
    assert redact(uri) == shown


def test_driver_messages_are_scrubbed_of_secrets():
    uri = "mongodb:user:s3cret@h"
    assert "s3cret" not in _scrub(f"bad port 's3cret@h' in {uri}", uri)

    def refuse(uri):
        raise ValueError(f"cannot parse {uri}: token tok9 rejected")

    with pytest.raises(Exception) as info:
        MongoBackend("mongodb://u:pw9@h/?authMechanismProperties=AWS_SESSION_TOKEN:tok9", client_factory=refuse)
    assert "pw9" not in str(info.value) and "tok9" not in str(info.value)


# --- 10. longs keep their type through a round trip -------------------------------------------------------

@pytest.mark.parametrize("value", [Int64(5), Int64(-2**31), Int64(2**31 - 1), Int64(2**31), Int64(-2**63)])
def test_a_long_reads_back_as_a_long(value):
    back = io.loads(io.dumps({"n": value}))["n"]
    assert back == value
    assert type(back) is Int64 or not -2**31 <= back < 2**31  # beyond int32 a plain int is a long


def test_a_long_survives_exec(runner):
    task = {**GOOD, "gold": {"collection": "patients",
                             "pipeline": [{"$limit": 1}, {"$project": {"_id": 0, "t": {"$type": "$n"}, "n": 1}}]},
            "n": {"$numberLong": "5"}}
    task["gold"]["pipeline"][1]["$project"]["n"] = {"$literal": Int64(5)}
    task["gold"]["pipeline"][1]["$project"]["t"] = {"$type": {"$literal": Int64(5)}}
    result = runner.invoke(cli, ["exec", "--data", str(WORLDS), "--tasks", "-", "--rows"],
                           input=io.dumps(task) + b"\n")
    line = result.stdout.splitlines()[0]
    assert '"n":{"$numberLong":"5"}' in line
    record = io.loads(line)
    assert type(record["n"]) is Int64
    assert record["execution"]["rows"] == [{"n": Int64(5), "t": "long"}]
    assert type(record["execution"]["rows"][0]["n"]) is Int64


# --- 11. --beta-sweep never changes a score ----------------------------------------------------------------

def test_beta_sweep_leaves_the_scores_alone():
    backend = EmbeddedBackend(WORLDS)
    wrong = {"collection": "patients", "pipeline": [{"$count": "n"}, {"$set": {"n": -1}}]}
    records = [{**GOOD, "id": "wrong", "prediction": wrong}, {**GOOD, "id": "none"},
               {**GOOD, "id": "right", "prediction": {"mql": GOOD["gold_mql"]}}]
    plain = list(score.run([dict(r) for r in records], backend))
    swept = list(score.run([dict(r) for r in records], backend, beta_sweep=True, summary=lambda line: None))
    assert [r["score"]["outcome"] for r in plain] == ["wrong_rows", "no_submission", "correct"]
    for a, b in zip(plain, swept):
        assert {k: v for k, v in b["score"].items() if k not in ("probes", "ms")} == \
               {k: v for k, v in a["score"].items() if k != "ms"}
        assert "probes" in b["score"]


# --- 12. question size, a BOM, concurrent writers ------------------------------------------------------------

@pytest.mark.parametrize("command", ["witness", "generate"])
def test_a_huge_question_is_input_too_large(runner, clinic_index_file, command):
    huge = {**GOOD, "id": "huge", "question": "How many patients are there? " * 200_000}
    result = runner.invoke(cli, [command, "--index", str(clinic_index_file)], input=_jsonl(huge, GOOD))
    out = _out(result)
    assert out[0]["failure"]["type"] == "input_too_large" and out[0]["failure"]["stage"] == command
    assert "4000" in out[0]["failure"]["message"] and "failure" not in out[1]
    small = runner.invoke(cli, [command, "--index", str(clinic_index_file), "--max-question-chars", "10"],
                          input=_jsonl(GOOD))
    assert _out(small)[0]["failure"]["type"] == "input_too_large"


def test_a_line_beyond_the_record_byte_limit_is_skipped_unread(runner):
    big = orjson.dumps({**GOOD, "id": "big", "pad": "x" * 5000}) + b"\n"
    for text in (_jsonl(big, GOOD), _jsonl(big.rstrip(b"\n"))):  # the long line may also be the last
        result = runner.invoke(cli, ["exec", "--data", str(WORLDS), "--tasks", "-", "--max-record-bytes", "1000"],
                               input=text)
        out = _out(result)
        assert out[0] == {"line": 1, "failure": {"stage": "exec", "type": "input_too_large", "message": (
            "line 1: the record is larger than 1000 bytes (the limit is --max-record-bytes)")},
            "execution": out[0]["execution"]}
        assert len(out) == text.count(b"\n") + (not text.endswith(b"\n"))
    line = orjson.dumps(GOOD) + b"\n"
    exact = runner.invoke(cli, ["exec", "--data", str(WORLDS), "--tasks", "-", "--max-record-bytes",
                                str(len(line) - 1)], input=line)
    assert _out(exact)[0]["execution"]["rows_count"] == 1  # the limit counts the record, not its newline


@pytest.mark.parametrize("command", ["witness", "score", "import"])
def test_a_byte_order_mark_is_not_part_of_record_one(runner, clinic_index_file, command):
    args = {"witness": ["witness", "--index", str(clinic_index_file)], "score": ["score", "--data", str(WORLDS)],
            "import": ["import", "--format", "tend-native"]}[command]
    record = {"record_id": 1, "db_id": "clinic", "NLQ": "q", "MQL": "db.p.find()"} if command == "import" else GOOD
    out = _out(runner.invoke(cli, args, input=b"\xef\xbb\xbf" + _jsonl(record, record)))
    assert all("failure" not in r for r in out) and len(out) == 2


def test_a_byte_order_mark_in_a_data_file(tmp_path):
    (tmp_path / "w.json").write_bytes(b'\xef\xbb\xbf{"c": [{"_id": 1}]}')
    assert EmbeddedBackend(tmp_path).aggregate("w", "c", []) == [{"_id": 1}]


_WRITER = """
import sys
from nlq import io
n, tag = int(sys.argv[2]), sys.argv[3]
io.write_records(({"w": tag, "i": i, "pad": tag * 70000} for i in range(n)), sys.argv[1], append=True)
"""


def test_concurrent_writers_to_one_file_never_split_a_line(tmp_path):
    target = tmp_path / "out.jsonl"
    io.write_records([{"w": "start"}], str(target))
    writers = [subprocess.Popen([sys.executable, "-c", _WRITER, str(target), "40", tag], cwd=ROOT)
               for tag in "abcd"]
    assert [w.wait(timeout=120) for w in writers] == [0, 0, 0, 0]
    lines = target.read_bytes().splitlines()
    records = [orjson.loads(line) for line in lines]  # every line is one whole record
    assert len(records) == 1 + 4 * 40
    for tag in "abcd":
        assert [r["i"] for r in records if r["w"] == tag] == list(range(40))


def test_output_without_append_starts_the_file_anew(tmp_path):
    target = tmp_path / "o.jsonl"
    target.write_text("old\n")
    io.write_records([{"a": 1}], str(target))
    assert target.read_text() == '{"a":1}\n'
    io.write_records([{"a": 2}], str(target), append=True)
    assert target.read_text() == '{"a":1}\n{"a":2}\n'
