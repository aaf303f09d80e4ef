"""ModelConfig: everything that decides which endpoint is called and how.

    ModelConfig(model="qwen2.5-coder", base_url="http://127.0.0.1:8000/v1", api_key=None)

The API key is kept out of `repr`, the cache key, the transcript and every
error message (see nlq.llm.client).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from nlq.errors import ModelConfigError

JSON_MODES = ("schema", "object", "none")
# The longest reply body read from an endpoint; reading stops past it (a pipeline answer is a few KB).
DEFAULT_MAX_REPLY_BYTES = 8 * 1024 * 1024


def default_cache_path() -> Path:
    """`$XDG_CACHE_HOME/nlq/llm.sqlite`, else `~/.cache/nlq/llm.sqlite`."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "nlq" / "llm.sqlite"


@dataclass(frozen=True)
class ModelConfig:
    """One chat model behind an OpenAI-compatible endpoint, and how to call it.

    `options` are extra request-body fields passed through verbatim
    (`{"reasoning_effort": "high"}`). `json_mode` is the structured-output
    mode to start with (`schema` → `object` → `none` on a 400). `cache` is the
    SQLite response cache file, or None for no cache; `offline` answers only
    from the cache. `log` is a JSONL transcript file, or None. `max_retries`,
    `backoff` (first delay, seconds, doubled per retry, with jitter) and
    `max_backoff` bound the retry loop. `request_timeout` is the deadline of
    one whole call, from the request to the last byte of the reply, retries
    and their waits included; `max_reply_bytes` caps the body read. `budget_calls`
    and `budget_tokens` (None = no cap) stop the client making new calls once
    that many calls were made or tokens spent (cache hits are free). `draw` > 0 is another draw of the same
    requests (a compute-matched control without a request seed): it keys the
    cache and is never sent.
    """

    model: str
    base_url: str | None = None
    api_key: str | None = field(default=None, repr=False)
    temperature: float = 0.0
    max_tokens: int | None = None
    options: dict = field(default_factory=dict)
    json_mode: str = "schema"
    request_timeout: float = 120.0
    concurrency: int = 4
    cache: str | Path | None = None
    offline: bool = False
    log: str | Path | None = None
    max_retries: int = 6
    backoff: float = 0.5
    max_backoff: float = 30.0
    max_reply_bytes: int = DEFAULT_MAX_REPLY_BYTES
    budget_calls: int | None = None
    budget_tokens: int | None = None
    draw: int = 0  # another draw of the same requests: part of the cache key, never sent

    def __post_init__(self):
        if not self.model:
            raise ModelConfigError("no model name: set NLQ_MODEL or give --model")
        if self.json_mode not in JSON_MODES:
            raise ModelConfigError(f"json_mode must be one of {', '.join(JSON_MODES)}, not {self.json_mode!r}")
        if self.offline and self.cache is None:
            raise ModelConfigError("--offline answers from the response cache, but the cache is off (--no-cache)")
        if not self.offline and not self.base_url:
            raise ModelConfigError("no endpoint: set NLQ_BASE_URL or give --base-url")
        if self.max_reply_bytes < 1:
            raise ModelConfigError(f"max_reply_bytes must be at least 1, not {self.max_reply_bytes}")
        if self.concurrency < 1:
            raise ModelConfigError(f"concurrency must be at least 1, not {self.concurrency}")

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__dataclass_fields__
                          if name != "api_key")
        key = "'***'" if self.api_key else "None"
        return f"ModelConfig({shown}, api_key={key})"

    __str__ = __repr__
