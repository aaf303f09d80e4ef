"""The engine against mongomock-ng on every shared TEND v1 gold query (issue 3, item 3).

Each disagreement between the two was triaged against the MongoDB manual and
recorded in tests/differential/tend_v1_verdicts.jsonl with its verdict
(`engine_right`, `both_acceptable`; `mongomock_right` is an engine bug to fix,
never a state to record). The test fails when the live set of disagreements
differs from the recorded one, naming the new or vanished records, so every
change of engine behaviour on real queries is looked at.

`python -m tests.differential.harness` prints the current disagreements.
Skips cleanly without ../shared/tend-v1 or without mongomock-ng (test-only).
"""

from __future__ import annotations

import json

import pytest

from tests.conftest import TEND_V1, need

VERDICTS = ("engine_right", "both_acceptable", "mongomock_right")


def _verdicts() -> dict[int, dict]:
    from tests.differential.harness import VERDICTS as path

    with open(path, "rb") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    by_id = {r["record_id"]: r for r in rows}
    assert len(by_id) == len(rows), "a record_id appears twice in the verdict file"
    return by_id


def test_verdict_file_is_well_formed():
    for rid, v in _verdicts().items():
        assert set(v) == {"record_id", "db_id", "verdict", "reason", "manual"}, rid
        assert v["verdict"] in VERDICTS, rid
        assert v["manual"].startswith("https://www.mongodb.com/docs/"), rid
        assert len(v["reason"]) > 40, rid


def test_no_recorded_verdict_says_mongomock_is_right():
    wrong = [rid for rid, v in _verdicts().items() if v["verdict"] == "mongomock_right"]
    assert not wrong, f"the engine is wrong on TEND v1 records {wrong}: fix the engine"


def test_disagreements_match_the_triaged_set():
    need(TEND_V1 / "mongodb_data")
    pytest.importorskip("mongomock_ng", reason="mongomock-ng (test-only) is not installed")
    from tests.differential.harness import disagreements

    found = disagreements()
    recorded = _verdicts()
    new = {rid: d for rid, d in found.items() if rid not in recorded}
    gone = sorted(rid for rid in recorded if rid not in found)
    assert not new, ("new disagreements with mongomock-ng; triage each against the manual and record it in "
                     "tests/differential/tend_v1_verdicts.jsonl:\n"
                     + "\n".join(f"  {rid} ({d['db_id']}): {d['difference']}" for rid, d in sorted(new.items())))
    assert not gone, f"recorded disagreements that no longer occur (remove them from the verdict file): {gone}"
    for rid, d in found.items():
        assert recorded[rid]["db_id"] == d["db_id"], rid
