"""Numeric helpers shared by the arithmetic operators and the accumulators.

MongoDB has four numeric types, ordered by width: int (32-bit) < long (64-bit)
< double < decimal (Decimal128). A binary operation promotes to the wider
operand type; an int result that does not fit 32 bits becomes a long, a long
that does not fit 64 bits becomes a double (manual, $sum / $add / $multiply:
"the result type is promoted ... in cases of overflow"). Decimal arithmetic
uses 34 significant digits, like Decimal128.

In Python: int holds an int (or a long when outside the 32-bit range), Int64
a long, float a double, Decimal128 a decimal.

    >>> type(multiply(2**16, 2**16)).__name__   # int * int overflowing 32 bits
    'Int64'
"""

from __future__ import annotations

import decimal
import math
from decimal import Decimal

from bson.decimal128 import Decimal128, create_decimal128_context
from bson.int64 import Int64

from nlq.errors import ExecutionError
from nlq.mql.values import bson_type, is_number

INT, LONG, DOUBLE, DECIMAL = range(4)
INT32_MIN, INT32_MAX = -2**31, 2**31 - 1
INT64_MIN, INT64_MAX = -2**63, 2**63 - 1

# Arithmetic context: 34 digits, wide exponents; results are then fitted into
# Decimal128's exponent range by `make_decimal`.
DECIMAL_CONTEXT = decimal.Context(prec=34, rounding=decimal.ROUND_HALF_EVEN,
                                  Emax=999_999, Emin=-999_999, traps=[])
_D128_CONTEXT = create_decimal128_context()  # traps nothing: overflow gives infinity


def kind(value) -> int | None:
    """INT, LONG, DOUBLE, DECIMAL for a numeric BSON value, None otherwise (bool is not a number)."""
    t = type(value)
    if t is int:
        return INT if INT32_MIN <= value <= INT32_MAX else LONG
    if t is float:
        return DOUBLE
    if t is Int64:
        return LONG
    if t is Decimal128:
        return DECIMAL
    return None


def double_to_decimal(x: float, digits: int = 15) -> Decimal:
    """A double as MongoDB's Decimal128(double) makes it: rounded to `digits` significant
    digits, trailing zeros kept (2.5 -> 2.50000000000000)."""
    if not math.isfinite(x):
        return Decimal(x)
    return Decimal(format(x, f".{digits - 1}e"))


def as_decimal(value) -> Decimal:
    """A numeric value as a Python Decimal, as MongoDB coerces it (doubles to 15 digits)."""
    if type(value) is Decimal128:
        return value.to_decimal()
    if type(value) is float:
        return double_to_decimal(value)
    return Decimal(int(value))


def make_decimal(value: Decimal) -> Decimal128:
    """A Decimal fitted into Decimal128 (34 digits, clamped exponent; overflow -> infinity)."""
    return Decimal128(_D128_CONTEXT.create_decimal(value))


def integer_result(value: int, width: int, fallback=None):
    """An exact integer result of type `width` (INT or LONG), promoted on overflow.

    int -> long when outside 32 bits; long -> double when outside 64 bits
    (`fallback` is the double to use then, default float(value)).
    """
    if width == INT and INT32_MIN <= value <= INT32_MAX:
        return value
    if INT64_MIN <= value <= INT64_MAX:
        return Int64(value)
    return float(value) if fallback is None else fallback


def to_float(value) -> float:
    """A numeric value as a double."""
    if type(value) is Decimal128:
        return float(value.to_decimal())
    return float(value)


def subtract(a, b):
    """a - b with MongoDB's widening and overflow rules (both numeric)."""
    ka, kb = kind(a), kind(b)
    k = ka if ka > kb else kb
    if k <= LONG:
        return integer_result(int(a) - int(b), k)
    if k == DOUBLE:
        return float(a) - float(b)
    return make_decimal(DECIMAL_CONTEXT.subtract(as_decimal(a), as_decimal(b)))


def multiply(a, b):
    """a * b with MongoDB's widening and overflow rules (both numeric)."""
    ka, kb = kind(a), kind(b)
    k = ka if ka > kb else kb
    if k <= LONG:
        return integer_result(int(a) * int(b), k, float(a) * float(b))
    if k == DOUBLE:
        return float(a) * float(b)
    return make_decimal(DECIMAL_CONTEXT.multiply(as_decimal(a), as_decimal(b)))


def is_zero(value) -> bool:
    if type(value) is Decimal128:
        return value.to_decimal().is_zero()
    return value == 0


class Summation:
    """An exact running sum of numeric values with MongoDB's result typing.

    Integers are summed exactly, doubles with Shewchuk's error-free partials
    (what `math.fsum` does, so the sum is correctly rounded, close to
    MongoDB's double-double summation), decimals with 34 digits. The result
    has the widest input type, promoted on overflow (int -> long -> double).
    """

    __slots__ = ("width", "ints", "partials", "special", "decimal", "count")

    def __init__(self):
        self.width = INT
        self.ints = 0
        self.partials: list[float] = []
        self.special = 0.0  # running sum of infinities / NaN
        self.decimal: Decimal | None = None
        self.count = 0

    def add(self, value) -> None:
        """Fold in a numeric value (callers filter out non-numerics)."""
        self.count += 1
        t = type(value)
        if t is int or t is Int64:
            if self.width == INT and (t is Int64 or not INT32_MIN <= value <= INT32_MAX):
                self.width = LONG
            self.ints += int(value)
        elif t is float:
            if self.width < DOUBLE:
                self.width = DOUBLE
            if math.isfinite(value):
                self._add_float(value)
            else:
                self.special += value
        else:
            self.width = DECIMAL
            d = value.to_decimal()
            self.decimal = d if self.decimal is None else DECIMAL_CONTEXT.add(self.decimal, d)

    def _add_float(self, x: float) -> None:
        partials = self.partials
        i = 0
        for y in partials:
            if abs(x) < abs(y):
                x, y = y, x
            hi = x + y
            if not math.isfinite(hi):  # the double sum overflowed: it is ±infinity from now on
                self.special += hi
                self.partials = []
                return
            lo = y - (hi - x)
            if lo:
                partials[i] = lo
                i += 1
            x = hi
        partials[i:] = [x]

    def float_total(self) -> float:
        if self.special:  # an infinity or NaN absorbs every finite addend
            return self.special
        if not self.ints:
            return math.fsum(self.partials)
        high = float(self.ints)  # split so that integers beyond 2**53 still add exactly
        return math.fsum(self.partials + [high, float(self.ints - int(high))])

    def exact_decimal(self) -> Decimal:
        total = Decimal(self.ints)
        if self.partials:
            total = DECIMAL_CONTEXT.add(total, double_to_decimal(math.fsum(self.partials), 34))
        if self.special:
            total = DECIMAL_CONTEXT.add(total, Decimal(self.special))
        if self.decimal is not None:
            total = DECIMAL_CONTEXT.add(total, self.decimal)
        return total

    def result(self):
        """The sum, typed as MongoDB types it (0 when nothing was added)."""
        if self.width <= LONG:
            return integer_result(self.ints, self.width)
        if self.width == DOUBLE:
            return self.float_total()
        return make_decimal(self.exact_decimal())

    def mean(self):
        """The average as a double (a decimal when a decimal was added), None when empty."""
        if not self.count:
            return None
        if self.width == DECIMAL:
            return make_decimal(DECIMAL_CONTEXT.divide(self.exact_decimal(), Decimal(self.count)))
        if self.width <= LONG:
            return self.ints / self.count
        return self.float_total() / self.count


def int_value(op: str, what: str, value) -> int:
    """An integral numeric argument as an int (integral doubles/decimals allowed) within the 32-bit
    range, else an error (MongoDB: "must be representable as a 32-bit integral value")."""
    k = kind(value)
    if k is None:
        raise ExecutionError(f"{op}'s {what} must be a numeric value, but is {bson_type(value)}")
    if k <= LONG:
        n = int(value)
    else:
        v = as_decimal(value) if k == DECIMAL else value
        n = int(v) if (math.isfinite(v) if k == DOUBLE else v.is_finite()) and v == int(v) else None
    if n is None or not INT32_MIN <= n <= INT32_MAX:
        raise ExecutionError(f"{op}'s {what} must be representable as a 32-bit integral value, but is {value}")
    return n


class Variance:
    """Welford's running mean and variance (as doubles), for $stdDevPop / $stdDevSamp."""

    __slots__ = ("n", "mean", "m2")

    def __init__(self):
        self.n = 0
        self.mean = 0.0
        self.m2 = 0.0

    def push(self, x: float) -> None:
        self.n += 1
        delta = x - self.mean
        self.mean += delta / self.n
        self.m2 += delta * (x - self.mean)

    def std_dev(self, sample: bool):
        """The population (or sample) standard deviation, None when there are too few values."""
        n = self.n - 1 if sample else self.n
        if n <= 0:
            return None
        return math.sqrt(max(self.m2, 0.0) / n)


def std_dev(values, sample: bool):
    """The standard deviation of the numeric values among `values` (others are ignored)."""
    acc = Variance()
    for v in values:
        if is_number(v):
            acc.push(to_float(v))
    return acc.std_dev(sample)


def percentile_of(sorted_values: list[float], p: float):
    """The discrete percentile: the value at rank ceil(p*n)-1 of the sorted inputs (None if empty).

    MongoDB's $percentile/$median return one of the input values, not an interpolation.
    """
    n = len(sorted_values)
    if not n:
        return None
    rank = max(0, min(n - 1, math.ceil(p * n) - 1))
    return sorted_values[rank]


def percentiles(values: list[float], ps: list[float], single: bool):
    """$median (`single`: one value) or $percentile (one value per p) of `values`
    (null, or a null per p, when there are none)."""
    ordered = sorted(values)
    out = [percentile_of(ordered, p) for p in ps]
    return out[0] if single else out


def check_percentiles(op: str, p_spec) -> list[float]:
    """Validate `p` of $percentile: a non-empty array of numbers in [0, 1]."""
    if type(p_spec) is not list or not p_spec:
        raise ExecutionError(f"{op}: 'p' must be a non-empty array of numbers in [0.0, 1.0], found {p_spec!r}")
    ps = []
    for p in p_spec:
        if not is_number(p) or not 0 <= to_float(p) <= 1:
            raise ExecutionError(f"{op}: 'p' must be an array of numbers in [0.0, 1.0], found {p!r}")
        ps.append(to_float(p))
    return ps


def check_method(op: str, method) -> None:
    """The `method` of $median/$percentile ('approximate'; 8.0 also accepts 'discrete' and 'continuous')."""
    if method not in ("approximate", "discrete", "continuous"):
        raise ExecutionError(f"{op}: 'method' must be 'approximate', found {method!r}")


def positive_n(op: str, value) -> int:
    """Validate the `n` of $firstN/$topN/...: a positive integral number."""
    if not is_number(value):
        raise ExecutionError(f"{op}: value for 'n' must be of integral type, but found {value!r}")
    f = to_float(value)
    if f != f or f in (math.inf, -math.inf) or f != int(f):
        raise ExecutionError(f"{op}: value for 'n' must be of integral type, but found {value!r}")
    if f < 1:
        raise ExecutionError(f"{op}: 'n' must be greater than 0, found {value!r}")
    return int(f)
