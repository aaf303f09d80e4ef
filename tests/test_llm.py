"""nlq.llm against the scripted fake server: faults, json_mode fallback, cache, log, usage."""

from __future__ import annotations

import json
import multiprocessing
import random
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import click
import pytest

from nlq.commands.options import model_config_from
from nlq import generate
from nlq.errors import (CacheMissError, ModelAuthError, ModelBadOutputError, ModelConfigError, ModelHTTPError,
                        ModelRateLimitedError, ModelTimeoutError)
from nlq.llm import ChatClient, ModelConfig, chat_decoded, decode_pipeline, metered, pipeline_schema
from tests.helpers import OneCallMethod
from tests.conftest import ROOT
from tests.fakellm import (FakeLLM, dropped, fenced, in_prose, non_json, rate_limited, reply, status, truncated)

KEY = "sk-test-5ecret-key-0123456789"
USER = [{"role": "user", "content": "How many heroes?"}]
ANSWER = {"collection": "heroes", "pipeline": [{"$count": "n"}]}
SCHEMA = pipeline_schema(["heroes", "powers"])


def client_for(fake, tmp_path=None, **overrides) -> ChatClient:
    settings = {"model": "fake-model", "base_url": fake.url, "api_key": KEY, "backoff": 0.001,
                "max_backoff": 0.01, "max_retries": 3, "cache": None}
    settings.update(overrides)
    return ChatClient(ModelConfig(**settings))


# -- plain calls ---------------------------------------------------------------


def test_a_reply_carries_text_usage_and_the_request_body(fake_llm):
    fake_llm.enqueue(reply(json.dumps(ANSWER), prompt_tokens=11, completion_tokens=7))
    client = client_for(fake_llm, options={"reasoning_effort": "high"}, max_tokens=300)
    got = client.chat(USER, schema=SCHEMA)
    assert json.loads(got.text) == ANSWER
    assert got.usage == {"prompt_tokens": 11, "completion_tokens": 7}
    assert (got.cached, got.retries) == (False, 0)
    [request] = fake_llm.requests
    assert request["path"] == "/v1/chat/completions"
    assert request["headers"]["Authorization"] == f"Bearer {KEY}"
    body = request["body"]
    assert body["model"] == "fake-model" and body["messages"] == USER and body["temperature"] == 0.0
    assert body["max_tokens"] == 300 and body["reasoning_effort"] == "high"
    assert body["response_format"] == {"type": "json_schema", "json_schema": {"name": "answer", "schema": SCHEMA}}


def test_no_schema_means_no_response_format_and_no_max_tokens_by_default(fake_llm):
    fake_llm.enqueue("SELECT 1")
    client_for(fake_llm).chat(USER)
    assert "response_format" not in fake_llm.bodies[0] and "max_tokens" not in fake_llm.bodies[0]


# -- faults --------------------------------------------------------------------


@pytest.mark.parametrize("fault", [status(500), status(502), status(503), status(504), non_json(), truncated(),
                                   dropped(), rate_limited()])
def test_transient_faults_are_retried(fake_llm, fault):
    fake_llm.enqueue(fault, fault, "ok")
    got = client_for(fake_llm).chat(USER)
    assert (got.text, got.retries, len(fake_llm.requests)) == ("ok", 2, 3)


@pytest.mark.parametrize("fault, error, words", [
    (status(503), ModelHTTPError, "HTTP 503"),
    (rate_limited(), ModelRateLimitedError, "HTTP 429"),
    (non_json(), ModelBadOutputError, "not a chat completion"),
    (dropped(), ModelHTTPError, "connection failed"),
    (truncated(), ModelHTTPError, "connection failed"),
])
def test_exhausted_retries_are_typed_errors(fake_llm, fault, error, words):
    fake_llm.enqueue(*[fault] * 4)
    with pytest.raises(error) as info:
        client_for(fake_llm, max_retries=3).chat(USER)
    assert words in info.value.message and "gave up after 3 retries" in info.value.message
    assert len(fake_llm.requests) == 4


@pytest.mark.parametrize("fault, error", [
    (status(400, "context length exceeded"), ModelHTTPError),
    (status(401, f"Incorrect API key provided: {KEY}"), ModelAuthError),
    (status(403, "forbidden"), ModelAuthError),
    (status(404, "model not found"), ModelHTTPError),
    (status(422, "unprocessable"), ModelHTTPError),
    (rate_limited(1, error_type="insufficient_quota"), ModelRateLimitedError),
])
def test_permanent_errors_are_not_retried(fake_llm, fault, error):
    fake_llm.enqueue(fault, "never reached")
    with pytest.raises(error) as info:
        client_for(fake_llm).chat(USER)
    assert len(fake_llm.requests) == 1
    assert KEY not in info.value.message and KEY not in str(info.value.hint)


def test_retry_after_is_honored(fake_llm):
    fake_llm.enqueue(rate_limited(0.3), "ok")
    started = time.perf_counter()
    got = client_for(fake_llm).chat(USER)
    assert got.text == "ok" and got.retries == 1
    assert time.perf_counter() - started >= 0.3


def test_latency_beyond_the_request_timeout_is_model_timeout(fake_llm):
    fake_llm.enqueue(*[reply("late", latency=0.5)] * 2)
    with pytest.raises(ModelTimeoutError, match="no complete reply within the 0.1 s --request-timeout"):
        client_for(fake_llm, request_timeout=0.1, max_retries=1).chat(USER)
    assert len(fake_llm.requests) == 1, "the timeout is the whole call's: no time is left for a retry"


def test_latency_within_the_timeout_is_fine(fake_llm):
    fake_llm.enqueue(reply("slow", latency=0.2))
    got = client_for(fake_llm, request_timeout=5).chat(USER)
    assert got.text == "slow" and got.ms >= 200


def test_a_server_that_is_not_there_is_a_connection_error():
    with FakeLLM() as fake:
        url = fake.url
    client = ChatClient(ModelConfig(model="m", base_url=url, max_retries=1, backoff=0.001))
    with pytest.raises(ModelHTTPError, match="connection failed"):
        client.chat(USER)


# -- json_mode -----------------------------------------------------------------


def test_json_mode_falls_back_schema_then_object_then_none(fake_llm):
    fake_llm.enqueue(status(400, "response_format json_schema is not supported"),
                     status(400, "response_format type json_object unsupported"), "fine", "again")
    client = client_for(fake_llm)
    assert client.chat(USER, schema=SCHEMA).text == "fine"
    kinds = [body.get("response_format", {}).get("type") for body in fake_llm.bodies]
    assert kinds == ["json_schema", "json_object", None]
    assert client.json_mode == "none"
    client.chat([{"role": "user", "content": "next"}], schema=SCHEMA)
    assert "response_format" not in fake_llm.bodies[-1]


def test_json_mode_object_and_none(fake_llm):
    fake_llm.enqueue("a", "b")
    client_for(fake_llm, json_mode="object").chat(USER, schema=SCHEMA)
    client_for(fake_llm, json_mode="none").chat(USER, schema=SCHEMA)
    assert fake_llm.bodies[0]["response_format"] == {"type": "json_object"}
    assert "response_format" not in fake_llm.bodies[1]


def test_a_400_at_json_mode_none_is_an_error(fake_llm):
    fake_llm.enqueue(status(400, "bad schema"))
    with pytest.raises(ModelHTTPError, match="HTTP 400") as info:
        client_for(fake_llm, json_mode="none").chat(USER, schema=SCHEMA)
    assert "--json-mode" in info.value.hint


# -- decoding and repair turns -------------------------------------------------

COLLECTIONS = ["heroes", "powers"]


@pytest.mark.parametrize("text", [
    json.dumps(ANSWER),
    fenced(ANSWER),
    fenced(ANSWER, language=""),
    in_prose(ANSWER),
    "I would run:\n```javascript\ndb.heroes.aggregate([{$count: 'n'}])\n```",
    "The answer is db.heroes.aggregate([ { $count: \"n\" } ]); it counts the heroes (all of them).",
    "db.getCollection('heroes').aggregate([{$count: 'n'}])",
    "{collection: 'heroes', pipeline: [{$count: 'n'}]}",
])
def test_decode_pipeline_reads_json_fences_prose_and_mongosh(text):
    assert decode_pipeline(text, COLLECTIONS) == ANSWER


def test_decode_pipeline_turns_extended_json_into_bson():
    import datetime

    from bson import ObjectId

    text = json.dumps({"collection": "heroes", "pipeline": [
        {"$match": {"born": {"$gte": {"$date": "1990-01-01T00:00:00Z"}}, "_id": {"$oid": "5f" + "0" * 22}}}]})
    match = decode_pipeline(text, COLLECTIONS)["pipeline"][0]["$match"]
    assert match["born"]["$gte"] == datetime.datetime(1990, 1, 1, tzinfo=datetime.timezone.utc)
    assert match["_id"] == ObjectId("5f" + "0" * 22)
    shell = decode_pipeline("db.heroes.aggregate([{$match: {born: ISODate('1990-01-01')}}])", COLLECTIONS)
    assert shell["pipeline"][0]["$match"]["born"].year == 1990


@pytest.mark.parametrize("text, words", [
    ('{"collection": "villains", "pipeline": []}', "unknown collection 'villains'"),
    ("db.villains.aggregate([])", "unknown collection 'villains'"),
    ("I cannot answer that.", "no {\"collection\", \"pipeline\"}"),
    ("", "(empty reply)"),
    ('{"collection": "heroes"}', "missing pipeline"),
    ('[{"$count": "n"}]', "no {\"collection\""),
])
def test_decode_pipeline_failures_are_typed(text, words):
    with pytest.raises(ModelBadOutputError) as info:
        decode_pipeline(text, COLLECTIONS)
    assert words in info.value.message


def test_a_bare_pipeline_is_accepted_only_with_one_collection():
    assert decode_pipeline('[{"$count": "n"}]', ["heroes"]) == ANSWER


def test_repair_turns_tell_the_model_what_was_wrong(fake_llm):
    fake_llm.enqueue("no idea", '{"collection": "villains", "pipeline": []}', json.dumps(ANSWER))
    decoded = chat_decoded(client_for(fake_llm), USER, lambda t: decode_pipeline(t, COLLECTIONS), schema=SCHEMA)
    assert decoded.value == ANSWER and decoded.repairs == 2
    assert len(fake_llm.requests) == 3
    second, third = fake_llm.bodies[1]["messages"], fake_llm.bodies[2]["messages"]
    assert second[:2] == USER + [{"role": "assistant", "content": "no idea"}]
    assert second[2]["content"].startswith("Your reply was not valid JSON for this task:")
    assert "unknown collection 'villains'" in third[-1]["content"]
    assert decoded.messages[-1] == {"role": "assistant", "content": json.dumps(ANSWER)}


def test_three_bad_replies_are_model_bad_output(fake_llm):
    fake_llm.enqueue("no", "still no", "nope", "never asked")
    with pytest.raises(ModelBadOutputError, match="after 2 repair turns"):
        chat_decoded(client_for(fake_llm), USER, lambda t: decode_pipeline(t, COLLECTIONS))
    assert len(fake_llm.requests) == 3


# -- cache and offline ---------------------------------------------------------


def test_cache_replays_without_requests(fake_llm, tmp_path):
    cache = tmp_path / "llm.sqlite"
    fake_llm.enqueue(reply("first", prompt_tokens=5, completion_tokens=2))
    original = client_for(fake_llm, cache=cache).chat(USER, schema=SCHEMA)
    again = client_for(fake_llm, cache=cache).chat(USER, schema=SCHEMA)
    assert len(fake_llm.requests) == 1
    assert (again.text, again.usage, again.cached, again.ms) == ("first", original.usage, True, original.ms)


def test_every_parameter_is_part_of_the_cache_key(fake_llm, tmp_path):
    cache = tmp_path / "llm.sqlite"
    fake_llm.responder = lambda body: "r"
    variants = [{}, {"temperature": 0.7}, {"max_tokens": 9}, {"options": {"seed": 1}}, {"model": "other"},
                {"json_mode": "object"}]
    for overrides in variants:
        client_for(fake_llm, cache=cache, **overrides).chat(USER, schema=SCHEMA)
    client_for(fake_llm, cache=cache).chat(USER, schema=SCHEMA, sample=1)
    client_for(fake_llm, cache=cache).chat(USER, schema=None)
    assert len(fake_llm.requests) == len(variants) + 2
    client_for(fake_llm, cache=cache, api_key="another-key").chat(USER, schema=SCHEMA)
    assert len(fake_llm.requests) == len(variants) + 2, "the key is not part of the request identity"


def test_failures_are_not_cached(fake_llm, tmp_path):
    cache = tmp_path / "llm.sqlite"
    fake_llm.enqueue(status(401), "ok")
    with pytest.raises(ModelAuthError):
        client_for(fake_llm, cache=cache).chat(USER)
    assert client_for(fake_llm, cache=cache).chat(USER).cached is False


def test_offline_answers_from_the_cache_and_a_miss_is_typed(fake_llm, tmp_path):
    cache = tmp_path / "llm.sqlite"
    fake_llm.enqueue("stored")
    client_for(fake_llm, cache=cache).chat(USER)
    offline = ChatClient(ModelConfig(model="fake-model", cache=cache, offline=True))
    assert offline.chat(USER).text == "stored"
    with pytest.raises(CacheMissError, match="--offline: no cached reply"):
        offline.chat([{"role": "user", "content": "never asked"}])
    assert len(fake_llm.requests) == 1


def _write_entries(path: str, worker: int, count: int) -> None:
    from nlq.llm.cache import ResponseCache

    cache = ResponseCache(path)
    for i in range(count):
        cache.put(f"{worker}-{i}", "http://127.0.0.1:1/v1", {"worker": worker, "i": i}, {"text": f"{worker}/{i}"})
    cache.close()


def test_four_processes_share_one_cache_without_loss(tmp_path):
    path = str(tmp_path / "shared.sqlite")
    context = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn")
    workers = [context.Process(target=_write_entries, args=(path, w, 60)) for w in range(4)]
    for process in workers:
        process.start()
    for process in workers:
        process.join(60)
        assert process.exitcode == 0
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT COUNT(*) FROM replies").fetchone()[0] == 240
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


# -- transcript and redaction --------------------------------------------------


def test_log_has_one_line_per_call_and_never_the_key(fake_llm, tmp_path):
    log, cache = tmp_path / "calls.jsonl", tmp_path / "llm.sqlite"
    fake_llm.enqueue(status(503), reply("one", prompt_tokens=3, completion_tokens=1), status(401, f"bad key {KEY}"))
    client = client_for(fake_llm, cache=cache, log=log)
    client.chat(USER, schema=SCHEMA)
    client.chat(USER, schema=SCHEMA)  # cache hit
    with pytest.raises(ModelAuthError) as info:
        client.chat([{"role": "user", "content": "other"}])
    client.close()
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(line["cached"], line["retries"]) for line in lines[:2]] == [(False, 1), (True, 0)]
    first = lines[0]
    assert first["request"]["messages"] == USER and first["request"]["params"]["schema"] == SCHEMA
    assert first["response"]["text"] == "one" and first["usage"] == {"prompt_tokens": 3, "completion_tokens": 1}
    assert lines[2]["error"]["type"] == "model_auth"
    for text in (log.read_text(), cache.read_bytes().decode("latin-1"), info.value.message, repr(client.config)):
        assert KEY not in text
    assert "Authorization" not in log.read_text()


def test_the_key_stays_out_of_help(runner, clinic_index_file, fake_llm, tmp_path):
    from nlq.commands import cli

    fake_llm.enqueue(*[status(401, f"Incorrect API key provided: {KEY}")] * 2)
    env = {"NLQ_API_KEY": KEY, "NLQ_BASE_URL": fake_llm.url, "NLQ_MODEL": "m", "XDG_CACHE_HOME": str(tmp_path)}
    shown = runner.invoke(cli, ["generate", "--help"], env=env)
    assert shown.exit_code == 0 and KEY not in shown.output


# -- configuration -------------------------------------------------------------


def _bundle(**overrides):
    options = {"model": None, "base_url": None, "api_key": None, "temperature": 0.0, "max_tokens": None,
               "option": {}, "json_mode": "schema", "concurrency": 4, "request_timeout": 120.0, "cache": None,
               "no_cache": False, "offline": False, "log": None}
    options.update(overrides)
    return options


def test_a_needed_model_without_configuration_names_the_variables():
    with pytest.raises(click.UsageError) as info:
        model_config_from(_bundle(), needed=True, what="--method card")
    assert all(name in info.value.message for name in ("NLQ_BASE_URL", "NLQ_API_KEY", "NLQ_MODEL"))
    assert model_config_from(_bundle(), needed=False) is None


def test_model_config_from_the_bundle(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    config = model_config_from(_bundle(model="m", base_url="http://h/v1", api_key=KEY, option={"seed": 3}),
                               needed=True)
    assert config.cache == tmp_path / "nlq" / "llm.sqlite" and config.options == {"seed": 3}
    assert KEY not in repr(config) and "api_key='***'" in repr(config)
    assert model_config_from(_bundle(model="m", no_cache=True, offline=False, base_url="u"), needed=True).cache is None
    offline = model_config_from(_bundle(model="m", offline=True, cache=str(tmp_path / "c.sqlite")), needed=True)
    assert offline.offline and offline.base_url is None
    with pytest.raises(click.UsageError, match="--no-cache"):
        model_config_from(_bundle(model="m", offline=True, no_cache=True), needed=True)


def test_model_config_validates():
    with pytest.raises(ModelConfigError, match="NLQ_MODEL"):
        ModelConfig(model="", base_url="u")
    with pytest.raises(ModelConfigError, match="json_mode"):
        ModelConfig(model="m", base_url="u", json_mode="yaml")
    with pytest.raises(ModelConfigError, match="NLQ_BASE_URL"):
        ModelConfig(model="m")


# -- usage and ordered concurrency through generate.run ------------------------



def _echo_responder(body):
    question = body["messages"][0]["content"]
    number = int(question.split()[-1])
    if number % 7 == 3:
        return status(401, "no")
    latency = random.Random(number).uniform(0, 0.03)
    return reply(json.dumps({"collection": "c", "pipeline": [{"$limit": number}]}), latency=latency,
                 prompt_tokens=10, completion_tokens=number)


def test_generate_runs_model_methods_concurrently_in_input_order(fake_llm, tmp_path, monkeypatch):
    monkeypatch.setattr(generate.methods, "get", lambda name: OneCallMethod("echo"))
    fake_llm.responder = _echo_responder
    client = client_for(fake_llm, concurrency=6, cache=tmp_path / "c.sqlite")
    records = [{"id": i, "question": f"question {i}", "witnesses": []} for i in range(40)]
    out = list(generate.run(iter(records), "echo", generate.Context({}, model=client)))
    assert [r["id"] for r in out] == list(range(40))
    for r in out:
        if r["id"] % 7 == 3:
            assert r["failure"]["type"] == "model_auth" and r["failure"]["usage"]["model_calls"] == 1
        else:
            assert r["prediction"]["pipeline"] == [{"$limit": r["id"]}]
            usage = r["prediction"]["usage"]
            assert (usage["model_calls"], usage["prompt_tokens"], usage["completion_tokens"]) == (1, 10, r["id"])
            assert usage["cache_hits"] == 0
    rerun = list(generate.run(iter(records), "echo", generate.Context({}, model=client)))
    assert len(fake_llm.requests) == 40 + 6  # the auth failures are not cached, so they are asked again
    assert [r.get("prediction", {}) and r["prediction"]["usage"]["cache_hits"] for r in rerun if "failure" not in r] \
        == [1] * 34


def test_generate_without_a_model_for_a_model_method_is_a_config_error(monkeypatch):
    monkeypatch.setattr(generate.methods, "get", lambda name: OneCallMethod("echo"))
    with pytest.raises(ModelConfigError, match="NLQ_BASE_URL"):
        list(generate.run(iter([{"question": "q", "witnesses": []}]), "echo", generate.Context({})))


def test_metered_sums_calls_in_this_thread(fake_llm):
    fake_llm.enqueue(reply("a", prompt_tokens=2, completion_tokens=1), reply("b", prompt_tokens=3, completion_tokens=4))
    client = client_for(fake_llm)
    with metered() as meter:
        client.chat(USER)
        client.chat(USER)
    assert meter.as_dict() | {"ms": 0} == {"model_calls": 2, "prompt_tokens": 5, "completion_tokens": 5,
                                          "cache_hits": 0, "ms": 0, "http_attempts": 2}


# -- the fake server as a process ----------------------------------------------


def test_the_fake_server_runs_standalone(tmp_path):
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"queue": [status(503)], "rules": [{"contains": "heroes", "reply": reply("42")}],
                                  "default": "fallback"}))
    ready, captured = tmp_path / "port", tmp_path / "requests.jsonl"
    process = subprocess.Popen([sys.executable, "-m", "tests.fakellm", "--port", "0", "--script", str(script),
                                "--ready-file", str(ready), "--requests", str(captured), "--lifetime", "30"],
                               cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        url = process.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:") and url.endswith("/v1")
        assert ready.read_text() == url.split(":")[-1].split("/")[0]
        client = ChatClient(ModelConfig(model="m", base_url=url, backoff=0.001))
        assert client.chat([{"role": "user", "content": "count heroes"}]).text == "42"
        assert client.chat([{"role": "user", "content": "other"}]).text == "fallback"
        assert len(Path(captured).read_text().splitlines()) == 3
    finally:
        process.terminate()
        process.wait(10)
