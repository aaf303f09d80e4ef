"""Arithmetic, bitwise and accumulator-style expression operators.

Manual: https://www.mongodb.com/docs/manual/reference/operator/aggregation/#arithmetic-expression-operators
A null or missing operand makes the result null; a non-numeric operand is an
error with MongoDB's wording. Result types follow `nlq.mql.numeric` (int ->
long -> double -> decimal, promoted on overflow).
"""

from __future__ import annotations

import datetime as _dt
import decimal
import math
from decimal import Decimal

from bson.decimal128 import Decimal128
from bson.int64 import Int64

from nlq.errors import ExecutionError
from nlq.mql import numeric
from nlq.mql.expressions import CHECK_EVERY, check_deadline, compile_args, compile_named, paced, unary_operator
from nlq.mql.numeric import (DECIMAL, DOUBLE, INT, INT32_MAX, INT32_MIN, LONG, as_decimal, check_method,
                              check_percentiles, integer_result, kind, make_decimal, percentiles, std_dev)
from nlq.mql.registry import EXPRESSION, implements
from nlq.mql.values import MISSING, bson_type, date_to_millis, is_number, millis_to_date, sort_key

# Wide enough to quantize any Decimal128 or double exactly before rounding back.
_EXACT = decimal.Context(prec=1000, Emax=999_999, Emin=-999_999, traps=[decimal.InvalidOperation])


def _is_date(v) -> bool:
    return isinstance(v, _dt.datetime)


def _round_half_away(x: float) -> int:
    """llround: the nearest integer, halves away from zero."""
    return int(math.floor(x + 0.5)) if x >= 0 else -int(math.floor(-x + 0.5))


def _date_plus(date, ms: int):
    try:
        return millis_to_date(date_to_millis(date) + ms)
    except (OverflowError, ValueError):
        raise ExecutionError("date overflow in date arithmetic") from None


# --- $add $subtract $multiply $divide $mod -----------------------------------

class _AddState:
    """MongoDB 7/8's `$add` accumulation (expression.cpp, AddState), operand by operand:
    ints/longs sum exactly and overflow to double, doubles add one by one, a decimal
    converts the running total; with a date every number becomes milliseconds
    (doubles rounded half away from zero, each on its own)."""

    __slots__ = ("width", "ints", "double", "decimal", "date_ms")

    def __init__(self):
        self.width = INT
        self.ints = 0
        self.double = 0.0
        self.decimal = None
        self.date_ms = None

    def add(self, v) -> None:
        if self.date_ms is not None:
            self.date_ms = _checked_ms(self.date_ms + _to_millis(v))
            return
        k = kind(v)
        old = self.width
        if k > old:
            self.width = k
            if k == DOUBLE:
                self.double = float(self.ints)
            elif k == DECIMAL:
                self.decimal = Decimal(self.ints) if old <= LONG else numeric.double_to_decimal(self.double)
        width = self.width
        if width <= LONG:
            total = self.ints + int(v)
            if numeric.INT64_MIN <= total <= numeric.INT64_MAX:
                self.ints = total
            else:  # long overflow: continue in double
                self.width = DOUBLE
                self.double = float(self.ints) + float(v)
        elif width == DOUBLE:
            self.double += float(v)
        else:
            self.decimal = _D.add(self.decimal, as_decimal(v))

    def add_date(self, date) -> None:
        if self.date_ms is not None:
            raise ExecutionError("only one date allowed in an $add expression", code=16612)
        self.date_ms = _to_millis(self.value())
        self.date_ms = _checked_ms(self.date_ms + date_to_millis(date))

    def value(self):
        if self.date_ms is not None:
            return millis_to_date(self.date_ms)
        if self.width <= LONG:
            return integer_result(self.ints, self.width)
        if self.width == DOUBLE:
            return self.double
        return make_decimal(self.decimal)


def _to_millis(v) -> int:
    """A number as milliseconds to add to a date: doubles llround-ed, decimals rounded half to even."""
    t = type(v)
    if t is float:
        if not -2.0**63 <= v < 2.0**63:
            raise ExecutionError("date overflow")
        return _round_half_away(v)
    if t is Decimal128:
        d = v.to_decimal()
        if not d.is_finite():
            raise ExecutionError("date overflow")
        return _checked_ms(int(d.to_integral_value(rounding=decimal.ROUND_HALF_EVEN)))
    return int(v)


def _checked_ms(ms: int) -> int:
    if not numeric.INT64_MIN <= ms <= numeric.INT64_MAX:
        raise ExecutionError("date overflow")
    return ms


@implements(EXPRESSION, "$add")
def _add(args):
    fns = compile_args(args, name="$add")

    def evaluate(vars):
        ints = 0  # fast path: plain Python ints only (the common case)
        state = None
        for fn in fns:
            v = fn(vars)
            t = type(v)
            if t is int and state is None and INT32_MIN <= v <= INT32_MAX:
                ints += v
                continue
            if v is None or v is MISSING:
                return None
            if state is None:
                state = _AddState()
                state.ints = ints
            if t is int or t is float or t is Int64 or t is Decimal128:
                state.add(v)
            elif _is_date(v):
                state.add_date(v)
            else:
                raise ExecutionError(f"$add only supports numeric or date types, not {bson_type(v)}", code=16554)
        if state is None:
            return integer_result(ints, INT)
        try:
            return state.value()
        except (OverflowError, ValueError):  # beyond the dates Python can hold
            raise ExecutionError("date overflow") from None
    return evaluate


@implements(EXPRESSION, "$subtract")
def _subtract(args):
    left, right = compile_args(args, name="$subtract", min_args=2, max_args=2)

    def evaluate(vars):
        a, b = left(vars), right(vars)
        if a is None or a is MISSING or b is None or b is MISSING:
            return None
        if is_number(a):
            if is_number(b):
                return numeric.subtract(a, b)
            if _is_date(b):
                raise ExecutionError(f"can't $subtract date from {bson_type(a)}", code=16556)
        elif _is_date(a):
            if _is_date(b):
                return Int64(date_to_millis(a) - date_to_millis(b))
            if is_number(b):
                return _date_plus(a, -_to_millis(b))
        raise ExecutionError(f"can't $subtract {bson_type(b)} from {bson_type(a)}", code=16556)
    return evaluate


@implements(EXPRESSION, "$multiply")
def _multiply(args):
    fns = compile_args(args, name="$multiply")
    multiply = numeric.multiply

    def evaluate(vars):
        product = 1
        exact = True  # only plain Python ints so far: multiply exactly, type at the end
        wide = False
        for fn in fns:
            v = fn(vars)
            t = type(v)
            if t is int and exact:
                if not INT32_MIN <= v <= INT32_MAX:
                    wide = True
                if numeric.INT64_MIN <= product * v <= numeric.INT64_MAX:
                    product *= v
                else:  # long overflow: continue in double, as MongoDB does
                    product, exact = float(product) * float(v), False
            elif t is int or t is float or t is Int64 or t is Decimal128:
                if exact:
                    product = integer_result(product, LONG if wide else INT)
                    exact = False
                product = multiply(product, v)
            elif v is None or v is MISSING:
                return None
            else:
                raise ExecutionError(f"$multiply only supports numeric types, not {bson_type(v)}", code=16555)
        return integer_result(product, LONG if wide else INT) if exact else product
    return evaluate


def _binary_numeric(op: str, compute):
    """The compiler of a two-operand numeric operator: null when an operand is null or
    missing, an error for a non-number, else `compute(a, b)`."""
    def compile_(args):
        left, right = compile_args(args, name=op, min_args=2, max_args=2)

        def evaluate(vars):
            a, b = left(vars), right(vars)
            if a is None or a is MISSING or b is None or b is MISSING:
                return None
            if not is_number(a) or not is_number(b):
                raise ExecutionError(f"{op} only supports numeric types, not {bson_type(a)} and {bson_type(b)}")
            return compute(a, b)
        return evaluate
    return compile_


def _divide(a, b):
    if numeric.is_zero(b):
        raise ExecutionError("can't $divide by zero", code=16608)
    if type(a) is Decimal128 or type(b) is Decimal128:
        return make_decimal(numeric.DECIMAL_CONTEXT.divide(as_decimal(a), as_decimal(b)))
    return float(a) / float(b)


def _mod(a, b):
    if numeric.is_zero(b):
        raise ExecutionError("can't $mod by zero", code=16610)
    k = max(kind(a), kind(b))
    if k <= LONG:
        r = abs(int(a)) % abs(int(b))
        return integer_result(-r if a < 0 else r, k)
    if k == DOUBLE:
        x, y = float(a), float(b)
        return math.nan if math.isinf(x) or math.isnan(y) else math.fmod(x, y)
    return make_decimal(numeric.DECIMAL_CONTEXT.remainder(as_decimal(a), as_decimal(b)))


implements(EXPRESSION, "$divide")(_binary_numeric("$divide", _divide))
implements(EXPRESSION, "$mod")(_binary_numeric("$mod", _mod))


# --- one-argument numeric operators ------------------------------------------------

def _unary(op: str, compute):
    """The compiler of a one-operand numeric operator."""
    def numeric_only(v):
        if not is_number(v):
            raise ExecutionError(f"{op} only supports numeric types, not {bson_type(v)}")
        return compute(v)
    return unary_operator(op, numeric_only)


def _abs_value(v):
    k = kind(v)
    if k <= LONG:
        if v == numeric.INT64_MIN:
            raise ExecutionError("can't take $abs of long long min")
        return integer_result(abs(int(v)), k)
    if k == DOUBLE:
        return abs(v)
    return make_decimal(abs(v.to_decimal()))


def _integral(rounding, float_fn):
    def compute(v):
        t = type(v)
        if t is float:
            return float(float_fn(v)) if math.isfinite(v) else v
        if t is Decimal128:
            d = v.to_decimal()
            return make_decimal(d.to_integral_value(rounding=rounding)) if d.is_finite() else v
        return v
    return compute


def _float_or_decimal(float_fn, decimal_fn):
    def compute(v):
        if type(v) is Decimal128:
            return make_decimal(decimal_fn(v.to_decimal()))
        try:
            return float_fn(float(v))
        except OverflowError:
            return math.inf
    return compute


def _positive(op: str, compute, strict: bool = True):
    """Reject arguments <= 0 (`strict`) or < 0 before `compute`, as $ln/$log10/$sqrt do."""
    message = "must be a positive number" if strict else "must be greater than or equal to 0"

    def checked(v):
        x = v.to_decimal() if type(v) is Decimal128 else v
        if x == x and (x <= 0 if strict else x < 0):  # NaN passes through (and stays NaN)
            raise ExecutionError(f"{op}'s argument {message}, but is {v}")
        return compute(v)
    return checked


_D = numeric.DECIMAL_CONTEXT
_UNARY = {
    "$abs": _abs_value,
    "$ceil": _integral(decimal.ROUND_CEILING, math.ceil),
    "$floor": _integral(decimal.ROUND_FLOOR, math.floor),
    "$exp": _float_or_decimal(math.exp, _D.exp),
    "$ln": _positive("$ln", _float_or_decimal(math.log, _D.ln)),
    "$log10": _positive("$log10", _float_or_decimal(math.log10, _D.log10)),
    "$sqrt": _positive("$sqrt", _float_or_decimal(math.sqrt, _D.sqrt), strict=False),
}


for _name, _compute in _UNARY.items():
    implements(EXPRESSION, _name)(_unary(_name, _compute))


def _log(n, base):
    dn, db = numeric.as_decimal(n), numeric.as_decimal(base)
    if dn == dn and not dn > 0:  # NaN passes through (and stays NaN)
        raise ExecutionError(f"$log's argument must be a positive number, but is {n}")
    if db == db and (not db > 0 or db == 1):
        raise ExecutionError(f"$log's base must be a positive number not equal to 1, but is {base}")
    if type(n) is Decimal128 or type(base) is Decimal128:
        return make_decimal(_D.divide(_D.ln(dn), _D.ln(db)))
    return math.log(float(n)) / math.log(float(base))


implements(EXPRESSION, "$log")(_binary_numeric("$log", _log))


@implements(EXPRESSION, "$pow")
def _pow(args):
    base_fn, exp_fn = compile_args(args, name="$pow", min_args=2, max_args=2)

    def evaluate(vars):
        base, exp = base_fn(vars), exp_fn(vars)
        if base is None or base is MISSING or exp is None or exp is MISSING:
            return None
        if not is_number(base):
            raise ExecutionError(f"$pow's base must be numeric, not {bson_type(base)}")
        if not is_number(exp):
            raise ExecutionError(f"$pow's exponent must be numeric, not {bson_type(exp)}")
        kb, ke = kind(base), kind(exp)
        if kb == DECIMAL or ke == DECIMAL:
            db, de = as_decimal(base), as_decimal(exp)
            if db.is_zero() and not de.is_nan() and de < 0:
                raise ExecutionError("$pow cannot take a base of 0 and a negative exponent")
            try:
                return make_decimal(_D.power(db, de))
            except decimal.InvalidOperation:
                return make_decimal(Decimal("NaN"))
        if kb <= LONG and ke <= LONG:
            b, e = int(base), int(exp)
            if b == 0 and e < 0:
                raise ExecutionError("$pow cannot take a base of 0 and a negative exponent")
            if e < 0:
                if b == 1:
                    return integer_result(1, max(kb, ke))
                if b == -1:
                    return integer_result(1 if e % 2 == 0 else -1, max(kb, ke))
                return float(b) ** e
            if abs(b) > 1 and e > 128:  # certainly beyond 64 bits: avoid a huge exact power
                return _float_pow(float(b), float(e))
            return integer_result(b ** e, max(kb, ke), _float_pow(float(b), float(e)))
        fb, fe = float(base), float(exp)
        if fb == 0 and fe < 0:
            raise ExecutionError("$pow cannot take a base of 0 and a negative exponent")
        return _float_pow(fb, fe)
    return evaluate


def _float_pow(b: float, e: float) -> float:
    try:
        return math.pow(b, e)
    except OverflowError:
        return math.inf if b > 0 or e % 2 == 0 else -math.inf
    except ValueError:
        return math.nan


# --- $round $trunc -----------------------------------------------------------------

def _round_like(op: str, rounding):
    def compile_(args):
        fns = compile_args(args, name=op, min_args=1, max_args=2)
        number_fn = fns[0]
        place_fn = fns[1] if len(fns) == 2 else (lambda vars: 0)

        def evaluate(vars):
            v = number_fn(vars)
            place = place_fn(vars)
            if v is None or v is MISSING or place is None or place is MISSING:
                return None
            if not is_number(v):
                raise ExecutionError(f"{op} only supports numeric types, not {bson_type(v)}")
            p = numeric.int_value(op, "place", place) if is_number(place) else None
            if p is None or not -20 < p < 100:
                raise ExecutionError(f"{op}'s place argument must be an integer between -20 and 100, but is {place!r}")
            return _round_to(v, p, rounding)
        return evaluate
    return compile_


def _round_to(v, place: int, rounding):
    k = kind(v)
    if k <= LONG and place >= 0:
        return v
    if k == DOUBLE and not math.isfinite(v):
        return v
    d = v.to_decimal() if k == DECIMAL else Decimal(v)
    if not d.is_finite():
        return v
    sign, digits, exponent = d.as_tuple()
    if exponent >= -place and (k != DECIMAL or len(digits) + exponent + place > 34):
        # Nothing below the rounding place: the value is unchanged (a decimal is padded with
        # zeros to `place` digits while its 34-digit precision allows, like Decimal128.quantize).
        return v
    q = d.quantize(Decimal(1).scaleb(-place), rounding=rounding, context=_EXACT)
    if k <= LONG:
        return integer_result(int(q), k)
    if k == DOUBLE:
        return float(q)
    return make_decimal(q)


implements(EXPRESSION, "$round")(_round_like("$round", decimal.ROUND_HALF_EVEN))
implements(EXPRESSION, "$trunc")(_round_like("$trunc", decimal.ROUND_DOWN))


# --- bitwise ---------------------------------------------------------------------------

def _bitwise(op: str, identity: int, combine):
    def compile_(args):
        fns = compile_args(args, name=op)

        def evaluate(vars):
            result, width = identity, INT
            for fn in fns:
                v = fn(vars)
                if v is None or v is MISSING:
                    return None
                k = kind(v)
                if k is None or k > LONG:
                    raise ExecutionError(f"{op} only supports int and long operands.")
                if k == LONG:
                    width = LONG
                result = combine(result, int(v))
            return Int64(result) if width == LONG else result
        return evaluate
    return compile_


implements(EXPRESSION, "$bitAnd")(_bitwise("$bitAnd", -1, lambda a, b: a & b))
implements(EXPRESSION, "$bitOr")(_bitwise("$bitOr", 0, lambda a, b: a | b))
implements(EXPRESSION, "$bitXor")(_bitwise("$bitXor", 0, lambda a, b: a ^ b))


def _bit_not(v):
    k = kind(v)
    if k is None or k > LONG:
        raise ExecutionError(f"$bitNot only supports int and long, not: {bson_type(v)}.")
    return Int64(~int(v)) if k == LONG else ~int(v)


implements(EXPRESSION, "$bitNot")(unary_operator("$bitNot", _bit_not))


# --- accumulators as expressions: $sum $avg $min $max $stdDevPop $stdDevSamp ---------

def _operands(name: str, args):
    """One operand that is an array is traversed; a list of operands is not
    (manual, $sum: "With a list of expressions as its operand, if any of the
    expressions resolves to an array, $sum does not traverse into the array")."""
    fns = compile_args(args, name=name)
    if len(fns) == 1:
        (fn,) = fns

        def values(vars):
            v = fn(vars)
            return paced(v) if type(v) is list else (v,)
        return values
    return lambda vars: [fn(vars) for fn in fns]


def _summed(name: str, finish):
    """$sum / $avg: `finish` (the sum or the mean) of the numeric operands (others are ignored)."""
    def compile_(args):
        values = _operands(name, args)

        def evaluate(vars):
            total = numeric.Summation()
            for v in values(vars):
                if is_number(v):
                    total.add(v)
            return finish(total)
        return evaluate
    return compile_


implements(EXPRESSION, "$sum")(_summed("$sum", numeric.Summation.result))
implements(EXPRESSION, "$avg")(_summed("$avg", numeric.Summation.mean))


def _extreme(name: str, pick):
    def compile_(args):
        values = _operands(name, args)

        def evaluate(vars):
            present = [v for v in values(vars) if v is not None and v is not MISSING]
            if len(present) <= CHECK_EVERY:
                return pick(present, key=sort_key) if present else None
            best = []  # the pick of each run (the first of equals wins, as in one pass)
            for start in range(0, len(present), CHECK_EVERY):
                check_deadline()
                best.append(pick(present[start:start + CHECK_EVERY], key=sort_key))
            return pick(best, key=sort_key)
        return evaluate
    return compile_


implements(EXPRESSION, "$min")(_extreme("$min", min))
implements(EXPRESSION, "$max")(_extreme("$max", max))


def _std_dev_expression(name: str, sample: bool):
    def compile_(args):
        values = _operands(name, args)
        return lambda vars: std_dev(values(vars), sample)
    return compile_


implements(EXPRESSION, "$stdDevPop")(_std_dev_expression("$stdDevPop", False))
implements(EXPRESSION, "$stdDevSamp")(_std_dev_expression("$stdDevSamp", True))


def _percentiles(input_fn, ps: list[float], single: bool):
    """$median / $percentile over `input` (an array, or an array of expressions). Exact, as the
    manual says of the expression forms; with no numeric input: null ($median) or nulls ($percentile)."""
    def evaluate(vars):
        v = input_fn(vars)
        items = paced(v) if type(v) is list else (v,)
        return percentiles([numeric.to_float(x) for x in items if is_number(x)], ps, single)
    return evaluate


@implements(EXPRESSION, "$median")
def _median(args):
    named = compile_named(args, name="$median", required=("input", "method"))
    check_method("$median", args["method"])
    return _percentiles(named["input"], [0.5], single=True)


@implements(EXPRESSION, "$percentile")
def _percentile(args):
    named = compile_named(args, name="$percentile", required=("input", "p", "method"))
    check_method("$percentile", args["method"])
    return _percentiles(named["input"], check_percentiles("$percentile", args["p"]), single=False)
