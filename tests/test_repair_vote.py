"""The LLM-free vote of `nlq repair`: a result cluster weighs the noisy-OR of its members' confidences.

Synthetic candidates over a small world: each query returns a known result, and the
confidences decide which result cluster wins; the model loop keeps the plain majority.
"""

from __future__ import annotations

import json

import orjson
import pytest

from nlq import repair
from nlq.backends import EmbeddedBackend
from nlq.index import index_documents
from nlq.methods import sag

DOCS = [{"_id": i, "lab": ["North", "South"][i % 2], "status": ["open", "closed"][i % 3 == 0], "n": i}
        for i in range(9)]
INDEX = index_documents("w", {"labs": DOCS})


@pytest.fixture(scope="module")
def backend(tmp_path_factory):
    root = tmp_path_factory.mktemp("world")
    (root / "w.json").write_bytes(orjson.dumps({"labs": DOCS}))
    return EmbeddedBackend(root)


def q(*stages, confidence=None):
    out = {"collection": "labs", "pipeline": list(stages)}
    return out if confidence is None else {**out, "confidence": confidence, "method": "rules"}


def count_open(confidence=None):  # 6 open labs
    return q({"$match": {"status": "open"}}, {"$count": "n"}, confidence=confidence)


def count_open_2(confidence=None):  # the same result, another surface form
    return q({"$match": {"status": {"$in": ["open"]}}}, {"$group": {"_id": None, "n": {"$sum": 1}}},
             {"$project": {"_id": 0}}, confidence=confidence)


def count_all(confidence=None):  # 9 labs
    return q({"$count": "n"}, confidence=confidence)


def count_closed(confidence=None):  # 3 closed labs
    return q({"$match": {"status": "closed"}}, {"$count": "n"}, confidence=confidence)


def repaired(backend, prediction, candidates=(), **options):
    record = {"id": "w/1", "db": "w", "question": "How many open labs?", "prediction": prediction,
              "candidates": list(candidates)}
    [out] = repair.run([record], backend, {"w": INDEX}, options=repair.Options(**{"select": "vote", **options}))
    return out


def test_a_heavier_cluster_wins_over_a_larger_lighter_one(backend):
    out = repaired(backend, count_all(0.9), [count_open(0.3), count_open_2(0.3)])
    assert out["prediction"] == count_all(0.9)
    # 1 - (1 - 0.3)(1 - 0.3) = 0.51 < 0.9
    assert [(c["members"], c["size"], c["weight"]) for c in out["repair"]["clusters"]] == [([0], 1, 0.9),
                                                                                          ([1, 2], 2, 0.51)]
    assert out["repair"]["vote_share"] == pytest.approx(0.9 / 1.41, abs=1e-4)


def test_agreeing_alternatives_outweigh_a_doubtful_prediction(backend):
    out = repaired(backend, count_all(0.25), [count_open(0.2), count_open_2(0.15)])
    assert out["prediction"] == count_open(0.2)  # the cluster's first member (fewest violations, earliest)
    assert out["repair"]["clusters"][0]["weight"] == pytest.approx(1 - 0.8 * 0.85)  # 0.32 > 0.25
    assert out["repair"]["original"] == count_all(0.25)


def test_agreement_is_not_a_sum(backend):
    # summed, 0.25 + 0.2 = 0.45 would outweigh 0.42; as the chance that one of them is right, 0.4 does not
    out = repaired(backend, count_all(0.42), [count_open(0.25), count_open_2(0.2)])
    assert out["prediction"] == count_all(0.42)
    assert [c["weight"] for c in out["repair"]["clusters"]] == [0.42, 0.4]


def test_one_more_confident_alternative_replaces_the_prediction(backend):
    out = repaired(backend, count_all(0.3), [count_open(0.6), count_closed(0.1)])
    assert out["prediction"] == count_open(0.6)
    assert [c["members"] for c in out["repair"]["clusters"]] == [[1], [0], [2]]


def test_a_tie_in_weight_goes_to_the_prediction(backend):
    out = repaired(backend, count_all(0.4), [count_open(0.4)])
    assert out["prediction"] == count_all(0.4)
    assert out["repair"]["vote_share"] == 0.5
    out = repaired(backend, count_all(0.5), [count_open(0.2), count_open_2(0.375)])  # 1 - 0.8 * 0.625 = 0.5
    assert [c["weight"] for c in out["repair"]["clusters"]] == [0.5, 0.5]
    assert out["prediction"] == count_all(0.5)


def test_without_a_confidence_on_every_voter_each_counts_one(backend):
    out = repaired(backend, count_all(0.9), [count_open(), count_open_2(0.1)])
    assert out["prediction"] == count_open()
    assert "weight" not in out["repair"]["clusters"][0]
    assert out["repair"]["vote_share"] == pytest.approx(2 / 3, abs=1e-4)


def test_gated_out_candidates_do_not_weigh(backend):
    miscased = q({"$match": {"status": "Open"}}, {"$count": "n"}, confidence=0.95)
    out = repaired(backend, miscased, [count_open(0.1)])
    assert out["prediction"] == count_open(0.1)  # the gate rejects the literal 'Open'; the rest vote
    assert out["repair"]["clusters"] == [{"members": [1], "size": 1, "rows": 1, "violations": 0, "weight": 0.1}]


def test_a_confidence_outside_0_to_1_is_not_a_weight(backend):
    out = repaired(backend, count_all(7), [count_open(0.3), count_open_2(0.3)])
    assert out["prediction"] == count_open(0.3)  # plain majority: 7 is no probability
    assert "weight" not in out["repair"]["clusters"][0]


def test_vote_is_the_plain_majority_unless_weighted(backend):
    record = {"db": "w", "question": "How many open labs?"}
    options = repair.Options()
    candidates = [repair.evaluate(s, i, record, backend, INDEX, options)
                  for i, s in enumerate([count_all(0.9), count_open(0.3), count_open_2(0.3)])]
    assert repair.vote(candidates).winner.position == 1
    weighted = repair.vote(candidates, weighted=True)
    assert weighted.winner.position == 0 and weighted.share == pytest.approx(0.9 / 1.41, abs=1e-4)


class Replies:
    """A model that answers from a list, one reply per call."""

    def __init__(self, *replies):
        self.replies = list(replies)

    def chat(self, messages, **options):
        from types import SimpleNamespace

        return SimpleNamespace(text=self.replies.pop(0))


def test_the_model_loop_keeps_the_majority_whatever_the_confidences(backend):
    # three attempts: one confident answer, two doubtful ones that agree: the paper's majority
    model = Replies(json.dumps(count_all(0.95)), json.dumps(count_open(0.1)), json.dumps(count_open_2(0.1)))
    loop = repair.Loop(model, lambda record, index: [{"role": "user", "content": record["question"]}],
                       lambda text, collections: json.loads(text), sag.feedback_turn, rounds=1, attempts=3)
    record = {"id": "w/1", "db": "w", "question": "How many open labs?", "prediction": None}
    [out] = repair.run([record], backend, {"w": INDEX}, loop=loop)
    assert out["prediction"] == count_open(0.1)
    assert [c["members"] for c in out["repair"]["clusters"]] == [[1, 2], [0]]
    assert "weight" not in out["repair"]["clusters"][0]
    assert out["repair"]["vote_share"] == pytest.approx(2 / 3, abs=1e-4)


def test_a_confidence_of_a_method_that_is_not_calibrated_does_not_weigh(backend):
    # SAG's confidence is its vote share, no probability of being right: each counts one
    shares = lambda p: {**p, "method": "sag"}
    out = repaired(backend, shares(count_all(0.99)), [shares(count_open(0.3)), shares(count_open_2(0.3))])
    assert out["prediction"]["pipeline"] == count_open()["pipeline"]
    assert "weight" not in out["repair"]["clusters"][0]
