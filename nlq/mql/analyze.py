"""Static analysis of a pipeline: which operators it uses, and where.

One visitor walks a pipeline knowing what each position means (STYLE.md
rule 12): stage names, query operators inside `$match` (and `$elemMatch`,
`$graphLookup.restrictSearchWithMatch`...), aggregation expressions,
accumulators of `$group`/`$bucket`, window functions of `$setWindowFields`,
sub-pipelines of `$lookup`/`$facet`/`$unionWith`, and the `$$variables` bound
by `let`, `$map`, `$filter`, `$reduce`... Field names (`$project`, `$group`,
`$addFields` keys, `let` names) are never taken for operators, and whatever
sits under `$literal` is data.

    >>> from nlq.mql.query import Query
    >>> [(n, k) for n, k, _ in operators(Query("c", [{"$group": {"_id": "$a", "n": {"$sum": 1}}}]))]
    [('$group', 'stage'), ('$sum', 'accumulator')]

Every name and property comes from :mod:`nlq.mql.registry`.
"""

from __future__ import annotations

from typing import Iterator

from nlq.errors import ExecutionError, ForbiddenOperatorError, UnknownOperatorError
from nlq.mql import registry
from nlq.mql.query import Query
from nlq.mql.registry import ACCUMULATOR, EXPRESSION, PROJECTION, QUERY, STAGE, VARIABLE, WINDOW

Path = tuple
Occurrence = tuple[str, str, Path]  # (name, kind, path inside the pipeline)

_LOGICAL = {"$and", "$or", "$nor"}
# Query operators whose argument is plain data (values compared, never evaluated).
_DATA_QUERY_OPS = {"$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin", "$exists", "$type",
                   "$size", "$mod", "$regex", "$options", "$bitsAllClear", "$bitsAllSet",
                   "$bitsAnyClear", "$bitsAnySet", "$comment", "$jsonSchema", "$text", "$maxDistance",
                   "$minDistance"}
_GEO_QUERY_OPS = {"$geoWithin", "$geoIntersects", "$near", "$nearSphere"}
# Variables an expression binds for its sub-expressions.
_REDUCE_VARS = ("value", "this")
_FORBIDDEN_VARIABLE_PREFIXES = tuple(n for n in registry.FORBIDDEN if n.startswith("$$"))


def _pipeline_of(query) -> list:
    if isinstance(query, Query):
        return query.pipeline
    if isinstance(query, dict) and "pipeline" in query:
        return query["pipeline"]
    return query


class Visitor:
    """Walks a pipeline and yields every operator occurrence with its kind and path.

    Kinds are the registry's: stage, query, expression, accumulator, window,
    projection, variable (system variables such as `$$ROOT` and user
    variables `$$x`; `bound` in :meth:`variables` tells them apart).
    """

    def __init__(self):
        self.found: list[Occurrence] = []
        self.variable_refs: list[tuple[str, bool, Path]] = []  # ($$name, bound?, path)

    def report(self, name: str, kind: str, path: Path) -> None:
        self.found.append((name, kind, path))

    # -- pipelines and stages ------------------------------------------------

    def pipeline(self, stages, path: Path = (), scope: frozenset = frozenset()) -> None:
        if not isinstance(stages, list):
            return
        for i, stage in enumerate(stages):
            if isinstance(stage, dict):
                for name, arg in stage.items():
                    self.stage(name, arg, path + (i, name), scope)

    def stage(self, name: str, arg, path: Path, scope: frozenset) -> None:
        self.report(name, STAGE, path)
        handler = _STAGE_HANDLERS.get(name)
        if handler is not None:
            handler(self, arg, path, scope)
        elif name not in _OPAQUE_STAGES:
            # An unknown stage: walk its argument as an expression so that
            # nested operators (forbidden ones included) are still seen.
            self.expression(arg, path, scope)

    # -- query language ($match) ---------------------------------------------

    def query(self, filter_, path: Path, scope: frozenset) -> None:
        if not isinstance(filter_, dict):
            return
        for key, value in filter_.items():
            where = path + (key,)
            if key.startswith("$"):
                self.report(key, QUERY, where)
                if key in _LOGICAL and isinstance(value, list):
                    for i, sub in enumerate(value):
                        self.query(sub, where + (i,), scope)
                elif key == "$expr":
                    self.expression(value, where, scope)
            elif _is_operator_object(value):
                self.field_operators(value, where, scope)

    def field_operators(self, spec: dict, path: Path, scope: frozenset) -> None:
        """`{$gt: 1, $lt: 5}` applied to a field."""
        for op, arg in spec.items():
            where = path + (op,)
            self.report(op, QUERY, where)
            if op == "$not":
                if _is_operator_object(arg):
                    self.field_operators(arg, where, scope)
            elif op == "$elemMatch" and isinstance(arg, dict):
                if _is_operator_object(arg) and not set(arg) & (_LOGICAL | {"$expr", "$where"}):
                    self.field_operators(arg, where, scope)
                else:
                    self.query(arg, where, scope)
            elif op == "$all" and isinstance(arg, list):
                for i, element in enumerate(arg):
                    if isinstance(element, dict) and "$elemMatch" in element:
                        self.field_operators(element, where + (i,), scope)
            elif op in _GEO_QUERY_OPS and isinstance(arg, dict):
                for shape, _ in arg.items():
                    if shape.startswith("$"):
                        self.report(shape, QUERY, where + (shape,))

    # -- aggregation expressions ---------------------------------------------

    def expression(self, expr, path: Path, scope: frozenset) -> None:
        t = type(expr)
        if t is str:
            if expr.startswith("$$"):
                self.variable(expr, path, scope)
        elif t is list:
            for i, element in enumerate(expr):
                self.expression(element, path + (i,), scope)
        elif t is dict:
            if expr and next(iter(expr)).startswith("$"):
                for op, arg in expr.items():
                    self.operator(op, arg, path + (op,), scope)
            else:
                for key, value in expr.items():
                    if key.startswith("$"):  # invalid in MongoDB; report so it is not missed
                        self.operator(key, value, path + (key,), scope)
                    else:
                        self.expression(value, path + (key,), scope)

    def variable(self, ref: str, path: Path, scope: frozenset) -> None:
        name = ref[2:].split(".", 1)[0]
        system = "$$" + name
        if registry.is_known(system, VARIABLE):
            self.report(system, VARIABLE, path)
            self.variable_refs.append((system, True, path))
        else:
            self.variable_refs.append((system, name in scope, path))

    def operator(self, op: str, arg, path: Path, scope: frozenset) -> None:
        self.report(op, EXPRESSION, path)
        if op == "$literal":
            return
        if op == "$let" and isinstance(arg, dict):
            bound = arg.get("vars")
            if isinstance(bound, dict):
                for name, value in bound.items():
                    self.expression(value, path + ("vars", name), scope)
                scope = scope | set(bound)
            self.expression(arg.get("in"), path + ("in",), scope)
            return
        if op in ("$map", "$filter") and isinstance(arg, dict):
            name = arg.get("as", "this")
            inner = scope | {name} if isinstance(name, str) else scope
            for key, value in arg.items():
                self.expression(value, path + (key,), inner if key in ("in", "cond") else scope)
            return
        if op == "$reduce" and isinstance(arg, dict):
            for key, value in arg.items():
                self.expression(value, path + (key,), scope | set(_REDUCE_VARS) if key == "in" else scope)
            return
        if op == "$sortArray" and isinstance(arg, dict):
            self.expression(arg.get("input"), path + ("input",), scope)
            return
        self.expression(arg, path, scope)

    def accumulator_argument(self, arg, path: Path, scope: frozenset) -> None:
        if isinstance(arg, dict) and "sortBy" in arg and ("output" in arg or "n" in arg):
            # $top/$bottom(N): sortBy holds field names and sort orders, not expressions.
            for key, value in arg.items():
                if key != "sortBy":
                    self.expression(value, path + (key,), scope)
        else:
            self.expression(arg, path, scope)

    # -- accumulators, windows and projections ---------------------------------

    def accumulators(self, spec, path: Path, scope: frozenset, skip: tuple = ()) -> None:
        """`{field: {$acc: arg}}` of $group, $bucket and $bucketAuto output."""
        if not isinstance(spec, dict):
            return
        for field, value in spec.items():
            if field in skip:
                continue
            if isinstance(value, dict):
                for op, arg in value.items():
                    self.report(op, ACCUMULATOR, path + (field, op))
                    self.accumulator_argument(arg, path + (field, op), scope)
            else:
                self.expression(value, path + (field,), scope)

    def windows(self, spec, path: Path, scope: frozenset) -> None:
        """`{field: {$windowOp: arg, window: {...}}}` of $setWindowFields output."""
        if not isinstance(spec, dict):
            return
        for field, value in spec.items():
            if not isinstance(value, dict):
                continue
            for op, arg in value.items():
                if op == "window" or not op.startswith("$"):
                    continue
                self.report(op, WINDOW, path + (field, op))
                self.accumulator_argument(arg, path + (field, op), scope)

    def projection(self, spec, path: Path, scope: frozenset) -> None:
        """`$project` fields: 0/1 flags, expressions, or nested projections."""
        if not isinstance(spec, dict):
            return
        for field, value in spec.items():
            where = path + (field,)
            if field == "$" or field.endswith(".$"):
                self.report("$", PROJECTION, where)
            if isinstance(value, dict) and value and not next(iter(value)).startswith("$"):
                self.projection(value, where, scope)
            elif not isinstance(value, (int, float)):  # 0/1/true/false are inclusion flags
                self.expression(value, where, scope)


def _is_operator_object(value) -> bool:
    return isinstance(value, dict) and bool(value) and next(iter(value)).startswith("$")


# -- stage handlers ------------------------------------------------------------

def _match(v: Visitor, arg, path, scope):
    v.query(arg, path, scope)


def _expression_arg(v: Visitor, arg, path, scope):
    v.expression(arg, path, scope)


def _fields_arg(v: Visitor, arg, path, scope):
    if isinstance(arg, dict):
        for key, value in arg.items():
            v.expression(value, path + (key,), scope)


def _project(v: Visitor, arg, path, scope):
    v.projection(arg, path, scope)


def _group(v: Visitor, arg, path, scope):
    if isinstance(arg, dict):
        v.expression(arg.get("_id"), path + ("_id",), scope)
        v.accumulators(arg, path, scope, skip=("_id",))


def _bucket(v: Visitor, arg, path, scope):
    if isinstance(arg, dict):
        v.expression(arg.get("groupBy"), path + ("groupBy",), scope)
        v.accumulators(arg.get("output"), path + ("output",), scope)


def _sort(v: Visitor, arg, path, scope):
    if isinstance(arg, dict):
        for key, value in arg.items():
            if isinstance(value, dict):
                v.expression(value, path + (key,), scope)  # {$meta: "textScore"}


def _lookup(v: Visitor, arg, path, scope):
    if not isinstance(arg, dict):
        return
    bound = arg.get("let")
    inner = scope
    if isinstance(bound, dict):
        for name, value in bound.items():
            v.expression(value, path + ("let", name), scope)
        inner = scope | set(bound)
    v.pipeline(arg.get("pipeline"), path + ("pipeline",), inner)


def _graph_lookup(v: Visitor, arg, path, scope):
    if isinstance(arg, dict):
        v.expression(arg.get("startWith"), path + ("startWith",), scope)
        v.query(arg.get("restrictSearchWithMatch"), path + ("restrictSearchWithMatch",), scope)


def _facet(v: Visitor, arg, path, scope):
    if isinstance(arg, dict):
        for name, sub in arg.items():
            v.pipeline(sub, path + (name,), scope)


def _union_with(v: Visitor, arg, path, scope):
    if isinstance(arg, dict):
        v.pipeline(arg.get("pipeline"), path + ("pipeline",), scope)


def _replace_root(v: Visitor, arg, path, scope):
    if isinstance(arg, dict):
        v.expression(arg.get("newRoot"), path + ("newRoot",), scope)


def _set_window_fields(v: Visitor, arg, path, scope):
    if isinstance(arg, dict):
        v.expression(arg.get("partitionBy"), path + ("partitionBy",), scope)
        v.windows(arg.get("output"), path + ("output",), scope)


def _fill(v: Visitor, arg, path, scope):
    if isinstance(arg, dict):
        v.expression(arg.get("partitionBy"), path + ("partitionBy",), scope)
        output = arg.get("output")
        if isinstance(output, dict):
            for field, spec in output.items():
                if isinstance(spec, dict) and "value" in spec:
                    v.expression(spec["value"], path + ("output", field, "value"), scope)


def _geo_near(v: Visitor, arg, path, scope):
    if isinstance(arg, dict):
        v.query(arg.get("query"), path + ("query",), scope)


def _merge(v: Visitor, arg, path, scope):
    if isinstance(arg, dict):
        bound = arg.get("let")
        inner = scope | set(bound) if isinstance(bound, dict) else scope
        v.pipeline(arg.get("whenMatched"), path + ("whenMatched",), inner | {"new"})


_STAGE_HANDLERS = {
    "$match": _match, "$project": _project, "$addFields": _fields_arg, "$set": _fields_arg,
    "$group": _group, "$bucket": _bucket, "$bucketAuto": _bucket, "$sort": _sort,
    "$lookup": _lookup, "$graphLookup": _graph_lookup, "$facet": _facet, "$unionWith": _union_with,
    "$replaceRoot": _replace_root, "$replaceWith": _expression_arg, "$sortByCount": _expression_arg,
    "$redact": _expression_arg, "$documents": _expression_arg, "$setWindowFields": _set_window_fields,
    "$fill": _fill, "$geoNear": _geo_near, "$merge": _merge,
}
# Stages whose argument holds no operators (names, numbers, options) or is
# another language (Atlas Search).
_OPAQUE_STAGES = {"$limit", "$skip", "$count", "$unset", "$unwind", "$sample", "$out", "$densify",
                  "$search", "$searchMeta", "$vectorSearch", "$collStats", "$indexStats",
                  "$currentOp", "$listSessions", "$listLocalSessions", "$planCacheStats",
                  "$changeStream", "$listSearchIndexes", "$listSampledQueries", "$querySettings",
                  "$queryStats", "$shardedDataDistribution", "$listClusterCatalog",
                  "$changeStreamSplitLargeEvent", "$rankFusion", "$scoreFusion"}


# -- the public checks -----------------------------------------------------------

def visit(query) -> Visitor:
    """Run the visitor over a Query, a `{collection, pipeline}` dict or a bare pipeline."""
    visitor = Visitor()
    visitor.pipeline(_pipeline_of(query))
    return visitor


def operators(query) -> list[Occurrence]:
    """Every operator occurrence as `(name, kind, path)`, in document order."""
    return visit(query).found


def variables(query) -> list[tuple[str, bool, Path]]:
    """Every `$$variable` reference as `($$name, bound, path)`; unbound user variables are errors."""
    return visit(query).variable_refs


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


__all__ = ["Visitor", "visit", "operators", "variables", "forbidden", "check_forbidden", "order_sensitive",
           "unknown_operators", "check_operators"]
