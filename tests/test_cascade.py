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


def test_the_fallback_model_calls_are_metered_in_usage(fake_llm):
    """Through generate.run with a real model method (nlq-only) against the scripted fake
    server: a fallback answer carries its model call's usage; a rules answer made none."""
    from nlq.llm import ChatClient, ModelConfig
    from tests.fakellm import as_json, reply

    fake_llm.responder = lambda body: reply(as_json({"collection": "port", "pipeline": []}),
                                            prompt_tokens=21, completion_tokens=5)
    client = ChatClient(ModelConfig(model="fake-model", base_url=fake_llm.url, api_key="k", cache=None,
                                    max_retries=0))
    records = [dict(QUESTION, id="fleet/1"), dict(QUESTION, id="fleet/2")]
    for threshold, path, calls in ((0.0, "rules", 0), (1.0, "fallback", 1)):
        context = generate.Context({"fleet": INDEX}, model=client, fallback="nlq-only", threshold=threshold)
        out = list(generate.run([dict(r) for r in records], "cascade", context))
        for r in out:
            p = r["prediction"]
            assert p["cascade"]["path"] == path
            assert p["usage"]["model_calls"] == calls
            assert (p["usage"]["prompt_tokens"], p["usage"]["completion_tokens"]) == (21 * calls, 5 * calls)
    assert len(fake_llm.requests) == len(records)  # only the fallback path asked the model
