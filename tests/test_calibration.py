"""The calibration model of rules' confidence: stored, applied, and refitted honestly."""

from __future__ import annotations

import random

from nlq.methods.rules import calibration
from tests.bench import bench_rules, calibrate_rules


def test_stored_model_reads_the_signals_rules_emits():
    from nlq.methods import rules

    stored = calibration.model()
    ir = rules.build_ir("How many captains are in each rank?", [], {"collections": {"captain": {}}, "lattice": []})
    assert sorted(rules.signals(ir)) == sorted(stored["features"])
    assert 0.0 < calibration.apply(stored, rules.signals(ir)) < 1.0


def _scored(signal: float, correct: int) -> dict:
    return {"prediction": {"ir": {"signals": {"heuristic": signal, "noise": 0.5}}}, "score": {"exc": correct}}


def test_fit_recovers_a_known_probability_curve():
    rng = random.Random(7)
    records = []
    for _ in range(4000):
        x = rng.random()
        records.append(_scored(x, int(rng.random() < x)))  # P(correct | x) = x
    model = calibrate_rules.fit(records)
    pairs = [(calibration.apply(model, calibrate_rules.features(r)), r["score"]["exc"]) for r in records]
    assert bench_rules.ece(pairs) < 0.03
    assert calibration.apply(model, {"heuristic": 0.9, "noise": 0.5}) > calibration.apply(
        model, {"heuristic": 0.1, "noise": 0.5}) + 0.5


def test_ece_and_reliability_bins():
    pairs = [(0.95, 1), (0.95, 0), (0.15, 0), (0.15, 0)]
    assert bench_rules.reliability(pairs) == [(0.1, 0.2, 2, 0.15, 0.0), (0.9, 1.0, 2, 0.95, 0.5)]
    assert abs(bench_rules.ece(pairs) - (2 * 0.15 + 2 * 0.45) / 4) < 1e-9
