"""The calibration model of rules' confidence: stored, applied, and refitted honestly."""

from __future__ import annotations

import random

from nlq.methods.rules import calibration
from nlq.methods.rules.confidence import alternative_confidence, alternative_signals
from tests.bench import bench_rules, calibrate_rules


def test_stored_model_reads_the_signals_rules_emits():
    from nlq.methods import rules


    stored = calibration.model()
    ir = rules.build_ir("How many captains are in each rank?", [], {"collections": {"captain": {}}, "lattice": []})
    assert sorted(rules.signals(ir)) == sorted(stored["preferred"]["features"])
    assert 0.0 < calibration.apply(stored["preferred"], rules.signals(ir)) < 1.0
    other = alternative_signals(ir, 0.6, "binding")
    assert sorted(other) == sorted(stored["alternative"]["features"])
    assert other["preferred"] == 0.6 and other["kind_binding"] == 1.0 and other["kind_collection"] == 0.0
    assert 0.0 < alternative_confidence(ir, 0.6, "binding") < 1.0


def test_an_alternative_of_a_confident_reading_is_less_likely_right():
    from nlq.methods import rules

    ir = rules.build_ir("How many captains are in each rank?", [], {"collections": {"captain": {}}, "lattice": []})
    assert alternative_confidence(ir, 0.9, "binding") < alternative_confidence(ir, 0.2, "binding")


def test_an_unknown_kind_of_alternative_is_an_error():
    import pytest

    from nlq.methods import rules

    ir = rules.build_ir("How many captains?", [], {"collections": {"captain": {}}, "lattice": []})
    with pytest.raises(ValueError, match="unknown kind"):
        alternative_signals(ir, 0.5, "spelling")


def test_the_fit_is_deterministic_and_the_alternative_model_reads_the_preferred_confidence():
    rng = random.Random(3)
    records = []
    for _ in range(600):
        x = rng.random()
        records.append({**_scored(x, int(rng.random() < x)),
                        "candidates": [{"signals": {"heuristic": x, "noise": 0.5}, "exc": int(rng.random() < 1 - x)}]})
    first = calibrate_rules.fit(records)
    assert first == calibrate_rules.fit(records)
    alternative = calibrate_rules.fit_alternative(records, first)
    assert alternative["features"] == ["heuristic", "noise", "preferred"]
    assert alternative == calibrate_rules.fit_alternative(records, first)


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


def test_cross_validation_scores_each_database_by_a_model_fitted_without_it(monkeypatch):
    rng = random.Random(11)
    records = []
    for db in ("a", "b", "c", "d", "e", "f", "g"):
        for _ in range(60):
            x = rng.random()
            records.append({**_scored(x, int(rng.random() < x)), "db": db})
    seen = []
    real_fit = calibrate_rules.fit

    def spying_fit(train):
        seen.append({r["db"] for r in train})
        return real_fit(train)

    monkeypatch.setattr(calibrate_rules, "fit", spying_fit)
    folds = calibrate_rules.folds(r["db"] for r in records)
    assert sorted(folds) == list("abcdefg") and set(folds.values()) == set(range(calibrate_rules.FOLDS))
    validated = calibrate_rules.cross_validated(records)
    assert len(validated) == len(records) and len(seen) == calibrate_rules.FOLDS
    for k, trained_on in enumerate(seen):
        assert trained_on == {db for db, fold in folds.items() if fold != k}
    assert validated == calibrate_rules.cross_validated(records)  # deterministic


def test_a_reading_that_left_a_constraint_out_is_capped_below_the_threshold():
    from nlq.methods.rules.confidence import UNRESOLVED_CAP, of_signals

    model = {"features": ["heuristic"], "bias": 5.0, "weights": [1.0], "mean": [0.0], "scale": [1.0]}
    assert of_signals(model, {"heuristic": 0.9}) > 0.99
    assert of_signals(model, {"heuristic": 0.9, "unused_value": 1.0}) == UNRESOLVED_CAP
    assert UNRESOLVED_CAP < calibration.RECOMMENDED_THRESHOLD


def test_bench_counts_abstentions_and_the_exc_of_the_answers_kept(capsys):
    def record(db, exc, unresolved=(), confidence=0.9):
        return {"db": db, "score": {"exc": exc},
                "prediction": {"confidence": confidence, "unresolved": [{"word": w, "kind": "value"}
                                                                        for w in unresolved]}}

    scored = [record("a", 1), record("a", 0, ["9"], 0.5), record("b", 1), record("b", 0),
              {"db": "b", "score": {"exc": 0}, "prediction": None}]
    bench_rules.abstentions(scored)
    bench_rules.by_database(scored)
    out = capsys.readouterr().out
    assert "abstained 2 of 5 (40.0%): 1 left a constraint out (by kind {'value': 1}" in out
    assert "EXC of the answers not abstained 66.7% (n=3)" in out
    assert "at or above 0.8: 0 (must be 0)" in out
    assert "100.0% (n=1)" in out and "50.0% (n=2)" in out  # per database: a, then b
