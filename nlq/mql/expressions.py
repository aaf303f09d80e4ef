"""Aggregation expressions compiled once into Python callables.

`compile_expression(spec)` returns `fn(vars) -> value` where `vars` is a dict
of variable bindings: `vars["CURRENT"]` (the document field paths read),
`vars["ROOT"]` and any `$let`/`$map`/`$filter`/`$lookup let` names. A field
that does not exist evaluates to MISSING (not None).

    >>> compile_expression("$a.b")({"CURRENT": {"a": [{"b": 1}, {"c": 2}, {"b": 3}]}})
    [1, 3]

Operators are compiled by the functions registered in the operator registry
(`registry.implements(EXPRESSION, "$add")`): each receives the raw argument
spec and returns a callable. The operator modules (`nlq.mql.ops_*`) import
this one; `registry.load()` imports them, and the registry's readers call it.
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Callable, Iterator

from nlq.errors import ExecutionError, ForbiddenOperatorError
from nlq.mql import registry
from nlq.mql.registry import EXPRESSION
from nlq.mql.values import MISSING

Compiled = Callable[[dict], Any]

# The deadline of the running query for loops inside expressions, which have no stage
# context: `engine.aggregate` installs its clock with `deadline(clock)`, and every loop
# over an array of unbounded size calls `check_deadline()` every CHECK_EVERY elements
# (or once per call when one call is a single linear pass, e.g. `$concatArrays`).
# The clock has `check_now()` (QueryTimeout past the deadline) and `remaining()` (seconds left).
_DEADLINE: ContextVar[Any] = ContextVar("nlq_expression_deadline", default=None)
CHECK_EVERY = 1024     # elements of a cheap per-element loop between two checks
CHECK_EVERY_EVAL = 64  # iterations between two checks in loops that evaluate an expression


def check_deadline() -> None:
    """Raise QueryTimeout when the running query is past its time limit (no-op outside a query)."""
    clock = _DEADLINE.get()
    if clock is not None:
        clock.check_now()


def check_deadline_for(array) -> None:
    """`check_deadline()` before one linear pass over an array long enough to matter."""
    if len(array) >= CHECK_EVERY:
        check_deadline()


def paced(items):
    """`items` (a list) for one linear pass that stops at the deadline: a long list is yielded in
    runs of CHECK_EVERY elements with `check_deadline()` before each run (a short one is returned
    as it is). For the passes inside an operator that a single C call would otherwise make whole
    (`{f(v) for v in array}`, `sum`, `max`)."""
    if len(items) < CHECK_EVERY:
        return items
    return _paced(items)


def _paced(items):
    for start in range(0, len(items), CHECK_EVERY):
        check_deadline()
        yield from items[start:start + CHECK_EVERY]


SORT_RUN = 1 << 15  # elements sorted in one C call by `sorted_paced`


def sorted_paced(items: list, key, reverse: bool = False) -> list:
    """`sorted(items, key=key, reverse=reverse)` that stops at the deadline: the keys are computed
    in runs, runs of SORT_RUN elements are sorted in one C call each, and neighbouring runs are
    merged a round at a time, the deadline checked between any two of these steps (stable: the
    left run wins ties, as in `sorted`)."""
    n = len(items)
    if n <= SORT_RUN:
        check_deadline_for(items)
        return sorted(items, key=key, reverse=reverse)
    keys: list = []
    for start in range(0, n, SORT_RUN):
        check_deadline()
        keys.extend(map(key, items[start:start + SORT_RUN]))
    by = keys.__getitem__
    runs = []
    for start in range(0, n, SORT_RUN):
        check_deadline()
        runs.append(sorted(range(start, min(n, start + SORT_RUN)), key=by, reverse=reverse))
    while len(runs) > 1:
        merged = []
        for i in range(0, len(runs) - 1, 2):
            check_deadline()
            pair = runs[i] + runs[i + 1]
            pair.sort(key=by, reverse=reverse)  # timsort merges the two sorted runs in one pass
            merged.append(pair)
        if len(runs) % 2:
            merged.append(runs[-1])
        runs = merged
    check_deadline()
    return [items[i] for i in runs[0]]


def time_left() -> float | None:
    """Seconds left before the running query's deadline (None outside a query)."""
    clock = _DEADLINE.get()
    return None if clock is None else clock.remaining()


current_clock = _DEADLINE.get
"""The running query's clock (`check_now()`, `remaining()`, `expired()`), None outside a query."""


@contextmanager
def deadline(clock) -> Iterator[None]:
    """Within the block, `check_deadline()` calls `clock.check_now()` (QueryTimeout past the limit)
    and `time_left()` is `clock.remaining()`."""
    token = _DEADLINE.set(clock)
    try:
        yield
    finally:
        _DEADLINE.reset(token)

# System variables an expression may read (`$$NOW`/`$$CLUSTER_TIME` are forbidden).
_SYSTEM_VARS = {"ROOT", "CURRENT", "REMOVE", "DESCEND", "PRUNE", "KEEP"}


def traverse(value, parts: tuple[str, ...] | list[str]):
    """Resolve a dotted path the way aggregation field paths do.

    Through arrays the path maps over elements, skipping those where it is
    missing, and keeps array nesting: `$a.b` of `{a: [{b: 1}, {}, [{b: 2}]]}`
    is `[1, [2]]`.
    """
    for i, part in enumerate(parts):
        t = type(value)
        if t is dict:
            value = value.get(part, MISSING)
            if value is MISSING:
                return MISSING
        elif t is list:
            rest = parts[i:]
            out = []
            for element in value:
                if type(element) is dict or type(element) is list:
                    r = traverse(element, rest)
                    if r is not MISSING:
                        out.append(r)
            return out
        else:
            return MISSING
    return value


def field_path(path: str) -> Compiled:
    """Compile `$a.b.c` (path given without the leading `$`)."""
    parts = tuple(path.split("."))
    if any(not p for p in parts):
        raise ExecutionError(f"invalid field path '${path}': empty field name")
    if len(parts) == 1:
        name = parts[0]

        def get_one(vars):
            current = vars["CURRENT"]
            return current.get(name, MISSING) if type(current) is dict else MISSING
        return get_one
    if len(parts) == 2:
        return _two_part_path(parts)

    def get_path(vars):
        return traverse(vars["CURRENT"], parts)
    return get_path


def _two_part_path(parts: tuple[str, str]) -> Compiled:
    """`$a.b` (the most common path after `$unwind`): `traverse` unrolled for two parts."""
    first, second = parts
    rest = (second,)

    def get_two(vars):
        current = vars["CURRENT"]
        if type(current) is not dict:
            return traverse(current, parts)
        value = current.get(first, MISSING)
        t = type(value)
        if t is dict:
            return value.get(second, MISSING)
        if t is not list:
            return MISSING
        out = []
        for element in value:
            te = type(element)
            if te is dict:
                r = element.get(second, MISSING)
            elif te is list:
                r = traverse(element, rest)
            else:
                continue
            if r is not MISSING:
                out.append(r)
        return out
    return get_two


def variable(ref: str) -> Compiled:
    """Compile `$$name` or `$$name.path` (ref given without the leading `$$`)."""
    name, _, rest = ref.partition(".")
    if name in ("NOW", "CLUSTER_TIME"):
        raise ForbiddenOperatorError(f"$${name} is forbidden: results would not be reproducible")
    if name == "REMOVE":
        return lambda vars: MISSING
    if not name or not (name[0].islower() or name in _SYSTEM_VARS or not name[0].isascii()):
        raise ExecutionError(f"use of undefined variable: {name}")
    parts = tuple(rest.split(".")) if rest else ()

    def get_var(vars):
        try:
            value = vars[name]
        except KeyError:
            raise ExecutionError(f"use of undefined variable: {name}") from None
        return traverse(value, parts) if parts else value
    return get_var


def check_variable_name(op: str, name) -> str:
    """A variable an operator binds ($let `vars`, $map/$filter `as`): it starts with a
    lowercase or non-ASCII letter and has only letters, digits and '_'; `CURRENT` may
    be rebound too (field paths then read the new value)."""
    if name == "CURRENT":
        return name
    if type(name) is not str or not name or not (name[0].islower() or not name[0].isascii()) \
            or not all(c.isalnum() or c == "_" or not c.isascii() for c in name):
        raise ExecutionError(f"{op}: '{name}' is not a valid variable name: it must start with a lowercase letter")
    return name


def bindings(doc, scope=None) -> dict:
    """The variables to evaluate an expression against `doc`: those of `scope`, then CURRENT and ROOT."""
    if scope:
        return {**scope, "CURRENT": doc, "ROOT": doc}
    return {"CURRENT": doc, "ROOT": doc}


def constant(value) -> Compiled:
    return lambda vars: value


def compile_expression(spec) -> Compiled:
    """Compile an aggregation expression (field path, variable, operator, object, array, literal)."""
    t = type(spec)
    if t is str:
        if spec.startswith("$$"):
            return variable(spec[2:])
        if spec.startswith("$"):
            if len(spec) == 1:
                raise ExecutionError("'$' by itself is not a valid field path")
            return field_path(spec[1:])
        return constant(spec)
    if t is dict:
        if len(spec) >= 1:
            first = next(iter(spec))
            if first.startswith("$"):
                if len(spec) != 1:
                    raise ExecutionError(
                        f"an expression object with operator {first} must have exactly one field, got {list(spec)}")
                return compile_operator(first, spec[first])
        return compile_object(spec)
    if t is list:
        items = [compile_expression(s) for s in spec]

        def array(vars):
            out = []
            for item in items:
                v = item(vars)
                out.append(None if v is MISSING else v)
            return out
        return array
    return constant(spec)


def compile_object(spec: dict) -> Compiled:
    """`{a: <expr>, b: {c: <expr>}}`: fields that evaluate to missing are left out."""
    for key in spec:
        if key.startswith("$"):
            raise ExecutionError(f"field names may not start with '$' in an expression object: {key}")
        if "." in key:
            raise ExecutionError(f"field names may not contain '.' in an expression object: {key}")
    fields = [(k, compile_expression(v)) for k, v in spec.items()]

    def obj(vars):
        out = {}
        for k, fn in fields:
            v = fn(vars)
            if v is not MISSING:
                out[k] = v
        return out
    return obj


def compile_operator(name: str, args) -> Compiled:
    """Compile `{<name>: args}` with the evaluator registered for it."""
    compiler = registry.resolve(
        name, EXPRESSION, unknown="unknown expression operator {name}{suggestion}",
        other_kind="{name} is not an expression operator (it is a {kind} operator)",
        unsupported="the embedded engine does not support the expression operator {name}")
    return compiler(args)


def operand_list(args) -> list:
    """Operator arguments as a list: `{$op: x}` is `{$op: [x]}` when x is not an array."""
    return args if type(args) is list else [args]


def compile_args(args, *, name: str, min_args: int = 0, max_args: int | None = None) -> list[Compiled]:
    """Compile an operator's positional arguments, checking their count."""
    items = operand_list(args)
    n = len(items)
    if n < min_args or (max_args is not None and n > max_args):
        want = str(min_args) if max_args == min_args else (
            f"at least {min_args}" if max_args is None else f"{min_args} to {max_args}")
        raise ExecutionError(f"expression {name} takes {want} arguments, {n} were passed in")
    return [compile_expression(a) for a in items]


def unary_operator(name: str, compute: Callable[[Any], Any]) -> Callable[[Any], Compiled]:
    """The compiler of a one-operand operator that gives null for a null or missing operand
    and `compute(value)` otherwise.

        implements(EXPRESSION, "$reverseArray")(unary_operator("$reverseArray", reverse_array))
    """
    def compile_(args) -> Compiled:
        (fn,) = compile_args(args, name=name, min_args=1, max_args=1)

        def evaluate(vars):
            v = fn(vars)
            if v is None or v is MISSING:
                return None
            return compute(v)
        return evaluate
    return compile_


def compile_named(args, *, name: str, required: tuple[str, ...] = (), optional: tuple[str, ...] = ()
                  ) -> dict[str, Compiled]:
    """Compile an operator's named arguments `{input: ..., as: ...}` (unknown names are errors)."""
    if type(args) is not dict:
        raise ExecutionError(f"{name} expects an object as its argument")
    check_named(args, name=name, required=required, optional=optional)
    return {key: compile_expression(value) for key, value in args.items()}


def check_named(args: dict, *, name: str, required: tuple[str, ...] = (), optional: tuple[str, ...] = ()) -> None:
    """An error for an unknown or a missing named argument of `name`."""
    allowed = set(required) | set(optional)
    for key in args:
        if key not in allowed:
            raise ExecutionError(f"{name} found an unknown argument: {key}")
    for key in required:
        if key not in args:
            raise ExecutionError(f"{name} requires '{key}' to be specified")


def evaluate(spec, document: dict, variables: dict | None = None):
    """Evaluate an expression once against a document (convenience for tests and callers)."""
    registry.load()
    vars = {"CURRENT": document, "ROOT": document}
    if variables:
        vars.update(variables)
    return compile_expression(spec)(vars)
