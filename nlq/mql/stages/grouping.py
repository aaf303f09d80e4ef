"""Stages that aggregate documents into groups: $group, $count and $sortByCount."""

from __future__ import annotations

from nlq.errors import ExecutionError, ForbiddenOperatorError, UnknownOperatorError
from nlq.mql import registry
from nlq.mql.accumulators import compile_accumulator
from nlq.mql.expressions import compile_expression
from nlq.mql.registry import ACCUMULATOR, STAGE, implements
from nlq.mql.stages.base import is_operator
from nlq.mql.values import MISSING, group_key

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
        raise ForbiddenOperatorError(f"{name} is forbidden (nlq runs only read-only, deterministic queries)")
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
    vars_of = ctx.binder()

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
        yield from group_rows(groups, names, check)
    return group


def group_rows(groups: dict, names: list[str], check):
    """The output documents of `$group`'s groups (`key -> (_id value, accumulator states)`,
    in first-seen order): `_id`, then each field's result (missing ones as null)."""
    for key_value, accs in groups.values():
        check()
        out = {"_id": None if key_value is MISSING else key_value}
        for name, acc in zip(names, accs):
            result = acc.result()
            out[name] = None if result is MISSING else result
        yield out


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
# $sortByCount  (= $group {_id: expr, count: {$sum: 1}} + $sort {count: -1})


@implements(STAGE, "$sortByCount")
def compile_sort_by_count(spec, ctx):
    if not ((type(spec) is str and spec.startswith("$") and not spec.startswith("$$")) or is_operator(spec)):
        raise ExecutionError("the sortByCount field must be defined as a $-prefixed path or an expression object")
    key_fn = compile_expression(spec)
    check = ctx.check
    vars_of = ctx.binder()

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
