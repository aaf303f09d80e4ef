"""Per-record usage accounting: what the model calls behind one prediction cost.

    with metered() as meter:
        prediction = method.generate(task, context)
    prediction["usage"] = meter.as_dict()

Every ChatClient.chat call adds itself to the meter of the running thread
(one record is handled by one thread), so methods never thread usage through.
"""

from __future__ import annotations

import contextlib
import contextvars
from dataclasses import dataclass

_current: contextvars.ContextVar["Meter | None"] = contextvars.ContextVar("nlq_llm_meter", default=None)


@dataclass
class Meter:
    """Sums of the calls made while it is current. `ms` is endpoint latency;
    for a reply replayed from the cache it is the latency of the original call.
    `model_calls` counts chat calls (cache hits included); `http_attempts` the
    HTTP requests they made (retries and json_mode fallbacks included, 0 for a hit)."""

    model_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cache_hits: int = 0
    ms: float = 0.0
    http_attempts: int = 0

    def add(self, *, prompt_tokens: int, completion_tokens: int, cached: bool, ms: float,
            http_attempts: int = 0) -> None:
        self.model_calls += 1
        self.http_attempts += http_attempts
        self.prompt_tokens += prompt_tokens
        self.completion_tokens += completion_tokens
        self.cache_hits += int(cached)
        self.ms += ms

    def as_dict(self) -> dict:
        return {"model_calls": self.model_calls, "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens, "cache_hits": self.cache_hits,
                "ms": round(self.ms, 3), "http_attempts": self.http_attempts}


@contextlib.contextmanager
def metered():
    """A fresh Meter, current for this thread until the block ends."""
    meter = Meter()
    token = _current.set(meter)
    try:
        yield meter
    finally:
        _current.reset(token)


def record(**call) -> None:
    """Add one call to the current meter (no-op when nothing is metered)."""
    meter = _current.get()
    if meter is not None:
        meter.add(**call)
