"""$setWindowFields: partitions, document and range windows, every accumulator
as a window function and the window-only functions ($rank, $denseRank,
$documentNumber, $shift, $locf, $linearFill, $expMovingAvg, $derivative,
$integral, $covariancePop, $covarianceSamp)."""

from __future__ import annotations

import bisect
import datetime as _dt
import math

from bson.decimal128 import Decimal128

from nlq.errors import ExecutionError, UnsupportedOperatorError
from nlq.mql import registry
from nlq.mql.expressions import compile_expression
from nlq.mql.ops_date import add_units
from nlq.mql.registry import STAGE, WINDOW
from nlq.mql.stages.base import (TIME_UNITS, as_float, check_keys, get_nested, integral_number, is_num, materialize,
                                 set_nested, split_path)
from nlq.mql.stages.grouping import compile_accumulator_spec
from nlq.mql.stages.ordering import parse_sort_spec, sort_documents, sort_value_key
from nlq.mql.values import MISSING, bson_type, compare, date_to_millis, is_nullish, sort_key

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
        elif is_num(b) and type(b) is not bool:
            if kind == "documents" and not integral_number(b):
                raise ExecutionError(f"Numeric document-based bounds must be an integer: {b!r}", code=5371005)
            out.append(int(as_float(b)) if kind == "documents" else b)
        else:
            raise ExecutionError(f"Window bounds must be 'unbounded', 'current', or a number: {b!r}", code=5339801)
    lo, hi = out
    if lo != "unbounded" and hi != "unbounded":
        lo_n = 0 if lo == "current" else lo
        hi_n = 0 if hi == "current" else hi
        if compare(lo_n, hi_n) > 0:
            raise ExecutionError("Lower bound must not exceed upper bound", code=5339900)
    unit = window.get("unit")
    if unit is not None and (type(unit) is not str or unit not in TIME_UNITS):
        raise ExecutionError(f"unknown time unit value: {unit}", code=9)
    return _WindowSpec(kind, lo, hi, unit)


def _sort_number(value, unit, what="sortBy"):
    """A numeric position for range windows / derivatives: numbers as floats, dates as milliseconds."""
    if unit is not None:
        if not isinstance(value, _dt.datetime):
            raise ExecutionError(f"Invalid range: Expected the {what} field to be a date, but it was "
                                 f"{bson_type(value)}", code=5429513)
        return date_to_millis(value)
    if not is_num(value):
        raise ExecutionError(f"Invalid range: Expected the {what} field to be a number, but it was "
                             f"{bson_type(value)}", code=5429414)
    return as_float(value)


_CHUNK = 1024  # documents between two deadline checks in the list-building loops below


def _mapped(fn, items: list, check) -> list:
    """`[fn(x) for x in items]`, checking the deadline every _CHUNK items."""
    if len(items) <= _CHUNK:
        return [fn(x) for x in items]
    out: list = []
    for start in range(0, len(items), _CHUNK):
        check()
        out.extend([fn(x) for x in items[start:start + _CHUNK]])
    return out


def _frames(part: _Partition, window: _WindowSpec | None, descending: bool, check):
    """(lo, hi) index pairs, inclusive, one per document (lo > hi for an empty frame)."""
    n = len(part.docs)
    if window is None or (window.lo == "unbounded" and window.hi == "unbounded"):
        return [(0, n - 1)] * n
    if window.kind == "documents":
        out = []
        lo, hi = window.lo, window.hi
        for i in range(n):
            check()
            a = 0 if lo == "unbounded" else i if lo == "current" else max(0, i + lo)
            b = n - 1 if hi == "unbounded" else i if hi == "current" else min(n - 1, i + hi)
            out.append((a, b))
        return out
    if part.sort_values is None:
        raise ExecutionError("Range-based window requires sortBy a single field", code=5339902)
    unit = window.unit
    values = part.sort_values
    keys = _mapped(lambda v: _sort_number(v, unit), values, check)
    sign = -1 if descending else 1
    ordered = [sign * k for k in keys]  # ascending for bisect

    def shifted(i, amount):
        if unit is None:
            return keys[i] + as_float(amount)
        return date_to_millis(add_units(values[i], unit, _whole(amount), None))

    out = []
    for i in range(n):
        check()
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
    f = as_float(v)
    if not integral_number(v):
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
        frames = _frames(part, self.window, descending, check)
        out = [None] * n
        if n == 0:
            return out
        if self.window is None or (self.window.lo == "unbounded" and self.window.hi == "unbounded"):
            acc = self.factory()
            for vars in part.vars:
                check()
                acc.add(vars)
            r = acc.result()
            return [_copy_result(r) if r is not MISSING else None for _ in range(n)]
        if all(a == 0 for a, _ in frames) and all(frames[i][1] <= frames[i + 1][1] for i in range(n - 1)):
            acc = self.factory()
            added = -1
            for i, (_, b) in enumerate(frames):
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
                check()
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
    if not is_num(by) or type(by) is bool or not integral_number(by):
        raise ExecutionError("'$shift:by' field must be an integer, but found " + repr(by), code=5433003)
    by = int(as_float(by))
    out_fn = compile_expression(arg["output"])
    default_spec = arg.get("default")
    default = compile_expression(default_spec)({"CURRENT": {}, "ROOT": {}}) if "default" in arg else None
    default = None if default is MISSING else default

    def compute(part, desc, check):
        n = len(part.docs)
        out = []
        for i in range(n):
            check()
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
            check()
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
        ys = _mapped(fn, part.vars, check)
        xs = part.sort_values
        out = [None if is_nullish(y) else y for y in ys]
        known = [i for i, y in enumerate(ys) if not is_nullish(y)]
        for i in known:
            if not is_num(ys[i]):
                raise ExecutionError(f"Value to $linearFill must be numeric, found {bson_type(ys[i])}",
                                     code=6050106)
        for a, b in zip(known, known[1:]):
            if b - a < 2:
                continue
            unit = "ms" if isinstance(xs[a], _dt.datetime) else None
            xa, xb = _sort_number(xs[a], unit), _sort_number(xs[b], unit)
            ya, yb = as_float(ys[a]), as_float(ys[b])
            for i in range(a + 1, b):
                check()
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
        if not is_num(n_val) or not integral_number(n_val) or as_float(n_val) <= 0:
            raise ExecutionError("'N' field must be a positive integer", code=5433603)
        alpha = 2.0 / (int(as_float(n_val)) + 1)
    else:
        a = arg["alpha"]
        if not is_num(a) or not 0 < as_float(a) < 1:
            raise ExecutionError("'alpha' must be between 0 and 1 (exclusive)", code=5433604)
        alpha = as_float(a)
    fn = compile_expression(arg["input"])

    def compute(part, desc, check):
        out, avg = [], None
        for vars in part.vars:
            check()
            v = fn(vars)
            if is_num(v):
                # the first value is returned as it is; later ones blend as doubles
                avg = v if avg is None else alpha * as_float(v) + (1 - alpha) * as_float(avg)
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


def _x_positions(part, unit, name, check):
    xs = []
    for v in part.sort_values:
        check()
        if isinstance(v, _dt.datetime):
            if unit is None:
                raise ExecutionError(f"{name} where the sortBy is a Date requires a 'unit'", code=5624901)
            xs.append(date_to_millis(v) / _UNIT_MS[unit])
        elif is_num(v):
            if unit is not None:
                raise ExecutionError(f"{name} with 'unit' expects the sortBy field to be a Date", code=5624900)
            xs.append(as_float(v))
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
        xs = _x_positions(part, unit, "$derivative", check)
        ys = _mapped(fn, part.vars, check)
        out = []
        for a, b in _frames(part, window, desc, check):
            check()
            if b <= a or not (is_num(ys[a]) and is_num(ys[b])) or xs[b] == xs[a]:
                out.append(None)
                continue
            out.append((as_float(ys[b]) - as_float(ys[a])) / (xs[b] - xs[a]))
        return out
    return _Fn(compute)


@_window_only("$integral")
def _integral(arg, window, sort_keys):
    _require_sort("$integral", sort_keys, single=True)
    fn, unit = _xy_args("$integral", arg)

    def compute(part, desc, check):
        xs = _x_positions(part, unit, "$integral", check)
        ys = _mapped(fn, part.vars, check)
        out = []
        for a, b in _frames(part, window, desc, check):
            check()
            if a > b:
                out.append(None)
                continue
            total = 0.0
            prev = None
            for j in range(a, b + 1):
                if not is_num(ys[j]):
                    continue
                if prev is not None:
                    total += (xs[j] - xs[prev]) * (as_float(ys[j]) + as_float(ys[prev])) / 2.0
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
            xs = _mapped(x_fn, part.vars, check)
            ys = _mapped(y_fn, part.vars, check)
            out = []
            for a, b in _frames(part, window, desc, check):
                check()
                pairs = [(as_float(xs[j]), as_float(ys[j])) for j in range(a, b + 1)
                         if is_num(xs[j]) and is_num(ys[j])]
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
        raise UnsupportedOperatorError(f"the embedded engine does not support the window function {name}")
    raise ExecutionError(f"Unrecognized window function, {name}", code=5397500)


@registry.implements(STAGE, "$setWindowFields")
def compile_set_window_fields(spec, ctx):
    """Buffers: sorts by (partitionBy, sortBy), computes every output over each partition."""
    check_keys("$setWindowFields", spec, {"partitionBy", "sortBy", "output"}, code=40415)
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
        docs = materialize(stream, check)
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
            vars_list = _mapped(vars_of, pdocs, check)
            sort_values = None
            if single is not None:
                sort_values = _mapped(lambda d: get_nested(d, single) if len(single) > 1 else d.get(single[0], MISSING),
                                      pdocs, check)
            part = _Partition(pdocs, vars_list, sort_values)
            columns = [(parts, fn.compute(part, descending, check)) for parts, fn in outputs]
            for i, doc in enumerate(pdocs):
                check()
                out = doc
                for parts, values in columns:
                    out = set_nested(out, parts, values[i])
                yield out
    return run
