"""The response cache and the run ledger in MongoDB, against a wire server (tests/wire.py StoreServer)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import orjson
import pytest

from nlq import shard
from nlq.errors import InputError, ModelConfigError
from nlq.ledger import Ledger
from nlq.llm.shared_cache import MongoResponseCache, open_cache, shown, split_uri
from tests.conftest import FIXTURES, ROOT
from tests.fakellm import reply
from tests.wire import StoreServer


NLQ = str(Path(sys.executable).with_name("nlq"))


@pytest.fixture
def store():
    with StoreServer() as server:
        yield server


def cache_uri(server, collection="llm_cache") -> str:
    return f"{server.uri}nlq?collection={collection}"


REPLY = {"text": "{}", "usage": {"prompt_tokens": 1, "completion_tokens": 1}, "ms": 3.0, "finish_reason": "stop"}
EP = "http://127.0.0.1:8000/v1"  # the endpoint identity a client passes


def test_the_uri_names_database_and_collection_and_keeps_the_rest():
    assert split_uri("mongodb://h:1/runs?collection=c&replicaSet=rs0") == \
        ("mongodb://h:1/runs?replicaSet=rs0", "runs", "c")
    assert split_uri("mongodb://h/") == ("mongodb://h/nlq", "nlq", "llm_cache")
    assert shown("mongodb://u:secret@h:27017/nlq") == "mongodb://u:***@h:27017/nlq"


def test_first_reply_stands_and_a_damaged_document_is_a_miss(store, capsys):
    cache = open_cache(cache_uri(store))
    assert isinstance(cache, MongoResponseCache) and cache.get("k", EP) is None and len(cache) == 0  # a claim, no reply
    cache.put("k", EP, {"messages": [{"$schema": "x"}]}, REPLY)
    cache.put("k", EP, {"messages": []}, {**REPLY, "text": "another"})
    assert cache.get("k", EP) == REPLY and len(cache) == 1
    [doc] = store.docs("nlq", "llm_cache")
    doc["response"] = "{not json"
    assert cache.get("k", EP) is None
    assert "damaged entry" in capsys.readouterr().err
    cache.close()


def test_a_miss_claims_the_key_and_another_runner_waits_for_the_reply(store):
    first, second = MongoResponseCache(cache_uri(store)), MongoResponseCache(cache_uri(store), poll_s=0.01)
    assert first.get("k", EP) is None  # claimed by the first runner
    got = []
    waiter = threading.Thread(target=lambda: got.append(second.get("k", EP)))
    waiter.start()
    time.sleep(0.2)
    assert waiter.is_alive() and not got  # it waits rather than asking the model too
    first.put("k", EP, {}, REPLY)
    waiter.join(5)
    assert got == [REPLY]
    # a runner that gives up its claim (the model failed) lets the waiting one ask
    assert first.get("j", EP) is None
    waiter = threading.Thread(target=lambda: got.append(second.get("j", EP)))
    waiter.start()
    first.abandon("j", EP)
    waiter.join(5)
    assert got[-1] is None and not waiter.is_alive()  # the second runner now holds the claim


def test_an_expired_claim_is_taken_over(store):
    dead = MongoResponseCache(cache_uri(store), claim_s=0.05)
    assert dead.get("k", EP) is None  # the runner that claimed it dies here
    alive = MongoResponseCache(cache_uri(store), poll_s=0.01)
    assert alive.get("k", EP) is None  # after the claim ran out: its turn to ask


def test_offline_never_claims(store):
    assert MongoResponseCache(cache_uri(store), claim=False).get("k", EP) is None
    assert store.docs("nlq", "llm_cache") == []


def test_an_unreachable_cache_is_a_clear_error():
    with pytest.raises(ModelConfigError, match="cannot open the response cache"):
        open_cache("mongodb://127.0.0.1:1/nlq?serverSelectionTimeoutMS=200&connectTimeoutMS=200")


# -- two generate processes sharing one cache -------------------------------------------------------

def generate(tmp_path, store, fake, name, *extra, env=None):
    tasks = FIXTURES / "tasks" / "clinic.jsonl"
    index = tmp_path / "clinic.index.jsonl"
    if not index.exists():
        subprocess.run([NLQ, "index", "--data", str(FIXTURES / "worlds"), "clinic",
                        "-o", str(index)], check=True, cwd=ROOT)
    args = [NLQ, "generate", "-m", "card", "--index", str(index), str(tasks),
            "--cache", cache_uri(store), "--model", "fake-model", "--base-url", fake.url,
            "-o", str(tmp_path / f"{name}.jsonl"), *extra]
    environment = {k: v for k, v in os.environ.items() if not k.startswith("NLQ_")}
    return subprocess.Popen(args, cwd=ROOT, env={**environment, **(env or {})}, stderr=subprocess.PIPE, text=True)


def answer(body) -> dict:
    return reply(json.dumps({"collection": "patients", "pipeline": [{"$count": "n"}]}), latency=0.01)


@pytest.mark.slow
def test_two_runners_sharing_a_cache_make_each_request_once(tmp_path, store, fake_llm):
    fake_llm.responder = answer
    runners = [generate(tmp_path, store, fake_llm, f"run{i}") for i in (1, 2)]
    for runner in runners:
        assert runner.wait(300) == 0, runner.stderr.read()
    tasks = len((FIXTURES / "tasks" / "clinic.jsonl").read_text().splitlines())
    bodies = [orjson.dumps(b["messages"]) for b in fake_llm.bodies]
    assert len(bodies) == len(set(bodies)) == tasks  # every distinct request, once
    one, two = ((tmp_path / f"run{i}.jsonl").read_text().splitlines() for i in (1, 2))
    strip = [[{k: v for k, v in json.loads(line)["prediction"].items() if k not in ("usage", "ms")} for line in run]
             for run in (one, two)]
    assert strip[0] == strip[1]
    # a rerun of both makes no call; --offline replays from the shared cache
    fake_llm.requests.clear()
    runners = [generate(tmp_path, store, fake_llm, "again1"), generate(tmp_path, store, fake_llm, "again2", "--offline")]
    for runner in runners:
        assert runner.wait(300) == 0, runner.stderr.read()
    assert fake_llm.requests == []
    replayed = [json.loads(line) for line in (tmp_path / "again2.jsonl").read_text().splitlines()]
    assert all(r["prediction"]["usage"]["cache_hits"] >= 1 for r in replayed)


# -- the run ledger ----------------------------------------------------------------------------------

def records(n: int) -> list[dict]:
    return [{"id": f"w/{i}", "question": f"q{i}"} for i in range(1, n + 1)]


def test_two_runners_on_one_ledger_handle_each_record_once(store):
    handled = []
    lock = threading.Lock()

    def handle(record):
        with lock:
            handled.append(record["id"])
        time.sleep(0.01)
        return {**record, "done": True}

    outputs = {}

    def runner(name):
        with Ledger(f"{store.uri}nlq", "arm", owner=name) as ledger:
            outputs[name] = list(ledger.run(records(12), handle))

    threads = [threading.Thread(target=runner, args=(n,)) for n in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sorted(handled) == sorted(r["id"] for r in records(12))  # once each, across both runners
    assert outputs["a"] == outputs["b"] == [{**r, "done": True} for r in records(12)]  # every record, in order


def test_a_dead_runners_leases_are_taken_over_when_they_expire(store):
    uri = f"{store.uri}nlq?collection=ledger"
    dead = Ledger(uri, "arm", lease=0.5, owner="dead")
    assert dead.claim("w/2") == ("mine", None)  # it held record 2, then died
    handled = []
    with Ledger(uri, "arm", lease=0.5, owner="alive") as ledger:
        out = list(ledger.run(records(3), lambda r: handled.append(r["id"]) or {**r, "by": "alive"}))
    assert [r["id"] for r in out] == ["w/1", "w/2", "w/3"] and handled == ["w/1", "w/3", "w/2"]
    with Ledger(uri, "arm", owner="late") as late:  # a later runner takes every record from the ledger
        assert list(late.run(records(3), lambda r: pytest.fail("handled twice"))) == out
    with Ledger(uri, "other-arm", owner="late") as other:  # another arm is another set of records
        assert other.claim("w/1") == ("mine", None)


def test_a_ledger_needs_an_arm_and_a_positive_lease(store):
    with pytest.raises(Exception, match="needs the name of the arm"):
        Ledger(f"{store.uri}nlq", "")
    with pytest.raises(Exception, match="positive"):
        Ledger(f"{store.uri}nlq", "arm", lease=0)


# -- shards --------------------------------------------------------------------------------------------

def test_shards_split_by_id_and_join_in_the_original_order():
    tasks = [json.loads(line) for line in (FIXTURES / "tasks" / "racing.jsonl").read_text().splitlines()]
    parts = [list(shard.select(tasks, i, 3)) for i in (1, 2, 3)]
    assert sum(len(p) for p in parts) == len(tasks) and all(parts)
    assert {t["id"] for t in parts[0]}.isdisjoint({t["id"] for t in parts[1]})
    assert list(shard.join(tasks, reversed(parts))) == tasks
    assert shard.shard_of("racing/3", 3) == shard.shard_of("racing/3", 3)  # stable
    with pytest.raises(InputError, match="in two shards"):
        list(shard.join(tasks, [parts[0], parts[0]]))
    with pytest.raises(InputError, match="I/N"):
        shard.parse("2")
    with pytest.raises(InputError, match="between 1 and N"):
        shard.parse("3/2")


# -- make paper across machines -------------------------------------------------------------------------

@pytest.mark.slow
def test_a_sharded_paper_run_joins_to_the_tables_of_one_run(tmp_path, fake_llm):
    import shutil

    from tests.test_paper import _make, answer_with_gold

    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    tasks = [json.loads(line) for line in (FIXTURES / "tasks" / "clinic.jsonl").read_text().splitlines()[:6]]
    fake_llm.responder = answer_with_gold(tasks)

    def run(out, *targets, **extra):
        out.mkdir(exist_ok=True)
        (out / "installed").touch()
        (out / "tasks.jsonl").write_text("".join(json.dumps(t) + "\n" for t in tasks))
        settings = {"TASKS": str(out / "tasks.jsonl"), "DATA": str(FIXTURES / "worlds"), "MODEL": "fake-model",
                    "BASE_URL": fake_llm.url, "REPORT_ARGS": "--bootstrap 50", "JOBS": "1",
                    "MAIN_ARMS": "rules card", "LADDER_ARMS": "card", "KNOCKOUT_ARMS": "", "CONTROL_ARMS": "",
                    "ADDED_ARMS": "", "PAPER_REF": "card", **extra}
        result = _make(out, *targets, **settings)
        assert result.returncode == 0, result.stderr[-3000:]
        return result

    run(tmp_path / "one", "paper")
    calls = len(fake_llm.requests)
    fake_llm.requests.clear()
    split = tmp_path / "split"
    run(split, "paper", SHARD="1/2", CACHE=str(split / "machine1.sqlite"))  # one cache per machine
    run(split, "paper", SHARD="2/2", CACHE=str(split / "machine2.sqlite"))
    assert len(fake_llm.requests) == calls  # the shards make the calls of one run between them
    assert not (split / "table3.txt").exists()  # a shard builds its runs, the join the tables
    run(split, "paper-join", SHARDS="2")
    for table in ("table3.txt", "table3.md", "table3.tex", "table5.txt", "table5.md", "table5.tex"):
        assert (split / table).read_text() == (tmp_path / "one" / table).read_text(), table
