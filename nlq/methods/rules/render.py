"""Rendering: the aggregation pipeline of an IR."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace

import re

from nlq.methods.rules.vocabulary import DATE_PARTS
from nlq.methods.rules.ir import Field, Filter, IR
from nlq.methods.rules.joins import alias_of


def _alias(map_path: str) -> str:
    """The field an expanded map's {k, v} pairs are unwound into."""
    name = re.sub(r"[^0-9A-Za-z]+", "_", map_path).strip("_")
    depth = map_path.count("<*>")
    return f"_{name}_{depth}" if depth else f"_{name}"


def physical(path: str, ir: IR, key: bool = False) -> str:
    """The stored path of a logical lattice path: a bound key replaces `<*>`
    (`seasons.<*>.team` -> `seasons.2018.team`); under an expanded map the
    path continues from its {k, v} pair (`_seasons.v.team`, the key `_seasons.k`)."""
    parts = path.split(".")
    out: list[str] = []
    for i, part in enumerate(parts):
        if part != "<*>":
            out.append(part)
            continue
        logical = ".".join(parts[:i])
        if logical in ir.bound_keys:
            out.append(str(ir.bound_keys[logical]))
        elif logical in ir.expand:
            out = [_alias(logical), "k" if key and i == len(parts) - 1 else "v"]
        else:
            out.append(part)
    return ".".join(out)


def _ref(f: Field, ir: IR):
    if f.parts:
        return {"$add": [_ref(p, ir) for p in f.parts]}
    ref = "$" + physical(f.mql, ir, key=f.kind == "key")
    return {"$" + f.kind: ref} if f.kind in DATE_PARTS.values() else ref


def _measure(f: Field, ir: IR):
    """What an aggregate adds up: a value, the number a string spells, or the number of an array's elements."""
    if f.kind == "array":
        return {"$size": {"$ifNull": [_ref(f, ir), []]}}
    return _number(_ref(f, ir)) if f.numeric_text else _ref(f, ir)


def _number(ref):
    """The number a string spells ('344' -> 344.0); null for one that spells none."""
    return {"$convert": {"input": ref, "to": "double", "onError": None, "onNull": None}}


def _spelled_keys(keys, ir: IR) -> dict:
    """The $addFields that give each sort key holding numbers as text its number, and each sum its
    value, by `_sort_path`."""
    return {_sort_path(k, ir): _number(_ref(k, ir)) if k.numeric_text else _ref(k, ir)
            for k in keys if isinstance(k, Field) and (k.numeric_text or k.parts)}


def _sort_path(f: Field, ir: IR) -> str:
    """Where a document is sorted by `f`: its stored path, the number a text of digits spells, or a sum."""
    if f.parts:
        return "_" + _key_name(f)
    return "_number_" + _key_name(f) if f.numeric_text else physical(f.mql, ir, key=f.kind == "key")


def _key_name(f: Field) -> str:
    return re.sub(r"[^0-9A-Za-z_]+", "_", f.mql.replace(".<*>", "_key" if f.kind == "key" else "")).strip("_")


def _out_name(f: Field, taken: set[str]) -> str:
    name = "_".join(f.words) if f.kind in ("key", "sum") else f.mql.split(".")[-1]
    if name in taken or name == "_id" or not name:
        name = _key_name(f)
    taken.add(name)
    return name


def _filter_doc(filters: list[Filter], ir: IR) -> dict:
    """The $match document of some filters; the two sides of a disjunction form an `$or`."""
    doc = _conditions([f for f in filters if not f.branch], ir)
    sides = [_conditions([f for f in filters if f.branch == b], ir) for b in (1, 2)]
    if all(sides):
        doc["$or"] = sides
    return doc


def _conditions(filters: list[Filter], ir: IR, element: bool = False) -> dict:
    """The conditions of some filters; `element`: they are all met by one element."""
    doc: dict = {}
    exprs = []
    qualifying = {} if element else _qualifying(filters, ir)
    held = {id(f) for met in qualifying.values() for f in met}
    together = {} if element else _one_element([f for f in filters if id(f) not in held], ir)
    for array, met in together.items():
        inner = _conditions(met, ir, element=True)
        match = {path[len(array) + 1:]: condition for path, condition in inner.items()}
        if array in doc:
            doc.setdefault("$and", []).append({array: {"$elemMatch": match}})
        else:
            doc[array] = {"$elemMatch": match}
    held |= {id(f) for met in together.values() for f in met}
    for f in (f for f in filters if id(f) not in held):
        path = physical(f.field.mql, ir, key=f.field.kind == "key")
        if f.size:
            elements = {"$ifNull": ["$" + path, []]}
            if qualifying.get(f.field.mql):
                elements = {"$filter": {"input": elements, "as": "element", "cond": _element_expr(
                    f.field.mql, qualifying[f.field.mql])}}
            exprs.append({f.op: [{"$size": elements}, f.value]})
        elif f.average:
            exprs.append({f.op: ["$" + path, "$" + _average_name(f, ir)]})
        elif f.other is not None:
            exprs.append({f.op: [_ref(f.field, ir), _ref(f.other, ir)]})
        elif f.op == "$exists" and f.key_of is None:
            doc.setdefault(path, {})["$exists"] = f.value
        elif f.op == "$exists":
            doc.setdefault(f"{path}.{f.value}", {})["$exists"] = True
        elif f.op == "$regex":
            doc.setdefault(path, {}).update({"$regex": f.value, "$options": "i"})
        elif f.op == "$not":  # a denied condition (an operator document), or a pattern a text must not match
            doc.setdefault(path, {})["$not"] = f.value if isinstance(f.value, dict) else {
                "$regex": f.value, "$options": "i"}
        elif f.op == "$all":  # every value, each met by some element: the $and the manual defines $all as
            doc.setdefault("$and", []).extend({path: v} for v in f.value)
        elif f.op == "$eq":
            _add_equality(doc, path, f.value)
        else:
            slot = doc.setdefault(path, {})
            if not isinstance(slot, dict):
                slot = doc[path] = {"$eq": slot}
            slot[f.op] = f.value
    if exprs:
        doc["$expr"] = exprs[0] if len(exprs) == 1 else {"$and": exprs}
    return doc


def _add_equality(doc: dict, path: str, value) -> None:
    """A value `path` equals, next to those it already has: two values are either one (`$in`); next
    to an operator document ('not photo', 'fewer than 3') the value is one more of its operators
    (an operator document is no value `$in` could hold)."""
    existing = doc.get(path)
    if existing is None:
        doc[path] = value
    elif not isinstance(existing, dict):
        doc[path] = {"$in": [existing, value]}
    elif "$in" in existing:
        existing["$in"] = [*existing["$in"], value]
    elif "$eq" in existing:
        existing["$in"] = [existing.pop("$eq"), value]
    else:
        existing["$eq"] = value


# The conditions an array's element meets as a value of its own (not its array's size or a pattern).
ELEMENT_OPS = frozenset({"$eq", "$in", "$gt", "$gte", "$lt", "$lte"})


def _one_element(filters: list[Filter], ir: IR) -> dict[str, list[Filter]]:
    """'customers having an order with shipping method FedEx and status Paid', 'an enrollment
    between 2000 and 2010': conditions on the fields of the elements of one array that is not
    unwound are met by one element (`$elemMatch`), where conditions on dotted paths would each
    be met by any element. Equalities of one field alone ('concerts in 2014 and 2015') are
    values of different elements: left as they are. By the array's stored path."""
    by_array: dict[str, list[Filter]] = {}
    for f in filters:
        if not _element_condition(f):
            continue
        array = next((a for a in f.field.arrays if a not in ir.unwinds), None)
        if array is not None:
            by_array.setdefault(physical(array, ir), []).append(f)
    return {array: met for array, met in by_array.items() if len(met) > 1 and _one_can_meet(met) and not (
        len({f.field.mql for f in met}) == 1 and all(f.op in ("$eq", "$in") for f in met))}


def _qualifying(filters: list[Filter], ir: IR) -> dict[str, list[Filter]]:
    """'customers who have at least 2 mailshots with outcome code Order': conditions on the
    fields of the elements of an array whose size is bounded qualify the elements counted
    (the size of the array's elements that meet them), not the document. By the array's
    logical path."""
    sized = {f.field.mql for f in filters if f.size and not f.relative and f.field.mql not in ir.unwinds
             and not f.field.maps}
    by_array: dict[str, list[Filter]] = {}
    for f in filters:
        if _element_condition(f) and f.field.arrays and f.field.arrays[-1] in sized \
                and f.field.arrays[-1] not in ir.unwinds:
            by_array.setdefault(f.field.arrays[-1], []).append(f)
    return by_array


def _element_condition(f: Filter) -> bool:
    """A condition on a value an array's element holds (not the array's size, a pattern, a key)."""
    return f.op in ELEMENT_OPS and not (f.size or f.relative or f.key_of is not None or f.field.maps
                                        or f.field.kind == "array" or f.field.parts)


def _element_expr(array: str, filters: list[Filter]) -> dict:
    """The expression an element (`$$element`) of `array` meeting every filter satisfies."""
    return _all_of(filters, lambda f: "$$element." + f.field.mql[len(array) + 1:])


def _all_of(filters: Iterable[Filter], ref: Callable[[Filter], str]) -> dict:
    """The expression a value meeting every filter satisfies, `ref` saying where each filter's
    field is read; a value it lacks meets no upper bound (as in a query, where an aggregation
    expression would order a missing value below every number)."""
    terms = []
    for f in filters:
        at = ref(f)
        terms.append({"$in": [at, list(f.value)]} if f.op == "$in" else {f.op: [at, f.value]})
        if f.op in ("$lt", "$lte"):
            terms.append({"$gt": [at, None]})
    return terms[0] if len(terms) == 1 else {"$and": terms}


def _one_can_meet(filters: list[Filter]) -> bool:
    """No field is bounded below by more than it is bounded above: 'both a museum opened
    before 2009 and one opened after 2011' are two elements, no one element is both."""
    for path in {f.field.mql for f in filters}:
        lows = [f.value for f in filters if f.field.mql == path and f.op in ("$gt", "$gte")]
        highs = [f.value for f in filters if f.field.mql == path and f.op in ("$lt", "$lte")]
        try:
            if lows and highs and max(lows) >= min(highs):
                return False
        except TypeError:  # bounds of different types: nothing says they are apart
            continue
    return True


def _traversal(ir: IR) -> list[tuple[str, str]]:
    """Unwinds and map expansions in the order the paths nest: (kind, logical path); the joined
    documents' after the collection's own, whose unwinds their `$lookup` may wait for."""
    steps = [("unwind", a) for a in ir.unwinds] + [("expand", m) for m in ir.expand]
    joined = {j[0] for j in ir.joins}
    return sorted(steps, key=lambda s: (s[1].split(".")[0] in joined, s[1].count("."), s[0] == "expand", s[1]))


def _is_late(f: Filter, ir: IR) -> bool:
    """A filter that must wait for an unwind, an expansion or a join on its path (or its other field's)."""
    if f.other is not None and _is_late(replace(f, field=f.other, other=None), ir):
        return True
    if f.field.arrays and f.field.arrays[0] in {j[0] for j in ir.joins}:
        return True  # the joined documents exist once `$lookup` has run
    if f.size:  # the size of an array inside another one waits for the outer one's unwind
        return bool({a for a in f.field.arrays if a != f.field.mql} & set(ir.unwinds))
    if f.op in ("$elemMatch", "$all") or f.op == "$not" and f.field.kind == "array":
        # a condition on the whole array ('$all': its elements hold every value; no element meets one),
        # of each element of an array it is inside once that one is unwound ('apartments with bookings
        # both Provisional and Confirmed')
        inner = [a for a in f.field.arrays if a != f.field.mql]
        return bool(set(inner if f.field.kind == "array" else inner[:-1]) & set(ir.unwinds))
    return bool(set(f.field.arrays) & set(ir.unwinds)) or any(m in ir.expand for m in f.field.maps)


def _joins_ready(ir: IR, pending: list, unwound: set[str], sized: list[Filter] = ()) -> list[dict]:
    """The `$lookup` (and `$unwind`, when its documents are shown, grouped or sorted) of each
    pending join whose local field no longer waits for an unwind: one inside an array that
    is unwound joins per element, after that unwind. The conditions on how many documents
    it joins (`sized`) come before that unwind."""
    stages = []
    for join in list(pending):
        alias, other, local, foreign = join
        waits = [a for a in ir.unwinds if local.startswith(a + ".") and a not in unwound]
        if waits:
            continue
        pending.remove(join)
        stages.append({"$lookup": {"from": other, "localField": local, "foreignField": foreign, "as": alias}})
        counts = [f for f in sized if f.field.mql == alias]
        if counts:
            stages.append({"$match": _filter_doc(counts, ir)})
        if alias in ir.unwinds:
            stages.append({"$unwind": "$" + alias})
    return stages


def _joined_elements(ir: IR, path: str) -> list[dict]:
    """A joined document's array unwound, when the join matched one of its elements ('the
    concerts of each singer', joined to the stadium holding `concert[].concert_ID`): only the
    elements the join matched, not every element of the document, which are other rows."""
    for alias, _, local, foreign in ir.joins:
        inner = path[len(alias) + 1:] if path.startswith(alias + ".") else ""
        if inner and foreign.startswith(inner + ".") and "." not in foreign[len(inner) + 1:]:
            mine = "$" + local  # (a value, or the values of an array not unwound)
            return [{"$match": {"$expr": {"$in": ["$" + physical(path, ir) + foreign[len(inner):],
                                                  {"$cond": [{"$isArray": mine}, mine, [mine]]}]}}}]
    return []


def render(ir: IR) -> list[dict]:
    """The aggregation pipeline of an IR."""
    held = next((f for f in ir.filters if f.op == "$all" and _held_apart(f, ir)), None)
    if held is not None:
        return _held_by_group(ir, held)
    if ir.both:
        return _both_by_group(ir)
    pipeline: list[dict] = []
    late_branch = any(f.branch and _is_late(f, ir) for f in ir.filters)  # an $or stays whole
    is_late = [_is_late(f, ir) or bool(f.branch and late_branch) for f in ir.filters]
    early = [f for f, later in zip(ir.filters, is_late) if not later]
    late = [f for f, later in zip(ir.filters, is_late) if later]
    averages = [f for f in early if f.average]
    if averages:  # the average over every document, before any other condition
        pipeline.append(_average_window(averages, ir))
    if early:
        pipeline.append({"$match": _filter_doc(early, ir)})
    for other, local, foreign in ir.anti_joins:
        alias = alias_of(other)
        pipeline.append({"$lookup": {"from": other, "localField": local, "foreignField": foreign, "as": alias}})
        pipeline.append({"$match": {alias: {"$size": 0}}})
    documents_first = _ranks_documents(ir, late)
    if documents_first:  # 'the cities of the county with the most officers': pick the county, then unwind
        pipeline += _ranking(ir)
    pending = list(ir.joins)
    sized = [f for f in late if f.size and not f.branch and any(f.field.mql == j[0] for j in ir.joins)]
    # 'apartments that have confirmed bookings': the size of an array that is itself unwound is
    # counted before its unwind (after it, each element is an object of its own, no array)
    counted = [f for f in late if f.size and not f.branch and f.field.mql in ir.unwinds and f not in sized]
    late = [f for f in late if f not in sized and f not in counted]
    # one side of an 'or' waits with the other for every unwind: the size is kept as a field
    kept = {f.field.mql for f in late if f.size and f.field.mql in ir.unwinds}
    late = [_kept_size(f) if f.size and f.field.mql in kept else f for f in late]
    pipeline += _joins_ready(ir, pending, set(), sized)
    done: set[str] = set()
    for kind, path in _traversal(ir):
        if any(path == j[0] for j in ir.joins):
            continue  # unwound right after its `$lookup`
        if kind == "unwind":
            counts = [f for f in counted if f.field.mql == path]
            if counts:
                pipeline.append({"$match": _filter_doc(counts, ir)})
            if path in kept:
                pipeline.append({"$addFields": {_size_name(path): {
                    "$size": {"$ifNull": ["$" + physical(path, ir), []]}}}})
            pipeline.append({"$unwind": "$" + physical(path, ir)})
            pipeline += _joined_elements(ir, path)
            done.add(path)
            pipeline += _joins_ready(ir, pending, done, sized)
        else:
            pipeline.append({"$addFields": {_alias(path): {"$objectToArray": "$" + physical(path, ir)}}})
            pipeline.append({"$unwind": "$" + _alias(path)})
    averages = [f for f in late if f.average]
    if averages:
        pipeline.append(_average_window(averages, ir))
    if late:
        pipeline.append({"$match": _filter_doc(late, ir)})

    taken: set[str] = set()
    keys = ir.group_by or (ir.outputs if ir.distinct else [])
    if ir.group_by or ir.aggregates or (ir.distinct and keys):
        if ir.presort:
            spelled = _spelled_keys([f for f, _ in ir.presort], ir)
            if spelled:
                pipeline.append({"$addFields": spelled})
            pipeline.append({"$sort": {_sort_path(f, ir): d for f, d in ir.presort}})
        group: dict = {"_id": (_ref(keys[0], ir) if len(keys) == 1
                               else {_key_name(k): _ref(k, ir) for k in keys} if keys else None)}
        agg_names = []
        for op, f in ir.aggregates:
            name = f"{op[1:]}_{_key_name(f)}"
            group[name] = {op: _measure(f, ir)}
            agg_names.append(name)
        if ir.count and ir.group_by and not ir.presort:
            group["count"] = {"$sum": 1}  # shown when asked; else it ranks or filters the groups
        extra = [f for f in ir.outputs if f not in keys and not any(f is a for _, a in ir.aggregates)]
        members = [f for f in extra if f in ir.members]
        if ir.group_by:
            for f in (f for f in extra if f not in members):
                group[_key_name(f)] = {"$first": _ref(f, ir)}
            if members:  # each document of the group: pushed, and unwound once the groups are ranked
                group[MEMBERS] = {"$push": {_key_name(f): _ref(f, ir) for f in members}}
        if "count" in group and ir.distinct_count is not None:
            group["count"] = {"$addToSet": _ref(ir.distinct_count, ir)}  # its distinct values, then how many
        pipeline.append({"$group": group})
        if "count" in group and ir.distinct_count is not None:
            pipeline.append({"$addFields": {"count": {"$size": "$count"}}})
        if ir.having and "count" in group:
            pipeline.append({"$match": {"count": {ir.having[0]: ir.having[1]}}})
        for k, op, value in ir.conditions:
            pipeline.append({"$match": {agg_names[k]: {op: value}}})
        if ir.count and not ir.group_by:
            pipeline += count_stages()  # how many distinct values / groups
            return pipeline
        if not documents_first:
            _sort_and_limit(pipeline, _render_sort(ir, agg_names, keys), ir.limit)
        if members:
            pipeline.append({"$unwind": "$" + MEMBERS})
        project: dict = {"_id": 0}
        if len(keys) == 1:
            project[_out_name(keys[0], taken)] = "$_id"
        else:
            for k in keys:
                project[_out_name(k, taken)] = "$_id." + _key_name(k)
        for name in agg_names:
            project[name] = 1 if ir.round is None else {"$round": ["$" + name, ir.round]}
        if "count" in group and ir.count_asked:
            project["count"] = 1
        if ir.group_by:
            for f in extra:
                project[_out_name(f, taken)] = "$" + (f"{MEMBERS}." if f in members else "") + _key_name(f)
        pipeline.append({"$project": project})
        return pipeline
    if ir.count:
        pipeline += count_stages()
        return pipeline
    if not documents_first:
        pipeline += _ranking(ir)
    project = {"_id": 0}
    for f in ir.outputs:
        project[_out_name(f, taken)] = _ref(f, ir)
    for f in ir.sizes:
        project["count" if "count" not in taken else f"count_{_key_name(f)}"] = {
            "$size": {"$ifNull": [_ref(f, ir), []]}}
        taken.add("count")
    pipeline.append({"$project": project})
    return pipeline


AVERAGE_FIELD = "_average"
MEMBERS = "_members"  # the documents of a ranked group, listed each (`IR.members`)


def _size_name(array: str) -> str:
    """The field an array's size is kept in before the array is unwound."""
    return "_size_" + re.sub(r"[^0-9A-Za-z_]+", "_", array).strip("_")


def _kept_size(f: Filter) -> Filter:
    """A condition on an array's size read off the field that kept it (`_size_name`)."""
    name = _size_name(f.field.mql)
    return replace(f, size=False, field=replace(f.field, path=name, mql=name, arrays=(), maps=(), kind="scalar"))


def _average_name(f: Filter, ir: IR) -> str:
    """Where the statistic a filter compares with is set: one name per field and statistic ('a
    checking balance above the average checking balance and a savings balance below the average
    savings balance' compares each with its own)."""
    measured = list(dict.fromkeys(_measure_key(g) for g in ir.filters if g.average))
    at = measured.index(_measure_key(f)) if _measure_key(f) in measured else 0
    return AVERAGE_FIELD if at == 0 else f"{AVERAGE_FIELD}_{at + 1}"


def _measure_key(f: Filter) -> tuple:
    """What one statistic compared with is: its field, the statistic, the documents it covers."""
    return f.field.mql, f.statistic, repr(f.subset)


def _average_window(filters: list[Filter], ir: IR) -> dict:
    """The statistics (average, maximum or minimum) of the filters' fields over all documents (or
    elements), or over those meeting a filter's subset conditions, set on each (`_average_name`)."""
    return {"$setWindowFields": {"output": {_average_name(f, ir): {f.statistic: _measured(f, ir)} for f in filters}}}


def _measured(f: Filter, ir: IR) -> object:
    """The field a statistic is taken of, null where a document falls outside the filter's subset."""
    measured = _ref(f.field, ir)
    return {"$cond": [_all_of(f.subset, lambda g: _ref(g.field, ir)), measured, None]} if f.subset else measured


def _ranks_documents(ir: IR, late: list[Filter]) -> bool:
    """The limit picks whole documents by document-level keys, before any array is
    unwound or distinct values are taken ('the distinct ranges of the top 3 mountains')."""
    keys = [k[1] if isinstance(k, tuple) else k for k, _ in ir.sort]
    if keys and not late and all(ir.ranks_before_grouping(k) for k in keys):
        return True  # 'the average rating of the oldest movie': pick the movie, then measure its ratings
    if not (ir.limit and keys) or late or ir.group_by or ir.aggregates or ir.count:
        return False
    top_level = all(isinstance(k, Field) and not k.maps and (not k.arrays or k.arrays == (k.mql,)) for k in keys)
    if ir.distinct:
        return top_level and not any(k in ir.outputs for k in keys)
    return top_level and bool(ir.unwinds)


def _ranking(ir: IR) -> list[dict]:
    """The $sort and $limit of documents (after the size they rank by, if any)."""
    stages: list[dict] = []
    if any(isinstance(k, tuple) for k, _ in ir.sort):
        size_of = next(k[1] for k, _ in ir.sort if isinstance(k, tuple))
        stages.append({"$addFields": {"_size": {"$size": {"$ifNull": [_ref(size_of, ir), []]}}}})
    spelled = _spelled_keys([k for k, _ in ir.sort], ir)
    if spelled:
        stages.append({"$addFields": spelled})
    _sort_and_limit(stages, _render_sort(ir, [], []), ir.limit)
    return stages


def _sort_and_limit(pipeline: list[dict], sort: dict, limit: int | None) -> None:
    if sort:
        pipeline.append({"$sort": sort})
    if limit:
        pipeline.append({"$limit": limit})


def _render_sort(ir: IR, agg_names: list[str], keys: list[Field]) -> dict:
    """The $sort document; after a $group (`keys` or `agg_names` given) keys are renamed."""
    grouped = bool(keys or agg_names)
    sort: dict = {}
    for key, direction in ir.sort:
        if key == "count":
            if grouped and ir.count:
                sort["count"] = direction
        elif isinstance(key, tuple):  # ("size", array field)
            if not grouped:
                sort["_size"] = direction
        elif grouped:
            name = next((n for n, (_, f) in zip(agg_names, ir.aggregates) if f is key), None)
            if name:
                sort[name] = direction
            elif key in keys:
                sort["_id" if len(keys) == 1 else "_id." + _key_name(key)] = direction
        else:
            sort[_sort_path(key, ir)] = direction
    if sort and grouped:
        sort.setdefault("_id", 1)  # groups come in no defined order: make ties deterministic
    return sort


def count_stages() -> list[dict]:
    """How many documents reach this point, as one row `{count: N}` — `{count: 0}` when none
    do, where a bare `$count` stage yields no row at all (the form mongosh's
    `countDocuments()` runs as; see the MongoDB manual, db.collection.countDocuments)."""
    return [{"$facet": {"count": [{"$count": "count"}]}},
            {"$project": {"count": {"$ifNull": [{"$arrayElemAt": ["$count.count", 0]}, 0]}}}]


def _held_apart(f: Filter, ir: IR) -> bool:
    """Whether the values an `$all` asks for are held by different documents or elements of
    what is shown: a top-level field (one value per document), or a field of the very array
    element that is shown ('colleges with both midfielders and defenders', each player one
    position) — not an array of the shown document, which holds them all at once."""
    if not f.field.arrays:
        return True
    outputs = [o for o in ir.outputs if o.mql != f.field.mql]
    return bool(outputs) and all(o.arrays[:len(f.field.arrays)] == f.field.arrays for o in outputs)


def _both_by_group(ir: IR) -> list[dict]:
    """'the types that have both ships over 6000 and ships under 4000': the members meeting
    either side, grouped by what is shown, and the groups where some member meets each side
    (a flag per side, `$max` of a `$cond`); with nothing shown per group, either side."""
    keys = [f for f in ir.outputs if not any(f.mql == g.field.mql for g in ir.filters if g.branch)]
    if not keys or ir.group_by or ir.aggregates or ir.count:
        return render(replace(ir, both=False))
    pipeline = render(replace(ir, both=False, outputs=keys, distinct=True, sort=[], limit=None))
    at = next(i for i, stage in enumerate(pipeline) if "$group" in stage)
    for side in (1, 2):
        f = next(g for g in ir.filters if g.branch == side)
        pipeline[at]["$group"][f"_side{side}"] = {"$max": {"$cond": [{f.op: [_ref(f.field, ir), f.value]}, 1, 0]}}
    pipeline.insert(at + 1, {"$match": {"_side1": 1, "_side2": 1}})
    return pipeline


def _held_by_group(ir: IR, held: Filter) -> list[dict]:
    """'the residences that have both a male and a female player': one document holds one
    value of `held`, so the values are gathered per group of what is shown ($addToSet) and
    the groups holding every one are kept; with nothing else shown, nothing is asked per
    group and the values are alternatives."""
    keys = [f for f in ir.outputs if f.mql != held.field.mql]
    alternatives = Filter(held.field, "$in", held.value, held.start, branch=held.branch)
    filters = [alternatives if f is held else f for f in ir.filters]
    if not keys or ir.group_by or ir.aggregates or ir.count:
        return render(replace(ir, filters=filters))
    pipeline = render(replace(ir, filters=filters, outputs=keys, distinct=True, sort=[], limit=None))
    at = next(i for i, stage in enumerate(pipeline) if "$group" in stage)
    pipeline[at]["$group"]["_held"] = {"$addToSet": _ref(held.field, ir)}
    pipeline.insert(at + 1, {"$match": {"_held": {"$all": list(held.value)}}})
    return pipeline
