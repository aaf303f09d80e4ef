"""String expression operators ($concat, $substr*, $strLen*, $split, case, trim,
$indexOf*, $regex*, $replace*, $strcasecmp).

Semantics follow the manual's string-operator pages
(https://www.mongodb.com/docs/manual/reference/operator/aggregation/#string-expression-operators):
byte-oriented operators count UTF-8 bytes, `*CP` operators count code points,
`$toLower`/`$toUpper`/`$strcasecmp` only fold ASCII letters, and the error
messages/codes are MongoDB's.
"""

from __future__ import annotations

import datetime as _dt

from bson.decimal128 import Decimal128
from bson.int64 import Int64
from bson.regex import Regex
from bson.timestamp import Timestamp

from nlq.errors import ExecutionError
from nlq.mql import regexes, registry
from nlq.mql.expressions import compile_args, compile_named
from nlq.mql.limits import MAX_VALUE_BYTES, check_str, too_large
from nlq.mql.registry import EXPRESSION
from nlq.mql.values import MISSING, bson_type, is_nullish, iso_date_string

_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
_UPPER = str.maketrans("abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ")


def format_double(x: float) -> str:
    """A double as MongoDB's string coercion writes it (C++ stream, 6 significant digits)."""
    if x != x:
        return "NaN"
    if x in (float("inf"), float("-inf")):
        return "inf" if x > 0 else "-inf"
    return "%g" % x


def coerce_to_string(value, op: str) -> str:
    """MongoDB's `coerceToString` (used by $substr*, $toLower, $toUpper, $strcasecmp):
    null/missing become "", numbers and dates are rendered, other types are errors."""
    t = type(value)
    if t is str:
        return value
    if value is None or value is MISSING:
        return ""
    if t is int or t is Int64:
        return str(int(value))
    if t is float:
        return format_double(value)
    if t is Decimal128:
        return str(value)
    if isinstance(value, _dt.datetime):
        return iso_date_string(value)
    if isinstance(value, Timestamp):
        return f"Timestamp({value.time}, {value.inc})"
    raise ExecutionError(f"{op}: can't convert from BSON type {bson_type(value)} to String", code=16007)


def _integral(value, op: str, what: str, code: int) -> int:
    """A numeric argument that must be integral (int, long, or a whole double/decimal)."""
    t = type(value)
    n = None
    if t is int or t is Int64:
        n = int(value)
    elif t is float and value == value and value not in (float("inf"), float("-inf")) and value == int(value):
        n = int(value)
    elif t is Decimal128:
        d = value.to_decimal()
        if d.is_finite() and d == d.to_integral_value():
            n = int(d)
    if n is not None and -2**31 <= n < 2**31:
        return n
    raise ExecutionError(f"{op} {what}, found {bson_type(value)}: {value!r}", code=code)


# ---------------------------------------------------------------- $concat


@registry.implements(EXPRESSION, "$concat")
def _concat(args):
    fns = compile_args(args, name="$concat")

    def concat(vars):
        parts = []
        null = False
        for fn in fns:
            v = fn(vars)
            if type(v) is str:
                parts.append(v)
            elif v is None or v is MISSING:
                null = True
            else:
                raise ExecutionError(f"$concat only supports strings, not {bson_type(v)}", code=16702)
        if null:
            return None
        if sum(map(len, parts)) > MAX_VALUE_BYTES >> 2:  # may pass the byte cap: measure before joining
            total = sum(len(p) if p.isascii() else len(p.encode("utf-8", "surrogatepass")) for p in parts)
            if total > MAX_VALUE_BYTES:
                raise too_large("$concat", total)
        return "".join(parts)
    return concat


# ---------------------------------------------------------------- substrings


def _substr_bytes(op: str):
    def compile_(args):
        s_fn, start_fn, len_fn = compile_args(args, name=op, min_args=3, max_args=3)

        def substr(vars):
            s = coerce_to_string(s_fn(vars), op)
            start, length = start_fn(vars), len_fn(vars)
            if type(start) not in (int, Int64, float, Decimal128) or type(start) is bool:
                raise ExecutionError(f"{op}:  starting index must be a numeric type (is BSON type "
                                     f"{bson_type(start)})", code=16034)
            if type(length) not in (int, Int64, float, Decimal128) or type(length) is bool:
                raise ExecutionError(f"{op}:  length must be a numeric type (is BSON type "
                                     f"{bson_type(length)})", code=16035)
            lower = _coerce_to_int(start, op, "starting index")
            if lower < 0:
                raise ExecutionError(f"{op}:  starting index must be non-negative (got: {lower})", code=50752)
            n = _coerce_to_int(length, op, "length")
            data = s.encode("utf-8") if not s.isascii() else None
            if data is None:  # ASCII fast path: bytes are characters
                return s[lower:] if n < 0 else s[lower:lower + n]
            size = len(data)
            if n < 0:
                n = size
            if lower < size and (data[lower] & 0xC0) == 0x80:
                raise ExecutionError(f"{op}:  Invalid range, starting index is a UTF-8 continuation byte.",
                                     code=28656)
            if lower + n < size and (data[lower + n] & 0xC0) == 0x80:
                raise ExecutionError(f"{op}:  Invalid range, ending index is in the middle of a UTF-8 "
                                     "character.", code=28657)
            if lower >= size:
                return ""
            return data[lower:lower + n].decode("utf-8")
        return substr
    return compile_


def _coerce_to_int(value, op: str, what: str) -> int:
    """A numeric argument truncated to an int (MongoDB's coerceToInt); NaN, infinities and values
    beyond 32 bits cannot be."""
    v = float(str(value)) if type(value) is Decimal128 else value
    if type(v) is float and (v != v or v in (float("inf"), float("-inf"))):
        raise ExecutionError(f"{op}: the {what} cannot be represented as a 32-bit integer, found {value}")
    n = int(v)
    if not -2**31 <= n < 2**31:
        raise ExecutionError(f"{op}: the {what} cannot be represented as a 32-bit integer, found {value}")
    return n


registry.implements(EXPRESSION, "$substr")(_substr_bytes("$substr"))
registry.implements(EXPRESSION, "$substrBytes")(_substr_bytes("$substrBytes"))


@registry.implements(EXPRESSION, "$substrCP")
def _substr_cp(args):
    s_fn, start_fn, len_fn = compile_args(args, name="$substrCP", min_args=3, max_args=3)

    def substr_cp(vars):
        s = coerce_to_string(s_fn(vars), "$substrCP")
        start, length = start_fn(vars), len_fn(vars)
        if not _is_num(start):
            raise ExecutionError(f"$substrCP: starting index must be a numeric type (is BSON type "
                                 f"{bson_type(start)})", code=34450)
        if not _is_num(length):
            raise ExecutionError(f"$substrCP: length must be a numeric type (is BSON type "
                                 f"{bson_type(length)})", code=34452)
        i = _integral(start, "$substrCP:", "starting index cannot be represented as a 32-bit integral value",
                      34451)
        n = _integral(length, "$substrCP:", "length cannot be represented as a 32-bit integral value", 34453)
        if n < 0:
            raise ExecutionError("$substrCP: length must be a nonnegative integer.", code=34454)
        if i < 0:
            raise ExecutionError("$substrCP: the starting index must be nonnegative integer.", code=34455)
        return s[i:i + n]
    return substr_cp


def _is_num(v) -> bool:
    t = type(v)
    return t is int or t is float or t is Int64 or t is Decimal128


@registry.implements(EXPRESSION, "$strLenBytes")
def _strlen_bytes(args):
    (fn,) = compile_args(args, name="$strLenBytes", min_args=1, max_args=1)

    def strlen_bytes(vars):
        s = fn(vars)
        if type(s) is not str:
            raise ExecutionError(f"$strLenBytes requires a string argument, found: {bson_type(s)}", code=34473)
        return len(s) if s.isascii() else len(s.encode("utf-8"))
    return strlen_bytes


@registry.implements(EXPRESSION, "$strLenCP")
def _strlen_cp(args):
    (fn,) = compile_args(args, name="$strLenCP", min_args=1, max_args=1)

    def strlen_cp(vars):
        s = fn(vars)
        if type(s) is not str:
            raise ExecutionError(f"$strLenCP requires a string argument, found: {bson_type(s)}", code=34471)
        return len(s)
    return strlen_cp


# ---------------------------------------------------------------- $split


@registry.implements(EXPRESSION, "$split")
def _split(args):
    s_fn, d_fn = compile_args(args, name="$split", min_args=2, max_args=2)

    def split(vars):
        s, d = s_fn(vars), d_fn(vars)
        if is_nullish(s):
            return None
        if type(s) is not str:
            raise ExecutionError("$split requires an expression that evaluates to a string as a first "
                                 f"argument, found: {bson_type(s)}", code=40085)
        if is_nullish(d):
            return None
        if type(d) is not str:
            raise ExecutionError("$split requires an expression that evaluates to a string as a second "
                                 f"argument, found: {bson_type(d)}", code=40086)
        if not d:
            raise ExecutionError("$split requires a non-empty separator", code=40087)
        return s.split(d)
    return split


# ---------------------------------------------------------------- case


@registry.implements(EXPRESSION, "$toLower")
def _to_lower(args):
    (fn,) = compile_args(args, name="$toLower", min_args=1, max_args=1)
    return lambda vars: coerce_to_string(fn(vars), "$toLower").translate(_LOWER)


@registry.implements(EXPRESSION, "$toUpper")
def _to_upper(args):
    (fn,) = compile_args(args, name="$toUpper", min_args=1, max_args=1)
    return lambda vars: coerce_to_string(fn(vars), "$toUpper").translate(_UPPER)


@registry.implements(EXPRESSION, "$strcasecmp")
def _strcasecmp(args):
    a_fn, b_fn = compile_args(args, name="$strcasecmp", min_args=2, max_args=2)

    def strcasecmp(vars):
        a = coerce_to_string(a_fn(vars), "$strcasecmp").translate(_UPPER)
        b = coerce_to_string(b_fn(vars), "$strcasecmp").translate(_UPPER)
        return (a > b) - (a < b)
    return strcasecmp


# ---------------------------------------------------------------- trim

# The manual's default whitespace set for $trim/$ltrim/$rtrim.
WHITESPACE = ("\u0000\u0020\u0009\u000A\u000B\u000C\u000D\u00A0\u1680\u2000\u2001\u2002\u2003\u2004"
              "\u2005\u2006\u2007\u2008\u2009\u200A\u2028\u2029\u202F\u205F\u3000")


def _trim(op: str, left: bool, right: bool):
    def compile_(args):
        named = compile_named(args, name=op, required=("input",), optional=("chars",))
        in_fn = named["input"]
        chars_fn = named.get("chars")

        def trim(vars):
            s = in_fn(vars)
            if is_nullish(s):
                return None
            if type(s) is not str:
                raise ExecutionError(f"{op} requires its input to be a string, got {s!r} (of type "
                                     f"{bson_type(s)}) instead.", code=50699)
            if chars_fn is None:
                chars = WHITESPACE
            else:
                chars = chars_fn(vars)
                if is_nullish(chars):
                    return None
                if type(chars) is not str:
                    raise ExecutionError(f"{op} requires 'chars' to be a string, got {chars!r} (of type "
                                         f"{bson_type(chars)}) instead.", code=50700)
            if left and right:
                return s.strip(chars)
            return s.lstrip(chars) if left else s.rstrip(chars)
        return trim
    return compile_


registry.implements(EXPRESSION, "$trim")(_trim("$trim", True, True))
registry.implements(EXPRESSION, "$ltrim")(_trim("$ltrim", True, False))
registry.implements(EXPRESSION, "$rtrim")(_trim("$rtrim", False, True))


# ---------------------------------------------------------------- $indexOf*


def _index_of(op: str, codes: tuple[int, int, int, int], use_bytes: bool):
    first_code, second_code, integral_code, negative_code = codes

    def compile_(args):
        fns = compile_args(args, name=op, min_args=2, max_args=4)

        def index_of(vars):
            s = fns[0](vars)
            if is_nullish(s):
                return None
            if type(s) is not str:
                raise ExecutionError(f"{op} requires a string as the first argument, found: {bson_type(s)}",
                                     code=first_code)
            token = fns[1](vars)
            if type(token) is not str:
                raise ExecutionError(f"{op} requires a string as the second argument, found: "
                                     f"{bson_type(token)}", code=second_code)
            hay = s.encode("utf-8") if use_bytes and not s.isascii() else s
            needle = token.encode("utf-8") if type(hay) is bytes else token
            start, end = 0, len(hay)
            for k, what in ((2, "starting"), (3, "ending")):
                if len(fns) > k:
                    v = fns[k](vars)
                    if not _is_num(v) or (type(v) in (float, Decimal128) and not _whole(v)):
                        raise ExecutionError(f"{op} requires an integral {what} index, found a value of type: "
                                             f"{bson_type(v)}, with value: {v!r}", code=integral_code)
                    shown = v
                    v = int(v.to_decimal()) if type(v) is Decimal128 else int(v)
                    if v < 0:
                        raise ExecutionError(f"{op} requires a nonnegative {what} index, found: {shown}",
                                             code=negative_code)
                    if k == 2:
                        start = v
                    else:
                        end = min(v, end)
            if start > len(hay) or start > end:
                return -1
            return hay.find(needle, start, end)
        return index_of
    return compile_


def _whole(v) -> bool:
    if type(v) is Decimal128:
        d = v.to_decimal()
        return d.is_finite() and d == d.to_integral_value()
    return v == v and v not in (float("inf"), float("-inf")) and v == int(v)


registry.implements(EXPRESSION, "$indexOfBytes")(_index_of("$indexOfBytes", (40091, 40092, 40096, 40097), True))
registry.implements(EXPRESSION, "$indexOfCP")(_index_of("$indexOfCP", (40093, 40094, 40096, 40097), False))


# ---------------------------------------------------------------- regular expressions

_FLAGS = {"i": regexes.IGNORECASE, "m": regexes.MULTILINE, "x": regexes.VERBOSE, "s": regexes.DOTALL}
translate_pcre = regexes.translate_pcre


def compile_regex(pattern: str, options: str, op: str) :
    """A regex for a MongoDB pattern + option letters (i m x s); search it with `regexes.search`."""
    flags = 0
    for c in options:
        f = _FLAGS.get(c)
        if f is None:
            raise ExecutionError(f"{op} invalid flag in regex options: {c}", code=51108)
        flags |= f
    if "\x00" in pattern:
        raise ExecutionError(f"{op}: regular expression cannot contain an embedded null byte", code=51109)
    try:
        return regexes.compile(pattern, flags)
    except regexes.PatternError as exc:
        raise ExecutionError(f"Invalid Regex in {op}: {exc}", code=51111) from None


def _regex_compiler(op: str):
    """Compile {input, regex, options} into fn(vars) -> (input string, compiled pattern) | None."""

    def prepare(args):
        named = compile_named(args, name=op, required=("input", "regex"), optional=("options",))
        in_fn, re_fn = named["input"], named["regex"]
        opt_fn = named.get("options")
        cache: dict = {}

        def resolve(regex, options):
            if is_nullish(options):
                options = None
            elif type(options) is not str:
                raise ExecutionError(f"{op} needs 'options' to be of type string", code=51106)
            if type(regex) is str:
                pattern, flags = regex, options or ""
            elif isinstance(regex, Regex) or regexes.is_pattern(regex):
                if isinstance(regex, Regex):
                    pattern, flags = regex.pattern, regex.flags if type(regex.flags) is str else \
                        _py_flags_to_letters(regex.flags)
                else:
                    pattern, flags = regex.pattern, _py_flags_to_letters(regex.flags)
                if flags and options:
                    raise ExecutionError(f"{op}: found regex option(s) specified in both 'regex' and "
                                         "'option' fields", code=51075)
                flags = flags or options or ""
            else:
                raise ExecutionError(f"{op} needs 'regex' to be of type string or regex", code=51105)
            key = (pattern, flags)
            compiled = cache.get(key)
            if compiled is None:
                compiled = compile_regex(pattern, flags, op)
                if len(cache) < 256:
                    cache[key] = compiled
            return compiled

        # Precompile a constant regex once (the common case).
        const = None
        if _is_constant(args.get("regex")) and _is_constant(args.get("options")):
            regex = args.get("regex")
            if not is_nullish(regex):
                const = resolve(regex, args.get("options", MISSING))

        def run(vars):
            s = in_fn(vars)
            regex = re_fn(vars) if const is None else None
            options = opt_fn(vars) if opt_fn is not None and const is None else None
            if const is None and is_nullish(regex):
                return None
            if is_nullish(s):
                return None
            if type(s) is not str:
                raise ExecutionError(f"{op} needs 'input' to be of type string", code=51104)
            return s, (const if const is not None else resolve(regex, options))
        return run
    return prepare


def _is_constant(spec) -> bool:
    if spec is None:
        return True
    if type(spec) is str:
        return not spec.startswith("$")
    return isinstance(spec, Regex) or regexes.is_pattern(spec)


def _py_flags_to_letters(flags) -> str:
    if type(flags) is str:
        return flags
    out = ""
    for letter, f in _FLAGS.items():
        if flags & f:
            out += letter
    return out


def _match_doc(m, s: str) -> dict:
    return {"match": m.group(0), "idx": m.start(),
            "captures": [g for g in m.groups()]}


@registry.implements(EXPRESSION, "$regexMatch")
def _regex_match(args):
    run = _regex_compiler("$regexMatch")(args)

    def regex_match(vars):
        r = run(vars)
        return False if r is None else regexes.search(r[1], r[0]) is not None
    return regex_match


@registry.implements(EXPRESSION, "$regexFind")
def _regex_find(args):
    run = _regex_compiler("$regexFind")(args)

    def regex_find(vars):
        r = run(vars)
        if r is None:
            return None
        m = regexes.search(r[1], r[0])
        return None if m is None else _match_doc(m, r[0])
    return regex_find


@registry.implements(EXPRESSION, "$regexFindAll")
def _regex_find_all(args):
    run = _regex_compiler("$regexFindAll")(args)

    def regex_find_all(vars):
        r = run(vars)
        if r is None:
            return []
        s, pattern = r
        out = []
        pos = 0
        n = len(s)
        while pos <= n:
            m = regexes.search(pattern, s, pos)
            if m is None:
                break
            out.append(_match_doc(m, s))
            # An empty match advances by one code point, as MongoDB does.
            pos = m.end() if m.end() > m.start() else m.end() + 1
        return out
    return regex_find_all


# ---------------------------------------------------------------- $replaceOne / $replaceAll


def _replace(op: str, count: int):
    def compile_(args):
        named = compile_named(args, name=op, required=("input", "find", "replacement"))
        fns = (("input", named["input"]), ("find", named["find"]), ("replacement", named["replacement"]))

        def replace(vars):
            vals = []
            null = False
            for what, fn in fns:
                v = fn(vars)
                if is_nullish(v):
                    null = True
                elif type(v) is not str:
                    raise ExecutionError(f"{op} requires that '{what}' be a string, found: {v!r}", code=51746)
                vals.append(v)
            if null:
                return None
            s, find, repl = vals
            growth = len(repl) - len(find)
            if growth > 0:  # measure the result before building it when it might pass the byte cap
                most = 1 if count == 1 else len(s) // max(len(find), 1) + 1
                if len(s) + most * growth > MAX_VALUE_BYTES >> 2:
                    found = s.count(find) if count < 0 else min(1, s.count(find))
                    if len(s) + found * growth > MAX_VALUE_BYTES:
                        raise too_large(op, len(s) + found * growth)
            return check_str(op, s.replace(find, repl, count))
        return replace
    return compile_


registry.implements(EXPRESSION, "$replaceOne")(_replace("$replaceOne", 1))
registry.implements(EXPRESSION, "$replaceAll")(_replace("$replaceAll", -1))

__all__ = ["coerce_to_string", "compile_regex", "translate_pcre", "format_double", "WHITESPACE"]
