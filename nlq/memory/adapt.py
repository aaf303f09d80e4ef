"""A remembered query adapted to a new question: its fields re-bound, its literals replaced.

    adapted = adapt(entry_question, entry_witnesses, pipeline, question, witnesses, fields=(old, new))
    adapted.pipeline, adapted.substitutions, adapted.unmapped, adapted.unplaced
    adapted.rebound, adapted.unrebound, adapted.unread

With `fields` (what each question names, `nlq.memory.rebind.named_fields`),
the fields the remembered question names are first re-bound to those the new
question names at the same places (`nlq.memory.rebind`): `rebound` lists
each `{from, to}`, `unrebound` the remembered fields kept though the new
question names others, `unread` the fields it names that the query never
reads. Then the literals:

The remembered question's literals (its value witnesses: quoted strings,
dates, codes, numbers, names, stored n-grams) are found in the remembered
pipeline — as compared values, as keys of a dynamic map in a field path, as
text inside a regular expression — and each is replaced by the literal of the
new question witnessed at the same stored path (a number by the new
question's number in the same place). What cannot be carried over is said,
never dropped: `unmapped` are remembered literals the new question has no
counterpart for (the adapted query would still filter on the old value),
`unplaced` the new question's literals that no part of the query reads (a
constraint the adaptation would ignore). Both lower the candidate's
confidence (`nlq.memory.recall`).
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field

from nlq.memory.rebind import Fields, rebind
from nlq.text import normalize, number_term

# value-witness sources that state a constraint (an n-gram counts when it is hard: few locations)
LITERAL_SOURCES = frozenset({"quoted", "date", "code", "number", "title"})
_NUMBER = re.compile(r"(?<![\w.])[-+]?\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\w])|(?<![\w.])[-+]?\d+(?:\.\d+)?(?![\w])")
# stages whose scalars are shapes (1/0 inclusions, sort directions), never literals of a question
_SHAPE_STAGES = frozenset({"$project", "$sort", "$unset", "$count", "$sortByCount", "$unwind"})


@dataclass
class Adapted:
    pipeline: list
    substitutions: list = field(default_factory=list)  # [{from, to, path}]
    unmapped: list = field(default_factory=list)       # remembered literals with no counterpart
    unplaced: list = field(default_factory=list)       # the new question's literals the query never reads
    rebound: list = field(default_factory=list)        # [{from, to}]: fields re-bound to the question's
    unrebound: list = field(default_factory=list)      # remembered fields kept though the question names others
    unread: list = field(default_factory=list)         # fields the question names that the query never reads

    @property
    def complete(self) -> bool:
        return not self.unmapped and not self.unplaced and not self.unrebound


def literal_witnesses(witnesses: list[dict]) -> list[dict]:
    """The witnesses that state a constraint: found in the data, and a literal kind or hard."""
    return [w for w in witnesses or []
            if w.get("matches") and (w.get("source") in LITERAL_SOURCES or w.get("hard"))]


def numbers(question: str) -> list[float]:
    """The numbers written in a question, in order (thousands separators dropped)."""
    return [float(m.group().replace(",", "")) for m in _NUMBER.finditer(question)]


def _path(path: str) -> tuple[str, ...]:
    """A stored path's segments without array markers ('a[].b' -> ('a', 'b'))."""
    return tuple(seg for seg in path.replace("[]", "").split(".") if seg)


def _paths_meet(context: tuple[str, ...] | None, stored: tuple[str, ...]) -> bool:
    """Whether a pipeline field (its segments) can be the stored path ('<*>' is any key)."""
    if not context:
        return False
    if len(context) != len(stored):
        # a path read after a join or an unwind carries a prefix of its own: compare the tails
        n = min(len(context), len(stored))
        context, stored = context[-n:], stored[-n:]
    return all(s == "<*>" or s == c for c, s in zip(context, stored))


def _same(value, witness: dict) -> bool:
    """Whether a pipeline scalar is one of the witness's stored forms (or its term)."""
    if isinstance(value, bool):
        return False
    for m in witness.get("matches") or []:
        stored = m.get("stored")
        if stored == value and type(stored) is not bool:
            return True
    if isinstance(value, (int, float)):
        return number_term(value) == normalize(str(witness.get("term", "")))
    return isinstance(value, str) and normalize(value) == normalize(str(witness.get("term", "")))


def _counterpart(old: dict, context: tuple[str, ...] | None, candidates: list[dict]) -> tuple[dict, object] | None:
    """The new witness stored where `old` was (at the pipeline field `context`, else at one of
    `old`'s own locations), with the stored form to use there."""
    locations = [_path(m["path"]) for m in old.get("matches") or [] if "part" not in m]
    for new in candidates:
        for m in new.get("matches") or []:
            if "part" in m:
                continue
            where = _path(m["path"])
            if _paths_meet(context, where) or (context is None and where in locations):
                return new, m.get("stored")
    return None


def adapt(entry_question: str, entry_witnesses: list[dict], pipeline: list, question: str,
          witnesses: list[dict], *, fields: tuple[Fields, Fields] | None = None) -> Adapted:
    """`pipeline` (the remembered query of `entry_question`) with its fields re-bound (given what both
    questions name, `fields = (old, new)`) and its literals replaced by those of `question`; see the
    module docstring."""
    rebinding = rebind(pipeline, *fields) if fields is not None else None
    if rebinding is not None:
        pipeline = rebinding.pipeline
    old_literals = literal_witnesses(entry_witnesses)
    new_literals = literal_witnesses(witnesses)
    shared = {normalize(str(w["term"])) for w in old_literals} & {normalize(str(w["term"])) for w in new_literals}
    changed_old = [w for w in old_literals if normalize(str(w["term"])) not in shared]
    fresh = [w for w in new_literals if normalize(str(w["term"])) not in shared]
    old_numbers = numbers(entry_question)
    new_numbers = numbers(question)
    out = Adapted(copy.deepcopy(pipeline))
    if rebinding is not None:
        out.rebound, out.unrebound, out.unread = rebinding.rebound, rebinding.unrebound, rebinding.unread
    used: set[int] = set()   # ids of new witnesses placed
    replaced: set[int] = set()  # ids of old witnesses replaced

    def substitute(value, context):
        """The new scalar for `value` at `context`, or `value` itself."""
        for old in changed_old:
            if not _same(value, old):
                continue
            found = _counterpart(old, context, [w for w in fresh if id(w) not in used])
            if found is None:
                continue
            new, stored = found
            used.add(id(new))
            replaced.add(id(old))
            stored = _like(value, stored)
            out.substitutions.append({"from": value, "to": stored, "path": ".".join(context or ())})
            return stored
        if isinstance(value, (int, float)) and not isinstance(value, bool) and float(value) in old_numbers \
                and float(value) not in new_numbers and len(old_numbers) == len(new_numbers):
            new = new_numbers[old_numbers.index(float(value))]
            new = int(new) if isinstance(value, int) and new.is_integer() else new
            for w in fresh:  # the number's own witness, if it had one, is placed
                if normalize(str(w["term"])) == number_term(new):
                    used.add(id(w))
            for old in changed_old:
                if normalize(str(old["term"])) == number_term(value):
                    replaced.add(id(old))
            out.substitutions.append({"from": value, "to": new, "path": ".".join(context or ())})
            return new
        if isinstance(value, str):
            return _in_text(value, context)
        return value

    def _in_text(text: str, context):
        """A field path naming a dynamic key ('$by_year.1987'), or a pattern holding a literal."""
        for old in changed_old:
            term = str(old["term"])
            if len(term) < 2 or not _holds(text, term):
                continue
            found = _counterpart(old, context, [w for w in fresh if id(w) not in used])
            if found is None:
                continue
            new, stored = found
            if text.startswith("$"):
                result = ".".join(str(stored) if seg.casefold() == term.casefold() else seg
                                  for seg in text.split("."))
            else:
                result = re.compile(re.escape(term), re.I).sub(lambda _m: re.escape(str(stored)), text, count=1)
            used.add(id(new))
            replaced.add(id(old))
            out.substitutions.append({"from": text, "to": result, "path": ".".join(context or ())})
            return result
        return text

    out.pipeline = [_walk_stage(stage, substitute) for stage in out.pipeline]
    # literals of the old question still in the query, with no counterpart
    for old in changed_old:
        if id(old) not in replaced and _occurs(pipeline, old):
            out.unmapped.append(str(old["term"]))
    for new in fresh:
        if id(new) not in used:
            out.unplaced.append(str(new["term"]))
    return out


def _holds(text: str, term: str) -> bool:
    """Whether a string of the query carries a literal: a segment of a field path ('$by_year.1987'),
    or a piece of a pattern or text."""
    if text.startswith("$"):
        return any(seg.casefold() == term.casefold() for seg in text.split("."))
    return term.casefold() in text.casefold()


def _like(old, new):
    """`new` in the type `old` had where the stored form is a number written as text, or back."""
    if isinstance(old, str) and isinstance(new, (int, float)) and not isinstance(new, bool):
        return number_term(new)
    return new


def _occurs(pipeline, witness: dict) -> bool:
    found = False

    def look(value, context):
        nonlocal found
        if _same(value, witness) or (isinstance(value, str) and len(str(witness["term"])) > 1
                                     and _holds(value, str(witness["term"]))):
            found = True
        return value

    for stage in pipeline:
        _walk_stage(copy.deepcopy(stage), look)
    return found


def _walk_stage(stage, substitute):
    if not isinstance(stage, dict) or len(stage) != 1:
        return stage
    (op, body), = stage.items()
    if op in _SHAPE_STAGES:
        return stage
    if op in ("$limit", "$skip"):
        return {op: substitute(body, ("$" + op[1:],))}
    if op == "$match":
        return {op: _walk_query(body, substitute)}
    if op in ("$lookup", "$facet", "$unionWith"):
        return {op: _walk_nested(body, substitute)}
    return {op: _walk_expr(body, substitute, None)}


def _walk_nested(body, substitute):
    if isinstance(body, dict):
        return {k: ([_walk_stage(s, substitute) for s in v] if k == "pipeline" and isinstance(v, list)
                    else _walk_nested(v, substitute) if isinstance(v, (dict, list)) and k not in (
                        "from", "localField", "foreignField", "as", "coll") else v)
                for k, v in body.items()}
    if isinstance(body, list):
        return [_walk_stage(s, substitute) for s in body]
    return body


def _walk_query(query, substitute, context=None):
    """A query predicate: field keys give their values a context."""
    if isinstance(query, list):
        return [_walk_query(q, substitute, context) for q in query]
    if not isinstance(query, dict):
        return substitute(query, context) if _scalar(query) else query
    out = {}
    for key, value in query.items():
        if key == "$expr":
            out[key] = _walk_expr(value, substitute, None)
        elif key.startswith("$"):
            out[key] = _walk_query(value, substitute, context)
        else:
            field_ = tuple(key.split("."))
            new_key = _in_key(key, field_, substitute)
            out[new_key] = _walk_query(value, substitute, field_)
    return out


def _in_key(key: str, field_, substitute) -> str:
    """A $match key naming a dynamic key ('values_by_year.1987.HBA1C'): its data segments replaced."""
    new = substitute("$" + key, field_)
    return new[1:] if isinstance(new, str) and new.startswith("$") else key


def _walk_expr(expr, substitute, context):
    """An aggregation expression: a scalar compared with a field path gets that path as context."""
    if isinstance(expr, list):
        paths = [tuple(e[1:].split(".")) for e in expr if isinstance(e, str) and e.startswith("$")
                 and not e.startswith("$$")]
        here = paths[0] if len(paths) == 1 else context
        return [_walk_expr(e, substitute, here) for e in expr]
    if isinstance(expr, dict):
        return {k: (v if k in ("$literal",) else _walk_expr(v, substitute, context)) for k, v in expr.items()}
    if isinstance(expr, str) and expr.startswith("$"):
        return substitute(expr, tuple(expr.lstrip("$").split(".")))
    if _scalar(expr):
        return substitute(expr, context)
    return expr


def _scalar(value) -> bool:
    return isinstance(value, (str, int, float)) and not isinstance(value, bool)
