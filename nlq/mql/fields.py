"""What a pipeline reads: the collections it names and the stored fields of each.

    >>> sorted(read_paths("patients", [{"$match": {"ward": "A", "age": {"$gt": 30}}},
    ...                                {"$group": {"_id": "$kind", "n": {"$sum": 1}}},
    ...                                {"$sort": {"n": -1}}]))
    [('patients', 'age'), ('patients', 'kind'), ('patients', 'ward')]

Both are read off the scoped walk (:mod:`nlq.mql.scope`) over collections
whose every path exists: a field reference counts when, where it is read, it
names a stored field rather than one the pipeline computed. So reading stops
being of the collection at the first stage that replaces its documents
(`$group`, `$project`, `$count`, `$replaceRoot`...), a field added by
`$addFields` is no stored path, `$lookup` contributes the foreign
collection's `foreignField` and its sub-pipeline, `$unionWith` and `$facet`
their sub-pipelines. A variable path counts when the variable holds stored
documents (`$$ROOT.a`, `$$this.b` of a `$map` over a stored array).
"""

from __future__ import annotations

from nlq.mql import scope
from nlq.mql.query import Query


def read_paths(collection: str, pipeline: list) -> set[tuple[str, str]]:
    """`{(collection, dotted path)}` of every stored field `pipeline` reads from `collection` and
    from the collections its `$lookup` / `$unionWith` stages name."""
    query = Query(collection, pipeline if isinstance(pipeline, list) else [])
    found: set[tuple[str, str]] = set()
    for ref in scope.walk(query, _Unknown()).references:
        path, shape = ref.path, ref.shape
        if path.startswith("$$"):
            path = path.partition(".")[2]
        head = path.split(".", 1)[0]
        if not path or shape.open or head in shape.fields or head in shape.removed:
            continue
        for node in shape.nodes:
            found.add((node.collection, f"{node.path}.{path}" if node.path else path))
    return found


class _Unknown(dict):
    """A schema holding every collection, each with every path (:meth:`scope.Node.unknown`)."""

    def get(self, name, default=None):
        if not isinstance(name, str):
            return default
        if name not in self:
            self[name] = scope.Node.unknown(name)
        return self[name]


def named_collections(collection: str, pipeline: list) -> list[str]:
    """The collections a query reads, in order of appearance: its own (unless the pipeline
    starts with `$documents`) and those of `$lookup`, `$graphLookup` and `$unionWith`, at any
    depth.

        >>> named_collections("users", [{"$lookup": {"from": "orders", "as": "o", "pipeline": []}}])
        ['users', 'orders']
    """
    pipeline = pipeline if isinstance(pipeline, list) else []
    starts_with_documents = bool(pipeline) and isinstance(pipeline[0], dict) and "$documents" in pipeline[0]
    names = [] if starts_with_documents or not collection else [collection]
    names += [c.name for c in scope.walk(Query(collection, pipeline), {}).collections
              if c.stage is not None and isinstance(c.name, str)]
    return list(dict.fromkeys(names))


__all__ = ["read_paths", "named_collections"]
