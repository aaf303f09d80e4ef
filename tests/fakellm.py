"""A scripted fake OpenAI-compatible chat server on 127.0.0.1, for tests and benches.

In process (pytest fixture `fake_llm` in tests/conftest.py, or directly):

    with FakeLLM() as fake:                       # free port, stops on exit
        fake.enqueue(reply('{"collection": "c", "pipeline": []}'), status(503), dropped())
        fake.responder = lambda request: reply("...")   # used when the queue is empty
        fake.add_rule("hero", reply("..."))       # reply when the last user message contains "hero"
        client = ChatClient(ModelConfig(model="fake", base_url=fake.url))
        ...
        fake.requests                             # every request: {"path", "headers", "body"}

Which reply a request gets: the next queued spec, else the first rule whose
text occurs in the request's last user message, else `responder(body)`,
else `default` (a 500 saying nothing was scripted, counted in `unscripted`).

A reply spec is a plain dict (so a script file can hold it):
  reply(text, latency=0, prompt_tokens=None, completion_tokens=None)  200 chat completion
  status(code, message, error_type=None, headers=None)                an OpenAI-style error
  rate_limited(retry_after=None, error_type="rate_limit_exceeded")    429 (+ Retry-After)
  non_json() / truncated() / dropped()                                broken responses
  any spec + latency=S (seconds to wait before answering)
Hostile replies (issue 29: the model is untrusted):
  drip(text, interval, chunk=1)        a valid completion sent `chunk` bytes every `interval` s
  stall(text, after=N)                 the first N bytes of a completion, then silence until the client hangs up
  huge(size, chunked=False)            a 200 completion whose content is `size` bytes, streamed (never built whole)
  raw(code, body, content_type)        any status and body (an HTML error page, a bare string...)
  gzip_bomb(size)                      a gzip-encoded completion that inflates to `size` bytes
In any text or body, ECHO_KEY is replaced by the key the request carried (a server echoing it).
Content helpers: fenced(obj), in_prose(obj), as_json(obj).

Standalone, for Makefile-level tests (stops by itself after --lifetime s):

    python -m tests.fakellm --port 0 --script script.json --ready-file port.txt

The script is JSON `{"queue": [spec...], "rules": [{"contains": "...", "reply": spec}...],
"default": spec, "api_key": "..."}`; the server prints its base URL on stdout
and writes the port to --ready-file when it is listening. With `--requests
FILE` every captured request is appended there as a JSONL line.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import signal
import socket
import sys
import threading
import time
import zlib
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable

# ---------------------------------------------------------------------------
# reply specs


def reply(text: str, *, latency: float = 0.0, prompt_tokens: int | None = None,
          completion_tokens: int | None = None, finish_reason: str = "stop") -> dict:
    return {"content": text, "latency": latency, "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens, "finish_reason": finish_reason}


def status(code: int, message: str = "", *, error_type: str | None = None, headers: dict | None = None,
           latency: float = 0.0) -> dict:
    return {"status": code, "message": message or f"fake error {code}", "error_type": error_type,
            "headers": headers or {}, "latency": latency}


def rate_limited(retry_after: float | str | None = None, *, error_type: str = "rate_limit_exceeded") -> dict:
    headers = {} if retry_after is None else {"Retry-After": str(retry_after)}
    return status(429, "Rate limit reached", error_type=error_type, headers=headers)


def non_json(*, latency: float = 0.0) -> dict:
    return {"fault": "non_json", "latency": latency}


def truncated(*, latency: float = 0.0) -> dict:
    return {"fault": "truncated", "latency": latency}


def dropped(*, latency: float = 0.0) -> dict:
    return {"fault": "dropped", "latency": latency}


ECHO_KEY = "<<ECHO-KEY>>"


def drip(text: str, interval: float, *, chunk: int = 1, latency: float = 0.0) -> dict:
    return {"fault": "drip", "content": text, "interval": interval, "chunk": chunk, "latency": latency}


def stall(text: str = "x", *, after: int = 10, latency: float = 0.0) -> dict:
    return {"fault": "stall", "content": text, "after": after, "latency": latency}


def huge(size: int, *, chunked: bool = False, latency: float = 0.0) -> dict:
    return {"fault": "huge", "size": size, "chunked": chunked, "latency": latency}


def raw(code: int, body: str, content_type: str = "text/html", *, headers: dict | None = None,
        latency: float = 0.0) -> dict:
    return {"fault": "raw", "status": code, "body": body, "content_type": content_type, "headers": headers or {},
            "latency": latency}


def gzip_bomb(size: int, *, latency: float = 0.0) -> dict:
    return {"fault": "gzip_bomb", "size": size, "latency": latency}


def as_json(obj) -> str:
    return json.dumps(obj)


def fenced(obj, language: str = "json") -> str:
    return f"```{language}\n{json.dumps(obj, indent=2)}\n```"


def in_prose(obj) -> str:
    return f"Here is the query you asked for:\n{json.dumps(obj)}\nIt filters and then sorts. Hope this helps!"


UNSCRIPTED = status(500, "fake server: no reply scripted for this request")


# ---------------------------------------------------------------------------
# the server


class FakeLLM:
    """The fake endpoint: `url` is the base URL (`http://127.0.0.1:PORT/v1`)."""

    def __init__(self, *, port: int = 0, api_key: str | None = None, model: str = "fake-model"):
        self.port = port
        self.api_key = api_key
        self.model = model
        self.requests: list[dict] = []
        self.responder: Callable[[dict], dict] | None = None
        self.default: dict = UNSCRIPTED
        self.unscripted = 0
        self.on_request: Callable[[dict], None] | None = None
        self._queue: deque = deque()
        self._rules: list[tuple[str, dict]] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- scripting -------------------------------------------------------------

    def enqueue(self, *specs) -> "FakeLLM":
        """Queue replies (specs or plain strings = reply text), served in order."""
        with self._lock:
            self._queue.extend(reply(s) if isinstance(s, str) else s for s in specs)
        return self

    def add_rule(self, contains: str, spec) -> "FakeLLM":
        with self._lock:
            self._rules.append((contains, reply(spec) if isinstance(spec, str) else spec))
        return self

    def reset(self) -> None:
        with self._lock:
            self._queue.clear()
            self._rules.clear()
            self.requests.clear()
            self.responder, self.default, self.unscripted = None, UNSCRIPTED, 0

    @property
    def pending(self) -> int:
        return len(self._queue)

    @property
    def bodies(self) -> list[dict]:
        """The JSON bodies of the captured requests, in arrival order."""
        return [r["body"] for r in self.requests]

    def _choose(self, body: dict) -> dict:
        with self._lock:
            if self._queue:
                return self._queue.popleft()
            last_user = _last_user_text(body)
            for contains, spec in self._rules:
                if contains in last_user:
                    return spec
        if self.responder is not None:
            spec = self.responder(body)
            return reply(spec) if isinstance(spec, str) else spec
        with self._lock:
            self.unscripted += 1
        return self.default

    # -- lifecycle -------------------------------------------------------------

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> "FakeLLM":
        # A client that gives up mid-reply must not kill the process: the nlq CLI, run
        # in-process by CliRunner, leaves SIGPIPE at its default action (terminate).
        if hasattr(signal, "SIGPIPE") and threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGPIPE, signal.SIG_IGN)
        fake = self

        class Handler(_Handler):
            server_fake = fake

        self._server = _Server(("127.0.0.1", self.port), Handler)
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.02},
                                        name="fakellm", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> "FakeLLM":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        # A client that hangs up (its timeout, a finished `| head`) is normal here.
        if not isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):
            super().handle_error(request, client_address)


def _last_user_text(body: dict) -> str:
    for message in reversed(body.get("messages") or []):
        if isinstance(message, dict) and message.get("role") == "user":
            content = message.get("content")
            return content if isinstance(content, str) else json.dumps(content)
    return ""


class _Handler(BaseHTTPRequestHandler):
    server_fake: FakeLLM
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):  # quiet
        pass

    def setup(self):
        super().setup()
        # Headers and body go out in two writes: without this, Nagle's algorithm and the
        # client's delayed ACK add ~40 ms to every response.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def do_POST(self):
        try:
            self._answer()
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (its timeout): fine
            self.close_connection = True

    def _answer(self):
        fake = self.server_fake
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw)
        except ValueError:
            body = {"_unparsed": raw.decode("utf-8", "replace")}
        captured = {"path": self.path, "headers": dict(self.headers.items()), "body": body}
        with fake._lock:
            fake.requests.append(captured)
        if fake.on_request is not None:
            fake.on_request(captured)
        if not self.path.rstrip("/").endswith("/chat/completions"):
            return self._send_json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
        if fake.api_key is not None and self.headers.get("Authorization") != f"Bearer {fake.api_key}":
            return self._send_json(401, {"error": {"message": "Incorrect API key provided",
                                                   "type": "invalid_request_error", "code": "invalid_api_key"}})
        spec = fake._choose(body)
        if spec.get("latency"):
            time.sleep(spec["latency"])
        self._serve(spec, body)

    def _echo(self, text: str) -> str:
        sent = self.headers.get("Authorization") or ""
        key = sent[len("Bearer "):] if sent.startswith("Bearer ") else sent
        return text.replace(ECHO_KEY, key) if ECHO_KEY in text else text

    def _serve(self, spec: dict, body: dict):
        fault = spec.get("fault")
        if "content" in spec:
            spec = {**spec, "content": self._echo(spec["content"])}
        if fault == "drip":
            data = json.dumps(_completion(self.server_fake.model, spec["content"], body, {})).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.flush()
            step = max(1, int(spec.get("chunk") or 1))
            for start in range(0, len(data), step):
                self.wfile.write(data[start:start + step])
                self.wfile.flush()
                time.sleep(spec["interval"])
            return
        if fault == "stall":
            data = json.dumps(_completion(self.server_fake.model, spec["content"], body, {})).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data[:spec["after"]])
            self.wfile.flush()
            self.connection.settimeout(None)
            try:  # silence until the client gives up (or an hour)
                self.connection.recv(1)
            except OSError:
                pass
            self.close_connection = True
            return
        if fault == "huge":
            return self._send_huge(spec["size"], spec.get("chunked", False))
        if fault == "raw":
            data = self._echo(spec["body"]).encode("utf-8", "surrogateescape")
            return self._send_raw(spec["status"], data, spec["content_type"], spec.get("headers"))
        if fault == "gzip_bomb":
            return self._send_raw(200, _bomb(self.server_fake.model, spec["size"]), "application/json",
                                  {"Content-Encoding": "gzip"})
        if fault == "dropped":
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        if fault == "non_json":
            return self._send_raw(200, b"<html><body>502 Bad Gateway</body></html>", "application/json")
        if fault == "truncated":
            data = json.dumps(_completion(self.server_fake.model, "x" * 200, body, {})).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data[: len(data) // 3])
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        if "status" in spec:
            error = {"message": self._echo(spec["message"]), "type": spec.get("error_type") or "server_error"}
            if spec.get("error_type"):
                error["code"] = spec["error_type"]
            return self._send_json(spec["status"], {"error": error}, spec.get("headers") or {})
        return self._send_json(200, _completion(self.server_fake.model, spec["content"], body, spec))

    def _send_huge(self, size: int, chunked: bool):
        """A completion whose content is `size` bytes of 'x', written 1 MB at a time."""
        prefix, suffix = _completion_parts(self.server_fake.model, {})
        block = b"x" * (1 << 20)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
        else:
            self.send_header("Content-Length", str(len(prefix) + size + len(suffix)))
        self.end_headers()

        def write(data: bytes):
            if chunked:
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            else:
                self.wfile.write(data)

        write(prefix)
        left = size
        while left > 0:
            piece = block if left >= len(block) else block[:left]
            write(piece)
            left -= len(piece)
        write(suffix)
        if chunked:
            self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _send_json(self, code: int, payload: dict, headers: dict | None = None):
        self._send_raw(code, json.dumps(payload).encode(), "application/json", headers)

    def _send_raw(self, code: int, data: bytes, content_type: str, headers: dict | None = None):
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)


@functools.lru_cache(maxsize=4)
def _bomb(model: str, size: int) -> bytes:
    """A gzip-encoded completion whose content is `size` bytes of '0' (compressed 1 MB at a time)."""
    prefix, suffix = _completion_parts(model, {})
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    parts, block, left = [packer.compress(prefix)], b"0" * (1 << 20), size
    while left > 0:
        parts.append(packer.compress(block if left >= len(block) else block[:left]))
        left -= len(block)
    parts += [packer.compress(suffix), packer.flush()]
    return b"".join(parts)


def _completion_parts(model: str, body: dict) -> tuple[bytes, bytes]:
    """The bytes of a completion before and after its content string (for huge contents)."""
    marker = "\u0000MARK\u0000"
    whole = json.dumps(_completion(model, marker, body, {"prompt_tokens": 1, "completion_tokens": 1})).encode()
    cut = json.dumps(marker)[1:-1].encode()
    prefix, suffix = whole.split(cut)
    return prefix, suffix


def _completion(model: str, text: str, body: dict, spec: dict) -> dict:
    """An OpenAI chat.completion object; token counts default to word counts."""
    prompt_words = sum(len(str(m.get("content", "")).split()) for m in body.get("messages") or []
                       if isinstance(m, dict))
    prompt = spec.get("prompt_tokens")
    completion = spec.get("completion_tokens")
    usage = {"prompt_tokens": prompt_words if prompt is None else prompt,
             "completion_tokens": len(text.split()) if completion is None else completion}
    usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
    return {"id": "chatcmpl-fake", "object": "chat.completion", "created": int(time.time()),
            "model": body.get("model", model),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                         "finish_reason": spec.get("finish_reason", "stop")}],
            "usage": usage}


# ---------------------------------------------------------------------------
# standalone


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fakellm", description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0 = a free one)")
    parser.add_argument("--script", help="JSON script: {queue, rules, default, api_key}")
    parser.add_argument("--ready-file", help="write the port here once listening")
    parser.add_argument("--requests", help="append every captured request to this JSONL file")
    parser.add_argument("--lifetime", type=float, default=600.0, help="stop after this many seconds")
    args = parser.parse_args(argv)
    script = json.load(open(args.script)) if args.script else {}
    fake = FakeLLM(port=args.port, api_key=script.get("api_key"))
    fake.enqueue(*script.get("queue", []))
    for rule in script.get("rules", []):
        fake.add_rule(rule["contains"], rule["reply"])
    if "default" in script:
        fake.default = reply(script["default"]) if isinstance(script["default"], str) else script["default"]
    if args.requests:
        log_lock = threading.Lock()

        def append(captured):
            with log_lock, open(args.requests, "a", encoding="utf-8") as out:
                out.write(json.dumps(captured) + "\n")

        fake.on_request = append
    fake.start()
    if args.ready_file:  # written whole (rename), so a reader never sees a partial port
        partial = f"{args.ready_file}.partial"
        with open(partial, "w") as out:
            out.write(str(fake.port))
        os.replace(partial, args.ready_file)
    print(fake.url, flush=True)
    try:
        time.sleep(args.lifetime)
    except KeyboardInterrupt:
        pass
    finally:
        fake.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
