"""Selection by evidence (nlq.selection with the shipped model): each feature's effect on small
synthetic worlds, the confidence and abstention, and robustness to the set of systems."""

from __future__ import annotations

import json

import orjson
import pytest

from nlq import repair
from nlq.backends import EmbeddedBackend
from nlq.commands import cli
from nlq.index import index_documents
from nlq.selection import FEATURES, Evidence, Selector, asked, features

DOCS = [{"_id": i, "name": f"lab {i}", "city": ["North", "South", "East"][i % 3], "beds": 10 + i}
        for i in range(9)]
INDEX = index_documents("w", {"labs": DOCS})


def ev(system, position, cluster, rows=1, columns=("n",), checks=(), confidence=None, sorted_=False):
    return Evidence(system, position, cluster, rows, tuple(columns), tuple(checks), confidence, sorted_)


def chosen(question, evidence):
    return Selector.load().choose(question, evidence).cluster


# -- each feature's effect, the other evidence equal -------------------------------------------------

@pytest.mark.parametrize("first", [0, 1])
def test_a_shape_mismatch_loses_to_a_matching_shape(first):
    one = ev("a", first, 0, rows=1, columns=("count",))
    many = ev("b", 1 - first, 1, rows=9, columns=("name",))
    assert chosen("How many labs are there?", [one, many]) == 0
    top = ev("a", first, 0, rows=3, columns=("name",))
    all_ = ev("b", 1 - first, 1, rows=9, columns=("name",))
    assert chosen("Show the names of the top 3 labs by beds.", [top, all_]) == 0
    assert chosen("Which lab has the most beds?", [ev("a", first, 0, rows=1, columns=("name",)),
                                                    ev("b", 1 - first, 1, rows=9, columns=("name",))]) == 0


@pytest.mark.parametrize("first", [0, 1])
def test_an_empty_result_loses_to_a_non_empty_one(first):
    empty = ev("a", first, 0, rows=0, columns=(), checks=("empty",))
    found = ev("b", 1 - first, 1, rows=4, columns=("name",))
    assert chosen("List the names of labs in the North.", [empty, found]) == 1


def test_a_gate_violation_loses():
    bad = ev("a", 0, 0, rows=4, columns=("name",), checks=("value",))
    good = ev("b", 1, 1, rows=3, columns=("name",))
    assert chosen("List the names of labs in the North.", [bad, good]) == 1


def test_an_order_asked_and_not_given_loses():
    unsorted = ev("a", 0, 0, rows=9, columns=("name",))
    ordered = ev("b", 1, 1, rows=9, columns=("name",), sorted_=True)
    assert chosen("List the lab names in descending order of beds.", [unsorted, ordered]) == 1


def test_agreement_across_systems_beats_one_systems_repetition():
    # x and y agree; z repeats one other result three times (a plain count would take z's)
    evidence = [ev("z", 0, 1, rows=3, columns=("name",)), ev("z", 1, 1, rows=3, columns=("name",)),
                ev("z", 2, 1, rows=3, columns=("name",)), ev("x", 3, 0, rows=3, columns=("name",)),
                ev("y", 4, 0, rows=3, columns=("name",))]
    assert chosen("List the names of labs in the North.", evidence) == 0
    vector = features("List the names of labs in the North.", evidence, lambda s: 0.8)
    assert vector[1]["share"] == pytest.approx(1 / 3) and vector[0]["share"] == pytest.approx(2 / 3)


def test_a_confident_calibrated_reading_counts():
    weak = ev("a", 0, 0, rows=3, columns=("name",))
    sure = ev("rules", 1, 1, rows=3, columns=("name",), confidence=0.97)
    unsure = ev("rules", 1, 1, rows=3, columns=("name",), confidence=0.05)
    model = Selector.load()
    high = model.probability("List the names of labs in the North.", [weak, sure], 1)
    low = model.probability("List the names of labs in the North.", [weak, unsure], 1)
    assert high > low


def test_the_question_shape_reader():
    assert asked("How many labs are there?").one_value
    assert not asked("How many labs are there in each city?").one_value
    assert asked("Show the 5 largest labs.").top == 5 and asked("List the top three labs.").top == 3
    assert asked("Which lab has the most beds?").single
    assert asked("List all labs sorted by name.").order and asked("List all labs sorted by name.").listing


# -- the shipped model -----------------------------------------------------------------------------

def test_the_shipped_model_is_complete_and_calibrated_in_range():
    model = Selector.load()
    assert set(model.weights) == set(FEATURES)
    p = model.probability("How many labs?", [ev("a", 0, 0)], 0)
    assert 0.0 < p < 1.0
    assert model.probability("How many labs?", [ev("a", 0, None)], 0) == 0.0


def test_an_unknown_feature_in_a_model_file_is_a_typed_error(tmp_path):
    doc = Selector.load().to_json()
    doc["weights"]["bogus"] = 1.0
    (tmp_path / "m.json").write_text(json.dumps(doc))
    with pytest.raises(Exception, match="unknown features: bogus"):
        Selector.load(str(tmp_path / "m.json"))


# -- through the repair stage ----------------------------------------------------------------------

@pytest.fixture(scope="module")
def backend(tmp_path_factory):
    root = tmp_path_factory.mktemp("world")
    (root / "w.json").write_bytes(orjson.dumps({"labs": DOCS}))
    return EmbeddedBackend(root)


def q(method, *stages):
    return {"collection": "labs", "pipeline": list(stages), "method": method}


COUNT = ({"$match": {"city": "North"}}, {"$count": "n"})
NAMES = ({"$match": {"city": "North"}}, {"$project": {"_id": 0, "name": 1}})
NOTHING = ({"$match": {"city": "Nowhere"}}, {"$project": {"_id": 0, "name": 1}})


def run_one(backend, prediction, candidates=(), question="How many labs are in the North?", **options):
    record = {"id": "w/1", "db": "w", "question": question, "prediction": prediction,
              "candidates": list(candidates)}
    [out] = repair.run([record], backend, {"w": INDEX}, options=repair.Options(**options))
    return out


def test_repair_selects_by_evidence_and_says_who_agreed(backend):
    out = run_one(backend, q("a", *NAMES), [q("b", *COUNT), q("c", *COUNT)])
    assert out["prediction"]["method"] in ("b", "c")
    assert out["repair"]["system"] == "b" and out["repair"]["agreed"] == ["b", "c"]
    assert 0.0 < out["repair"]["confidence"] <= 1.0
    assert out["repair"]["original"]["method"] == "a"


def test_the_plain_vote_stays_available(backend):
    # every candidate counts one: a tie of one and one goes to the prediction
    out = run_one(backend, q("a", *NAMES), [q("b", *COUNT)], select="vote")
    assert out["prediction"]["method"] == "a" and "confidence" in out["repair"]
    picked = run_one(backend, q("a", *NAMES), [q("b", *COUNT)])
    assert picked["prediction"]["method"] == "b"  # one value asked: the count


def test_one_system_alone_gets_a_confidence_and_an_empty_one_a_low_one(backend):
    good = run_one(backend, q("a", *NAMES), question="List the names of labs in the North.")
    bad = run_one(backend, q("a", *NOTHING), question="List the names of labs in the North.")
    assert good["repair"]["confidence"] > bad["repair"]["confidence"]


def test_min_confidence_abstains_with_a_typed_failure(backend):
    out = run_one(backend, q("a", *NOTHING), question="List the names of labs in the North.",
                  min_confidence=0.99)
    assert out["prediction"] is None and out["failure"]["type"] == "abstained"
    assert "below --min-confidence 0.99" in out["failure"]["message"]
    assert out["repair"]["confidence"] < 0.99


def test_a_run_missing_a_record_is_no_vote(tmp_path, backend, runner):
    (tmp_path / "w.json").write_bytes(orjson.dumps({"labs": DOCS}))
    (tmp_path / "index.jsonl").write_bytes(orjson.dumps(INDEX) + b"\n")
    main = [{"id": f"w/{i}", "db": "w", "question": "How many labs are in the North?",
             "prediction": q("a", *NAMES)} for i in range(3)]
    other = [{"id": "w/0", "prediction": q("b", *COUNT)}, {"id": "w/2", "prediction": q("b", *COUNT)}]
    third = [{"id": "w/0", "prediction": q("c", *COUNT)}]
    for name, rows in (("main", main), ("b", other), ("c", third)):
        (tmp_path / f"{name}.jsonl").write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    result = runner.invoke(cli, ["repair", "--data", str(tmp_path), "--index", str(tmp_path / "index.jsonl"),
                                 "--no-model", str(tmp_path / "main.jsonl"), "--runs", str(tmp_path / "b.jsonl"),
                                 "--runs", str(tmp_path / "c.jsonl")])
    assert result.exit_code == 0, result.output
    out = [json.loads(line) for line in result.output.splitlines()]
    assert len(out) == 3 and not any("failure" in r for r in out)
    assert out[0]["repair"]["agreed"] == ["b", "c"]
    assert out[1]["repair"]["agreed"] == ["a"]          # no other run has w/1
    assert out[2]["repair"]["system"] == "b"


def test_the_scaling_follows_how_many_systems_answered():
    doc = {**Selector.load().to_json(), "by_answered": {"1": [1.0, 0.0], "2": [1.0, -4.0]}}
    model = Selector.from_json(doc)
    one = [ev("a", 0, 0)]
    assert model.scaling(one) == (1.0, 0.0)
    assert model.scaling([ev("a", 0, 0), ev("b", 1, 0)]) == (1.0, -4.0)
    assert model.scaling([ev("a", 0, 0), ev("b", 1, 0), ev("c", 2, 1)]) == (1.0, -4.0)  # more: the largest
    assert Selector.from_json({**doc, "by_answered": {}}).scaling(one) == tuple(doc["calibration"])


def test_agreement_but_for_a_helper_column_counts():
    # a's result is b's plus a helper column (near); c's differs: a and b support each other
    evidence = [ev("c", 0, 2, rows=3, columns=("name",)),
                Evidence("a", 1, 0, 3, ("name", "beds"), (), None, False, None, (1,)),
                Evidence("b", 2, 1, 3, ("name",), (), None, False, None, (0,))]
    assert chosen("List the names of labs in the North.", evidence) in (0, 1)
    vector = features("List the names of labs in the North.", evidence, lambda s: 0.8)
    assert vector[0]["near_share"] == pytest.approx(1 / 3) and vector[2]["near_share"] == 0.0


def test_the_evidence_reads_repetitions_built_values_and_size(backend):
    names = q("a", {"$project": {"_id": 0, "city": 1}})
    cities = q("b", {"$group": {"_id": "$city"}}, {"$project": {"_id": 0, "city": "$_id"}})
    glued = q("c", {"$project": {"_id": 0, "label": {"$concat": ["$name", " / ", "$city"]}}})
    joined = q("d", {"$lookup": {"from": "labs", "localField": "city", "foreignField": "city", "as": "same"}},
               {"$project": {"_id": 0, "city": 1}})
    record = {"id": "w/1", "db": "w", "question": "List the cities of the labs."}
    options = repair.Options()
    candidates = [repair.evaluate(s, i, record, backend, INDEX, options) for i, s in
                  enumerate([names, cities, glued, joined])]
    a, b, c, d = repair.evidence_of(candidates)
    assert (a.rows, a.distinct, b.rows, b.distinct) == (9, 3, 3, 3)
    assert a.cluster != b.cluster and a.set_cluster == b.set_cluster  # the same cities, repeated or not
    assert d.cluster == a.cluster and d.joins == 1 and a.joins == 0
    assert c.built and not a.built and not b.built
    vector = features("List the cities of the labs.", [a, b, c], lambda s: 0.8)
    assert vector[a.cluster]["repeated_rows"] == 1.0 and vector[b.cluster]["repeated_rows"] == 0.0
    assert vector[a.cluster]["set_share"] == pytest.approx(1 / 3) and vector[c.cluster]["set_share"] == 0.0
    assert vector[c.cluster]["built"] == 1.0
    assert features("List the different cities of the labs.", [a, b], lambda s: 0.8)[a.cluster]["repeated_distinct"] == 1.0


def test_a_filter_that_normalises_is_no_built_value():
    from nlq.selection import builds_values

    assert not builds_values([{"$match": {"$expr": {"$eq": [{"$toLower": "$city"}, "north"]}}},
                              {"$project": {"_id": 0, "name": 1}}])
    assert builds_values([{"$group": {"_id": {"$toUpper": "$city"}}}])
    assert not builds_values("not a pipeline")


def test_repeated_rows_lose_when_distinct_values_are_asked_and_built_values_lose():
    repeated = Evidence("a", 0, 0, 9, ("city",), (), None, distinct=3, set_cluster=0)
    distinct = Evidence("b", 1, 1, 3, ("city",), (), None, distinct=3, set_cluster=0)
    assert chosen("List the different cities of the labs.", [repeated, distinct]) == 1
    assert chosen("List the different cities of the labs.", [distinct, repeated]) == 1
    glued = Evidence("a", 0, 0, 9, ("name",), (), None, distinct=9, set_cluster=0, built=True)
    stored = Evidence("b", 1, 1, 9, ("name",), (), None, distinct=9, set_cluster=1)
    assert chosen("List the names of the labs.", [glued, stored]) == 1


def test_the_fitted_directions_hold():
    from tests.bench.select_fit import SIGNS

    model = Selector.load()
    for name, sign in SIGNS.items():
        assert model.weights[name] * sign >= 0 and model.choice_of(name) * sign >= 0, name


def test_one_systems_alternatives_are_judged_by_the_one_system_model():
    """`rules --candidates`: one system's own readings get the model fitted on such records
    (`Selector.single`); several systems, or one candidate, the main model."""
    main = Selector.load()
    doc = main.to_json()
    doc.pop("single", None)
    # a one-system model that only trusts the confidence a reading carries
    single = {**doc, "weights": {f: 0.0 for f in FEATURES} | {"confidence_in": 1.0}, "bias": 0.0, "choice": None,
              "by_answered": {}, "calibration": [1.0, 0.0]}
    model = Selector.from_json({**doc, "single": single})
    assert Selector.from_json(model.to_json()).single is not None  # it survives the model file
    alternatives = [ev("rules", 0, 0, confidence=0.2), ev("rules", 1, 1, confidence=0.9)]
    assert model.for_evidence(alternatives) is model.single
    assert model.choose("How many labs?", alternatives).cluster == 1
    assert model.probability("How many labs?", alternatives, 1) == pytest.approx(0.9)  # sigmoid(logit 0.9)
    several = [ev("rules", 0, 0, confidence=0.2), ev("kimi", 1, 1)]
    assert model.for_evidence(several) is model and model.for_evidence([ev("rules", 0, 0)]) is model
