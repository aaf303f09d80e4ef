"""Stages that bring in other documents or run sub-pipelines: $lookup,
$graphLookup, $unionWith, $documents and $facet."""

from __future__ import annotations

from bson.int64 import Int64

from nlq.errors import ExecutionError, UnsupportedOperatorError
from nlq.mql import registry
from nlq.mql.expressions import compile_expression, traverse
from nlq.mql.match import compile_filter, equality_keys
from nlq.mql.registry import STAGE, implements
from nlq.mql.stages.base import (as_float, check_keys, checked, integral_number, is_num, materialize, set_nested,
                                 split_path)
from nlq.mql.values import MISSING, bson_type, group_key

# ---------------------------------------------------------------------------
# $lookup  (https://www.mongodb.com/docs/manual/reference/operator/aggregation/lookup/)


def _local_values(doc, parts: tuple[str, ...]) -> list:
    """The values a document's localField offers to the join: embedded documents and
    arrays of them are walked (a numeric component indexes an array), a leaf array
    counts element by element, and when nothing is found the value is null
    (jstests/aggregation/sources/lookup/lookup_equijoin_semantics.js)."""
    if len(parts) == 1 and type(doc) is dict:  # a top-level field: the walk below in one step
        value = doc.get(parts[0], MISSING)
        if type(value) is list:
            return list(value) or [None]
        return [None] if value is MISSING else [value]
    out: list = []
    last = len(parts)

    def walk(value, i):
        if i == last:
            if type(value) is list:
                out.extend(value)
            elif value is not MISSING:
                out.append(value)
            return
        t = type(value)
        if t is dict:
            walk(value.get(parts[i], MISSING), i + 1)
        elif t is list:
            if parts[i].isdigit():
                idx = int(parts[i])
                if idx < len(value):
                    walk(value[idx], i + 1)
            else:
                for element in value:
                    if type(element) is dict:
                        walk(element, i)
    walk(doc, 0)
    return out or [None]


class _ForeignIndex:
    """Foreign documents keyed by every value an equality on foreignField matches.

    The documents a single string or int (not bool) local value matches are remembered by that
    value itself: among those two types, Python's equality and hashing are BSON's equality
    (1 == 1.0 is only a question for doubles, which take the general key), so the look-up of a
    repeated value skips building its `group_key`."""

    def __init__(self, docs: list, parts: tuple[str, ...], check):
        self.docs = docs
        self.index: dict = {}
        self.memo: dict = {}  # str or int local value -> the documents it matches (never mutated)
        index = self.index
        name = parts[0] if len(parts) == 1 else None
        for i, doc in enumerate(docs):
            check()
            if name is not None and type(doc) is dict:
                value = doc.get(name, MISSING)
                if type(value) is str or type(value) is int:  # equality_keys: this one key
                    key = group_key(value)
                    found = index.get(key)
                    if found is None:
                        index[key] = [i]
                    else:
                        found.append(i)
                    continue
            for key in equality_keys(doc, parts):
                found = index.setdefault(key, [])
                if not found or found[-1] != i:  # each key's documents ascending, each once
                    found.append(i)

    def joined(self, doc, local_parts: tuple[str, ...]) -> list:
        """The documents `doc` joins by its localField (a list the caller must not change)."""
        if len(local_parts) == 1 and type(doc) is dict:
            value = doc.get(local_parts[0], MISSING)
            if type(value) is str or type(value) is int:
                found = self.memo.get(value)
                if found is not None:
                    return found
            if type(value) is not list and value is not MISSING:  # one top-level local value
                return self.matching_one(value)
        return self.matching(_local_values(doc, local_parts))

    def matching(self, values: list) -> list:
        """The documents any of `values` matches, in collection order, each once (a list the
        caller must not change)."""
        if len(values) == 1:
            return self.matching_one(values[0])
        hits: set = set()
        for value in values:
            found = self.index.get(group_key(value))
            if found:
                hits.update(found)
        return [self.docs[i] for i in sorted(hits)]

    def matching_one(self, value) -> list:
        t = type(value)
        if t is str or t is int:
            found = self.memo.get(value)
            if found is None:
                found = self.memo[value] = self._matching_one(value)
            return found
        return self._matching_one(value)

    def _matching_one(self, value) -> list:
        found = self.index.get(group_key(value))
        return [self.docs[i] for i in found] if found else []


_LOOKUP_KEYS = ("from", "localField", "foreignField", "as", "let", "pipeline")


@implements(STAGE, "$lookup")
def compile_lookup(spec, ctx):
    if type(spec) is not dict:
        raise ExecutionError("the $lookup stage specification must be an object")
    for key in spec:
        if key not in _LOOKUP_KEYS:
            raise ExecutionError(f"unknown argument to $lookup: {key}")
    as_field = spec.get("as")
    if type(as_field) is not str:
        raise ExecutionError("must specify 'as' field for a $lookup")
    as_parts = split_path(as_field, "$lookup 'as'")
    source = spec.get("from", MISSING)
    pipeline = spec.get("pipeline", MISSING)
    if type(source) is dict:
        raise UnsupportedOperatorError("the embedded engine does not support $lookup from another database")
    starts_with_documents = (type(pipeline) is list and bool(pipeline) and type(pipeline[0]) is dict
                             and "$documents" in pipeline[0])
    if source is MISSING:
        if not starts_with_documents:
            raise ExecutionError("$lookup requires 'from' unless its pipeline starts with $documents")
    elif type(source) is not str or not source:
        raise ExecutionError("$lookup 'from' must be a collection name (a string)")
    has_local, has_foreign = "localField" in spec, "foreignField" in spec
    if has_local != has_foreign:
        raise ExecutionError("$lookup requires both or neither of 'localField' and 'foreignField' to be specified")
    if not has_local and pipeline is MISSING:
        raise ExecutionError("$lookup requires either 'pipeline' or both 'localField' and 'foreignField'")
    if "let" in spec and pipeline is MISSING:
        raise ExecutionError("$lookup with 'let' must also specify a 'pipeline'")
    local_parts = foreign_parts = None
    if has_local:
        if type(spec["localField"]) is not str or type(spec["foreignField"]) is not str:
            raise ExecutionError("$lookup 'localField' and 'foreignField' must be strings")
        local_parts = split_path(spec["localField"], "$lookup 'localField'")
        foreign_parts = split_path(spec["foreignField"], "$lookup 'foreignField'")
    lets = spec.get("let", {})
    if type(lets) is not dict:
        raise ExecutionError("$lookup argument 'let' must be an object")
    let_fns = []
    for name, expr in lets.items():
        if type(name) is not str or not name or not (name[0].islower() or not name[0].isascii()) \
                or not all(c.isalnum() or c == "_" or not c.isascii() for c in name):
            raise ExecutionError(f"'{name}' starts with an invalid character for a user variable name")
        let_fns.append((name, compile_expression(expr)))
    scope: dict = {}
    sub = documents = None
    if pipeline is not MISSING:
        if type(pipeline) is not list:
            raise ExecutionError("$lookup argument 'pipeline' must be an array")
        if starts_with_documents and has_local:
            # the foreign documents are the $documents stage's; the equality on localField/foreignField
            # keeps those that match, then the rest of the pipeline runs (manual: $documents, "Use a
            # $documents Stage in a $lookup Stage")
            documents = ctx.compile_pipeline(pipeline[:1], scope)
            pipeline = pipeline[1:]
        sub = ctx.compile_pipeline(pipeline, scope)
    check = ctx.check
    vars_of = ctx.binder()

    def lookup(stream):
        foreign = ctx.catalog(source) if source is not MISSING else []
        index = None
        for doc in stream:
            check()
            if let_fns:
                vars = vars_of(doc)
                for name, fn in let_fns:
                    scope[name] = fn(vars)
            if documents is not None:  # the $documents may read this document's `let` variables
                index = _ForeignIndex(materialize(documents(iter(())), check), foreign_parts, check)
            if local_parts is not None:
                if index is None:
                    index = _ForeignIndex(foreign, foreign_parts, check)
                matched = index.joined(doc, local_parts)
            else:
                matched = foreign
            if sub is not None:
                joined = materialize(sub(checked(matched, check)), check)
            else:
                joined = list(matched)  # (each document its own array)
            yield set_nested(doc, as_parts, joined)
    return lookup


def lookup_index(spec, ctx):
    """For a `$lookup` of the localField/foreignField form alone (no `let`, no `pipeline`; its
    compiler has checked the spec): `(index_of, local_parts)`, `index_of()` reading and indexing
    the `from` collection (call it on a run's first document, as the stage does) and
    `index_of().joined(doc, local_parts)` the foreign documents `doc` joins, in collection order
    (a list the caller must not change). None for any other `$lookup`."""
    if type(spec) is not dict or set(spec) != {"from", "localField", "foreignField", "as"}:
        return None
    source = spec["from"]
    foreign_parts = split_path(spec["foreignField"], "$lookup 'foreignField'")
    return (lambda: _ForeignIndex(ctx.catalog(source), foreign_parts, ctx.check),
            split_path(spec["localField"], "$lookup 'localField'"))


# ---------------------------------------------------------------- $graphLookup
# https://www.mongodb.com/docs/manual/reference/operator/aggregation/graphLookup/


def _path_leaves(doc, parts) -> list:
    """Values at a dotted path, arrays flattened one level (as graph edges are read)."""
    v = traverse(doc, parts)
    if v is MISSING:
        return []
    if type(v) is list:
        out = []
        for e in v:
            if type(e) is list:
                out.extend(e)
            else:
                out.append(e)
        return out
    return [v]


@registry.implements(STAGE, "$graphLookup")
def compile_graph_lookup(spec, ctx):
    """Streams; the `from` collection is indexed once by `connectToField` on first use."""
    allowed = {"from", "startWith", "connectFromField", "connectToField", "as", "maxDepth", "depthField",
               "restrictSearchWithMatch"}
    check_keys("$graphLookup", spec, allowed, code=40104)
    for key in ("from", "startWith", "connectFromField", "connectToField", "as"):
        if key not in spec:
            raise ExecutionError("$graphLookup requires 'from', 'as', 'startWith', 'connectFromField' and "
                                 "'connectToField' to be specified", code=40105)
    from_name = spec["from"]
    if type(from_name) is not str:
        raise ExecutionError(f"$graphLookup 'from' must be a string, found {bson_type(from_name)}", code=40103)
    start_fn = compile_expression(spec["startWith"])
    from_parts = split_path(spec["connectFromField"], "$graphLookup 'connectFromField'")
    to_parts = split_path(spec["connectToField"], "$graphLookup 'connectToField'")
    as_parts = split_path(spec["as"], "$graphLookup 'as'")
    depth_parts = split_path(spec["depthField"], "$graphLookup 'depthField'") if "depthField" in spec else None
    max_depth = None
    if "maxDepth" in spec:
        md = spec["maxDepth"]
        if not is_num(md) or type(md) is bool:
            raise ExecutionError(f"maxDepth must be numeric, found type: {bson_type(md)}", code=40100)
        if not integral_number(md):
            raise ExecutionError(f"maxDepth requires an integer, found: {md!r}", code=40102)
        max_depth = int(as_float(md))
        if max_depth < 0:
            raise ExecutionError(f"maxDepth requires a nonnegative argument, found: {max_depth}", code=40101)
    restrict = None
    if "restrictSearchWithMatch" in spec:
        rs = spec["restrictSearchWithMatch"]
        if type(rs) is not dict:
            raise ExecutionError(f"restrictSearchWithMatch must be an object, found {bson_type(rs)}", code=40185)
        restrict = compile_filter(rs, ctx.variables)
    check, vars_of = ctx.check, ctx.vars
    state: dict = {}

    def index() -> dict:
        idx = state.get("index")
        if idx is None:
            idx = {}
            for doc in ctx.catalog(from_name):
                check()
                if restrict is not None and not restrict(doc):
                    continue
                for key in equality_keys(doc, to_parts):
                    idx.setdefault(key, []).append(doc)
            state["index"] = idx
        return idx

    def graph_lookup(stream):
        idx = None
        for doc in stream:
            check()
            if idx is None:
                idx = index()
            start = start_fn(vars_of(doc))
            frontier = start if type(start) is list else [None if start is MISSING else start]
            found: dict = {}
            queried = set()
            depth = 0
            while frontier and (max_depth is None or depth <= max_depth):
                next_values = []
                for value in frontier:
                    check()
                    key = group_key(value)
                    if key in queried:
                        continue
                    queried.add(key)
                    for target in idx.get(key, ()):
                        if id(target) in found:
                            continue
                        found[id(target)] = (target, depth)
                        next_values.extend(_path_leaves(target, from_parts))
                frontier = next_values
                depth += 1
            results = []
            for target, d in found.values():
                results.append(set_nested(target, depth_parts, Int64(d)) if depth_parts else target)
            yield set_nested(doc, as_parts, results)
    return graph_lookup


# ---------------------------------------------------------------- $unionWith / $documents / $redact


@registry.implements(STAGE, "$unionWith")
def compile_union_with(spec, ctx):
    """Streams the input, then the (piped) documents of the other collection."""
    if type(spec) is str:
        coll, pipeline = spec, []
    elif type(spec) is dict:
        check_keys("$unionWith", spec, {"coll", "pipeline"})
        coll = spec.get("coll")
        pipeline = spec.get("pipeline", [])
        if coll is None and "pipeline" not in spec:
            raise ExecutionError("$unionWith requires 'coll' or a 'pipeline' starting with $documents", code=40321)
        if coll is not None and type(coll) is not str:
            raise ExecutionError(f"$unionWith 'coll' must be a string, found {bson_type(coll)}")
        if type(pipeline) is not list:
            raise ExecutionError(f"$unionWith 'pipeline' must be an array, found {bson_type(pipeline)}")
    else:
        raise ExecutionError(f"the $unionWith stage takes a string or an object, found {bson_type(spec)}",
                             code=40319)
    sub = ctx.compile_pipeline(pipeline)

    def union_with(stream):
        yield from stream
        yield from sub(ctx.catalog(coll) if coll is not None else [])
    return union_with


@registry.implements(STAGE, "$documents")
def compile_documents(spec, ctx):
    """Emits the documents an expression evaluates to (the input stream is ignored)."""
    fn = compile_expression(spec)

    def documents(stream):
        value = fn({**ctx.variables, "CURRENT": {}, "ROOT": {}})
        if type(value) is not list or any(type(d) is not dict for d in value):
            raise ExecutionError(f"error during $documents: the expression must evaluate to an array of objects, "
                                 f"got {bson_type(value)}", code=5858203)
        for d in value:
            ctx.check()
            yield d
    return documents


# ---------------------------------------------------------------------------
# $facet  (https://www.mongodb.com/docs/manual/reference/operator/aggregation/facet/)

_NOT_IN_FACET = frozenset("$collStats $facet $geoNear $indexStats $out $merge $planCacheStats $search "
                          "$searchMeta $vectorSearch $changeStream".split())


@implements(STAGE, "$facet")
def compile_facet(spec, ctx):
    if type(spec) is not dict or not spec:
        raise ExecutionError("the $facet specification must be a non-empty object")
    facets = []
    for name, pipeline in spec.items():
        if type(name) is not str or not name or name.startswith("$") or "." in name:
            raise ExecutionError(f"$facet output field names may not be empty, start with '$' or contain '.': "
                                 f"{name!r}")
        if type(pipeline) is not list:
            raise ExecutionError(f"arguments to $facet must be arrays, {name} is type {bson_type(pipeline)}")
        for stage in pipeline:
            if type(stage) is dict and len(stage) == 1 and next(iter(stage)) in _NOT_IN_FACET:
                raise ExecutionError(f"{next(iter(stage))} is not allowed to be used within a $facet stage")
        facets.append((name, ctx.compile_pipeline(pipeline)))
    check = ctx.check

    def facet(stream):
        docs = materialize(stream, check)
        yield {name: materialize(run(docs), check) for name, run in facets}
    return facet
