"""The SAG solver (`generate --method sag`, `nlq repair` with a model) against the scripted fake server."""

from __future__ import annotations

import copy
import json

import orjson
import pytest

from nlq import generate
from nlq import index as grounding
from nlq.backends import EmbeddedBackend
from nlq.commands import cli
from nlq.llm import ChatClient, ModelConfig
from nlq.methods import sag
from tests.conftest import ROOT, WORLDS
from tests.fakellm import non_json, reply, status

TASKS = ROOT / "fixtures" / "tasks"
FEEDBACK = "It has these problems"


@pytest.fixture(scope="module")
def backend():
    return EmbeddedBackend(WORLDS)


@pytest.fixture(scope="module")
def indexes(backend):
    return {doc["db"]: doc for doc in grounding.build(backend, ["clinic"])}


@pytest.fixture(scope="module")
def index_file(tmp_path_factory, indexes):
    path = tmp_path_factory.mktemp("sag") / "clinic.index.jsonl"
    path.write_bytes(b"".join(orjson.dumps(doc) + b"\n" for doc in indexes.values()))
    return path


def task(n: int = 1) -> dict:
    return orjson.loads((TASKS / "clinic.jsonl").read_bytes().splitlines()[n - 1])


GOLD = task(1)["gold"]                     # a $match on values_by_year.2019.HBA1C.count, then $count
WRONG_PATH = copy.deepcopy(GOLD)
WRONG_PATH["pipeline"][0]["$match"] = {"values_by_year.2019.HBA1C.cnt": {"$gt": 0}}
# the same count as GOLD, another surface form
GOLD_2 = {"collection": GOLD["collection"],
          "pipeline": [GOLD["pipeline"][0], {"$group": {"_id": None, "histories": {"$sum": 1}}},
                       {"$project": {"_id": 0}}]}
OTHER = {"collection": GOLD["collection"], "pipeline": [{"$count": "histories"}]}


def client(fake, **overrides) -> ChatClient:
    settings = {"model": "fake-model", "base_url": fake.url, "backoff": 0.001, "max_retries": 1}
    settings.update(overrides)
    return ChatClient(ModelConfig(**settings))


def solve(fake, indexes, backend, records=None, **settings):
    context = generate.Context(indexes, backend=backend, model=client(fake), sag=sag.Settings(**settings))
    return list(generate.run(iter(records or [task(1)]), "sag", context))


def fix_after_feedback(body) -> dict:
    """The wrong path first; the gold once the conversation holds a repair turn."""
    last = body["messages"][-1]["content"]
    return reply(json.dumps(GOLD if FEEDBACK in last else WRONG_PATH))


def test_a_wrong_path_is_repaired_after_feedback(fake_llm, indexes, backend):
    fake_llm.responder = fix_after_feedback
    [out] = solve(fake_llm, indexes, backend, attempts=1)
    assert out["prediction"]["pipeline"] == GOLD["pipeline"]
    assert out["repair"]["rounds"] == [2] and out["repair"]["violations"] == []
    turn = fake_llm.bodies[1]["messages"]
    assert turn[-2] == {"role": "assistant", "content": json.dumps(WRONG_PATH)}
    assert "values_by_year.2019.HBA1C.cnt" in turn[-1]["content"] and "[path]" in turn[-1]["content"]
    assert out["prediction"]["usage"]["model_calls"] == 2
    assert out["prediction"]["sag"] == {"ladder": "sag", "knockouts": [], "rounds": 6, "attempts": 1,
                                        "checks": ["path", "value", "limit"], "witnesses": True,
                                        "bisection": True, "card": "full", "contract": False,
                                        "fail_closed": False, "id_leak": "objectid"}
    assert out["prediction"]["disclosure"] == ["execution_feedback", "path_card", "question", "value_witnesses"]
    assert out["prediction"]["method"] == "sag" and out["prediction"]["prompt"]["id"] == "sag"


def test_three_attempts_two_agreeing_select_their_cluster(fake_llm, indexes, backend):
    fake_llm.enqueue(json.dumps(OTHER), json.dumps(GOLD), json.dumps(GOLD_2))
    [out] = solve(fake_llm, indexes, backend)
    assert out["prediction"]["pipeline"] == GOLD["pipeline"]
    assert out["repair"]["attempts"] == 3 and out["repair"]["rounds"] == [1, 1, 1]
    assert out["repair"]["vote_share"] == pytest.approx(2 / 3, abs=1e-4) == out["prediction"]["confidence"]
    assert [c["size"] for c in out["repair"]["clusters"]] == [2, 1]
    # the attempts are separate draws for the cache
    assert len(fake_llm.requests) == 3


def test_faults_mid_loop_still_yield_one_record_each(fake_llm, indexes, backend):
    # attempt 0: a wrong path, then the endpoint fails (after its retry): the attempt keeps the wrong one;
    # attempt 1: an undecodable reply, then the gold; attempt 2: a broken body the client retries, the gold
    fake_llm.enqueue(json.dumps(WRONG_PATH), status(500), status(500), "I cannot answer that.", json.dumps(GOLD),
                     non_json(), json.dumps(GOLD))
    [out] = solve(fake_llm, indexes, backend)
    assert out["prediction"]["pipeline"] == GOLD["pipeline"], out.get("failure")
    assert out["repair"]["rounds"] == [1, 2, 1]
    # the gate admits the two gold candidates: only they vote
    assert out["repair"]["vote_share"] == 1.0 and [c["size"] for c in out["repair"]["clusters"]] == [2]
    fake_llm.reset()
    fake_llm.default = status(503)
    out = solve(fake_llm, indexes, backend, records=[task(1), task(2)])
    assert [r["failure"]["type"] for r in out] == ["no_valid_candidate"] * 2
    assert "model_http_error" in out[0]["failure"]["message"] and out[0]["failure"]["usage"]["model_calls"] == 3


def test_ladder_rungs_and_knockouts_change_what_is_done(fake_llm, indexes, backend):
    fake_llm.responder = fix_after_feedback
    [card] = solve(fake_llm, indexes, backend, ladder="card")
    # one ungated decode: the wrong path is submitted (it runs, returning no rows)
    assert card["prediction"]["pipeline"] == WRONG_PATH["pipeline"] and len(fake_llm.requests) == 1
    assert card["prediction"]["sag"]["checks"] == [] and card["repair"]["rounds"] == [1]
    assert "Value witnesses" not in fake_llm.bodies[0]["messages"][1]["content"]
    assert "value_witnesses" not in card["prediction"]["disclosure"]
    fake_llm.requests.clear()
    [gated] = solve(fake_llm, indexes, backend, ladder="gated-repair")
    assert gated["prediction"]["sag"]["checks"] == ["path"] and gated["repair"]["rounds"] == [2]
    fake_llm.requests.clear()
    [plain] = solve(fake_llm, indexes, backend, ladder="value-bisection", witnesses=False, card="top-level")
    assert plain["prediction"]["sag"]["knockouts"] == ["no-witnesses", "card:top-level"]
    user = fake_llm.bodies[0]["messages"][1]["content"]
    assert "Value witnesses" not in user and "values_by_year.<*>" not in user


def test_the_contract_arm_declares_and_checks_an_output_contract(fake_llm, indexes, backend):
    declared = {**GOLD, "contract": {"columns": ["histories"], "rows": "many", "order": "none"}}
    fixed = {**GOLD, "contract": {"columns": ["histories"], "rows": "one", "order": "none"}}
    fake_llm.enqueue(json.dumps(declared), json.dumps(fixed))
    [out] = solve(fake_llm, indexes, backend, attempts=1, contract=True)
    assert out["prediction"]["contract"] == fixed["contract"] and out["repair"]["rounds"] == [2]
    first, second = fake_llm.bodies
    assert "contract" in first["response_format"]["json_schema"]["schema"]["required"]
    assert "[contract]" in second["messages"][-1]["content"]


def test_repair_cli_with_a_model_starts_from_the_prediction(runner, fake_llm, index_file):
    fake_llm.responder = lambda body: reply(json.dumps(GOLD))
    records = [dict(task(1), prediction=WRONG_PATH), dict(task(1), id="clinic/1b", prediction=GOLD)]
    result = runner.invoke(cli, ["repair", "--data", str(WORLDS), "--index", str(index_file), "--model", "fake",
                                 "--base-url", fake_llm.url, "--no-cache", "--attempts", "1", "--concurrency", "2",
                                 "-"], input="".join(json.dumps(r) + "\n" for r in records))
    assert result.exit_code == 0, result.output
    out = [json.loads(line) for line in result.output.splitlines()]
    assert [r["id"] for r in out] == ["clinic/1", "clinic/1b"]
    assert [r["prediction"] for r in out] == [GOLD, GOLD]
    assert [r["repair"]["rounds"] for r in out] == [[2], [1]]
    assert [r["repair"]["usage"]["model_calls"] for r in out] == [1, 0]
    assert out[0]["repair"]["original"] == WRONG_PATH
    # --no-model votes among the given candidates although a model is named
    result = runner.invoke(cli, ["repair", "--data", str(WORLDS), "--index", str(index_file), "--model", "fake",
                                 "--no-model", "-"], input=json.dumps(records[0]) + "\n")
    assert result.exit_code == 0 and json.loads(result.output)["repair"]["rounds"] == 0


def test_generate_sag_replays_offline_without_requests(runner, fake_llm, index_file, tmp_path):
    fake_llm.responder = fix_after_feedback
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps(task(n)) + "\n" for n in (1, 2)))
    base = ["generate", "-m", "sag", "--data", str(WORLDS), "--index", str(index_file), "--model", "fake",
            "--cache", str(tmp_path / "llm.sqlite"), str(tasks)]
    first = runner.invoke(cli, base + ["--base-url", fake_llm.url])
    assert first.exit_code == 0, first.output
    sent = len(fake_llm.requests)
    assert sent >= 6
    again = runner.invoke(cli, base + ["--offline"])
    assert again.exit_code == 0, again.output
    assert len(fake_llm.requests) == sent
    strip = lambda text: [{**r["prediction"], "usage": None, "ms": None} for r in map(json.loads, text.splitlines())]
    assert strip(again.output) == strip(first.output)
    assert all(json.loads(line)["prediction"]["usage"]["cache_hits"] >= 3 for line in again.output.splitlines())


def test_sag_flags_need_the_sag_method(runner, index_file):
    result = runner.invoke(cli, ["generate", "-m", "rules", "--index", str(index_file), "--no-gate", "-"], input="")
    assert result.exit_code == 2 and "--no-gate only apply to --method sag" in result.output


def test_concurrent_first_queries_see_every_stage(tmp_path):
    """Worker threads (generate/repair --concurrency) compiling their first pipelines at once in a fresh
    interpreter: each finds every stage (the operator registry is loaded whole before anyone reads it)."""
    import subprocess
    import sys

    script = f"""
import threading
from nlq.backends import EmbeddedBackend
backend = EmbeddedBackend({str(WORLDS)!r})
errors, start = [], threading.Barrier(8)
def run():
    start.wait()
    try:
        backend.aggregate("clinic", "patients", [{{"$match": {{"kind": "x"}}}}, {{"$group": {{"_id": "$kind"}}}}])
    except Exception as exc:
        errors.append(repr(exc))
threads = [threading.Thread(target=run) for _ in range(8)]
[t.start() for t in threads]
[t.join() for t in threads]
print(errors)
"""
    for _ in range(3):
        result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, result.stderr
        assert result.stdout.strip() == "[]"


def test_sag_under_a_call_budget_stops_with_budget_exhausted_and_resumes(runner, fake_llm, index_file, tmp_path):
    fake_llm.responder = lambda body: reply(json.dumps(GOLD))
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps(task(n)) + "\n" for n in (1, 2)))
    base = ["generate", "-m", "sag", "--data", str(WORLDS), "--index", str(index_file), "--model", "fake",
            "--base-url", fake_llm.url, "--cache", str(tmp_path / "llm.sqlite"), "--concurrency", "1",
            "--budget", "calls=4", str(tasks)]
    first = runner.invoke(cli, base)
    assert first.exit_code == 1 and "--budget was spent" in first.stderr
    out = [json.loads(line) for line in first.stdout.splitlines()]
    assert out[0]["prediction"] == {**out[0]["prediction"], **GOLD} and len(fake_llm.requests) == 4
    assert out[1]["prediction"] is None and out[1]["failure"]["type"] == "budget_exhausted"
    again = runner.invoke(cli, base)
    assert again.exit_code == 0, again.stderr
    assert all(json.loads(line)["prediction"] for line in again.stdout.splitlines()) and len(fake_llm.requests) == 6
