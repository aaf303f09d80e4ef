"""Model access against the fake server: concurrency speedup, cached replay, fault mix,
and hostile replies (a 200 MB reply, a gzip bomb, a slow drip): peak RSS and wall time
of an `nlq generate` process (target < 300 MB, and the request timeout plus 1 s per retry).

    python -m tests.bench llm
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import orjson

from nlq.errors import NlqError
from nlq.generate import ordered_map
from nlq.llm import ChatClient, ModelConfig, chat_decoded, decode_pipeline, pipeline_schema
from tests.fakellm import FakeLLM, drip, dropped, gzip_bomb, huge, non_json, rate_limited, reply, status

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


# Runs `nlq generate` in this child and reports its own peak RSS (VmHWM: a forked child's
# rusage would count the parent's pages, the fake server's included).
_CHILD = """
import atexit, sys, time
started = time.perf_counter()
def report():
    peak = next(line.split()[1] for line in open('/proc/self/status') if line.startswith('VmHWM'))
    sys.stderr.write(f'BENCH {peak} {time.perf_counter() - started:.3f}\\n')
atexit.register(report)
from nlq.commands import cli
sys.argv = ['nlq'] + sys.argv[1:]
cli()
"""


def _generate_process(fake: FakeLLM, folder: Path, index: Path, *extra: str) -> tuple[dict, float, float]:
    """One record through `nlq generate -m card` in a child process: (record, seconds of the
    command itself, peak RSS MB)."""
    from tests.conftest import ROOT

    task = folder / "task.jsonl"
    task.write_text(json.dumps({"id": 1, "db": "clinic", "question": "How many patients are there?"}) + "\n")
    env = {**os.environ, "NLQ_BASE_URL": fake.url, "NLQ_MODEL": "fake-model", "NLQ_API_KEY": "sk-bench-0123456789"}
    done = subprocess.run([sys.executable, "-c", _CHILD, "generate", "-m", "card", "--index", str(index),
                           "--no-cache", *extra, str(task)], cwd=ROOT, env=env, capture_output=True, check=False)
    line = next(line for line in done.stderr.decode().splitlines() if line.startswith("BENCH "))
    _, peak_kb, seconds = line.split()
    return orjson.loads(done.stdout.splitlines()[0]), float(seconds), int(peak_kb) / 1024


def untrusted(fake: FakeLLM) -> None:
    from nlq import index as grounding
    from nlq.backends import EmbeddedBackend
    from tests.conftest import WORLDS

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        index = folder / "clinic.index.jsonl"
        index.write_bytes(grounding.dumps(next(iter(grounding.build(EmbeddedBackend(WORLDS), ["clinic"])))) + b"\n")
        answer = json.dumps({"collection": "patients", "pipeline": [{"$count": "n"}]})
        cases = [
            ("a normal reply (baseline)", [reply(answer)], ["--request-timeout", "5"], 0),
            ("a 200 MB reply (Content-Length)", [huge(200 << 20)], ["--request-timeout", "30"], 0),
            ("a 200 MB reply (chunked)", [huge(200 << 20, chunked=True)], ["--request-timeout", "30"], 0),
            ("a 7 MB reply (under the 8 MiB default cap)", [huge(7 << 20)], ["--request-timeout", "30"], 0),
            ("a gzip bomb inflating to 200 MB", [gzip_bomb(200 << 20)], ["--request-timeout", "30"], 0),
            ("a drip of 1 byte every 0.5 s", [drip(answer, 0.5)], ["--request-timeout", "5"], 0),
            ("two 503s, then the drip", [status(503), status(503), drip(answer, 0.5)], ["--request-timeout", "5"], 2),
        ]
        for name, specs, extra, retries in cases:
            fake.reset()
            fake.enqueue(*specs)
            fake.responder = lambda body: reply(answer)
            record, elapsed, rss = _generate_process(fake, folder, index, *extra)
            timeout = float(extra[-1])
            outcome = record["failure"]["type"] if record.get("failure") else "prediction"
            spent = (record.get("failure") or record.get("prediction") or {}).get("usage", {})
            bound = timeout + retries
            print(f"{name}: {outcome}, {spent.get('http_attempts')} http attempt(s), model calls "
                  f"{spent.get('ms', 0) / 1000:.2f} s (bound {bound:g} s = --request-timeout {timeout:g} + 1 s x "
                  f"{retries} retries), whole command {elapsed:.2f} s (imports and index included), "
                  f"peak RSS {rss:.0f} MB (target < 300 MB)", flush=True)


def main() -> None:
    with FakeLLM() as fake:
        concurrency(fake)
        cached_replay(fake)
        fault_mix(fake)
        untrusted(fake)


if __name__ == "__main__":
    main()
