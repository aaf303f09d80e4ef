"""ChatClient: `POST {base_url}/chat/completions` with retries, cache and transcript.

    client = ChatClient(ModelConfig(model="m", base_url="http://127.0.0.1:8000/v1"))
    reply = client.chat([{"role": "user", "content": "..."}], schema={...})
    reply.text, reply.usage, reply.cached, reply.ms, reply.retries

One client serves many threads (httpx.Client and the cache are thread-safe);
`generate` runs `concurrency` records at a time through it. Faults become
typed ModelError subclasses after the retries; the API key never leaves the
Authorization header (it is masked, before any cut, in every message, log
line, cache row and reply text: see nlq.llm.secret).

A reply is untrusted: `request_timeout` is the deadline of the whole call
(every socket read and write is bounded by the time left, so a server that
drips a byte at a time is cut off at it, retries included), and the body is
streamed and read no further than `max_reply_bytes`.
"""

from __future__ import annotations

import datetime as _dt
import email.utils
import functools
import random
import threading
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import httpcore
import httpx
import orjson

from nlq.errors import (CacheMissError, CallBudgetExhaustedError, ModelAuthError, ModelBadOutputError, ModelError,
                        ModelHTTPError, ModelRateLimitedError, ModelReplyTooLargeError, ModelTimeoutError)
from nlq.llm import usage
from nlq.llm.cache import endpoint_identity, request_key
from nlq.llm.shared_cache import open_cache
from nlq.llm.config import JSON_MODES, ModelConfig
from nlq.llm.secret import Secret

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
# The longest Retry-After nlq waits for; a server asking for more is reported as rate limited.
MAX_RETRY_AFTER = 120.0
# How much of an error body (4xx/5xx) is read for its message.
ERROR_BODY_BYTES = 64 * 1024


@dataclass
class Reply:
    """One model answer: its text, token usage and how it was obtained."""

    text: str
    usage: dict = field(default_factory=lambda: {"prompt_tokens": 0, "completion_tokens": 0})
    cached: bool = False
    ms: float = 0.0
    retries: int = 0
    finish_reason: str | None = None
    attempts: int = 1

    @property
    def http_attempts(self) -> int:
        """HTTP requests behind this reply (retries and json_mode fallbacks included; 0 from the cache)."""
        return 0 if self.cached else self.attempts


class _Retry(Exception):
    """A transient fault: wait and try again (or give up with `error`)."""

    def __init__(self, error: ModelError, wait: float | None = None):
        self.error, self.wait = error, wait


class ChatClient:
    """A thread-safe chat-completions client for one ModelConfig.

    `warn(message)` reports what does not stop a call (a damaged cache entry, a
    cache write given up); default: a line on stderr. `stats` holds the run's
    totals (calls, cache hits, tokens, errors, http attempts, calls `refused` by the
    budget) for a progress line."""

    def __init__(self, config: ModelConfig, *, warn=None):
        self.config = config
        self._secret = Secret(config.api_key)
        self._json_mode = config.json_mode
        self._mode_lock = threading.Lock()
        self._log_lock = threading.Lock()
        self._stats_lock = threading.Lock()
        self.stats = {"calls": 0, "cache_hits": 0, "tokens": 0, "errors": 0, "http_attempts": 0, "refused": 0}
        self._endpoint = endpoint_identity(config.base_url) if config.base_url else None
        self._cache = (open_cache(config.cache, warn=warn, mask=self._secret.mask_bytes, claim=not config.offline)
                       if config.cache is not None else None)
        self._http = None
        if not config.offline:
            headers = {"Content-Type": "application/json", "Accept-Encoding": "identity"}
            if config.api_key:
                headers["Authorization"] = f"Bearer {config.api_key}"
            limits = httpx.Limits(max_connections=max(config.concurrency, 1) * 2,
                                  max_keepalive_connections=max(config.concurrency, 1) * 2)
            self._http = httpx.Client(headers=headers, timeout=config.request_timeout,
                                      transport=_deadline_transport(limits))
            for transport in self._http._mounts.values():  # proxies from the environment
                _bound_by_deadline(transport)
        self._url = (config.base_url or "").rstrip("/") + "/chat/completions"
        self._random = random.Random()

    # -- public ---------------------------------------------------------------

    def chat(self, messages: list[dict], *, schema: dict | None = None, schema_name: str = "answer",
             sample: int = 0) -> Reply:
        """The model's reply to `messages`.

        `schema` (a JSON schema) asks for structured output in the configured
        `json_mode`; None asks for free text. `sample` distinguishes repeated
        draws of the same request in the cache (attempt 0, 1, 2...): it is part
        of the cache key and never sent. Raises a ModelError subclass.
        """
        logical = self._logical_request(messages, schema, schema_name, sample)
        key = request_key(logical)
        if self._cache is not None:
            hit = self._cache.get(key, self._endpoint)
            if hit is not None:
                reply = Reply(self._secret.mask(hit["text"]), hit["usage"], cached=True, ms=hit["ms"], retries=0,
                              finish_reason=hit.get("finish_reason"))
                self._account(reply)
                self._log(messages, logical, reply=reply)
                return reply
        if self.config.offline:
            where = f"cache {self._cache.path}" if self._cache is not None else "no cache"
            error = CacheMissError(f"--offline: no cached reply for this request to {self.config.model} "
                                   f"({where}, key {key[:12]})",
                                   hint="run once without --offline to fill the cache")
            self._count(errors=1)
            self._log(messages, logical, error=error)
            raise error
        try:
            self._reserve()
        except ModelError:
            if self._cache is not None:
                self._cache.abandon(key, self._endpoint)  # a runner waiting for this reply asks the model itself
            raise
        started = time.perf_counter()
        try:
            reply = self._call(messages, schema, schema_name)
        except ModelError as exc:
            if self._cache is not None:
                self._cache.abandon(key, self._endpoint)
            ms = (time.perf_counter() - started) * 1000
            attempts = getattr(exc, "http_attempts", 1)
            usage.record(prompt_tokens=0, completion_tokens=0, cached=False, ms=ms, http_attempts=attempts)
            self._count(errors=1, http_attempts=attempts)
            self._log(messages, logical, error=exc, ms=ms)
            raise
        if self._cache is not None:
            self._cache.put(key, self._endpoint, logical, {"text": reply.text, "usage": reply.usage, "ms": reply.ms,
                                                           "finish_reason": reply.finish_reason})
        self._account(reply)
        self._log(messages, logical, reply=reply)
        return reply

    def _reserve(self) -> None:
        """Count one more call against `--budget`, or raise CallBudgetExhaustedError."""
        c = self.config
        with self._stats_lock:
            if c.budget_calls is not None and self.stats["calls"] >= c.budget_calls:
                spent = f"calls={c.budget_calls}"
            elif c.budget_tokens is not None and self.stats["tokens"] >= c.budget_tokens:
                spent = f"tokens={c.budget_tokens}"
            else:
                self.stats["calls"] += 1
                return
            self.stats["refused"] += 1
        raise CallBudgetExhaustedError(
            f"--budget {spent} is spent: no further model call in this run "
            f"({self.stats['calls']} calls, {self.stats['tokens']} tokens)",
            hint="rerun with a larger --budget: replies already fetched are served from the cache")

    def _count(self, **amounts) -> None:
        with self._stats_lock:
            for name, amount in amounts.items():
                self.stats[name] += amount

    @property
    def json_mode(self) -> str:
        """The structured-output mode in use now (after any fallback)."""
        return self._json_mode

    def close(self) -> None:
        if self._http is not None:
            self._http.close()
        if self._cache is not None:
            self._cache.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- request building -----------------------------------------------------

    def _logical_request(self, messages, schema, schema_name, sample) -> dict:
        """What decides the answer (the cache key): never the endpoint or the key."""
        c = self.config
        return {"model": c.model, "messages": messages, "temperature": c.temperature, "max_tokens": c.max_tokens,
                "options": c.options, "json_mode": c.json_mode if schema is not None else "none",
                "schema": schema, "schema_name": schema_name, "sample": sample,
                **({"draw": c.draw} if c.draw else {})}

    def _body(self, messages, schema, schema_name, mode) -> dict:
        c = self.config
        body = {"model": c.model, "messages": messages, "temperature": c.temperature}
        if c.max_tokens is not None:
            body["max_tokens"] = c.max_tokens
        body.update(c.options)
        if schema is not None and mode == "schema":
            body["response_format"] = {"type": "json_schema", "json_schema": {"name": schema_name, "schema": schema}}
        elif schema is not None and mode == "object":
            body["response_format"] = {"type": "json_object"}
        return body

    # -- the retry loop -------------------------------------------------------

    def _call(self, messages, schema, schema_name) -> Reply:
        """The reply, within one deadline (`request_timeout` from now) for every attempt and wait."""
        started = time.perf_counter()
        deadline = time.monotonic() + self.config.request_timeout
        retries = attempts = 0
        while True:
            mode = self._json_mode
            body = self._body(messages, schema, schema_name, mode)
            attempts += 1
            try:
                text, tokens, finish = self._post(body, deadline, downgradable=schema is not None and mode != "none")
            except _Downgrade:
                self._downgrade(mode)
                continue
            except _Retry as fault:
                error = fault.error
                wait = self._delay(retries, fault.wait)
                left = deadline - time.monotonic()
                if retries >= self.config.max_retries or wait >= left:
                    why = (f"gave up after {retries} retries" if retries >= self.config.max_retries else
                           f"gave up after {retries} retries: the next would end past the "
                           f"{self.config.request_timeout:g} s --request-timeout")
                    gave_up = type(error)(f"{error.message} ({why})", hint=error.hint)
                    gave_up.transient = True  # a transport fault: another call may succeed
                    raise _attempted(gave_up, attempts) from None
                time.sleep(wait)
                retries += 1
                continue
            except ModelError as error:
                raise _attempted(error, attempts)
            ms = round((time.perf_counter() - started) * 1000, 3)
            return Reply(text, tokens, cached=False, ms=ms, retries=retries, finish_reason=finish, attempts=attempts)

    def _delay(self, retries: int, retry_after: float | None) -> float:
        """Exponential backoff with full jitter; at least what Retry-After asked for."""
        base = min(self.config.max_backoff, self.config.backoff * (2 ** retries))
        jittered = base * (0.5 + 0.5 * self._random.random())
        return max(jittered, retry_after or 0.0)

    def _downgrade(self, mode: str) -> None:
        with self._mode_lock:
            if self._json_mode == mode:
                self._json_mode = JSON_MODES[JSON_MODES.index(mode) + 1]

    def _post(self, body: dict, deadline: float, *, downgradable: bool):
        where = self._redact(self._url)
        timeout = self.config.request_timeout
        cap = self.config.max_reply_bytes
        _deadline.at = deadline
        try:
            with self._http.stream("POST", self._url, content=orjson.dumps(body)) as response:
                status = response.status_code
                declared = _count(_int(response.headers.get("content-length")))
                if status == 200 and declared > cap:
                    raise ModelReplyTooLargeError(f"{where}: the reply is {declared} bytes, over the "
                                                  f"--max-reply-bytes cap of {cap}",
                                                  hint="raise --max-reply-bytes if the endpoint is trusted")
                data, over = _read_capped(response, cap if status == 200 else ERROR_BODY_BYTES, deadline)
        except httpx.TimeoutException:
            raise ModelTimeoutError(f"{where}: no complete reply within the {timeout:g} s --request-timeout",
                                    hint="raise --request-timeout, or lower --concurrency") from None
        except httpx.DecodingError as exc:
            raise ModelHTTPError(f"{where}: {self._redact(str(exc))}") from None
        except httpx.TransportError as exc:
            raise _Retry(ModelHTTPError(f"{where}: connection failed ({type(exc).__name__}: "
                                        f"{self._redact(str(exc)) or 'no detail'})",
                                        hint="is the model server running at that address?")) from None
        finally:
            _deadline.at = None
        if status == 200:
            if over:
                raise ModelReplyTooLargeError(f"{where}: the reply is longer than the --max-reply-bytes cap of {cap} "
                                              "bytes (reading stopped there)",
                                              hint="raise --max-reply-bytes if the endpoint is trusted")
            return self._parse(data, where)
        detail, error_type = self._error_detail(data, over, response.reason_phrase)
        if status == 400 and downgradable and _about_response_format(detail):
            raise _Downgrade()
        if status in (401, 403):
            raise ModelAuthError(f"{where}: HTTP {status}: {detail}", hint="check NLQ_API_KEY / --api-key")
        if status == 429:
            if error_type == "insufficient_quota":
                raise ModelRateLimitedError(f"{where}: HTTP 429 insufficient_quota: {detail}")
            wait = _retry_after(response.headers.get("retry-after"))
            error = ModelRateLimitedError(f"{where}: HTTP 429: {detail}",
                                          hint="lower --concurrency")
            if wait is not None and wait > MAX_RETRY_AFTER:
                raise error
            raise _Retry(error, wait)
        hint = "if the endpoint has no structured output, try --json-mode object or none" if status == 400 else None
        error = ModelHTTPError(f"{where}: HTTP {status}: {detail}", hint=hint)
        if status in RETRY_STATUSES:
            raise _Retry(error, _retry_after(response.headers.get("retry-after")))
        raise error

    def _parse(self, data: bytes, where: str):
        try:
            payload = orjson.loads(data)
            choice = payload["choices"][0]
            text = choice["message"].get("content") or ""
        except (orjson.JSONDecodeError, KeyError, IndexError, TypeError, AttributeError):
            # masked whole, then cut: no fragment of a key survives the cut
            excerpt = self._redact(data.decode("utf-8", "replace"))[:120]
            # A proxy's error page or a half-written body: transient, worth another try.
            raise _Retry(ModelBadOutputError(f"{where}: the response is not a chat completion: {excerpt!r}")) from None
        if not isinstance(text, str):
            raise _Retry(ModelBadOutputError(f"{where}: message content is {type(text).__name__}, not text"))
        raw = payload.get("usage") if isinstance(payload, dict) else None
        raw = raw if isinstance(raw, dict) else {}
        tokens = {"prompt_tokens": _count(raw.get("prompt_tokens")),
                  "completion_tokens": _count(raw.get("completion_tokens"))}
        finish = choice.get("finish_reason") if isinstance(choice, dict) else None
        return self._redact(text), tokens, finish if isinstance(finish, str) else None

    def _error_detail(self, data: bytes, cut: bool, reason: str) -> tuple[str, str | None]:
        """The server's error message (masked, then cut to one line) and its `type`/`code`, if any.

        `cut`: the body was longer than what was read (a key may straddle the end)."""
        text = data.decode("utf-8", "replace")
        try:
            payload = orjson.loads(data) if not cut else None
        except orjson.JSONDecodeError:
            payload = None
        error = payload.get("error") if isinstance(payload, dict) else None
        if isinstance(error, dict):
            message = str(error.get("message") or "")
            kind = error.get("type") or error.get("code")
            if error.get("code") == "insufficient_quota":
                kind = "insufficient_quota"
            return _one_line(self._redact(message), 300), kind if isinstance(kind, str) else None
        if payload is not None:
            text = str(payload)
        masked = self._secret.mask_cut(text) if cut else self._redact(text)
        return _one_line(masked, 200) or reason, None

    # -- accounting -----------------------------------------------------------

    def _account(self, reply: Reply) -> None:
        prompt, completion = reply.usage.get("prompt_tokens", 0), reply.usage.get("completion_tokens", 0)
        usage.record(prompt_tokens=prompt, completion_tokens=completion, cached=reply.cached, ms=reply.ms,
                     http_attempts=reply.http_attempts)
        if reply.cached:
            self._count(cache_hits=1)
        else:
            self._count(tokens=_count(prompt) + _count(completion), http_attempts=reply.http_attempts)

    def _redact(self, text: str) -> str:
        return self._secret.mask(text)

    def _log(self, messages, logical, *, reply: Reply | None = None, error: ModelError | None = None,
             ms: float | None = None) -> None:
        if self.config.log is None:
            return
        line = {"time": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="milliseconds"),
                "model": self.config.model, "base_url": self.config.base_url,
                "request": {"messages": self._masked(messages),
                            "params": {k: v for k, v in logical.items() if k not in ("model", "messages")}},
                "json_mode": self._json_mode,
                "response": None if reply is None else {"text": reply.text, "finish_reason": reply.finish_reason},
                "usage": None if reply is None else reply.usage,
                "ms": reply.ms if reply is not None else ms,
                "retries": reply.retries if reply is not None else None,
                "http_attempts": reply.http_attempts if reply is not None else (
                    getattr(error, "http_attempts", 0) if error is not None else None),
                "cached": bool(reply and reply.cached),
                "error": None if error is None else {"type": error.type, "message": error.message}}
        data = self._redact(orjson.dumps(line, default=str).decode()) + "\n"
        path = Path(self.config.log)
        with self._log_lock:
            with open(path, "a", encoding="utf-8") as out:
                out.write(data)


    def _masked(self, value):
        """`value` (messages) with the key masked in every string: the transcript is JSON, so
        a key with a character JSON escapes would not be found in the serialized line."""
        if not self._secret:
            return value
        if isinstance(value, str):
            return self._secret.mask(value)
        if isinstance(value, list):
            return [self._masked(v) for v in value]
        if isinstance(value, dict):
            return {k: self._masked(v) for k, v in value.items()}
        return value


def _attempted(error: ModelError, attempts: int) -> ModelError:
    error.http_attempts = attempts
    return error


def _one_line(text: str, limit: int) -> str:
    return " ".join(text.split())[:limit]


def _int(value):
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def _read_capped(response: httpx.Response, cap: int, deadline: float) -> tuple[bytes, bool]:
    """The body, streamed, at most `cap` bytes (after content decoding, which is done here
    a bounded piece at a time: a gzip bomb never inflates past the cap), and whether there
    was more. Stops at the deadline even when bytes keep coming."""
    inflate = _decoder(response.headers.get("content-encoding"))
    chunks, size = [], 0
    for raw in response.iter_raw():
        pending = raw
        while pending:
            if time.monotonic() > deadline:
                raise httpx.ReadTimeout("the reply deadline has passed")
            if inflate is None:
                chunk, pending = pending, b""
            else:
                try:
                    chunk = inflate.decompress(pending, cap - size + 1)
                except zlib.error as exc:
                    raise httpx.DecodingError(f"the {response.headers.get('content-encoding')} body is damaged "
                                              f"({exc})") from None
                pending = inflate.unconsumed_tail
            if size + len(chunk) > cap:
                chunks.append(chunk[:cap - size])
                return b"".join(chunks), True
            chunks.append(chunk)
            size += len(chunk)
    return b"".join(chunks), False


def _decoder(encoding: str | None):
    """A zlib decompressor for a Content-Encoding (None for identity). nlq asks for
    `identity`; a server that compresses all the same is decoded, gzip or deflate only."""
    name = (encoding or "identity").strip().lower()
    if name in ("identity", ""):
        return None
    if name in ("gzip", "x-gzip"):
        return zlib.decompressobj(16 + zlib.MAX_WBITS)
    if name == "deflate":
        return zlib.decompressobj()
    raise httpx.DecodingError(f"the reply has Content-Encoding {encoding!r}, which nlq does not decode")


# -- the whole-reply deadline ---------------------------------------------------
# httpx's timeouts bound each socket operation, not a reply: a server sending a
# byte every few seconds is never cut off. The calling thread's deadline is kept
# here and every connect, read and write of the connection pool is bounded by
# the time left before it (the reads of one request run on the thread that made it).

_deadline = threading.local()


def _bounded(timeout: float | None, error) -> float | None:
    at = getattr(_deadline, "at", None)
    if at is None:
        return timeout
    left = at - time.monotonic()
    if left <= 0:
        raise error("the reply deadline has passed")
    return left if timeout is None else min(timeout, left)


class _DeadlineStream(httpcore.NetworkStream):
    def __init__(self, stream: httpcore.NetworkStream):
        self._stream = stream

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._stream.read(max_bytes, _bounded(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._stream.write(buffer, _bounded(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._stream.close()

    def start_tls(self, ssl_context, server_hostname=None, timeout=None):
        return _DeadlineStream(self._stream.start_tls(ssl_context, server_hostname,
                                                      _bounded(timeout, httpcore.ConnectTimeout)))

    def get_extra_info(self, info: str):
        return self._stream.get_extra_info(info)


class _DeadlineBackend(httpcore.NetworkBackend):
    def __init__(self, backend: httpcore.NetworkBackend):
        self._backend = backend

    def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):
        return _DeadlineStream(self._backend.connect_tcp(host, port, _bounded(timeout, httpcore.ConnectTimeout),
                                                         local_address, socket_options))

    def connect_unix_socket(self, path, timeout=None, socket_options=None):
        return _DeadlineStream(self._backend.connect_unix_socket(path, _bounded(timeout, httpcore.ConnectTimeout),
                                                                 socket_options))

    def sleep(self, seconds: float) -> None:
        self._backend.sleep(seconds)


def _bound_by_deadline(transport) -> None:
    pool = getattr(transport, "_pool", None)
    backend = getattr(pool, "_network_backend", None)
    if backend is not None and not isinstance(backend, _DeadlineBackend):
        pool._network_backend = _DeadlineBackend(backend)


@functools.lru_cache(maxsize=1)
def _ssl_context():
    """One TLS context for every client of the process (loading the CA bundle takes ~0.1 s)."""
    return httpx.create_ssl_context()


def _deadline_transport(limits: httpx.Limits) -> httpx.HTTPTransport:
    transport = httpx.HTTPTransport(limits=limits, verify=_ssl_context())
    _bound_by_deadline(transport)
    return transport


class _Downgrade(Exception):
    """The server rejected `response_format` with a 400: try the next json_mode."""


# Words with which servers name the structured-output parameter when they reject it.
_FORMAT_WORDS = ("response_format", "json_schema", "json_object", "schema", "format", "guided")


def _about_response_format(detail: str) -> bool:
    lowered = detail.lower()
    return any(word in lowered for word in _FORMAT_WORDS)


def _count(value) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _retry_after(value: str | None) -> float | None:
    """Seconds from a Retry-After header (delta-seconds or an HTTP date)."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=_dt.timezone.utc)
    return max(0.0, (when - _dt.datetime.now(_dt.timezone.utc)).total_seconds())
