"""Static analysis of a pipeline: which operators it uses, and where.

The operators are those the scoped walk (:mod:`nlq.mql.scope`) meets, each
with the kind its position gives it (STYLE.md rule 12): stage names, query
operators inside `$match` (and `$elemMatch`, `$graphLookup.restrictSearchWithMatch`...),
aggregation expressions, accumulators of `$group`/`$bucket`, window functions
of `$setWindowFields`, sub-pipelines of `$lookup`/`$facet`/`$unionWith`, and
the `$$variables` bound by `let`, `$map`, `$filter`, `$reduce`... Field names
(`$project`, `$group`, `$addFields` keys, `let` names) are never taken for
operators, and whatever sits under `$literal` is data.

    >>> from nlq.mql.query import Query
    >>> [(n, k) for n, k, _ in operators(Query("c", [{"$group": {"_id": "$a", "n": {"$sum": 1}}}]))]
    [('$group', 'stage'), ('$sum', 'accumulator')]

Every name, property and argument shape comes from :mod:`nlq.mql.registry`.
"""

from __future__ import annotations

from typing import Iterator

from nlq.errors import ExecutionError, ForbiddenOperatorError, UnknownOperatorError
from nlq.mql import registry, scope
from nlq.mql.query import Query
from nlq.mql.registry import ACCUMULATOR, EXPRESSION, PROJECTION, QUERY, STAGE, VARIABLE, WINDOW

Path = tuple
Occurrence = tuple[str, str, Path]  # (name, kind, path inside the pipeline)

_FORBIDDEN_VARIABLE_PREFIXES = tuple(n for n in registry.FORBIDDEN if n.startswith("$$"))


def _pipeline_of(query) -> list:
    if isinstance(query, Query):
        return query.pipeline
    if isinstance(query, dict) and "pipeline" in query:
        return query["pipeline"]
    return query


def visit(query) -> scope.Walk:
    """The scoped walk of a Query, a `{collection, pipeline}` dict or a bare pipeline, without a schema."""
    pipeline = _pipeline_of(query)
    return scope.walk(Query(None, pipeline if isinstance(pipeline, list) else []), {})


def operators(query) -> list[Occurrence]:
    """Every operator occurrence as `(name, kind, path)`, in document order."""
    return visit(query).operators


def variables(query) -> list[tuple[str, bool, Path]]:
    """Every `$$variable` reference as `($$name, bound, path)`; unbound user variables are errors."""
    return visit(query).variables


# -- the public checks -----------------------------------------------------------

def forbidden(query) -> list[str]:
    """The forbidden operators a query uses, at any depth, each once in order of appearance.

    Besides operators in operator position this finds `"$$NOW"` and
    `"$$CLUSTER_TIME"` (also `"$$NOW.x"`) in any string outside `$literal`.
    """
    names = [name for name, _, _ in operators(query) if (op := registry.get(name)) and op.forbidden]
    names += _forbidden_variables(_pipeline_of(query))
    return list(dict.fromkeys(names))


def check_forbidden(query) -> None:
    """Raise ForbiddenOperatorError naming every forbidden operator the query uses (one message for
    the engine, the MongoDB backend and scoring); ExecutionError for a query nested too deeply
    to walk.

        $sample, $$NOW, $out are forbidden (nlq runs only read-only, deterministic queries); never executed
    """
    try:
        names = forbidden(query)
    except RecursionError:
        raise ExecutionError("the query is nested too deeply to be checked") from None
    if names:
        verb = "is" if len(names) == 1 else "are"
        raise ForbiddenOperatorError(f"{', '.join(names)} {verb} forbidden (nlq runs only read-only, "
                                     f"deterministic queries); never executed")


def _forbidden_variables(value) -> Iterator[str]:
    t = type(value)
    if t is str:
        if value.startswith(_FORBIDDEN_VARIABLE_PREFIXES):
            name = value.split(".", 1)[0]
            if name in registry.FORBIDDEN:
                yield name
    elif t is list:
        for element in value:
            yield from _forbidden_variables(element)
    elif t is dict:
        for key, element in value.items():
            if key != "$literal":
                yield from _forbidden_variables(element)


def order_sensitive(query) -> bool:
    """The pipeline has a root `$sort`, `$limit`, `$skip` or `$setWindowFields`."""
    return any(isinstance(stage, dict) and not set(stage).isdisjoint(registry.ORDER_SENSITIVE_STAGES)
               for stage in _pipeline_of(query))


# The registry kinds an occurrence of each visitor kind may have.
_ACCEPTED_KINDS = {
    STAGE: (STAGE,), QUERY: (QUERY,), EXPRESSION: (EXPRESSION,), ACCUMULATOR: (ACCUMULATOR,),
    WINDOW: (WINDOW, ACCUMULATOR), PROJECTION: (PROJECTION,), VARIABLE: (VARIABLE,),
}


def _describe(kind: str) -> str:
    return {STAGE: "stage", QUERY: "query operator", EXPRESSION: "expression operator",
            ACCUMULATOR: "accumulator", WINDOW: "window function", PROJECTION: "projection operator",
            VARIABLE: "system variable"}[kind]


def unknown_operators(query) -> list[str]:
    """Messages for names unknown in their position, with a did-you-mean suggestion.

        unknown operator $sortby — did you mean $sort? (as a stage at 1.$sortby)
        $match is not an expression operator (it is a stage operator; at 0.$project.a.$match)
    """
    messages = []
    for name, kind, path in operators(query):
        accepted = _ACCEPTED_KINDS[kind]
        if any(registry.is_known(name, k) for k in accepted):
            continue
        where = ".".join(str(p) for p in path)
        role = _describe(kind)
        article = "an" if role[0] in "aeiou" else "a"
        op = registry.get(name)
        if op is None:
            messages.append(f"unknown operator {name}{registry.suggestion(name, accepted[0])} "
                            f"(as {article} {role} at {where})")
        else:
            messages.append(f"{name} is not {article} {role} (it is a "
                            f"{' and '.join(k for k in registry.KINDS if k in op.kinds)} operator; at {where})")
    return messages


def check_operators(query) -> None:
    """Raise UnknownOperatorError for the first operator unknown in its position."""
    problems = unknown_operators(query)
    if problems:
        raise UnknownOperatorError(problems[0])


__all__ = ["visit", "operators", "variables", "forbidden", "check_forbidden", "order_sensitive",
           "unknown_operators", "check_operators"]
