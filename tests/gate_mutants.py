"""Mutants of gold pipelines, one class of mistake each, and the gate's recall on them.

    for m in mutants(task, index): gate.run(m.query, index, task["question"])

Classes (each caught when the gate reports a violation of `EXPECTED[class]`):

- `misspelled_path`: one field reference of the gold with two letters of its
  last name swapped (or one dropped), so that it no longer resolves;
- `wrong_parent`: one reference's last name moved under another object path
  of the same document where no such field exists;
- `miscased_literal`: one compared string literal in another case, a form
  stored nowhere;
- `wrong_path_literal`: one string comparison moved to another string field
  of the collection that does not hold the literal;
- `dropped_limit`: the root `$limit` removed from a gold whose question asks
  for top/first N;
- `bad_collection`: the collection, a `$lookup.from`, `$graphLookup.from` or
  `$unionWith` misspelled.

Only golds the gate accepts are mutated (a mutant of a rejected gold proves nothing).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Iterator

from nlq import gate
from nlq import index as grounding
from nlq.mql import scope
from nlq.mql.query import Query
from nlq.text import normalize

CLASSES = ("misspelled_path", "wrong_parent", "miscased_literal", "wrong_path_literal", "dropped_limit",
           "bad_collection")
EXPECTED = {"misspelled_path": "path", "wrong_parent": "path", "miscased_literal": "value",
            "wrong_path_literal": "value", "dropped_limit": "limit", "bad_collection": "path"}


@dataclass
class Mutant:
    kind: str
    query: Query
    note: str


def typo(name: str) -> str:
    """`name` -> `nmae`; `ab` -> `b`."""
    if len(name) >= 3 and name[1] != name[2]:
        return name[0] + name[2] + name[1] + name[3:]
    return name[0] + name[2:] if len(name) >= 2 else name + name


def replace(pipeline: list, where: tuple, old: str, new: str) -> list | None:
    """A copy of `pipeline` with the reference `old` at `where` (a string or a key) changed to `new`."""
    root = copy.deepcopy(pipeline)
    trail, node = [], root
    for key in where:
        if (isinstance(node, dict) and key in node) or (isinstance(node, list) and isinstance(key, int)
                                                        and 0 <= key < len(node)):
            trail.append((node, key))
            node = node[key]
        else:
            break
    if not trail:
        return None
    holder, key = trail[-1]
    for prefix in ("$", ""):
        if isinstance(node, str) and node == prefix + old:
            holder[key] = prefix + new
            return root
    if len(trail) == len(where) and key == old and isinstance(holder, dict):
        items = [(new if k == old else k, v) for k, v in holder.items()]
        holder.clear()
        holder.update(items)
        return root
    return None


def _leaf_typo(path: str) -> str:
    head, _, leaf = path.rpartition(".")
    return f"{head}.{typo(leaf)}" if head else typo(leaf)


def mutants(task: dict, index: dict) -> Iterator[Mutant]:
    query: Query = task["query"]
    g = gate.prepare(index)
    walked = scope.walk(query, g.schema)
    seen = set()
    for ref in walked.references:
        if not ref.found or ref.shape.open or (ref.path, ref.where) in seen:
            continue
        seen.add((ref.path, ref.where))
        name = ref.path
        bare = name[2:].split(".", 1)[1] if name.startswith("$$") and "." in name else name
        if name.startswith("$$") and "." not in name:
            continue
        base = ref.shape
        if name.startswith("$$"):
            continue  # variable paths: their binding's shape is not kept on the reference
        wrong = _leaf_typo(bare)
        if base.resolve(wrong.split(".")) is None:
            pipeline = replace(query.pipeline, ref.where, name, wrong)
            if pipeline is not None:
                yield Mutant("misspelled_path", Query(query.collection, pipeline), f"{name} -> {wrong}")
        leaf = bare.rsplit(".", 1)[-1]
        parent = bare.rsplit(".", 1)[0] if "." in bare else ""
        paths = base.paths()
        objects = sorted({p.rsplit(".", 1)[0] for p in paths if "." in p and "<*>" not in p} - {parent})
        for other in objects:
            moved = f"{other}.{leaf}"
            if base.resolve(moved.split(".")) is None:
                pipeline = replace(query.pipeline, ref.where, name, moved)
                if pipeline is not None:
                    yield Mutant("wrong_parent", Query(query.collection, pipeline), f"{name} -> {moved}")
                break
    yield from _literal_mutants(query, walked, g)
    asked = gate.requested_limit(task.get("question", ""))
    root_limits = [i for i, s in enumerate(query.pipeline) if isinstance(s, dict) and "$limit" in s]
    if asked and root_limits:
        pipeline = [s for i, s in enumerate(query.pipeline) if i not in root_limits]
        yield Mutant("dropped_limit", Query(query.collection, pipeline), f"no $limit ({asked[1]})")
    for name in walked.collections:
        if not isinstance(name.name, str):
            continue
        wrong = typo(name.name)
        if wrong in g.schema:
            continue
        if name.stage is None:
            yield Mutant("bad_collection", Query(wrong, query.pipeline), f"collection {name.name} -> {wrong}")
        else:
            pipeline = replace(query.pipeline, name.where, name.name, wrong)
            if pipeline is not None:
                yield Mutant("bad_collection", Query(query.collection, pipeline), f"{name.name} -> {wrong}")


def _stored_at(g: gate.Grounding, literal: str) -> set:
    return {(m["collection"], grounding.mql_path(m["path"])) for m in g.values.get(normalize(literal), [])
            if m.get("stored") == literal and "part" not in m}


def _literal_mutants(query: Query, walked: scope.Walk, g: gate.Grounding) -> Iterator[Mutant]:
    string_fields = sorted({(m["collection"], grounding.mql_path(m["path"])) for ms in g.values.values()
                            for m in ms if isinstance(m.get("stored"), str) and m.get("kind") == "value"
                            and "part" not in m})
    for comp in walked.comparisons:
        literal = comp.value
        if not isinstance(literal, str) or not _stored_at(g, literal):
            continue
        cased = literal.lower() if literal.lower() != literal else literal.upper()
        if cased != literal and not _stored_at(g, cased):
            pipeline = replace(query.pipeline, comp.where, literal, cased)
            if pipeline is not None:
                yield Mutant("miscased_literal", Query(query.collection, pipeline), f"{literal!r} -> {cased!r}")
        if comp.path.startswith("$$") or comp.shape is None or not comp.field_where:
            continue
        stored = _stored_at(g, literal)
        for coll, path in string_fields:
            if coll != query.collection or path == comp.path or (coll, path) in stored or "<*>" in path:
                continue
            target = comp.shape.resolve(path.split("."))
            if target is None or target.open or target.fields:
                continue
            pipeline = replace(query.pipeline, comp.field_where, comp.path, path)
            if pipeline is not None:
                yield Mutant("wrong_path_literal", Query(query.collection, pipeline),
                             f"{literal!r} on {comp.path} -> {path}")
            break


def recall(corpus) -> dict[str, tuple[int, int, list]]:
    """{class: (caught, mutants, [missed notes])} over every gold the gate accepts."""
    out = {kind: [0, 0, []] for kind in CLASSES}
    for task in corpus.tasks:
        ix = corpus.indexes[task["db"]]
        if gate.run(task["query"], ix, task["question"]):
            continue
        for m in mutants(task, ix):
            found = {v.check for v in gate.run(m.query, ix, task["question"])}
            entry = out[m.kind]
            entry[1] += 1
            if EXPECTED[m.kind] in found:
                entry[0] += 1
            else:
                entry[2].append(f"{task['id']}: {m.note}")
    return {k: tuple(v) for k, v in out.items()}


NONEXISTENT = " (nonexistent)"


def match_literal_mutants(task: dict) -> Iterator[tuple[int, Query]]:
    """(stage, mutant) for each string literal a root `$match` compares, changed to a stored-nowhere value."""
    query: Query = task["query"]
    walked = scope.walk(query, {})
    for comp in walked.comparisons:
        spec = query.pipeline[comp.stage] if comp.stage is not None else None
        if not isinstance(comp.value, str) or not isinstance(spec, dict) or "$match" not in spec:
            continue
        pipeline = replace(query.pipeline, comp.where, comp.value, comp.value + NONEXISTENT)
        if pipeline is not None:
            yield comp.stage, Query(query.collection, pipeline)


def bisection_localization(corpus) -> tuple[int, int, list]:
    """(localized, empty mutants, [missed notes]): mutants of non-empty golds that come back empty,
    and how often bisection names the mutated stage."""
    from nlq import feedback

    hit, total, missed = 0, 0, []
    for task in corpus.tasks:
        db = task["db"]
        if not feedback.execute(task["query"], corpus.backend, db).rows:
            continue
        for stage, mutant in match_literal_mutants(task):
            ran = feedback.execute(mutant, corpus.backend, db)
            if ran.error is not None or ran.rows:
                continue
            total += 1
            violation = feedback.bisect(mutant, corpus.backend, db)
            if violation.stage == stage:
                hit += 1
            else:
                missed.append(f"{task['id']}: stage {stage}, bisection said {violation.stage}: {violation.message}")
    return hit, total, missed
