"""The grounding index (SAG III-C): path lattice, dynamic maps, value index, join edges.

`build(backend)` samples each collection through the backend (`sample(db,
coll, n, seed)`, counts with `count`) and yields one JSON index document per
database; `index_documents(db, {collection: docs})` does the same for
documents already in memory.

    >>> doc = index_documents("w", {"c": [{"v": {"1987": 1}}, {"v": {"1990": 2}}]})
    >>> [(e["path"], e["kind"]) for e in doc["lattice"]]
    [('v', 'dynamic_map'), ('v.<*>', 'scalar')]

Index document
--------------
``db``, ``params`` ({sample, seed, max_depth}), ``collections`` ({name:
{count, sampled}}), ``lattice``, ``prefixes``, ``top_fields``, ``join_edges``,
``values``.

Lattice entries ``{collection, path, kind, types, present, null, missing,
empty, array_len}`` (+ ``example_keys``, ``distinct_keys`` on dynamic maps,
+ ``concrete`` on paths through ``<*>``), in tree order (children sorted by
name, ``_id`` first). Paths use ``.`` between fields, ``[]`` after an array
field (``a[]`` is the path of the elements of ``a``) and ``<*>`` for the keys
of a dynamic map: ``values_by_year.<*>.readings[].value``. (A stored key
that itself contains ``.``, ``[]`` or ``<*>`` is written as is, so such a
path is ambiguous; MQL cannot address dotted names either.)

- ``kind``: ``dynamic_map`` for a detected map, else from the dominant non-null
  type: ``object``, ``array`` or ``scalar``.
- ``types``: BSON type histogram over value occurrences (an element path counts
  every element).
- ``present`` / ``null`` / ``empty`` / ``missing``: numbers of sampled
  documents where the path has a value / a null / an empty array, object or
  string / no value (``missing = sampled - present``).
- ``array_len``: ``{min, max, mean}`` over the arrays at the path, else null.
- ``example_keys``: the 8 most frequent keys of a map; ``distinct_keys``: how
  many distinct keys were seen.
- ``concrete``: up to ``MAX_CONCRETE`` = 32 concrete paths that the entry
  collapses, so the card can render the no-collapse ablation. The kept paths
  are closed under parents: a concrete path is kept only when its parent
  concrete path (``m.2021`` of ``m.2021.TG``, ``m.2021.TG`` of
  ``m.2021.TG[]``) was kept by the entry above, so a subtree is never
  orphaned; among those, siblings take turns (the most frequent child of
  every kept parent, then every second one, ...), most frequent first, ties
  in sorted order; the kept list is in that order.
  ``concrete_dropped`` (only when positive): how many distinct concrete paths
  of the entry were not kept (the card prints the total).

``prefixes`` ({collection: [dotted paths]}) are the valid MQL field paths and
their prefixes, without array markers (``values_by_year.<*>.readings.value``).
``top_fields`` ({collection: [fields]}) are the physical top-level fields.
``join_edges``: ``{from: {collection, path}, to: {collection, path}, overlap,
shared}`` for scalar fields of different collections whose sampled values
are witnessed in each other: ``to`` is key-like (at least 95% of its sampled
occurrences are distinct values), ``shared`` distinct values are common (at
least 2) and ``overlap`` = shared / distinct values of ``from`` is at least
0.8 times the sampled share of ``to``'s collection (two independent samples of
a full reference overlap by about that share). Strings, ints, longs and
ObjectIds only (doubles, booleans and dates make chance overlaps, not
references).

Dynamic-map detection
---------------------
An object path (all object occurrences at that path across the sample) is a
dynamic map when the values under its keys have a homogeneous shape (at least
``HOMOGENEOUS_SHARE`` = 90% share one shape: number, string, object, array,
bool, date, ...; nulls ignored) and one of:

1. data-like keys: at least ``DATA_LIKE_SHARE`` = 80% of its distinct keys
   are data, not names: integers and decimals (years, numeric ids), ISO dates
   and months (``1987-03``), hex ids (8+ hex digits with a digit), codes
   (upper-case letters and digits with at least one digit: ``HBA1C``,
   ``A12``), keys with spaces, or keys that recur (normalized) as string
   values anywhere in the database. Keys recurring as values need at least
   ``MIN_VALUE_KEYS`` = 2 distinct keys; the pattern-based kinds need one.
2. key proliferation: at least ``MIN_PROLIFERATION_KEYS`` = 8 distinct keys,
   at least ``PROLIFERATION_RATIO`` = 2 times the mean number of keys per
   object, and low key overlap between objects: mean Jaccard similarity of
   consecutive objects' key sets at most ``MAX_MEAN_JACCARD`` = 0.5.

A regular embedded record (a fixed, small set of descriptive field names,
values of mixed shapes) meets neither: its names are not data, every document
has (nearly) the same keys, and its field types usually differ. A map's
children are collapsed under ``<*>`` (maps of maps: ``m.<*>.<*>``).

Value index
-----------
``values``: {normalized term: [{stored, kind, collection, path, frequency}]}
for strings (at most ``MAX_VALUE_CHARS`` = 64 characters), numbers (term
``number_term``: ``2010.0`` -> ``"2010"``), dates (under their ISO day,
``normalize("1987-03-05")`` = ``"1987 03 05"``, and under their year ``"1987"``
with one match per location: ``part: "year"``, the earliest stored date of
that year as ``stored``, the number of dates in that year as ``frequency``)
and the keys of dynamic maps (kind ``key``, path = the map's
path). Booleans, ObjectIds and binary values are not indexed. Bounds, in the
order they drop entries: strings longer than 64 characters are never indexed;
per (collection, path) only the ``MAX_VALUES_PER_PATH`` = 1000 most frequent
stored forms are kept; per term the first ``MAX_MATCHES_PER_TERM`` = 16
matches (exact ones before year parts of dates, then the most frequent);
then at most ``MAX_TERMS`` = 20000 terms, least frequent (summed over their
matches) dropped first. Ties break on the sorted form, so
the result is deterministic.
"""

from __future__ import annotations

import datetime as _dt
import re
from collections import Counter, defaultdict
from itertools import chain, compress, repeat
from types import NoneType
from typing import Callable, Iterable, Iterator

import orjson

from nlq import io
from nlq.errors import InputError
from nlq.mql.values import MISSING, NUMBER, STRING, Decimal128, Int64, ObjectId, bson_type, sort_key
from nlq.text import normalize, number_term

DEFAULT_SAMPLE = 400
DEFAULT_SEED = 0
DEFAULT_MAX_DEPTH = 12

# Dynamic-map detection thresholds (see the module docstring).
HOMOGENEOUS_SHARE = 0.9
DATA_LIKE_SHARE = 0.8
MIN_VALUE_KEYS = 2
MIN_PROLIFERATION_KEYS = 8
PROLIFERATION_RATIO = 2.0
MAX_MEAN_JACCARD = 0.5
JACCARD_PAIRS = 200

# Bounds of the artifact.
EXAMPLE_KEYS = 8
MAX_CONCRETE = 32
MAX_VALUE_CHARS = 64
MAX_VALUES_PER_PATH = 1000
MAX_MATCHES_PER_TERM = 16
MAX_TERMS = 20000
JOIN_MIN_SHARED = 2
JOIN_MIN_OVERLAP = 0.8
JOIN_KEY_UNIQUENESS = 0.95

MAP = "<*>"
SAMPLINGS = ("uniform", "first")
MAP_RULES = ("nlq", "paper")
COLLAPSE_RULES = ("map", "segment")

# The paper's rule (its reference implementation): data-like keys are dates (`1987-03`, `1987/03`),
# ALL-CAPS codes of 3+ characters (`POPLATEK_MESICNE`) and single capitals (`F`, `M`); field-like
# keys are lower-case identifiers. A segment collapses whatever its parent when it is a date,
# holds `::` or is an ALL-CAPS code of 4+ characters.
_PAPER_DATE = re.compile(r"^\d{4}[-/]\d{2}")
_PAPER_CODE = re.compile(r"^[A-Z][A-Z0-9_:]{2,}$")
_PAPER_SHORT = re.compile(r"^[A-Z]$")
_PAPER_FIELD = re.compile(r"^[a-z][a-z0-9_]*$")
PAPER_PROLIFERATION_RATIO = 3.0
PAPER_DATA_LIKE_SHARE = 0.6

_NUMBER_KEY = re.compile(r"^[+-]?\d+(?:\.\d+)?$")
_DATE_KEY = re.compile(r"^\d{4}-\d{2}(?:-\d{2})?(?:[T ].*)?$")
_HEX_KEY = re.compile(r"^(?=.*\d)[0-9a-fA-F]{8,}$")
_CODE_KEY = re.compile(r"^(?=.*\d)[A-Z0-9][A-Z0-9_.-]*$")


# ---------------------------------------------------------------------------
# public API


def build(backend, dbs: Iterable[str] | None = None, *, sample: int = DEFAULT_SAMPLE,
          seed: int = DEFAULT_SEED, max_depth: int = DEFAULT_MAX_DEPTH, sampling: str = "uniform",
          array_elements: int = 0, map_rule: str = "nlq", collapse_rule: str = "map") -> Iterator[dict]:
    """One index document per database of the backend (all of them when `dbs` is empty).

    `sampling`: `uniform` (the backend's seeded sample) or `first` (the first `sample` documents
    of each collection in natural order, as the paper's reference implementation reads them);
    `array_elements`, `map_rule`, `collapse_rule`: see `index_documents`."""
    if sample < 1:
        raise InputError("--sample must be at least 1")
    if max_depth < 1:
        raise InputError("--max-depth must be at least 1")
    if sampling not in SAMPLINGS:
        raise InputError(f"unknown sampling {sampling!r}; choose one of: {', '.join(SAMPLINGS)}")
    for db in (list(dbs) if dbs else backend.databases()):
        samples, counts = {}, {}
        for coll in backend.collections(db):
            counts[coll] = backend.count(db, coll)
            if sampling == "first":
                samples[coll] = backend.aggregate(db, coll, [{"$limit": sample}], max_rows=sample)
            else:
                samples[coll] = backend.sample(db, coll, sample, seed)
        yield index_documents(db, samples, counts=counts, sample=sample, seed=seed, max_depth=max_depth,
                              sampling=sampling, array_elements=array_elements, map_rule=map_rule,
                              collapse_rule=collapse_rule)


def index_documents(db: str, samples: dict[str, list[dict]], *, counts: dict[str, int] | None = None,
                    sample: int | None = None, seed: int = DEFAULT_SEED,
                    max_depth: int = DEFAULT_MAX_DEPTH, sampling: str = "uniform", array_elements: int = 0,
                    map_rule: str = "nlq", collapse_rule: str = "map") -> dict:
    """The index document of one database from sampled documents per collection.

    `array_elements` > 0 walks only that many elements of each array (0: all); `map_rule`
    `paper` detects dynamic maps by the paper's rule (see the module docstring); `collapse_rule`
    `segment` also collapses any key that looks like data (a date, `::`, an ALL-CAPS code of
    4+ characters) under `<*>`, whatever its parent."""
    if map_rule not in MAP_RULES:
        raise InputError(f"unknown map rule {map_rule!r}; choose one of: {', '.join(MAP_RULES)}")
    if collapse_rule not in COLLAPSE_RULES:
        raise InputError(f"unknown collapse rule {collapse_rule!r}; choose one of: {', '.join(COLLAPSE_RULES)}")
    if array_elements < 0:
        raise InputError("--array-elements must be at least 0")
    gathered: list[set[str]] = []

    def value_terms() -> set[str]:  # gathered the first time a map decision needs them
        if not gathered:
            gathered.append(_string_value_terms(samples))
        return gathered[0]

    lattice: list[dict] = []
    scalars: dict[tuple[str, str], Counter] = {}
    keys: dict[tuple[str, str], Counter] = {}
    collections = {}
    for coll in sorted(samples):
        docs = samples[coll]
        collections[coll] = {"count": len(docs) if counts is None else counts[coll], "sampled": len(docs)}
        walker = _Walker(coll, len(docs), max_depth, value_terms, array_elements=array_elements,
                         map_rule=map_rule, segment_collapse=collapse_rule == "segment")
        walker.visit_root(docs)
        lattice.extend(walker.entries)
        for path, counter in walker.scalars.items():
            scalars[(coll, path)] = counter
        for path, counter in walker.keys.items():
            keys[(coll, path)] = counter
    return {
        "db": db,
        "params": {"sample": sample, "seed": seed, "max_depth": max_depth,
                   **({} if (sampling, array_elements, map_rule, collapse_rule) == ("uniform", 0, "nlq", "map") else
                      {"sampling": sampling, "array_elements": array_elements, "map_rule": map_rule,
                       "collapse_rule": collapse_rule})},
        "collections": collections,
        "lattice": lattice,
        "prefixes": _prefixes(lattice),
        "top_fields": _top_fields(lattice, collections),
        "join_edges": _join_edges(scalars, collections),
        "values": _value_index(scalars, keys),
    }


def dumps(index: dict) -> bytes:
    """`io.dumps(index)` of an index document, without rebuilding its value index.

    orjson writes ``values`` (the last field) as it is, and each value it does not write as
    Extended JSON itself (a date, an ObjectId, a decimal, a subclass of str or int such as
    Int64) is converted by `io.to_extjson` when orjson meets it; the other fields go through
    `io.to_extjson` first. A null in the written value index (a None, or a NaN or infinite
    double, which orjson writes as null: the value index holds none of them but infinities)
    or a value orjson refuses sends the whole document to `io.dumps` instead."""
    if type(index) is not dict or not index or next(reversed(index)) != "values":
        return io.dumps(index)
    try:
        body = orjson.dumps(index["values"], default=_extjson_value, option=_VALUES_OPTIONS)
    except orjson.JSONEncodeError:
        return io.dumps(index)
    if b"null" in body and (b":null" in body or b"[null" in body or b",null" in body):
        return io.dumps(index)
    head = orjson.dumps({key: io.to_extjson(value) for key, value in index.items()
                         if key != "values" and value is not MISSING})
    return head[:-1] + (b"," if len(head) > 2 else b"") + b'"values":' + body + b"}"


# orjson hands these to `default` instead of writing them its own way
_VALUES_OPTIONS = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_SUBCLASS | orjson.OPT_PASSTHROUGH_DATACLASS


def _extjson_value(value):
    if value is MISSING:  # dropped from a document by io.dumps: not a value to write in place
        raise TypeError("missing")
    return io.to_extjson(value)


def load(path: str) -> dict[str, dict]:
    """{db: index document} of an index JSONL file (read once per run)."""
    indexes = {}
    for record in io.read_records(path, strict=True):
        if "db" not in record or "values" not in record:
            raise InputError(f"{path}: not an index document (build one with `nlq index`)")
        indexes[record["db"]] = record
    if not indexes:
        raise InputError(f"{path}: no index document")
    return indexes


def dynamic_maps(index: dict) -> dict[str, list[str]]:
    """{collection: [paths of dynamic maps]} of an index document (the manifest's form)."""
    found: dict[str, list[str]] = {coll: [] for coll in index["collections"]}
    for entry in index["lattice"]:
        if entry["kind"] == "dynamic_map":
            found[entry["collection"]].append(entry["path"])
    return {coll: sorted(paths) for coll, paths in found.items()}


def mql_path(path: str) -> str:
    """The MQL field path of a lattice path: array markers dropped (`a[].b` -> `a.b`)."""
    return path.replace("[]", "")


# ---------------------------------------------------------------------------
# the lattice walk


# The `$type` alias of the common JSON types by Python type (ints depend on their range):
# bson_type's answer, without its chain of checks, for the values of every sampled document.
_PLAIN_TYPES = {str: "string", dict: "object", list: "array", float: "double", bool: "bool", NoneType: "null"}


# The Python types `_Walker._scan_plain` scans by type (a column holding any other one is
# scanned value by value).
_SCANNED_BY_TYPE = frozenset({str, dict, list, float, bool, NoneType, int})
# A column of objects whose fields fill at least 1/_DENSE_FIELDS of its objects on average is
# split into fields one field at a time (a look-up per object), else object by object.
_DENSE_FIELDS = 3
_ABSENT = object()  # no such field in an object

_SHAPE_OF_TYPE = {str: "string", dict: "object", list: "array", bool: "bool",
                  int: "number", float: "number", Int64: "number", Decimal128: "number"}


def _shape(value) -> str:
    t = _PLAIN_TYPES.get(type(value)) or bson_type(value)
    if t in ("int", "long", "double", "decimal"):
        return "number"
    return t


def _child(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _field_order(key: str):
    return (key != "_id", key)


class _Walker:
    """Walks the sampled documents of one collection, grouped by path (breadth of
    each path at once, so that a map decision sees every object at its path).

    A path's values are a column: parallel lists of document numbers, values and
    concrete paths (None for the whole column when no map is above it). A column
    of the common JSON types is scanned type by type (`_scan_plain`), any other
    one value by value (`_scan_items`); both give the same statistics."""

    def __init__(self, collection: str, sampled: int, max_depth: int, value_terms: Callable[[], set[str]], *,
                 array_elements: int = 0, map_rule: str = "nlq", segment_collapse: bool = False):
        self.array_elements = array_elements
        self.map_rule = map_rule
        self.segment_collapse = segment_collapse
        self.collection = collection
        self.sampled = sampled
        self.max_depth = max_depth
        self.value_terms = value_terms
        self.entries: list[dict] = []
        self.scalars: dict[str, Counter] = {}
        self.keys: dict[str, Counter] = {}
        # concrete path -> its parent concrete path (None below a map's own path),
        # and the concrete paths kept so far (parents are decided before children)
        self.concrete_parent: dict[str, str | None] = {}
        self.concrete_kept: set[str] = set()

    def visit_root(self, docs: list[dict]) -> None:
        ds = [i for i, doc in enumerate(docs) if type(doc) is dict]
        self._children((ds, [docs[i] for i in ds], None, True), "", 0)

    def _visit(self, path: str, ds: list[int], vs: list, cs: list[str] | None, depth: int) -> None:
        by_type = Counter(map(type, vs))
        if by_type.keys() <= _SCANNED_BY_TYPE:
            types, nulls, empty, objects, arrays = self._scan_plain(path, ds, vs, cs, by_type)
        else:
            types, nulls, empty, objects, arrays = self._scan_items(path, ds, vs, cs)

        non_null = [(n, t) for t, n in types.items() if t != "null"]
        dominant = max(non_null, key=lambda nt: (nt[0], nt[1] == "object", nt[1]))[1] if non_null else "null"
        is_map = objects is not None and depth < self.max_depth and self._is_map(objects[1])
        kind = "dynamic_map" if is_map else (
            "object" if dominant == "object" else "array" if dominant == "array" else "scalar")
        present = len(set(ds))
        lengths = arrays[3] if arrays is not None else None
        entry = {
            "collection": self.collection, "path": path, "kind": kind,
            "types": dict(sorted(types.items())),
            "present": present, "null": nulls, "missing": self.sampled - present,
            "empty": empty,
            "array_len": ({"min": min(lengths), "max": max(lengths),
                           "mean": round(sum(lengths) / len(lengths), 2)} if lengths else None),
        }
        if cs:
            self._keep_concrete(entry, Counter(cs))
        self.entries.append(entry)

        if depth >= self.max_depth:
            return
        if is_map:
            o_ds, o_vs, o_cs, _ = objects
            key_counts = Counter(chain.from_iterable(o_vs))  # the objects' keys
            entry["example_keys"] = _most_frequent(key_counts, EXAMPLE_KEYS)
            entry["distinct_keys"] = len(key_counts)
            self.keys[path] = key_counts
            setdefault = self.concrete_parent.setdefault
            ch_ds, ch_vs, ch_cs = [], [], []
            for d, obj, c in zip(o_ds, o_vs, o_cs or repeat(None)):
                base = path if c is None else c
                for key, value in obj.items():
                    concrete = f"{base}.{key}"
                    setdefault(concrete, c)
                    ch_ds.append(d)
                    ch_vs.append(value)
                    ch_cs.append(concrete)
            self._visit(f"{path}.{MAP}" if path else MAP, ch_ds, ch_vs, ch_cs, depth + 1)
        elif objects is not None:
            self._children(objects, path, depth)
        if arrays is not None:
            a_ds, a_vs, a_cs, _ = arrays
            if self.array_elements:
                cap = self.array_elements
                a_vs = [arr[:cap] if len(arr) > cap else arr for arr in a_vs]
            e_ds = [d for d, arr in zip(a_ds, a_vs) for _ in arr]
            if e_ds:
                e_vs = [v for arr in a_vs for v in arr]
                e_cs = None
                if a_cs is not None:
                    setdefault = self.concrete_parent.setdefault
                    e_cs = []
                    for c, arr in zip(a_cs, a_vs):
                        setdefault(c + "[]", c)
                        e_cs.extend([c + "[]"] * len(arr))
                self._visit(path + "[]", e_ds, e_vs, e_cs, depth + 1)
            elif a_cs is not None:
                setdefault = self.concrete_parent.setdefault
                for c in a_cs:
                    setdefault(c + "[]", c)

    def _scan_plain(self, path: str, ds: list[int], vs: list, cs: list[str] | None, by_type: Counter) -> tuple:
        """`_scan_items` of a column of `_SCANNED_BY_TYPE` values, a pass per Python type."""
        types: dict[str, int] = {}
        empty: set[int] = set()
        nulls = 0
        objects = arrays = None
        single = len(by_type) == 1

        def column(t):
            if single:
                return ds, vs, cs
            mask = [type(v) is t for v in vs]
            return (list(compress(ds, mask)), list(compress(vs, mask)),
                    None if cs is None else list(compress(cs, mask)))

        stored: list = []  # the indexable values in column order (only numbers can be equal across types)
        for t, n in by_type.items():
            if t is str:
                types["string"] = n
                s_ds, s_vs, _ = column(str)
                if "" in s_vs:
                    empty.update(d for d, v in zip(s_ds, s_vs) if not v)
                counter = self._scalar_counter(path)
                if max(map(len, s_vs)) <= MAX_VALUE_CHARS:
                    counter.update(s_vs)
                else:
                    counter.update(v for v in s_vs if len(v) <= MAX_VALUE_CHARS)
            elif t is dict:
                types["object"] = n
                o_ds, o_vs, o_cs = column(dict)
                if {} in o_vs:
                    empty.update(d for d, v in zip(o_ds, o_vs) if not v)
                objects = (o_ds, o_vs, o_cs, True)
            elif t is list:
                types["array"] = n
                a_ds, a_vs, a_cs = column(list)
                lengths = list(map(len, a_vs))
                if 0 in lengths:
                    empty.update(d for d, k in zip(a_ds, lengths) if not k)
                arrays = (a_ds, a_vs, a_cs, lengths)
            elif t is NoneType:
                types["null"] = n
                nulls = len(set(ds) if single else {d for d, v in zip(ds, vs) if v is None})
            elif t is bool:
                types["bool"] = n
            elif t is float:
                types["double"] = n
            else:  # int: 32-bit or long
                ints = vs if single else [v for v in vs if type(v) is int]
                longs = 0 if -2**31 <= min(ints) and max(ints) < 2**31 else \
                    sum(1 for v in ints if not -2**31 <= v < 2**31)
                if longs < n:
                    types["int"] = n - longs
                if longs:
                    types["long"] = longs
        if int in by_type or float in by_type:
            stored = vs if single else [v for v in vs if type(v) is int or type(v) is float]
            self._scalar_counter(path).update(stored)
        return types, nulls, len(empty), objects, arrays

    def _scan_items(self, path: str, ds: list[int], vs: list, cs: list[str] | None) -> tuple:
        """(types, nulls, empty, objects, arrays) of a column: the `$type` histogram, the numbers
        of documents with a null and with an empty value, the sub-columns of the objects and of
        the arrays (with their lengths); the indexable scalars counted into `scalars`."""
        types: Counter = Counter()
        nulls, empty = set(), set()
        objects, arrays = [], []
        plain_types = _PLAIN_TYPES
        for i, (d, value) in enumerate(zip(ds, vs)):
            tv = type(value)
            t = plain_types.get(tv)
            if t is None:
                t = ("int" if -2**31 <= value < 2**31 else "long") if tv is int else bson_type(value)
            types[t] += 1
            if t == "object":
                objects.append(i)
                if not value:
                    empty.add(d)
            elif t == "array":
                arrays.append(i)
                if not value:
                    empty.add(d)
            elif t == "null":
                nulls.add(d)
            else:
                if t == "string":
                    if not value:
                        empty.add(d)
                    stored = value if len(value) <= MAX_VALUE_CHARS else None
                else:
                    stored = _indexable(value, t)
                if stored is not None:
                    self._scalar_counter(path)[stored] += 1

        def column(positions):
            return ([ds[i] for i in positions], [vs[i] for i in positions],
                    None if cs is None else [cs[i] for i in positions])

        objects_column = (*column(objects), False) if objects else None
        arrays_column = (*column(arrays), [len(vs[i]) for i in arrays]) if arrays else None
        return dict(types), len(nulls), len(empty), objects_column, arrays_column

    def _scalar_counter(self, path: str) -> Counter:
        counter = self.scalars.get(path)
        if counter is None:
            counter = self.scalars[path] = Counter()
        return counter

    def _children(self, objects: tuple, path: str, depth: int) -> None:
        """Visit the fields of a column of objects, in field order."""
        o_ds, o_vs, o_cs, plain = objects
        if self.segment_collapse:
            data_keys = {k for k in set().union(*o_vs) if paper_collapses(k)}
            if data_keys:
                self._children_collapsing(objects, path, depth, data_keys)
                return
        if o_cs is None and plain:
            keys = set().union(*o_vs)
            if len(keys) * len(o_vs) <= _DENSE_FIELDS * sum(map(len, o_vs)):
                # most objects hold most fields: a field's column is read from every object at once
                for key in sorted(keys, key=_field_order):
                    values = [obj.get(key, _ABSENT) for obj in o_vs]
                    if _ABSENT in values:
                        mask = [v is not _ABSENT for v in values]
                        self._visit(_child(path, key), list(compress(o_ds, mask)), list(compress(values, mask)),
                                    None, depth + 1)
                    else:
                        self._visit(_child(path, key), o_ds, values, None, depth + 1)
                return
        grouped: dict[str, tuple] = {}
        if o_cs is None:
            for d, obj in zip(o_ds, o_vs):
                for key, value in obj.items():
                    group = grouped.get(key)
                    if group is None:
                        group = grouped[key] = ([], [], None)
                    group[0].append(d)
                    group[1].append(value)
        else:
            setdefault = self.concrete_parent.setdefault
            for d, obj, c in zip(o_ds, o_vs, o_cs):
                for key, value in obj.items():
                    group = grouped.get(key)
                    if group is None:
                        group = grouped[key] = ([], [], [])
                    concrete = f"{c}.{key}"
                    setdefault(concrete, c)
                    group[0].append(d)
                    group[1].append(value)
                    group[2].append(concrete)
        for key in sorted(grouped, key=_field_order):
            g_ds, g_vs, g_cs = grouped[key]
            self._visit(_child(path, key), g_ds, g_vs, g_cs, depth + 1)

    def _children_collapsing(self, objects: tuple, path: str, depth: int, data_keys: set[str]) -> None:
        """`_children` with the data-like keys (`paper_collapses`) visited as one `<*>` child."""
        o_ds, o_vs, o_cs, _ = objects
        grouped: dict[str, tuple] = {}
        setdefault = self.concrete_parent.setdefault
        key_counts: Counter = Counter()
        for d, obj, c in zip(o_ds, o_vs, o_cs or repeat(None)):
            for key, value in obj.items():
                collapsed = key in data_keys
                name = MAP if collapsed else key
                group = grouped.get(name)
                if group is None:
                    group = grouped[name] = ([], [], [] if (collapsed or c is not None) else None)
                group[0].append(d)
                group[1].append(value)
                if group[2] is not None:
                    concrete = _child(path if c is None else c, key)
                    setdefault(concrete, c)
                    group[2].append(concrete)
                if collapsed:
                    key_counts[key] += 1
        if path:
            self.keys.setdefault(path, Counter()).update(key_counts)
        for key in sorted(grouped, key=_field_order):
            g_ds, g_vs, g_cs = grouped[key]
            self._visit(_child(path, key), g_ds, g_vs, g_cs, depth + 1)

    def _keep_concrete(self, entry: dict, concrete: Counter) -> None:
        """The entry's `concrete` list: closed under parents, siblings taken in turns, bounded."""
        siblings: dict[str | None, list[tuple[int, str]]] = defaultdict(list)
        for c, n in concrete.items():
            parent = self.concrete_parent.get(c)
            if parent is None or parent in self.concrete_kept:
                siblings[parent].append((-n, c))
        ranked = []
        for group in siblings.values():
            group.sort()
            ranked.extend((rank, neg, c) for rank, (neg, c) in enumerate(group))
        ranked.sort()
        kept = [c for _, _, c in ranked[:MAX_CONCRETE]]
        self.concrete_kept.update(kept)
        entry["concrete"] = kept
        if len(concrete) > len(kept):
            entry["concrete_dropped"] = len(concrete) - len(kept)

    def _is_map(self, objects: list[dict]) -> bool:
        distinct: set[str] = set().union(*objects)
        by_type = Counter(map(type, chain.from_iterable([obj.values() for obj in objects])))
        by_type.pop(NoneType, None)
        shapes: Counter = Counter()
        if all(t in _SHAPE_OF_TYPE for t in by_type):  # a value's shape follows from its type
            for t, n in by_type.items():
                shapes[_SHAPE_OF_TYPE[t]] += n
        else:
            for obj in objects:
                for value in obj.values():
                    if value is not None:
                        shapes[_shape(value)] += 1
        if not distinct or not shapes:
            return False
        if self.map_rule == "paper":
            return _paper_map(distinct, objects)
        if max(shapes.values()) < HOMOGENEOUS_SHARE * sum(shapes.values()):
            return False
        if _data_like_keys(distinct, self.value_terms):
            return True
        return _proliferating_keys(distinct, objects)


def _paper_data_like(key: str) -> bool:
    return bool(_PAPER_DATE.match(key) or _PAPER_CODE.match(key) or _PAPER_SHORT.match(key))


def paper_collapses(key: str) -> bool:
    """Whether the paper's rule collapses a key whatever its parent: a date, `::`, an ALL-CAPS code of 4+."""
    return bool(_PAPER_DATE.match(key) or "::" in key or (_PAPER_CODE.match(key) and len(key) >= 4))


def _paper_map(distinct: set[str], objects: list[dict]) -> bool:
    """The paper's map rule: key proliferation (more than max(8, 3x the mean keys per object) and
    more than 6 distinct keys), or data-like keys dominating (at least 2 and 60% of the keys, and no
    fewer than the field-like ones)."""
    mean_keys = sum(map(len, objects)) / len(objects) if objects else 0.0
    n = len(distinct)
    if n > max(8, PAPER_PROLIFERATION_RATIO * mean_keys) and n > 6:
        return True
    data_like = sum(1 for k in distinct if _paper_data_like(k))
    field_like = sum(1 for k in distinct if _PAPER_FIELD.match(k))
    return n >= 2 and data_like >= max(2, PAPER_DATA_LIKE_SHARE * n) and data_like >= field_like


def _most_frequent(counter: Counter, n: int) -> list[str]:
    """The n most frequent strings of a counter, ties in sorted order."""
    return [k for k, _ in sorted(counter.items(), key=lambda kv: (-kv[1], kv[0]))[:n]]


def _data_like_keys(distinct: set[str], value_terms: Callable[[], set[str]]) -> bool:
    """Whether the keys are data (the database's string values, `value_terms()`, are gathered
    only when the patterns alone do not decide)."""
    patterned = [k for k in distinct if _pattern_key(k)]
    if len(patterned) >= DATA_LIKE_SHARE * len(distinct):
        return True
    if len(distinct) < MIN_VALUE_KEYS:
        return False
    terms = value_terms()
    as_values = sum(1 for k in distinct.difference(patterned) if normalize(k) in terms)
    return len(patterned) + as_values >= DATA_LIKE_SHARE * len(distinct)


def _pattern_key(key: str) -> bool:
    return bool(_NUMBER_KEY.match(key) or _DATE_KEY.match(key) or _HEX_KEY.match(key)
                or _CODE_KEY.match(key) or " " in key.strip())


def _proliferating_keys(distinct: set[str], objects: list[dict]) -> bool:
    if len(distinct) < MIN_PROLIFERATION_KEYS or len(objects) < 2:
        return False
    mean_keys = sum(map(len, objects)) / len(objects)
    if len(distinct) < PROLIFERATION_RATIO * mean_keys:
        return False
    pairs = min(len(objects) - 1, JACCARD_PAIRS)
    total = 0.0
    for i in range(pairs):
        a, b = objects[i].keys(), objects[i + 1].keys()
        union = len(a | b)
        total += len(a & b) / union if union else 1.0
    return total / pairs <= MAX_MEAN_JACCARD


def _string_value_terms(samples: dict[str, list[dict]]) -> set[str]:
    """Normalized string values of the whole sample (for the keys-as-values signal)."""
    raw: set[str] = set()
    add = raw.add

    def walk(values):
        for value in values:
            t = type(value)
            if t is str:
                if len(value) <= MAX_VALUE_CHARS:
                    add(value)
            elif t is dict:
                walk(value.values())
            elif t is list:
                walk(value)

    for docs in samples.values():
        walk(docs)
    return {normalize(v) for v in raw} - {""}


# ---------------------------------------------------------------------------
# derived artifacts


def _prefixes(lattice: list[dict]) -> dict[str, list[str]]:
    out: dict[str, set[str]] = defaultdict(set)
    for entry in lattice:
        out[entry["collection"]].add(mql_path(entry["path"]))
    return {coll: sorted(paths) for coll, paths in sorted(out.items())}


def _top_fields(lattice: list[dict], collections: dict) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {coll: [] for coll in collections}
    for entry in lattice:
        path = entry["path"]
        if "." not in path and "[" not in path:
            out[entry["collection"]].append(path)
    return out


def _indexable(value, t: str):
    """The hashable stored form of an indexable scalar, or None."""
    if t == "string":
        return value if len(value) <= MAX_VALUE_CHARS else None
    if t in ("int", "long", "double", "date"):
        return value
    if t == "decimal":
        return _Decimal(value)
    if t == "objectId":
        return value
    return None


class _Decimal:
    """A hashable wrapper of Decimal128 (bson's is not hashable)."""

    __slots__ = ("value", "_key")

    def __init__(self, value: Decimal128):
        self.value = value
        self._key = value.to_decimal()

    def __hash__(self):
        return hash(self._key)

    def __eq__(self, other):
        return isinstance(other, _Decimal) and self._key == other._key


def _terms(stored) -> list[str]:
    t = type(stored)
    if t is str:
        term = normalize(stored)
        return [term] if term else []
    if t is bool or isinstance(stored, ObjectId):
        return []
    if isinstance(stored, _dt.datetime):
        return [normalize(stored.strftime("%Y-%m-%d"))]
    if isinstance(stored, _Decimal):
        return [number_term(stored.value.to_decimal())]
    if t is int or t is float or t is Int64:
        if t is float and stored != stored:
            return []
        return [number_term(stored)]
    return []


def _stored(stored):
    return stored.value if isinstance(stored, _Decimal) else stored


def _order_key(stored) -> tuple:
    """(sort_key, bson_type) of a stored value, strings and ints without the general dispatch."""
    t = type(stored)
    if t is str:
        return ((STRING, stored), "string")
    if t is int:
        return ((NUMBER, (1, stored)), "int" if -2**31 <= stored < 2**31 else "long")
    if t is float:  # NaN sorts below every number
        return ((NUMBER, (1, stored) if stored == stored else (0, 0)), "double")
    value = _stored(stored)
    return (sort_key(value), bson_type(value))


def _top(counter: Counter, n: int) -> list[tuple]:
    return sorted(counter.items(), key=lambda kv: (-kv[1],) + _order_key(kv[0]))[:n]


def _value_index(scalars: dict[tuple[str, str], Counter], keys: dict[tuple[str, str], Counter]) -> dict:
    matches: dict[str, list[dict]] = defaultdict(list)
    for kind, source in (("value", scalars), ("key", keys)):
        for (coll, path), counter in sorted(source.items()):
            years: dict[str, list] = {}
            # every match of a term is sorted below, so only a cut needs the values in order
            kept = counter.items() if len(counter) <= MAX_VALUES_PER_PATH else _top(counter, MAX_VALUES_PER_PATH)
            for stored, freq in kept:
                t = type(stored)
                if t is str or t is int or t is float:  # the common cases of _terms
                    term = normalize(stored) if t is str else str(stored) if t is int else \
                        number_term(stored) if stored == stored else ""
                    if term:
                        matches[term].append({"stored": stored, "kind": kind, "collection": coll,
                                              "path": path, "frequency": freq})
                    continue
                if t is ObjectId:
                    continue
                for term in _terms(stored):
                    matches[term].append({"stored": _stored(stored), "kind": kind, "collection": coll,
                                          "path": path, "frequency": freq})
                if isinstance(stored, _dt.datetime):
                    year = years.setdefault(f"{stored.year:04d}", [stored, 0])
                    year[0] = min(year[0], stored)
                    year[1] += freq
            for term, (first, freq) in years.items():
                matches[term].append({"stored": first, "kind": kind, "collection": coll, "path": path,
                                      "frequency": freq, "part": "year"})
    def order(m):
        return ("part" in m, -m["frequency"], m["kind"], m["collection"], m["path"]) + _order_key(m["stored"])

    totals = {}
    for term, found in matches.items():
        if len(found) > 1:
            found.sort(key=order)
            del found[MAX_MATCHES_PER_TERM:]
            totals[term] = sum(m["frequency"] for m in found)
        else:
            totals[term] = found[0]["frequency"]
    kept = list(totals)
    if len(kept) > MAX_TERMS:  # the most frequent terms, ties in term order
        least = sorted(totals.values(), reverse=True)[MAX_TERMS - 1]
        kept = [term for term, total in totals.items() if total > least]
        kept += sorted(term for term, total in totals.items() if total == least)[:MAX_TERMS - len(kept)]
    return {term: matches[term] for term in sorted(kept)}


def _coverage(info: dict) -> float:
    """The share of a collection the sample holds (what a full overlap shrinks to)."""
    return min(1.0, info["sampled"] / info["count"]) if info["count"] else 1.0


def _join_edges(scalars: dict[tuple[str, str], Counter], collections: dict) -> list[dict]:
    distinct: dict[tuple[str, str], set] = {}
    unique: dict[tuple[str, str], bool] = {}
    where: dict[object, list[tuple[str, str]]] = defaultdict(list)
    for loc, counter in sorted(scalars.items()):
        values = {v for v in counter if type(v) in (str, int, Int64) or isinstance(v, (str, ObjectId))}
        if len(values) < JOIN_MIN_SHARED:
            continue
        distinct[loc] = values
        unique[loc] = len(values) >= JOIN_KEY_UNIQUENESS * sum(counter[v] for v in values)
        for v in values:
            where[(type(v) is str, v)].append(loc)
    shared: Counter = Counter()
    # the values found at the same locations make the same pairs: each such group counted once
    for locs, n in Counter(tuple(locs) for locs in where.values() if len(locs) > 1).items():
        for i, a in enumerate(locs):
            for b in locs[i + 1:]:
                if a[0] != b[0]:
                    shared[(a, b)] += n
    edges = []
    for pair, n in shared.items():
        if n < JOIN_MIN_SHARED:
            continue
        # the referencing side (from) points at a key: the unique side (to), preferring
        # the orientation whose from-values are best covered; ties break on the names
        candidates = [(n / len(distinct[a]), -len(distinct[a]), a, b) for a, b in (pair, pair[::-1])
                      if unique[b] and n / len(distinct[a]) >= JOIN_MIN_OVERLAP * _coverage(collections[b[0]])]
        if not candidates:
            continue
        overlap, _, a, b = max(candidates, key=lambda c: (c[0], c[1], tuple(c[3]), tuple(c[2])))
        edges.append({"from": {"collection": a[0], "path": a[1]}, "to": {"collection": b[0], "path": b[1]},
                      "overlap": round(overlap, 3), "shared": n})
    edges.sort(key=lambda e: (e["from"]["collection"], e["from"]["path"], e["to"]["collection"], e["to"]["path"]))
    return edges


__all__ = ["build", "index_documents", "dumps", "dynamic_maps", "mql_path", "DEFAULT_SAMPLE", "DEFAULT_SEED",
           "DEFAULT_MAX_DEPTH"]
