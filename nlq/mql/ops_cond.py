"""Boolean, comparison, conditional and variable expression operators.

Manual: https://www.mongodb.com/docs/manual/reference/operator/aggregation/#boolean-expression-operators
Aggregation comparisons order values of different types by the BSON
comparison order (https://www.mongodb.com/docs/manual/reference/bson-type-comparison-order/),
unlike query predicates which only compare within a type. A missing field is
not null here: it sorts just below null, so `{$eq: ["$missing", null]}` is
false and `{$lt: ["$missing", null]}` is true.
"""

from __future__ import annotations

from nlq.errors import ExecutionError
from nlq.mql.expressions import check_variable_name, compile_args, compile_expression
from nlq.mql.limits import check_value
from nlq.mql.registry import EXPRESSION, implements
from nlq.mql.values import MISSING, expression_compare, is_truthy


# --- boolean -------------------------------------------------------------------------

@implements(EXPRESSION, "$and")
def _and(args):
    fns = compile_args(args, name="$and")

    def evaluate(vars):
        for fn in fns:
            v = fn(vars)
            if v is not True and not is_truthy(v):
                return False
        return True
    return evaluate


@implements(EXPRESSION, "$or")
def _or(args):
    fns = compile_args(args, name="$or")

    def evaluate(vars):
        for fn in fns:
            v = fn(vars)
            if v is True or is_truthy(v):
                return True
        return False
    return evaluate


@implements(EXPRESSION, "$not")
def _not(args):
    (fn,) = compile_args(args, name="$not", min_args=1, max_args=1)
    return lambda vars: not is_truthy(fn(vars))


# --- comparison ------------------------------------------------------------------------

_TESTS = {
    "$eq": lambda c: c == 0, "$ne": lambda c: c != 0, "$gt": lambda c: c > 0,
    "$gte": lambda c: c >= 0, "$lt": lambda c: c < 0, "$lte": lambda c: c <= 0,
}


def _comparison(name: str, test):
    def compile_(args):
        left, right = compile_args(args, name=name, min_args=2, max_args=2)
        return lambda vars: test(expression_compare(left(vars), right(vars)))
    return compile_


for _name, _test in _TESTS.items():
    implements(EXPRESSION, _name)(_comparison(_name, _test))


@implements(EXPRESSION, "$cmp")
def _cmp(args):
    left, right = compile_args(args, name="$cmp", min_args=2, max_args=2)
    return lambda vars: expression_compare(left(vars), right(vars))


# --- conditional --------------------------------------------------------------------------

@implements(EXPRESSION, "$cond")
def _cond(args):
    if type(args) is dict:
        for key in args:
            if key not in ("if", "then", "else"):
                raise ExecutionError(f"Unrecognized parameter to $cond: {key}")
        for key in ("if", "then", "else"):
            if key not in args:
                raise ExecutionError(f"Missing '{key}' parameter to $cond")
        if_fn, then_fn, else_fn = (compile_expression(args[k]) for k in ("if", "then", "else"))
    else:
        if_fn, then_fn, else_fn = compile_args(args, name="$cond", min_args=3, max_args=3)
    return lambda vars: then_fn(vars) if is_truthy(if_fn(vars)) else else_fn(vars)


@implements(EXPRESSION, "$ifNull")
def _if_null(args):
    fns = compile_args(args, name="$ifNull", min_args=2)
    *inputs, replacement = fns

    def evaluate(vars):
        for fn in inputs:
            v = fn(vars)
            if v is not None and v is not MISSING:
                return v
        return replacement(vars)
    return evaluate


@implements(EXPRESSION, "$switch")
def _switch(args):
    if type(args) is not dict:
        raise ExecutionError(f"$switch requires an object as an argument, found: {type(args).__name__}")
    for key in args:
        if key not in ("branches", "default"):
            raise ExecutionError(f"$switch found an unknown argument: {key}")
    branches_spec = args.get("branches")
    if type(branches_spec) is not list:
        raise ExecutionError("$switch expected an array for 'branches'")
    branches = []
    for branch in branches_spec:
        if type(branch) is not dict:
            raise ExecutionError("$switch expected each branch to be an object")
        for key in branch:
            if key not in ("case", "then"):
                raise ExecutionError(f"$switch found an unknown argument to a branch: {key}")
        if "case" not in branch:
            raise ExecutionError("$switch requires each branch have a 'case' expression")
        if "then" not in branch:
            raise ExecutionError("$switch requires each branch have a 'then' expression.")
        branches.append((compile_expression(branch["case"]), compile_expression(branch["then"])))
    if not branches:
        raise ExecutionError("$switch requires at least one branch.")
    default = compile_expression(args["default"]) if "default" in args else None

    def evaluate(vars):
        for case, then in branches:
            if is_truthy(case(vars)):
                return then(vars)
        if default is None:
            raise ExecutionError("$switch could not find a matching branch for an input, and no default was "
                                 "specified.", code=40066)
        return default(vars)
    return evaluate


# --- variables --------------------------------------------------------------------------

@implements(EXPRESSION, "$let")
def _let(args):
    if type(args) is not dict:
        raise ExecutionError("$let only supports an object as its argument")
    for key in args:
        if key not in ("vars", "in"):
            raise ExecutionError(f"Unrecognized parameter to $let: {key}")
    if "vars" not in args:
        raise ExecutionError("Missing 'vars' parameter to $let")
    if "in" not in args:
        raise ExecutionError("Missing 'in' parameter to $let")
    if type(args["vars"]) is not dict:
        raise ExecutionError("invalid parameter: expected an object (vars)")
    # A value built by an expression is measured (nested $let levels may share parts and double at
    # each level); a field path or a variable only names a value that exists already.
    bindings = [(check_variable_name("$let", name), compile_expression(spec),
                 not (type(spec) is str and spec.startswith("$"))) for name, spec in args["vars"].items()]
    body = compile_expression(args["in"])

    def evaluate(vars):
        scope = dict(vars)
        for name, fn, built in bindings:  # all evaluated in the outer scope
            value = scope[name] = fn(vars)
            if built and (type(value) is dict or type(value) is list):
                check_value("$let", value)
        return body(scope)
    return evaluate


@implements(EXPRESSION, "$literal")
def _literal(args):
    return lambda vars: args

