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
"""

from __future__ import annotations

import time
from typing import Iterable, Iterator

from nlq import io, methods
from nlq.errors import InputError, NlqError, UnknownDatabaseError, failure
from nlq.io import has_failure
from nlq.witness import DEFAULT_MAX_QUESTION_CHARS, database_of, question_of
from nlq.witness import find as find_witnesses

STAGE = "generate"

# Fields of a task record that carry the answer or evaluation metadata.
HIDDEN_FIELDS = frozenset({"gold", "gold_mql", "labels", "score", "execution"})


def task_view(record: dict) -> dict:
    """The record as a method may see it: everything but gold and labels."""
    return {k: v for k, v in record.items() if k not in HIDDEN_FIELDS}


class Context:
    """What a method may consult besides the task: the grounding index
    (per database), an optional backend, and method options."""

    def __init__(self, indexes: dict[str, dict] | None = None, backend=None, **options):
        self.indexes = indexes or {}
        self.backend = backend
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
    return {**record, "witnesses": find_witnesses(question_of(record, max_chars=max_question_chars), index)}


def run(records: Iterable[dict], method: str, context: Context, *,
        max_question_chars: int = DEFAULT_MAX_QUESTION_CHARS) -> Iterator[dict]:
    """Add `prediction` (or a typed `failure`) to each record, in order."""
    impl = methods.get(method)
    for record in records:
        if has_failure(record):
            yield record
            continue
        start = time.perf_counter()
        try:
            check_task(record, max_question_chars=max_question_chars)
            if record.get("witnesses") is None:
                record = with_witnesses(record, context, max_question_chars=max_question_chars)
            prediction = impl.generate(task_view(record), context)
            if not isinstance(prediction, dict):
                raise TypeError(f"method {impl.name} returned {type(prediction).__name__}, not an object")
        except NlqError as exc:
            yield {**record, "prediction": None, "failure": exc.to_failure(STAGE)}
            continue
        except Exception as exc:  # noqa: BLE001 - a method's bug must not lose the record
            yield {**record, "prediction": None,
                   "failure": failure(STAGE, "internal_error", f"{type(exc).__name__}: {exc}")}
            continue
        prediction.setdefault("method", impl.name)
        prediction["disclosure"] = sorted(impl.channels)
        prediction["ms"] = round((time.perf_counter() - start) * 1000, 3)
        yield {**record, "prediction": prediction}
