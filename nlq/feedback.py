"""Execution feedback (SAG §III-E): run a candidate read-only and say concretely what went wrong.

    ran = execute(query, backend, "clinic")
    problems = diagnose(query, ran, backend, "clinic", question="...")   # list[Violation]

Every execution goes through the backend's read-only `aggregate`, with the
timeout and row cap. The checks, each a :class:`nlq.gate.Violation`:

- `exec`: the candidate failed (its error, first line, at most 300 characters);
  `forbidden`: it uses a forbidden operator and was not run.
- `empty`: it returned no rows. Prefix bisection runs `prefix + [{$count}]`
  for successive prefixes to name the first stage that collapses the stream
  to zero documents (or fails), and, when that stage is a `$match`, the
  actual distinct values (at most 8) at the first two paths it filters, as
  the documents entering it hold them; a path through the keys of an object
  (a dynamic map) gets example keys instead. When an earlier `$match`
  compares a literal that matches no document reaching it (one branch of an
  `$or`, say), that stage is named instead: the stream shrank there and died
  later. A root `$lookup` whose join edge is not witnessed (none of up to 20
  local values occurs at the foreign field) adds a `join` violation; a probe
  that cannot run fails open (the paper's rule), or with `fail_closed` is a
  `join` violation too.
- `leaked_id`: result rows carry a synthetic `_id` (an ObjectId) while the
  question does not ask for ids.
- `contract`: with a declared output contract (DIA's shape declaration:
  `{columns: [...], rows: "one"|"few"|"many", order: "none"|"by <field>
  asc|desc"}`), a result whose column count, row-count class or order
  breaks it. `one` is exactly one row, `few` 1 to 20, `many` at least 2.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass

from nlq.backends.base import DEFAULT_MAX_ROWS, DEFAULT_TIMEOUT
from nlq.errors import BackendError, ForbiddenOperatorError, NlqError
from nlq.gate import Violation
from nlq.mql import scope
from nlq.mql.query import Query
from nlq.mql.values import ObjectId, sort_key
from nlq.text import safe_name

_QUOTE = "'"  # a name from the data or a reply, quoted as before when safe (else a JSON string)

MAX_VALUES = 8
MAX_FILTER_PATHS = 2
MAX_MESSAGE = 300
FEW_ROWS = 20


@dataclass
class Execution:
    """The outcome of one read-only run: rows, or a typed error (`{stage, type, message}`)."""

    rows: list | None
    error: dict | None
    ms: float


def execute(query: Query, backend, db: str, *, timeout: float = DEFAULT_TIMEOUT,
            max_rows: int = DEFAULT_MAX_ROWS) -> Execution:
    """Run a candidate; an NlqError of the query becomes `error`, a BackendError escapes."""
    started = time.perf_counter()
    try:
        rows = backend.aggregate(db, query.collection, query.pipeline, timeout=timeout, max_rows=max_rows)
    except BackendError:
        raise
    except NlqError as exc:
        return Execution(None, exc.to_failure("repair"), _ms(started))
    return Execution(rows, None, _ms(started))


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)


def concise(message: str) -> str:
    line = (message or "").strip().splitlines()[0] if message and message.strip() else "failed"
    return line if len(line) <= MAX_MESSAGE else line[:MAX_MESSAGE - 1] + "…"


def diagnose(query: Query, ran: Execution, backend, db: str, *, question: str = "", contract: dict | None = None,
             bisection: bool = True, fail_closed: bool = False, timeout: float = DEFAULT_TIMEOUT,
             max_rows: int = DEFAULT_MAX_ROWS, id_leak: str = "objectid",
             join_on_empty: bool = True) -> list[Violation]:
    """The execution feedback of one run (see the module docstring); `fail_closed` makes a join
    probe that cannot run a violation (:func:`join_probe`); `id_leak` is the leaked-`_id` check
    (:func:`leaked_id`, `synthetic`: :func:`leaked_synthetic_id`, `off`: none); `join_on_empty=False`
    leaves the join probe to the gate."""
    if ran.error is not None:
        check = "forbidden" if ran.error["type"] == ForbiddenOperatorError.type else "exec"
        return [Violation(check, f"the pipeline failed: {concise(ran.error['message'])}", None)]
    if not ran.rows:
        if not bisection:
            return [Violation("empty", "the pipeline returns no rows", None)]
        found = [bisect(query, backend, db, timeout=timeout, max_rows=max_rows)]
        if join_on_empty:
            found += join_probe(query, backend, db, fail_closed=fail_closed, timeout=timeout)
        return found
    out = []
    leaked = {"objectid": leaked_id, "synthetic": leaked_synthetic_id}.get(id_leak, lambda rows, q: None)(
        ran.rows, question)
    if leaked is not None:
        out.append(leaked)
    if contract:
        out.extend(check_contract(ran.rows, contract))
    return out


# -- bisection -----------------------------------------------------------------------------------

def _count(backend, db: str, query: Query, k: int, timeout: float) -> int | str:
    """Documents after the first k stages, or the error message."""
    try:
        rows = backend.aggregate(db, query.collection, query.pipeline[:k] + [{"$count": "n"}],
                                 timeout=timeout, max_rows=1)
    except BackendError:
        raise
    except NlqError as exc:
        return concise(exc.message)
    return rows[0]["n"] if rows else 0


def bisect(query: Query, backend, db: str, *, timeout: float = DEFAULT_TIMEOUT,
           max_rows: int = DEFAULT_MAX_ROWS) -> Violation:
    """The `empty` violation naming the first stage after which no document is left."""
    before = _count(backend, db, query, 0, timeout)
    if before == 0:
        return Violation("empty", f"the pipeline returns no rows: collection {query.collection!r} holds no "
                         f"documents", None)
    previous = before
    for k in range(1, len(query.pipeline) + 1):
        after = _count(backend, db, query, k, timeout)
        if after == previous and isinstance(after, int) and after:
            continue
        stage = k - 1
        name = _stage_name(query.pipeline[stage])
        if isinstance(after, str):
            return Violation("empty", f"the pipeline returns no rows: stage {stage} ({name}) fails: {after}", stage)
        if after == 0:
            dead = _dead_literal(query, stage, backend, db, timeout)
            if dead is not None:
                return dead
            message = (f"the pipeline returns no rows: stage {stage} ({name}) drops all {previous} documents "
                       f"that reach it")
            hints = _values_hint(query, stage, backend, db, timeout)
            return Violation("empty", message + (f"; {hints}" if hints else ""), stage)
        previous = after
    return Violation("empty", "the pipeline returns no rows (every prefix keeps documents; the last stage's "
                     "output is empty)", len(query.pipeline) - 1 if query.pipeline else None)


def _dead_literal(query: Query, collapse: int, backend, db: str, timeout: float) -> Violation | None:
    """An earlier `$match` literal (an `$or` branch, say) that matches no document reaching it: the
    stream shrank there and died later, so that literal is the likelier culprit."""
    walked = scope.walk(query, {})
    for comp in walked.comparisons:
        stage = comp.stage
        spec = query.pipeline[stage] if stage is not None and stage < collapse else None
        if not isinstance(spec, dict) or "$match" not in spec or comp.path.startswith("$$"):
            continue
        if not comp.field_where or comp.field_where[-1] != comp.path or isinstance(comp.value, bool):
            continue  # only plain `{path: literal}` / `{path: {$eq|$in: ...}}` filters, not $expr
        equality = comp.where == comp.field_where or comp.where[len(comp.field_where):][:1] in (("$eq",), ("$in",))
        if not equality:
            continue
        probe = Query(query.collection, query.pipeline[:stage] + [{"$match": {comp.path: comp.value}}])
        if _count(backend, db, probe, stage + 1, timeout) == 0:
            values = _distinct(backend, db, query, stage, comp.path, timeout)
            shown = f"; values at {safe_name(comp.path, _QUOTE)} there: {', '.join(_show(v) for v in values)}" if values else ""
            return Violation("empty", f"the pipeline returns no rows (the stream dies at stage {collapse}); "
                             f"stage {stage} ($match): {_show(comp.value)} at {safe_name(comp.path, _QUOTE)} matches no document"
                             f"{shown}", stage, path=comp.path, value=comp.value)
    return None


def _stage_name(spec) -> str:
    return next(iter(spec)) if isinstance(spec, dict) and spec else "?"


def filtered_paths(spec) -> list[str]:
    """The field paths a `$match` stage filters, in order (its `$expr` field references included)."""
    if not isinstance(spec, dict) or "$match" not in spec:
        return []
    walked = scope.walk(Query("_", [spec]), {})
    return list(dict.fromkeys(r.path for r in walked.references if not r.path.startswith("$$")))


def _values_hint(query: Query, stage: int, backend, db: str, timeout: float) -> str:
    parts = []
    for path in filtered_paths(query.pipeline[stage])[:MAX_FILTER_PATHS]:
        values = _distinct(backend, db, query, stage, path, timeout)
        if values:
            parts.append(f"values at {safe_name(path, _QUOTE)} there: {', '.join(_show(v) for v in values)}")
            continue
        keys = _map_keys(backend, db, query, stage, path, timeout)
        if keys is not None:
            parent, names = keys
            parts.append(f"{safe_name(path, _QUOTE)} is missing there; {safe_name(parent, _QUOTE)} has keys: {', '.join(_show(k) for k in names)}")
        else:
            parts.append(f"{safe_name(path, _QUOTE)} is missing in every document that reaches it")
    return "; ".join(parts)


def _distinct(backend, db: str, query: Query, stage: int, path: str, timeout: float) -> list:
    probe = query.pipeline[:stage] + [
        {"$project": {"_id": 0, "v": f"${path}"}},
        {"$unwind": {"path": "$v", "preserveNullAndEmptyArrays": True}},
        {"$match": {"v": {"$exists": True}}},
        {"$group": {"_id": "$v", "n": {"$sum": 1}}},
        {"$sort": {"n": -1, "_id": 1}}, {"$limit": MAX_VALUES}]
    rows = _probe(backend, db, query.collection, probe, timeout)
    return [] if rows is None else [r["_id"] for r in rows]


def _probe(backend, db: str, collection: str, pipeline: list, timeout: float) -> list | None:
    """The rows of a diagnostic probe, or None when the probe itself fails (an
    unreachable backend still stops the run)."""
    try:
        return backend.aggregate(db, collection, pipeline, timeout=timeout, max_rows=MAX_VALUES)
    except BackendError:
        raise
    except NlqError:
        return None


def _map_keys(backend, db: str, query: Query, stage: int, path: str, timeout: float):
    """(`parent`, example keys) for the deepest existing object on `path`, or None."""
    parts = path.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        parent = ".".join(parts[:cut])
        probe = query.pipeline[:stage] + [
            {"$project": {"_id": 0, "kv": {"$objectToArray": {"$cond": [{"$eq": [{"$type": f"${parent}"}, "object"]},
                                                                       f"${parent}", {}]}}}},
            {"$unwind": "$kv"}, {"$group": {"_id": "$kv.k", "n": {"$sum": 1}}},
            {"$sort": {"n": -1, "_id": 1}}, {"$limit": MAX_VALUES}]
        rows = _probe(backend, db, query.collection, probe, timeout)
        if rows is None:
            return None
        if rows:
            return parent, [r["_id"] for r in rows]
    return None


def _show(value) -> str:
    text = repr(value) if isinstance(value, str) else str(value)
    return text if len(text) <= 60 else text[:59] + "…"


# -- result checks -------------------------------------------------------------------------------

_ASKS_FOR_ID = re.compile(r"\b(_?id|ids|identifiers?|object ?ids?)\b", re.I)


def leaked_id(rows: list, question: str) -> Violation | None:
    """A `leaked_id` violation when rows carry an ObjectId `_id` the question does not ask for."""
    if _ASKS_FOR_ID.search(question or ""):
        return None
    if any(isinstance(row, dict) and isinstance(row.get("_id"), ObjectId) for row in rows):
        return Violation("leaked_id", "the rows carry the synthetic _id (an ObjectId) the question does not ask "
                         "for: exclude it with {$project: {_id: 0, ...}}", None, path="_id")
    return None


# The paper's rule (§III-E: "a pipeline that leaks synthetic _id values is repaired unless the
# question asks for them"): its reference looks at the first 5 rows for string keys like 'db::42'
# (TEND-native's) and never exempts a question; the text's exemption is kept, for a question that
# names the document key itself (`_id`, "document id", "object id"), not any mention of an id.
SYNTHETIC_ID_ROWS = 5
_ASKS_FOR_DOCUMENT_ID = re.compile(r"(?<![\w$])_id\b|\b(?:document|object) ?(?:id|key)s?\b", re.I)


def leaked_synthetic_id(rows: list, question: str) -> Violation | None:
    """A `leaked_id` violation when one of the first 5 rows carries a synthetic `_id` (an ObjectId, or
    a string holding '::' such as 'financial::42') and the question does not ask for the `_id`."""
    if _ASKS_FOR_DOCUMENT_ID.search(question or ""):
        return None
    for row in rows[:SYNTHETIC_ID_ROWS]:
        value = row.get("_id") if isinstance(row, dict) else None
        if isinstance(value, ObjectId) or (isinstance(value, str) and "::" in value):
            return Violation("leaked_id", f"the rows carry the internal document _id ({_show(value)}), which the "
                             "question does not ask for: exclude it with {$project: {_id: 0, ...}} in the final "
                             "stage", None, path="_id")
    return None


_ORDER = re.compile(r"^by\s+(\S+)(?:\s+(asc|desc))?$", re.I)


def check_contract(rows: list, contract: dict) -> list[Violation]:
    """Violations of a declared output contract by an executed result."""
    out = []
    columns = contract.get("columns")
    present = list(dict.fromkeys(k for row in rows if isinstance(row, dict) for k in row))
    if isinstance(columns, list) and columns and len(present) != len(columns):
        out.append(Violation("contract", f"the contract declares {len(columns)} column(s) {columns} but the rows "
                             f"have {len(present)}: {present}", None))
    size = contract.get("rows")
    n = len(rows)
    bad = {"one": n != 1, "few": not 1 <= n <= FEW_ROWS, "many": n < 2}.get(size)
    if bad:
        out.append(Violation("contract", f"the contract declares {size!r} rows but the pipeline returns {n}", None))
    order = contract.get("order")
    m = _ORDER.match(order.strip()) if isinstance(order, str) else None
    if m:
        name, direction = m.group(1), (m.group(2) or "asc").lower()
        if name not in present:
            out.append(Violation("contract", f"the contract orders by {name!r}, which is not a column: {present}",
                                 None, path=name))
        else:
            keys = [sort_key(row.get(name)) for row in rows if isinstance(row, dict)]
            ordered = keys == sorted(keys, reverse=direction == "desc")
            if not ordered:
                out.append(Violation("contract", f"the contract orders by {name} {direction} but the rows are not "
                                     f"in that order: add {{$sort: {{{name}: {1 if direction == 'asc' else -1}}}}}",
                                     None, path=name))
    return out


__all__ = ["Execution", "execute", "diagnose", "bisect", "leaked_id", "leaked_synthetic_id", "check_contract", "filtered_paths", "concise"]


# -- join edges ----------------------------------------------------------------------------------

JOIN_PROBE_VALUES = 20


def join_probe(query: Query, backend, db: str, *, fail_closed: bool = False,
               timeout: float = DEFAULT_TIMEOUT) -> list[Violation]:
    """`join` violations for root `$lookup` stages whose join edge is not witnessed in the data:
    none of up to 20 distinct local values (from the documents reaching the stage) occurs at the
    foreign field. A probe that cannot run fails open (a violation with `fail_closed`).

    Run on empty results only: a join without overlap is a legitimate answer to some questions
    (names two collections share: none), so it explains an empty result, never gates one."""
    out = []
    for stage, spec in enumerate(query.pipeline):
        arg = spec.get("$lookup") if isinstance(spec, dict) else None
        if not isinstance(arg, dict) or not all(isinstance(arg.get(k), str) for k in ("from", "localField",
                                                                                     "foreignField")):
            continue
        local, foreign = arg["localField"], arg["foreignField"]
        try:
            values = [r["_id"] for r in backend.aggregate(db, query.collection, query.pipeline[:stage] + [
                {"$project": {"_id": 0, "v": f"${local}"}},
                {"$unwind": {"path": "$v", "preserveNullAndEmptyArrays": True}},
                {"$match": {"v": {"$exists": True, "$ne": None}}},
                {"$group": {"_id": "$v"}}, {"$limit": JOIN_PROBE_VALUES}], timeout=timeout,
                max_rows=JOIN_PROBE_VALUES)]
            if not values:
                continue  # nothing to join: an empty stream is the bisection's business
            hits = backend.aggregate(db, arg["from"], [{"$match": {foreign: {"$in": values}}}, {"$limit": 1}],
                                     timeout=timeout, max_rows=1)
        except BackendError:
            raise
        except NlqError as exc:
            if fail_closed:
                out.append(Violation("join", f"stage {stage} ($lookup): the join edge {local} -> "
                                     f"{arg['from']}.{foreign} could not be probed: {concise(exc.message)}", stage,
                                     path=foreign))
            continue
        if not hits:
            shown = ", ".join(_show(v) for v in values[:4])
            out.append(Violation("join", f"stage {stage} ($lookup): the join edge {local} -> {arg['from']}.{foreign} "
                                 f"is not witnessed: none of the local values ({shown}, ...) occurs at "
                                 f"{arg['from']}.{foreign}", stage, path=foreign))
    return out
