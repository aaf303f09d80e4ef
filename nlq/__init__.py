"""nlq: natural-language questions to MongoDB aggregation pipelines, measured.

The Python API is small and stable (the CLI is built on the same functions):

- `nlq.mql.parse(text)`, `nlq.mql.aggregate(docs, pipeline)`, `nlq.mql.to_mongosh(query)`:
  the query language (see :mod:`nlq.mql`);
- `nlq.open_backend(data=DIR | uri=URI)`: a database, the embedded engine over
  JSON/JSONL files or a MongoDB server, behind one interface (`databases()`,
  `collections(db)`, `aggregate(db, collection, pipeline)`, `close()`; a context
  manager);
- `nlq.score_one(record, backend)`: one task record scored by execution
  (:func:`nlq.score.run` on one record).

One question to rows is `nlq.ask.run(question, backend, db)` (the `nlq ask`
command). Everything loads on first use: `import nlq` imports nothing else.
"""

from __future__ import annotations

import importlib

__version__ = "0.1.0"

# public name -> (module, attribute); a module itself when attribute is None
_EXPORTS = {
    "mql": ("nlq.mql", None),
    "open_backend": ("nlq.backends", "open_backend"),
}

__all__ = ["__version__", "mql", "open_backend", "score_one"]


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'nlq' has no attribute {name!r}")
    module, attribute = _EXPORTS[name]
    value = importlib.import_module(module)
    return value if attribute is None else getattr(value, attribute)


def score_one(record: dict, backend, **options) -> dict:
    """`record` (a task with `gold` or `gold_mql` and a `prediction`) with its `score`, as
    `nlq score` computes it (options: see :func:`nlq.score.run`)."""
    scored, = importlib.import_module("nlq.score").run([record], backend, **options)
    return scored
