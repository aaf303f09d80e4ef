"""Bucketing stages: $bucket (given boundaries) and $bucketAuto (even buckets,
with the preferred-number granularities; the filling algorithm and rounders
are the server's)."""

from __future__ import annotations

import bisect
import math

from bson.int64 import Int64

from nlq.errors import ExecutionError
from nlq.mql import registry
from nlq.mql.expressions import compile_expression
from nlq.mql.registry import STAGE
from nlq.mql.stages.base import as_float, check_keys, is_num
from nlq.mql.stages.grouping import compile_accumulator_spec
from nlq.mql.values import MISSING, bson_type, sort_key

_INT32 = (-2**31, 2**31 - 1)

def _group_by(stage: str, spec, code: int):
    """`groupBy` must be a `$`-path or an operator expression object."""
    ok = (type(spec) is str and spec.startswith("$")) or (
        type(spec) is dict and spec and next(iter(spec)).startswith("$"))
    if not ok:
        raise ExecutionError(f"The {stage} 'groupBy' field must be defined as a $-prefixed path or an expression"
                             f" object, but found: {spec!r}", code=code)
    return compile_expression(spec)


def _output_fields(stage: str, output):
    if output is None:
        return [("count", compile_accumulator_spec("count", {"$sum": 1}))]
    if type(output) is not dict:
        raise ExecutionError(f"The {stage} 'output' field must be an object, but found type: {bson_type(output)}",
                             code=40196 if stage == "$bucket" else 40244)
    fields = []
    for name, acc in output.items():
        if "." in name or name.startswith("$"):
            raise ExecutionError(f"{stage}: invalid output field name '{name}'")
        fields.append((name, compile_accumulator_spec(name, acc)))
    return fields


def _finish(out: dict, fields, accs) -> dict:
    for (name, _), acc in zip(fields, accs):
        r = acc.result()
        out[name] = None if r is MISSING else r
    return out


# ---------------------------------------------------------------- $bucket
# https://www.mongodb.com/docs/manual/reference/operator/aggregation/bucket/


@registry.implements(STAGE, "$bucket")
def compile_bucket(spec, ctx):
    """Buffers: groups every document into its [boundary, next boundary) bucket."""
    check_keys("$bucket", spec, {"groupBy", "boundaries", "default", "output"}, code=40197)
    if "groupBy" not in spec or "boundaries" not in spec:
        raise ExecutionError("$bucket requires 'groupBy' and 'boundaries' to be specified.", code=40198)
    group_fn = _group_by("$bucket", spec["groupBy"], 40202)
    bounds = spec["boundaries"]
    if type(bounds) is not list:
        raise ExecutionError(f"The $bucket 'boundaries' field must be an array, but found type: {bson_type(bounds)}.",
                             code=40200)
    if len(bounds) < 2:
        raise ExecutionError(f"The $bucket 'boundaries' field must have at least 2 values, but found "
                             f"{len(bounds)} value(s).", code=40192)
    keys = [sort_key(b) for b in bounds]
    for i in range(1, len(bounds)):
        if keys[i][0] != keys[0][0]:
            raise ExecutionError(f"All values in the the 'boundaries' option to $bucket must have the same type. "
                                 f"Found conflicting types {bson_type(bounds[0])} and {bson_type(bounds[i])}.",
                                 code=40193)
        if not keys[i - 1] < keys[i]:
            raise ExecutionError(f"The 'boundaries' option to $bucket must be sorted, but elements {i - 1} and {i} "
                                 f"are not in ascending order ({bounds[i - 1]!r} is not less than {bounds[i]!r}).",
                                 code=40194)
    has_default = "default" in spec
    default = spec.get("default")
    if has_default:
        dk = sort_key(default)
        if dk[0] == keys[0][0] and keys[0] <= dk < keys[-1]:
            raise ExecutionError("The $bucket 'default' field must be less than the lowest boundary or greater than "
                                 "or equal to the highest boundary.", code=40199)
    fields = _output_fields("$bucket", spec.get("output"))
    factories = [f for _, f in fields]
    check, vars_of = ctx.check, ctx.binder()

    def bucket(stream):
        groups: dict = {}
        for doc in stream:
            check()
            vars = vars_of(doc)
            v = group_fn(vars)
            k = sort_key(None if v is MISSING else v)
            i = bisect.bisect_right(keys, k) - 1
            if 0 <= i < len(keys) - 1 and k[0] == keys[0][0]:
                slot, _id = i, bounds[i]
            elif has_default:
                slot, _id = -1, default
            else:
                raise ExecutionError("$switch could not find a matching branch for an input, and no default was "
                                     "specified.", code=40066)
            entry = groups.get(slot)
            if entry is None:
                entry = groups[slot] = (_id, [f() for f in factories])
            for acc in entry[1]:
                acc.add(vars)
        ordered = sorted(groups.values(), key=lambda e: sort_key(e[0]))
        for _id, accs in ordered:
            yield _finish({"_id": _id}, fields, accs)
    return bucket


# ---------------------------------------------------------------- $bucketAuto
# https://www.mongodb.com/docs/manual/reference/operator/aggregation/bucketAuto/

_SERIES = {
    "R5": [10, 16, 25, 40, 63],
    "R10": [100, 125, 160, 200, 250, 315, 400, 500, 630, 800],
    "R20": [100, 112, 125, 140, 160, 180, 200, 224, 250, 280, 315, 355, 400, 450, 500, 560, 630, 710, 800, 900],
    "R40": [100, 106, 112, 118, 125, 132, 140, 150, 160, 170, 180, 190, 200, 212, 224, 236, 250, 265, 280, 300,
            315, 355, 375, 400, 425, 450, 475, 500, 530, 560, 600, 630, 670, 710, 750, 800, 850, 900, 950],
    "R80": [103, 109, 115, 122, 128, 136, 145, 155, 165, 175, 185, 195, 206, 218, 230, 243, 258, 272, 290, 307,
            325, 345, 365, 387, 412, 437, 462, 487, 515, 545, 575, 615, 650, 690, 730, 775, 825, 875, 925, 975],
    "1-2-5": [10, 20, 50],
    "E6": [10, 15, 22, 33, 47, 68],
    "E12": [10, 12, 15, 18, 22, 27, 33, 39, 47, 56, 68, 82],
    "E24": [10, 11, 12, 13, 15, 16, 18, 20, 22, 24, 27, 30, 33, 36, 39, 43, 47, 51, 56, 62, 68, 75, 82, 91],
    "E48": [100, 105, 110, 115, 121, 127, 133, 140, 147, 154, 162, 169, 178, 187, 196, 205, 215, 226, 237, 249,
            261, 274, 287, 301, 316, 332, 348, 365, 383, 402, 422, 442, 464, 487, 511, 536, 562, 590, 619, 649,
            681, 715, 750, 787, 825, 866, 909, 953],
    "E96": [100, 102, 105, 107, 110, 113, 115, 118, 121, 124, 127, 130, 133, 137, 140, 143, 147, 150, 154, 158,
            162, 165, 169, 174, 178, 182, 187, 191, 196, 200, 205, 210, 215, 221, 226, 232, 237, 243, 249, 255,
            261, 267, 274, 280, 287, 294, 301, 309, 316, 324, 332, 340, 348, 357, 365, 374, 383, 392, 402, 412,
            422, 432, 442, 453, 464, 475, 487, 499, 511, 523, 536, 549, 562, 576, 590, 604, 619, 634, 649, 665,
            681, 698, 715, 732, 750, 768, 787, 806, 825, 845, 866, 887, 909, 931, 953, 976],
}
# E192 (the IEC 60063 values; 920 is the standard's documented exception to rounding 10^(185/192)).
_SERIES["E192"] = [920 if i == 185 else round(10 ** (i / 192) * 100) for i in range(192)]
GRANULARITIES = tuple(_SERIES) + ("POWERSOF2",)


def _check_roundable(value) -> float:
    if not is_num(value):
        raise ExecutionError(f"A granularity rounder can only round numeric values, but found type: "
                             f"{bson_type(value)}", code=40262)
    x = as_float(value)
    if x != x:
        raise ExecutionError("A granularity rounder cannot round NaN", code=40263)
    if x < 0:
        raise ExecutionError("A granularity rounder can only round non-negative numbers", code=40268)
    return x


def _scaled(s: float, multiplier_exp: int) -> float:
    return s * 10.0 ** multiplier_exp if multiplier_exp >= 0 else s / 10.0 ** -multiplier_exp


def round_up(granularity: str, value):
    """The smallest number of the series strictly greater than `value` (0 stays 0)."""
    x = _check_roundable(value)
    if x == 0:
        return value
    if granularity == "POWERSOF2":
        if type(value) in (int, Int64):
            return _pow2(int(value).bit_length())
        return _pow2(int(math.floor(math.log2(x)) + 1))
    series = _SERIES[granularity]
    e = 0
    while x >= _scaled(series[-1], e):
        e += 1
    while x < _scaled(series[0], e):
        previous_min = _scaled(series[0], e)
        e -= 1
        if x >= _scaled(series[-1], e):
            return previous_min
    for s in series:
        if x < _scaled(s, e):
            return _scaled(s, e)
    raise AssertionError("unreachable: the value lies inside the scaled series")


def round_down(granularity: str, value):
    """The largest number of the series strictly less than `value` (0 stays 0)."""
    x = _check_roundable(value)
    if x == 0:
        return value
    if granularity == "POWERSOF2":
        if type(value) in (int, Int64):
            n = int(value)
            exp = n.bit_length() - 1
            return _pow2(exp - 1 if n == 1 << exp else exp)
        return _pow2(int(math.ceil(math.log2(x)) - 1))
    series = _SERIES[granularity]
    e = 0
    while x <= _scaled(series[0], e):
        e -= 1
    while x > _scaled(series[-1], e):
        previous_max = _scaled(series[-1], e)
        e += 1
        if x <= _scaled(series[0], e):
            return previous_max
    result = None
    for s in series:
        if _scaled(s, e) < x:
            result = _scaled(s, e)
    return result


def _pow2(exp: int):
    """`$pow: [2, exp]` typed as MongoDB types it (int, long, or double for negative exponents)."""
    if exp < 0:
        return 2.0 ** exp
    v = 1 << exp
    return v if v <= _INT32[1] else Int64(v)


@registry.implements(STAGE, "$bucketAuto")
def compile_bucket_auto(spec, ctx):
    """Buffers and sorts by `groupBy`, then fills `buckets` buckets of about n/buckets documents each."""
    check_keys("$bucketAuto", spec, {"groupBy", "buckets", "output", "granularity"})
    if "groupBy" not in spec or "buckets" not in spec:
        raise ExecutionError("$bucketAuto requires 'groupBy' and 'buckets' to be specified", code=40246)
    group_fn = _group_by("$bucketAuto", spec["groupBy"], 40239)
    n_spec = spec["buckets"]
    if not is_num(n_spec) or type(n_spec) is bool:
        raise ExecutionError(f"The $bucketAuto 'buckets' field must be a numeric value, but found type: "
                             f"{bson_type(n_spec)}", code=40241)
    n_f = as_float(n_spec)
    if n_f != int(n_f) or not _INT32[0] <= n_f <= _INT32[1]:
        raise ExecutionError(f"The $bucketAuto 'buckets' field must be representable as a 32-bit integer, but found "
                             f"{n_f:g}", code=40242)
    n_buckets = int(n_f)
    if n_buckets <= 0:
        raise ExecutionError(f"The $bucketAuto 'buckets' field must be greater than 0, but found: {n_buckets}",
                             code=40243)
    granularity = spec.get("granularity")
    if granularity is not None:
        if type(granularity) is not str:
            raise ExecutionError(f"The $bucketAuto 'granularity' field must be a string, but found type: "
                                 f"{bson_type(granularity)}", code=40261)
        if granularity not in GRANULARITIES:
            raise ExecutionError(f"Unknown rounding granularity '{granularity}'", code=40257)
    fields = _output_fields("$bucketAuto", spec.get("output"))
    factories = [f for _, f in fields]
    check, vars_of = ctx.check, ctx.vars

    def bucket_auto(stream):
        entries = []
        for doc in stream:
            check()
            vars = vars_of(doc)
            v = group_fn(vars)
            v = None if v is MISSING else v
            entries.append((sort_key(v), len(entries), v, vars))
        if not entries:
            return
        entries.sort(key=lambda e: (e[0], e[1]))
        n = len(entries)
        approx = max(1, int(math.floor(n / n_buckets + 0.5)))
        buckets = []  # [min, max, accs]
        i = 0
        for b in range(n_buckets):
            if i >= n:
                break
            check()
            accs = [f() for f in factories]
            lo = entries[i][2]
            last_key = None
            hi = None

            def add(entry):
                for acc in accs:
                    acc.add(entry[3])

            take = n - i if b == n_buckets - 1 else approx
            for _ in range(take):
                if i >= n:
                    break
                add(entries[i])
                hi, last_key = entries[i][2], entries[i][0]
                i += 1
            if b < n_buckets - 1:
                if granularity is not None:
                    boundary = round_up(granularity, hi)
                    bkey = sort_key(boundary)
                    while i < n and entries[i][0] < bkey:
                        add(entries[i])
                        hi = entries[i][2]
                        i += 1
                    if i < n:
                        hi = boundary
                else:
                    while i < n and entries[i][0] == last_key:
                        add(entries[i])
                        i += 1
            if buckets:
                prev = buckets[-1]
                if granularity is not None:
                    if as_float(prev[1]) == 0.0:
                        prev[1] = round_down(granularity, lo)
                    lo = prev[1]
                else:
                    prev[1] = lo
            buckets.append([lo, hi, accs])
        if granularity is not None:
            buckets[0][0] = round_down(granularity, buckets[0][0])
            buckets[-1][1] = round_up(granularity, buckets[-1][1])
        for lo, hi, accs in buckets:
            yield _finish({"_id": {"min": lo, "max": hi}}, fields, accs)
    return bucket_auto
