"""nlq.mql.registry against the real gold corpora (TEND-native, TEND v1) and SPEC §6/§7."""

from __future__ import annotations

import csv
import json
from collections import Counter

import pytest

from nlq.errors import ParseError, UnknownOperatorError
from nlq.mql import registry
from nlq.mql.analyze import forbidden, operators, order_sensitive, unknown_operators
from nlq.mql.mongosh import parse_query

MISSING_PAREN_RECORD = 6039147  # lacks its final ')' in the release itself


def native_records(folder):
    return json.loads((folder / "TEND_lean.json").read_text())


def native_queries(folder):
    return [(r, parse_query(r["MQL"], tolerant=True)) for r in native_records(folder)]


def test_spec_7_forbidden_names_are_registered_and_flagged():
    expected = {"$out", "$merge", "$function", "$accumulator", "$where", "$sample", "$rand", "$$NOW",
                "$$CLUSTER_TIME", "$currentOp", "$listSessions", "$collStats", "$indexStats", "$planCacheStats",
                # every other server-state stage of the manual's stage list
                "$changeStream", "$changeStreamSplitLargeEvent", "$listClusterCatalog", "$listLocalSessions",
                "$listSampledQueries", "$listSearchIndexes", "$querySettings", "$queryStats",
                "$shardedDataDistribution"}
    assert set(registry.FORBIDDEN) == expected
    assert all(registry.lookup(name).forbidden for name in expected)


def test_spec_6_order_sensitive_stages():
    assert registry.ORDER_SENSITIVE_STAGES == {"$sort", "$limit", "$skip", "$setWindowFields"}


def test_lookup_of_an_unknown_name_suggests():
    with pytest.raises(UnknownOperatorError, match=r"unknown operator \$grup — did you mean \$group\?"):
        registry.lookup("$grup")
    assert registry.suggestion("$SUM") == " — did you mean $sum?"


def test_native_gold_parses_except_the_known_defect(tend_native):
    failures = {}
    for record in native_records(tend_native):
        try:
            parse_query(record["MQL"])
        except ParseError as exc:
            failures[record["record_id"]] = exc
    assert set(failures) == {MISSING_PAREN_RECORD}
    error = failures[MISSING_PAREN_RECORD]
    assert "missing ')' to close aggregate(" in str(error) and error.line == 1 and error.excerpt


def test_native_defect_is_accepted_in_tolerant_mode(tend_native):
    record = next(r for r in native_records(tend_native) if r["record_id"] == MISSING_PAREN_RECORD)
    query = parse_query(record["MQL"], tolerant=True)
    assert query.collection == "f1_actor_profiles" and len(query.pipeline) == 4
    assert query.warnings == ("missing ')' to close aggregate( opened at line 1, column 31: accepted in tolerant mode",)


def test_every_native_operator_is_known(tend_native):
    for record, query in native_queries(tend_native):
        assert unknown_operators(query) == [], record["record_id"]
        for name, _, _ in operators(query):
            assert registry.is_known(name), (record["record_id"], name)


def test_native_operator_counts_match_the_release_statistics(tend_native):
    """The visitor finds exactly the 63 operators and occurrence counts the release reports."""
    counts = Counter(name for _, query in native_queries(tend_native) for name, _, _ in operators(query))
    with open(tend_native / "operator_statistics.csv", newline="") as f:
        release = {row["operator"]: int(row["occurrence_count"]) for row in csv.DictReader(f)}
    assert len(release) == 63
    assert dict(counts) == release


def test_native_order_sensitivity_is_the_release_fact(tend_native):
    queries = native_queries(tend_native)
    assert len(queries) == 1210
    assert sum(order_sensitive(q) for _, q in queries) == 1208


def test_native_gold_uses_no_forbidden_operator(tend_native):
    assert [r["record_id"] for r, q in native_queries(tend_native) if forbidden(q)] == []


def test_tend_v1_gold_parses_and_is_known(tend_v1):
    records = [json.loads(line) for line in (tend_v1 / "test.jsonl").read_text().splitlines() if line.strip()]
    assert len(records) == 524
    forms = Counter()
    for record in records:
        query = parse_query(record["MQL"])
        forms[query.form] += 1
        assert unknown_operators(query) == [] and forbidden(query) == [], record["record_id"]
    assert forms == {"aggregate": 434, "find": 90}


def test_importing_the_engine_registers_every_evaluator_kind():
    """Query operators and accumulators resolve through the registry like stages and expressions."""
    import subprocess
    import sys

    code = ("import json, nlq.mql.engine; from nlq.mql import registry as r; "
            "print(json.dumps({k: r.supported(k) for k in (r.STAGE, r.QUERY, r.EXPRESSION, r.ACCUMULATOR, r.WINDOW)}))")
    supported = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                          check=True).stdout)
    assert all(supported.values()), supported
    assert {"$eq", "$gt", "$in", "$elemMatch", "$regex", "$and", "$expr", "$exists", "$type"} <= set(supported["query"])
    assert {"$sum", "$push", "$topN"} <= set(supported["accumulator"])
    assert not set().union(*supported.values()) & registry.FORBIDDEN


@pytest.mark.parametrize("first", ["nlq.mql.registry", "nlq.mql.values", "nlq.mql.expressions", "nlq.mql.match",
                                   "nlq.mql.ops_arith", "nlq.mql.stages.windows", "nlq.mql.mongosh",
                                   "nlq.mql.analyze", "nlq.mql.engine", "nlq.io"])
def test_the_registry_is_complete_whatever_is_imported_first(first):
    """`registry.load()` runs before any evaluator is read: the counts never depend on import order."""
    import subprocess
    import sys

    code = (f"import json, {first}; from nlq.mql import registry as r; "
            "print(json.dumps([len(r.supported()), len(r.unsupported()), r.evaluator('$sum', r.ACCUMULATOR) is not None]))")
    got = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                    check=True).stdout)
    registry.load()
    assert got == [len(registry.supported()), len(registry.unsupported()), True]
    assert got[0] > 200


def test_every_module_that_implements_operators_is_loaded():
    """A module that calls `implements` but is missing from IMPLEMENTATIONS would register late or never."""
    import ast
    from pathlib import Path

    def calls_implements(path):
        return any(isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None))
                   == "implements" for node in ast.walk(ast.parse(path.read_text())))

    root = Path(registry.__file__).resolve().parent
    implementing = {"nlq.mql." + ".".join(p.relative_to(root).with_suffix("").parts)
                    for p in root.rglob("*.py") if p.name != "registry.py" and calls_implements(p)}
    assert implementing == set(registry.IMPLEMENTATIONS)
