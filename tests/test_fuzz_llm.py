"""Property suite over hostile model replies (issue 29): size, depth, encoding, timing, format,
and the API key placed anywhere in any kind of reply.

Against the scripted fake server, every reply goes through `generate` (a one-call method
with the shared repair turns, a cache and a transcript) and the invariants are checked:
one record out, a prediction or a typed failure (never `internal_error`), a reply text no
longer than `--max-reply-bytes`, every call ended within its `--request-timeout` (plus a
second of slack), and the key never written, whole or as any 8-character fragment, in a
record, the transcript, the cache files or a warning.

`make test` runs a few examples per property; `make fuzz` runs many more
(NLQ_FUZZ_EXAMPLES per property, 200 by default there).
"""

from __future__ import annotations

import json
import os
import string
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from nlq import generate, io
from nlq.llm import ChatClient, ModelConfig
from tests.helpers import OneCallMethod
from tests.fakellm import ECHO_KEY, FakeLLM, drip, dropped, gzip_bomb, huge, non_json, raw, reply, stall, status, \
    truncated

EXAMPLES = int(os.environ.get("NLQ_FUZZ_EXAMPLES", "6"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize="NLQ_FUZZ_EXAMPLES" not in os.environ,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.function_scoped_fixture])

CAP = 8192
TIMEOUT = 0.4
ANSWER = json.dumps({"collection": "c", "pipeline": [{"$limit": 1}]})
TYPED = {"model_timeout", "model_rate_limited", "model_http_error", "model_auth", "model_bad_output",
         "model_reply_too_large"}


@pytest.fixture(scope="module")
def server():
    with FakeLLM() as fake:
        yield fake



def run_one(server, spec, folder: Path, *, key: str | None = None, timeout: float = TIMEOUT):
    """The record `generate` writes when every request gets `spec`, with what was written."""
    server.reset()
    server.responder = lambda body: spec
    warnings: list[str] = []
    config = ModelConfig(model="fake-model", base_url=server.url, api_key=key, cache=folder / "llm.sqlite",
                         log=folder / "calls.jsonl", request_timeout=timeout, max_reply_bytes=CAP, max_retries=1,
                         backoff=0.001, max_backoff=0.005)
    client = ChatClient(config, warn=warnings.append)
    saved = generate.methods.get
    generate.methods.get = lambda name: OneCallMethod("one-call")
    started = time.monotonic()
    try:
        out = list(generate.run(iter([{"id": 1, "question": "How many rows?", "witnesses": []}]), "one-call",
                                generate.Context({}, model=client)))
    finally:
        generate.methods.get = saved
        client.close()
    elapsed = time.monotonic() - started
    written = [io.dumps(record).decode() for record in out] + warnings
    written += [p.read_bytes().decode("latin-1") for p in sorted(folder.glob("*")) if p.is_file()]
    return out, elapsed, "\n".join(written)


def check_record(out, elapsed):
    assert len(out) == 1
    [record] = out
    if record.get("failure"):
        assert record["failure"]["type"] in TYPED, record["failure"]
        usage = record["failure"]["usage"]
    else:
        assert isinstance(record["prediction"]["pipeline"], list)
        usage = record["prediction"]["usage"]
    # each chat call ends within its deadline; repair turns are further calls
    assert elapsed <= usage["model_calls"] * TIMEOUT + 1.0, (elapsed, usage)
    assert usage["http_attempts"] >= usage["model_calls"] - usage["cache_hits"]
    return record


# -- hostile replies -------------------------------------------------------------------------

texts = st.text(max_size=200)
completions = st.sampled_from([
    {"choices": []}, {"choices": None}, {"choices": "x"}, {"choices": [None]}, {"choices": [{}]},
    {"choices": [{"message": None}]}, {"choices": [{"message": {"content": 5}}]},
    {"choices": [{"message": {"content": ["a"]}}]}, {"choices": [{"message": {"content": {"a": 1}}}]},
    {"choices": [{"message": {"content": None}}]}, [], "completion", None, 3,
    {"choices": [{"message": {"content": ANSWER}, "finish_reason": 7}], "usage": {"prompt_tokens": -4}},
    {"choices": [{"message": {"content": ANSWER}}], "usage": {"prompt_tokens": "many", "completion_tokens": 2 ** 62}},
    {"choices": [{"message": {"content": ANSWER}}], "usage": [1, 2]},
    {"choices": [{"message": {"content": ANSWER}}]},
])


@st.composite
def hostile(draw):
    kind = draw(st.sampled_from(["size", "depth", "body-depth", "encoding", "bytes", "timing", "format", "status",
                                 "transport"]))
    if kind == "size":
        return huge(draw(st.integers(0, 2 * CAP)), chunked=draw(st.booleans()))
    if kind == "depth":
        depth = draw(st.integers(0, 3000))
        opener, closer = draw(st.sampled_from([('{"$match": ', "}"), ("[", "]"), ("{a: ", "}")]))
        inner = opener * depth + "{}" + closer * depth
        return reply(draw(st.sampled_from([f'{{"collection": "c", "pipeline": [{inner}]}}',
                                           f"db.c.aggregate([{inner}])", inner])))
    if kind == "body-depth":
        depth = draw(st.integers(100, 3000))
        return raw(200, '{"choices": ' + "[" * depth + "]" * depth + "}", "application/json")
    if kind == "encoding":
        content = draw(st.one_of(texts, st.sampled_from(["\x00", "\ufeff" + ANSWER, "\u202e" + ANSWER, "\r" * 50,
                                                         "\x1b]0;title\x07" + ANSWER, ANSWER + "\udcff"[:0]])))
        return reply(content)
    if kind == "bytes":
        data = draw(st.binary(max_size=300))
        prefix = draw(st.sampled_from(["", "\ufeff", '{"choices": [{"message": {"content": "']))
        return raw(200, prefix + data.decode("utf-8", "surrogateescape"), "application/json")
    if kind == "timing":
        which = draw(st.sampled_from(["drip", "stall", "latency"]))
        if which == "drip":
            return drip(ANSWER, draw(st.floats(0, 0.01)), chunk=draw(st.integers(1, 64)))
        if which == "stall":
            return stall(ANSWER, after=draw(st.integers(0, 200)))
        return reply(ANSWER, latency=draw(st.floats(0, TIMEOUT * 1.5)))
    if kind == "format":
        odd = st.sampled_from([
            '{"choices": [{"message": {"content": "\\ud800"}}]}',                  # a lone surrogate
            '{"choices": [{"message": {"content": "ok"}}], "usage": {"prompt_tokens": 1e400}}',
            '{"choices": [{"message": {"content": "ok"}}], "usage": {"prompt_tokens": 18446744073709551616}}',
            '{"choices": [{"message": {"content": "ok"}}], "usage": {"prompt_tokens": NaN}}',
            'data: {"choices": [{"delta": {"content": "x"}}]}\n\ndata: [DONE]\n\n',   # a stream, not asked for
            '{"choices": [{"message": {"content": "a"}}]} trailing', "\ufeff" + json.dumps({"choices": []}),
        ])
        return raw(200, draw(st.one_of(completions.map(json.dumps), odd)), "application/json")
    if kind == "status":
        code = draw(st.integers(200, 599))
        body = draw(st.one_of(texts, st.just("<html><body><h1>502 Bad Gateway</h1></body></html>"),
                              st.just('{"error": {"message": null, "type": 5}}'), st.just('{"error": "plain"}')))
        return raw(code, body, draw(st.sampled_from(["text/html", "application/json", "text/plain"])))
    return draw(st.sampled_from([dropped(), truncated(), non_json(), gzip_bomb(CAP * 50), status(503),
                                 status(429, "slow down", headers={"Retry-After": "0.01"})]))


@FUZZ
@given(spec=hostile())
def test_any_reply_is_a_prediction_or_a_typed_failure_in_bounded_time_and_size(server, spec):
    with tempfile.TemporaryDirectory() as tmp:
        out, elapsed, _ = run_one(server, spec, Path(tmp))
    record = check_record(out, elapsed)
    if record.get("prediction"):
        assert len(io.dumps(record)) < CAP * 4


# -- the key anywhere in any reply -------------------------------------------------------------

KEY_CHARS = string.ascii_uppercase + string.digits
keys = st.text(alphabet=KEY_CHARS, min_size=14, max_size=48).filter(
    lambda k: sum(c.isdigit() for c in k) >= 3 and sum(c.isalpha() for c in k) >= 3).map(lambda k: "SK" + k)
# Filler never holds an upper-case letter or a digit: an 8-character run of key characters in
# what is written can only come from the key.
FILLER = string.ascii_lowercase + " <>/{}\"':,.!?-_\n\té中"
fillers = st.one_of(st.text(alphabet=FILLER, max_size=400),
                    st.integers(100, 320).map(lambda n: "a" * n))


def fragments(key: str) -> list[str]:
    return [key[i:i + 8] for i in range(len(key) - 7)]


def place(kind: str, before: str, after: str, key_length: int) -> dict:
    text = before + ECHO_KEY + after
    if kind == "401":
        return status(401, text)
    if kind == "403-html":
        return raw(403, f"<html><body>{text}</body></html>")
    if kind == "200-non-json":
        return raw(200, text, "application/json")
    if kind == "500-html":
        return raw(500, f"<html><head><title>Error</title></head><body><pre>{text}</pre></body></html>")
    if kind == "500-json-list":
        return raw(500, json.dumps([text, {"detail": text}]), "application/json")
    if kind == "long-502":  # the key straddles the end of what is read of an error body
        cut = 64 * 1024 - min(len(before), key_length - 1)
        return raw(502, "v" * cut + ECHO_KEY + after)
    if kind == "content":
        return reply(text)
    if kind == "content-answer":
        return reply(f"{before}{ANSWER}{ECHO_KEY}{after}")
    return reply(json.dumps({"collection": "c", "pipeline": [{"$match": {"k": text}}]}))  # inside the pipeline


KINDS = ["401", "403-html", "200-non-json", "500-html", "500-json-list", "long-502", "content", "content-answer",
         "pipeline"]


@FUZZ
@given(key=keys, kind=st.sampled_from(KINDS), before=fillers, after=st.text(alphabet=FILLER, max_size=40))
def test_a_key_in_any_reply_is_never_written_whole_or_in_part(server, key, kind, before, after):
    with tempfile.TemporaryDirectory() as tmp:
        out, elapsed, written = run_one(server, place(kind, before, after, len(key)), Path(tmp), key=key,
                                        timeout=5.0)
    assert len(out) == 1
    assert server.requests and server.requests[0]["headers"]["Authorization"] == f"Bearer {key}"
    leaked = [f for f in fragments(key) if f in written]
    assert not leaked, (kind, leaked)


@pytest.mark.parametrize("kind", KINDS)
def test_every_kind_of_reply_is_checked_with_a_key_at_its_cuts(server, kind, tmp_path):
    key = "SKQ7ZX9WERT4PL0MN7RT2"
    for offset in (0, 105, 110, 185, 190, 285, 290, 300):  # the key across the cuts at 120, 200 and 300
        folder = tmp_path / f"{kind}-{offset}"
        folder.mkdir()
        out, _, written = run_one(server, place(kind, "a" * offset, " end", len(key)), folder, key=key, timeout=5.0)
        assert not [f for f in fragments(key) if f in written], (kind, offset)
