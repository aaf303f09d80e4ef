"""rules' other readings (`--candidates K`): one per kind, each with the alternatives' own
calibrated confidence, which reads the preferred reading's confidence and the kind."""

from __future__ import annotations

from nlq import generate
from nlq.methods.rules import calibration, candidates, passes, schema
from nlq.methods.rules.confidence import KINDS, alternative_confidence, confidence, of_signals
from tests.test_generate import INDEX, PANAMA

QUESTION = {"id": "fleet/1", "db": "fleet", "question": "Which ships have the flag Panama?", "witnesses": [PANAMA]}


def _state():
    grounding = schema.prepare(INDEX)
    return grounding, passes.read(QUESTION["question"], QUESTION["witnesses"], INDEX, grounding)


def test_every_candidate_carries_the_alternative_model_s_confidence():
    record = next(generate.run([dict(QUESTION)], "rules", generate.Context({"fleet": INDEX}, candidates=3)))
    preferred = record["prediction"]["confidence"]
    assert record["candidates"]
    for c in record["candidates"]:
        kinds = [k for k in KINDS if c["signals"][f"kind_{k}"] == 1.0]
        assert len(kinds) == 1 and c["signals"]["preferred"] == preferred
        stored = calibration.model()["alternative"]
        assert c["confidence"] == round(of_signals(stored, c["signals"]), 3)


def test_readings_are_every_distinct_alternative_and_candidates_keep_one_per_kind():
    grounding, state = _state()
    found = candidates.readings(QUESTION["question"], QUESTION["witnesses"], INDEX, grounding, state)
    keys = [(c["collection"], repr(c["pipeline"])) for _, c in found]
    assert len(keys) == len(set(keys)) and all(kind in KINDS for kind, _ in found)
    chosen = candidates.alternatives(QUESTION["question"], QUESTION["witnesses"], INDEX, grounding, 3, state)
    assert len(chosen) == min(3, len({kind for kind, _ in found}))
    best = {}
    for kind, c in sorted(found, key=lambda kc: -kc[1]["confidence"]):
        best.setdefault(kind, c)
    assert chosen == sorted(best.values(), key=lambda c: -c["confidence"])[:3]


def test_an_alternative_is_scored_against_the_preferred_reading():
    grounding, state = _state()
    found = candidates.readings(QUESTION["question"], QUESTION["witnesses"], INDEX, grounding, state)
    kind, c = found[0]
    rival = confidence(state.ir)
    assert c["signals"]["preferred"] == rival
    ir = passes.read(QUESTION["question"], QUESTION["witnesses"], INDEX, grounding,
                     **next(r for k, label, r in candidates._readings(state) if label == c["reading"])).ir
    assert c["confidence"] == alternative_confidence(ir, rival, kind)
