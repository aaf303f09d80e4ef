"""Query predicates (the `$match` / `find` filter language) compiled into Python callables.

`compile_filter(filter, variables=None)` returns `fn(doc) -> bool` following the
manual's query semantics (https://www.mongodb.com/docs/manual/reference/operator/query/):

- a field path walks embedded documents and, implicitly, arrays of embedded
  documents; a numeric path component is both an array index and a field name;
- a leaf predicate matches the value at the path, or any element when that
  value is an array (`{tags: "red"}` matches `{tags: ["red", "blue"]}`);
- `{a: null}` matches null, missing, and arrays holding null; `$ne`, `$nin`
  and `$not` are negations of the whole path match (so they match missing);
- comparisons only match values of the operand's type bracket
  (`{a: {$gt: 5}}` never matches a string), MinKey/MaxKey compare with all.

    >>> compile_filter({"a.b": {"$gt": 1}})({"a": [{"b": 0}, {"b": 2}]})
    True
"""

from __future__ import annotations

import operator
import re
from typing import Callable

from nlq.errors import ExecutionError, ForbiddenOperatorError, UnknownOperatorError, UnsupportedOperatorError
from nlq.mql import regexes, registry
from nlq.mql.expressions import bindings, compile_expression
from nlq.mql.values import (CODE_TYPES, MAXKEY, MINKEY, MISSING, NUMBER_TYPES, TYPE_CODES,
                            Binary, Decimal128, Int64, Regex, bson_type, equal, group_key, is_number,
                            is_truthy, number_value, sort_key, type_bracket)

Predicate = Callable[[dict], bool]
Leaf = Callable[[object], bool]

# Query operators the engine does not evaluate (geo, text search, schema validation, and
# `$sampleRate`, which keeps documents at random like `$rand`).
_UNSUPPORTED = frozenset("$text $geoIntersects $geoWithin $near $nearSphere $jsonSchema $box $center "
                         "$centerSphere $geometry $maxDistance $minDistance $polygon $uniqueDocs "
                         "$sampleRate".split())


class Site:
    """Where a query operator stands, as its evaluator sees it.

    Every query operator's evaluator is registered in the operator registry
    (`registry.implements(QUERY, "$gt")`) as `compile(name, arg, site)`. At the
    top level of a filter (`site.field` is None; `site.scope` holds the
    `$$variables` of `$expr`) it returns a document predicate, or None when the
    clause tests nothing; inside a field's operator object `site.ops` it
    returns a `(leaf, negate)` pair, or None.
    """

    __slots__ = ("field", "ops", "scope")

    def __init__(self, field: str | None = None, ops: dict | None = None, scope=None):
        self.field, self.ops, self.scope = field, ops, scope


def compile_filter(filter, variables: dict | None = None) -> Predicate:
    """Compile a query document into `fn(doc) -> bool`.

    `variables` (held by reference) are the `$$names` visible to `$expr`,
    e.g. the `let` bindings of an enclosing `$lookup`.
    """
    if type(filter) is not dict:
        raise ExecutionError(f"a query filter must be an object, got {bson_type(filter)}")
    scope = variables if variables is not None else {}
    parts = [_compile_clause(key, value, scope) for key, value in filter.items()]
    parts = [p for p in parts if p is not None]
    if not parts:
        return lambda doc: True
    return _conjunction(parts)


def _conjunction(preds: list[Predicate]) -> Predicate:
    """A predicate true when all of `preds` are (in order, stopping at the first false one),
    without a generator per document for the usual two or three."""
    if len(preds) == 1:
        return preds[0]
    if len(preds) == 2:
        first, second = preds
        return lambda doc: first(doc) and second(doc)
    if len(preds) == 3:
        first, second, third = preds
        return lambda doc: first(doc) and second(doc) and third(doc)

    def every(doc):
        for p in preds:
            if not p(doc):
                return False
        return True
    return every


def _compile_clause(key: str, value, scope) -> Predicate | None:
    if key.startswith("$"):
        compile_ = registry.evaluator(key, registry.QUERY) if registry.whole_document_query(key) else None
        if compile_ is not None:
            return compile_(key, value, Site(scope=scope))
        _reject_special(key)
        raise UnknownOperatorError(f"unknown top level operator: {key}{registry.suggestion(key, registry.QUERY)}")
    leaf_preds = _compile_field_predicates(key, value)
    path = tuple(key.split("."))
    if any(not p for p in path):
        raise ExecutionError(f"invalid field path '{key}': empty field name")
    return _conjunction([_on_path(path, leaf, negate) for leaf, negate in leaf_preds])


def _reject_special(name: str) -> None:
    if name in registry.FORBIDDEN:
        raise ForbiddenOperatorError(f"{name} is forbidden (nlq runs only read-only, deterministic queries)")
    if name in _UNSUPPORTED:
        raise UnsupportedOperatorError(f"the embedded engine does not support the query operator {name}")


# ---------------------------------------------------------------------------
# Paths


def _on_path(path: tuple[str, ...], leaf: Leaf, negate: bool) -> Predicate:
    """A document predicate applying `leaf` at `path` (negated as a whole for $ne/$not...)."""
    if len(path) == 1:
        name = path[0]

        def one(doc):
            return leaf(doc.get(name, MISSING) if type(doc) is dict else MISSING)
        if negate:
            return lambda doc: not one(doc)
        return one

    def deep(doc):
        return _walk(doc, path, 0, leaf)
    if negate:
        return lambda doc: not deep(doc)
    return deep


def _walk(value, path, i, leaf) -> bool:
    """True when `leaf` holds for some value reached along `path` from `value`."""
    n = len(path)
    while i < n:
        t = type(value)
        if t is dict:
            value = value.get(path[i], MISSING)
            i += 1
        elif t is list:
            part = path[i]
            if part.isdigit():
                idx = int(part)
                if idx < len(value):
                    element = value[idx]
                    # A scalar picked by position ends the path (no null-match below it).
                    te = type(element)
                    if (i + 1 == n or te is dict or te is list) and _walk(element, path, i + 1, leaf):
                        return True
            for element in value:
                if type(element) is dict and _walk(element, path, i, leaf):
                    return True
            return False
        else:
            return leaf(MISSING)
    return leaf(value)


def path_values(doc, path: tuple[str, ...]) -> list:
    """Every value a query reaches at `path` (MISSING where a branch ends), arrays not expanded
    at the leaf. `{a: [{b: 1}, {}]}` at `a.b` gives `[1, MISSING]`."""
    out: list = []
    _walk(doc, path, 0, lambda v: out.append(v))
    return out


def equality_keys(doc, path: tuple[str, ...]) -> set:
    """The `values.group_key`s of every value an equality predicate on `path` would match
    (elements of arrays and the arrays themselves; missing matches like null)."""
    keys = set()
    for value in path_values(doc, path):
        keys.add(group_key(value))
        if type(value) is list:
            for element in value:
                keys.add(group_key(element))
    return keys


# ---------------------------------------------------------------------------
# Field predicates: `{field: value}` or `{field: {$op: arg, ...}}`


def _is_operator_object(value) -> bool:
    if type(value) is not dict or not value:
        return False
    return next(iter(value)).startswith("$")


def _compile_field_predicates(field: str, value) -> list[tuple[Leaf, bool]]:
    """[(leaf, negate)] for one field's condition (all must hold)."""
    if _is_operator_object(value):
        return _compile_operators(value, field)
    return [(_leaf_for_value(value), False)]


def _leaf_for_value(value) -> Leaf:
    """`{field: value}`: equality, or a regular-expression match for a regex value."""
    if _is_regex(value):
        return _regex_leaf(_compile_regex(value))
    return _eq_leaf(value)


def _compile_operators(ops: dict, field: str) -> list[tuple[Leaf, bool]]:
    """[(leaf, negate)] of a field's operator object, each compiled by its registered evaluator."""
    out: list[tuple[Leaf, bool]] = []
    if "$options" in ops and "$regex" not in ops:
        raise ExecutionError("$options needs a $regex")
    site = Site(field, ops)
    for name, arg in ops.items():
        if not name.startswith("$"):
            raise ExecutionError(f"unknown operator: {name} (cannot mix operators and field names in {field})")
        compiled = _field_evaluator(name)(name, arg, site)
        if compiled is not None:
            out.append(compiled)
    return out


def _field_evaluator(name: str):
    """The registered evaluator of a query operator, or the typed error for why there is none."""
    compile_ = registry.evaluator(name, registry.QUERY)
    if compile_ is not None:
        return compile_
    _reject_special(name)
    op = registry.get(name)
    if op is not None and registry.QUERY in op.kinds:
        raise UnsupportedOperatorError(f"the embedded engine does not support the query operator {name}")
    raise UnknownOperatorError(f"unknown operator: {name}{registry.suggestion(name, registry.QUERY)}")


# ---------------------------------------------------------------------------
# Query operators (registered evaluators, see `Site`)


@registry.implements(registry.QUERY, "$and", "$or", "$nor")
def _logical(name: str, value, site: Site) -> Predicate:
    if site.field is not None:
        raise ExecutionError(f"unknown operator: {name} ({name} is only valid at the top level of a query)")
    if type(value) is not list or not value:
        raise ExecutionError(f"{name} argument must be a non-empty array")
    subs = []
    for item in value:
        if type(item) is not dict:
            raise ExecutionError(f"{name} argument's entries must be objects")
        subs.append(compile_filter(item, site.scope))
    if name == "$and":
        return lambda doc: all(s(doc) for s in subs)
    if name == "$or":
        return lambda doc: any(s(doc) for s in subs)
    return lambda doc: not any(s(doc) for s in subs)


@registry.implements(registry.QUERY, "$expr")
def _expr(name: str, spec, site: Site) -> Predicate:
    if site.field is not None:
        raise ExecutionError("$expr can only be applied to the top-level document")
    fn = compile_expression(spec)
    scope = site.scope
    return lambda doc: is_truthy(fn(bindings(doc, scope)))


@registry.implements(registry.QUERY, "$comment")
def _comment(name: str, arg, site: Site):
    return None if site.field is None else (lambda v: True, False)


@registry.implements(registry.QUERY, "$options")
def _options(name: str, arg, site: Site) -> None:
    return None  # read by $regex


@registry.implements(registry.QUERY, "$regex")
def _regex(name: str, arg, site: Site) -> tuple[Leaf, bool]:
    return _regex_leaf(_compile_regex(arg, site.ops.get("$options"))), False


@registry.implements(registry.QUERY, "$not")
def _not(name: str, arg, site: Site) -> tuple[Leaf, bool]:
    return _compile_not(arg, site.field), True


@registry.implements(registry.QUERY, "$eq", "$ne")
def _eq(name: str, arg, site: Site) -> tuple[Leaf, bool]:
    return _eq_leaf(arg), name == "$ne"


@registry.implements(registry.QUERY, "$exists")
def _exists(name: str, arg, site: Site) -> tuple[Leaf, bool]:
    # {$exists: false}: no value anywhere along the path.
    return _exists_leaf, not is_truthy(arg)


@registry.implements(registry.QUERY, "$in", "$nin")
def _in(name: str, arg, site: Site) -> tuple[Leaf, bool]:
    return _in_leaf(arg, name), name == "$nin"


@registry.implements(registry.QUERY, "$gt", "$gte", "$lt", "$lte")
def _comparison(name: str, arg, site: Site) -> tuple[Leaf, bool]:
    return _cmp_leaf(_COMPARISONS[name], arg), False


@registry.implements(registry.QUERY, "$bitsAllSet", "$bitsAllClear", "$bitsAnySet", "$bitsAnyClear")
def _bits(name: str, arg, site: Site) -> tuple[Leaf, bool]:
    return _bits_leaf(name, arg), False


def _leaf_operator(make_leaf: Callable[[object], Leaf]):
    """Register-ready evaluator of an operator whose leaf depends on its argument alone."""
    return lambda name, arg, site: (make_leaf(arg), False)


def _compile_not(arg, field: str) -> Leaf:
    if _is_regex(arg):
        return _regex_leaf(_compile_regex(arg))
    if type(arg) is not dict:
        raise ExecutionError("$not needs a regex or a document")
    if not arg:
        raise ExecutionError("$not cannot be empty")
    if not _is_operator_object(arg):
        raise ExecutionError(f"$not needs a document of query operators, got a field name in {field}")
    leaves = _compile_operators(arg, field)

    # The inner operators match as one leaf test (negated by the caller over the whole path).
    def inner(value):
        return all((not leaf(value)) if neg else leaf(value) for leaf, neg in leaves)
    return inner


# ---------------------------------------------------------------------------
# Leaves


def _exists_leaf(v) -> bool:
    return v is not MISSING


def _eq_leaf(x) -> Leaf:
    """Equality with implicit array traversal: the value, or any element, equals x."""
    tx = type(x)
    if x is None:
        def eq_null(v):
            if v is None or v is MISSING:
                return True
            if type(v) is list:
                return any(e is None for e in v)
            return False
        return eq_null
    if tx is str:
        def eq_str(v):
            if type(v) is str:
                return v == x
            if type(v) is list:
                return any(type(e) is str and e == x for e in v)
            return False
        return eq_str
    if (tx is int or tx is float or tx is Int64) and x == x:
        def eq_num(v):
            t = type(v)
            if t is int or t is float or t is Int64:
                return v == x
            if t is list:
                return any(_num_eq(e, x) for e in v)
            if t is Decimal128:
                return _num_eq(v, x)
            return False
        return eq_num
    kx = sort_key(x)
    bx = type_bracket(x)

    def eq_any(v):
        if type_bracket(v) == bx and sort_key(v) == kx:
            return True
        if type(v) is list:
            return any(type_bracket(e) == bx and sort_key(e) == kx for e in v)
        return False
    return eq_any


def _num_eq(v, x) -> bool:
    t = type(v)
    if t is int or t is float or t is Int64:
        return v == x
    if t is Decimal128:
        return equal(v, x)
    return False


_COMPARISONS = {"$gt": operator.gt, "$gte": operator.ge, "$lt": operator.lt, "$lte": operator.le}


def _cmp_leaf(op, x) -> Leaf:
    """$gt/$gte/$lt/$lte: within the operand's type bracket (MinKey/MaxKey compare with all)."""
    bx = type_bracket(x)
    kx = sort_key(x)
    if bx == MINKEY or bx == MAXKEY:
        def cmp_all(v):
            if op(sort_key(v), kx):
                return True
            return type(v) is list and any(op(sort_key(e), kx) for e in v)
        return cmp_all
    tx = type(x)
    if (tx is int or tx is float) and x == x:
        def cmp_num(v):
            t = type(v)
            if t is int or t is float or t is Int64:
                return v == v and op(v, x)
            if t is list:
                for e in v:
                    te = type(e)
                    if te is int or te is float or te is Int64:
                        if e == e and op(e, x):
                            return True
                    elif te is Decimal128 and op(sort_key(e), kx):
                        return True
                return False
            if t is Decimal128:
                return op(sort_key(v), kx)
            return False
        return cmp_num

    def cmp_bracket(v):
        if type_bracket(v) == bx and op(sort_key(v), kx):
            return True
        if type(v) is list:
            return any(type_bracket(e) == bx and op(sort_key(e), kx) for e in v)
        return False
    return cmp_bracket


def _in_leaf(arg, name: str) -> Leaf:
    if type(arg) is not list:
        raise ExecutionError(f"{name} needs an array")
    leaves = []
    plain = set()
    has_null = False
    for item in arg:
        if _is_regex(item):
            leaves.append(_regex_leaf(_compile_regex(item)))
        elif type(item) is dict and _is_operator_object(item):
            raise ExecutionError(f"cannot nest $ under {name}")
        elif item is None:
            has_null = True
        else:
            plain.add(group_key(item))

    def in_(v):
        if v is None or v is MISSING:
            if has_null:
                return True
        elif plain and _key_or_none(v) in plain:
            return True
        if type(v) is list:
            for e in v:
                if e is None:
                    if has_null:
                        return True
                elif plain and _key_or_none(e) in plain:
                    return True
        return any(leaf(v) for leaf in leaves)
    return in_


def _key_or_none(v):
    try:
        return group_key(v)
    except TypeError:
        return None


def _type_leaf(arg) -> Leaf:
    wanted = set()
    for item in (arg if type(arg) is list else [arg]):
        if type(item) is str:
            if item == "number":
                wanted |= NUMBER_TYPES
            elif item in TYPE_CODES:
                wanted.add(item)
            else:
                raise ExecutionError(f"unknown type name alias: {item}")
        elif is_number(item) and not isinstance(item, bool):
            code = _whole(item)
            if code not in CODE_TYPES:
                raise ExecutionError(f"invalid numerical type code: {item}")
            wanted.add(CODE_TYPES[code])
        else:
            raise ExecutionError("type must be represented as a number or a string")

    def type_(v):
        if v is MISSING:
            return False
        if bson_type(v) in wanted:
            return True
        if type(v) is list:
            return any(bson_type(e) in wanted for e in v)
        return False
    return type_


def _size_leaf(arg) -> Leaf:
    if not is_number(arg) or isinstance(arg, bool):
        raise ExecutionError("$size needs a number")
    size = _whole(arg)
    if size is None:
        raise ExecutionError("$size must be a whole number")
    if size < 0:
        raise ExecutionError("$size may not be negative")
    return lambda v: type(v) is list and len(v) == size


def _all_leaf(arg) -> Leaf:
    if type(arg) is not list:
        raise ExecutionError("$all needs an array")
    if not arg:
        return lambda v: False
    leaves = []
    for item in arg:
        if type(item) is dict and len(item) == 1 and "$elemMatch" in item:
            leaves.append(_elem_match_leaf(item["$elemMatch"]))
        elif type(item) is dict and _is_operator_object(item):
            raise ExecutionError("no $ expressions in $all")
        else:
            leaves.append(_leaf_for_value(item))
    return lambda v: all(leaf(v) for leaf in leaves)


def _elem_match_leaf(arg) -> Leaf:
    """$elemMatch: some element alone satisfies all the conditions (document or value form)."""
    if type(arg) is not dict:
        raise ExecutionError("$elemMatch needs an Object")
    first = next(iter(arg), "")
    if first.startswith("$") and not registry.whole_document_query(first):
        # Value form: {$elemMatch: {$gte: 80, $lt: 85}} on scalar elements.
        leaves = _compile_operators(arg, "$elemMatch")

        def value_form(v):
            if type(v) is not list:
                return False
            for e in v:
                if all((not leaf(e)) if neg else leaf(e) for leaf, neg in leaves):
                    return True
            return False
        return value_form
    pred = compile_filter(arg)

    def doc_form(v):
        if type(v) is not list:
            return False
        for e in v:
            if type(e) is dict and pred(e):
                return True
        return False
    return doc_form


def _mod_leaf(arg) -> Leaf:
    if type(arg) is not list:
        raise ExecutionError("malformed mod, needs to be an array")
    if len(arg) < 2:
        raise ExecutionError("malformed mod, not enough elements")
    if len(arg) > 2:
        raise ExecutionError("malformed mod, too many elements")
    divisor, remainder = (_trunc(a) for a in arg)
    if divisor is None or remainder is None:
        raise ExecutionError("malformed mod, divisor and remainder must be finite numbers")
    if divisor == 0:
        raise ExecutionError("divisor cannot be 0")

    def mod_one(v):
        n = _trunc(v)
        if n is None:
            return False
        rem = abs(n) % abs(divisor)  # the remainder takes the dividend's sign, as in C
        return (-rem if n < 0 else rem) == remainder

    def mod(v):
        if type(v) is list:
            return any(mod_one(e) for e in v)
        return mod_one(v)
    return mod


def _whole(value) -> int | None:
    """The integer a numeric BSON value is exactly (not for bool, NaN, infinities, fractions)."""
    if not is_number(value) or isinstance(value, bool):
        return None
    x = number_value(value)
    try:
        n = int(x)
    except (ValueError, OverflowError):
        return None
    return n if n == x else None


def _trunc(value) -> int | None:
    """A finite number truncated toward zero (None for non-numbers, NaN, infinities)."""
    if not is_number(value) or isinstance(value, bool):
        return None
    try:
        return int(number_value(value))
    except (ValueError, OverflowError):
        return None


def _bits_leaf(name: str, arg) -> Leaf:
    if type(arg) is list:
        mask = 0
        for pos in arg:
            bit = _whole(pos)
            if bit is None or not 0 <= bit < 64 * 1024:
                raise ExecutionError(f"{name} bit positions must be non-negative integers")
            mask |= 1 << bit
    elif is_number(arg) and not isinstance(arg, bool):
        mask = _whole(arg)
        if mask is None or mask < 0:
            raise ExecutionError(f"{name} takes a non-negative integral bitmask")
    elif isinstance(arg, (Binary, bytes)):
        mask = int.from_bytes(bytes(arg), "little")
    else:
        raise ExecutionError(f"{name} takes an Array, a number, or a BinData but received: {bson_type(arg)}")
    positions = [i for i in range(mask.bit_length()) if mask >> i & 1]

    def bits_of(v):
        if isinstance(v, (Binary, bytes)):
            return int.from_bytes(bytes(v), "little")
        x = _whole(v)
        # Numbers must be representable as a 64-bit integer (two's complement).
        return x if x is not None and -2**63 <= x < 2**63 else None

    def test(v):
        bits = bits_of(v)
        if bits is None:
            return False
        set_ = [(bits >> p) & 1 for p in positions]
        if name == "$bitsAllSet":
            return all(set_)
        if name == "$bitsAllClear":
            return not any(set_)
        if name == "$bitsAnySet":
            return any(set_)
        return not all(set_)

    def bits(v):
        if type(v) is list:
            return any(test(e) for e in v)
        return test(v)
    return bits


# ---------------------------------------------------------------------------
# Regular expressions


def _is_regex(value) -> bool:
    return isinstance(value, Regex) or regexes.is_pattern(value)


_FLAGS = {"i": re.IGNORECASE, "m": re.MULTILINE, "x": re.VERBOSE, "s": re.DOTALL, "u": 0}


def _compile_regex(value, options=None) :
    """A Python pattern for a `$regex` (string, bson Regex or re.Pattern) plus `$options`."""
    if regexes.is_pattern(value):
        pattern, flags = value.pattern, value.flags & (re.I | re.M | re.X | re.S)
    elif isinstance(value, Regex):
        pattern = value.pattern
        raw = value.flags
        flags = _flags_from(raw) if isinstance(raw, str) else int(raw) & (re.I | re.M | re.X | re.S)
    elif type(value) is str:
        pattern, flags = value, 0
    else:
        raise ExecutionError("$regex has to be a string")
    if options is not None:
        if type(options) is not str:
            raise ExecutionError("$options has to be a string")
        flags |= _flags_from(options)
    try:
        return _cached_regex(pattern, flags)
    except regexes.PatternError as exc:
        raise ExecutionError(f"Regular expression is invalid: {exc}") from None


def _flags_from(options: str) -> int:
    flags = 0
    for ch in options:
        if ch not in _FLAGS:
            raise ExecutionError(f"invalid flag in regex options: {ch}")
        flags |= _FLAGS[ch]
    return flags


_REGEX_CACHE: dict[tuple[str, int], object] = {}


def _cached_regex(pattern: str, flags: int) :
    key = (pattern, flags)
    compiled = _REGEX_CACHE.get(key)
    if compiled is None:
        compiled = regexes.compile(pattern, flags)
        if len(_REGEX_CACHE) < 4096:
            _REGEX_CACHE[key] = compiled
    return compiled


def _regex_leaf(rx) -> Leaf:
    search = regexes.search  # under the query's deadline

    def regex(v):
        t = type(v)
        if t is str:
            return search(rx, v) is not None
        if t is list:
            for e in v:
                if type(e) is str and search(rx, e) is not None:
                    return True
                if _is_regex(e) and _same_regex(e, rx):
                    return True
            return False
        if _is_regex(v):
            return _same_regex(v, rx)
        return False
    return regex


def _same_regex(value, rx) -> bool:
    try:
        other = _compile_regex(value)
    except ExecutionError:
        return False
    return other.pattern == rx.pattern and other.flags == rx.flags


# The operators whose leaf depends on their argument alone.
for _name, _make_leaf in (("$type", _type_leaf), ("$size", _size_leaf), ("$all", _all_leaf),
                          ("$elemMatch", _elem_match_leaf), ("$mod", _mod_leaf)):
    registry.implements(registry.QUERY, _name)(_leaf_operator(_make_leaf))


__all__ = ["compile_filter", "path_values", "equality_keys"]
