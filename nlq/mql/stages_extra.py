"""Advanced aggregation stages: $bucket, $bucketAuto, $graphLookup, $unionWith,
$redact, $documents, $densify, $fill and $setWindowFields (with the window-only
functions $rank, $denseRank, $documentNumber, $shift, $locf, $linearFill,
$expMovingAvg, $derivative, $integral, $covariancePop, $covarianceSamp and
every accumulator as a window function).

Each compiler takes the stage argument and the engine's StageContext and
returns `fn(stream) -> stream`. Stages that need all their input (buckets,
windows, densify) say so and materialize it; the others stream. Semantics are
those of the manual's stage pages
(https://www.mongodb.com/docs/manual/reference/operator/aggregation-pipeline/)
and, where the manual is silent, of the server's implementation (the
$bucketAuto filling algorithm and the granularity rounders).
"""

from __future__ import annotations

import bisect
import datetime as _dt
import math

from bson.decimal128 import Decimal128
from bson.int64 import Int64

from nlq.errors import ExecutionError
from nlq.mql import registry
from nlq.mql.expressions import compile_expression, traverse
from nlq.mql.registry import STAGE, WINDOW
from nlq.mql.stages import (Marker, _materialize, compile_accumulator_spec, get_nested, parse_sort_spec,
                            set_nested, sort_documents, sort_value_key, split_path)
from nlq.mql.values import MISSING, bson_type, compare, date_to_millis, group_key, is_nullish, sort_key, to_decimal

_INT32 = (-2**31, 2**31 - 1)


def _is_num(v) -> bool:
    t = type(v)
    return t is int or t is float or t is Int64 or t is Decimal128


def _float(v) -> float:
    return float(v.to_decimal()) if type(v) is Decimal128 else float(v)


def _integral_number(v) -> bool:
    """A finite number with no fractional part (NaN and infinities are not)."""
    f = _float(v)
    return math.isfinite(f) and f == int(f)


def _check_keys(stage: str, spec, allowed: set, code: int = 40245):
    if type(spec) is not dict:
        raise ExecutionError(f"the argument to {stage} must be an object, but found type: {bson_type(spec)}")
    for key in spec:
        if key not in allowed:
            raise ExecutionError(f"Unrecognized option to {stage}: {key}", code=code)


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
    _check_keys("$bucket", spec, {"groupBy", "boundaries", "default", "output"}, code=40197)
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
    check, vars_of = ctx.check, ctx.vars

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
    if not _is_num(value):
        raise ExecutionError(f"A granularity rounder can only round numeric values, but found type: "
                             f"{bson_type(value)}", code=40262)
    x = _float(value)
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
    _check_keys("$bucketAuto", spec, {"groupBy", "buckets", "output", "granularity"})
    if "groupBy" not in spec or "buckets" not in spec:
        raise ExecutionError("$bucketAuto requires 'groupBy' and 'buckets' to be specified", code=40246)
    group_fn = _group_by("$bucketAuto", spec["groupBy"], 40239)
    n_spec = spec["buckets"]
    if not _is_num(n_spec) or type(n_spec) is bool:
        raise ExecutionError(f"The $bucketAuto 'buckets' field must be a numeric value, but found type: "
                             f"{bson_type(n_spec)}", code=40241)
    n_f = _float(n_spec)
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
                    if _float(prev[1]) == 0.0:
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


# ---------------------------------------------------------------- $graphLookup
# https://www.mongodb.com/docs/manual/reference/operator/aggregation/graphLookup/


def _path_leaves(doc, parts) -> list:
    """Values at a dotted path, arrays flattened one level (as graph edges are read)."""
    v = traverse(doc, parts)
    if v is MISSING:
        return []
    if type(v) is list:
        out = []
        for e in v:
            if type(e) is list:
                out.extend(e)
            else:
                out.append(e)
        return out
    return [v]


@registry.implements(STAGE, "$graphLookup")
def compile_graph_lookup(spec, ctx):
    """Streams; the `from` collection is indexed once by `connectToField` on first use."""
    allowed = {"from", "startWith", "connectFromField", "connectToField", "as", "maxDepth", "depthField",
               "restrictSearchWithMatch"}
    _check_keys("$graphLookup", spec, allowed, code=40104)
    for key in ("from", "startWith", "connectFromField", "connectToField", "as"):
        if key not in spec:
            raise ExecutionError("$graphLookup requires 'from', 'as', 'startWith', 'connectFromField' and "
                                 "'connectToField' to be specified", code=40105)
    from_name = spec["from"]
    if type(from_name) is not str:
        raise ExecutionError(f"$graphLookup 'from' must be a string, found {bson_type(from_name)}", code=40103)
    start_fn = compile_expression(spec["startWith"])
    from_parts = split_path(spec["connectFromField"], "$graphLookup 'connectFromField'")
    to_parts = split_path(spec["connectToField"], "$graphLookup 'connectToField'")
    as_parts = split_path(spec["as"], "$graphLookup 'as'")
    depth_parts = split_path(spec["depthField"], "$graphLookup 'depthField'") if "depthField" in spec else None
    max_depth = None
    if "maxDepth" in spec:
        md = spec["maxDepth"]
        if not _is_num(md) or type(md) is bool:
            raise ExecutionError(f"maxDepth must be numeric, found type: {bson_type(md)}", code=40100)
        if not _integral_number(md):
            raise ExecutionError(f"maxDepth requires an integer, found: {md!r}", code=40102)
        max_depth = int(_float(md))
        if max_depth < 0:
            raise ExecutionError(f"maxDepth requires a nonnegative argument, found: {max_depth}", code=40101)
    restrict = None
    if "restrictSearchWithMatch" in spec:
        rs = spec["restrictSearchWithMatch"]
        if type(rs) is not dict:
            raise ExecutionError(f"restrictSearchWithMatch must be an object, found {bson_type(rs)}", code=40185)
        from nlq.mql.match import compile_filter
        restrict = compile_filter(rs, ctx.variables)
    from nlq.mql.match import equality_keys
    check, vars_of = ctx.check, ctx.vars
    state: dict = {}

    def index() -> dict:
        idx = state.get("index")
        if idx is None:
            idx = {}
            for doc in ctx.catalog(from_name):
                check()
                if restrict is not None and not restrict(doc):
                    continue
                for key in equality_keys(doc, to_parts):
                    idx.setdefault(key, []).append(doc)
            state["index"] = idx
        return idx

    def graph_lookup(stream):
        idx = None
        for doc in stream:
            check()
            if idx is None:
                idx = index()
            start = start_fn(vars_of(doc))
            frontier = start if type(start) is list else [None if start is MISSING else start]
            found: dict = {}
            queried = set()
            depth = 0
            while frontier and (max_depth is None or depth <= max_depth):
                next_values = []
                for value in frontier:
                    check()
                    key = group_key(value)
                    if key in queried:
                        continue
                    queried.add(key)
                    for target in idx.get(key, ()):
                        if id(target) in found:
                            continue
                        found[id(target)] = (target, depth)
                        next_values.extend(_path_leaves(target, from_parts))
                frontier = next_values
                depth += 1
            results = []
            for target, d in found.values():
                results.append(set_nested(target, depth_parts, Int64(d)) if depth_parts else target)
            yield set_nested(doc, as_parts, results)
    return graph_lookup


# ---------------------------------------------------------------- $unionWith / $documents / $redact


@registry.implements(STAGE, "$unionWith")
def compile_union_with(spec, ctx):
    """Streams the input, then the (piped) documents of the other collection."""
    if type(spec) is str:
        coll, pipeline = spec, []
    elif type(spec) is dict:
        _check_keys("$unionWith", spec, {"coll", "pipeline"})
        coll = spec.get("coll")
        pipeline = spec.get("pipeline", [])
        if coll is None and "pipeline" not in spec:
            raise ExecutionError("$unionWith requires 'coll' or a 'pipeline' starting with $documents", code=40321)
        if coll is not None and type(coll) is not str:
            raise ExecutionError(f"$unionWith 'coll' must be a string, found {bson_type(coll)}")
        if type(pipeline) is not list:
            raise ExecutionError(f"$unionWith 'pipeline' must be an array, found {bson_type(pipeline)}")
    else:
        raise ExecutionError(f"the $unionWith stage takes a string or an object, found {bson_type(spec)}",
                             code=40319)
    sub = ctx.compile_pipeline(pipeline)

    def union_with(stream):
        yield from stream
        yield from sub(ctx.catalog(coll) if coll is not None else [])
    return union_with


@registry.implements(STAGE, "$documents")
def compile_documents(spec, ctx):
    """Emits the documents an expression evaluates to (the input stream is ignored)."""
    fn = compile_expression(spec)

    def documents(stream):
        value = fn({**ctx.variables, "CURRENT": {}, "ROOT": {}})
        if type(value) is not list or any(type(d) is not dict for d in value):
            raise ExecutionError(f"error during $documents: the expression must evaluate to an array of objects, "
                                 f"got {bson_type(value)}", code=5858203)
        for d in value:
            ctx.check()
            yield d
    return documents


_DESCEND, _PRUNE, _KEEP = Marker("$$DESCEND"), Marker("$$PRUNE"), Marker("$$KEEP")


@registry.implements(STAGE, "$redact")
def compile_redact(spec, ctx):
    """Streams; evaluates the expression at every embedded document level ($$DESCEND / $$PRUNE / $$KEEP)."""
    fn = compile_expression(spec)
    check = ctx.check

    def verdict(doc, root, base):
        vars = dict(base)
        vars["CURRENT"] = doc
        vars["ROOT"] = root
        v = fn(vars)
        if v is _DESCEND or v is _PRUNE or v is _KEEP:
            return v
        raise ExecutionError("$redact's expression should not return anything aside from the variables $$KEEP, "
                             f"$$DESCEND, and $$PRUNE, but returned {v!r}", code=17053)

    def redact_doc(doc, root, base):
        v = verdict(doc, root, base)
        if v is _KEEP:
            return doc
        if v is _PRUNE:
            return None
        out = {}
        for key, value in doc.items():
            if type(value) is dict:
                r = redact_doc(value, root, base)
                if r is not None:
                    out[key] = r
            elif type(value) is list:
                out[key] = redact_array(value, root, base)
            else:
                out[key] = value
        return out

    def redact_array(values, root, base):
        out = []
        for value in values:
            if type(value) is dict:
                r = redact_doc(value, root, base)
                if r is not None:
                    out.append(r)
            elif type(value) is list:
                out.append(redact_array(value, root, base))
            else:
                out.append(value)
        return out

    def redact(stream):
        base = {**ctx.variables, "DESCEND": _DESCEND, "PRUNE": _PRUNE, "KEEP": _KEEP}
        for doc in stream:
            check()
            r = redact_doc(doc, doc, base)
            if r is not None:
                yield r
    return redact


# ---------------------------------------------------------------- $densify
# https://www.mongodb.com/docs/manual/reference/operator/aggregation/densify/

_DENSIFY_UNITS = ("year", "quarter", "month", "week", "day", "hour", "minute", "second", "millisecond")


@registry.implements(STAGE, "$densify")
def compile_densify(spec, ctx):
    """Buffers: sorts by partition and field, then inserts documents at every missing `step`."""
    from nlq.mql.ops_date import add_units

    _check_keys("$densify", spec, {"field", "partitionByFields", "range"}, code=5733400)
    if "field" not in spec or "range" not in spec:
        raise ExecutionError("$densify requires 'field' and 'range' to be specified", code=5733400)
    field_parts = split_path(spec["field"], "$densify 'field'")
    partitions = spec.get("partitionByFields", [])
    if type(partitions) is not list or any(type(p) is not str for p in partitions):
        raise ExecutionError("$densify 'partitionByFields' must be an array of field names", code=5733400)
    partition_parts = [split_path(p, "$densify 'partitionByFields'") for p in partitions]
    rng = spec["range"]
    _check_keys("$densify range", rng, {"step", "unit", "bounds"}, code=5733400)
    if "step" not in rng or "bounds" not in rng:
        raise ExecutionError("$densify 'range' requires 'step' and 'bounds'", code=5733400)
    step, unit, bounds = rng["step"], rng.get("unit"), rng["bounds"]
    if not _is_num(step) or type(step) is bool or _float(step) <= 0:
        raise ExecutionError("the step parameter in a range statement must be a strictly positive numeric value",
                             code=5733401)
    if unit is not None:
        if type(unit) is not str or unit not in _DENSIFY_UNITS:
            raise ExecutionError(f"$densify: unknown time unit value: {unit}", code=9)
        if not _integral_number(step):
            raise ExecutionError("The step parameter in a range statement must be a whole number when densifying a "
                                 "date range", code=6586400)
        step = int(_float(step))
    explicit = None
    if bounds not in ("full", "partition"):
        if type(bounds) is not list or len(bounds) != 2:
            raise ExecutionError("$densify bounds must be 'full', 'partition' or an array of two values",
                                 code=5733402)
        lo, hi = bounds
        if unit is None:
            if not (_is_num(lo) and _is_num(hi)):
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
        if unit is None and not _is_num(v):
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


# ---------------------------------------------------------------- $setWindowFields
# https://www.mongodb.com/docs/manual/reference/operator/aggregation/setWindowFields/


class _Partition:
    """What a window function sees of one partition (already sorted)."""

    __slots__ = ("docs", "vars", "sort_values")

    def __init__(self, docs, vars_list, sort_values):
        self.docs = docs
        self.vars = vars_list
        self.sort_values = sort_values  # values of the single sortBy field, or None


class _WindowSpec:
    __slots__ = ("kind", "lo", "hi", "unit")

    def __init__(self, kind, lo, hi, unit):
        self.kind, self.lo, self.hi, self.unit = kind, lo, hi, unit


def _parse_window(window) -> _WindowSpec | None:
    if window is None:
        return None
    if type(window) is not dict:
        raise ExecutionError("'window' field must be an object", code=5371001)
    for key in window:
        if key not in ("documents", "range", "unit"):
            raise ExecutionError(f"'window' field can only contain 'documents' as the only argument or 'range' with "
                                 f"an optional 'unit' field, found: {key}", code=5371002)
    if "documents" in window and "range" in window:
        raise ExecutionError("'window' field can only contain 'documents' or 'range', not both", code=5371003)
    kind = "documents" if "documents" in window else "range" if "range" in window else None
    if kind is None:
        raise ExecutionError("'window' field must contain 'documents' or 'range'", code=5371004)
    if kind == "documents" and "unit" in window:
        raise ExecutionError("'unit' can only be used with a 'range' window", code=5397903)
    bounds = window[kind]
    if type(bounds) is not list or len(bounds) != 2:
        raise ExecutionError(f"Window bounds must be a 2-element array: {{{kind}: {bounds!r}}}", code=5339800)
    out = []
    for b in bounds:
        if b in ("unbounded", "current"):
            out.append(b)
        elif _is_num(b) and type(b) is not bool:
            if kind == "documents" and not _integral_number(b):
                raise ExecutionError(f"Numeric document-based bounds must be an integer: {b!r}", code=5371005)
            out.append(int(_float(b)) if kind == "documents" else b)
        else:
            raise ExecutionError(f"Window bounds must be 'unbounded', 'current', or a number: {b!r}", code=5339801)
    lo, hi = out
    if lo != "unbounded" and hi != "unbounded":
        lo_n = 0 if lo == "current" else lo
        hi_n = 0 if hi == "current" else hi
        if compare(lo_n, hi_n) > 0:
            raise ExecutionError("Lower bound must not exceed upper bound", code=5339900)
    unit = window.get("unit")
    if unit is not None and (type(unit) is not str or unit not in _DENSIFY_UNITS):
        raise ExecutionError(f"unknown time unit value: {unit}", code=9)
    return _WindowSpec(kind, lo, hi, unit)


def _sort_number(value, unit, what="sortBy"):
    """A numeric position for range windows / derivatives: numbers as floats, dates as milliseconds."""
    if unit is not None:
        if not isinstance(value, _dt.datetime):
            raise ExecutionError(f"Invalid range: Expected the {what} field to be a date, but it was "
                                 f"{bson_type(value)}", code=5429513)
        return date_to_millis(value)
    if not _is_num(value):
        raise ExecutionError(f"Invalid range: Expected the {what} field to be a number, but it was "
                             f"{bson_type(value)}", code=5429414)
    return _float(value)


def _frames(part: _Partition, window: _WindowSpec | None, descending: bool):
    """(lo, hi) index pairs, inclusive, one per document (lo > hi for an empty frame)."""
    n = len(part.docs)
    if window is None or (window.lo == "unbounded" and window.hi == "unbounded"):
        return [(0, n - 1)] * n
    if window.kind == "documents":
        out = []
        lo, hi = window.lo, window.hi
        for i in range(n):
            a = 0 if lo == "unbounded" else i if lo == "current" else max(0, i + lo)
            b = n - 1 if hi == "unbounded" else i if hi == "current" else min(n - 1, i + hi)
            out.append((a, b))
        return out
    if part.sort_values is None:
        raise ExecutionError("Range-based window requires sortBy a single field", code=5339902)
    from nlq.mql.ops_date import add_units
    unit = window.unit
    values = part.sort_values
    keys = [_sort_number(v, unit) for v in values]
    sign = -1 if descending else 1
    ordered = [sign * k for k in keys]  # ascending for bisect

    def shifted(i, amount):
        if unit is None:
            return keys[i] + _float(amount)
        return date_to_millis(add_units(values[i], unit, _whole(amount), None))

    out = []
    for i in range(n):
        if window.lo == "unbounded":
            a = 0
        else:
            bound = keys[i] if window.lo == "current" else shifted(i, window.lo if not descending else
                                                                       _negate(window.lo))
            a = bisect.bisect_left(ordered, sign * bound)
        if window.hi == "unbounded":
            b = n - 1
        else:
            bound = keys[i] if window.hi == "current" else shifted(i, window.hi if not descending else
                                                                       _negate(window.hi))
            b = bisect.bisect_right(ordered, sign * bound) - 1
        out.append((a, b))
    return out


def _negate(v):
    return -v if type(v) is not Decimal128 else Decimal128(-v.to_decimal())


def _whole(v) -> int:
    f = _float(v)
    if not _integral_number(v):
        raise ExecutionError(f"With 'unit', range-based bounds must be an integer: {v!r}", code=5429414)
    return int(f)


def _copy_result(value):
    t = type(value)
    if t is list:
        return list(value)
    if t is dict:
        return dict(value)
    return value


class _AccumulatorWindow:
    def __init__(self, factory, window):
        self.factory, self.window = factory, window

    def compute(self, part: _Partition, descending: bool, check):
        n = len(part.docs)
        frames = _frames(part, self.window, descending)
        out = [None] * n
        if n == 0:
            return out
        if self.window is None or (self.window.lo == "unbounded" and self.window.hi == "unbounded"):
            acc = self.factory()
            for vars in part.vars:
                acc.add(vars)
            r = acc.result()
            return [_copy_result(r) if r is not MISSING else None for _ in range(n)]
        if all(a == 0 for a, _ in frames) and all(frames[i][1] <= frames[i + 1][1] for i in range(n - 1)):
            acc = self.factory()
            added = -1
            for i, (a, b) in enumerate(frames):
                check()
                while added < b:
                    added += 1
                    acc.add(part.vars[added])
                if b < 0:
                    out[i] = _empty_result(self.factory)
                else:
                    r = acc.result()
                    out[i] = None if r is MISSING else _copy_result(r)
            return out
        for i, (a, b) in enumerate(frames):
            check()
            if a > b:
                out[i] = _empty_result(self.factory)
                continue
            acc = self.factory()
            for j in range(a, b + 1):
                acc.add(part.vars[j])
            r = acc.result()
            out[i] = None if r is MISSING else r
        return out


def _empty_result(factory):
    r = factory().result()
    return None if r is MISSING else r


def _window_only(name: str):
    def decorate(fn):
        registry.implements(WINDOW, name)(fn)
        return fn
    return decorate


def _no_window(name, window):
    if window is not None:
        raise ExecutionError(f"{name} does not accept a 'window' field", code=5371601)


def _require_sort(name, sort_keys, single=False):
    if not sort_keys:
        raise ExecutionError(f"{name} must be specified with a top level sortBy expression", code=5371602)
    if single and len(sort_keys) != 1:
        raise ExecutionError(f"{name} must be specified with a top level sortBy expression with exactly one "
                             f"element", code=5371602)


class _Fn:
    """A window function computed over a whole partition at once."""

    def __init__(self, compute):
        self._compute = compute

    def compute(self, part, descending, check):
        return self._compute(part, descending, check)


@_window_only("$documentNumber")
def _document_number(arg, window, sort_keys):
    _no_window("$documentNumber", window)
    _require_sort("$documentNumber", sort_keys)
    return _Fn(lambda part, desc, check: list(range(1, len(part.docs) + 1)))


def _rank_fn(dense: bool, name: str):
    def compile_(arg, window, sort_keys):
        _no_window(name, window)
        if arg != {}:
            raise ExecutionError(f"{name} takes no arguments: use {{{name}: {{}}}}", code=5371603)
        _require_sort(name, sort_keys, single=True)
        parts, descending = sort_keys[0]

        def compute(part, desc, check):
            out, prev, rank, dense_rank = [], object(), 0, 0
            for i, doc in enumerate(part.docs):
                k = sort_value_key(doc, parts, descending)
                if i == 0 or k != prev:
                    rank = i + 1
                    dense_rank += 1
                    prev = k
                out.append(dense_rank if dense else rank)
            return out
        return _Fn(compute)
    return compile_


_window_only("$rank")(_rank_fn(False, "$rank"))
_window_only("$denseRank")(_rank_fn(True, "$denseRank"))


@_window_only("$shift")
def _shift(arg, window, sort_keys):
    _no_window("$shift", window)
    _require_sort("$shift", sort_keys)
    if type(arg) is not dict or "output" not in arg or "by" not in arg:
        raise ExecutionError("$shift requires 'output' and 'by' fields", code=5433000)
    for key in arg:
        if key not in ("output", "by", "default"):
            raise ExecutionError(f"Unknown argument in $shift: {key}", code=5433001)
    by = arg["by"]
    if not _is_num(by) or type(by) is bool or not _integral_number(by):
        raise ExecutionError("'$shift:by' field must be an integer, but found " + repr(by), code=5433003)
    by = int(_float(by))
    out_fn = compile_expression(arg["output"])
    default_spec = arg.get("default")
    default = compile_expression(default_spec)({"CURRENT": {}, "ROOT": {}}) if "default" in arg else None
    default = None if default is MISSING else default

    def compute(part, desc, check):
        n = len(part.docs)
        out = []
        for i in range(n):
            j = i + by
            if 0 <= j < n:
                v = out_fn(part.vars[j])
                out.append(None if v is MISSING else v)
            else:
                out.append(default)
        return out
    return _Fn(compute)


@_window_only("$locf")
def _locf(arg, window, sort_keys):
    _no_window("$locf", window)
    fn = compile_expression(arg)

    def compute(part, desc, check):
        out, last = [], None
        for vars in part.vars:
            v = fn(vars)
            if not is_nullish(v):
                last = v
            out.append(last)
        return out
    return _Fn(compute)


@_window_only("$linearFill")
def _linear_fill(arg, window, sort_keys):
    _no_window("$linearFill", window)
    _require_sort("$linearFill", sort_keys, single=True)
    fn = compile_expression(arg)

    def compute(part, desc, check):
        ys = [fn(v) for v in part.vars]
        xs = part.sort_values
        out = [None if is_nullish(y) else y for y in ys]
        known = [i for i, y in enumerate(ys) if not is_nullish(y)]
        for i in known:
            if not _is_num(ys[i]):
                raise ExecutionError(f"Value to $linearFill must be numeric, found {bson_type(ys[i])}",
                                     code=6050106)
        for a, b in zip(known, known[1:]):
            if b - a < 2:
                continue
            unit = "ms" if isinstance(xs[a], _dt.datetime) else None
            xa, xb = _sort_number(xs[a], unit), _sort_number(xs[b], unit)
            ya, yb = _float(ys[a]), _float(ys[b])
            for i in range(a + 1, b):
                if xb == xa:
                    continue
                xi = _sort_number(xs[i], unit)
                out[i] = ya + (xi - xa) * (yb - ya) / (xb - xa)
        return out
    return _Fn(compute)


@_window_only("$expMovingAvg")
def _exp_moving_avg(arg, window, sort_keys):
    _no_window("$expMovingAvg", window)
    _require_sort("$expMovingAvg", sort_keys)
    if type(arg) is not dict or "input" not in arg or ("N" in arg) == ("alpha" in arg):
        raise ExecutionError("$expMovingAvg requires an 'input' and exactly one of 'N' or 'alpha'", code=5433602)
    for key in arg:
        if key not in ("input", "N", "alpha"):
            raise ExecutionError(f"$expMovingAvg got an unexpected argument: {key}", code=5433603)
    if "N" in arg:
        n_val = arg["N"]
        if not _is_num(n_val) or not _integral_number(n_val) or _float(n_val) <= 0:
            raise ExecutionError("'N' field must be a positive integer", code=5433603)
        alpha = 2.0 / (int(_float(n_val)) + 1)
    else:
        a = arg["alpha"]
        if not _is_num(a) or not 0 < _float(a) < 1:
            raise ExecutionError("'alpha' must be between 0 and 1 (exclusive)", code=5433604)
        alpha = _float(a)
    fn = compile_expression(arg["input"])

    def compute(part, desc, check):
        out, avg = [], None
        for vars in part.vars:
            v = fn(vars)
            if _is_num(v):
                # the first value is returned as it is; later ones blend as doubles
                avg = v if avg is None else alpha * _float(v) + (1 - alpha) * _float(avg)
            out.append(avg)
        return out
    return _Fn(compute)


_UNIT_MS = {"week": 604_800_000, "day": 86_400_000, "hour": 3_600_000, "minute": 60_000, "second": 1000,
            "millisecond": 1}


def _xy_args(name, arg):
    if type(arg) is not dict or "input" not in arg:
        raise ExecutionError(f"{name} requires an 'input' expression", code=5490701)
    for key in arg:
        if key not in ("input", "unit"):
            raise ExecutionError(f"{name} got unexpected argument: {key}", code=5490702)
    unit = arg.get("unit")
    if unit is not None and (type(unit) is not str or unit not in _UNIT_MS):
        raise ExecutionError(f"{name}: unit must be one of week, day, hour, minute, second, millisecond; got "
                             f"{unit!r}", code=5490703)
    return compile_expression(arg["input"]), unit


def _x_positions(part, unit, name):
    xs = []
    for v in part.sort_values:
        if isinstance(v, _dt.datetime):
            if unit is None:
                raise ExecutionError(f"{name} where the sortBy is a Date requires a 'unit'", code=5624901)
            xs.append(date_to_millis(v) / _UNIT_MS[unit])
        elif _is_num(v):
            if unit is not None:
                raise ExecutionError(f"{name} with 'unit' expects the sortBy field to be a Date", code=5624900)
            xs.append(_float(v))
        else:
            raise ExecutionError(f"{name} requires the sortBy field to be a number or a date, found "
                                 f"{bson_type(v)}", code=5624902)
    return xs


@_window_only("$derivative")
def _derivative(arg, window, sort_keys):
    if window is None:
        raise ExecutionError("$derivative requires explicit window bounds", code=5490704)
    _require_sort("$derivative", sort_keys, single=True)
    fn, unit = _xy_args("$derivative", arg)

    def compute(part, desc, check):
        xs = _x_positions(part, unit, "$derivative")
        ys = [fn(v) for v in part.vars]
        out = []
        for a, b in _frames(part, window, desc):
            if b <= a or not (_is_num(ys[a]) and _is_num(ys[b])) or xs[b] == xs[a]:
                out.append(None)
                continue
            out.append((_float(ys[b]) - _float(ys[a])) / (xs[b] - xs[a]))
        return out
    return _Fn(compute)


@_window_only("$integral")
def _integral(arg, window, sort_keys):
    _require_sort("$integral", sort_keys, single=True)
    fn, unit = _xy_args("$integral", arg)

    def compute(part, desc, check):
        xs = _x_positions(part, unit, "$integral")
        ys = [fn(v) for v in part.vars]
        out = []
        for a, b in _frames(part, window, desc):
            check()
            if a > b:
                out.append(None)
                continue
            total = 0.0
            prev = None
            for j in range(a, b + 1):
                if not _is_num(ys[j]):
                    continue
                if prev is not None:
                    total += (xs[j] - xs[prev]) * (_float(ys[j]) + _float(ys[prev])) / 2.0
                prev = j
            out.append(total)
        return out
    return _Fn(compute)


def _covariance(sample: bool, name: str):
    def compile_(arg, window, sort_keys):
        if type(arg) is not list or len(arg) != 2:
            raise ExecutionError(f"{name} requires an array of two expressions", code=5424400)
        x_fn, y_fn = compile_expression(arg[0]), compile_expression(arg[1])

        def compute(part, desc, check):
            xs = [x_fn(v) for v in part.vars]
            ys = [y_fn(v) for v in part.vars]
            out = []
            for a, b in _frames(part, window, desc):
                check()
                pairs = [(_float(xs[j]), _float(ys[j])) for j in range(a, b + 1)
                         if _is_num(xs[j]) and _is_num(ys[j])]
                n = len(pairs)
                if n == 0 or (sample and n == 1):
                    out.append(None)
                    continue
                mx = math.fsum(p[0] for p in pairs) / n
                my = math.fsum(p[1] for p in pairs) / n
                c = math.fsum((p[0] - mx) * (p[1] - my) for p in pairs)
                out.append(c / (n - 1 if sample else n))
            return out
        return _Fn(compute)
    return compile_


_window_only("$covariancePop")(_covariance(False, "$covariancePop"))
_window_only("$covarianceSamp")(_covariance(True, "$covarianceSamp"))


def _compile_window_output(field: str, spec, sort_keys):
    if type(spec) is not dict:
        raise ExecutionError(f"The field '{field}' must be an object", code=40414)
    window = None
    fn_names = [k for k in spec if k != "window"]
    if len(fn_names) != 1:
        raise ExecutionError(f"Expected exactly one window function for '{field}', found {fn_names}", code=5371000)
    name = fn_names[0]
    if "window" in spec:
        window = _parse_window(spec["window"])
    arg = spec[name]
    op = registry.get(name)
    if op is not None and WINDOW in op.evaluators:
        return op.evaluators[WINDOW](arg, window, sort_keys)
    if op is not None and registry.ACCUMULATOR in op.kinds:
        factory = compile_accumulator_spec(field, {name: arg})
        if window is not None and window.kind == "range":
            if len(sort_keys) != 1:
                raise ExecutionError("Range-based window requires a sortBy with exactly one field", code=5339902)
        elif window is not None and window.kind == "documents" and not sort_keys and not (
                window.lo == "unbounded" and window.hi == "unbounded"):
            raise ExecutionError("Document-based bounds require a sortBy", code=5339901)
        return _AccumulatorWindow(factory, window)
    if op is not None and WINDOW in op.kinds:
        from nlq.errors import UnsupportedOperatorError
        raise UnsupportedOperatorError(f"the embedded engine does not support the window function {name}")
    raise ExecutionError(f"Unrecognized window function, {name}", code=5397500)


@registry.implements(STAGE, "$setWindowFields")
def compile_set_window_fields(spec, ctx):
    """Buffers: sorts by (partitionBy, sortBy), computes every output over each partition."""
    _check_keys("$setWindowFields", spec, {"partitionBy", "sortBy", "output"}, code=40415)
    if "output" not in spec or type(spec["output"]) is not dict:
        raise ExecutionError("$setWindowFields requires an 'output' object", code=40414)
    partition_fn = compile_expression(spec["partitionBy"]) if "partitionBy" in spec else None
    sort_keys = parse_sort_spec(spec["sortBy"], "$setWindowFields") if "sortBy" in spec else []
    outputs = []
    for field, out_spec in spec["output"].items():
        parts = split_path(field, "$setWindowFields output field")
        outputs.append((parts, _compile_window_output(field, out_spec, sort_keys)))
    single = sort_keys[0][0] if len(sort_keys) == 1 else None
    descending = bool(sort_keys and sort_keys[0][1])
    check, vars_of = ctx.check, ctx.vars

    def run(stream):
        docs = _materialize(stream, check)
        if partition_fn is not None:
            groups: dict = {}
            for doc in docs:
                check()
                pv = partition_fn(vars_of(doc))
                if type(pv) is list:
                    raise ExecutionError("An expression used to partition cannot evaluate to value of type array",
                                         code=5340700)
                key = sort_key(None if pv is MISSING else pv)
                groups.setdefault(key, []).append(doc)
            partitions = [groups[k] for k in sorted(groups)]
        else:
            partitions = [docs]
        for pdocs in partitions:
            if sort_keys:
                sort_documents(pdocs, sort_keys, check)
            vars_list = [vars_of(d) for d in pdocs]
            sort_values = None
            if single is not None:
                sort_values = [get_nested(d, single) if len(single) > 1 else d.get(single[0], MISSING)
                               for d in pdocs]
            part = _Partition(pdocs, vars_list, sort_values)
            columns = [(parts, fn.compute(part, descending, check)) for parts, fn in outputs]
            for i, doc in enumerate(pdocs):
                check()
                out = doc
                for parts, values in columns:
                    out = set_nested(out, parts, values[i])
                yield out
    return run


# ---------------------------------------------------------------- $fill
# https://www.mongodb.com/docs/manual/reference/operator/aggregation/fill/


@registry.implements(STAGE, "$fill")
def compile_fill(spec, ctx):
    """`{value}` fills are `$ifNull`; `{method}` fills run as `$setWindowFields` with $locf / $linearFill."""
    _check_keys("$fill", spec, {"sortBy", "partitionBy", "partitionByFields", "output"}, code=6050200)
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


__all__ = ["round_up", "round_down", "GRANULARITIES", "compile_bucket", "compile_bucket_auto",
           "compile_graph_lookup", "compile_union_with", "compile_documents", "compile_redact", "compile_densify",
           "compile_set_window_fields", "compile_fill"]
