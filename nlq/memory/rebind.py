"""Fields re-bound: a remembered query's fields replaced by the ones the new question names.

    old = named_fields(entry_question, entry_witnesses, index, grounding, collection, pipeline)
    new = named_fields(question, witnesses, index, grounding, collection, pipeline)
    result = rebind(pipeline, old, new)
    result.pipeline, result.rebound, result.unrebound, result.unread

The fields a question names are read as `rules` reads them
(`nlq.methods.rules`: the spans of the question's words that name a field of
the collection, one field per span, from the grounding index), for the
remembered query's collection and for each collection it joins (their paths
carry the join's `as` prefix, as the pipeline reads them). Both questions'
words are aligned (each field mention one placeholder word, so "average age
of students" lines up with "average weight of students"); a field the
remembered question names at a place where the new question names another is
re-bound: every path of the remembered query that reads it, in `$match`
keys and `$expr`, `$group` keys and accumulators, `$project`, `$sort`,
`$unwind`, `$lookup`'s `localField` / `foreignField` and its inner pipeline,
reads the new field instead, up to the stage that reshapes the documents
(`$group`, `$replaceRoot`, ...: after it, names are the query's own labels).
Fields named at no aligned place are paired in the order the questions name
them. A pair is re-bound only when the new field is of the same collection
(it exists in the index: mentions are of the index's fields), has the same
array structure, no dynamic-map key, is not read by the query already, and
holds the same kind of value where the query's use needs one (a number for
`$avg`, `$sum`, a comparison; anything for a projection, a sort, a group key).

What cannot be carried over is said: `unrebound` are remembered fields the
query reads that the new question does not name while it names fields of its
own the query does not read (`unread`): the adapted query answers about the
old field. Both lower the candidate's confidence (`nlq.memory.recall`).
"""

from __future__ import annotations

import copy
import difflib
from dataclasses import dataclass, field
from typing import Callable

from nlq.methods.rules.passes import State

PLACEHOLDER = "<field>"
# uses of a path where any stored type serves (a value shown, sorted on, grouped by, collected)
UNTYPED_USES = frozenset({"project", "sort", "group", "lookup", "$first", "$last", "$push", "$addToSet"})
# stages after which a name is the query's own label, no longer a stored path
_RESHAPING = frozenset({"$group", "$replaceRoot", "$replaceWith", "$bucket", "$bucketAuto", "$facet", "$count",
                        "$sortByCount", "$unionWith", "$setWindowFields", "$densify", "$fill"})
_NUMBERS = frozenset({"int", "long", "double", "decimal"})


@dataclass(frozen=True)
class Named:
    """A field a question names: its path as the pipeline reads it, the word span naming it, what it holds."""

    path: str
    start: int
    end: int
    kind: str
    value: str              # 'number', 'string', 'date', 'bool', ... (the field's dominant type, numbers as one)
    arrays: tuple[str, ...]


@dataclass
class Fields:
    """A question's words (normalized stems) and the fields it names."""

    words: list[str]
    named: list[Named]


@dataclass
class Rebinding:
    pipeline: list
    rebound: list = field(default_factory=list)    # [{from, to}]
    unrebound: list = field(default_factory=list)  # remembered paths kept though the question names others
    unread: list = field(default_factory=list)     # paths the new question names that the query never reads


def joins(pipeline: list) -> dict[str, str]:
    """`as` -> the joined collection, for each `$lookup` of the pipeline's top level."""
    found = {}
    for stage in pipeline or []:
        if isinstance(stage, dict) and isinstance(stage.get("$lookup"), dict):
            body = stage["$lookup"]
            if isinstance(body.get("as"), str) and isinstance(body.get("from"), str):
                found[body["as"]] = body["from"]
    return found


def named_fields(question: str, witnesses: list[dict], index: dict, grounding, collection: str,
                 pipeline: list) -> Fields:
    """The fields `question` names in `collection` and in the collections `pipeline` joins."""
    scopes = [("", collection)] + [(as_ + ".", other) for as_, other in joins(pipeline).items()]
    words: list[str] = []
    named: list[Named] = []
    taken: set[int] = set()
    for prefix, coll in scopes:
        if coll not in grounding.schema:
            continue
        state = State.of(question, witnesses, index, grounding, collection=coll)
        words = words or list(state.q.stems)
        for m in state.mentions:
            f = m.field
            span = set(range(m.start, m.end))
            if span & taken or f.maps or f.kind not in ("scalar", "array"):
                continue
            taken |= span
            named.append(Named(prefix + f.mql, m.start, m.end, f.kind, _value_kind(f.type),
                               tuple(prefix + a for a in f.arrays)))
    named.sort(key=lambda n: n.start)
    return Fields(words, named)


def _value_kind(bson_type: str) -> str:
    return "number" if bson_type in _NUMBERS else bson_type


def rebind(pipeline: list, old: Fields, new: Fields) -> Rebinding:
    """`pipeline` (the remembered query of the question `old` was read from) with the fields `old`
    names re-bound to those `new` names at the same places; see the module docstring."""
    uses = read_paths(pipeline)
    old_paths = {n.path for n in old.named}
    new_paths = {n.path for n in new.named}
    # a remembered field the query reads and the new question does not name; a new one the query does not read
    sources = [n for n in old.named if n.path in uses and n.path not in new_paths]
    targets = [n for n in new.named if n.path not in uses and n.path not in old_paths]
    mapping: dict[str, str] = {}

    def pair(a: Named, b: Named) -> None:
        if a.path in mapping or b.path in mapping.values() or not _fits(a, b, uses[a.path]):
            return
        mapping[a.path] = b.path

    for a, b in _aligned(old, new):
        if a in sources and b in targets:
            pair(a, b)
    left_old = [a for a in sources if a.path not in mapping]
    left_new = [b for b in targets if b.path not in mapping.values()]
    for a in left_old:  # the rest in the order the questions name them
        for b in left_new:
            if b.path not in mapping.values() and a.path not in mapping:
                pair(a, b)
    out = Rebinding(_rename(pipeline, lambda path, use: mapping.get(path)) if mapping else copy.deepcopy(pipeline))
    out.rebound = [{"from": a, "to": b} for a, b in mapping.items()]
    unread = list(dict.fromkeys(b.path for b in targets if b.path not in mapping.values()))
    out.unread = unread
    if unread:
        out.unrebound = list(dict.fromkeys(a.path for a in sources if a.path not in mapping))
    return out


def _fits(a: Named, b: Named, uses: set[str]) -> bool:
    """Whether the new field `b` can stand where the query reads `a` (its `uses`)."""
    if a.kind != b.kind or _arrays(a) != _arrays(b) or _scope(a.path) != _scope(b.path):
        return False
    return a.value == b.value or uses <= UNTYPED_USES


def _scope(path: str) -> str:
    return path.split(".", 1)[0] if "." in path else ""


def _arrays(n: Named) -> tuple[str, ...]:
    """The arrays a field lies in, by their own path: two fields of one array share them."""
    return n.arrays


def _aligned(old: Fields, new: Fields) -> list[tuple[Named, Named]]:
    """Pairs of fields named at the same place of both questions (their words aligned, each field
    mention one placeholder word)."""
    a, a_named = _placeheld(old)
    b, b_named = _placeheld(new)
    pairs = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag not in ("equal", "replace"):
            continue
        left = [a_named[i] for i in range(i1, i2) if i in a_named]
        right = [b_named[j] for j in range(j1, j2) if j in b_named]
        if tag == "equal" or len(left) == len(right):
            pairs += list(zip(left, right))
    return pairs


def _placeheld(fields: Fields) -> tuple[list[str], dict[int, Named]]:
    starts = {n.start: n for n in fields.named}
    words, at = [], {}
    i = 0
    while i < len(fields.words):
        if i in starts:
            at[len(words)] = starts[i]
            words.append(PLACEHOLDER)
            i = max(starts[i].end, i + 1)
            continue
        words.append(fields.words[i])
        i += 1
    return words, at


# -- the paths a pipeline reads -----------------------------------------------------------------

def read_paths(pipeline: list) -> dict[str, set[str]]:
    """Each stored path the pipeline reads (joined collections' with their `as` prefix), with its
    uses ('project', 'sort', 'group', 'match', an operator such as '$avg')."""
    found: dict[str, set[str]] = {}

    def note(path: str, use: str):
        found.setdefault(path, set()).add(use)
        return None

    _rename(pipeline, note)
    return found


Renamer = Callable[[str, str], "str | None"]


def _rename(pipeline: list, rename: Renamer, prefix: str = "") -> list:
    """The pipeline with each stored path `p` read before the documents are reshaped replaced by
    `rename(p, use)` (kept when it returns None)."""
    out = []
    shadowed: set[str] = set()   # names the query has given its own values (a computed output)
    live = True

    def ren(path: str, use: str) -> str:
        full = prefix + path
        if not live or path.split(".", 1)[0] in shadowed or path.startswith("$"):
            return path
        new = rename(full, use)
        return new[len(prefix):] if isinstance(new, str) and new.startswith(prefix) else path

    for stage in copy.deepcopy(pipeline):
        if not live or not isinstance(stage, dict) or len(stage) != 1:
            out.append(stage)
            continue
        (op, body), = stage.items()
        if op == "$match" and isinstance(body, dict):
            body = _query(body, ren, "")
        elif op in ("$project", "$addFields", "$set") and isinstance(body, dict):
            renamed = {}
            for key, value in body.items():
                if op == "$project" and (isinstance(value, bool) or value in (0, 1)):
                    renamed[ren(key, "project") if key != "_id" else key] = value
                else:
                    renamed[key] = _expr(value, ren, "project")
                    shadowed.add(key.split(".", 1)[0])
            body = renamed
        elif op == "$group" and isinstance(body, dict):
            body = {k: _expr(v, ren, "group") if k == "_id" else _accumulator(v, ren) for k, v in body.items()}
        elif op == "$sort" and isinstance(body, dict):
            body = {ren(k, "sort"): v for k, v in body.items()}
        elif op == "$unwind":
            if isinstance(body, str) and body.startswith("$"):
                body = "$" + ren(body[1:], "unwind")
            elif isinstance(body, dict) and isinstance(body.get("path"), str):
                body = {**body, "path": "$" + ren(body["path"][1:], "unwind")}
        elif op == "$unset":
            if isinstance(body, str):
                body = ren(body, "project")
            elif isinstance(body, list):
                body = [ren(n, "project") if isinstance(n, str) else n for n in body]
        elif op == "$lookup" and isinstance(body, dict):
            body = _lookup(body, ren, rename, prefix)
            if isinstance(body.get("as"), str):
                shadowed.discard(body["as"])
        elif op == "$sortByCount":
            body = _expr(body, ren, "group")
        out.append({op: body})
        if op in _RESHAPING:
            live = False
    return out


def _lookup(body: dict, ren, rename: Renamer, prefix: str) -> dict:
    as_ = body.get("as")
    body = dict(body)
    if isinstance(body.get("localField"), str):
        body["localField"] = ren(body["localField"], "lookup")
    if isinstance(as_, str):
        inner = prefix + as_ + "."
        if isinstance(body.get("foreignField"), str):
            new = rename(inner + body["foreignField"], "lookup")
            if isinstance(new, str) and new.startswith(inner):
                body["foreignField"] = new[len(inner):]
        if isinstance(body.get("pipeline"), list):
            body["pipeline"] = _rename(body["pipeline"], rename, inner)
    if isinstance(body.get("let"), dict):
        body["let"] = {k: _expr(v, ren, "lookup") for k, v in body["let"].items()}
    return body


def _accumulator(value, ren):
    if isinstance(value, dict) and len(value) == 1:
        (acc, expr), = value.items()
        return {acc: _expr(expr, ren, acc)}
    return _expr(value, ren, "group")


def _query(query, ren, prefix: str):
    """A `$match` predicate: its field keys (relative to `prefix` inside an `$elemMatch`)."""
    if isinstance(query, list):
        return [_query(q, ren, prefix) for q in query]
    if not isinstance(query, dict):
        return query
    out = {}
    for key, value in query.items():
        if key == "$expr":
            out[key] = _expr(value, ren, "match")
        elif key in ("$and", "$or", "$nor"):
            out[key] = _query(value, ren, prefix)
        elif key.startswith("$"):
            out[key] = value
        else:
            full = prefix + key
            new = ren(full, "match")
            new_key = new[len(prefix):] if new.startswith(prefix) else key
            if isinstance(value, dict) and isinstance(value.get("$elemMatch"), dict):
                value = {**value, "$elemMatch": _query(value["$elemMatch"], ren, new + ".")}
            elif isinstance(value, dict) and "$not" in value and isinstance(value["$not"], dict) \
                    and isinstance(value["$not"].get("$elemMatch"), dict):
                value = {**value, "$not": {**value["$not"], "$elemMatch": _query(value["$not"]["$elemMatch"], ren,
                                                                               new + ".")}}
            out[new_key] = value
    return out


def _expr(expr, ren, use: str):
    """An aggregation expression: each `"$path"` (never a `$$variable`) renamed."""
    if isinstance(expr, str):
        return "$" + ren(expr[1:], use) if expr.startswith("$") and not expr.startswith("$$") else expr
    if isinstance(expr, list):
        return [_expr(e, ren, use) for e in expr]
    if isinstance(expr, dict):
        return {k: (v if k == "$literal" else _expr(v, ren, k if k.startswith("$") else use))
                for k, v in expr.items()}
    return expr
