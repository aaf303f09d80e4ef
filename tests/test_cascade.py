"""The cascade (rules first, a fallback method below the threshold) and rules' --candidates."""

from __future__ import annotations

import orjson
import pytest

from nlq import gate, generate, methods
from nlq.commands import cli
from tests.test_generate import INDEX, PANAMA

QUESTION = {"id": "fleet/1", "db": "fleet", "question": "Which ships have the flag Panama?", "witnesses": [PANAMA]}


class FakeModel:
    """A fallback method answering every question with one fixed pipeline."""

    name = "fake"
    channels = ("question", "card")

    def generate(self, task, context):
        return {"collection": "port", "pipeline": [{"$project": {"Country": 1}}], "method": "fake"}


@pytest.fixture
def with_fake(monkeypatch):
    real = methods.get
    monkeypatch.setattr(methods, "get", lambda name: FakeModel() if name == "fake" else real(name))


def run(threshold, **options):
    context = generate.Context({"fleet": INDEX}, fallback="fake", threshold=threshold, **options)
    return next(generate.run([dict(QUESTION)], "cascade", context))


def test_confident_rules_answer_stands(with_fake):
    record = run(0.0)
    p = record["prediction"]
    assert p["cascade"]["path"] == "rules" and p["collection"] == "ship" and p["method"] == "cascade"
    assert p["cascade"]["rules_confidence"] == p["confidence"]
    assert p["disclosure"] == ["grounding_index", "question", "witnesses"]


def test_below_the_threshold_the_fallback_answers_and_says_so(with_fake):
    p = run(1.0)["prediction"]
    assert p["collection"] == "port" and p["answered_by"] == "fake"
    assert p["cascade"]["path"] == "fallback" and p["cascade"]["reason"].startswith("confidence ")
    assert "card" in p["disclosure"] and "witnesses" in p["disclosure"]


def test_a_gate_rejection_sends_the_question_to_the_fallback(with_fake, monkeypatch):
    monkeypatch.setattr(gate, "run", lambda query, index, question: [gate.Violation("path", "no such field", 0)])
    p = run(0.0)["prediction"]
    assert p["cascade"]["path"] == "fallback" and p["cascade"]["reason"] == "gate: path: no such field"


def test_cascade_without_fallback_is_a_usage_error(runner, tmp_path):
    index = tmp_path / "fleet.index.jsonl"
    index.write_bytes(orjson.dumps(INDEX) + b"\n")
    result = runner.invoke(cli, ["generate", "--index", str(index), "--method", "cascade"],
                           input=orjson.dumps(QUESTION).decode() + "\n")
    assert result.exit_code == 2 and "--fallback" in result.output


def test_candidates_are_distinct_other_readings_most_confident_first():
    context = generate.Context({"fleet": INDEX}, candidates=3)
    record = next(generate.run([{**QUESTION, "question": "What is the name of the ship with the flag Panama?"}],
                               "rules", context))
    candidates = record["candidates"]
    assert 1 <= len(candidates) <= 3 and "candidates" not in record["prediction"]
    shown = [(record["prediction"]["collection"], record["prediction"]["pipeline"])]
    shown += [(c["collection"], c["pipeline"]) for c in candidates]
    assert len({repr(s) for s in shown}) == len(shown)
    assert [c["confidence"] for c in candidates] == sorted((c["confidence"] for c in candidates), reverse=True)
    assert all(c["reading"] and c["method"] == "rules" and 0 <= c["confidence"] <= 1 for c in candidates)


def test_no_candidates_unless_asked():
    record = next(generate.run([dict(QUESTION)], "rules", generate.Context({"fleet": INDEX})))
    assert "candidates" not in record
