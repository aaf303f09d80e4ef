"""The `generate` stage: add a `prediction` to every task record.

    records = generate.run(records, "rules", generate.Context(nlq.index.load(path)))

A method never sees evaluation metadata: it receives `task_view(record)`,
which drops `gold`, `gold_mql` and `labels`, and the prediction records the
channels it observed in `disclosure`.
"""

from __future__ import annotations

import time
from typing import Iterable, Iterator

from nlq import methods
from nlq.errors import NlqError
from nlq.io import has_failure

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

    def index_for(self, db: str | None) -> dict:
        if db in self.indexes:
            return self.indexes[db]
        if db is None and len(self.indexes) == 1:
            return next(iter(self.indexes.values()))
        known = ", ".join(sorted(self.indexes)) or "none"
        raise NlqError(f"no grounding index for database {db!r} (indexes loaded: {known})",
                       hint="build one with `nlq index --data DIR --db DB`")


def run(records: Iterable[dict], method: str, context: Context) -> Iterator[dict]:
    """Add `prediction` (or a typed `failure`) to each record, in order."""
    impl = methods.get(method)
    for record in records:
        if has_failure(record):
            yield record
            continue
        start = time.perf_counter()
        try:
            prediction = impl.generate(task_view(record), context)
        except NlqError as exc:
            yield {**record, "prediction": None, "failure": exc.to_failure("generate")}
            continue
        prediction.setdefault("method", impl.name)
        prediction["disclosure"] = sorted(impl.channels)
        prediction["ms"] = round((time.perf_counter() - start) * 1000, 3)
        yield {**record, "prediction": prediction}
