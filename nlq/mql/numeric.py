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
_EXACT = 2**52  # integers this small, summed while their total stays so, are exact doubles
_INT_ONLY = {int}

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
    """A running sum of numeric values, computed the way MongoDB's server computes it.

    Integers and doubles go, in input order, into one double-double sum (the
    server's DoubleDoubleSummation): each value is first added to the running
    compensation with Fast2Sum (Dekker), the result to the running sum with
    2Sum (Møller, Knuth), the remainder kept as the new compensation. A 32-bit
    integer is added as one double, a 64-bit one as two (its high 32 bits and
    the rest), so integer sums stay exact. The double result is the running sum
    itself — close to, but not always, the correctly rounded total — and an
    average divides it by the count: `$avg` of [235.98, 182, 220.98, ...] is
    345.15999999999997 on a server, not 345.16. NaN and infinities are also
    summed plainly, the result when the compensated sum turns NaN. Decimals are
    summed apart with 34 digits and the double-double added at the end. The
    result has the widest input type, promoted on overflow (int -> long -> double).

    While only integers of magnitude at most 2**52 have come, with a running total
    that stays so, every partial sum of the double-double is an integer below 2**53,
    hence exact: the sum is that total and the compensation zero. The sum then
    keeps only the exact integer total and starts the double-double from it (bit
    for bit the state the step-by-step one would have reached) when another value
    comes or the total grows past 2**52.
    """

    __slots__ = ("width", "ints", "high", "low", "special", "decimal", "count", "doubles", "started")

    def __init__(self):
        self.width = INT
        self.ints = 0  # the exact integer total, for int and long results
        self.high = 0.0  # the double-double sum: high + low
        self.low = 0.0
        self.special = 0.0  # the plain sum, used when the compensated one is NaN
        self.decimal: Decimal | None = None
        self.count = 0
        self.doubles = False  # whether a double was added
        self.started = False  # whether the double-double is tracked (else it is exactly `ints`)

    def add(self, value) -> None:
        """Fold in a numeric value (callers filter out non-numerics)."""
        t = type(value)
        if not self.started:
            if t is int and -_EXACT <= value <= _EXACT:
                self.count += 1
                if self.width == INT and not INT32_MIN <= value <= INT32_MAX:
                    self.width = LONG
                self.ints = total = self.ints + value
                if not -_EXACT <= total <= _EXACT:
                    self._start()
                return
            self._start()
        self.count += 1
        if t is int or t is Int64:
            n = int(value)
            if t is int and INT32_MIN <= n <= INT32_MAX:
                self._add_double(float(n))
            else:
                if self.width == INT:
                    self.width = LONG
                high = -((-n) >> 32 << 32) if n < 0 else n >> 32 << 32  # truncated toward zero, as C++ divides
                self._add_double(float(n - high))
                self._add_double(float(high))
            self.ints += n
        elif t is float:
            if self.width < DOUBLE:
                self.width = DOUBLE
            self.doubles = True
            self._add_double(value)
        else:
            self.width = DECIMAL
            d = value.to_decimal()
            self.decimal = d if self.decimal is None else DECIMAL_CONTEXT.add(self.decimal, d)

    def add_many(self, values: list) -> None:
        """Fold in numeric values in order (callers filter out non-numerics): while the sum is
        still the exact integer total and every value is an int small enough that no partial
        sum can pass 2**52, the step-by-step `add`s would only add to that total, count and
        widen: done at once (sum, min and max run in C), bit for bit the same state."""
        if not self.started and values and set(map(type, values)) == _INT_ONLY:
            low, high = min(values), max(values)
            if abs(self.ints) + len(values) * max(-low, high) <= _EXACT:
                self.count += len(values)
                if self.width == INT and not (INT32_MIN <= low and high <= INT32_MAX):
                    self.width = LONG
                self.ints += sum(values)
                return
        for value in values:
            self.add(value)

    def _start(self) -> None:
        """Track the double-double from here on, from the exact integer total so far."""
        self.started = True
        self.high = self.special = float(self.ints)  # exact: |ints| <= 2**53

    def _add_double(self, x: float) -> None:
        self.special += x
        s = x + self.low  # Fast2Sum(x, low): the compensation is the smaller part
        x, self.low = s, self.low - (s - x)
        s = self.high + x  # 2Sum(high, x): x may be the larger part
        a = s - x
        b = s - a
        self.high, x = s, (self.high - a) + (x - b)
        self.low += x

    def double(self) -> float:
        """The double total (the server's getDouble)."""
        if not self.started:
            return float(self.ints)
        return self.special if math.isnan(self.high) else self.high

    def _decimal_total(self) -> Decimal:
        """Integers exactly, plus the doubles' total with 34 digits, plus the decimals."""
        total = Decimal(self.ints)
        if self.doubles:
            if math.isfinite(self.high):
                with decimal.localcontext() as exact:
                    exact.prec = 1000  # the double-double and the integers, subtracted exactly
                    doubles = float(Decimal(self.high) + Decimal(self.low) - total)
                total = DECIMAL_CONTEXT.add(total, double_to_decimal(doubles, 34))
            else:
                total = DECIMAL_CONTEXT.add(total, Decimal(self.special))
        return total if self.decimal is None else DECIMAL_CONTEXT.add(total, self.decimal)

    def result(self):
        """The sum, typed as MongoDB types it (0 when nothing was added)."""
        if self.width <= LONG:
            return integer_result(self.ints, self.width, self.double())
        if self.width == DOUBLE:
            return self.double()
        return make_decimal(self._decimal_total())

    def mean(self):
        """The average as a double (a decimal when a decimal was added), None when empty."""
        if not self.count:
            return None
        if self.width == DECIMAL:
            return make_decimal(DECIMAL_CONTEXT.divide(self._decimal_total(), Decimal(self.count)))
        return self.double() / self.count


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
