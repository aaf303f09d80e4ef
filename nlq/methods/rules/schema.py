"""The schema `rules` reads from a grounding index: fields with the words that name them.

    prepare(index)          -> Grounding(schema={collection: [Field]}, vocabulary)
    join_edge(index, a, b)  trusted join edges; identifier(...) a document's identifier
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from nlq.text import normalize
from nlq.methods.rules.ir import Field


def split_name(name: str) -> list[str]:
    """Words of a field name: `Openning_year` -> ['openning', 'year'], `StuID` -> ['stu', 'id']."""
    name = name.replace("[]", "")
    words = []
    for part in re.split(r"[_\-.\s]+", name):
        pieces = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", " ", part).split()
        if len(pieces) > 1 and len(pieces[-1]) == 1 and pieces[-1].isalpha():
            pieces[-2:] = [pieces[-2] + pieces[-1]]  # `RAM_MiB`: a unit, not 'mi' and 'b'
        words += pieces
    return [normalize(w) for w in words if w and w != "<*>"]


def lattice_to_mql(path: str) -> tuple[str, tuple[str, ...]]:
    """`a[].b[].c` -> ('a.b.c', ('a', 'a.b'))."""
    parts = path.split(".")
    mql_parts, arrays = [], []
    for part in parts:
        is_array = part.endswith("[]")
        mql_parts.append(part[:-2] if is_array else part)
        if is_array:
            arrays.append(".".join(mql_parts))
    return ".".join(mql_parts), tuple(arrays)


def map_key_words(map_name: str) -> tuple[str, ...]:
    """What the keys of a map are called: 'values_by_year' -> ('year',), 'seasons' -> ('season',)."""
    words = split_name(map_name)
    if "by" in words[:-1]:
        return tuple(words[words.index("by") + 1:])
    return tuple(words)


def _dominant_type(types: dict) -> str:
    if not types:
        return "missing"
    real = {t: n for t, n in types.items() if t not in ("null", "missing")}
    pool = real or types
    return max(sorted(pool), key=lambda t: pool[t])


@dataclass(frozen=True)
class Grounding:
    """What `rules` derives once from an index: the fields of every collection and
    the words of all collection and field names."""

    schema: dict
    vocabulary: frozenset


def schema_of(index: dict) -> dict[str, list[Field]]:
    """Fields of each collection from the index's lattice."""
    return prepare(index).schema


def prepare(index: dict) -> Grounding:
    """The Grounding of an index (the method keeps one per database for a run)."""
    schema: dict[str, list[Field]] = {c: [] for c in index.get("collections", {})}
    spans = _number_spans(index.get("values", {}))
    year_paths = {p for p, (_, _, all_years) in spans.items() if all_years}
    spelled = _spelled_numbers(index.get("values", {}))
    year_paths |= _spelled_years(index.get("values", {}))
    date_forms = _date_forms(index.get("values", {}))
    for entry in index.get("lattice", []):
        path = entry["path"]
        mql, arrays = lattice_to_mql(path)
        if entry.get("kind") == "array" and not path.endswith("[]"):
            arrays = arrays + (mql,)
        names = [p for p in mql.split(".") if p != "<*>"]
        if not names:
            continue
        parts = mql.split(".")
        maps = tuple(".".join(parts[:i]) for i in range(1, len(parts)) if parts[i] == "<*>")
        context = tuple(w for n in names[:-1] for w in split_name(n))
        fields = schema.setdefault(entry["collection"], [])
        kind_of = _dominant_type(entry.get("types", {}))
        # an ObjectId `_id` is the key an insert made, not a value a question names: "the
        # station ID" is `Station_ID`, never `_id` (the field stays, for joins and grouping)
        words = () if mql == "_id" and kind_of == "objectId" else _field_words(names[-1], entry["collection"])
        fields.append(Field(
            collection=entry["collection"], path=path, mql=mql, arrays=arrays,
            kind=entry.get("kind", "scalar"), type=kind_of,
            words=words, context=context, present=entry.get("present", 0),
            maps=maps,
            nulls=entry.get("null", 0), missing=entry.get("missing", 0), types=frozenset(entry.get("types", {})),
            years=path in year_paths, span=spans[path][:2] if path in spans else None,
            date_form=date_forms.get(path, "") if kind_of == "string" else "",
            numeric_text=kind_of == "string" and entry.get("types", {}).keys() <= {"string", "null"}
            and spelled.get(path, 0) >= SPELLED_SHARE * max(1, entry.get("present", 0) - entry.get("null", 0))))
        if entry.get("kind") == "dynamic_map":
            # the map's keys are data ('seasons' -> a season, 'results_by_driver' -> a driver);
            # a map directly inside another map has no name for its keys
            key_words = () if parts[-1] == "<*>" else map_key_words(names[-1])
            fields.append(Field(
                collection=entry["collection"], path=path + ".<*>", mql=mql + ".<*>", arrays=arrays,
                kind="key", type="string", words=key_words, context=context,
                present=entry.get("present", 0), maps=maps + (mql,)))
    vocabulary = frozenset(w for c in schema for w in split_name(c)) | frozenset(
        w for fields in schema.values() for f in fields for w in f.words)
    return Grounding(schema, vocabulary)


def _field_words(name: str, collection: str) -> tuple[str, ...]:
    """Words of a field name; an identifier named by the collection's initial
    ('aid' in aircraft, 'eid' in employee) is that entity's id."""
    words = split_name(name)
    head = split_name(collection)[-1:]
    if len(words) == 1 and re.fullmatch(r"[a-z]{1,2}id", words[0]) and head and head[0].startswith(words[0][:-2]):
        return (head[0], "id")
    return tuple(words)


def _number_spans(values: dict) -> dict[str, tuple]:
    """Per lattice path, (least, greatest, all calendar years) of its witnessed numbers."""
    spans: dict[str, tuple] = {}
    for locations in values.values():
        for loc in locations:
            stored = loc.get("stored")
            if loc.get("kind") == "value" and isinstance(stored, (int, float)) and not isinstance(stored, bool):
                path = loc.get("path")
                year = float(stored).is_integer() and 1000 <= stored <= 2100
                low, high, years = spans.get(path, (stored, stored, True))
                spans[path] = (min(low, stored), max(high, stored), years and year)
    return spans


# A string field whose witnessed values spell numbers for at least this share of its documents (and
# never anything else) holds numbers written as text: `Days_held` = "344".
SPELLED_SHARE = 0.5
_SPELLED = re.compile(r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)")


def _spelled_numbers(values: dict) -> dict[str, int]:
    """Per lattice path, how many witnessed strings spell a number; 0 for a path where some
    witnessed string does not (a path absent holds no strings)."""
    counts: dict[str, int] = {}
    other: set[str] = set()
    for locations in values.values():
        for loc in locations:
            stored, path = loc.get("stored"), loc.get("path")
            if loc.get("kind") != "value" or not isinstance(stored, str):
                continue
            if _SPELLED.fullmatch(stored.strip()):
                counts[path] = counts.get(path, 0) + loc.get("frequency", 1)
            else:
                other.add(path)
    return {p: n for p, n in counts.items() if p not in other}


def _spelled_years(values: dict) -> set[str]:
    """The lattice paths whose witnessed strings all spell calendar years (`Open_Year` = "2010")."""
    years: set[str] = set()
    other: set[str] = set()
    for locations in values.values():
        for loc in locations:
            stored, path = loc.get("stored"), loc.get("path")
            if loc.get("kind") == "value" and isinstance(stored, str):
                (years if _YEAR.fullmatch(stored.strip()) else other).add(path)
    return years - other


_YEAR = re.compile(r"1\d{3}|20\d{2}|2100")


_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}(?P<time>[ T]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?)?")


# A date written with its month's name: 'June 21, 2002', 'Sep 21, 2010', '21 June 2002'.
_MONTH_NAME = r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?"
_NAMED_DATE = re.compile(r"(?i)" + _MONTH_NAME + r"\s+\d{1,2}(?:st|nd|rd|th)?,?\s+\d{4}|\d{1,2}(?:st|nd|rd|th)?\s+"
                         + _MONTH_NAME + r",?\s+\d{4}")


def _date_forms(values: dict) -> dict[str, str]:
    """The lattice paths whose witnessed strings all write dates, and how: "day" for ISO dates
    ('2002-06-21'), "time" when some ISO dates have a time ('2002-06-21 00:00:00'), "named"
    for dates written with the month's name ('June 21, 2002')."""
    forms: dict[str, set] = {}
    for locations in values.values():
        for loc in locations:
            stored, path = loc.get("stored"), loc.get("path")
            if loc.get("kind") == "value" and isinstance(stored, str):
                forms.setdefault(path, set()).add(_date_form(stored.strip()))
    out = {}
    for path, found in forms.items():
        if found <= {"day", "time"}:
            out[path] = "time" if "time" in found else "day"
        elif found == {"named"}:
            out[path] = "named"
    return out


def _date_form(text: str) -> str | None:
    """How one string writes a date ("day", "time", "named"), or None."""
    iso = _ISO_DATE.fullmatch(text)
    if iso is not None:
        return "time" if iso.group("time") else "day"
    return "named" if _NAMED_DATE.fullmatch(text) else None


def join_edge(index: dict, collection: str, other: str, within: frozenset = frozenset()) -> tuple[str, str] | None:
    """(local path, foreign path) of a join edge between two collections, either
    direction. Edges are induced from overlapping values, so small integers
    overlap by chance: an edge is trusted when both ends carry the same field
    name (`Author_ID` = `Author_ID`) or the local end names the other
    collection (`author` -> authors.code); top-level ends first, except a local
    end inside one of the arrays `within` (those the question reads elements of:
    each rating's movie, joined by the rating's `mID`)."""
    trusted = []
    for edge in index.get("join_edges", []):
        a, b = edge.get("from", {}), edge.get("to", {})
        for near, far in ((a, b), (b, a)):
            if near.get("collection") != collection or far.get("collection") != other:
                continue
            local, foreign = lattice_to_mql(near["path"])[0], lattice_to_mql(far["path"])[0]
            # (a bare `id` on both sides is each collection's own identifier: equal values by chance)
            same = split_name(local.rsplit(".", 1)[-1]) == split_name(foreign.rsplit(".", 1)[-1]) != ["id"]
            names = set(split_name(local.rsplit(".", 1)[-1])) & set(split_name(other))
            if same or names:
                inside = any(local.startswith(a + ".") for a in within)
                trusted.append((not same, not inside, local.count("."), foreign.count("."), local, foreign))
    return min(trusted)[4:] if trusted else None


def identifier(index: dict, collection: str, fields: list[Field]) -> Field | None:
    """The top-level field that identifies a document: the target of a join
    edge (other collections refer to it), else an always-present `..._id`."""
    top = {f.mql: f for f in fields if f.kind == "scalar" and not f.arrays and not f.maps and f.mql != "_id"}
    for edge in index.get("join_edges", []):
        target = edge.get("to", {})
        if target.get("collection") == collection and target.get("path") in top:
            return top[target["path"]]
    count = index.get("collections", {}).get(collection, {}).get("sampled", 0)
    ids = [f for f in top.values() if f.words[-1:] == ("id",) and f.present >= count]
    return min(ids, key=lambda f: (len(f.words), f.mql)) if ids else None


def repeats(index: dict, f: Field) -> bool:
    """Some stored value of the field is held by several documents (a category, not a label)."""
    return any(m.get("path") == f.path and m.get("collection") == f.collection and m.get("frequency", 0) > 1
               for matches in index.get("values", {}).values() for m in matches)
