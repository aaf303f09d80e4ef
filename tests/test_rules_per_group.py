"""`rules` reads what a count is per: 'for different investors' (each document, its
array's elements counted), 'each course' (an array's elements), 'play each sport' (a value)."""

from __future__ import annotations

from nlq.methods import rules


def entry(collection, path, kind="scalar", types=None, present=4):
    return {"collection": collection, "path": path, "kind": kind, "types": types or {"string": present},
            "present": present, "null": 0, "missing": 0, "empty": 0, "array_len": None}


INDEX = {
    "db": "brokers",
    "collections": {"investor": {"count": 4, "sampled": 4}},
    "lattice": [
        entry("investor", "investor_id", types={"int": 4}), entry("investor", "details"),
        entry("investor", "transactions", kind="array", types={"array": 4}),
        entry("investor", "transactions[].transaction_id", types={"int": 9}, present=9),
        entry("investor", "transactions[].amount", types={"double": 9}, present=9),
    ],
    "values": {},
}


def test_for_different_documents_groups_rather_than_deduplicates():
    ir = rules.build_ir("Show the number of transactions for different investors.", [], INDEX)
    assert not ir.distinct
    assert [f.mql for f in ir.sizes] == ["transactions"] and [f.mql for f in ir.outputs] == ["investor_id"]
