"""The model is untrusted (issue 29, model side): whole-reply deadlines, reply size caps,
http attempts in usage, the key masked everywhere (and short keys never), the cache keyed
by endpoint and never costing an answer, the call budget and the progress line."""

from __future__ import annotations

import json
import sqlite3
import threading
import time

import orjson
import pytest

from nlq import generate
from nlq.commands import cli
from nlq.errors import (CallBudgetExhaustedError, ModelAuthError, ModelHTTPError, ModelReplyTooLargeError,
                        ModelTimeoutError)
from nlq.llm import ChatClient, ModelConfig, metered
from nlq.llm.cache import ResponseCache, endpoint_identity, request_key
from tests.helpers import OneCallMethod
from tests.conftest import ROOT, WORLDS
from tests.fakellm import ECHO_KEY, FakeLLM, drip, gzip_bomb, huge, raw, reply, stall, status

KEY = "sk-untrusted-Zq8XwV3pL0mN7rT2"
USER = [{"role": "user", "content": "How many heroes?"}]
ANSWER = json.dumps({"collection": "heroes", "pipeline": [{"$count": "n"}]})


def client_for(fake, **overrides) -> ChatClient:
    warn = overrides.pop("warn", None)
    settings = {"model": "fake-model", "base_url": fake.url, "api_key": KEY, "backoff": 0.001,
                "max_backoff": 0.01, "max_retries": 3, "cache": None}
    settings.update(overrides)
    return ChatClient(ModelConfig(**settings), warn=warn)


# -- finding 2: one deadline for the whole reply --------------------------------------------


def test_a_dripping_reply_is_cut_off_at_the_request_timeout(fake_llm):
    fake_llm.enqueue(drip(ANSWER, 0.05), drip(ANSWER, 0.05))  # ~400 bytes: 20 s if read to the end
    started = time.monotonic()
    with pytest.raises(ModelTimeoutError, match="no complete reply within the 1 s --request-timeout"):
        client_for(fake_llm, request_timeout=1.0).chat(USER)
    assert time.monotonic() - started < 5, "cut off at the deadline, not at the end of the drip"
    assert len(fake_llm.requests) == 1


def test_a_reply_that_stalls_mid_body_is_cut_off(fake_llm):
    fake_llm.enqueue(stall(ANSWER, after=20))
    with pytest.raises(ModelTimeoutError):
        client_for(fake_llm, request_timeout=0.5).chat(USER)


def test_retries_end_at_the_deadline(fake_llm):
    fake_llm.enqueue(*[status(503, headers={"Retry-After": "0.4"})] * 10)
    with pytest.raises(ModelHTTPError, match="past the 1 s --request-timeout") as info:
        client_for(fake_llm, request_timeout=1.0, max_retries=8).chat(USER)
    assert 2 <= len(fake_llm.requests) <= 3 and info.value.http_attempts == len(fake_llm.requests)


def test_a_drip_within_the_timeout_is_read_whole(fake_llm):
    fake_llm.enqueue(drip(ANSWER, 0.001, chunk=40))
    assert client_for(fake_llm, request_timeout=10).chat(USER).text == ANSWER


# -- finding 3: the reply size cap ----------------------------------------------------------


@pytest.mark.parametrize("spec", [huge(3 << 20), huge(3 << 20, chunked=True), gzip_bomb(20 << 20)],
                         ids=["content-length", "chunked", "gzip-bomb"])
def test_a_reply_over_the_byte_cap_is_a_typed_failure_not_retried(fake_llm, spec):
    fake_llm.enqueue(spec, "never")
    with pytest.raises(ModelReplyTooLargeError, match="--max-reply-bytes cap of 1048576"):
        client_for(fake_llm, max_reply_bytes=1 << 20).chat(USER)
    assert len(fake_llm.requests) == 1


def test_a_reply_under_the_cap_is_read(fake_llm):
    fake_llm.enqueue(huge(200_000))
    assert len(client_for(fake_llm, max_reply_bytes=1 << 20).chat(USER).text) == 200_000


def test_usage_counts_http_attempts_behind_one_call(fake_llm):
    fake_llm.enqueue(status(503), status(502), reply("ok"))
    with metered() as meter:
        client_for(fake_llm).chat(USER)
    assert meter.as_dict()["model_calls"] == 1 and meter.as_dict()["http_attempts"] == 3


def test_a_failed_call_counts_its_attempts(fake_llm):
    fake_llm.enqueue(*[status(500)] * 3)
    with metered() as meter, pytest.raises(ModelHTTPError):
        client_for(fake_llm, max_retries=2).chat(USER)
    assert meter.as_dict()["http_attempts"] == 3


# -- findings 4 and 11: the key ---------------------------------------------------------------


def fragments(key: str, size: int = 8) -> list[str]:
    return [key[i:i + size] for i in range(len(key) - size + 1)]


def leaks(text: str, key: str = KEY) -> list[str]:
    return [f for f in fragments(key) if f in text]


@pytest.mark.parametrize("spec", [
    status(401, "x" * 280 + ECHO_KEY + " is not a valid key"),              # crosses the 300-character cut
    status(401, "y" * 290 + ECHO_KEY),
    raw(200, "<html>" + "z" * 100 + ECHO_KEY + "</html>", "application/json"),  # crosses the 120 cut
    raw(500, "<html><body>" + "w" * 180 + ECHO_KEY + "</body></html>"),
    raw(502, "v" * (70 * 1024 - 10) + ECHO_KEY),                                # crosses the 64 KB read
], ids=["401-300", "401-end", "200-non-json", "500-html", "502-long"])
def test_a_key_crossing_a_cut_is_masked_whole(fake_llm, tmp_path, spec):
    fake_llm.enqueue(*[spec] * 4)
    log = tmp_path / "calls.jsonl"
    client = client_for(fake_llm, log=log, max_retries=1)
    with pytest.raises(Exception) as info:
        client.chat(USER)
    client.close()
    assert not leaks(info.value.message) and not leaks(log.read_text()), info.value.message


def test_a_key_echoed_in_the_content_is_masked_in_the_reply_cache_and_log(fake_llm, tmp_path):
    fake_llm.enqueue(reply(f"your key is {ECHO_KEY}; " + ANSWER))
    cache, log = tmp_path / "llm.sqlite", tmp_path / "calls.jsonl"
    client = client_for(fake_llm, cache=cache, log=log)
    got = client.chat(USER)
    client.close()
    assert KEY not in got.text and "your key is ***" in got.text
    stored = b"".join(p.read_bytes() for p in tmp_path.glob("llm.sqlite*")).decode("latin-1")
    assert not leaks(stored) and not leaks(log.read_text())
    again = client_for(fake_llm, cache=cache).chat(USER)
    assert again.cached and KEY not in again.text


@pytest.mark.parametrize("short", ["k", "x", "EMPTY", "ollama", "sk-1234"])
def test_a_short_key_is_sent_but_never_rewrites_text(fake_llm, tmp_path, short):
    question = [{"role": "user", "content": "checked $lookup k x EMPTY ollama sk-1234 kkk"}]
    fake_llm.enqueue(reply("checked $lookup k x EMPTY ollama sk-1234"), status(401, f"bad key {short}"))
    log = tmp_path / "calls.jsonl"
    client = client_for(fake_llm, api_key=short, log=log)
    assert client.chat(question).text == "checked $lookup k x EMPTY ollama sk-1234"
    with pytest.raises(ModelAuthError, match=f"bad key {short}"):
        client.chat(USER)
    client.close()
    assert fake_llm.requests[0]["headers"]["Authorization"] == f"Bearer {short}"
    line = json.loads(log.read_text().splitlines()[0])
    assert line["request"]["messages"] == question and "***" not in log.read_text()
    assert "Authorization" not in log.read_text()


# -- finding 6: the cache knows the endpoint -------------------------------------------------


def test_two_endpoints_with_one_model_name_get_their_own_replies(tmp_path):
    cache = tmp_path / "llm.sqlite"
    with FakeLLM() as first, FakeLLM() as second:
        first.responder = lambda body: reply("from the first")
        second.responder = lambda body: reply("from the second")
        assert client_for(first, cache=cache).chat(USER).text == "from the first"
        assert client_for(second, cache=cache).chat(USER).text == "from the second"
        assert client_for(first, cache=cache).chat(USER).cached
        assert len(first.requests) == 1 and len(second.requests) == 1


def test_endpoint_identity_is_scheme_host_port_path_never_the_key():
    assert endpoint_identity("http://127.0.0.1:8000/v1/") == "http://127.0.0.1:8000/v1"
    assert endpoint_identity("HTTPS://API.Example.com/v1") == "https://api.example.com:443/v1"
    assert endpoint_identity(f"https://user:{KEY}@h/v1?key={KEY}") == "https://h:443/v1"
    assert endpoint_identity("http://h:80/v1") == endpoint_identity("http://h/v1")
    assert endpoint_identity("http://h/v1") != endpoint_identity("http://h/v2")


def test_entries_of_older_caches_replay_offline(fake_llm, tmp_path):
    path = tmp_path / "old.sqlite"
    logical = client_for(fake_llm)._logical_request(USER, None, "answer", 0)
    with sqlite3.connect(path) as db:  # the table older nlq wrote (no endpoint)
        db.execute("CREATE TABLE responses (key TEXT PRIMARY KEY, request BLOB NOT NULL, "
                   "response BLOB NOT NULL, created REAL NOT NULL)")
        db.execute("INSERT INTO responses VALUES (?, ?, ?, ?)",
                   (request_key(logical), b"{}", orjson.dumps({"text": "old", "usage": {}, "ms": 1.0}), 0.0))
    offline = ChatClient(ModelConfig(model="fake-model", cache=path, offline=True))
    assert offline.chat(USER).text == "old"
    fake_llm.enqueue("new")
    assert client_for(fake_llm, cache=path).chat(USER).text == "new", "online, the old endpoint is unknown"


# -- finding 7: cache damage and locks never cost an answer ---------------------------------


def _filled(fake, path):
    fake.enqueue("first")
    client_for(fake, cache=path).chat(USER)


def _damage_row(path):
    with sqlite3.connect(path) as db:
        db.execute("UPDATE replies SET response = X'00ff7b22'")


def _damage_schema(path):
    with sqlite3.connect(path) as db:
        db.execute("DROP TABLE replies")
        db.execute("CREATE TABLE replies (something TEXT)")


def _damage_page(path):
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    data = bytearray(path.read_bytes())
    data[4096:8192] = b"\xa5" * 4096  # the table's page
    path.write_bytes(bytes(data))


def _damage_file(path):
    path.write_bytes(b"this is not a database at all" * 100)
    for extra in path.parent.glob(path.name + "-*"):
        extra.unlink()


@pytest.mark.parametrize("damage", [_damage_row, _damage_schema, _damage_page, _damage_file],
                         ids=["row", "schema", "page", "file"])
def test_a_damaged_cache_is_a_miss_warned_once(fake_llm, tmp_path, damage):
    path = tmp_path / "llm.sqlite"
    _filled(fake_llm, path)
    damage(path)
    warnings: list[str] = []
    fake_llm.responder = lambda body: reply("asked again")
    client = client_for(fake_llm, cache=path, warn=warnings.append)
    assert client.chat(USER).text == "asked again"
    assert client.chat([{"role": "user", "content": "another"}]).text == "asked again"
    client.close()
    assert len(warnings) == 1 and "cache" in warnings[0], warnings


def test_a_damaged_cache_through_generate_is_no_internal_error(fake_llm, tmp_path, monkeypatch):
    path = tmp_path / "llm.sqlite"
    _filled(fake_llm, path)
    _damage_row(path)
    fake_llm.responder = lambda body: reply(json.dumps({"collection": "c", "pipeline": []}))
    monkeypatch.setattr(generate.methods, "get", lambda name: OneCallMethod("echo"))
    client = client_for(fake_llm, cache=path, warn=lambda message: None)
    out = list(generate.run(iter([{"id": 1, "question": "How many heroes?", "witnesses": []}]), "echo",
                            generate.Context({}, model=client)))
    assert out[0]["prediction"]["pipeline"] == []


def _hold_write_lock(path, seconds, ready):
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("BEGIN IMMEDIATE")
    db.execute("INSERT INTO replies VALUES ('held', '', x'7b7d', x'7b7d', 0)")
    ready.set()
    time.sleep(seconds)
    db.execute("COMMIT")
    db.close()


def test_a_write_lock_held_elsewhere_is_waited_for_and_the_reply_kept(tmp_path):
    path = tmp_path / "llm.sqlite"
    ResponseCache(path).close()
    ready = threading.Event()
    holder = threading.Thread(target=_hold_write_lock, args=(path, 0.6, ready))
    holder.start()
    ready.wait(5)
    cache = ResponseCache(path, lock_wait=0.1, lock_tries=8, warn=pytest.fail)
    assert cache.put("k", "e", {}, {"text": "kept"}) is True
    holder.join()
    assert cache.get("k", "e")["text"] == "kept"


def test_a_lock_held_past_the_bound_loses_the_entry_not_the_reply(fake_llm, tmp_path):
    path = tmp_path / "llm.sqlite"
    ResponseCache(path).close()
    ready = threading.Event()
    holder = threading.Thread(target=_hold_write_lock, args=(path, 1.0, ready))
    holder.start()
    ready.wait(5)
    warnings: list[str] = []
    fake_llm.enqueue("fetched")
    client = ChatClient(ModelConfig(model="fake-model", base_url=fake_llm.url, cache=path), warn=warnings.append)
    client._cache._lock_wait, client._cache._lock_tries = 0.05, 2
    client._cache._db.execute("PRAGMA busy_timeout = 50")
    assert client.chat(USER).text == "fetched"
    holder.join()
    assert len(warnings) == 1 and "locked" in warnings[0]


# -- build 9: the call budget ----------------------------------------------------------------



def _numbered(body):
    number = int(body["messages"][0]["content"].split()[-1])
    return reply(json.dumps({"collection": "c", "pipeline": [{"$limit": number}]}), prompt_tokens=10,
                 completion_tokens=5)


def test_the_call_budget_stops_cleanly_and_a_rerun_resumes(fake_llm, tmp_path, monkeypatch):
    monkeypatch.setattr(generate.methods, "get", lambda name: OneCallMethod("echo"))
    fake_llm.responder = _numbered
    records = [{"id": i, "question": f"question {i}", "witnesses": []} for i in range(5)]
    cache = tmp_path / "llm.sqlite"

    def run(**budget):
        client = client_for(fake_llm, cache=cache, concurrency=1, **budget)
        out = list(generate.run(iter(records), "echo", generate.Context({}, model=client)))
        client.close()
        return out

    first = run(budget_calls=2)
    assert [r["failure"]["type"] if r.get("failure") else "ok" for r in first] == \
        ["ok", "ok"] + ["budget_exhausted"] * 3
    assert "--budget calls=2 is spent" in first[2]["failure"]["message"] and len(fake_llm.requests) == 2
    second = run(budget_calls=2)
    assert [r["failure"]["type"] if r.get("failure") else "ok" for r in second] == ["ok"] * 4 + ["budget_exhausted"]
    assert [r["prediction"]["usage"]["cache_hits"] for r in second[:4]] == [1, 1, 0, 0]
    assert len(fake_llm.requests) == 4
    tokens = run(budget_tokens=1)
    assert [r.get("failure", {}).get("type", "ok") for r in tokens] == ["ok"] * 5  # all from the cache now


def test_a_token_budget_stops_new_calls(fake_llm):
    fake_llm.responder = _numbered
    client = client_for(fake_llm, budget_tokens=20)
    client.chat([{"role": "user", "content": "question 1"}])
    client.chat([{"role": "user", "content": "question 2"}])
    with pytest.raises(CallBudgetExhaustedError, match="tokens=20"):
        client.chat([{"role": "user", "content": "question 3"}])
    assert client.stats["calls"] == 2 and client.stats["tokens"] == 30


# -- the command line: --budget, --max-reply-bytes, --progress, ask --------------------------

TASKS = ROOT / "fixtures" / "tasks"


def cli_env(fake, tmp_path, **extra) -> dict:
    return {"NLQ_BASE_URL": fake.url, "NLQ_API_KEY": KEY, "NLQ_MODEL": "fake-model",
            "XDG_CACHE_HOME": str(tmp_path / "xdg"), "NLQ_BUDGET": None, **extra}


def first_collection(body):
    names = body["response_format"]["json_schema"]["schema"]["properties"]["collection"].get("enum") or ["patients"]
    return reply(json.dumps({"collection": names[0], "pipeline": [{"$limit": 1}]}), prompt_tokens=50,
                 completion_tokens=10)


def task_file(tmp_path, n: int):
    path = tmp_path / "tasks.jsonl"
    path.write_bytes(b"".join(line + b"\n" for line in (TASKS / "clinic.jsonl").read_bytes().splitlines()[:n]))
    return path


def records_of(output: str) -> list[dict]:
    return [json.loads(line) for line in output.splitlines()]


def test_generate_budget_exits_1_with_typed_records_and_a_rerun_resumes(runner, fake_llm, tmp_path,
                                                                         clinic_index_file):
    fake_llm.responder = first_collection
    args = ["generate", "-m", "card", "--index", str(clinic_index_file), "--budget", "calls=2",
            "--concurrency", "1", str(task_file(tmp_path, 3))]
    first = runner.invoke(cli, args, env=cli_env(fake_llm, tmp_path))
    assert first.exit_code == 1 and "--budget was spent: 1 model call(s) refused" in first.stderr
    out = records_of(first.stdout)
    assert [r.get("failure", {}).get("type") for r in out] == [None, None, "budget_exhausted"]
    again = runner.invoke(cli, args, env=cli_env(fake_llm, tmp_path))
    assert again.exit_code == 0, again.stderr
    assert all(r["prediction"] for r in records_of(again.stdout)) and len(fake_llm.requests) == 3
    tokens = runner.invoke(cli, args[:-5] + ["--budget", "tokens=1", str(task_file(tmp_path, 3))],
                           env=cli_env(fake_llm, tmp_path))
    assert tokens.exit_code == 0 and len(fake_llm.requests) == 3  # every reply is cached now


def test_the_budget_comes_from_the_environment_and_is_checked(runner, fake_llm, tmp_path, clinic_index_file):
    fake_llm.responder = first_collection
    args = ["generate", "-m", "card", "--index", str(clinic_index_file), str(task_file(tmp_path, 2))]
    capped = runner.invoke(cli, args, env=cli_env(fake_llm, tmp_path, NLQ_BUDGET="calls=0"))
    assert capped.exit_code == 1 and not fake_llm.requests
    for bad in ("calls", "calls=x", "seconds=3", "calls=1,calls=2", "calls=-1"):
        refused = runner.invoke(cli, args[:1] + ["--budget", bad] + args[1:], env=cli_env(fake_llm, tmp_path))
        assert refused.exit_code == 2 and "--budget" in refused.output, bad


def test_max_reply_bytes_on_the_command_line(runner, fake_llm, tmp_path, clinic_index_file):
    fake_llm.responder = lambda body: huge(300_000)
    result = runner.invoke(cli, ["generate", "-m", "card", "--index", str(clinic_index_file),
                                 "--max-reply-bytes", "100000", str(task_file(tmp_path, 1))],
                           env=cli_env(fake_llm, tmp_path))
    assert result.exit_code == 0, result.stderr
    [record] = records_of(result.stdout)
    assert record["failure"]["type"] == "model_reply_too_large" and len(result.stdout) < 20_000
    assert record["failure"]["usage"]["http_attempts"] == 1


def test_the_progress_line_counts_records_calls_hits_tokens_errors(runner, fake_llm, tmp_path, clinic_index_file):
    answers = iter([first_collection, lambda body: status(401, "no")] + [first_collection] * 10)
    fake_llm.responder = lambda body: next(answers)(body)
    args = ["generate", "-m", "card", "--index", str(clinic_index_file), "--progress", "--concurrency", "1",
            str(task_file(tmp_path, 3))]
    result = runner.invoke(cli, args, env=cli_env(fake_llm, tmp_path))
    assert result.exit_code == 0
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("generate: 3/3 records, 3 model calls, 0 cache hits, 120 tokens, 1 errors, "), last
    assert last.endswith("elapsed")
    rerun = runner.invoke(cli, args, env=cli_env(fake_llm, tmp_path))
    assert "3/3 records, 1 model calls, 2 cache hits, 60 tokens, 0 errors" in rerun.stderr
    quiet = runner.invoke(cli, args[:-4] + args[-3:], env=cli_env(fake_llm, tmp_path))
    assert "records," not in quiet.stderr


def test_ask_takes_max_question_chars_which_its_error_names(runner, fake_llm, tmp_path):
    question = "How many patients? " * 6000  # ~110 KB
    result = runner.invoke(cli, ["ask", "--data", str(WORLDS), "--db", "clinic", question],
                           env={"XDG_CACHE_HOME": str(tmp_path)})
    assert result.exit_code == 1 and "input_too_large" in result.stderr and "--max-question-chars" in result.stderr
    short = "How many patients are there?"
    for limit, refused in (("20", True), ("100", False)):
        result = runner.invoke(cli, ["ask", "--data", str(WORLDS), "--db", "clinic", "--max-question-chars", limit,
                                     short], env={"XDG_CACHE_HOME": str(tmp_path)})
        assert ("input_too_large" in result.stderr) is refused and (result.exit_code == 0) is not refused
    assert "--max-question-chars" in runner.invoke(cli, ["ask", "--help"]).output


def test_ask_never_prints_an_echoed_key(runner, fake_llm, tmp_path):
    fake_llm.responder = lambda body: reply(json.dumps({"collection": "patients", "pipeline": [
        {"$limit": 1}, {"$project": {"_id": 0, "said": {"$literal": f"key {ECHO_KEY} here"}}}]}))
    for extra in ([], ["--explain"], ["--json"]):
        result = runner.invoke(cli, ["ask", "--data", str(WORLDS), "--db", "clinic", "-m", "card", "--log",
                                     str(tmp_path / "log.jsonl"), *extra, "How many patients?"],
                               env=cli_env(fake_llm, tmp_path))
        assert result.exit_code == 0, result.output
        assert "key *** here" in result.stdout and not leaks(result.stdout + result.stderr)
    assert not leaks((tmp_path / "log.jsonl").read_text())


def test_ask_under_a_spent_budget_is_no_answer_budget_exhausted(runner, fake_llm, tmp_path):
    result = runner.invoke(cli, ["ask", "--data", str(WORLDS), "--db", "clinic", "-m", "card", "--budget", "calls=0",
                                 "How many patients?"], env=cli_env(fake_llm, tmp_path))
    assert result.exit_code == 1 and "budget_exhausted" in result.stderr and not fake_llm.requests


def test_the_progress_line_on_a_terminal_is_rewritten_in_place_with_an_eta():
    import io as stdio

    from nlq.llm.progress import count_lines, progress_line

    class Client:
        stats = {"calls": 4, "cache_hits": 1, "tokens": 99}

    stream = stdio.StringIO()
    records = [{"prediction": {}}, {"failure": {"type": "model_timeout"}}, {"prediction": {}}]
    assert list(progress_line(iter(records), Client(), stream=stream, total=4, desc="generate", tty=True,
                              every=0)) == records
    shown = stream.getvalue()
    assert shown.count("\r\x1b[K") == 4 and shown.endswith("elapsed\n") and "\n" not in shown[:-1]
    assert "generate: 2/4 records, 4 model calls, 1 cache hits, 99 tokens, 1 errors, 0:00:00 left" in shown
    assert count_lines("-") is None
