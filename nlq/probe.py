"""Probing the database for literals the sampled index did not witness.

The grounding index reads a sample of each collection (400 documents by
default) and keeps at most 1,000 values per path, so a value the question
names can be stored and still be missing from the index: "Which theaters are
in Minneapolis?" over 1,564 theaters of which the sample holds none in
Minneapolis. Without a witness no method can ground it (rules leaves it out
and `nlq ask` abstains).

`probe` asks the database itself, read-only and bounded: for each literal
(a quoted string, a title-case phrase, an ALL-CAPS code, or a word a reading
left out as a value) that the index does not hold, one `$match` per
collection over its string paths (a case-insensitive whole-value `$regex`,
see the MongoDB manual's `$regex`), then one count per path that holds it.
What it finds is added to a copy of the index's value index, with the
document counts as frequencies and ``probed: true``, so the witnesses and
every method see it as they see a sampled value. A value is only taken when
its normalized form equals the literal's (`nlq.text.normalize`), as the index
itself compares them.

    >>> from nlq.index import index_documents
    >>> from nlq.mql.engine import aggregate
    >>> docs = [{"city": f"Town {i}"} for i in range(50)] + [{"city": "Duluth"}]
    >>> ix = index_documents("geo", {"places": docs[:10]}, counts={"places": 51})
    >>> class Served:  # a backend serving `docs` as geo.places
    ...     def aggregate(self, db, coll, pipeline, **limits):
    ...         return list(aggregate(iter(docs), pipeline))
    >>> [(m["stored"], m["path"], m["frequency"]) for m in probe(Served(), ix, ["duluth"])["duluth"]]
    [('Duluth', 'city', 1)]
"""

from __future__ import annotations

import re
from typing import Iterable

from nlq.errors import NlqError
from nlq.index import mql_path
from nlq.mql.match import path_values
from nlq.text import STOPWORDS, normalize
from nlq.witness import CODE, QUOTED, TITLE

MAX_TERMS = 6          # literals probed per question
MAX_PATHS = 24         # string paths probed per collection (the most present first)
MAX_HITS = 20          # documents read per collection to see which paths hold a literal
PROBE_TIMEOUT = 5.0    # seconds per probe query
# The confidence of an answer resting on a probed value, at most: below the recommended 0.8. The
# sample missed the value, so it is rare, and a rare value spelling the literal may mean another
# thing (a city named "California" for the state); no data measures how often, so no answer
# resting on one is reported as confident.
MAX_CONFIDENCE = 0.7


def literals(question: str, witnesses: Iterable[dict] = (), left_out: Iterable[str] = ()) -> list[str]:
    """The literals of `question` worth probing, at most :data:`MAX_TERMS`: its quoted strings,
    title-case phrases (the sentence's opening word is no name) and codes, then the words a
    reading left out as values (`left_out`); those a witness already matched are dropped."""
    matched = {normalize(w["term"]) for w in witnesses if w.get("matches")}
    found: list[str] = []
    for m in QUOTED.finditer(question):
        found.append(next(g for g in m.groups() if g is not None))
    opening = re.match(r"\W*(\w+)", question)
    for rx in (TITLE, CODE):
        for m in rx.finditer(question):
            words = m.group(0).rstrip(".").split()
            if opening and m.start() == opening.start(1):
                words = words[1:]
            while words and words[0].lower() in STOPWORDS:
                words = words[1:]
            if words:
                found.append(" ".join(words))
    found.extend(left_out)
    out, seen = [], set(matched)
    for term in found:
        key = normalize(term)
        if key and key not in seen and len(key) > 1:
            seen.add(key)
            out.append(term.strip())
    return out[:MAX_TERMS]


def string_paths(index: dict) -> dict[str, list[str]]:
    """{collection: MQL paths of its scalar string fields}, the most present first, at most
    :data:`MAX_PATHS` each."""
    found: dict[str, list[tuple[int, str]]] = {}
    for entry in index.get("lattice") or ():
        types = entry.get("types") or {}
        if entry.get("kind") == "scalar" and types.get("string"):
            path = mql_path(entry["path"])
            if path != "_id" and "<*>" not in path:
                found.setdefault(entry["collection"], []).append((-int(entry.get("present") or 0), path))
    return {c: list(dict.fromkeys(p for _, p in sorted(paths)))[:MAX_PATHS] for c, paths in found.items()}


def probe(backend, index: dict, terms: Iterable[str], *, timeout: float = PROBE_TIMEOUT) -> dict[str, list[dict]]:
    """{normalized literal: value matches} for the `terms` some string path of `index`'s database
    stores, in the collections the index only sampled (see the module docstring). A query that
    fails (a timeout, a backend refusing the `$regex`) probes nothing more in that collection; it
    is no error of the question."""
    db = index["db"]
    held = index.get("values") or {}
    wanted = {key: t for key, t in ((normalize(t), t) for t in terms) if key and key not in held}
    if not wanted:
        return {}
    found: dict[str, list[dict]] = {}
    collections = index.get("collections") or {}
    for coll, paths in sorted(string_paths(index).items()):
        info = collections.get(coll) or {}
        if info.get("sampled", 0) >= info.get("count", 0):
            continue  # the index read every document of it: a probe finds nothing new
        for key, term in wanted.items():
            rx = {"$regex": "^" + re.escape(term) + "$", "$options": "i"}
            try:
                docs = backend.aggregate(db, coll, [{"$match": {"$or": [{p: rx} for p in paths]}},
                                                    {"$limit": MAX_HITS}], timeout=timeout, max_rows=MAX_HITS)
                for path, stored in sorted(_holding(docs, paths, key)):
                    n = backend.aggregate(db, coll, [{"$match": {path: stored}}, {"$count": "n"}],
                                          timeout=timeout, max_rows=1)
                    found.setdefault(key, []).append({"stored": stored, "kind": "value", "collection": coll,
                                                      "path": _lattice_path(index, coll, path),
                                                      "frequency": n[0]["n"] if n else 0, "probed": True})
            except NlqError:
                break
    return found


def augmented(index: dict, found: dict[str, list[dict]]) -> dict:
    """A copy of `index` whose value index also holds the probed matches `found`."""
    if not found:
        return index
    values = dict(index.get("values") or {})
    for key, matches in found.items():
        values[key] = list(values.get(key, [])) + matches
    return {**index, "values": values}


def _holding(docs: list[dict], paths: list[str], key: str) -> set[tuple[str, str]]:
    """The (path, stored string) pairs of `docs` whose value normalizes to `key`."""
    out = set()
    for doc in docs:
        for path in paths:
            for reached in path_values(doc, tuple(path.split("."))):  # as the $match above reads it
                for value in reached if isinstance(reached, list) else (reached,):
                    if isinstance(value, str) and normalize(value) == key:
                        out.add((path, value))
    return out


def _lattice_path(index: dict, coll: str, path: str) -> str:
    """The lattice's spelling of an MQL path (`products[]` for the elements of `products`)."""
    for entry in index.get("lattice") or ():
        if entry["collection"] == coll and entry.get("kind") == "scalar" and mql_path(entry["path"]) == path:
            return entry["path"]
    return path


__all__ = ["literals", "probe", "augmented", "string_paths", "MAX_TERMS", "MAX_CONFIDENCE"]
