"""The MongoDB query language: parse queries, run pipelines over documents in memory.

    >>> from nlq import mql
    >>> query = mql.parse('db.people.find({age: {$gt: 30}}, {_id: 0, name: 1})')
    >>> query.collection, query.pipeline
    ('people', [{'$match': {'age': {'$gt': 30}}}, {'$project': {'_id': 0, 'name': 1}}])
    >>> mql.aggregate([{"name": "Ann", "age": 41}, {"name": "Bo", "age": 25}], query.pipeline)
    [{'name': 'Ann'}]

The public names (stable; everything else in the package may move):

- `parse(text_or_dict)` -> `Query(collection, pipeline, form, warnings)`: mongosh
  text or the JSON form, find/count/distinct lowered to aggregation stages
  (:mod:`nlq.mql.mongosh`); ParseError with line, column and caret otherwise.
- `aggregate(docs, pipeline, *, catalog, timeout, max_rows, max_bytes)` -> rows:
  the embedded engine (:mod:`nlq.mql.engine`); `catalog(name)` gives other
  collections for `$lookup`/`$unionWith`.
- `to_mongosh(query)`: the query as mongosh text that pastes into mongosh.
- `Query`, and the errors in :mod:`nlq.errors`.

Names load on first use, so `import nlq.mql` costs nothing until then.
"""

from __future__ import annotations

import importlib

# public name -> (module, attribute)
_EXPORTS = {
    "parse": ("nlq.mql.mongosh", "parse_query"),
    "aggregate": ("nlq.mql.engine", "aggregate"),
    "to_mongosh": ("nlq.mql.serialize", "to_mongosh"),
    "Query": ("nlq.mql.query", "Query"),
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'nlq.mql' has no attribute {name!r}")
    module, attribute = _EXPORTS[name]
    value = getattr(importlib.import_module(module), attribute)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
