"""Stages that fill gaps in series: $densify (missing documents) and $fill
(missing values, through $setWindowFields and $addFields)."""

from __future__ import annotations

import datetime as _dt

from bson.decimal128 import Decimal128

from nlq.errors import ExecutionError
from nlq.mql import registry
from nlq.mql.ops_date import add_units
from nlq.mql.registry import STAGE
from nlq.mql.stages.base import (TIME_UNITS, as_float, check_keys, get_nested, integral_number, is_num, set_nested,
                                 split_path)
from nlq.mql.stages.windows import compile_set_window_fields
from nlq.mql.values import MISSING, compare, group_key, is_nullish, sort_key, to_decimal

# ---------------------------------------------------------------- $densify
# https://www.mongodb.com/docs/manual/reference/operator/aggregation/densify/


@registry.implements(STAGE, "$densify")
def compile_densify(spec, ctx):
    """Buffers: sorts by partition and field, then inserts documents at every missing `step`."""
    check_keys("$densify", spec, {"field", "partitionByFields", "range"}, code=5733400)
    if "field" not in spec or "range" not in spec:
        raise ExecutionError("$densify requires 'field' and 'range' to be specified", code=5733400)
    field_parts = split_path(spec["field"], "$densify 'field'")
    partitions = spec.get("partitionByFields", [])
    if type(partitions) is not list or any(type(p) is not str for p in partitions):
        raise ExecutionError("$densify 'partitionByFields' must be an array of field names", code=5733400)
    partition_parts = [split_path(p, "$densify 'partitionByFields'") for p in partitions]
    rng = spec["range"]
    check_keys("$densify range", rng, {"step", "unit", "bounds"}, code=5733400)
    if "step" not in rng or "bounds" not in rng:
        raise ExecutionError("$densify 'range' requires 'step' and 'bounds'", code=5733400)
    step, unit, bounds = rng["step"], rng.get("unit"), rng["bounds"]
    if not is_num(step) or type(step) is bool or as_float(step) <= 0:
        raise ExecutionError("the step parameter in a range statement must be a strictly positive numeric value",
                             code=5733401)
    if unit is not None:
        if type(unit) is not str or unit not in TIME_UNITS:
            raise ExecutionError(f"$densify: unknown time unit value: {unit}", code=9)
        if not integral_number(step):
            raise ExecutionError("The step parameter in a range statement must be a whole number when densifying a "
                                 "date range", code=6586400)
        step = int(as_float(step))
    explicit = None
    if bounds not in ("full", "partition"):
        if type(bounds) is not list or len(bounds) != 2:
            raise ExecutionError("$densify bounds must be 'full', 'partition' or an array of two values",
                                 code=5733402)
        lo, hi = bounds
        if unit is None:
            if not (is_num(lo) and is_num(hi)):
                raise ExecutionError("$densify: numeric bounds are required when no unit is given", code=5733403)
        elif not (isinstance(lo, _dt.datetime) and isinstance(hi, _dt.datetime)):
            raise ExecutionError("$densify: bounds must be dates when a unit is given", code=5733403)
        if compare(lo, hi) > 0:
            raise ExecutionError("$densify: the lower bound must not be greater than the upper bound",
                                 code=5733402)
        explicit = (lo, hi)
    check = ctx.check

    def value_of(doc):
        v = get_nested(doc, field_parts)
        if is_nullish(v):
            return None
        if unit is None and not is_num(v):
            raise ExecutionError("Densify field type must be numeric", code=5733201)
        if unit is not None and not isinstance(v, _dt.datetime):
            raise ExecutionError("Densify field type must be a date", code=6053600)
        return v

    def nth(start, k):
        if unit is None:
            if type(start) is Decimal128 or type(step) is Decimal128:
                return Decimal128(to_decimal(start) + k * to_decimal(step))
            return start + k * step
        return add_units(start, unit, k * step, None)

    def make(value, pkey_values):
        out = set_nested({}, field_parts, value)
        for parts, pv in zip(partition_parts, pkey_values):
            if pv is not MISSING:
                out = set_nested(out, parts, pv)
        return out

    def fill(docs_with_values, start, stop, inclusive, pvalues):
        """Merge the generated grid start + k*step (up to stop) with the (sorted) documents."""
        k = 0
        current = nth(start, 0) if start is not None else None
        for v, doc in docs_with_values:
            while current is not None and compare(current, v) < 0 and _in_range(current, stop, inclusive):
                check()
                yield make(current, pvalues)
                k += 1
                current = nth(start, k)
            if current is not None and compare(current, v) == 0:
                k += 1
                current = nth(start, k)
            yield doc
        while current is not None and _in_range(current, stop, inclusive):
            check()
            yield make(current, pvalues)
            k += 1
            current = nth(start, k)

    def densify(stream):
        groups: dict = {}
        for doc in stream:
            check()
            pvalues = tuple(get_nested(doc, p) for p in partition_parts)
            key = tuple(group_key(v) for v in pvalues)
            entry = groups.get(key)
            if entry is None:
                entry = groups[key] = (pvalues, [], [])
            v = value_of(doc)
            (entry[1] if v is None else entry[2]).append((v, doc))
        if not groups and explicit is not None:
            # Explicit bounds generate the range even for an empty input (SERVER-82446's expected
            # results: bounds [4, 8] over no documents give 4, 5, 6, 7).
            groups[()] = (tuple(MISSING for _ in partition_parts), [], [])
        global_min = global_max = None
        for _, _, valued in groups.values():
            for v, _doc in valued:
                if global_min is None or compare(v, global_min) < 0:
                    global_min = v
                if global_max is None or compare(v, global_max) > 0:
                    global_max = v
        for key in sorted(groups, key=lambda k: k):
            pvalues, nulls, valued = groups[key]
            valued.sort(key=lambda e: sort_key(e[0]))
            for _, doc in nulls:
                yield doc
            if explicit is not None:
                lo, hi = explicit
                below = [(v, d) for v, d in valued if compare(v, lo) < 0]
                inside = [(v, d) for v, d in valued if compare(v, lo) >= 0 and compare(v, hi) < 0]
                above = [(v, d) for v, d in valued if compare(v, hi) >= 0]
                for _, d in below:
                    yield d
                yield from fill(inside, lo, hi, False, pvalues)
                for _, d in above:
                    yield d
            elif bounds == "full":
                yield from fill(valued, global_min, global_max, True, pvalues)
            else:
                start = valued[0][0] if valued else None
                stop = valued[-1][0] if valued else None
                yield from fill(valued, start, stop, True, pvalues)
    return densify


def _in_range(value, stop, inclusive: bool) -> bool:
    c = compare(value, stop)
    return c <= 0 if inclusive else c < 0


# ---------------------------------------------------------------- $fill
# https://www.mongodb.com/docs/manual/reference/operator/aggregation/fill/


@registry.implements(STAGE, "$fill")
def compile_fill(spec, ctx):
    """`{value}` fills are `$ifNull`; `{method}` fills run as `$setWindowFields` with $locf / $linearFill."""
    check_keys("$fill", spec, {"sortBy", "partitionBy", "partitionByFields", "output"}, code=6050200)
    if "output" not in spec or type(spec["output"]) is not dict or not spec["output"]:
        raise ExecutionError("$fill requires a non-empty 'output' object", code=6050203)
    if "partitionBy" in spec and "partitionByFields" in spec:
        raise ExecutionError("Only one of 'partitionBy' and 'partitionByFields' can be specified for '$fill'",
                             code=6050204)
    partition = spec.get("partitionBy")
    if "partitionByFields" in spec:
        fields = spec["partitionByFields"]
        if type(fields) is not list or any(type(f) is not str for f in fields):
            raise ExecutionError("'partitionByFields' must be an array of strings", code=6050205)
        partition = {f.replace(".", "_"): "$" + f for f in fields}
    value_fills, method_fills = {}, {}
    for field, how in spec["output"].items():
        if type(how) is not dict or len(how) != 1 or next(iter(how)) not in ("value", "method"):
            raise ExecutionError(f"Each fill output specification must have exactly one of 'value' or 'method': "
                                 f"{field}", code=6050201)
        if "value" in how:
            value_fills[field] = {"$ifNull": ["$" + field, how["value"]]}
        else:
            method = how["method"]
            if method == "locf":
                method_fills[field] = {"$locf": "$" + field}
            elif method == "linear":
                if "sortBy" not in spec:
                    raise ExecutionError("Method 'linear' requires a 'sortBy' field in '$fill'", code=6050201)
                method_fills[field] = {"$linearFill": "$" + field}
            else:
                raise ExecutionError(f"Method must be either 'linear' or 'locf', got {method!r}", code=6050202)
    stages = []
    if method_fills or "sortBy" in spec:
        window_spec: dict = {"output": method_fills}
        if partition is not None:
            window_spec["partitionBy"] = partition
        if "sortBy" in spec:
            window_spec["sortBy"] = spec["sortBy"]
        if not method_fills:
            window_spec["output"] = {}
        stages.append(compile_set_window_fields(window_spec, ctx))
    if value_fills:
        stages.append(registry.evaluator("$addFields", STAGE)(value_fills, ctx))

    def fill(stream):
        for fn in stages:
            stream = fn(stream)
        return stream
    return fill
