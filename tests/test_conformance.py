"""The engine against examples transcribed from the MongoDB manual.

Each line of ``tests/conformance/<family>.jsonl`` is one case::

    {"id", "source", "docs", "collections"?, "pipeline" | "query",
     "expected" | "error", "ordered", "set_fields"?, "key_order"?, "exact"?}

`query` is mongosh text (the manual's find() examples, in `find.jsonl`): it is
parsed and lowered by `nlq.mql.mongosh.parse_query`, and its pipeline runs.

`source` is the manual page the example comes from. `docs` is the collection
the pipeline runs on, `collections` the other collections of the database
(`$lookup`, `$graphLookup`, `$unionWith`); values are Extended JSON read with
`nlq.io.from_extjson`, pipelines included. Where the manual's output depends on
the current date or on randomness the example was not transcribed.

How a result is compared with `expected` (choices, stated once):

- Rows: in order when `ordered` is true; when it is false (the manual does not
  guarantee an order, e.g. `$group` without `$sort`) as a multiset, each
  expected row matched to a distinct equal actual row.
- Types are significant where MongoDB's are: int, long, double and decimal are
  different results (`bson_type` of both sides must agree, so `$divide`
  returning 10 instead of 10.0, or `$dateDiff` returning an int instead of a
  long, fails). Doubles compare with a relative tolerance of 1e-12, because
  MongoDB's own sums use compensated arithmetic and the manual prints rounded
  doubles (cases marked `"exact": true` compare doubles bit for bit: sums whose
  last bit is what the server's double-double summation gives, expected values
  computed by that algorithm); ints, longs and decimals compare exactly by value (a decimal's
  trailing zeros, e.g. 200.0 vs 200, are not compared).
- Documents compare as mappings: the same field names with equal values. Field
  order is compared only in cases marked `"key_order": true`, where MongoDB
  guarantees it ($mergeObjects, $addFields appending, $arrayToObject, ...).
  A field holding MISSING counts as absent.
- Top-level fields listed in `set_fields` hold arrays whose order MongoDB does
  not specify ($addToSet, $setUnion, $graphLookup); they compare as multisets.
- Error cases (`"error": "<type>"`) expect an `NlqError` whose `type` is that
  string (MongoDB raises; the engine must raise a typed error, not answer).
"""

from __future__ import annotations

import math
from pathlib import Path

import orjson
import pytest

from nlq.errors import NlqError
from nlq.io import from_extjson
from nlq.mql import engine
from nlq.mql.mongosh import parse_query
from nlq.mql.values import MISSING, Decimal128, bson_type, equal, to_decimal

CONFORMANCE = Path(__file__).resolve().parent / "conformance"
MANUAL = "https://www.mongodb.com/docs/"

# Minimum number of cases per family file.
FAMILY_MINIMUMS = {
    "query": 40, "stages": 40, "group": 25, "arrays": 40, "sets": 10, "strings": 40, "dates": 40,
    "arithmetic": 30, "types": 30, "conditionals": 15, "objects": 10, "windows": 15, "semantics": 40,
    "find": 10,
}

# Every operator issue 3 requires; each must appear in at least one case.
REQUIRED_OPERATORS = """
$filter $map $reduce $size $arrayElemAt $first $last $slice $concatArrays $indexOfArray $in $isArray
$range $reverseArray $sortArray $zip $objectToArray $arrayToObject $anyElementTrue $allElementsTrue
$setUnion $setIntersection $setDifference $setEquals $setIsSubset
$mergeObjects $getField $setField $unsetField $cond $ifNull $switch $let $literal
$type $isNumber $convert $toString $toInt $toLong $toDouble $toDecimal $toBool $toDate $toObjectId
$add $subtract $multiply $divide $round $trunc $pow $sqrt $exp $ln $log $log10 $mod $abs $ceil $floor
$concat $substr $substrBytes $substrCP $strLenBytes $strLenCP $split $toLower $toUpper $trim $ltrim $rtrim
$indexOfBytes $indexOfCP $regexMatch $regexFind $regexFindAll $replaceOne $replaceAll $strcasecmp
$year $month $dayOfMonth $hour $minute $second $millisecond $dayOfWeek $dayOfYear $week $isoWeek
$isoWeekYear $isoDayOfWeek $dateToString $dateFromString $dateFromParts $dateToParts $dateAdd
$dateSubtract $dateDiff $dateTrunc
$sum $avg $min $max $push $addToSet $count $stdDevPop $stdDevSamp $top $bottom $topN $bottomN
$firstN $lastN $maxN $minN
$match $project $addFields $set $unset $group $sort $limit $skip $unwind $lookup $facet $sortByCount
$replaceRoot $bucket $bucketAuto $graphLookup $unionWith $replaceWith $redact $setWindowFields
$rank $denseRank $documentNumber $shift $documents $densify $fill
$eq $ne $gt $gte $lt $lte $nin $exists $all $elemMatch $regex $not $nor $or $and $expr $bitsAllSet
$bitsAnySet $bitsAllClear $bitsAnyClear
""".split()
REQUIRED_VARIABLES = ("$$ROOT", "$$CURRENT", "$$REMOVE", "$$DESCEND", "$$PRUNE")

REL_TOL = 1e-12


def load_cases() -> list[tuple[str, dict]]:
    cases = []
    for path in sorted(CONFORMANCE.glob("*.jsonl")):
        for number, line in enumerate(path.read_bytes().splitlines(), 1):
            if line.strip():
                case = orjson.loads(line)
                case["_where"] = f"{path.name}:{number}"
                cases.append((path.stem, case))
    return cases


CASES = load_cases()


def _is_number(t: str) -> bool:
    return t in ("int", "long", "double", "decimal")


def difference(expected, actual, path: str = "", *, key_order: bool = False, exact: bool = False) -> str | None:
    """Where `actual` differs from `expected` (None when they agree), per the module's rules."""
    te, ta = bson_type(expected), bson_type(actual)
    if te != ta:
        return f"{path or 'value'}: expected {te} {expected!r}, got {ta} {actual!r}"
    if te == "object":
        ek = [k for k, v in expected.items() if v is not MISSING]
        ak = [k for k, v in actual.items() if v is not MISSING]
        if set(ek) != set(ak):
            return f"{path or 'document'}: fields {sorted(ek)} expected, got {sorted(ak)}"
        if key_order and ek != ak:
            return f"{path or 'document'}: field order {ek} expected, got {ak}"
        for k in ek:
            d = difference(expected[k], actual[k], f"{path}.{k}" if path else k, key_order=key_order, exact=exact)
            if d:
                return d
        return None
    if te == "array":
        if len(expected) != len(actual):
            return f"{path or 'array'}: {len(expected)} elements expected, got {len(actual)}: {actual!r}"
        for i, (e, a) in enumerate(zip(expected, actual)):
            d = difference(e, a, f"{path}[{i}]", key_order=key_order, exact=exact)
            if d:
                return d
        return None
    if te == "double":
        if math.isnan(expected) and math.isnan(actual):
            return None
        if expected == actual or (not exact and math.isclose(expected, actual, rel_tol=REL_TOL, abs_tol=REL_TOL)):
            return None
        return f"{path or 'value'}: expected {expected!r}, got {actual!r}"
    if te == "decimal":
        e, a = to_decimal(expected), to_decimal(actual)
        if e == a or (e.is_nan() and a.is_nan()):
            return None
        return f"{path or 'value'}: expected {expected}, got {actual}"
    if _is_number(te):
        return None if int(expected) == int(actual) else f"{path or 'value'}: expected {expected!r}, got {actual!r}"
    return None if equal(expected, actual) else f"{path or 'value'}: expected {expected!r}, got {actual!r}"


def multiset_difference(expected: list, actual: list, what: str, match) -> str | None:
    """Match each expected item to a distinct actual item for which `match` finds no difference."""
    if len(expected) != len(actual):
        return f"{what}: {len(expected)} expected, got {len(actual)}: {actual!r}"
    unused = list(range(len(actual)))
    for e in expected:
        hit = next((i for i in unused if match(e, actual[i]) is None), None)
        if hit is None:
            near = [match(e, actual[i]) for i in unused]
            return f"{what}: no match for {e!r}; closest differences: {near[:3]}"
        unused.remove(hit)
    return None


def row_difference(expected: dict, actual, case: dict) -> str | None:
    key_order = case.get("key_order", False)
    exact = case.get("exact", False)
    set_fields = case.get("set_fields", ())
    if not set_fields or not isinstance(expected, dict) or not isinstance(actual, dict):
        return difference(expected, actual, key_order=key_order, exact=exact)
    rest_e = {k: v for k, v in expected.items() if k not in set_fields}
    rest_a = {k: v for k, v in actual.items() if k not in set_fields}
    d = difference(rest_e, rest_a, key_order=False)
    if d:
        return d
    for f in set_fields:
        e, a = expected.get(f, MISSING), actual.get(f, MISSING)
        if bson_type(e) != "array" or bson_type(a) != "array":
            d = difference(e, a, f)
        else:
            d = multiset_difference(e, a, f, lambda x, y: difference(x, y, key_order=key_order))
        if d:
            return d
    return None


def result_difference(expected: list, actual: list, case: dict) -> str | None:
    if case["ordered"]:
        if len(expected) != len(actual):
            return f"{len(expected)} rows expected, got {len(actual)}: {actual!r}"
        for i, (e, a) in enumerate(zip(expected, actual)):
            d = row_difference(e, a, case)
            if d:
                return f"row {i}: {d}"
        return None
    return multiset_difference(expected, actual, "rows", lambda e, a: row_difference(e, a, case))


def case_pipeline(case: dict) -> list:
    """The case's pipeline, written as one or lowered from its mongosh `query`."""
    return from_extjson(case["pipeline"]) if "pipeline" in case else parse_query(case["query"]).pipeline


def run_case(case: dict) -> list[dict]:
    docs = from_extjson(case["docs"])
    others = from_extjson(case.get("collections", {}))
    pipeline = case_pipeline(case)
    return engine.aggregate(docs, pipeline, catalog=lambda name: others.get(name, []), timeout=20.0)


@pytest.mark.parametrize("family, case", CASES, ids=[f"{family}:{case['id']}" for family, case in CASES])
def test_case(family, case):
    if "error" in case:
        with pytest.raises(NlqError) as caught:
            rows = run_case(case)
            pytest.fail(f"{case['source']}: expected a {case['error']} error, got {rows!r}")
        assert caught.value.type == case["error"], f"{case['source']}: {caught.value!r}"
        return
    actual = run_case(case)
    d = result_difference(from_extjson(case["expected"]), actual, case)
    assert d is None, f"{case['_where']} ({case['source']}): {d}"


def test_cases_have_manual_sources_and_unique_ids():
    seen = set()
    for family, case in CASES:
        assert case["source"].startswith(MANUAL), case["_where"]
        assert (family, case["id"]) not in seen, f"duplicate id {family}:{case['id']}"
        seen.add((family, case["id"]))
        assert ("expected" in case) != ("error" in case), case["_where"]
        assert isinstance(case["ordered"], bool), case["_where"]
        assert ("pipeline" in case) != ("query" in case), case["_where"]
        assert isinstance(case.get("pipeline", case.get("query")), list if "pipeline" in case else str), case["_where"]
        assert isinstance(case["docs"], list), case["_where"]


def test_family_minimums():
    counts = {}
    for family, _ in CASES:
        counts[family] = counts.get(family, 0) + 1
    assert set(counts) == set(FAMILY_MINIMUMS), counts
    short = {f: (counts[f], m) for f, m in FAMILY_MINIMUMS.items() if counts[f] < m}
    assert not short, f"families below their minimum (count, minimum): {short}"
    assert sum(counts.values()) >= 220


def _names(value, found: set):
    if isinstance(value, dict):
        for k, v in value.items():
            if k.startswith("$"):
                found.add(k)
            _names(v, found)
    elif isinstance(value, list):
        for v in value:
            _names(v, found)
    elif isinstance(value, str) and value.startswith("$$"):
        found.add(value.split(".")[0])


def test_every_required_operator_is_exercised():
    found: set = set()
    for _, case in CASES:
        _names(case.get("pipeline", []), found)
    missing = [op for op in REQUIRED_OPERATORS + list(REQUIRED_VARIABLES) if op not in found]
    assert not missing, f"operators without a conformance case: {missing}"


def test_comparison_is_type_sensitive():
    # The harness itself must tell int from double and long, and honour field order when asked.
    from bson.int64 import Int64
    assert difference(10.0, 10) is not None
    assert difference(694.4, 694.4000000000001) is None
    assert difference(694.4, 694.4000000000001, exact=True) is not None
    assert difference(Int64(5), 5) is not None
    assert difference(Decimal128("1.0"), Decimal128("1")) is None
    assert difference({"a": 1, "b": 2}, {"b": 2, "a": 1}) is None
    assert difference({"a": 1, "b": 2}, {"b": 2, "a": 1}, key_order=True) is not None
    assert difference([1, 2], [2, 1]) is not None
    case = {"ordered": False}
    assert result_difference([{"a": 1}, {"a": 2}], [{"a": 2}, {"a": 1}], case) is None
    assert result_difference([{"a": 1}, {"a": 1}], [{"a": 1}, {"a": 2}], case) is not None
