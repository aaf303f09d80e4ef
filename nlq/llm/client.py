"""ChatClient: `POST {base_url}/chat/completions` with retries, cache and transcript.

    client = ChatClient(ModelConfig(model="m", base_url="http://127.0.0.1:8000/v1"))
    reply = client.chat([{"role": "user", "content": "..."}], schema={...})
    reply.text, reply.usage, reply.cached, reply.ms, reply.retries

One client serves many threads (httpx.Client and the cache are thread-safe);
`generate` runs `concurrency` records at a time through it. Faults become
typed ModelError subclasses after the retries; the API key never leaves the
Authorization header (it is redacted from every message and log line).
"""

from __future__ import annotations

import datetime as _dt
import email.utils
import random
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import orjson

from nlq.errors import (CacheMissError, ModelAuthError, ModelBadOutputError, ModelError, ModelHTTPError,
                        ModelRateLimitedError, ModelTimeoutError)
from nlq.llm import usage
from nlq.llm.cache import ResponseCache, request_key
from nlq.llm.config import JSON_MODES, ModelConfig

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
# The longest Retry-After nlq waits for; a server asking for more is reported as rate limited.
MAX_RETRY_AFTER = 120.0


@dataclass
class Reply:
    """One model answer: its text, token usage and how it was obtained."""

    text: str
    usage: dict = field(default_factory=lambda: {"prompt_tokens": 0, "completion_tokens": 0})
    cached: bool = False
    ms: float = 0.0
    retries: int = 0
    finish_reason: str | None = None


class _Retry(Exception):
    """A transient fault: wait and try again (or give up with `error`)."""

    def __init__(self, error: ModelError, wait: float | None = None):
        self.error, self.wait = error, wait


class ChatClient:
    """A thread-safe chat-completions client for one ModelConfig."""

    def __init__(self, config: ModelConfig):
        self.config = config
        self._json_mode = config.json_mode
        self._mode_lock = threading.Lock()
        self._log_lock = threading.Lock()
        self._cache = ResponseCache(config.cache) if config.cache is not None else None
        self._http = None
        if not config.offline:
            headers = {"Content-Type": "application/json"}
            if config.api_key:
                headers["Authorization"] = f"Bearer {config.api_key}"
            limits = httpx.Limits(max_connections=max(config.concurrency, 1) * 2,
                                  max_keepalive_connections=max(config.concurrency, 1) * 2)
            self._http = httpx.Client(headers=headers, timeout=config.request_timeout, limits=limits)
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
            hit = self._cache.get(key)
            if hit is not None:
                reply = Reply(hit["text"], hit["usage"], cached=True, ms=hit["ms"], retries=0,
                              finish_reason=hit.get("finish_reason"))
                self._account(reply)
                self._log(messages, logical, reply=reply)
                return reply
        if self.config.offline:
            error = CacheMissError(f"--offline: no cached reply for this request to {self.config.model} "
                                   f"(cache {self._cache.path}, key {key[:12]})",
                                   hint="run once without --offline to fill the cache")
            self._log(messages, logical, error=error)
            raise error
        started = time.perf_counter()
        try:
            reply = self._call(messages, schema, schema_name)
        except ModelError as exc:
            ms = (time.perf_counter() - started) * 1000
            usage.record(prompt_tokens=0, completion_tokens=0, cached=False, ms=ms)
            self._log(messages, logical, error=exc, ms=ms)
            raise
        if self._cache is not None:
            self._cache.put(key, logical, {"text": reply.text, "usage": reply.usage, "ms": reply.ms,
                                           "finish_reason": reply.finish_reason})
        self._account(reply)
        self._log(messages, logical, reply=reply)
        return reply

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
        started = time.perf_counter()
        retries = 0
        while True:
            mode = self._json_mode
            body = self._body(messages, schema, schema_name, mode)
            try:
                text, tokens, finish = self._post(body, downgradable=schema is not None and mode != "none")
            except _Downgrade:
                self._downgrade(mode)
                continue
            except _Retry as fault:
                if retries >= self.config.max_retries:
                    error = fault.error
                    gave_up = type(error)(f"{error.message} (gave up after {retries} retries)", hint=error.hint)
                    gave_up.transient = True  # a transport fault: another call may succeed
                    raise gave_up from None
                time.sleep(self._delay(retries, fault.wait))
                retries += 1
                continue
            ms = round((time.perf_counter() - started) * 1000, 3)
            return Reply(text, tokens, cached=False, ms=ms, retries=retries, finish_reason=finish)

    def _delay(self, retries: int, retry_after: float | None) -> float:
        """Exponential backoff with full jitter; at least what Retry-After asked for."""
        base = min(self.config.max_backoff, self.config.backoff * (2 ** retries))
        jittered = base * (0.5 + 0.5 * self._random.random())
        return max(jittered, retry_after or 0.0)

    def _downgrade(self, mode: str) -> None:
        with self._mode_lock:
            if self._json_mode == mode:
                self._json_mode = JSON_MODES[JSON_MODES.index(mode) + 1]

    def _post(self, body: dict, *, downgradable: bool):
        where = self._redact(self._url)
        try:
            response = self._http.post(self._url, content=orjson.dumps(body))
        except httpx.TimeoutException:
            raise _Retry(ModelTimeoutError(f"{where}: no answer within {self.config.request_timeout:g} s",
                                           hint="raise --request-timeout, or lower --concurrency")) from None
        except httpx.TransportError as exc:
            raise _Retry(ModelHTTPError(f"{where}: connection failed ({type(exc).__name__}: "
                                        f"{self._redact(str(exc)) or 'no detail'})",
                                        hint="is the model server running at that address?")) from None
        status = response.status_code
        if status == 200:
            return self._parse(response, where)
        detail, error_type = self._error_detail(response)
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

    def _parse(self, response: httpx.Response, where: str):
        try:
            payload = orjson.loads(response.content)
            choice = payload["choices"][0]
            text = choice["message"].get("content") or ""
        except (orjson.JSONDecodeError, KeyError, IndexError, TypeError, AttributeError):
            excerpt = self._redact(response.text[:120])
            # A proxy's error page or a half-written body: transient, worth another try.
            raise _Retry(ModelBadOutputError(f"{where}: the response is not a chat completion: {excerpt!r}")) from None
        if not isinstance(text, str):
            raise _Retry(ModelBadOutputError(f"{where}: message content is {type(text).__name__}, not text"))
        raw = payload.get("usage") or {}
        tokens = {"prompt_tokens": _count(raw.get("prompt_tokens")),
                  "completion_tokens": _count(raw.get("completion_tokens"))}
        return text, tokens, choice.get("finish_reason")

    def _error_detail(self, response: httpx.Response) -> tuple[str, str | None]:
        """The server's error message (redacted, one line) and its `type`/`code`, if any."""
        try:
            payload = orjson.loads(response.content)
        except orjson.JSONDecodeError:
            return self._redact(" ".join(response.text.split())[:200]) or response.reason_phrase, None
        error = payload.get("error") if isinstance(payload, dict) else None
        if isinstance(error, dict):
            message = str(error.get("message") or "")
            kind = error.get("type") or error.get("code")
            if error.get("code") == "insufficient_quota":
                kind = "insufficient_quota"
            return self._redact(" ".join(message.split())[:300]), kind if isinstance(kind, str) else None
        return self._redact(" ".join(str(payload).split())[:200]), None

    # -- accounting -----------------------------------------------------------

    def _account(self, reply: Reply) -> None:
        usage.record(prompt_tokens=reply.usage.get("prompt_tokens", 0),
                     completion_tokens=reply.usage.get("completion_tokens", 0), cached=reply.cached, ms=reply.ms)

    def _redact(self, text: str) -> str:
        key = self.config.api_key
        return text.replace(key, "***") if key else text

    def _log(self, messages, logical, *, reply: Reply | None = None, error: ModelError | None = None,
             ms: float | None = None) -> None:
        if self.config.log is None:
            return
        line = {"time": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="milliseconds"),
                "model": self.config.model, "base_url": self.config.base_url,
                "request": {"messages": messages,
                            "params": {k: v for k, v in logical.items() if k not in ("model", "messages")}},
                "json_mode": self._json_mode,
                "response": None if reply is None else {"text": reply.text, "finish_reason": reply.finish_reason},
                "usage": None if reply is None else reply.usage,
                "ms": reply.ms if reply is not None else ms,
                "retries": reply.retries if reply is not None else None,
                "cached": bool(reply and reply.cached),
                "error": None if error is None else {"type": error.type, "message": error.message}}
        data = self._redact(orjson.dumps(line).decode()) + "\n"
        path = Path(self.config.log)
        with self._log_lock:
            with open(path, "a", encoding="utf-8") as out:
                out.write(data)


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
