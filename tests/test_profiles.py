"""The `paper` and `nlq` profiles: one test per row of docs/REPRODUCTION.md, each showing that the
`paper` profile does what the paper (or its reference implementation) does, against the scripted
fake server where a request or a loop decision is involved."""

from __future__ import annotations

import json

import orjson
import pytest

from nlq import card, feedback, gate, generate, profiles, repair
from nlq import index as grounding
from nlq import witness
from nlq.backends import EmbeddedBackend
from nlq.commands import cli
from nlq.errors import InputError
from nlq.llm import ChatClient, ModelConfig
from nlq.methods import sag
from nlq.mql.query import Query
from tests.conftest import ROOT, WORLDS
from tests.fakellm import reply, status

TASKS = ROOT / "fixtures" / "tasks"
PAPER = {**profiles.resolve("paper"), "name": "paper"}
NLQ = {**profiles.resolve("nlq"), "name": "nlq"}


@pytest.fixture(scope="module")
def backend():
    return EmbeddedBackend(WORLDS)


@pytest.fixture(scope="module")
def indexes(backend):
    return {doc["db"]: doc for doc in grounding.build(backend, ["clinic"])}


def task(n: int = 1) -> dict:
    return orjson.loads((TASKS / "clinic.jsonl").read_bytes().splitlines()[n - 1])


GOLD = task(1)["gold"]


def client(fake, **overrides) -> ChatClient:
    settings = {"model": "fake-model", "base_url": fake.url, "backoff": 0.001, "max_retries": 0}
    settings.update(overrides)
    return ChatClient(ModelConfig(**settings))


def solve(fake, indexes, backend, profile, records=None, **settings):
    context = generate.Context(indexes, backend=backend, model=client(fake), profile=profile,
                               sag=sag.Settings(profile=profile, **settings))
    return list(generate.run(iter(records or [task(1)]), "sag", context))


# -- the mechanism ------------------------------------------------------------------------------

def test_a_profile_is_a_bundle_of_defaults_and_an_explicit_option_wins(monkeypatch):
    assert profiles.resolve("paper")["max_depth"] == 7 and profiles.resolve("nlq")["max_depth"] == 12
    assert profiles.resolve("paper", {"max_depth": 12, "map_rule": None})["map_rule"] == "paper"
    assert profiles.resolve("paper", {"max_depth": 12})["max_depth"] == 12
    monkeypatch.setenv("NLQ_PROFILE", "paper")
    assert profiles.profile_name() == "paper" and profiles.resolve()["sampling"] == "first"
    monkeypatch.setenv("NLQ_PROFILE", "bogus")
    with pytest.raises(InputError, match="unknown profile 'bogus'"):
        profiles.resolve()
    with pytest.raises(InputError, match="map_rule must be one of"):
        profiles.resolve("nlq", {"map_rule": "weird"})
    # every element differs between the two profiles, or it would not be an element
    assert all(e.nlq != e.paper for e in profiles.ELEMENTS.values())


def test_every_element_is_an_option_of_the_commands_that_read_it():
    from click.testing import CliRunner
    runner = CliRunner()
    for command in ("index", "card", "witness", "generate", "repair"):
        text = runner.invoke(cli, [command, "--help"], terminal_width=200).output
        assert "--profile [nlq|paper]" in text, command
        for element in profiles.for_command(command):
            assert "--" + element.name.replace("_", "-") in text, (command, element.name)


# -- index rows -----------------------------------------------------------------------------------

def test_sampling_first_k_reads_the_first_documents_in_natural_order(backend):
    [paper] = grounding.build(backend, ["clinic"], sample=5, sampling="first")
    first = {c: backend.aggregate("clinic", c, [{"$limit": 5}]) for c in backend.collections("clinic")}
    expected = grounding.index_documents("clinic", first, counts={c: backend.count("clinic", c) for c in first},
                                         sample=5, sampling="first")
    assert paper["lattice"] == expected["lattice"] and paper["params"]["sampling"] == "first"
    [uniform] = grounding.build(backend, ["clinic"], sample=5)
    assert uniform["values"] != paper["values"]  # another five documents


def test_depth_and_elements_per_array_bound_the_walk():
    deep = {"a": {"b": {"c": {"d": {"e": {"f": {"g": {"h": 1}}}}}}}, "xs": [{"v": i} for i in range(20)]}
    paper = grounding.index_documents("w", {"c": [deep]}, max_depth=7, array_elements=8)
    nlq = grounding.index_documents("w", {"c": [deep]})
    paths = {e["path"]: e for e in paper["lattice"]}
    assert "a.b.c.d.e.f.g" in paths and "a.b.c.d.e.f.g.h" not in paths
    assert "a.b.c.d.e.f.g.h" in {e["path"] for e in nlq["lattice"]}
    assert paths["xs[].v"]["types"] == {"int": 8}
    assert {e["path"]: e for e in nlq["lattice"]}["xs[].v"]["types"] == {"int": 20}


def test_map_rule_paper_takes_all_caps_codes_and_single_capitals_as_data():
    docs = [{"orders": {"POPLATEK_MESICNE": 3, "POPLATEK_TYDNE": 1}, "sex": {"F": 2, "M": 5}}] * 4
    paper = {e["path"]: e["kind"] for e in grounding.index_documents("w", {"c": docs}, map_rule="paper")["lattice"]}
    nlq = {e["path"]: e["kind"] for e in grounding.index_documents("w", {"c": docs})["lattice"]}
    assert paper["orders"] == paper["sex"] == "dynamic_map"
    assert nlq["orders"] == nlq["sex"] == "object"


def test_collapse_rule_segment_collapses_a_date_key_whatever_its_parent():
    docs = [{"stats": {"name": "x", "2019-01": {"n": 1}, "2019-02": {"n": 2}}}] * 3
    paper = grounding.index_documents("w", {"c": docs}, collapse_rule="segment")
    paths = [e["path"] for e in paper["lattice"]]
    assert "stats.<*>.n" in paths and "stats.name" in paths and "stats.2019-01" not in paths
    assert paper["values"]["2019 01"][0]["kind"] == "key"
    nlq = [e["path"] for e in grounding.index_documents("w", {"c": docs})["lattice"]]
    assert "stats.2019-01.n" in nlq


# -- card rows ------------------------------------------------------------------------------------

TWO = grounding.index_documents("w", {"a": [{"_id": 1, "x": 1, "y": 2}], "b": [{"_id": 2, "u": 1, "v": 2}]})


def test_line_cap_per_collection_or_per_database():
    per_db = card.build(TWO, max_entries=3)
    per_coll = card.build(TWO, max_entries=3, card_cap="collection")
    assert per_db["paths"] == 3 and per_coll["paths"] == 6
    assert card.build(TWO, max_entries=2, card_cap="collection")["paths"] == 4


def test_map_line_and_underscore_paths(indexes):
    paper = card.render(indexes["clinic"], map_line=True, underscore_paths=False)
    assert ("values_by_year: DYNAMIC-KEY MAP — keys are data values, e.g. [" in paper
            and "enumerate with $objectToArray -> {k,v}" in paper)
    assert "  _id:" not in paper and "  _id:" in card.render(indexes["clinic"])
    assert "DYNAMIC-KEY MAP" not in card.render(indexes["clinic"])


# -- witness rows ---------------------------------------------------------------------------------

def test_literal_classes_and_hard_witnesses(indexes):
    question = "Show the top 10 lab histories with HBA1C readings for 2019."
    paper = {w["term"]: w for w in witness.find(question, indexes["clinic"], hard_max=6, literals="paper")}
    nlq = {w["term"]: w for w in witness.find(question, indexes["clinic"])}
    assert "10" not in paper and "10" in nlq          # "top 10" is no literal to the paper
    assert paper["2019"]["source"] == "date"           # a bare year is witnessed (the case study's "1987")
    assert paper["HBA1C"]["hard"] and paper["HBA1C"]["matches"][0]["kind"] == "key"
    assert all(w["source"] in ("quoted", "code", "date", "title") for w in paper.values())


# -- prompt rows (the request sent) -----------------------------------------------------------------

def test_card_in_the_system_turn_under_paper_and_in_the_user_turn_under_nlq(fake_llm, indexes, backend):
    fake_llm.responder = lambda body: reply(json.dumps(GOLD))
    [paper] = solve(fake_llm, indexes, backend, PAPER, attempts=1)
    system, user = fake_llm.bodies[0]["messages"]
    assert "Path card:" in system["content"] and "DYNAMIC-KEY MAP" in system["content"]
    assert "Path card:" not in user["content"] and user["content"].rstrip().endswith(task(1)["question"])
    assert paper["prediction"]["profile"] == {"name": "paper", "overrides": {}}
    fake_llm.reset()
    fake_llm.responder = lambda body: reply(json.dumps(GOLD))
    [nlq] = solve(fake_llm, indexes, backend, NLQ, attempts=1)
    system, user = fake_llm.bodies[0]["messages"]
    assert "Path card:" not in system["content"] and "Path card:" in user["content"]
    assert nlq["prediction"]["profile"] == {"name": "nlq", "overrides": {}}


def test_presence_line_when_presence_wrapped_paths_exist(fake_llm, tmp_path):
    world = tmp_path / "w"
    (world / "p").mkdir(parents=True)
    docs = [{"name": f"n{i}", "weight": {"presence_state": "present" if i % 2 else "missing", "value": i}}
            for i in range(6)]
    (world / "p" / "people.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    backend = EmbeddedBackend(world)
    indexes = {d["db"]: d for d in grounding.build(backend, ["p"])}
    answer = {"collection": "people", "pipeline": [{"$project": {"_id": 0, "w": {"$ifNull": ["$weight.value", 0]}}}]}
    fake_llm.responder = lambda body: reply(json.dumps(answer))
    record = {"id": "p/1", "db": "p", "question": "List each weight, defaulting to 0 if absent."}
    solve(fake_llm, indexes, backend, PAPER, records=[dict(record)], attempts=1)
    assert "Presence-wrapped fields" in fake_llm.bodies[0]["messages"][0]["content"]
    fake_llm.reset()
    fake_llm.responder = lambda body: reply(json.dumps(answer))
    solve(fake_llm, indexes, backend, NLQ, records=[dict(record)], attempts=1)
    assert "Presence-wrapped" not in json.dumps(fake_llm.bodies[0]["messages"])


# -- gate and loop rows -----------------------------------------------------------------------------

BAD_PATH = {"collection": "lab_histories", "pipeline": [{"$match": {"nosuch": 1}}, {"$count": "n"}]}


def test_only_gate_clean_candidates_are_executed(indexes, backend):
    record = {"db": "clinic", "question": "How many?"}
    paper = repair.evaluate(BAD_PATH, 0, record, backend, indexes["clinic"], repair.Options(execute="gate-clean"))
    nlq = repair.evaluate(BAD_PATH, 0, record, backend, indexes["clinic"], repair.Options())
    assert not paper.executed and [v.check for v in paper.violations] == ["path"]
    assert nlq.executed and [v.check for v in nlq.violations] == ["path", "empty"]


def test_the_attempts_best_candidates_vote_admissible_or_not(indexes, backend):
    record = {"db": "clinic", "question": "How many lab histories have an HBA1C reading in 2019?"}
    opts = repair.Options()
    good = repair.evaluate(GOLD, 0, record, backend, indexes["clinic"], opts)
    other = {"collection": "lab_histories", "pipeline": [{"$count": "histories"}]}
    bad = [repair.evaluate({**other, "pipeline": [{"$match": {"ghost": {"$exists": False}}}, {"$count": "histories"}]},
                           i, record, backend, indexes["clinic"], opts) for i in (1, 2)]
    assert good.admissible and not any(c.admissible for c in bad)
    assert repair.vote([good, *bad]).winner is good                       # nlq: admissible candidates vote
    assert repair.vote([good, *bad], voters="attempts").winner is bad[0]  # paper: the largest cluster wins


def test_question_driven_value_check_with_the_omission_check(indexes):
    ix = indexes["clinic"]
    question = "How many lab histories have an HBA1C reading in 2019?"
    witnesses = witness.find(question, ix, hard_max=6, literals="paper")
    ignores = Query("lab_histories", [{"$count": "n"}])
    found = gate.check_witnessed(ignores, ix, question, witnesses)
    assert found and "never reads any of those paths" in found[0].message
    assert gate.check_witnessed(Query(**GOLD), ix, question, witnesses) == []
    assert gate.check_value(ignores, ix, question) == []   # nlq's literal check has nothing to compare


def test_witnessed_join_probe_in_the_gate(indexes, backend):
    join = {"collection": "lab_histories", "pipeline": [
        {"$lookup": {"from": "patients", "localField": "lab", "foreignField": "patient_id", "as": "p"}},
        {"$limit": 2}, {"$project": {"_id": 0}}]}
    record = {"db": "clinic", "question": "List two lab histories with their patient."}
    paper = repair.evaluate(join, 0, record, backend, indexes["clinic"], repair.Options(join_probe="gate"))
    nlq = repair.evaluate(join, 0, record, backend, indexes["clinic"], repair.Options())
    assert [v.check for v in paper.violations] == ["join"] and not paper.admissible
    assert nlq.violations == [] and nlq.rows


def test_synthetic_id_leak_check():
    rows = [{"_id": "clinic::42", "n": 1}]
    asks_id = "Give the patient id and the number of visits."
    assert feedback.leaked_synthetic_id(rows, asks_id) is not None   # an id, but not the document key
    assert feedback.leaked_id(rows, asks_id) is None
    assert feedback.leaked_synthetic_id(rows, "Show each document's _id.") is None
    assert feedback.leaked_synthetic_id([{"_id": "HBA1C"}], "") is None


def test_knockout_scopes():
    paper_no_gate = sag.Settings(gate=False, profile=PAPER)
    assert paper_no_gate.checks == ("value", "limit") and sag.Settings(gate=False, profile=NLQ).checks == ()
    paper_no_w = sag.Settings(witnesses=False, profile=PAPER)
    assert paper_no_w.checks == ("path",) and not paper_no_w.uses_bisection and paper_no_w.id_leak == "off"
    nlq_no_w = sag.Settings(witnesses=False, profile=NLQ)
    assert nlq_no_w.checks == ("path", "value", "limit") and nlq_no_w.uses_bisection
    assert sag.Settings(ladder="gated-repair", profile=PAPER).id_leak == "off"


# -- baselines and decoding rows ------------------------------------------------------------------

def test_baseline_documents_first_k_compacted_with_string_summaries(fake_llm, indexes, backend):
    fake_llm.responder = lambda body: reply(json.dumps(GOLD))
    context = generate.Context(indexes, backend=backend, model=client(fake_llm), profile=PAPER)
    list(generate.run(iter([task(1)]), "sampled", context))
    text = fake_llm.bodies[0]["messages"][-1]["content"]
    first = backend.aggregate("clinic", "patients", [{"$limit": 1}])[0]
    assert json.dumps(first["patient_id"]) in text and "string values in these documents:" in text
    assert all(len(s) <= 163 for s in _strings(json.loads(text.split("patients:\n")[1].splitlines()[0])))


def _strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def test_reasoning_effort_is_sent_under_paper(fake_llm, tmp_path):
    from click.testing import CliRunner
    index = tmp_path / "clinic.index.jsonl"
    assert CliRunner().invoke(cli, ["index", "--data", str(WORLDS), "clinic", "-o", str(index)]).exit_code == 0
    tasks = tmp_path / "t.jsonl"
    tasks.write_text(json.dumps(task(1)) + "\n")
    fake_llm.responder = lambda body: reply(json.dumps(GOLD))
    env = {"NLQ_BASE_URL": fake_llm.url, "NLQ_MODEL": "fake-model", "NLQ_CACHE": None, "NLQ_PROFILE": "paper"}
    result = CliRunner().invoke(cli, ["generate", "-m", "nlq-only", "--index", str(index), "--no-cache",
                                      str(tasks)], env=env)
    assert result.exit_code == 0, result.output
    assert fake_llm.bodies[0]["reasoning_effort"] == "max"
    assert json.loads(result.stdout)["prediction"]["profile"]["name"] == "paper"
    fake_llm.reset()
    fake_llm.responder = lambda body: reply(json.dumps(GOLD))
    CliRunner().invoke(cli, ["generate", "-m", "nlq-only", "--index", str(index), "--no-cache", "--profile", "nlq",
                             str(tasks)], env=env)
    assert "reasoning_effort" not in fake_llm.bodies[0]


def test_transport_fault_keeps_trying_under_paper_and_ends_the_attempt_under_nlq(fake_llm, indexes, backend):
    fake_llm.enqueue(status(503, "busy"), reply(json.dumps(GOLD)))
    [paper] = solve(fake_llm, indexes, backend, PAPER, attempts=1)
    assert paper["prediction"]["pipeline"] == GOLD["pipeline"] and len(fake_llm.bodies) == 2
    fake_llm.reset()
    fake_llm.enqueue(status(503, "busy"), reply(json.dumps(GOLD)))
    [nlq] = solve(fake_llm, indexes, backend, NLQ, attempts=1)
    assert nlq["failure"]["type"] == "no_valid_candidate" and len(fake_llm.bodies) == 1


# -- the gate's _id -------------------------------------------------------------------------------

def test_id_exists_even_when_the_data_was_exported_without_it():
    ix = grounding.index_documents("w", {"c": [{"k": "a"}, {"k": "b"}]})
    grouped = Query("c", [{"$group": {"_id": "$_id", "n": {"$sum": 1}}}])
    assert gate.run(grouped, ix, "") == []
    assert gate.run(Query("c", [{"$group": {"_id": "$kk"}}]), ix, "")


def test_react_conventions_nudge_and_repair_turns_outside_the_budget(fake_llm, indexes, backend):
    probe = json.dumps({"thought": "look", "action": "execute", "collection": "lab_histories",
                        "pipeline": [{"$limit": 1}]})
    submit = json.dumps({"thought": "done", "action": "submit", **GOLD})
    script = (probe, "not json at all", probe, probe, submit)

    def run(profile):
        fake_llm.reset()
        fake_llm.enqueue(*script)
        context = generate.Context(indexes, backend=backend, model=client(fake_llm), profile=profile, max_steps=4)
        return list(generate.run(iter([task(1)]), "react", context))[0]

    paper = run(PAPER)
    assert paper["prediction"]["pipeline"] == GOLD["pipeline"] and paper["prediction"]["steps"] == 4
    system = fake_llm.bodies[0]["messages"][0]["content"]
    assert "How your answer is graded" in system
    assert "turn(s) left: submit your final pipeline now" in fake_llm.bodies[-1]["messages"][-1]["content"]
    nlq = run(NLQ)
    assert nlq["failure"]["type"] == "budget_exhausted"  # the repair turn counted: no turn left to submit
    assert all("How your answer is graded" not in json.dumps(b["messages"]) for b in fake_llm.bodies)
    assert all("turn(s) left" not in json.dumps(b["messages"]) for b in fake_llm.bodies)


def test_the_paper_request_carries_the_paper_index_and_card(fake_llm, tmp_path, backend):
    """`nlq index --profile paper | nlq generate -m sag --profile paper`: the card in the request is the
    one of the first 400 documents per collection, walked 7 deep with 8 elements per array, the paper's
    map and collapse rules, 400 lines per collection, DYNAMIC-KEY MAP lines and no `_`-prefixed path."""
    from click.testing import CliRunner
    index = tmp_path / "clinic.index.jsonl"
    env = {"NLQ_PROFILE": "paper", "NLQ_BASE_URL": fake_llm.url, "NLQ_MODEL": "fake-model", "NLQ_CACHE": None}
    runner = CliRunner()
    assert runner.invoke(cli, ["index", "--data", str(WORLDS), "clinic", "-o", str(index)], env=env).exit_code == 0
    tasks = tmp_path / "t.jsonl"
    tasks.write_text(json.dumps(task(1)) + "\n")
    fake_llm.responder = lambda body: reply(json.dumps(GOLD))
    result = runner.invoke(cli, ["generate", "-m", "sag", "--data", str(WORLDS), "--index", str(index),
                                 "--attempts", "1", "--no-cache", str(tasks)], env=env)
    assert result.exit_code == 0, result.output
    system = fake_llm.bodies[0]["messages"][0]["content"]
    first = {c: backend.aggregate("clinic", c, [{"$limit": 400}]) for c in backend.collections("clinic")}
    expected = grounding.index_documents("clinic", first, counts={c: backend.count("clinic", c) for c in first},
                                         sample=400, max_depth=7, sampling="first", array_elements=8,
                                         map_rule="paper", collapse_rule="segment")
    shown = card.render(expected, card_cap="collection", map_line=True, underscore_paths=False)
    assert system.endswith("Path card:\n" + shown)
    assert "  _id:" not in shown and "DYNAMIC-KEY MAP" in shown
    record = json.loads(result.stdout)
    assert record["prediction"]["profile"] == {"name": "paper", "overrides": {}}
    assert record["repair"]["profile"]["name"] == "paper"


def test_the_loop_feeds_back_gate_violations_only_when_it_does_not_execute(fake_llm, indexes, backend):
    """Algorithm 1 under paper: an inadmissible candidate is not executed, so its repair turn holds the
    gate's violations only; under nlq it was run too and the turn adds the execution feedback."""
    def script(body):
        repaired = "It has these problems" in body["messages"][-1]["content"]
        return reply(json.dumps(GOLD if repaired else BAD_PATH))

    turns = {}
    for name, profile in (("paper", PAPER), ("nlq", NLQ)):
        fake_llm.reset()
        fake_llm.responder = script
        [out] = solve(fake_llm, indexes, backend, profile, attempts=1)
        assert out["prediction"]["pipeline"] == GOLD["pipeline"] and out["repair"]["rounds"] == [2]
        turns[name] = fake_llm.bodies[1]["messages"][-1]["content"]
    assert "[path]" in turns["paper"] and "[empty]" not in turns["paper"]
    assert "[path]" in turns["nlq"] and "[empty]" in turns["nlq"]


def test_path_first_check_order():
    """The reference runs the value and limit checks only when the path check finds nothing."""
    ix = grounding.index_documents("w", {"labs": [{"name": "Central Lab", "kind": "A"}] * 3})
    both = {"collection": "labs", "pipeline": [{"$match": {"nmae": "x", "name": "central lab"}}]}
    record = {"db": "w", "question": "Show the top 5 labs."}
    together = repair.evaluate(both, 0, record, None, ix, repair.Options(execute="gate-clean"))
    first = repair.evaluate(both, 0, record, None, ix, repair.Options(execute="gate-clean", check_order="path-first"))
    assert [v.check for v in together.violations] == ["path", "value", "limit"]
    assert [v.check for v in first.violations] == ["path"]
