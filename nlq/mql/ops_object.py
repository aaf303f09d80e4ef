"""Object expression operators: $mergeObjects, $getField, $setField, $unsetField,
and the data-size operators $bsonSize and $binarySize.

Manual: https://www.mongodb.com/docs/manual/reference/operator/aggregation/#object-expression-operators
Input documents are never modified: $setField/$unsetField return new objects.
"""

from __future__ import annotations

import bson
from bson.binary import Binary

from nlq.errors import ExecutionError
from nlq.mql.expressions import compile_args, compile_named, unary_operator
from nlq.mql.registry import EXPRESSION, implements
from nlq.mql.values import MISSING, bson_type


@implements(EXPRESSION, "$mergeObjects")
def _merge_objects(args):
    fns = compile_args(args, name="$mergeObjects")

    def evaluate(vars):
        out = {}
        for fn in fns:
            v = fn(vars)
            if v is None or v is MISSING:
                continue
            if type(v) is not dict:
                raise ExecutionError(f"$mergeObjects requires object inputs, but input {v!r} is of type "
                                     f"{bson_type(v)}")
            out.update(v)
        return out
    return evaluate


def _constant_field(op: str, spec) -> str:
    """`field` of $setField/$unsetField: a string constant, possibly in $literal (required for a '$' prefix)."""
    literal = type(spec) is dict and len(spec) == 1 and "$literal" in spec
    value = spec["$literal"] if literal else spec
    if type(value) is not str:
        raise ExecutionError(f"{op} requires 'field' to evaluate to a constant of type String")
    if not literal and value.startswith("$"):
        raise ExecutionError(f"{op}: a field path reference which is not allowed in this context. "
                             f"Did you mean {{$literal: '{value}'}}?")
    return value


@implements(EXPRESSION, "$getField")
def _get_field(args):
    if not (type(args) is dict and "field" in args and set(args) <= {"field", "input"}):
        args = {"field": args}  # shorthand: {$getField: "name"} reads $$CURRENT
    named = compile_named(args, name="$getField", required=("field",), optional=("input",))
    field_fn = named["field"]
    input_fn = named.get("input") or (lambda vars: vars["CURRENT"])

    def evaluate(vars):
        field = field_fn(vars)
        if type(field) is not str:
            raise ExecutionError(f"$getField requires 'field' to evaluate to type String, but got {bson_type(field)}")
        obj = input_fn(vars)
        if obj is None or obj is MISSING:
            return None
        if type(obj) is not dict:
            raise ExecutionError(f"$getField requires 'input' to evaluate to type Object, but got {bson_type(obj)}")
        return obj.get(field, MISSING)
    return evaluate


@implements(EXPRESSION, "$setField")
def _set_field(args):
    named = compile_named(args, name="$setField", required=("field", "input", "value"))
    field = _constant_field("$setField", args["field"])
    input_fn, value_fn = named["input"], named["value"]

    def evaluate(vars):
        obj = input_fn(vars)
        if obj is None or obj is MISSING:
            return None
        if type(obj) is not dict:
            raise ExecutionError(f"$setField requires 'input' to evaluate to type Object, but got {bson_type(obj)}")
        value = value_fn(vars)
        out = dict(obj)
        if value is MISSING:
            out.pop(field, None)
        else:
            out[field] = value
        return out
    return evaluate


@implements(EXPRESSION, "$unsetField")
def _unset_field(args):
    named = compile_named(args, name="$unsetField", required=("field", "input"))
    field = _constant_field("$unsetField", args["field"])
    input_fn = named["input"]

    def evaluate(vars):
        obj = input_fn(vars)
        if obj is None or obj is MISSING:
            return None
        if type(obj) is not dict:
            raise ExecutionError(f"$unsetField requires 'input' to evaluate to type Object, but got {bson_type(obj)}")
        if field not in obj:
            return obj
        out = dict(obj)
        del out[field]
        return out
    return evaluate


def _bson_size(obj) -> int:
    """The size in bytes of a document encoded as BSON."""
    if type(obj) is not dict:
        raise ExecutionError(f"$bsonSize requires a document input, found: {bson_type(obj)}")
    return len(bson.encode(obj))


def _binary_size(v) -> int:
    """The size in bytes of a string (UTF-8) or binData value."""
    if type(v) is str:
        return len(v.encode("utf-8"))
    if isinstance(v, (Binary, bytes)):
        return len(bytes(v))
    raise ExecutionError(f"$binarySize requires a string or BinData argument, found: {bson_type(v)}")


implements(EXPRESSION, "$bsonSize")(unary_operator("$bsonSize", _bson_size))
implements(EXPRESSION, "$binarySize")(unary_operator("$binarySize", _binary_size))

