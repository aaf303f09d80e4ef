"""What a pipeline reads: the collections it names and the stored fields of each.

    >>> sorted(read_paths("patients", [{"$match": {"ward": "A", "age": {"$gt": 30}}},
    ...                                {"$group": {"_id": "$kind", "n": {"$sum": 1}}},
    ...                                {"$sort": {"n": -1}}]))
    [('patients', 'age'), ('patients', 'kind'), ('patients', 'ward')]

Only paths of the input documents count: reading stops at the first stage
that replaces them (`$group`, `$project`, `$count`, `$replaceRoot`...), since
later names are the pipeline's own outputs. `$lookup` contributes the
foreign collection's `foreignField`, `$unionWith` and `$facet` their
sub-pipelines. Field references are `"$a.b"` strings in expressions, filter
keys (through `$and`/`$or`/`$nor` and `$elemMatch`, whose keys are relative
to the array's elements), `$sort` keys, `$unwind` paths and inclusion flags
of `$project`. Variables (`$$this`, `$$ROOT`...) are not stored paths, except
`$$ROOT.a` / `$$CURRENT.a`, which name `a`.
"""

from __future__ import annotations

# Stages after which the documents are the pipeline's own, not the collection's.
_RESHAPING = {"$group", "$project", "$count", "$replaceRoot", "$replaceWith", "$sortByCount", "$bucket",
              "$bucketAuto", "$facet", "$documents"}
_LOGICAL = ("$and", "$or", "$nor")


def read_paths(collection: str, pipeline: list) -> set[tuple[str, str]]:
    """`{(collection, dotted path)}` of every stored field `pipeline` reads from `collection` and
    from the collections its `$lookup` / `$unionWith` stages name."""
    found: set[tuple[str, str]] = set()
    _pipeline(collection, pipeline, found)
    return found


def named_collections(collection: str, pipeline: list) -> list[str]:
    """The collections a query reads, in order of appearance: its own (unless the pipeline
    starts with `$documents`) and those of `$lookup`, `$graphLookup` and `$unionWith`, at any
    depth.

        >>> named_collections("users", [{"$lookup": {"from": "orders", "as": "o", "pipeline": []}}])
        ['users', 'orders']
    """
    starts_with_documents = bool(pipeline) and isinstance(pipeline[0], dict) and "$documents" in pipeline[0]
    names = [] if starts_with_documents or not collection else [collection]
    _collections(pipeline, names)
    return list(dict.fromkeys(names))


def _collections(value, names: list) -> None:
    if isinstance(value, list):
        for element in value:
            _collections(element, names)
    elif isinstance(value, dict):
        for key, arg in value.items():
            if key in ("$lookup", "$graphLookup") and isinstance(arg, dict) and isinstance(arg.get("from"), str):
                names.append(arg["from"])
            elif key == "$unionWith":
                other = arg if isinstance(arg, str) else arg.get("coll") if isinstance(arg, dict) else None
                if isinstance(other, str):
                    names.append(other)
            if key != "$literal":
                _collections(arg, names)


def _pipeline(collection: str, pipeline, found: set) -> None:
    if not isinstance(pipeline, list):
        return
    for stage in pipeline:
        if not isinstance(stage, dict) or len(stage) != 1:
            return
        (name, arg), = stage.items()
        add = lambda path: found.add((collection, path)) if path else None  # noqa: E731
        if name == "$match":
            _filter(arg, "", add)
        elif name == "$sort" and isinstance(arg, dict):
            for key in arg:
                add(key)
        elif name == "$unwind":
            _reference(arg.get("path") if isinstance(arg, dict) else arg, add)
        elif name == "$lookup" and isinstance(arg, dict):
            _reference("$" + arg["localField"] if isinstance(arg.get("localField"), str) else None, add)
            foreign = arg.get("from")
            if isinstance(foreign, str):
                if isinstance(arg.get("foreignField"), str):
                    found.add((foreign, arg["foreignField"]))
                _pipeline(foreign, arg.get("pipeline"), found)
            _expression(arg.get("let"), add)
        elif name == "$unionWith":
            other = arg if isinstance(arg, str) else arg.get("coll") if isinstance(arg, dict) else None
            if isinstance(other, str) and isinstance(arg, dict):
                _pipeline(other, arg.get("pipeline"), found)
        elif name == "$facet" and isinstance(arg, dict):
            for sub in arg.values():
                _pipeline(collection, sub, found)
        elif name == "$project" and isinstance(arg, dict):
            for key, value in arg.items():
                if value is True or (type(value) in (int, float) and value):
                    add(key)
                elif not isinstance(value, (bool, int, float)):
                    _expression(value, add)
        elif name not in ("$limit", "$skip", "$unset", "$sample", "$out", "$merge"):
            _expression(arg, add)
        if name in _RESHAPING:
            return


def _reference(value, add) -> None:
    """A `"$a.b"` field reference (or `"$$ROOT.a.b"`) names `a.b`."""
    if not isinstance(value, str) or not value.startswith("$"):
        return
    if value.startswith("$$"):
        head, _, rest = value[2:].partition(".")
        if head in ("ROOT", "CURRENT") and rest:
            add(rest)
        return
    add(value[1:])


def _expression(value, add) -> None:
    t = type(value)
    if t is str:
        _reference(value, add)
    elif t is list:
        for element in value:
            _expression(element, add)
    elif t is dict:
        for key, element in value.items():
            if key == "$literal":
                continue
            _expression(element, add)


def _filter(query, prefix: str, add) -> None:
    """Keys of a query filter, as paths under `prefix` (the array of an enclosing `$elemMatch`)."""
    if not isinstance(query, dict):
        return
    for key, value in query.items():
        if key in _LOGICAL and isinstance(value, list):
            for sub in value:
                _filter(sub, prefix, add)
        elif key == "$expr":
            _expression(value, add)
        elif not key.startswith("$"):
            path = f"{prefix}.{key}" if prefix else key
            add(path)
            if isinstance(value, dict):
                _operators(value, path, add)


def _operators(spec: dict, path: str, add) -> None:
    for op, arg in spec.items():
        if op == "$elemMatch" and isinstance(arg, dict):
            if arg and all(k.startswith("$") for k in arg) and not set(arg) & {*_LOGICAL, "$expr"}:
                _operators(arg, path, add)
            else:
                _filter(arg, path, add)
        elif op == "$not" and isinstance(arg, dict):
            _operators(arg, path, add)


__all__ = ["read_paths", "named_collections"]
