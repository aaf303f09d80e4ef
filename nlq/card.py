"""The path card (SAG III-C): an index's lattice as compact text for a model prompt.

    >>> from nlq.index import index_documents
    >>> ix = index_documents("w", {"c": [{"v": {"1987": 1.5}}, {"v": {"1990": 2}, "n": None}]})
    >>> print(render(ix))
    # database w
    collections:
      c: 2 documents
    <BLANKLINE>
    c:
      n: null  present 50%, null 50%
      v: dynamic_map  keys "1987", "1990" (2 distinct)
      v.<*>: double|int

The card lists the collections with their document counts first, then one
line per lattice path of each collection, in tree order:
``path: types  markers``. Types are the BSON types seen at the path, most
frequent first. Markers, in this order and only when they apply:
``present P%`` (share of sampled documents that have the path, when below
100%), ``null N%``, ``empty E%`` (empty array/object/string), ``len A-B``
(array lengths) and, for a dynamic map, ``keys "k1", "k2", ... (K distinct)``
with up to 5 example keys.

Names come from the data: a database, collection or path name that holds a line
break, a control or format character, a quote, a backslash or a bracket other
than the `[]` array marker is written as a JSON string (`"a\\n[user] b": string`),
as values and example keys are, so that no name can pass for prompt structure.

Cap (``max_entries``, default 400 path lines): when the card would list more
paths, the deepest paths go first, and among equally deep ones the least
present (smallest share of sampled documents, then the last in tree order);
a parent is never cut before its children. The card ends with a visible note ``[... N of M paths cut ...]``.

Ablations (SAG Table V): ``collapse=False`` renders the concrete key paths the
index kept (at most 32 per collapsed entry, closed under parents: a kept path's
parent is always kept, see nlq.index) instead of ``<*>`` lines, typed, without
presence markers (the index aggregates those per collapsed path). When the
index did not keep every concrete path, the card says so in a visible note
``[N concrete paths not kept by the index: ...]``; ``top_level=True`` keeps only the top-level fields, a dynamic
map shown as a plain ``object``.
"""

from __future__ import annotations

import re
from typing import Iterable, Iterator

from nlq.errors import InputError
from nlq.index import MAX_CONCRETE
from nlq.text import json_string, safe_name

DEFAULT_MAX_ENTRIES = 400
CARD_EXAMPLE_KEYS = 5

_SEGMENT = re.compile(r"\[\]|[^.\[\]]+")


def path_depth(path: str) -> int:
    """Number of steps of a lattice path (`a.b[]` -> 3: a, b, [])."""
    return len(_SEGMENT.findall(path))


def tree_key(path: str) -> tuple:
    """Sort key that puts a parent before its children, `_id` first, elements after fields."""
    return tuple((0, s) if s == "_id" else (2, "") if s == "[]" else (1, s) for s in _SEGMENT.findall(path))


def render(index: dict, *, max_entries: int = DEFAULT_MAX_ENTRIES, collapse: bool = True,
           top_level: bool = False, **profile) -> str:
    """The card text of one index document (no trailing newline)."""
    card = build(index, max_entries=max_entries, collapse=collapse, top_level=top_level, **profile)
    return card["card"]


CAP_SCOPES = ("database", "collection")


def build(index: dict, *, max_entries: int = DEFAULT_MAX_ENTRIES, collapse: bool = True,
          top_level: bool = False, card_cap: str = "database", map_line: bool = False,
          underscore_paths: bool = True) -> dict:
    """`{db, card, paths, cut}`: the card text and how many path lines it kept and cut.

    The profile elements (nlq.profiles): `card_cap` `collection` bounds each collection's lines
    by `max_entries` (the paper's reference) instead of the whole card's; `map_line` renders a
    dynamic map as `DYNAMIC-KEY MAP — keys are data values, e.g. [...]; value = SHAPE; enumerate
    with $objectToArray -> {k,v}`; `underscore_paths=False` leaves out top-level `_`-prefixed
    paths (`_id` among them)."""
    if max_entries < 0:
        raise InputError("--max-entries must be at least 0")
    if card_cap not in CAP_SCOPES:
        raise InputError(f"unknown card cap {card_cap!r}; choose one of: {', '.join(CAP_SCOPES)}")
    for key in ("db", "collections", "lattice"):
        if key not in index:
            raise InputError(f"not an index document: no {key!r} (build one with `nlq index`)")
    collections = index["collections"]
    lines_by_coll: dict[str, list[tuple]] = {coll: [] for coll in collections}
    not_kept = 0
    by_path = {(e["collection"], e["path"]): e for e in index["lattice"]} if map_line else {}
    for entry in index["lattice"]:
        if top_level and path_depth(entry["path"]) != 1:
            continue
        if not underscore_paths and entry["path"].startswith("_"):
            continue
        lines_by_coll.setdefault(entry["collection"], [])
        sampled = collections.get(entry["collection"], {}).get("sampled") or 0
        share = entry["present"] / sampled if sampled else 0.0
        if not collapse and "<*>" in entry["path"]:
            not_kept += entry.get("concrete_dropped", 0)
            for concrete in entry.get("concrete", []):
                lines_by_coll[entry["collection"]].append(
                    (concrete, share, f"  {safe_name(concrete)}: {_types(entry, collapse=False)}"))
        else:
            if map_line and entry["kind"] == "dynamic_map" and collapse and not top_level:
                text = _map_line(entry, by_path)
            else:
                text = _line(entry, sampled, collapse=collapse and not top_level)
            lines_by_coll[entry["collection"]].append((entry["path"], share, text))
    if not collapse:
        for lines in lines_by_coll.values():
            lines.sort(key=lambda line: tree_key(line[0]))

    total = sum(len(lines) for lines in lines_by_coll.values())
    if card_cap == "collection":
        cut = set().union(*(_cut({coll: lines}, max_entries) for coll, lines in lines_by_coll.items()))
    else:
        cut = _cut(lines_by_coll, max_entries)
    out = [f"# database {safe_name(index['db'])}", "collections:"]
    for coll, info in collections.items():
        sampled = info.get("sampled", info.get("count"))
        extra = "" if sampled == info.get("count") else f", {sampled} sampled"
        out.append(f"  {safe_name(coll)}: {info.get('count')} document{'' if info.get('count') == 1 else 's'}{extra}")
    kept = 0
    for coll, lines in lines_by_coll.items():
        out.append("")
        out.append(f"{safe_name(coll)}:")
        shown = [line for i, line in enumerate(lines) if (coll, i) not in cut]
        kept += len(shown)
        out.extend(text for _, _, text in shown)
        if not lines:
            out.append("  (no documents sampled)")
    if not_kept:
        out.append("")
        out.append(f"[{not_kept} concrete paths not kept by the index: at most {MAX_CONCRETE} per collapsed "
                   f"path, parents before children]")
    if cut:
        out.append("")
        scope = " per collection" if card_cap == "collection" else ""
        out.append(f"[{len(cut)} of {total} paths cut to fit --max-entries {max_entries}{scope}: "
                   f"deepest and least present first]")
    return {"db": index["db"], "card": "\n".join(out), "paths": kept, "cut": len(cut)}


def _cut(lines_by_coll: dict[str, list[tuple]], max_entries: int) -> set[tuple[str, int]]:
    """The (collection, line number) pairs to drop so that at most max_entries remain."""
    ranked = []
    for coll, lines in lines_by_coll.items():
        for i, (path, share, _) in enumerate(lines):
            ranked.append((-path_depth(path), share, -i, coll, i))
    ranked.sort(key=lambda r: r[:3] + (r[3],))
    excess = max(0, len(ranked) - max_entries)
    return {(coll, i) for _, _, _, coll, i in ranked[:excess]}


def _types(entry: dict, *, collapse: bool) -> str:
    hist = entry.get("types") or {}
    if entry["kind"] == "dynamic_map" and collapse:
        lead = "dynamic_map"
        others = [t for t, _ in sorted(hist.items(), key=lambda kv: (-kv[1], kv[0])) if t != "object"]
        return "|".join([lead] + others)
    ordered = [t for t, _ in sorted(hist.items(), key=lambda kv: (-kv[1], kv[0]))]
    return "|".join(ordered) or "missing"


def _percent(n: int, of: int) -> str:
    value = 100 * n / of if of else 0
    if 0 < value < 1:
        return "<1%"
    if 99 < value < 100:
        return ">99%"
    return f"{value:.0f}%"


def _line(entry: dict, sampled: int, *, collapse: bool) -> str:
    markers = []
    if entry["present"] < sampled:
        markers.append(f"present {_percent(entry['present'], sampled)}")
    if entry.get("null"):
        markers.append(f"null {_percent(entry['null'], sampled)}")
    if entry.get("empty"):
        markers.append(f"empty {_percent(entry['empty'], sampled)}")
    if entry.get("array_len"):
        lo, hi = entry["array_len"]["min"], entry["array_len"]["max"]
        markers.append(f"len {lo}" if lo == hi else f"len {lo}-{hi}")
    if entry["kind"] == "dynamic_map" and collapse:
        keys = ", ".join(json_string(k) for k in entry.get("example_keys", [])[:CARD_EXAMPLE_KEYS])
        markers.append(f"keys {keys} ({entry.get('distinct_keys', len(entry.get('example_keys', [])))} distinct)")
    text = f"  {safe_name(entry['path'])}: {_types(entry, collapse=collapse)}"
    return text + ("  " + ", ".join(markers) if markers else "")


def _map_line(entry: dict, by_path: dict) -> str:
    """The paper's line of a dynamic map: its example keys, the shape of its values, how to read it."""
    keys = ", ".join(json_string(k) for k in entry.get("example_keys", [])[:4])
    shape = _shape(entry["collection"], entry["path"] + ".<*>", by_path, 0)
    return (f"  {safe_name(entry['path'])}: DYNAMIC-KEY MAP — keys are data values, e.g. [{keys}]; value = {shape}; "
            "enumerate with $objectToArray -> {k,v}")


def _shape(collection: str, path: str, by_path: dict, depth: int) -> str:
    """`OBJECT{a, b:ARRAY of [...]}`, `ARRAY of [...]` or the types of the values at a lattice path."""
    entry = by_path.get((collection, path))
    if entry is None:
        return "?"
    if entry["kind"] in ("object", "dynamic_map"):
        prefix = path + "."
        children = sorted({p[len(prefix):] for c, p in by_path if c == collection and p.startswith(prefix)
                           and "." not in p[len(prefix):] and "[" not in p[len(prefix):]})[:8]
        if depth >= 2:
            return "OBJECT{" + ",".join(safe_name(child) for child in children) + "}"
        parts = []
        for child in children:
            sub = by_path.get((collection, prefix + child))
            if sub is not None and sub["kind"] == "array":
                parts.append(f"{safe_name(child)}:{_shape(collection, prefix + child, by_path, depth + 1)}")
            else:
                parts.append(safe_name(child))
        return "OBJECT{" + ", ".join(parts) + "}"
    if entry["kind"] == "array":
        return f"ARRAY of [{_shape(collection, path + '[]', by_path, depth + 1)}]"
    return _types(entry, collapse=True)


def lines_for(index: dict, fields: Iterable[tuple[str, str]]) -> list[str]:
    """The card lines of the lattice paths behind `(collection, MQL path)` pairs, with their
    parents, under a `collection:` heading each, in card order.

    A dynamic map's `<*>` stands for any key (`seasons.2019.team` is `seasons.<*>.team`) and
    array markers are invisible in MQL paths (`visits.date` is `visits[].date`); a field the
    lattice does not hold contributes nothing."""
    wanted: dict[str, list[list[str]]] = {}
    for collection, path in fields:
        wanted.setdefault(collection, []).append(path.split("."))
    out = []
    for collection, info in index["collections"].items():
        paths = wanted.get(collection)
        if not paths:
            continue
        entries = [e for e in index["lattice"] if e["collection"] == collection]
        hits = {e["path"] for e in entries for path in paths if _names(e["path"], path)}
        chosen = [e for e in entries
                  if any(hit == e["path"] or hit.startswith((e["path"] + ".", e["path"] + "[]")) for hit in hits)]
        if chosen:
            out.append(f"{safe_name(collection)}:")
            sampled = info.get("sampled") or 0
            out.extend(_line(e, sampled, collapse=True) for e in sorted(chosen, key=lambda e: tree_key(e["path"])))
    return out


def _names(lattice_path: str, segments: list[str]) -> bool:
    """Whether a lattice path is the MQL path `segments` (`<*>` matching any one key)."""
    steps = lattice_path.replace("[]", "").split(".")
    return len(steps) == len(segments) and all(a == "<*>" or a == b for a, b in zip(steps, segments))


def run(indexes: Iterable[dict], *, dbs: Iterable[str] = (), **options) -> Iterator[dict]:
    """Cards (`build` results) for the index documents, only those of `dbs` when given.

    Raises InputError for a failed or malformed input line and for a --db that
    none of the index documents holds."""
    wanted = list(dbs)
    seen = set()
    for index in indexes:
        if index.get("failure"):
            raise InputError(f"bad index input: {index['failure']['message']}")
        db = index.get("db")
        if wanted and db not in wanted:
            continue
        seen.add(db)
        yield build(index, **options)
    missing = [db for db in wanted if db not in seen]
    if missing:
        raise InputError(f"no index document for database {', '.join(missing)}",
                         hint="index it first: nlq index --data DIR --db " + missing[0])


__all__ = ["render", "build", "run", "lines_for", "path_depth", "tree_key", "DEFAULT_MAX_ENTRIES"]
