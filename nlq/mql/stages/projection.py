"""Stages that reshape each document: $project, $addFields/$set, $unset, $unwind,
$replaceRoot and $replaceWith (field trees built once, applied per document)."""

from __future__ import annotations

from typing import Callable

from bson.int64 import Int64

from nlq.errors import ExecutionError
from nlq.mql.expressions import compile_expression
from nlq.mql.registry import STAGE, implements
from nlq.mql.stages.base import Marker, checked, field_parts, get_nested, is_operator, set_nested, split_path
from nlq.mql.values import MISSING, bson_type, is_number, number_value

# ---------------------------------------------------------------------------
# Field trees of $project / $addFields / $unset


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


def _build_projection(spec: dict, tree: _FieldTree, prefix: tuple[str, ...] = ()) -> None:
    for key, value in spec.items():
        parts = field_parts(key, "$project", prefix)
        t = type(value)
        if t is bool or (is_number(value) and t is not dict):
            if number_value(value):
                tree.includes += 1
                tree.add(parts, INCLUDE)
            elif parts == ("_id",):
                tree.add(parts, EXCLUDE)
            else:
                tree.excludes += 1
                tree.add(parts, EXCLUDE)
        elif t is dict and not is_operator(value):
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
    vars_of = ctx.binder()

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
        parts = field_parts(key, stage, prefix)
        if type(value) is dict and value and not is_operator(value):
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
    vars_of = ctx.binder()

    def add_fields(stream):
        if not expressions:
            yield from checked(stream, check)
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
        tree.add(field_parts(path, "$unset", ()), EXCLUDE)
    return _exclusion(tree.root, ctx)


# ---------------------------------------------------------------------------
# $unwind  (https://www.mongodb.com/docs/manual/reference/operator/aggregation/unwind/)


@implements(STAGE, "$unwind")
def compile_unwind(spec, ctx, *, share: bool = False):
    """`share` (the next stages keep no document: see `engine.compile_pipeline`): the documents
    emitted for one input document are one copy, its embedded documents along the path copied
    once too, with the path rebound to each element in turn."""
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

    shared = share and index_parts is None
    last = parts[-1]

    def unwind(stream):
        for doc in stream:
            check()
            value = get_nested(doc, parts)
            if type(value) is list:
                if value:
                    # (each emitted document is checked by the consuming stage)
                    if shared:
                        out = set_nested(doc, parts, value[0])
                        inner = out if single is not None else get_nested(out, parts[:-1])
                        for element in value:
                            inner[last] = element
                            yield out
                        continue
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
    vars_of = ctx.binder()

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
