"""find() projections as aggregation stages, the find-only operators included.

    >>> stages({}, {"comments": {"$slice": 2}})
    [{'$addFields': {'comments': {'$cond': [{'$isArray': '$comments'}, {'$slice': ['$comments', 2]}, '$comments']}}}]

A plain projection (`{a: 1, _id: 0}`, computed fields) is one `$project`. The
three operators that only find() knows are lowered with MongoDB's semantics
(manual: Projection Operators):

- `{arr: {$slice: n}}`, `{arr: {$slice: [skip, n]}}`: the first (last, when
  negative) n elements, or n elements from `skip` (from the end when negative);
  a field that is not an array is returned as is; a dotted path is followed
  through embedded documents and arrays of them. A projection whose other
  fields are all exclusions is an exclusion projection (every other field is
  kept): each slice becomes an `$addFields`, the exclusions a `$project`; in an
  inclusion projection the sliced path is included, then sliced.
- `{arr: {$elemMatch: cond}}`: an array holding only the first element that
  matches `cond` (an `$elemMatch` query condition); the field is left out when
  none does or it is not an array. The field comes after the other included
  fields, as in MongoDB.
- `{"arr.$": 1}`: the same, with the conditions that the query's filter puts on
  `arr` (or on `arr.<field>`) as the condition, read from the filter's top
  level and its `$and`s; a filter without one is an error, as it is in
  MongoDB. The manual's restrictions (manual: $ (projection), Array Field
  Limitations and Restrictions) are errors: one positional projection per
  projection, `$` only at the end of a path, never `{"arr.$": {$slice: ...}}`.
  A condition on `arr` under `$or`, `$nor` or `$not` is an error too: which
  element such a filter projects is not what the manual defines (use an
  `$elemMatch` projection, whose condition is explicit).

The first matching element is found by a `$lookup` whose pipeline starts with
`$documents`: one document `{v: [element]}` per element, matched against the
condition (`{v: {$elemMatch: cond}}`, or the filter's conditions with `arr`
renamed `v`), so the element is judged by the query matcher itself, exactly as
find() judges it; the result is kept in a temporary field named `__nlq_<n>`,
removed at the end. `$documents` may read the `$lookup`'s `let` variables
(manual: $documents, "variables in scope from $lookup expressions"; MongoDB 6.0
or later, like `$documents` itself). An $elemMatch projection takes a
top-level field (MongoDB refuses a nested one), a positional one a path
through embedded documents; mixing either with exclusions of other fields is
an error.
"""

from __future__ import annotations

from typing import Callable

from nlq.mql.values import Int64

_TEMP = "__nlq_"


def stages(filter_: dict, projection: dict, fail: Callable[[str], Exception] = ValueError) -> list[dict]:
    """The stages that apply find()'s `projection` (the query's filter is `filter_`)."""
    slices, matches, plain = {}, {}, {}
    for key, value in projection.items():
        if key == "$" or ".$." in key:
            raise fail(f"the positional projection {key!r} must end a field path: 'array.$'")
        if key.endswith(".$"):
            if not _included(value):
                raise fail(f"the positional projection {key!r} takes 1 (an inclusion), not {value!r}")
            path = key[:-2]
            if any(not last for _, last in matches.values()):
                raise fail("only one positional projection ('array.$') may appear in a projection, as MongoDB says")
            matches[path] = (_positional_condition(filter_, path, fail), False)
        elif isinstance(value, dict) and len(value) == 1 and next(iter(value)) == "$slice":
            slices[key] = _slice(key, value["$slice"], fail)
        elif isinstance(value, dict) and len(value) == 1 and next(iter(value)) == "$elemMatch":
            condition = value["$elemMatch"]
            if not isinstance(condition, dict):
                raise fail(f"$elemMatch on {key!r} takes a query document")
            if "." in key:
                raise fail(f"Cannot use $elemMatch projection on a nested field ({key!r}), as MongoDB says")
            matches[key] = ({"v": {"$elemMatch": condition}}, True)
        else:
            plain[key] = value
    if not slices and not matches:
        return [{"$project": projection}]
    inclusion = bool(matches) or any(k != "_id" and not _excluded(v) for k, v in plain.items())
    if not inclusion:  # exclusions and slices only: every other field stays
        out: list[dict] = list(slices.values())
        if plain:
            out.append({"$project": plain})
        return out
    excluded = [k for k, v in plain.items() if k != "_id" and _excluded(v)]
    if excluded:
        raise fail(f"the projection mixes exclusions ({', '.join(excluded)}) with inclusions or find() "
                   "projection operators; MongoDB refuses that mix too")
    out = []
    temps = {}
    for n, (path, (condition, _)) in enumerate(matches.items()):
        temps[path] = f"{_TEMP}{n}"
        out.append(_first_match(path, condition, temps[path]))
    project = dict(plain)
    project.update((path, 1) for path in slices)  # kept where they are, then sliced
    for path, (_, last) in matches.items():
        if not last:  # a positional field keeps its place among the included fields
            project[path] = 1
        project[temps[path]] = 1
    out.append({"$project": project})
    out += slices.values()
    if not temps:
        return out
    out.append({"$addFields": {path: {"$cond": [{"$gt": [{"$size": "$" + temp}, 0]},
                                                {"$arrayElemAt": [f"${temp}.v", 0]}, "$$REMOVE"]}
                               for path, temp in temps.items()}})
    out.append({"$project": {temp: 0 for temp in temps.values()}})
    return out


def _included(value) -> bool:
    return value is True or (type(value) in (int, float) and value != 0)


def _excluded(value) -> bool:
    return value is False or (type(value) in (int, float) and value == 0)


def _slice(path: str, spec, fail) -> dict:
    """`{$addFields: {top: expression}}` slicing the array at `path`; a dotted path is followed
    through embedded documents and through arrays of them (every element's array is sliced)."""
    if _is_int(spec):
        args = [int(spec)]
    elif isinstance(spec, list) and len(spec) == 2 and all(_is_int(x) for x in spec):
        if spec[1] <= 0:
            raise fail(f"$slice on {path!r}: the number of elements to return must be positive, not {spec[1]}")
        args = [int(spec[0]), int(spec[1])]
    else:
        raise fail(f"$slice on {path!r} takes a number or [skip, limit], not {spec!r}")
    top, *rest = path.split(".")
    return {"$addFields": {top: _sliced("$" + top, rest, args, 0)}}


def _sliced(value: str, rest: list[str], args: list[int], depth: int):
    """The expression of `value` with the array at its sub-path `rest` sliced by `args`."""
    if not rest:
        return {"$cond": [{"$isArray": value}, {"$slice": [value, *args]}, value]}
    element = f"$$e{depth}"
    return {"$cond": [{"$isArray": value},
                      {"$map": {"input": value, "as": f"e{depth}", "in": _in_document(element, rest, args, depth)}},
                      _in_document(value, rest, args, depth)]}


def _in_document(value: str, rest: list[str], args: list[int], depth: int):
    head, *more = rest
    return {"$cond": [{"$eq": [{"$type": value}, "object"]},
                      {"$mergeObjects": [value, {head: _sliced(f"{value}.{head}", more, args, depth + 1)}]},
                      value]}


def _is_int(value) -> bool:
    return type(value) in (int, Int64) or (type(value) is float and value.is_integer())


def _positional_condition(filter_: dict, path: str, fail) -> dict:
    """The filter's conditions on `path` (or `path.<field>`), with `path` renamed `v`."""
    condition = {}
    parts = _conjuncts(filter_)
    for part in parts:
        for key, value in part.items():
            if key in ("$or", "$nor") and _mentions(value, path):
                under = key
            elif (key == path or key.startswith(path + ".")) and isinstance(value, dict) and "$not" in value:
                under = "$not"
            else:
                continue
            raise fail(f"the positional projection '{path}.$' reads the filter's conditions on {path!r} that hold "
                       f"together ($and); one under {under} leaves the projected element undefined: use "
                       f"{{{path!r}: {{$elemMatch: ...}}}} instead")
    for part in parts:
        for key, value in part.items():
            if key == path or key.startswith(path + "."):
                renamed = "v" + key[len(path):]
                if renamed in condition:
                    condition.setdefault("$and", []).append({renamed: value})
                else:
                    condition[renamed] = value
    if not condition:
        raise fail(f"the positional projection '{path}.$' needs a condition on {path!r} in the filter "
                   "(MongoDB: the positional operator finds no matching element otherwise)")
    return condition


def _conjuncts(filter_: dict) -> list[dict]:
    """The filter and the documents its `$and`s hold (through nested `$and`s)."""
    parts = [filter_]
    for part in parts:
        parts += [c for c in part.get("$and", []) if isinstance(c, dict)]
    return parts


def _mentions(value, path: str) -> bool:
    """Whether a query value (a `$or`/`$nor` list, or a document in one) puts a condition on `path`."""
    if isinstance(value, list):
        return any(_mentions(v, path) for v in value)
    return isinstance(value, dict) and any(
        key == path or key.startswith(path + ".") or (key.startswith("$") and _mentions(v, path))
        for key, v in value.items())


def _first_match(path: str, condition: dict, into: str) -> dict:
    """`$lookup` into `into`: `[{v: [first element of path matching condition]}]`, or `[]`."""
    elements = {"$cond": [{"$isArray": "$$array"}, "$$array", []]}
    return {"$lookup": {"let": {"array": "$" + path}, "as": into, "pipeline": [
        {"$documents": {"$map": {"input": elements, "in": {"v": ["$$this"]}}}},
        {"$match": condition}, {"$limit": 1}, {"$project": {"_id": 0, "v": 1}}]}}


__all__ = ["stages"]
