"""The `generate` stage: add a `prediction` to every task record.

    records = generate.run(records, "rules", generate.Context(nlq.index.load(path)))

A method never sees evaluation metadata: it receives `task_view(record)`,
which drops `gold`, `gold_mql` and `labels`, and the prediction records the
channels it observed in `disclosure`.

A record without `witnesses` gets them first, computed from its question and
the index exactly as `nlq witness` computes them (default `--hard-max`), and
they are written with the prediction: the two ways of calling generate agree.

Every record yields one record. One that cannot be handled gets
`prediction: null` and a typed `failure` (stage `generate`):
`missing_question` (no question text), `input_too_large` (a question longer
than `max_question_chars`), `input_error` (a `db` that is not a
string, `witnesses` that are not a list of objects), `unknown_db` (no
grounding index for the record's db), the method's own NlqError types
(`abstained`...), and `internal_error` for any other exception a method
raises (a bug: named in the message, and the stream goes on).

Methods that call a model (`needs_model = True`) run `--concurrency` records
at a time and add `usage = {model_calls, prompt_tokens, completion_tokens,
cache_hits, ms}` to the prediction (and to the failure, when one fails after
spending calls); model faults are typed failures (`model_timeout`,
`model_rate_limited`, `model_http_error`, `model_auth`, `model_bad_output`,
`cache_miss`, `budget_exhausted`).
"""

from __future__ import annotations

import functools
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from typing import Iterable, Iterator

from nlq import io, methods
from nlq.errors import InputError, ModelConfigError, NlqError, UnknownDatabaseError, failure
from nlq.llm import usage as llm_usage
from nlq.io import has_failure
from nlq.witness import DEFAULT_HARD_MAX, DEFAULT_MAX_QUESTION_CHARS, database_of, missing_db, question_of
from nlq.witness import find as find_witnesses
from nlq import profiles

STAGE = "generate"

# Fields of a task record that carry the answer or evaluation metadata.
HIDDEN_FIELDS = frozenset({"gold", "gold_mql", "labels", "score", "execution"})


def task_view(record: dict) -> dict:
    """The record as a method may see it: everything but gold and labels."""
    return {k: v for k, v in record.items() if k not in HIDDEN_FIELDS}


class Context:
    """What a method may consult besides the task: the grounding index
    (per database), an optional backend, the chat model (`model`, a
    ChatClient, for methods with `needs_model`) and method options."""

    def __init__(self, indexes: dict[str, dict] | None = None, backend=None, model=None, **options):
        self.indexes = indexes or {}
        self.backend = backend
        self.model = model  # an nlq.llm.ChatClient, or None for LLM-free methods
        self.options = options
        self._memo: dict = {}

    def memo(self, key, build):
        """What `build()` returns, computed once per run for `key` (a method's
        preparation of an index, say): the cache lives as long as the context."""
        if key not in self._memo:
            self._memo[key] = build()
        return self._memo[key]

    def index_for(self, db: str | None) -> dict:
        if db in self.indexes:
            return self.indexes[db]
        if db is None and len(self.indexes) == 1:
            return next(iter(self.indexes.values()))
        if db is None or db == "":
            raise InputError(missing_db(self.indexes))
        known = ", ".join(sorted(self.indexes)) or "none"
        raise UnknownDatabaseError(f"no grounding index for database {db!r} (indexes loaded: {known})",
                                   hint="build one with `nlq index --data DIR --db DB`")


def check_task(record: dict, *, max_question_chars: int = DEFAULT_MAX_QUESTION_CHARS) -> None:
    """Raise a typed InputError when a task record's fields have the wrong JSON types
    (or its question is longer than `max_question_chars`)."""
    question_of(record, max_chars=max_question_chars)
    database_of(record)
    witnesses = record.get("witnesses")
    listed = isinstance(witnesses, list) and all(isinstance(w, dict) for w in witnesses)
    if witnesses is not None and not listed:
        raise InputError("the record's witnesses must be a list of objects (from `nlq witness`), "
                         f"not {io.dumps(witnesses).decode()[:80]}")


def with_witnesses(record: dict, context: Context, *, max_question_chars: int = DEFAULT_MAX_QUESTION_CHARS) -> dict:
    """The record with the `witnesses` that `nlq witness` (default --hard-max) would add, so
    that `generate` alone and `witness | generate` give the same prediction."""
    index = context.index_for(database_of(record))
    profile = context.options.get("profile") or {}
    return {**record, "witnesses": find_witnesses(question_of(record, max_chars=max_question_chars), index,
                                                  hard_max=profile.get("hard_max", DEFAULT_HARD_MAX),
                                                  literals=profile.get("literals", "nlq"))}


def run(records: Iterable[dict], method: str, context: Context, *,
        max_question_chars: int = DEFAULT_MAX_QUESTION_CHARS) -> Iterator[dict]:
    """Add `prediction` (or a typed `failure`) to each record, in input order.

    A method that calls a model (`needs_model`) handles `context.model.config.concurrency`
    records at a time on worker threads; its predictions carry `usage`."""
    impl = methods.get(method)
    needs_model = methods.needs(impl, "needs_model", context.options)
    if needs_model and context.model is None:
        raise ModelConfigError(f"method {impl.name!r} needs a model: set NLQ_BASE_URL, NLQ_API_KEY and NLQ_MODEL")
    workers = context.model.config.concurrency if needs_model else 1
    handle = functools.partial(_generate_one, impl, context, needs_model, max_question_chars)
    if workers == 1:
        yield from map(handle, records)
    else:
        yield from ordered_map(handle, records, workers)


def ordered_map(fn, items: Iterable, workers: int) -> Iterator:
    """`map(fn, items)` on `workers` threads, results in input order, at most
    `4 * workers` items read ahead (bounded memory on endless input).

    Threads, not asyncio: a method is ordinary blocking code (ReAct alternates
    model calls and backend queries for many turns), and the thread-safe httpx
    client and cache let several records share one connection pool."""
    window: deque = deque()
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="nlq-generate")
    try:
        for item in items:
            window.append(pool.submit(fn, item))
            if len(window) >= 4 * workers:
                yield window.popleft().result()
        while window:
            yield window.popleft().result()
    finally:
        for future in window:
            future.cancel()
        pool.shutdown(wait=True, cancel_futures=True)


def _generate_one(impl, context: Context, needs_model: bool, max_question_chars: int, record: dict) -> dict:
    if has_failure(record):
        return record
    start = time.perf_counter()
    with llm_usage.metered() as meter:
        try:
            check_task(record, max_question_chars=max_question_chars)
            if record.get("witnesses") is None:
                record = with_witnesses(record, context, max_question_chars=max_question_chars)
            prediction = impl.generate(task_view(record), context)
            if not isinstance(prediction, dict):
                raise TypeError(f"method {impl.name} returned {type(prediction).__name__}, not an object")
        except NlqError as exc:
            return _failed(record, exc.to_failure(STAGE), meter if needs_model else None)
        except Exception as exc:  # noqa: BLE001 - a method's bug must not lose the record
            return _failed(record, failure(STAGE, "internal_error", f"{type(exc).__name__}: {exc}"),
                           meter if needs_model else None)
    prediction.setdefault("method", impl.name)
    prediction["profile"] = profile_record(context.options.get("profile"))
    # a method that delegates (cascade) adds the channels its delegate observed
    prediction["disclosure"] = sorted(set(impl.channels) | set(prediction.get("disclosure", ())))
    if needs_model:
        prediction["usage"] = meter.as_dict()
    prediction["ms"] = round((time.perf_counter() - start) * 1000, 3)
    candidates = prediction.pop("candidates", None)  # other readings: the record's, for `nlq repair`
    repaired = prediction.pop("repair", None)  # a method that repairs (sag) reports as `nlq repair` does
    return {**record, "prediction": prediction, **({"candidates": candidates} if candidates is not None else {}),
            **({"repair": repaired} if repaired is not None else {})}


def profile_record(values: dict | None) -> dict:
    """`prediction.profile = {name, overrides}`: the profile in effect and the elements of
    `generate` set away from its defaults (nlq.profiles)."""
    values = values or {**profiles.resolve(), "name": profiles.profile_name()}
    return profiles.describe(values.get("name"), values, [e.name for e in profiles.for_command("generate")])


def _failed(record: dict, failure_: dict, meter) -> dict:
    """The record with `prediction: null` and its failure; a model method's
    failure also carries the `usage` spent before it failed."""
    if meter is not None:
        failure_["usage"] = meter.as_dict()
    return {**record, "prediction": None, "failure": failure_}
