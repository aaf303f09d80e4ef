"""Model access against the fake server: concurrency speedup, cached replay, fault mix.

    python -m tests.bench llm
"""

from __future__ import annotations

import json
import random
import tempfile
import threading
import time
from pathlib import Path

from nlq.errors import NlqError
from nlq.generate import ordered_map
from nlq.llm import ChatClient, ModelConfig, chat_decoded, decode_pipeline, pipeline_schema
from tests.fakellm import FakeLLM, dropped, non_json, rate_limited, reply, status

SCHEMA = pipeline_schema(["c"])


def _answer(number: int) -> str:
    return json.dumps({"collection": "c", "pipeline": [{"$limit": number}]})


def _ask(client: ChatClient, number: int):
    messages = [{"role": "user", "content": f"question {number}"}]
    try:
        return chat_decoded(client, messages, lambda text: decode_pipeline(text, ["c"]), schema=SCHEMA).value
    except NlqError as exc:
        return exc.type


def _number(body) -> int:
    return int(body["messages"][0]["content"].split()[-1])


def concurrency(fake: FakeLLM, calls: int = 200, latency: float = 0.1) -> None:
    fake.responder = lambda body: reply(_answer(_number(body)), latency=latency)
    timings = {}
    for workers in (1, 8):
        client = ChatClient(ModelConfig(model="m", base_url=fake.url, concurrency=workers, cache=None))
        started = time.perf_counter()
        out = list(ordered_map(lambda n: _ask(client, n), range(calls), workers))
        timings[workers] = time.perf_counter() - started
        assert [o["pipeline"][0]["$limit"] for o in out] == list(range(calls))
        client.close()
    print(f"{calls} calls at {latency * 1000:.0f} ms latency: concurrency 1 {timings[1]:.2f} s, "
          f"concurrency 8 {timings[8]:.2f} s, speedup {timings[1] / timings[8]:.1f}x (target >= 6x)")


def cached_replay(fake: FakeLLM, calls: int = 1000) -> None:
    fake.responder = lambda body: reply(_answer(_number(body)))
    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp) / "llm.sqlite"
        client = ChatClient(ModelConfig(model="m", base_url=fake.url, cache=cache, concurrency=8))
        list(ordered_map(lambda n: _ask(client, n), range(calls), 8))
        client.close()
        before = len(fake.requests)
        replay = ChatClient(ModelConfig(model="m", cache=cache, offline=True))
        started = time.perf_counter()
        out = [_ask(replay, n) for n in range(calls)]
        elapsed = time.perf_counter() - started
        assert all(isinstance(o, dict) for o in out) and len(fake.requests) == before
        replay.close()
    print(f"cached replay of {calls} calls (offline, 0 requests): {elapsed:.3f} s (target < 1 s)")


def fault_mix(fake: FakeLLM, records: int = 1000) -> None:
    draw = random.Random(7)
    lock = threading.Lock()

    def responder(body):
        with lock:
            x = draw.random()
        if x < 0.10:
            return rate_limited(0.01)
        if x < 0.15:
            return status(500)
        if x < 0.175:
            return non_json()
        if x < 0.20:
            return reply("Sorry, I am not sure which collection holds that.")
        if x < 0.23:
            return dropped()
        return reply(_answer(_number(body)))

    fake.responder = responder
    before = len(fake.requests)
    client = ChatClient(ModelConfig(model="m", base_url=fake.url, cache=None, concurrency=8, backoff=0.01,
                                    max_backoff=0.2))
    started = time.perf_counter()
    out = list(ordered_map(lambda n: _ask(client, n), range(records), 8))
    elapsed = time.perf_counter() - started
    client.close()
    predictions = sum(isinstance(o, dict) for o in out)
    failures: dict = {}
    for o in out:
        if not isinstance(o, dict):
            failures[o] = failures.get(o, 0) + 1
    assert len(out) == records
    print(f"fault mix (10% 429, 5% 500, 5% malformed, 3% dropped) over {records} records: "
          f"{predictions / records:.1%} predictions, typed failures {failures or 'none'}, "
          f"{len(fake.requests) - before} requests, {elapsed:.1f} s (target >= 97%)")


def main() -> None:
    with FakeLLM() as fake:
        concurrency(fake)
        cached_replay(fake)
        fault_mix(fake)


if __name__ == "__main__":
    main()
