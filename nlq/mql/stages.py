"""The core aggregation stages, each a compiler `compile(spec, ctx) -> fn(stream) -> stream`.

Semantics follow the manual's stage pages
(https://www.mongodb.com/docs/manual/reference/operator/aggregation-pipeline/).
Streaming stages are generators; `$group`, `$sort` and `$facet` buffer their
input (MongoDB's blocking stages). Documents are shared, never deep-copied: a
stage that changes a document builds a new dict along the changed path only.
"""

from __future__ import annotations

from itertools import islice
from typing import Callable

from nlq.errors import ExecutionError, ForbiddenOperatorError, UnknownOperatorError, UnsupportedOperatorError
from nlq.mql import registry
from nlq.mql.expressions import compile_expression
from nlq.mql.match import compile_filter, equality_keys, path_values
from nlq.mql.registry import ACCUMULATOR, STAGE, implements
from nlq.mql.values import MISSING, Int64, bson_type, group_key, is_number, number_value, sort_key

# ---------------------------------------------------------------------------
# Paths in documents (no array traversal: `$unwind`, `$lookup as`, `$count`...)


def split_path(path: str, what: str) -> tuple[str, ...]:
    """`a.b` -> ('a', 'b'), rejecting empty components and `$`-prefixed names."""
    if type(path) is not str or not path:
        raise ExecutionError(f"{what} must be a non-empty string")
    parts = tuple(path.split("."))
    for part in parts:
        if not part:
            raise ExecutionError(f"{what} '{path}' has an empty field name")
        if part.startswith("$"):
            raise ExecutionError(f"{what} '{path}': field names may not start with '$'")
    return parts


def get_nested(doc, parts: tuple[str, ...]):
    """The value at a dotted path through embedded documents (MISSING through anything else)."""
    value = doc
    for part in parts:
        if type(value) is not dict:
            return MISSING
        value = value.get(part, MISSING)
        if value is MISSING:
            return MISSING
    return value


def set_nested(doc: dict, parts: tuple[str, ...], value) -> dict:
    """A new document with `value` at the dotted path (copies only the dicts along the path;
    a non-document on the way is replaced by a new embedded document)."""
    out = dict(doc)
    if len(parts) == 1:
        if value is MISSING:
            out.pop(parts[0], None)
        else:
            out[parts[0]] = value
        return out
    inner = doc.get(parts[0], MISSING)
    out[parts[0]] = set_nested(inner if type(inner) is dict else {}, parts[1:], value)
    return out


def _checked(docs, check):
    for doc in docs:
        check()
        yield doc


def _materialize(stream, check) -> list:
    out = []
    append = out.append
    for doc in stream:
        check()
        append(doc)
    return out


def _non_negative_int(value, stage: str, *, positive: bool = False) -> int:
    if not is_number(value) or isinstance(value, bool):
        raise ExecutionError(f"the {stage} value must be a number, got {bson_type(value)}")
    n = number_value(value)
    if n != n or n in (float("inf"), float("-inf")) or n != int(n):
        raise ExecutionError(f"the {stage} value cannot be converted to an integer: {value}")
    n = int(n)
    if n >= 2**63:
        raise ExecutionError(f"the {stage} value cannot be represented as a 64-bit integer: {value}")
    if n < 0 or (positive and n == 0):
        raise ExecutionError(f"the {stage} value must be {'positive' if positive else 'non-negative'}: {value}")
    return n


# ---------------------------------------------------------------------------
# $match  (https://www.mongodb.com/docs/manual/reference/operator/aggregation/match/)


@implements(STAGE, "$match")
def compile_match(spec, ctx):
    if type(spec) is not dict:
        raise ExecutionError("the match filter must be an expression in an object")
    predicate = compile_filter(spec, ctx.variables)
    check = ctx.check

    def match(stream):
        for doc in stream:
            check()
            if predicate(doc):
                yield doc
    return match


# ---------------------------------------------------------------------------
# Field trees of $project / $addFields / $unset


class Marker:
    """A named sentinel: a projection leaf that is not an expression (INCLUDE, EXCLUDE),
    a `$redact` verdict (`$$KEEP` ...)."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return self.name


INCLUDE, EXCLUDE = Marker("INCLUDE"), Marker("EXCLUDE")


class _Computed:
    """A computed field: the index of its value among the stage's expressions."""

    __slots__ = ("index",)

    def __init__(self, index: int):
        self.index = index


class _FieldTree:
    """Paths of a projection-like spec as a tree: name -> INCLUDE | EXCLUDE | _Computed | subtree."""

    def __init__(self, stage: str):
        self.stage = stage
        self.root: dict = {}
        self.expressions: list[Callable] = []
        self.includes = self.excludes = 0
        self.excludes_id = False

    def add(self, parts: tuple[str, ...], leaf) -> None:
        node = self.root
        for i, part in enumerate(parts[:-1]):
            child = node.get(part)
            if child is None:
                child = node[part] = {}
            elif type(child) is not dict:
                raise ExecutionError(f"Invalid {self.stage} :: caused by :: Path collision at "
                                     f"{'.'.join(parts)} remaining portion {'.'.join(parts[i + 1:])}")
            node = child
        last = parts[-1]
        if last in node:
            raise ExecutionError(f"Invalid {self.stage} :: caused by :: Path collision at {'.'.join(parts)}")
        node[last] = leaf

    def computed(self, spec) -> _Computed:
        self.expressions.append(compile_expression(spec))
        return _Computed(len(self.expressions) - 1)


def _field_parts(key, stage: str, prefix: tuple[str, ...]) -> tuple[str, ...]:
    if type(key) is not str or not key:
        raise ExecutionError(f"Invalid {stage} :: caused by :: field names must be non-empty strings")
    if key.startswith("$"):
        raise ExecutionError(f"Invalid {stage} :: caused by :: FieldPath field names may not start with '$'. "
                             f"Consider using $getField or $setField.")
    parts = tuple(key.split("."))
    if any(not p for p in parts):
        raise ExecutionError(f"Invalid {stage} :: caused by :: FieldPath field names may not be empty strings.")
    return prefix + parts


def _is_operator(spec) -> bool:
    return type(spec) is dict and len(spec) >= 1 and next(iter(spec)).startswith("$")


def _build_projection(spec: dict, tree: _FieldTree, prefix: tuple[str, ...] = ()) -> None:
    for key, value in spec.items():
        parts = _field_parts(key, "$project", prefix)
        t = type(value)
        if t is bool or (is_number(value) and t is not dict):
            if number_value(value):
                tree.includes += 1
                tree.add(parts, INCLUDE)
            elif parts == ("_id",):
                tree.excludes_id = True
                tree.add(parts, EXCLUDE)
            else:
                tree.excludes += 1
                tree.add(parts, EXCLUDE)
        elif t is dict and not _is_operator(value):
            if not value:
                raise ExecutionError("Invalid $project :: caused by :: An empty sub-projection is not a valid "
                                     f"value. Found empty object at path {'.'.join(parts)}")
            _build_projection(value, tree, parts)
        else:
            tree.includes += 1
            tree.add(parts, tree.computed(value))


def _has_computed(tree: dict) -> bool:
    for node in tree.values():
        if type(node) is _Computed or (type(node) is dict and _has_computed(node)):
            return True
    return False


def _assign(out: dict, key: str, value) -> None:
    """Set a computed field of `out`; a value that is missing removes the field."""
    if value is MISSING:
        out.pop(key, None)
    else:
        out[key] = value


def _project_doc(tree: dict, doc: dict, values: list) -> dict:
    """Inclusion projection of one (embedded) document: included fields in document order,
    then computed fields in spec order."""
    out = {}
    for key, value in doc.items():
        node = tree.get(key)
        if node is INCLUDE:
            out[key] = value
        elif type(node) is dict:
            projected = _project_value(node, value, values)
            if projected is not MISSING:
                out[key] = projected
    for key, node in tree.items():
        if type(node) is _Computed:
            _assign(out, key, values[node.index])
        elif type(node) is dict and key not in doc and _has_computed(node):
            out[key] = _project_doc(node, {}, values)
    return out


def _project_value(tree: dict, value, values: list):
    t = type(value)
    if t is dict:
        return _project_doc(tree, value, values)
    if t is list:
        computed = _has_computed(tree)
        out = []
        for element in value:
            te = type(element)
            if te is dict or te is list:
                out.append(_project_value(tree, element, values))
            elif computed:
                out.append(_project_doc(tree, {}, values))
        return out
    if _has_computed(tree):
        return _project_doc(tree, {}, values)
    return MISSING


def _exclude_doc(tree: dict, doc: dict) -> dict:
    out = {}
    for key, value in doc.items():
        node = tree.get(key)
        if node is None:
            out[key] = value
        elif type(node) is dict:
            out[key] = _exclude_value(node, value)
    return out


def _exclude_value(tree: dict, value):
    t = type(value)
    if t is dict:
        return _exclude_doc(tree, value)
    if t is list:
        return [_exclude_value(tree, element) for element in value]
    return value


def _exclusion(tree: dict, ctx):
    check = ctx.check

    def exclude(stream):
        for doc in stream:
            check()
            yield _exclude_doc(tree, doc)
    return exclude


@implements(STAGE, "$project")
def compile_project(spec, ctx):
    """Inclusion/exclusion/computed projection
    (https://www.mongodb.com/docs/manual/reference/operator/aggregation/project/)."""
    if type(spec) is not dict:
        raise ExecutionError("$project specification must be an object")
    if not spec:
        raise ExecutionError("Invalid $project :: caused by :: projection specification must have at least "
                             "one field")
    tree = _FieldTree("$project")
    _build_projection(spec, tree)
    if tree.includes and tree.excludes:
        raise ExecutionError("Invalid $project :: caused by :: Cannot do exclusion on a field in inclusion "
                             "projection (only _id may be excluded)")
    if not tree.includes:
        return _exclusion(tree.root, ctx)
    root = tree.root
    if "_id" not in root:
        root = {"_id": INCLUDE, **root}
    elif root["_id"] is EXCLUDE:
        root = {k: v for k, v in root.items() if k != "_id"}
    expressions = tree.expressions
    id_computed = root.get("_id") is not INCLUDE
    check = ctx.check
    vars_of = ctx.vars

    def project(stream):
        for doc in stream:
            check()
            if expressions:
                vars = vars_of(doc)
                values = [fn(vars) for fn in expressions]
            else:
                values = ()
            out = _project_doc(root, doc, values)
            if id_computed and "_id" in out:
                out = {"_id": out["_id"], **out}  # _id leads, as in MongoDB's output
            yield out
    return project


def _build_set(spec: dict, tree: _FieldTree, stage: str, prefix: tuple[str, ...] = ()) -> None:
    for key, value in spec.items():
        parts = _field_parts(key, stage, prefix)
        if type(value) is dict and value and not _is_operator(value):
            # An embedded document spec merges into the existing embedded document.
            _build_set(value, tree, stage, parts)
        else:
            tree.add(parts, tree.computed(value))


def _set_doc(tree: dict, doc: dict, values: list) -> dict:
    out = dict(doc)
    for key, node in tree.items():
        if type(node) is _Computed:
            _assign(out, key, values[node.index])
        else:
            out[key] = _set_value(node, doc.get(key, MISSING), values)
    return out


def _set_value(tree: dict, value, values: list):
    t = type(value)
    if t is dict:
        return _set_doc(tree, value, values)
    if t is list:
        return [_set_value(tree, element, values) for element in value]
    return _set_doc(tree, {}, values)


@implements(STAGE, "$addFields", "$set")
def compile_add_fields(spec, ctx):
    """Add or replace fields; dotted paths set the field in every element of an array
    (https://www.mongodb.com/docs/manual/reference/operator/aggregation/addFields/)."""
    if type(spec) is not dict:
        raise ExecutionError("$addFields specification must be an object")
    tree = _FieldTree("$addFields")
    _build_set(spec, tree, "$addFields")
    root, expressions = tree.root, tree.expressions
    check = ctx.check
    vars_of = ctx.vars

    def add_fields(stream):
        if not expressions:
            yield from _checked(stream, check)
            return
        for doc in stream:
            check()
            vars = vars_of(doc)
            # Every expression sees the input document, not the fields set beside it.
            yield _set_doc(root, doc, [fn(vars) for fn in expressions])
    return add_fields


@implements(STAGE, "$unset")
def compile_unset(spec, ctx):
    """Remove fields: `$unset: "a"` or `["a", "b.c"]` (an exclusion projection)."""
    paths = [spec] if type(spec) is str else spec
    if type(paths) is not list or not paths:
        raise ExecutionError("$unset specification must be a string or a non-empty array of strings")
    tree = _FieldTree("$unset")
    for path in paths:
        if type(path) is not str:
            raise ExecutionError("$unset specification must be a string or an array containing only strings")
        tree.add(_field_parts(path, "$unset", ()), EXCLUDE)
    return _exclusion(tree.root, ctx)


# ---------------------------------------------------------------------------
# $group  (https://www.mongodb.com/docs/manual/reference/operator/aggregation/group/)


def compile_accumulator_spec(field: str, spec):
    """The accumulator factory of one `$group` output field `{<$acc>: <arg>}`."""
    if type(spec) is not dict or len(spec) != 1 or not next(iter(spec)).startswith("$"):
        raise ExecutionError(f"the group aggregate field '{field}' must be defined as an expression "
                             f"inside an object")
    name, arg = next(iter(spec.items()))
    op = registry.get(name)
    if op is None or ACCUMULATOR not in op.kinds:
        raise UnknownOperatorError(f"unknown group operator '{name}'{registry.suggestion(name, ACCUMULATOR)}")
    if op.forbidden:
        raise ForbiddenOperatorError(f"{name} is forbidden (SPEC §7)")
    try:
        from nlq.mql.accumulators import compile_accumulator
    except ModuleNotFoundError as exc:
        if exc.name != "nlq.mql.accumulators":
            raise
        raise UnsupportedOperatorError(f"the embedded engine does not support the accumulator {name}") from None
    return compile_accumulator(name, arg)


@implements(STAGE, "$group")
def compile_group(spec, ctx):
    if type(spec) is not dict:
        raise ExecutionError("a group's fields must be specified in an object")
    if "_id" not in spec:
        raise ExecutionError("a group specification must include an _id")
    key_fn = compile_expression(spec["_id"])
    fields = []
    for field, acc in spec.items():
        if field == "_id":
            continue
        if "." in field:
            raise ExecutionError(f"the group aggregate field name '{field}' cannot be used because $group's "
                                 f"field names cannot contain '.'")
        if field.startswith("$"):
            raise ExecutionError(f"the group aggregate field name '{field}' cannot be an operator name")
        fields.append((field, compile_accumulator_spec(field, acc)))
    names = [f for f, _ in fields]
    factories = [factory for _, factory in fields]
    check = ctx.check
    vars_of = ctx.vars

    def group(stream):
        groups: dict = {}
        for doc in stream:
            check()
            vars = vars_of(doc)
            key_value = key_fn(vars)
            # Strings only ever equal strings: a cheaper key than group_key's tuple.
            key = key_value if type(key_value) is str else group_key(key_value)
            entry = groups.get(key)
            if entry is None:
                entry = groups[key] = (key_value, [factory() for factory in factories])
            for acc in entry[1]:
                acc.add(vars)
        for key_value, accs in groups.values():
            check()
            out = {"_id": None if key_value is MISSING else key_value}
            for name, acc in zip(names, accs):
                result = acc.result()
                out[name] = None if result is MISSING else result
            yield out
    return group


# ---------------------------------------------------------------------------
# $sort  (https://www.mongodb.com/docs/manual/reference/operator/aggregation/sort/)

# "A comparison of an empty array treats the empty array as less than null or a
# missing field" (manual, Comparison/Sort Order): a key between MinKey and null.
_EMPTY_ARRAY_KEY = (0, 1)


def sort_value_key(doc, parts: tuple[str, ...], descending: bool):
    """The key a document sorts by on `parts`: over arrays, the smallest element
    (ascending) or the largest (descending); missing sorts as null."""
    if len(parts) == 1:
        value = doc.get(parts[0], MISSING) if type(doc) is dict else MISSING
        if type(value) is not list:
            return sort_key(value)
        candidates = [value]
    else:
        candidates = path_values(doc, parts)
        if len(candidates) == 1 and type(candidates[0]) is not list:
            return sort_key(candidates[0])
    keys = []
    for value in candidates:
        if type(value) is list:
            if value:
                keys.extend(sort_key(e) for e in value)
            else:
                keys.append(_EMPTY_ARRAY_KEY)
        else:
            keys.append(sort_key(value))
    return max(keys) if descending else min(keys)


def parse_sort_spec(spec, stage: str = "$sort") -> list[tuple[tuple[str, ...], bool]]:
    """[(path parts, descending)] of a `{field: 1|-1}` specification."""
    if type(spec) is not dict or not spec:
        raise ExecutionError(f"the {stage} key specification must be a non-empty object")
    keys = []
    for field, direction in spec.items():
        if type(direction) is dict:
            if "$meta" in direction:
                raise UnsupportedOperatorError(f"the embedded engine does not support sorting by "
                                               f"{{$meta: {direction['$meta']!r}}} (text/search score)")
            raise ExecutionError(f"invalid {stage} key ordering for '{field}': {direction}")
        if not is_number(direction) or isinstance(direction, bool) or number_value(direction) not in (1, -1):
            raise ExecutionError(f"{stage} key ordering must be 1 (for ascending) or -1 (for descending)")
        keys.append((_field_parts(field, stage, ()), number_value(direction) == -1))
    return keys


def sort_documents(docs: list, keys, check=None) -> list:
    """Stable multi-key sort (in place) by MongoDB order; returns docs."""
    for parts, descending in reversed(keys):
        if check is not None:
            check()
        decorated = [(sort_value_key(doc, parts, descending), i) for i, doc in enumerate(docs)]
        decorated.sort(key=lambda pair: pair[0], reverse=descending)
        docs[:] = [docs[i] for _, i in decorated]
    return docs


@implements(STAGE, "$sort")
def compile_sort(spec, ctx, *, limit: int | None = None):
    """`limit` (a `$limit` right after the `$sort`, as MongoDB coalesces them) bounds
    the buffer: only the best `limit` documents are kept while reading."""
    keys = parse_sort_spec(spec)
    check = ctx.check
    window = None if limit is None else max(2 * limit, 1024)

    def sort(stream):
        if window is None:
            docs = _materialize(stream, check)
        else:
            docs = []
            for doc in stream:
                check()
                docs.append(doc)
                if len(docs) > window:
                    # Stable: kept documents precede later arrivals with equal keys.
                    del sort_documents(docs, keys, check)[limit:]
        yield from sort_documents(docs, keys, check)
    return sort


# ---------------------------------------------------------------------------
# $skip / $limit / $count


@implements(STAGE, "$skip")
def compile_skip(spec, ctx):
    n = _non_negative_int(spec, "$skip")
    check = ctx.check

    def skip(stream):
        return _checked(islice(stream, n, None), check)
    return skip


@implements(STAGE, "$limit")
def compile_limit(spec, ctx):
    n = _non_negative_int(spec, "$limit", positive=True)
    check = ctx.check

    def limit(stream):
        return _checked(islice(stream, n), check)
    return limit


@implements(STAGE, "$count")
def compile_count(spec, ctx):
    """`{$count: "n"}`: one document `{n: <count>}`, none for an empty input
    (https://www.mongodb.com/docs/manual/reference/operator/aggregation/count/)."""
    if type(spec) is not str or not spec:
        raise ExecutionError("the count field must be a non-empty string")
    if spec.startswith("$"):
        raise ExecutionError("the count field cannot be a $-prefixed path")
    if "." in spec:
        raise ExecutionError("the count field cannot contain '.'")
    check = ctx.check

    def count(stream):
        n = 0
        for _ in stream:
            check()
            n += 1
        if n:
            yield {spec: n}
    return count


# ---------------------------------------------------------------------------
# $unwind  (https://www.mongodb.com/docs/manual/reference/operator/aggregation/unwind/)


@implements(STAGE, "$unwind")
def compile_unwind(spec, ctx):
    if type(spec) is str:
        spec = {"path": spec}
    if type(spec) is not dict:
        raise ExecutionError("expected either a string or an object as specification for $unwind stage")
    for key in spec:
        if key not in ("path", "includeArrayIndex", "preserveNullAndEmptyArrays"):
            raise ExecutionError(f"unrecognized option to $unwind stage: {key}")
    path = spec.get("path")
    if type(path) is not str:
        raise ExecutionError("no path specified to $unwind stage")
    if not path.startswith("$") or len(path) == 1:
        raise ExecutionError("path option to $unwind stage should be prefixed with a '$'")
    parts = split_path(path[1:], "$unwind path")
    index_field = spec.get("includeArrayIndex")
    index_parts = None
    if index_field is not None:
        if type(index_field) is not str or not index_field:
            raise ExecutionError("includeArrayIndex option to $unwind stage should be a non-empty string")
        if index_field.startswith("$"):
            raise ExecutionError("includeArrayIndex option to $unwind stage should not be prefixed with a '$'")
        index_parts = split_path(index_field, "includeArrayIndex")
    preserve = spec.get("preserveNullAndEmptyArrays", False)
    if type(preserve) is not bool:
        raise ExecutionError("preserveNullAndEmptyArrays option to $unwind stage must be a boolean")
    check = ctx.check
    single = parts[0] if len(parts) == 1 else None

    def emit(doc, value, index):
        if single is not None and index_parts is None:
            out = dict(doc)
            out[single] = value
            return out
        out = set_nested(doc, parts, value)
        if index_parts is not None:
            out = set_nested(out, index_parts, index)
        return out

    def unwind(stream):
        for doc in stream:
            check()
            value = get_nested(doc, parts)
            if type(value) is list:
                if value:
                    # (each emitted document is checked by the consuming stage)
                    for i, element in enumerate(value):
                        yield emit(doc, element, Int64(i))
                elif preserve:
                    # An empty array is dropped from the preserved document.
                    yield emit(doc, MISSING, None)
            elif value is None or value is MISSING:
                if preserve:
                    yield doc if index_parts is None else set_nested(doc, index_parts, None)
            else:
                # A non-array, non-null operand is treated as a single-element array.
                yield doc if index_parts is None else set_nested(doc, index_parts, None)
    return unwind


# ---------------------------------------------------------------------------
# $replaceRoot / $replaceWith


def _replace(expr_spec, ctx, name: str):
    fn = compile_expression(expr_spec)
    check = ctx.check
    vars_of = ctx.vars

    def replace(stream):
        for doc in stream:
            check()
            value = fn(vars_of(doc))
            if type(value) is not dict:
                shown = "MISSING" if value is MISSING else repr(value)
                raise ExecutionError(f"'{name}' expression must evaluate to an object, but resulting value was: "
                                     f"{shown}. Type of resulting value: '{bson_type(value)}'.", code=40228)
            yield value
    return replace


@implements(STAGE, "$replaceRoot")
def compile_replace_root(spec, ctx):
    if type(spec) is not dict or "newRoot" not in spec:
        raise ExecutionError("no newRoot specified for the $replaceRoot stage")
    for key in spec:
        if key != "newRoot":
            raise ExecutionError(f"unrecognized option to $replaceRoot stage: {key}")
    return _replace(spec["newRoot"], ctx, "newRoot")


@implements(STAGE, "$replaceWith")
def compile_replace_with(spec, ctx):
    return _replace(spec, ctx, "replacement document")


# ---------------------------------------------------------------------------
# $sortByCount  (= $group {_id: expr, count: {$sum: 1}} + $sort {count: -1})


@implements(STAGE, "$sortByCount")
def compile_sort_by_count(spec, ctx):
    if not ((type(spec) is str and spec.startswith("$") and not spec.startswith("$$")) or _is_operator(spec)):
        raise ExecutionError("the sortByCount field must be defined as a $-prefixed path or an expression object")
    key_fn = compile_expression(spec)
    check = ctx.check
    vars_of = ctx.vars

    def sort_by_count(stream):
        groups: dict = {}
        for doc in stream:
            check()
            value = key_fn(vars_of(doc))
            key = value if type(value) is str else group_key(value)
            entry = groups.get(key)
            if entry is None:
                groups[key] = [value, 1]
            else:
                entry[1] += 1
        rows = [{"_id": None if v is MISSING else v, "count": n} for v, n in groups.values()]
        rows.sort(key=lambda row: row["count"], reverse=True)
        yield from rows
    return sort_by_count


# ---------------------------------------------------------------------------
# $facet  (https://www.mongodb.com/docs/manual/reference/operator/aggregation/facet/)

_NOT_IN_FACET = frozenset("$collStats $facet $geoNear $indexStats $out $merge $planCacheStats $search "
                          "$searchMeta $vectorSearch $changeStream".split())


@implements(STAGE, "$facet")
def compile_facet(spec, ctx):
    if type(spec) is not dict or not spec:
        raise ExecutionError("the $facet specification must be a non-empty object")
    facets = []
    for name, pipeline in spec.items():
        if type(name) is not str or not name or name.startswith("$") or "." in name:
            raise ExecutionError(f"$facet output field names may not be empty, start with '$' or contain '.': "
                                 f"{name!r}")
        if type(pipeline) is not list:
            raise ExecutionError(f"arguments to $facet must be arrays, {name} is type {bson_type(pipeline)}")
        for stage in pipeline:
            if type(stage) is dict and len(stage) == 1 and next(iter(stage)) in _NOT_IN_FACET:
                raise ExecutionError(f"{next(iter(stage))} is not allowed to be used within a $facet stage")
        facets.append((name, ctx.compile_pipeline(pipeline)))
    check = ctx.check

    def facet(stream):
        docs = _materialize(stream, check)
        yield {name: _materialize(run(docs), check) for name, run in facets}
    return facet


# ---------------------------------------------------------------------------
# $lookup  (https://www.mongodb.com/docs/manual/reference/operator/aggregation/lookup/)


def _local_values(doc, parts: tuple[str, ...]) -> list:
    """The values a document's localField offers to the join: embedded documents and
    arrays of them are walked (a numeric component indexes an array), a leaf array
    counts element by element, and when nothing is found the value is null
    (jstests/aggregation/sources/lookup/lookup_equijoin_semantics.js)."""
    out: list = []
    last = len(parts)

    def walk(value, i):
        if i == last:
            if type(value) is list:
                out.extend(value)
            elif value is not MISSING:
                out.append(value)
            return
        t = type(value)
        if t is dict:
            walk(value.get(parts[i], MISSING), i + 1)
        elif t is list:
            if parts[i].isdigit():
                idx = int(parts[i])
                if idx < len(value):
                    walk(value[idx], i + 1)
            else:
                for element in value:
                    if type(element) is dict:
                        walk(element, i)
    walk(doc, 0)
    return out or [None]


class _ForeignIndex:
    """Foreign documents keyed by every value an equality on foreignField matches."""

    def __init__(self, docs: list, parts: tuple[str, ...], check):
        self.docs = docs
        self.index: dict = {}
        for i, doc in enumerate(docs):
            check()
            for key in equality_keys(doc, parts):
                self.index.setdefault(key, []).append(i)

    def matching(self, values: list) -> list:
        hits: set = set()
        for value in values:
            found = self.index.get(group_key(value))
            if found:
                hits.update(found)
        return [self.docs[i] for i in sorted(hits)]


_LOOKUP_KEYS = ("from", "localField", "foreignField", "as", "let", "pipeline")


@implements(STAGE, "$lookup")
def compile_lookup(spec, ctx):
    if type(spec) is not dict:
        raise ExecutionError("the $lookup stage specification must be an object")
    for key in spec:
        if key not in _LOOKUP_KEYS:
            raise ExecutionError(f"unknown argument to $lookup: {key}")
    as_field = spec.get("as")
    if type(as_field) is not str:
        raise ExecutionError("must specify 'as' field for a $lookup")
    as_parts = split_path(as_field, "$lookup 'as'")
    source = spec.get("from", MISSING)
    pipeline = spec.get("pipeline", MISSING)
    if type(source) is dict:
        raise UnsupportedOperatorError("the embedded engine does not support $lookup from another database")
    if source is MISSING:
        starts_with_documents = (type(pipeline) is list and pipeline and type(pipeline[0]) is dict
                                 and "$documents" in pipeline[0])
        if not starts_with_documents:
            raise ExecutionError("$lookup requires 'from' unless its pipeline starts with $documents")
    elif type(source) is not str or not source:
        raise ExecutionError("$lookup 'from' must be a collection name (a string)")
    has_local, has_foreign = "localField" in spec, "foreignField" in spec
    if has_local != has_foreign:
        raise ExecutionError("$lookup requires both or neither of 'localField' and 'foreignField' to be specified")
    if not has_local and pipeline is MISSING:
        raise ExecutionError("$lookup requires either 'pipeline' or both 'localField' and 'foreignField'")
    if "let" in spec and pipeline is MISSING:
        raise ExecutionError("$lookup with 'let' must also specify a 'pipeline'")
    local_parts = foreign_parts = None
    if has_local:
        if type(spec["localField"]) is not str or type(spec["foreignField"]) is not str:
            raise ExecutionError("$lookup 'localField' and 'foreignField' must be strings")
        local_parts = split_path(spec["localField"], "$lookup 'localField'")
        foreign_parts = split_path(spec["foreignField"], "$lookup 'foreignField'")
    lets = spec.get("let", {})
    if type(lets) is not dict:
        raise ExecutionError("$lookup argument 'let' must be an object")
    let_fns = []
    for name, expr in lets.items():
        if type(name) is not str or not name or not (name[0].islower() or not name[0].isascii()) \
                or not all(c.isalnum() or c == "_" or not c.isascii() for c in name):
            raise ExecutionError(f"'{name}' starts with an invalid character for a user variable name")
        let_fns.append((name, compile_expression(expr)))
    scope: dict = {}
    sub = None
    if pipeline is not MISSING:
        if type(pipeline) is not list:
            raise ExecutionError("$lookup argument 'pipeline' must be an array")
        sub = ctx.compile_pipeline(pipeline, scope)
    check = ctx.check
    vars_of = ctx.vars

    def lookup(stream):
        foreign = ctx.catalog(source) if source is not MISSING else []
        index = None
        for doc in stream:
            check()
            if local_parts is not None:
                if index is None:
                    index = _ForeignIndex(foreign, foreign_parts, check)
                matched = index.matching(_local_values(doc, local_parts))
            else:
                matched = foreign
            if sub is not None:
                if let_fns:
                    vars = vars_of(doc)
                    for name, fn in let_fns:
                        scope[name] = fn(vars)
                joined = _materialize(sub(_checked(matched, check)), check)
            else:
                joined = list(matched)
            yield set_nested(doc, as_parts, joined)
    return lookup


__all__ = ["compile_accumulator_spec", "get_nested", "set_nested", "split_path", "sort_documents",
           "parse_sort_spec", "sort_value_key", "INCLUDE", "EXCLUDE"]
