"""`nlq repair` without a model: gate, execute and vote among a record's candidates (issue 12)."""

from __future__ import annotations

import json

import orjson
import pytest

from nlq import repair
from nlq.methods import sag
from nlq.backends import EmbeddedBackend
from nlq.commands import cli
from nlq.index import index_documents
from tests.conftest import WORLDS

DOCS = [{"_id": i, "lab": ["North", "South"][i % 2], "status": ["open", "closed"][i % 3 == 0], "n": i}
        for i in range(9)]
INDEX = index_documents("w", {"labs": DOCS})


@pytest.fixture(scope="module")
def backend(tmp_path_factory):
    root = tmp_path_factory.mktemp("world")
    (root / "w.json").write_bytes(orjson.dumps({"labs": DOCS}))
    return EmbeddedBackend(root)


def q(*stages):
    return {"collection": "labs", "pipeline": list(stages)}


COUNT_OPEN = q({"$match": {"status": "open"}}, {"$count": "n"})
COUNT_OPEN_2 = q({"$match": {"status": {"$in": ["open"]}}}, {"$group": {"_id": None, "total": {"$sum": 1}}},
                 {"$project": {"_id": 0}})
COUNT_ALL = q({"$count": "n"})


def repaired(backend, prediction, candidates=(), question="How many open labs?", **options):
    record = {"id": "w/1", "db": "w", "question": question, "prediction": prediction,
              "candidates": list(candidates)}
    [out] = repair.run([record], backend, {"w": INDEX}, options=repair.Options(**{"select": "vote", **options}))
    return out


def test_largest_result_cluster_wins_across_surface_forms(backend):
    out = repaired(backend, COUNT_ALL, [COUNT_OPEN, COUNT_OPEN_2])
    assert out["prediction"] == COUNT_OPEN
    assert out["repair"]["clusters"] == [{"members": [1, 2], "size": 2, "rows": 1, "violations": 0},
                                         {"members": [0], "size": 1, "rows": 1, "violations": 0}]
    assert out["repair"]["vote_share"] == pytest.approx(2 / 3, abs=1e-4)
    assert out["repair"]["original"] == COUNT_ALL
    assert set(out["repair"]) == {"violations", "rounds", "attempts", "clusters", "vote_share", "confidence",
                                  "system", "agreed", "rows", "ms", "original"}


def test_gated_candidates_do_not_vote(backend):
    miscased = q({"$match": {"status": "Open"}}, {"$count": "n"})
    out = repaired(backend, miscased, [miscased, COUNT_OPEN])
    assert out["prediction"] == COUNT_OPEN and out["repair"]["vote_share"] == 1.0


def test_without_the_gate_every_executed_candidate_votes(backend):
    wrong_field = q({"$match": {"state": "open"}}, {"$count": "n"})
    out = repaired(backend, wrong_field, [wrong_field, COUNT_OPEN], gate=False)
    # both gated-out candidates return no rows: the empty cluster is the largest
    assert out["prediction"] == wrong_field and out["repair"]["rows"] == 0


def test_ties_prefer_fewer_violations_then_non_empty_then_earlier(backend):
    empty = q({"$match": {"status": "pending"}})
    out = repaired(backend, empty, [COUNT_OPEN])
    assert out["prediction"] == COUNT_OPEN   # the empty one carries the bisection violation
    out = repaired(backend, COUNT_ALL, [COUNT_OPEN])
    assert out["prediction"] == COUNT_ALL    # equal in all else: the earlier


def test_selected_candidate_carries_its_violations(backend):
    out = repaired(backend, q({"$project": {"lab": 1}}), question="List the labs")
    assert out["prediction"]["pipeline"] == [{"$project": {"lab": 1}}]
    assert out["repair"]["violations"] == []      # integer ids are not synthetic ObjectIds


def test_all_failing_is_a_typed_failure(backend):
    out = repaired(backend, "db.labs.aggregate([{$bogus: 1}])", ["not a query ("])
    assert out["prediction"] is None
    assert out["failure"]["type"] == repair.NO_VALID_CANDIDATE
    assert "candidate 0" in out["failure"]["message"] and "candidate 1" in out["failure"]["message"]
    assert out["repair"]["clusters"] == []


def test_min_vote_abstains(backend):
    out = repaired(backend, COUNT_ALL, [COUNT_OPEN], min_vote=0.6)
    assert out["prediction"] is None and out["failure"]["type"] == "abstained"
    assert repaired(backend, COUNT_OPEN, [COUNT_OPEN], min_vote=0.6)["prediction"] == COUNT_OPEN


def test_text_candidates_become_mql_predictions(backend):
    out = repaired(backend, 'db.labs.countDocuments({status: "open"})')
    assert out["prediction"] == {"mql": 'db.labs.countDocuments({status: "open"})'}


def test_records_without_index_or_upstream_failures(backend):
    [missing] = repair.run([{"id": "x", "db": "other", "prediction": COUNT_ALL}], backend, {"w": INDEX})
    assert missing["failure"]["type"] == "unknown_db"
    failed = {"id": "y", "failure": {"stage": "input", "type": "input_error", "message": "bad line"}}
    assert list(repair.run([failed], backend, {"w": INDEX})) == [failed]


def test_cli_votes_over_runs_and_scores_the_repaired_answer(runner, tmp_path, clinic_index_file):
    tasks = (WORLDS.parent / "tasks" / "clinic.jsonl").read_text().splitlines()[:3]
    gold_run = [dict(json.loads(t), prediction=json.loads(t)["gold"]) for t in tasks]
    wrong_run = [dict(json.loads(t), prediction={"collection": "patients", "pipeline": [{"$count": "n"}]})
                 for t in tasks]
    for name, run in (("gold.jsonl", gold_run), ("gold2.jsonl", gold_run)):
        (tmp_path / name).write_text("".join(json.dumps(r) + "\n" for r in run))
    result = runner.invoke(cli, ["repair", "--data", str(WORLDS), "--index", str(clinic_index_file),
                                 "--runs", str(tmp_path / "gold.jsonl"), "--runs", str(tmp_path / "gold2.jsonl"), "-"],
                           input="".join(json.dumps(r) + "\n" for r in wrong_run))
    assert result.exit_code == 0, result.output
    out = [json.loads(line) for line in result.output.splitlines()]
    assert [r["prediction"] for r in out] == [r["gold"] for r in gold_run]
    assert all(r["repair"]["vote_share"] == pytest.approx(2 / 3, abs=1e-4) for r in out)
    scored = runner.invoke(cli, ["score", "--data", str(WORLDS)], input=result.output)
    assert [json.loads(line)["score"]["exc"] for line in scored.output.splitlines()] == [1, 1, 1]


# -- the model loop (Algorithm 1) against a scripted model --------------------------------------

class ScriptedModel:
    """Replies from a script, in order; records every conversation it was sent."""

    def __init__(self, *replies):
        self.replies = list(replies)
        self.seen = []
        self.options = []

    def chat(self, messages, **options):
        from types import SimpleNamespace

        from nlq.llm import usage

        self.seen.append([dict(m) for m in messages])
        self.options.append(options)
        usage.record(prompt_tokens=10, completion_tokens=5, cached=False, ms=1.0)  # as ChatClient meters a call
        return SimpleNamespace(text=self.replies.pop(0))


def _decode(text, collections):
    from nlq.mql.mongosh import parse_query

    return parse_query(text).to_json()


def _messages(record, index):
    return [{"role": "system", "content": "card"}, {"role": "user", "content": record["question"]}]


def loop_repair(backend, model, *, rounds=6, attempts=1, prediction=None, **kw):
    record = {"id": "w/1", "db": "w", "question": "How many open labs?", "prediction": prediction}
    loop = repair.Loop(model, _messages, _decode, sag.feedback_turn, rounds=rounds, attempts=attempts, **kw)
    [out] = repair.run([record], backend, {"w": INDEX}, loop=loop)
    return out


def test_loop_repairs_a_wrong_path_after_feedback(backend):
    wrong = json.dumps(q({"$match": {"stauts": "open"}}, {"$count": "n"}))
    model = ScriptedModel(wrong, json.dumps(COUNT_OPEN))
    out = loop_repair(backend, model)
    assert out["prediction"] == COUNT_OPEN
    assert out["repair"]["rounds"] == [2] and out["repair"]["violations"] == []
    feedback_turn = model.seen[1][-1]["content"]
    assert "stauts" in feedback_turn and "did you mean 'status'?" in feedback_turn
    assert model.seen[1][-2] == {"role": "assistant", "content": wrong}
    assert out["repair"]["usage"]["model_calls"] == 2 and out["repair"]["usage"]["prompt_tokens"] == 20
    assert [o["sample"] for o in model.options] == [0, 0]


def test_loop_three_attempts_two_agree(backend):
    other = q({"$match": {"status": "closed"}}, {"$count": "n"})
    model = ScriptedModel(json.dumps(other), json.dumps(COUNT_OPEN), json.dumps(COUNT_OPEN_2))
    out = loop_repair(backend, model, attempts=3)
    assert out["prediction"] == COUNT_OPEN
    assert out["repair"]["attempts"] == 3 and out["repair"]["vote_share"] == pytest.approx(2 / 3, abs=1e-4)
    assert [c["members"] for c in out["repair"]["clusters"]] == [[1, 2], [0]]
    assert out["repair"]["rounds"] == [1, 1, 1] and [o["sample"] for o in model.options] == [0, 1, 2]


def test_loop_keeps_the_best_candidate_when_rounds_run_out(backend):
    model = ScriptedModel(json.dumps(q({"$match": {"stauts": "open"}})), "not json (",
                          json.dumps(q({"$match": {"status": "Open"}})))
    out = loop_repair(backend, model, rounds=3)
    # every round has one violation; ties go to the later round
    assert out["prediction"] == q({"$match": {"status": "Open"}})
    assert out["repair"]["rounds"] == [3] and [v["check"] for v in out["repair"]["violations"]][0] == "value"


def test_loop_starts_from_the_input_prediction(backend):
    model = ScriptedModel(json.dumps(COUNT_OPEN))
    out = loop_repair(backend, model, prediction=q({"$match": {"stauts": "open"}}), start_from_prediction=True)
    assert out["prediction"] == COUNT_OPEN and len(model.seen) == 1
    assert "stauts" in model.seen[0][-1]["content"]


def test_loop_model_failure_everywhere_is_a_typed_failure(backend):
    from nlq.errors import NlqError

    class Failing:
        def chat(self, messages, **options):
            raise NlqError("the model endpoint answered 503")

    out = loop_repair(backend, Failing(), attempts=2)
    assert out["prediction"] is None and out["failure"]["type"] == repair.NO_VALID_CANDIDATE
    assert "503" in out["failure"]["message"]


def test_a_vote_counts_the_usage_behind_the_other_candidates(backend):
    spent = {"model_calls": 1, "prompt_tokens": 100, "completion_tokens": 7, "cache_hits": 0, "ms": 2.5}
    own = {**COUNT_OPEN, "usage": spent}
    out = repaired(backend, own, [{**COUNT_OPEN_2, "usage": spent}, {**COUNT_ALL, "usage": spent}])
    assert out["prediction"] == own
    assert out["repair"]["usage"] == {"model_calls": 2, "prompt_tokens": 200, "completion_tokens": 14,
                                      "cache_hits": 0, "ms": 5.0}


def test_a_failed_record_with_candidates_is_repaired_over_them(backend):
    failed = {"id": "w/1", "db": "w", "question": "How many open labs?", "prediction": None,
              "failure": {"stage": "generate", "type": "model_timeout", "message": "no answer"},
              "candidates": [COUNT_OPEN]}
    [out] = repair.run([failed], backend, {"w": INDEX})
    assert out["prediction"] == COUNT_OPEN and "failure" not in out
    alone = {k: v for k, v in failed.items() if k != "candidates"}
    assert list(repair.run([alone], backend, {"w": INDEX})) == [alone]
