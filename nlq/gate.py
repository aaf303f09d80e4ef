"""The admissibility gate (SAG §III-B, III-D): concrete violations of a candidate pipeline.

Each check is a pure function `check(query, index, question) -> list[Violation]`
over a parsed query (`nlq.mql.query.Query` or `{collection, pipeline}`), the
database's grounding index (from `nlq index`) and the question text; the
checks are listed in :data:`CHECKS` and :func:`run` applies them all. An empty
list means admissible.

    >>> from nlq.index import index_documents
    >>> ix = index_documents("w", {"labs": [{"name": "Central Lab", "kind": "A"}] * 3})
    >>> [v.message for v in run({"collection": "labs", "pipeline": [{"$match": {"nmae": "x"}}]}, ix, "")]
    ["stage 0 ($match): field 'nmae' does not exist in labs — did you mean 'name'?"]

- `path`: the collection exists; every field reference resolves to an induced
  path (through `<*>` under a dynamic map, through array elements) or to a
  field an earlier stage computed (see :mod:`nlq.mql.scope`); `$lookup`,
  `$graphLookup` and `$unionWith` name real collections and foreign fields
  that exist there.
- `value`: a string literal compared with a field must be stored in exactly
  that form at that field. A literal whose normal form is stored at the
  field in another form (case, accents, plural) is a violation naming the
  stored form; a literal stored elsewhere but never at the compared field is
  a violation naming where it lives. The second rule only speaks when the
  index holds the field's stored forms completely: its collection was
  sampled whole, or no form at it was seen only once (the Good-Turing
  estimate of unseen forms is then zero), and no bound of the value index
  dropped forms; or the field's strings all have a few forms (`M0012`,
  `1234`: runs of capitals, small letters and digits), each seen more than
  once over at least 20 occurrences, and the literal has none of them.
  A field linked to another by a join edge holds that field's values. An `$or` that looks for one literal in several fields
  expects most of them not to hold it: a branch that cannot match is no
  violation while another branch compares the same literal and can.
- `limit`: "top N", "first N", "at most N", "limit(ed) to N" in the question
  requires a `$limit` somewhere in the pipeline.

A gold pipeline over its own data is admissible: the gate reports only what
the index proves (a path under an open or unwalked part of the lattice, a
computed value, a literal the index never saw, all pass).
"""

from __future__ import annotations

import difflib
import re
from collections import Counter
from dataclasses import asdict, dataclass

from nlq import index as grounding
from nlq.mql import scope
from nlq.mql.query import Query
from nlq.text import normalize, safe_name

_QUOTE = "'"  # a name from the data or a reply, quoted as before when safe (else a JSON string)


@dataclass(frozen=True)
class Violation:
    """One concrete reason a candidate is inadmissible: `{check, message, stage, path?, value?}`."""

    check: str
    message: str
    stage: int | None
    path: str | None = None
    value: object = None

    def to_json(self) -> dict:
        return {k: v for k, v in asdict(self).items() if v is not None or k == "stage"}


# -- the index as the walk needs it -------------------------------------------------------------

class Grounding:
    """What the checks read from one index document, derived once."""

    def __init__(self, index: dict):
        self.index = index
        depth = (index.get("params") or {}).get("max_depth") or grounding.DEFAULT_MAX_DEPTH
        lattice = index.get("lattice") or []
        by_collection: dict[str, list[str]] = {name: [] for name in index.get("collections") or {}}
        parents = {(e["collection"], _parent(e["path"])) for e in lattice}
        unknown: dict[str, list[str]] = {}
        for entry in lattice:
            coll, path = entry["collection"], entry["path"]
            by_collection.setdefault(coll, []).append(path)
            # no evidence of what is inside: an object or array never seen with content, or the walk's depth bound
            inside = entry.get("kind") in ("object", "dynamic_map", "array")
            if inside and ((coll, path) not in parents or path.count(".") + 1 >= depth):
                unknown.setdefault(coll, []).append(path)
        # a server gives every stored document an `_id` (data exported without one, as TEND v1's
        # files are, still has it once loaded): the path exists whether the sample showed it or not
        for paths in by_collection.values():
            if "_id" not in paths:
                paths.append("_id")
        self.schema = {c: scope.Node.from_paths(c, paths, unknown.get(c, ())) for c, paths in by_collection.items()}
        self.values = index.get("values") or {}
        collections = index.get("collections") or {}
        whole = {c for c, info in collections.items() if info.get("sampled", 0) >= info.get("count", 0)}
        distinct: dict[tuple, int] = {}
        singletons: dict[tuple, int] = {}
        forms: dict[tuple, Counter] = {}
        for matches in self.values.values():
            for m in matches:
                if m.get("kind") == "value" and "part" not in m and isinstance(m.get("stored"), str):
                    where = (m["collection"], grounding.mql_path(m["path"]))
                    distinct[where] = distinct.get(where, 0) + 1
                    singletons[where] = singletons.get(where, 0) + (m.get("frequency") == 1)
                    forms.setdefault(where, Counter())[signature(m["stored"])] += m.get("frequency") or 1
        # Fields whose strings all have one of a few forms (`M0001`, `1234`), each seen more than once
        # over enough occurrences: a literal of another form is not stored there.
        self.forms = {w: set(c) for w, c in forms.items()
                      if sum(c.values()) >= MIN_FORM_OCCURRENCES and min(c.values()) > 1}
        self.linked: dict[tuple, set] = {}
        for edge in index.get("join_edges") or []:
            a = (edge["from"]["collection"], grounding.mql_path(edge["from"]["path"]))
            b = (edge["to"]["collection"], grounding.mql_path(edge["to"]["path"]))
            self.linked.setdefault(a, set()).add(b)
            self.linked.setdefault(b, set()).add(a)
        # String fields whose stored forms the index holds completely: the collection was sampled
        # whole, or no form was seen only once (Good-Turing: the unseen forms' mass is ~0), and
        # no bound of the value index dropped forms.
        untruncated = len(self.values) < grounding.MAX_TERMS
        self.complete = {w for w, n in distinct.items() if n < grounding.MAX_VALUES_PER_PATH
                         and (w[0] in whole or (untruncated and singletons[w] == 0))}


MIN_FORM_OCCURRENCES = 20
_CHAR_CLASSES = [(re.compile(r"[A-Z]+"), "A"), (re.compile(r"[a-z]+"), "a"), (re.compile(r"[0-9]+"), "9")]


def signature(text: str) -> str:
    """The form of a string: runs of upper case, lower case and digits collapsed (`M0012` -> `A9`,
    `Guest Speaker` -> `Aa Aa`, `E11.9` -> `A9.9`)."""
    for rx, mark in _CHAR_CLASSES:
        text = rx.sub(mark, text)
    return text


def _parent(path: str) -> str | None:
    """The lattice path one level up (`a[]` of `a[].b`, `a` of `a[]`), None at the top."""
    if path.endswith(scope.ARRAY):
        return path[:-2]
    return path.rsplit(".", 1)[0] if "." in path else None


_PREPARED: dict[int, Grounding] = {}


def prepare(index: dict) -> Grounding:
    """The Grounding of an index document (derived once per document object)."""
    prepared = _PREPARED.get(id(index))
    if prepared is None or prepared.index is not index:
        if len(_PREPARED) > 64:
            _PREPARED.clear()
        prepared = _PREPARED[id(index)] = Grounding(index)
    return prepared


def _query(query) -> Query:
    if isinstance(query, Query):
        return query
    return Query(query.get("collection"), query.get("pipeline") or [])


def _stage_name(query: Query, stage) -> str:
    if stage is None:
        return "the query"
    spec = query.pipeline[stage] if 0 <= stage < len(query.pipeline) else None
    name = next(iter(spec), "?") if isinstance(spec, dict) and spec else "?"
    return f"stage {stage} ({name})"


def _did_you_mean(name: str, pool) -> str:
    pool = sorted(set(pool))
    lowered = {p.lower(): p for p in pool}
    if name.lower() in lowered and lowered[name.lower()] != name:
        return " — did you mean " + safe_name(lowered[name.lower()], quote="'") + "?"
    leaf = name.rsplit(".", 1)[-1]
    close = difflib.get_close_matches(name, pool, n=2, cutoff=0.6)
    close += [p for p in pool if p.rsplit(".", 1)[-1] == leaf and p != name and p not in close][:2]
    if not close:
        return ""
    return " — did you mean " + " or ".join(safe_name(c, quote="'") for c in close[:3]) + "?"


# -- path -----------------------------------------------------------------------------------------

def check_path(query, index: dict, question: str = "") -> list[Violation]:
    """Collections exist; every field reference resolves in the shape of the stream where it is read."""
    query, g = _query(query), prepare(index)
    walked = scope.walk(query, g.schema)
    out: list[Violation] = []
    for name in walked.collections:
        if name.found:
            continue
        role = ("the query's collection" if name.stage is None
                else f"{_stage_name(query, name.stage)}: {scope.position(name.where[2:])}")
        out.append(Violation("path", f"{role}: collection {name.name!r} does not exist in {g.index.get('db')}"
                             f"{_did_you_mean(str(name.name), g.schema)} (collections: {', '.join(sorted(g.schema))})",
                             name.stage, path=str(name.name)))
    if any(not c.found and c.stage is None for c in walked.collections):
        return out  # every path of an unknown collection would be reported again
    seen = set()
    for ref in walked.references:
        if ref.found or (ref.path, ref.stage) in seen:
            continue
        seen.add((ref.path, ref.stage))
        what = f"variable path {safe_name(ref.path, _QUOTE)}" if ref.path.startswith("$$") else f"field {safe_name(ref.path, _QUOTE)}"
        where = _where_text(ref.shape, query)
        pool = ref.shape.paths()
        out.append(Violation("path", f"{_stage_name(query, ref.stage)}: {what} does not exist{where}"
                             f"{_did_you_mean(ref.path, pool)}", ref.stage, path=ref.path))
    return out


def _where_text(shape: scope.Shape, query: Query) -> str:
    if shape.nodes and not shape.fields:
        colls = sorted({n.collection for n in shape.nodes})
        prefix = sorted({n.path for n in shape.nodes if n.path})
        return f" in {', '.join(map(safe_name, colls))}" + (f" under {safe_name(prefix[0], _QUOTE)}" if len(prefix) == 1 else "")
    if shape.fields and not shape.nodes:
        return f" after the previous stages (fields here: {', '.join(map(safe_name, sorted(shape.fields)))})"
    return ""


# -- value ----------------------------------------------------------------------------------------

def check_value(query, index: dict, question: str = "") -> list[Violation]:
    """String literals compared with a field are stored, in exactly that form, at that field."""
    query, g = _query(query), prepare(index)
    walked = scope.walk(query, g.schema)
    found = [(comp, _literal_violation(comp, g, query)) for comp in walked.comparisons]
    # An $or that looks for one literal in several fields expects most of them not to hold it:
    # a branch's violation is forgiven when another branch compares the same literal without one.
    fine = {(c.alternative[0], c.alternative[1], _key(c.value)) for c, v in found if v is None and c.alternative}
    out = []
    for comp, violation in found:
        if violation is None:
            continue
        alt = comp.alternative
        if alt is not None and any((alt[0], i, _key(comp.value)) in fine for i in range(alt[2]) if i != alt[1]):
            continue
        out.append(violation)
    return out


def _key(value):
    return (type(value).__name__, value if isinstance(value, (str, int, float, bool)) else repr(value))


def _literal_violation(comp: scope.Comparison, g: Grounding, query: Query) -> Violation | None:
    literal = comp.value
    if not isinstance(literal, str) or comp.target is None or comp.target.open or comp.target.fields:
        return None
    locations = {(n.collection, n.path) for n in comp.target.nodes}
    matches = [m for m in g.values.get(normalize(literal), [])
               if "part" not in m and isinstance(m.get("stored"), str) and m.get("kind") == "value"]
    if not locations or not matches or len(matches) >= grounding.MAX_MATCHES_PER_TERM:
        return None
    # a field that references another (a join edge) holds the referenced field's values
    domain = locations.union(*(g.linked.get(loc, ()) for loc in locations))
    here = [m for m in matches if (m["collection"], grounding.mql_path(m["path"])) in domain]
    stage = _stage_name(query, comp.stage)
    if here:
        if literal in {m["stored"] for m in here}:
            return None
        forms = " or ".join(repr(s) for s in sorted({m["stored"] for m in here}))
        return Violation("value", f"{stage}: {literal!r} is not stored at {safe_name(comp.path, _QUOTE)}; the stored form is {forms}",
                         comp.stage, path=comp.path, value=literal)
    form = signature(literal)
    if not all(loc in g.complete or (loc in g.forms and form not in g.forms[loc]) for loc in locations):
        return None  # the field may hold the literal in documents the index did not see
    lives = sorted({f"{safe_name(m['collection'])}.{safe_name(grounding.mql_path(m['path']))}"
                    + ("" if m["stored"] == literal else f" (as {m['stored']!r})") for m in matches})
    return Violation("value", f"{stage}: {literal!r} is never stored at {safe_name(comp.path, _QUOTE)}; it is stored at "
                     f"{', '.join(lives[:4])}", comp.stage, path=comp.path, value=literal)


# -- value, question-driven (the paper's) -----------------------------------------------------------

# Terms the paper's value check never enforces (states and flags that many paths hold).
GENERIC = frozenset({"missing", "present", "null", "empty", "none", "unknown", "n/a", "yes", "no", "true", "false"})
MAX_ENFORCED_PATHS = 4  # a hard witness at more static paths is too spread out to say where it must be read
MAX_EXACT_FORMS = 3     # a stored-form mismatch is reported when the term has at most this many stored forms


def check_witnessed(query, index: dict, question: str = "", witnesses=None) -> list[Violation]:
    """The paper's value check (§III-D, `A_value` over the enforceable witnesses `E_x`): for each
    hard witness of the question, a comparison-position string of its normal form must be one of its
    exact stored forms, and when the witness lives in the query's collection (at most 4 static paths:
    the path up to its first `<*>`), the query must read one of those paths: comparing the term
    elsewhere, or never mentioning it nor reading any of them (the omission check), is a violation.
    `witnesses` are `nlq witness` records (computed from the question with the paper's literal
    classes when None)."""
    query, g = _query(query), prepare(index)
    if witnesses is None:
        from nlq.witness import find_paper
        witnesses = find_paper(question, index)
    walked = scope.walk(query, g.schema)
    compared: dict[str, str] = {}
    for comp in walked.comparisons:
        if isinstance(comp.value, str) and not comp.value.startswith("$"):
            compared.setdefault(normalize(comp.value), comp.value)
    mentioned = {normalize(v) for v in _strings(query.pipeline)}
    read = {r.path for r in walked.references if not r.path.startswith("$$")}
    out = []
    for witness in witnesses:
        if not witness.get("hard"):
            continue
        term = witness.get("term") or ""
        n = normalize(term)
        if not n or term.strip().lower() in GENERIC or n in GENERIC:
            continue
        exact = {m["stored"] for m in witness.get("matches") or [] if "part" not in m}
        if not exact:
            continue
        if n in compared and len(exact) <= MAX_EXACT_FORMS and compared[n] not in exact:
            forms = " or ".join(repr(s) for s in sorted(map(str, exact))[:2])
            out.append(Violation("value", f"comparison value {compared[n]!r} is stored as {forms}: copy the stored "
                                 "form verbatim (exact case, spacing, underscores)", None, value=compared[n]))
        here = sorted({grounding.mql_path(m["path"].split(".<*>")[0].split("<*>")[0].rstrip("."))
                       for m in witness.get("matches") or []
                       if "part" not in m and m.get("collection") == query.collection})
        here = [p for p in here if p]
        if not here or len(here) > MAX_ENFORCED_PATHS:
            continue
        if any(p == r or p.startswith(r + ".") or r.startswith(p + ".") for p in here for r in read):
            continue
        kind = " (a dynamic-map key: read it as a literal key or with $objectToArray)" \
            if any(m.get("kind") == "key" for m in witness["matches"]) else ""
        where = ", ".join(f"'{p}'" for p in here[:3])
        if n in compared:
            out.append(Violation("value", f"{term!r} lives at {where}{kind}; the query compares it against a "
                                 "different path: filter on a witnessed path", None, value=term))
        elif n not in mentioned:
            out.append(Violation("value", f"the question's term {term!r} matches data at {where}{kind}, but the "
                                 "query never reads any of those paths", None, value=term))
    return out


def _strings(value):
    if isinstance(value, str):
        if not value.startswith("$"):
            yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


# -- limit ----------------------------------------------------------------------------------------

_NUMBER_WORDS = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen twenty".split())}
_N = r"(\d+|" + "|".join(_NUMBER_WORDS) + r")"
# "at most N" caps rows only when it counts rows ("at most three wines" is a condition on a count)
_LIMIT = re.compile(r"\b(?:top|first|limit(?:ed)? to)\s+" + _N + r"\b|\bat most\s+" + _N
                    + r"\s+(?:results|rows|records|entries|items)\b", re.I)


def requested_limit(question: str) -> tuple[int, str] | None:
    """(N, phrase) when the question asks for at most N rows: "top 5", "first three", "limited to 10"."""
    m = _LIMIT.search(question or "")
    if m is None:
        return None
    word = (m.group(1) or m.group(2)).lower()
    return (int(word) if word.isdigit() else _NUMBER_WORDS[word]), m.group(0)


def check_limit(query, index: dict, question: str = "") -> list[Violation]:
    """An explicit top/first/at-most-N request needs a `$limit` in the pipeline."""
    asked = requested_limit(question)
    if asked is None:
        return []
    query = _query(query)
    walked = scope.walk(query, prepare(index).schema)
    if walked.limits:
        return []
    n, phrase = asked
    return [Violation("limit", f"the question asks for {phrase!r} but the pipeline has no $limit: end it with "
                      f"{{$limit: {n}}} after the $sort that ranks the rows", None, value=n)]


CHECKS = (check_path, check_value, check_limit)
NAMES = {fn: fn.__name__.removeprefix("check_") for fn in CHECKS}


def run(query, index: dict, question: str = "", *, checks=CHECKS) -> list[Violation]:
    """Every violation of every check, in check order."""
    return [v for check in checks for v in check(query, index, question)]


__all__ = ["Violation", "CHECKS", "run", "check_path", "check_value", "check_witnessed", "check_limit", "requested_limit", "prepare"]
