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

- the stages, each a generator over records as its command runs it:
  `nlq.index.build(backend, dbs)` (the index documents), `nlq.witness.run(records, indexes)`, `nlq.generate.run(records, method, context)`,
  `nlq.score.run(records, backend)`; one question to rows is
  `nlq.ask.run(question, backend, db)` (the `nlq ask` command);
- `nlq.errors`: every error is an `nlq.errors.NlqError` with a `type` and a readable
  `message` (and maybe a `hint`).

`nlq.open_backend(data="example")` serves the example worlds installed with nlq
(see :mod:`nlq.examples`). Everything loads on first use: `import nlq` imports
nothing else.
"""

from __future__ import annotations

import importlib

__version__ = "0.1.0"

# public name -> (module, attribute); a module itself when attribute is None
_EXPORTS = {
    "mql": ("nlq.mql", None),
    "open_backend": ("nlq.backends", "open_backend"),
    "ask": ("nlq.ask", None),
    "errors": ("nlq.errors", None),
    "index": ("nlq.index", None),
    "witness": ("nlq.witness", None),
    "generate": ("nlq.generate", None),
    "score": ("nlq.score", None),
}

__all__ = ["__version__", "ask", "errors", "generate", "index", "mql", "open_backend", "score", "score_one",
           "witness"]


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
