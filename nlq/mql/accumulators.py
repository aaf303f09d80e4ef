"""Accumulators of `$group`, `$bucket`, `$bucketAuto` and `$setWindowFields`.

`compile_accumulator(name, arg)` compiles the argument expression once and
returns a factory; each call of the factory makes a fresh state with
`.add(vars)` (evaluate the argument against `vars` and fold it in) and
`.result()`:

    >>> acc = compile_accumulator("$sum", "$n")()
    >>> for n in (1, 2.5, "x"): acc.add({"CURRENT": {"n": n}})
    >>> acc.result()
    3.5

Semantics follow the manual's accumulator pages
(https://www.mongodb.com/docs/manual/reference/operator/aggregation-pipeline/, "Accumulators"):
`$sum`/`$avg`/`$stdDev*` ignore non-numbers, `$min`/`$max` ignore null and
missing, `$push`/`$addToSet` skip missing values, `$first`/`$last` keep a
missing value as null.
"""

from __future__ import annotations

from typing import Any, Callable

from bson.decimal128 import Decimal128
from bson.int64 import Int64

from nlq.errors import ExecutionError
from nlq.mql import registry
from nlq.mql.expressions import check_named, compile_expression
from nlq.mql.numeric import (Summation, Variance, check_method, check_percentiles, integer_result, kind,
                              percentiles, positive_n, to_float)
from nlq.mql.registry import ACCUMULATOR
from nlq.mql.stages.ordering import Descending, parse_sort_spec, sort_value_key
from nlq.mql.values import MISSING, bson_type, group_key, is_number, sort_key

Factory = Callable[[], Any]
_NUMERIC = {int, float, Int64, Decimal128}


def compile_accumulator(name: str, arg) -> Factory:
    """Compile `{name: arg}` of a `$group` field into a factory of accumulator states."""
    compiler = registry.resolve(
        name, ACCUMULATOR, unknown="unknown group operator '{name}'{suggestion}",
        other_kind="{name} is not an accumulator (it is a {kind} operator)",
        unsupported="the embedded engine does not support the accumulator {name}")
    return compiler(arg)


# --- $sum / $avg -----------------------------------------------------------

class _Sum:
    __slots__ = ("fn", "total")

    def __init__(self, fn):
        self.fn = fn
        self.total = Summation()

    def add(self, vars):
        v = self.fn(vars)
        t = type(v)
        if t is int or t is float or t is Int64 or t is Decimal128:
            self.total.add(v)

    def add_values(self, values: list):
        """Fold in already evaluated arguments, in order (the fused `$unwind` + `$group`)."""
        self.total.add_many([v for v in values if type(v) in _NUMERIC])

    def result(self):
        return self.total.result()


class _Avg(_Sum):
    __slots__ = ()

    def result(self):
        return self.total.mean()


class _Count:
    __slots__ = ("n",)

    def __init__(self):
        self.n = 0

    def add(self, vars):
        self.n += 1

    def add_values(self, values: list):
        self.n += len(values)

    def result(self):
        return self.n if self.n < 2**31 else Int64(self.n)


class _ConstSum(_Count):
    """`{$sum: 1}` (any integer constant) counts without evaluating anything per document."""

    __slots__ = ("constant",)

    def __init__(self, constant: int):
        super().__init__()
        self.constant = constant

    def result(self):
        return integer_result(self.constant * self.n, kind(self.constant))


class _ConstDoubleSum:
    """`{$sum: 2.5}` (a double constant): the server adds the constant plainly, without the
    compensated summation of `$sum` over values (its constant-sum shortcut)."""

    __slots__ = ("constant", "total")

    def __init__(self, constant: float):
        self.constant = constant
        self.total = 0.0

    def add(self, vars):
        self.total += self.constant

    def add_values(self, values: list):
        for _ in values:
            self.total += self.constant

    def result(self):
        return self.total


@registry.implements(ACCUMULATOR, "$sum")
def _sum(arg) -> Factory:
    if type(arg) is int or type(arg) is Int64:
        return lambda: _ConstSum(arg)
    if type(arg) is float:
        return lambda: _ConstDoubleSum(arg)
    fn = compile_expression(arg)
    return lambda: _Sum(fn)


@registry.implements(ACCUMULATOR, "$avg")
def _avg(arg) -> Factory:
    fn = compile_expression(arg)
    return lambda: _Avg(fn)


@registry.implements(ACCUMULATOR, "$count")
def _count(arg) -> Factory:
    if arg != {} or type(arg) is not dict:
        raise ExecutionError("$count takes no arguments, i.e. $count:{}")
    return _Count


# --- $min / $max -----------------------------------------------------------

class _Min:
    __slots__ = ("fn", "best", "key")

    def __init__(self, fn):
        self.fn = fn
        self.best = None
        self.key = None

    def add(self, vars):
        v = self.fn(vars)
        if v is None or v is MISSING:
            return
        k = sort_key(v)
        if self.key is None or k < self.key:
            self.best, self.key = v, k

    def add_values(self, values: list):
        for v in values:
            self.add_value(v)

    def add_value(self, v):
        if v is None or v is MISSING:
            return
        k = sort_key(v)
        if self.key is None or k < self.key:
            self.best, self.key = v, k

    def result(self):
        return self.best


class _Max(_Min):
    __slots__ = ()

    def add(self, vars):
        v = self.fn(vars)
        if v is None or v is MISSING:
            return
        k = sort_key(v)
        if self.key is None or k > self.key:
            self.best, self.key = v, k

    def add_value(self, v):
        if v is None or v is MISSING:
            return
        k = sort_key(v)
        if self.key is None or k > self.key:
            self.best, self.key = v, k


@registry.implements(ACCUMULATOR, "$min")
def _min(arg) -> Factory:
    fn = compile_expression(arg)
    return lambda: _Min(fn)


@registry.implements(ACCUMULATOR, "$max")
def _max(arg) -> Factory:
    fn = compile_expression(arg)
    return lambda: _Max(fn)


# --- $first / $last / $push / $addToSet / $mergeObjects --------------------

class _First:
    __slots__ = ("fn", "value", "seen")

    def __init__(self, fn):
        self.fn = fn
        self.value = None
        self.seen = False

    def add(self, vars):
        if not self.seen:
            self.seen = True
            v = self.fn(vars)
            self.value = None if v is MISSING else v

    def add_values(self, values: list):
        if not self.seen and values:
            self.seen = True
            v = values[0]
            self.value = None if v is MISSING else v

    def result(self):
        return self.value


class _Last:
    __slots__ = ("fn", "value")

    def __init__(self, fn):
        self.fn = fn
        self.value = None

    def add(self, vars):
        v = self.fn(vars)
        self.value = None if v is MISSING else v

    def add_values(self, values: list):
        if values:
            v = values[-1]
            self.value = None if v is MISSING else v

    def result(self):
        return self.value


class _Push:
    __slots__ = ("fn", "items")

    def __init__(self, fn):
        self.fn = fn
        self.items = []

    def add(self, vars):
        v = self.fn(vars)
        if v is not MISSING:
            self.items.append(v)

    def add_values(self, values: list):
        self.items.extend([v for v in values if v is not MISSING])

    def result(self):
        return self.items


class _AddToSet:
    __slots__ = ("fn", "items", "seen")

    def __init__(self, fn):
        self.fn = fn
        self.items = []
        self.seen = set()

    def add(self, vars):
        v = self.fn(vars)
        if v is MISSING:
            return
        k = group_key(v)
        if k not in self.seen:
            self.seen.add(k)
            self.items.append(v)

    def add_values(self, values: list):
        for v in values:
            if v is not MISSING:
                k = group_key(v)
                if k not in self.seen:
                    self.seen.add(k)
                    self.items.append(v)

    def result(self):
        return self.items


class _MergeObjects:
    __slots__ = ("fn", "merged")

    def __init__(self, fn):
        self.fn = fn
        self.merged = {}

    def add(self, vars):
        v = self.fn(vars)
        if v is None or v is MISSING:
            return
        if type(v) is not dict:
            raise ExecutionError(f"$mergeObjects requires object inputs, but input {v!r} is of type {bson_type(v)}")
        self.merged.update(v)

    def result(self):
        return self.merged


def _simple(cls):
    def compile_(arg) -> Factory:
        fn = compile_expression(arg)
        return lambda: cls(fn)
    return compile_


for _name, _cls in (("$first", _First), ("$last", _Last), ("$push", _Push), ("$addToSet", _AddToSet),
                    ("$mergeObjects", _MergeObjects)):
    registry.implements(ACCUMULATOR, _name)(_simple(_cls))


# --- $stdDevPop / $stdDevSamp ----------------------------------------------

class _StdDev:
    __slots__ = ("fn", "sample", "variance")

    def __init__(self, fn, sample: bool):
        self.fn = fn
        self.sample = sample
        self.variance = Variance()

    def add(self, vars):
        v = self.fn(vars)
        t = type(v)
        if t is int or t is float or t is Int64:
            self.variance.push(float(v))
        elif t is Decimal128:
            self.variance.push(to_float(v))

    def result(self):
        return self.variance.std_dev(self.sample)


@registry.implements(ACCUMULATOR, "$stdDevPop")
def _std_dev_pop(arg) -> Factory:
    fn = compile_expression(arg)
    return lambda: _StdDev(fn, False)


@registry.implements(ACCUMULATOR, "$stdDevSamp")
def _std_dev_samp(arg) -> Factory:
    fn = compile_expression(arg)
    return lambda: _StdDev(fn, True)


# --- n-valued accumulators: $firstN $lastN $maxN $minN $top(N) $bottom(N) -------

def _compile_n(op: str, args: dict):
    if "n" not in args:
        raise ExecutionError(f"{op} requires an 'n' field")
    spec = args["n"]
    if is_number(spec) and not isinstance(spec, bool):
        n = positive_n(op, spec)
        return lambda vars: n
    fn = compile_expression(spec)
    return lambda vars: positive_n(op, fn(vars))


def _check_fields(op: str, args, required: tuple[str, ...]):
    if type(args) is not dict:
        raise ExecutionError(f"specification must be an object; found {args!r}")
    check_named(args, name=op, required=required)


class _FirstN:
    __slots__ = ("fn", "n_fn", "n", "items")

    def __init__(self, fn, n_fn):
        self.fn, self.n_fn = fn, n_fn
        self.n = None
        self.items = []

    def add(self, vars):
        if self.n is None:
            self.n = self.n_fn(vars)
        if len(self.items) < self.n:
            v = self.fn(vars)
            self.items.append(None if v is MISSING else v)

    def result(self):
        return self.items


class _LastN(_FirstN):
    __slots__ = ()

    def add(self, vars):
        if self.n is None:
            self.n = self.n_fn(vars)
        v = self.fn(vars)
        self.items.append(None if v is MISSING else v)
        if len(self.items) > 2 * self.n:
            del self.items[:-self.n]

    def result(self):
        return self.items[-self.n:] if self.n is not None else []


class _MinN(_FirstN):
    """Keeps the n smallest non-null values (ascending); `_MaxN` the n largest (descending)."""

    __slots__ = ()
    descending = False

    def add(self, vars):
        if self.n is None:
            self.n = self.n_fn(vars)
        v = self.fn(vars)
        if v is None or v is MISSING:
            return
        self.items.append(v)
        if len(self.items) > 2 * self.n:
            self.items = self._ordered()[:self.n]

    def _ordered(self):
        return sorted(self.items, key=sort_key, reverse=self.descending)

    def result(self):
        return self._ordered()[:self.n] if self.n is not None else []


class _MaxN(_MinN):
    __slots__ = ()
    descending = True


def _n_input(cls, op):
    def compile_(args) -> Factory:
        _check_fields(op, args, ("input", "n"))
        fn = compile_expression(args["input"])
        n_fn = _compile_n(op, args)
        return lambda: cls(fn, n_fn)
    return compile_


for _name, _cls in (("$firstN", _FirstN), ("$lastN", _LastN), ("$minN", _MinN), ("$maxN", _MaxN)):
    registry.implements(ACCUMULATOR, _name)(_n_input(_cls, _name))


def compile_sort_key(op: str, sort_by) -> Callable[[dict], tuple]:
    """A key function over documents for the `sortBy` of $top/$bottom(N): the $sort stage's order."""
    fields = parse_sort_spec(sort_by, op)

    def key(doc):
        return tuple(Descending(sort_value_key(doc, parts, True)) if descending else sort_value_key(doc, parts, False)
                     for parts, descending in fields)
    return key


class _TopN:
    """The first (top) or last (bottom) n documents in `sortBy` order; outputs `output`."""

    __slots__ = ("spec", "n", "items", "seq")

    def __init__(self, spec):
        self.spec = spec
        self.n = None
        self.items = []
        self.seq = 0

    def add(self, vars):
        out_fn, key_fn, n_fn, bottom, _ = self.spec
        if self.n is None:
            self.n = n_fn(vars)
        current = vars["CURRENT"]
        v = out_fn(vars)
        self.seq += 1
        self.items.append((key_fn(current), self.seq, None if v is MISSING else v))
        if len(self.items) > 2 * self.n:
            self._trim()

    def _trim(self):
        self.items.sort(key=lambda t: (t[0], t[1]))
        bottom = self.spec[3]
        self.items = self.items[-self.n:] if bottom else self.items[:self.n]

    def result(self):
        if self.n is None:
            return None if self.spec[4] else []
        self._trim()
        values = [t[2] for t in self.items]
        if self.spec[4]:  # $top / $bottom: a single value
            return values[0] if values else None
        return values


def _top_bottom(op: str, bottom: bool, single: bool):
    def compile_(args) -> Factory:
        _check_fields(op, args, ("sortBy", "output") if single else ("sortBy", "output", "n"))
        out_fn = compile_expression(args["output"])
        key_fn = compile_sort_key(op, args["sortBy"])
        n_fn = (lambda vars: 1) if single else _compile_n(op, args)
        spec = (out_fn, key_fn, n_fn, bottom, single)
        return lambda: _TopN(spec)
    return compile_


for _name, _bottom, _single in (("$top", False, True), ("$bottom", True, True),
                                ("$topN", False, False), ("$bottomN", True, False)):
    registry.implements(ACCUMULATOR, _name)(_top_bottom(_name, _bottom, _single))


# --- accumulators over a value computed elsewhere (the fused `$unwind` + `$group`) ---

# The states that never raise and fold already evaluated arguments with `add_values(values)`
# (the same state, bit for bit, as `add` over each in turn).
_VALUE_STATES = {"$sum": _Sum, "$avg": _Avg, "$min": _Min, "$max": _Max, "$first": _First, "$last": _Last,
                 "$push": _Push, "$addToSet": _AddToSet}


def is_field_path(arg) -> bool:
    """Whether an argument is a plain field path (`$a.b`, not a `$$variable`)."""
    return type(arg) is str and len(arg) > 1 and arg[0] == "$" and arg[1] != "$"


def compile_values(name: str, arg) -> Factory | None:
    """A factory of states of `{name: arg}` folding already evaluated arguments with
    `add_values(values)` (the arguments of consecutive documents, in order), or None when the
    accumulator is not one of those or its argument is not one field path (or, for `$sum`, a
    numeric constant; for `$count`, nothing). Only accumulators that never raise qualify, so
    folding later than the documents arrive changes no error. The caller has compiled
    `{name: arg}` the ordinary way first (its errors are raised already)."""
    if name == "$count":
        return _Count
    if name == "$sum" and type(arg) in (int, Int64, float):
        return _sum(arg)
    cls = _VALUE_STATES.get(name)
    if cls is None or not is_field_path(arg):
        return None
    return lambda: cls(None)


# --- $median / $percentile -------------------------------------------------

class _Percentile:
    __slots__ = ("fn", "values", "ps", "single")

    def __init__(self, fn, ps, single):
        self.fn, self.ps, self.single = fn, ps, single
        self.values: list[float] = []

    def add(self, vars):
        v = self.fn(vars)
        if is_number(v):
            self.values.append(to_float(v))

    def result(self):
        return percentiles(self.values, self.ps, self.single)


@registry.implements(ACCUMULATOR, "$median")
def _median(args) -> Factory:
    _check_fields("$median", args, ("input", "method"))
    check_method("$median", args["method"])
    fn = compile_expression(args["input"])
    return lambda: _Percentile(fn, [0.5], True)


@registry.implements(ACCUMULATOR, "$percentile")
def _percentile(args) -> Factory:
    _check_fields("$percentile", args, ("input", "p", "method"))
    check_method("$percentile", args["method"])
    ps = check_percentiles("$percentile", args["p"])
    fn = compile_expression(args["input"])
    return lambda: _Percentile(fn, ps, False)


__all__ = ["compile_accumulator", "compile_values", "is_field_path"]
