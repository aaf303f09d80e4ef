"""Set expression operators: arrays treated as sets under BSON equality (1 == 1.0).

Manual: https://www.mongodb.com/docs/manual/reference/operator/aggregation/#set-expression-operators
Duplicates are ignored and element order is not significant; results keep the
first-seen order of their elements (MongoDB leaves it unspecified).
"""

from __future__ import annotations

from nlq.errors import ExecutionError
from nlq.mql.expressions import CHECK_EVERY, check_deadline, compile_args, paced
from nlq.mql.registry import EXPRESSION, implements
from nlq.mql.values import bson_type, group_key, is_nullish, is_truthy


def _unique(array) -> tuple[list, set]:
    keys, out = set(), []
    for i, v in enumerate(array):
        if i % CHECK_EVERY == CHECK_EVERY - 1:
            check_deadline()
        k = group_key(v)
        if k not in keys:
            keys.add(k)
            out.append(v)
    return out, keys


def _keys(array) -> set:
    return {group_key(v) for v in paced(array)}


def _arrays(op: str, fns, vars, *, null_is_null: bool = True) -> list | None:
    """Every operand's array: None when one is null or missing (`null_is_null`), else an error
    for the first operand that is not an array."""
    arrays = []
    for fn in fns:
        v = fn(vars)
        if null_is_null and is_nullish(v):
            return None
        if type(v) is not list:
            raise ExecutionError(f"All operands of {op} must be arrays. One argument is of type: {bson_type(v)}")
        arrays.append(v)
    return arrays


def _two_arrays(op: str, first, second) -> None:
    """The error for the first of two operands that is not an array."""
    if type(first) is not list:
        raise ExecutionError(f"both operands of {op} must be arrays. First argument is of type: {bson_type(first)}")
    if type(second) is not list:
        raise ExecutionError(f"both operands of {op} must be arrays. Second argument is of type: "
                             f"{bson_type(second)}")


@implements(EXPRESSION, "$setUnion")
def _set_union(args):
    fns = compile_args(args, name="$setUnion")

    def evaluate(vars):
        arrays = _arrays("$setUnion", fns, vars)
        if arrays is None:
            return None
        return _unique(v for array in arrays for v in array)[0]
    return evaluate


@implements(EXPRESSION, "$setIntersection")
def _set_intersection(args):
    fns = compile_args(args, name="$setIntersection")

    def evaluate(vars):
        arrays = _arrays("$setIntersection", fns, vars)
        if arrays is None:
            return None
        if not arrays:
            return []
        out, _ = _unique(arrays[0])
        for array in arrays[1:]:
            keys = _keys(array)
            out = [v for v in paced(out) if group_key(v) in keys]
        return out
    return evaluate


@implements(EXPRESSION, "$setDifference")
def _set_difference(args):
    first_fn, second_fn = compile_args(args, name="$setDifference", min_args=2, max_args=2)

    def evaluate(vars):
        first, second = first_fn(vars), second_fn(vars)
        if is_nullish(first) or is_nullish(second):
            return None
        _two_arrays("$setDifference", first, second)
        exclude = _keys(second)
        return [v for v in paced(_unique(first)[0]) if group_key(v) not in exclude]
    return evaluate


@implements(EXPRESSION, "$setEquals")
def _set_equals(args):
    fns = compile_args(args, name="$setEquals", min_args=2)

    def evaluate(vars):
        sets = [_keys(v) for v in _arrays("$setEquals", fns, vars, null_is_null=False)]
        return all(s == sets[0] for s in sets[1:])
    return evaluate


@implements(EXPRESSION, "$setIsSubset")
def _set_is_subset(args):
    first_fn, second_fn = compile_args(args, name="$setIsSubset", min_args=2, max_args=2)

    def evaluate(vars):
        first, second = first_fn(vars), second_fn(vars)
        _two_arrays("$setIsSubset", first, second)
        return _keys(first) <= _keys(second)
    return evaluate


def _elements_true(name: str, combine):
    def compile_(args):
        (fn,) = compile_args(args, name=name, min_args=1, max_args=1)

        def evaluate(vars):
            array = fn(vars)
            if type(array) is not list:
                raise ExecutionError(f"{name}'s argument must be an array, but is {bson_type(array)}")
            return combine(is_truthy(v) for v in paced(array))
        return evaluate
    return compile_


implements(EXPRESSION, "$allElementsTrue")(_elements_true("$allElementsTrue", all))
implements(EXPRESSION, "$anyElementTrue")(_elements_true("$anyElementTrue", any))
