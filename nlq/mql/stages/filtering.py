"""Stages that keep or prune documents: $match and $redact."""

from __future__ import annotations

from nlq.errors import ExecutionError
from nlq.mql import registry
from nlq.mql.expressions import compile_expression
from nlq.mql.match import compile_filter
from nlq.mql.registry import STAGE, implements
from nlq.mql.stages.base import Marker

# ---------------------------------------------------------------------------
# $match  (https://www.mongodb.com/docs/manual/reference/operator/aggregation/match/)


@implements(STAGE, "$match")
def compile_match(spec, ctx):
    if type(spec) is not dict:
        raise ExecutionError("the match filter must be an expression in an object")
    predicate = compile_filter(spec, ctx.variables)
    check = ctx.check

    def match(stream):
        for doc in stream:
            check()
            if predicate(doc):
                yield doc
    return match


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
