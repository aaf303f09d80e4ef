"""The operator registry: every MongoDB 7/8 operator nlq knows, in one table.

Each :class:`Operator` says what a `$name` is (stage, expression, accumulator,
window function, query or projection operator, system variable), the shape
of its argument per kind (a :mod:`nlq.mql.grammar` term: which parts are
expressions, filters, sub-pipelines, field paths, collection names; which
name new fields; which bind `$$variables`), for a stage how the documents
after it are formed, and its properties (forbidden, order-sensitive as a
root stage). The parser, analyzer, scoped walk, gate, engine and the
forbidden-operator scan all read this table; the engine's modules attach
evaluators to entries with :func:`implements`. :func:`load` imports those
modules (listed in IMPLEMENTATIONS); every reader of evaluators calls it, so
the table is complete whatever was imported first.

Adding an operator is one :func:`declare` here (plus, for the engine, its
evaluator decorated with :func:`implements` in a module of IMPLEMENTATIONS).

    >>> lookup("$sortByCount").kind
    'stage'
    >>> lookup("$lookup").binds_variables, lookup("$lookup").introduces_fields
    (True, True)
"""

from __future__ import annotations

import difflib
import importlib
import threading
from dataclasses import dataclass, field
from typing import Callable, Iterable

from nlq.errors import ForbiddenOperatorError, UnknownOperatorError, UnsupportedOperatorError
from nlq.mql import grammar
from nlq.mql.grammar import (ACCUMULATOR as ACCUMULATORS, ADD, ANY, COLLECTION, COMPARISON, CONDITION, DATA,
                             DOCUMENT_DATA, ELEMENT_MATCH, ENTRIES, EXPR, FIELD, FILTER, FIRST, GEOMETRY, GET_FIELD,
                             JOINED, JOINED_NAME, KEEP, LITERAL, LITERALS, MEMBERSHIP, NAME, NEW, OPEN, PIPELINE,
                             PROJECTION as PROJECTED, REMOVED, ROW_LIMIT, SORT, UNION, VALUE, WINDOW as WINDOWED,
                             Bound, Either, Fields, Foreign, Into, Items, Keys, Output, Positional, Shorthand, Value,
                             Vars)

STAGE, EXPRESSION, ACCUMULATOR, WINDOW, QUERY, PROJECTION, VARIABLE = (
    "stage", "expression", "accumulator", "window", "query", "projection", "variable")
KINDS = (STAGE, EXPRESSION, ACCUMULATOR, WINDOW, QUERY, PROJECTION, VARIABLE)


@dataclass
class Operator:
    """One entry of the registry (a name may have several kinds: `$max` is both
    an expression and an accumulator)."""

    name: str
    kinds: set[str]
    forbidden: bool = False          # never executed
    order_sensitive: bool = False    # as a root stage, makes result order significant (paper §II-D)
    args: dict[str, grammar.Term] = field(default_factory=dict)    # kind -> the shape of its argument
    output: grammar.Output | None = None   # a stage: how the documents after it are formed
    evaluators: dict[str, Callable] = field(default_factory=dict)  # kind -> engine callable

    @property
    def kind(self) -> str:
        """The primary kind (the first of KINDS this operator has)."""
        return next(k for k in KINDS if k in self.kinds)

    def argument(self, kind: str) -> grammar.Term:
        """The declared shape of the argument as a `kind` operator (by default an expression; plain
        data for a query operator)."""
        return self.args.get(kind) or (DATA if kind == QUERY else EXPR)

    @property
    def of_whole_document(self) -> bool:
        """A query operator that stands where a field name would (`{$or: [...]}`, `{$expr: ...}`):
        its declared argument is filters, an expression or the whole document's data."""
        term = self.args.get(QUERY)
        return (isinstance(term, Items) and term.item == FILTER) or term == EXPR or term == DOCUMENT_DATA

    @property
    def binds_variables(self) -> bool:
        """Defines `$$name` variables for a part of its argument (`let`, `as`, `$$this`/`$$value`)."""
        return any(grammar.binds(term) for term in self.args.values())

    @property
    def introduces_fields(self) -> bool:
        """As a stage, defines fields later stages may reference."""
        if self.output is None or STAGE not in self.args:
            return False
        return self.output.mode in ("new", "value", "union") or (
            self.output.mode == "add" and bool(grammar.introduces(self.args[STAGE])))


_TABLE: dict[str, Operator] = {}


def declare(kind: str, names: Iterable[str] | str, *, args: grammar.Term | None = None,
            output: grammar.Output | None = None, **props) -> None:
    """Declare operators of `kind` (a name or a space-separated list of names): the shape of their
    argument (`args`, a :mod:`nlq.mql.grammar` term), for a stage how the documents after it are
    formed (`output`), and properties (`forbidden`, `order_sensitive`). A name declared again gains
    the kind. The walk, the analyzer, the gate and the forbidden scan read nothing else:

        declare(STAGE, "$count", args=NAME, output=NEW)
    """
    if isinstance(names, str):
        names = names.split()
    for name in names:
        op = _TABLE.get(name)
        if op is None:
            op = _TABLE[name] = Operator(name, {kind})
        op.kinds.add(kind)
        if args is not None:
            op.args[kind] = args
        if output is not None:
            op.output = output
        for key, value in props.items():
            if value:
                setattr(op, key, value)


# --- stages (https://www.mongodb.com/docs/manual/reference/operator/aggregation-pipeline/)
# Each says what its argument holds and how the documents after it are formed.
declare(STAGE, "$match", args=FILTER, output=KEEP)
declare(STAGE, "$limit", args=ROW_LIMIT, output=KEEP, order_sensitive=True)
declare(STAGE, "$skip", args=DATA, output=KEEP, order_sensitive=True)
declare(STAGE, "$sort", args=SORT, output=KEEP, order_sensitive=True)
declare(STAGE, "$sample", args=DATA, output=KEEP)
declare(STAGE, "$redact", args=EXPR, output=KEEP)
declare(STAGE, "$count", args=NAME, output=NEW)
declare(STAGE, "$sortByCount", args=Into("_id", EXPR), output=Output("new", ("count",)))
declare(STAGE, "$project", args=Value(PROJECTED), output=VALUE)
declare(STAGE, "$addFields $set", args=Fields(EXPR), output=ADD)
declare(STAGE, "$unset", args=Either(str=REMOVED, list=Items(REMOVED)), output=ADD)
declare(STAGE, "$unwind", args=Shorthand("path", Keys({"path": EXPR, "includeArrayIndex": NAME,
                                                       "preserveNullAndEmptyArrays": DATA})), output=ADD)
declare(STAGE, "$group", args=Fields(ACCUMULATORS, named={"_id": EXPR}), output=Output("new", ("_id",)))
declare(STAGE, "$bucket $bucketAuto",
        args=Keys({"groupBy": EXPR, "output": Fields(ACCUMULATORS, otherwise=("count",))}, rest=DATA),
        output=Output("new", ("_id",)))
declare(STAGE, "$replaceRoot", args=Keys({"newRoot": Value(EXPR)}), output=VALUE)
declare(STAGE, "$replaceWith", args=Value(EXPR), output=VALUE)
declare(STAGE, "$lookup", args=Keys({
    "from": COLLECTION, "localField": FIELD, "foreignField": Foreign(FIELD),
    "let": Vars(EXPR, into=("pipeline",)), "pipeline": Foreign(PIPELINE), "as": JOINED}, rest=DATA), output=ADD)
declare(STAGE, "$graphLookup", args=Keys({
    "from": COLLECTION, "startWith": EXPR, "connectFromField": Foreign(FIELD), "connectToField": Foreign(FIELD),
    "restrictSearchWithMatch": Foreign(FILTER), "depthField": JOINED_NAME, "as": JOINED}, rest=DATA), output=ADD)
declare(STAGE, "$unionWith", args=Shorthand("coll", Keys({"coll": COLLECTION, "pipeline": Foreign(PIPELINE)})),
        output=UNION)
declare(STAGE, "$facet", args=Fields(PIPELINE), output=NEW)
declare(STAGE, "$setWindowFields", args=Keys({"partitionBy": EXPR, "sortBy": SORT, "output": Fields(WINDOWED)}),
        output=ADD, order_sensitive=True)
declare(STAGE, "$densify", args=Keys({"field": FIELD, "partitionByFields": FIELD}, rest=DATA), output=KEEP)
declare(STAGE, "$fill", args=Keys({"partitionBy": EXPR, "partitionByFields": FIELD, "sortBy": SORT,
                                   "output": Fields(Keys({"value": EXPR}, rest=DATA))}), output=ADD)
declare(STAGE, "$geoNear", args=Keys({"query": FILTER, "key": FIELD, "distanceField": NAME, "includeLocs": NAME},
                                     rest=DATA), output=ADD)
declare(STAGE, "$documents", args=EXPR, output=OPEN)
declare(STAGE, "$merge", args=Keys({"let": Vars(EXPR, into=("whenMatched",), extra=("new",)),
                                    "whenMatched": Either(list=PIPELINE, other=DATA)}, rest=DATA), output=OPEN)
# Stages whose argument holds no operator of ours (names, options, another language: Atlas Search)
# and whose output nlq does not model.
declare(STAGE, "$out $search $searchMeta $vectorSearch $changeStream $changeStreamSplitLargeEvent "
               "$listSearchIndexes $listSampledQueries $shardedDataDistribution $querySettings $queryStats "
               "$listClusterCatalog $rankFusion $scoreFusion $listLocalSessions $currentOp $listSessions "
               "$collStats $indexStats $planCacheStats", args=DATA, output=OPEN)

# --- query operators (https://www.mongodb.com/docs/manual/reference/operator/query/)
declare(QUERY, "$eq $gt $gte $in $lt $lte $ne $nin $and $not $nor $or $exists $type $expr $jsonSchema "
               "$mod $regex $options $text $where $geoIntersects $geoWithin $near $nearSphere $box "
               "$center $centerSphere $geometry $maxDistance $minDistance $polygon $all $elemMatch "
               "$size $bitsAllClear $bitsAllSet $bitsAnyClear $bitsAnySet $comment $rand $natural "
               "$search $language $caseSensitive $diacriticSensitive $uniqueDocs")
# ... of the whole document
declare(QUERY, "$and", args=Items(FILTER))
declare(QUERY, "$or $nor", args=Items(FILTER, alternatives=True))
declare(QUERY, "$expr", args=EXPR)
declare(QUERY, "$where $text $comment $jsonSchema", args=DOCUMENT_DATA)
# ... of one field (the others' arguments are plain data)
declare(QUERY, "$eq $ne $gt $gte $lt $lte", args=LITERAL)
declare(QUERY, "$in $nin $all", args=LITERALS)
declare(QUERY, "$not", args=CONDITION)
declare(QUERY, "$elemMatch", args=ELEMENT_MATCH)
declare(QUERY, "$geoWithin $geoIntersects $near $nearSphere", args=GEOMETRY)

# --- projection operators
declare(PROJECTION, "$ $elemMatch $meta $slice")

# --- expression operators (https://www.mongodb.com/docs/manual/reference/operator/aggregation/)
declare(EXPRESSION,
     # arithmetic
     "$abs $add $ceil $divide $exp $floor $ln $log $log10 $mod $multiply $pow $round $sqrt "
     "$subtract $trunc "
     # array
     "$arrayElemAt $arrayToObject $concatArrays $filter $first $firstN $in $indexOfArray "
     "$isArray $last $lastN $map $maxN $minN $objectToArray $range $reduce $reverseArray "
     "$size $slice $sortArray $zip "
     # bitwise
     "$bitAnd $bitNot $bitOr $bitXor "
     # boolean
     "$and $not $or "
     # comparison
     "$cmp $eq $gt $gte $lt $lte $ne "
     # conditional
     "$cond $ifNull $switch "
     # custom (forbidden below)
     "$function "
     # data size
     "$binarySize $bsonSize "
     # date
     "$dateAdd $dateDiff $dateFromParts $dateFromString $dateSubtract $dateToParts "
     "$dateToString $dateTrunc $dayOfMonth $dayOfWeek $dayOfYear $hour $isoDayOfWeek "
     "$isoWeek $isoWeekYear $millisecond $minute $month $second $week $year "
     # literal, misc, object
     "$literal $getField $rand $sampleRate $toHashedIndexKey $meta $mergeObjects "
     "$setField $unsetField "
     # set
     "$allElementsTrue $anyElementTrue $setDifference $setEquals $setIntersection "
     "$setIsSubset $setUnion "
     # string
     "$concat $indexOfBytes $indexOfCP $ltrim $regexFind $regexFindAll $regexMatch "
     "$replaceOne $replaceAll $rtrim $split $strLenBytes $strLenCP $strcasecmp $substr "
     "$substrBytes $substrCP $toLower $toString $trim $toUpper "
     # text
     "$meta "
     # timestamp
     "$tsIncrement $tsSecond "
     # trigonometry
     "$sin $cos $tan $asin $acos $atan $atan2 $asinh $acosh $atanh $sinh $cosh $tanh "
     "$degreesToRadians $radiansToDegrees "
     # type
     "$convert $isNumber $toBool $toDate $toDecimal $toDouble $toInt $toLong $toObjectId "
     "$toUUID $type "
     # accumulator-named expressions usable in $project
     "$avg $max $min $sum $stdDevPop $stdDevSamp $median $percentile")
# Expressions whose argument holds more than expressions, binds variables or shapes the value.
declare(EXPRESSION, "$eq $ne $gt $gte $lt $lte", args=COMPARISON)
declare(EXPRESSION, "$in", args=MEMBERSHIP)
declare(EXPRESSION, "$literal", args=DATA)
declare(EXPRESSION, "$let", args=Keys({"vars": Vars(EXPR, into=("in",)), "in": Value(EXPR)}))
declare(EXPRESSION, "$map", args=Keys({"input": Bound(EXPR, into=("in",)), "as": DATA, "in": Value(EXPR)}))
declare(EXPRESSION, "$filter", args=Keys({"input": Value(Bound(EXPR, into=("cond",))), "as": DATA, "cond": EXPR}))
declare(EXPRESSION, "$reduce", args=Keys({"input": Bound(EXPR, into=("in",), name_key=None, extra=("value",)),
                                           "initialValue": EXPR, "in": EXPR}))
declare(EXPRESSION, "$first $last $arrayElemAt $slice", args=FIRST)
declare(EXPRESSION, "$ifNull $mergeObjects $concatArrays $setUnion", args=ANY)
declare(EXPRESSION, "$cond", args=Either(list=Positional((EXPR, Value(EXPR), Value(EXPR))),
                                         dict=Keys({"if": EXPR, "then": Value(EXPR), "else": Value(EXPR)}),
                                         other=Value(EXPR)))
declare(EXPRESSION, "$switch", args=Keys({"branches": Items(Keys({"case": EXPR, "then": Value(EXPR)})),
                                          "default": Value(EXPR)}))
declare(EXPRESSION, "$objectToArray", args=Value(ENTRIES))
declare(EXPRESSION, "$getField", args=Value(GET_FIELD))
declare(EXPRESSION, "$sortArray", args=Keys({"input": Value(EXPR), "sortBy": DATA}))

# --- accumulators ($group, $bucket, $setWindowFields)
declare(ACCUMULATOR, "$accumulator $addToSet $avg $bottom $bottomN $count $first $firstN $last "
                     "$lastN $max $maxN $median $mergeObjects $min $minN $percentile $push "
                     "$stdDevPop $stdDevSamp $sum $top $topN")
# the value of these is (an array of) their argument's value
declare(ACCUMULATOR, "$first $last $push $addToSet $max $min", args=Value(EXPR))
declare(ACCUMULATOR, "$firstN $lastN $maxN $minN", args=Keys({"input": Value(EXPR), "n": EXPR}))
declare(ACCUMULATOR, "$top $bottom $topN $bottomN", args=Keys({"sortBy": SORT, "output": Value(EXPR), "n": EXPR}))

# --- window-only operators ($setWindowFields output)
declare(WINDOW, "$covariancePop $covarianceSamp $denseRank $derivative $documentNumber "
                "$expMovingAvg $integral $linearFill $locf $rank $shift")

# --- system variables (`$$NAME`)
declare(VARIABLE, "$$ROOT $$CURRENT $$REMOVE $$DESCEND $$PRUNE $$KEEP $$NOW $$CLUSTER_TIME "
                  "$$SEARCH_META $$USER_ROLES")

# --- forbidden: writes, server state, non-determinism, server-side JavaScript
# Server state: the stages the manual's list of aggregation stages describes as returning what the
# server knows rather than what a collection holds (change events, sessions, running operations,
# statistics, plans, indexes, sampled queries, settings, the catalog, shard distribution). With
# --uri they would read the server itself; `$documents` (literal documents) is not server state.
SERVER_STATE_STAGES = frozenset("$changeStream $changeStreamSplitLargeEvent $collStats $currentOp $indexStats "
                                "$listClusterCatalog $listLocalSessions $listSampledQueries $listSearchIndexes "
                                "$listSessions $planCacheStats $querySettings $queryStats "
                                "$shardedDataDistribution".split())
FORBIDDEN = frozenset("$out $merge $function $accumulator $where $sample $rand $$NOW "
                      "$$CLUSTER_TIME".split()) | SERVER_STATE_STAGES
for _name in FORBIDDEN:
    _TABLE[_name].forbidden = True

# Root stages whose presence makes the order of gold rows significant (paper §II-D).
ORDER_SENSITIVE_STAGES = frozenset(n for n, op in _TABLE.items() if op.order_sensitive)


# The modules that attach evaluators with `implements`; a new one is added here.
IMPLEMENTATIONS = (
    "nlq.mql.match",
    "nlq.mql.accumulators",
    "nlq.mql.ops_arith",
    "nlq.mql.ops_array",
    "nlq.mql.ops_cond",
    "nlq.mql.ops_date",
    "nlq.mql.ops_date_format",
    "nlq.mql.ops_object",
    "nlq.mql.ops_set",
    "nlq.mql.ops_string",
    "nlq.mql.ops_trig",
    "nlq.mql.ops_type",
    "nlq.mql.stages.filtering",
    "nlq.mql.stages.projection",
    "nlq.mql.stages.ordering",
    "nlq.mql.stages.grouping",
    "nlq.mql.stages.joins",
    "nlq.mql.stages.buckets",
    "nlq.mql.stages.windows",
    "nlq.mql.stages.gaps",
)
_loaded = False
_load_lock = threading.RLock()  # reentrant: an implementation module may call load() while imported


def load() -> None:
    """Import every module of IMPLEMENTATIONS once, so that all evaluators are attached.

    The implementation modules import this one (for `implements`), so this one
    names them instead of importing them at the top.
    """
    global _loaded
    if _loaded:
        return
    with _load_lock:  # threads (generate/repair workers) wait until every evaluator is attached
        if _loaded:
            return
        for module in IMPLEMENTATIONS:
            importlib.import_module(module)
        _loaded = True


def lookup(name: str) -> Operator:
    """The registry entry of `name`, or UnknownOperatorError with a suggestion."""
    op = _TABLE.get(name)
    if op is None:
        raise UnknownOperatorError(f"unknown operator {name}{suggestion(name)}")
    return op


def get(name: str) -> Operator | None:
    """The registry entry of `name`, or None."""
    return _TABLE.get(name)


def is_known(name: str, kind: str | None = None) -> bool:
    op = _TABLE.get(name)
    return op is not None and (kind is None or kind in op.kinds)


def names(kind: str | None = None) -> list[str]:
    """All registered names (of one kind), sorted."""
    return sorted(n for n, op in _TABLE.items() if kind is None or kind in op.kinds)


def suggestion(name: str, kind: str | None = None) -> str:
    """' — did you mean $x?' for the closest known name, or ''.

    A miscased name wins, then the shortest name the input is a miscased
    beginning of (`$sortby` -> `$sortByCount`), then the closest spelling.
    """
    pool = names(kind)
    lowered = {n.lower(): n for n in pool}
    if name.lower() in lowered:
        return f" — did you mean {lowered[name.lower()]}?"
    extended = sorted((n for low, n in lowered.items() if len(name) > 3 and low.startswith(name.lower())
                       and n.lower() != name.lower()), key=lambda n: (len(n), n))
    if extended and name not in pool:
        return f" — did you mean {extended[0]}?"
    close = difflib.get_close_matches(name, pool, n=1, cutoff=0.6)
    if not close:
        close = difflib.get_close_matches(name.lower(), list(lowered), n=1, cutoff=0.6)
        close = [lowered[c] for c in close]
    return f" — did you mean {close[0]}?" if close else ""


def implements(kind: str, *op_names: str):
    """Decorator: register the engine's evaluator of `kind` for each name.

        @implements(EXPRESSION, "$add")
        def _add(args, ctx): ...
    """
    def decorate(fn):
        for name in op_names:
            op = _TABLE.get(name)
            if op is None or kind not in op.kinds:
                raise KeyError(f"{name} is not a registered {kind} operator")
            op.evaluators[kind] = fn
        return fn
    return decorate


def whole_document_query(name: str) -> bool:
    """Whether `name` is a query operator of the whole document (declared so, see `Operator`)."""
    op = _TABLE.get(name)
    return op is not None and op.of_whole_document


def evaluator(name: str, kind: str) -> Callable | None:
    """The engine's evaluator for `name` of `kind`, or None when not implemented."""
    load()
    op = _TABLE.get(name)
    return op.evaluators.get(kind) if op else None


def resolve(name: str, kind: str, *, unknown: str, other_kind: str, unsupported: str,
            forbidden: str = "{name} is forbidden (nlq runs only read-only, deterministic queries)") -> Callable:
    """The engine's evaluator of `name` as a `kind` operator, or the typed error saying why there is none.

    The messages are templates over `{name}`, `{suggestion}` (a did-you-mean among
    the `kind` names), `{kind}` (the operator's own primary kind) and `{article}`
    ('a' or 'an' before that kind):

        resolve("$sum", ACCUMULATOR, unknown="unknown group operator '{name}'{suggestion}", ...)
    """
    load()
    op = _TABLE.get(name)
    if op is None:
        raise UnknownOperatorError(unknown.format(name=name, suggestion=suggestion(name, kind)))
    if kind not in op.kinds:
        article = "an" if op.kind[0] in "aeiou" else "a"
        raise UnknownOperatorError(other_kind.format(name=name, kind=op.kind, article=article))
    if op.forbidden:
        raise ForbiddenOperatorError(forbidden.format(name=name))
    fn = op.evaluators.get(kind)
    if fn is None:
        raise UnsupportedOperatorError(unsupported.format(name=name))
    return fn


def supported(kind: str | None = None) -> list[str]:
    """Names (of one kind) that the embedded engine implements."""
    load()
    return sorted(n for n, op in _TABLE.items()
                  if (kind is None and op.evaluators) or (kind is not None and kind in op.evaluators))


def unsupported(kind: str | None = None) -> list[str]:
    """Known, non-forbidden names (of one kind) the embedded engine does not implement."""
    load()
    return sorted(n for n, op in _TABLE.items() if not op.forbidden
                  and ((kind is None and not op.evaluators)
                       or (kind is not None and kind in op.kinds and kind not in op.evaluators)))


def coverage_markdown() -> str:
    """docs/ENGINE.md's list of supported, unsupported and forbidden operators, from this table."""
    titles = {STAGE: "Stages", QUERY: "Query operators", EXPRESSION: "Expression operators",
              ACCUMULATOR: "Accumulators", WINDOW: "Window functions", PROJECTION: "Projection operators"}
    lines = ["| kind | supported by the embedded engine | known, not supported (typed error) |",
             "|---|---|---|"]
    for kind, title in titles.items():
        have = [n for n in supported(kind)]
        missing = [n for n in unsupported(kind)]
        lines.append(f"| {title} ({len(have)}) | {' '.join(f'`{n}`' for n in have) or '—'} | "
                     f"{' '.join(f'`{n}`' for n in missing) or '—'} |")
    lines.append("")
    lines.append("Forbidden everywhere (rejected before execution): "
                 + " ".join(f"`{n}`" for n in sorted(FORBIDDEN)) + ".")
    return "\n".join(lines) + "\n"
