"""The memory of verified answers: the file, `nlq memory`, recall, adaptation, and its use by the methods."""

from __future__ import annotations

import json
import os
import subprocess

import orjson
import pytest

from nlq import generate, mql, witness
from nlq import index as grounding
from nlq.backends import EmbeddedBackend
from nlq.commands import cli
from nlq.llm import ChatClient, ModelConfig
from nlq.memory import Entry, Memory, MemoryFileError, adapt, candidate, nearest, own_entry
from nlq.methods import sag
from tests.conftest import ROOT, WORLDS
from tests.fakellm import reply

ORDERS = [
    {"_id": 1, "customer": "Ann", "status": "shipped", "city": "Lyon", "total": 30, "items": ["pen", "ink"]},
    {"_id": 2, "customer": "Bo", "status": "pending", "city": "Oslo", "total": 12, "items": ["pen"]},
    {"_id": 3, "customer": "Cy", "status": "shipped", "city": "Oslo", "total": 55, "items": ["book"]},
    {"_id": 4, "customer": "Di", "status": "cancelled", "city": "Lyon", "total": 8, "items": ["ink", "book"]},
]


@pytest.fixture
def world(tmp_path):
    """A one-collection world in a folder of its own (the tests rename a field in it)."""
    (tmp_path / "shop").mkdir()
    (tmp_path / "shop" / "orders.json").write_bytes(orjson.dumps(ORDERS))
    return tmp_path


def index_of(world) -> dict:
    return next(grounding.build(EmbeddedBackend(world), ["shop"]))


def task(question: str, index: dict, **extra) -> dict:
    return {"db": "shop", "question": question, "witnesses": witness.find(question, index), **extra}


def remembered(path, *entries) -> Memory:
    memory = Memory(path)
    for question, pipeline, source in entries:
        memory.add(Entry(db="shop", question=question, collection="orders", pipeline=pipeline, verified_by="user",
                         source=source))
    return memory


STATUS_COUNT = ("How many orders are shipped?", [{"$match": {"status": "shipped"}}, {"$count": "orders"}], "shop/1")
CITY_TOTAL = ("What is the total of the orders in Lyon?",
              [{"$match": {"city": "Lyon"}}, {"$group": {"_id": None, "total": {"$sum": "$total"}}},
               {"$project": {"_id": 0}}], "shop/2")


# -- the file -------------------------------------------------------------------------------------

def test_entries_are_stored_once_listed_per_database_and_removed(tmp_path):
    with remembered(tmp_path / "m.sqlite", STATUS_COUNT, CITY_TOTAL) as memory:
        again, new = memory.add(Entry(db="shop", question="How many orders  are shipped?", collection="orders",
                                      pipeline=STATUS_COUNT[1], verified_by="score"))
        assert (again, new) == (1, False)  # the same question and query: one entry
        assert [e.question for e in memory.entries("shop")] == [STATUS_COUNT[0], CITY_TOTAL[0]]
        assert memory.entries("other") == []
        assert memory.remove([1, 99]) == 1
        assert [e.id for e in memory.entries()] == [2]


def test_an_entry_must_say_what_it_is(tmp_path):
    with Memory(tmp_path / "m.sqlite") as memory:
        with pytest.raises(Exception, match="verified by one of"):
            memory.add(Entry(db="shop", question="q?", collection="orders", pipeline=[], verified_by="me"))
        with pytest.raises(Exception, match="needs its question"):
            memory.add(Entry(db="shop", question=" ", collection="orders", pipeline=[], verified_by="user"))


def test_a_file_that_is_no_memory_is_a_clear_error(tmp_path):
    bad = tmp_path / "m.sqlite"
    bad.write_text("not a database at all " * 100)
    with pytest.raises(MemoryFileError, match="cannot open the memory file"):
        Memory(bad)


# -- nlq memory ----------------------------------------------------------------------------------

def test_add_takes_verified_records_and_says_why_it_skips_the_others(runner, tmp_path):
    query = {"collection": "orders", "pipeline": STATUS_COUNT[1]}
    records = [
        {"id": "shop/1", "db": "shop", "question": STATUS_COUNT[0], "prediction": query, "score": {"exc": 1}},
        {"id": "shop/2", "db": "shop", "question": "How many orders?", "prediction": query, "score": {"exc": 0}},
        {"id": "shop/3", "db": "shop", "question": "Orders in Oslo?", "confirmed": True,
         "prediction": {"mql": 'db.orders.find({city: "Oslo"})'}},
        {"id": "shop/4", "question": "no db here", "prediction": query, "score": {"exc": 1}},
        {"id": "shop/5", "db": "shop", "question": "Drop it", "confirmed": True,
         "prediction": {"collection": "orders", "pipeline": [{"$out": "x"}]}},
    ]
    memory = tmp_path / "m.sqlite"
    result = runner.invoke(cli, ["memory", "add", "--memory", str(memory)],
                           input="".join(json.dumps(r) + "\n" for r in records))
    assert result.exit_code == 0, result.output
    out = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["id"] for r in out] == [r["id"] for r in records]  # one record out per record in
    assert out[0]["memory"] == {"added": 1, "new": True}
    assert "not verified" in out[1]["memory"]["skipped"]
    assert out[2]["memory"]["added"] == 2
    assert out[3]["failure"]["stage"] == "memory" and "db" in out[3]["failure"]["message"]
    assert out[4]["failure"]["type"] == "forbidden_operator"
    listed = [json.loads(line) for line in runner.invoke(cli, ["memory", "list", "--memory", str(memory)]).stdout
              .splitlines()]
    assert [(e["id"], e["verified_by"], e["source"]) for e in listed] == [(1, "score", "shop/1"), (2, "user", "shop/3")]
    assert listed[1]["mql"] == {"collection": "orders", "pipeline": [{"$match": {"city": "Oslo"}}]}


def test_gold_is_remembered_only_when_asked(runner, tmp_path):
    memory = tmp_path / "m.sqlite"
    tasks = (ROOT / "fixtures" / "tasks" / "clinic.jsonl").read_text()
    plain = runner.invoke(cli, ["memory", "add", "--memory", str(memory)], input=tasks)
    assert all("skipped" in json.loads(line)["memory"] for line in plain.stdout.splitlines())
    gold = runner.invoke(cli, ["memory", "add", "--memory", str(memory), "--gold"], input=tasks)
    added = [json.loads(line)["memory"] for line in gold.stdout.splitlines()]
    assert added and all("added" in m for m in added)
    with Memory(memory) as m:
        assert {e.verified_by for e in m.entries()} == {"gold"}


def test_verify_marks_entries_stale_when_the_data_changes(runner, world, tmp_path):
    path = tmp_path / "m.sqlite"
    remembered(path, STATUS_COUNT, CITY_TOTAL).close()
    ok = runner.invoke(cli, ["memory", "verify", "--memory", str(path), "--data", str(world)])
    assert ok.exit_code == 0 and "2 entries answer, 0 stale" in ok.stderr
    # the field `status` is renamed: the entry that filters on it now returns nothing
    renamed = [{("state" if k == "status" else k): v for k, v in doc.items()} for doc in ORDERS]
    (world / "shop" / "orders.json").write_bytes(orjson.dumps(renamed))
    stale = runner.invoke(cli, ["memory", "verify", "--memory", str(path), "--data", str(world)])
    checked = {json.loads(line)["id"]: json.loads(line)["verify"] for line in stale.stdout.splitlines()}
    assert checked[1] == {"ok": False, "reason": "returns nothing on the current data"}
    assert checked[2]["ok"] is True
    with Memory(path) as memory:
        assert [e.id for e in memory.entries("shop")] == [2]  # a stale entry is not used
        assert [e.id for e in memory.entries("shop", stale=True)] == [1, 2]
        index = index_of(world)
        assert [r.entry.id for r, _ in nearest(memory, task("How many orders are pending?", index), index, 5)] == [2]


# -- recall and adaptation ------------------------------------------------------------------------

def test_recall_prefers_the_question_of_the_same_structure(world, tmp_path):
    index = index_of(world)
    with remembered(tmp_path / "m.sqlite", STATUS_COUNT, CITY_TOTAL) as memory:
        found = nearest(memory, task("How many orders are cancelled?", index), index, 2)
        assert [r.entry.id for r, _ in found] == [1, 2] and found[0][0].score > found[1][0].score
        found = nearest(memory, task("What is the total of the orders in Oslo?", index), index, 1)
        assert found[0][0].entry.id == 2


def test_a_record_is_never_answered_from_itself_or_its_paraphrases(world, tmp_path):
    index = index_of(world)
    with remembered(tmp_path / "m.sqlite", ("How many orders are shipped?", STATUS_COUNT[1], "shop/1/p1")) as memory:
        entry = memory.entries("shop")[0]
        asked = "How many orders are shipped?"
        assert own_entry(entry, {"id": "shop/1/p3", "question": "Count the shipped orders."})  # another phrasing
        assert own_entry(entry, {"id": "shop/1", "question": asked})
        assert own_entry(entry, {"id": "x/9", "question": "Count them.", "paraphrases": [asked]})
        assert not own_entry(entry, {"id": "shop/10/p1", "question": "How many orders are pending?"})
        assert nearest(memory, task("Count the shipped orders.", index, id="shop/1/p2"), index, 3) == []
        assert candidate(memory, task(asked, index, id="shop/1/p1"), index) is None


def test_adaptation_replaces_the_literals_at_the_same_paths(world):
    index = index_of(world)
    old_q, pipeline = CITY_TOTAL[0], CITY_TOTAL[1]
    new_q = "What is the total of the orders in Oslo?"
    adapted = adapt(old_q, witness.find(old_q, index), pipeline, new_q, witness.find(new_q, index))
    assert adapted.complete and adapted.substitutions == [{"from": "Lyon", "to": "Oslo", "path": "city"}]
    assert mql.aggregate(ORDERS, adapted.pipeline) == [{"total": 67}]
    # a number compared in the query is the new question's number, in the same place
    q1, q2 = "Which customers spent more than 20?", "Which customers spent more than 50?"
    p = [{"$match": {"total": {"$gt": 20}}}, {"$project": {"_id": 0, "customer": 1}}]
    adapted = adapt(q1, witness.find(q1, index), p, q2, witness.find(q2, index))
    assert mql.aggregate(ORDERS, adapted.pipeline) == [{"customer": "Cy"}]


def test_what_cannot_be_carried_over_is_said(world):
    index = index_of(world)
    old_q, pipeline = CITY_TOTAL[0], CITY_TOTAL[1]
    # the new question names no city, but a status: the old filter stays (unmapped), the status is unplaced
    new_q = "What is the total of the orders that are pending?"
    adapted = adapt(old_q, witness.find(old_q, index), pipeline, new_q, witness.find(new_q, index))
    assert adapted.unmapped == ["Lyon"] and "pending" in adapted.unplaced and not adapted.complete


# -- use by the methods ---------------------------------------------------------------------------

def rules_prediction(world, memory, question, **options):
    index = index_of(world)
    context = generate.Context({"shop": index}, memory=memory, **options)
    [out] = generate.run([{"id": "shop/50", "db": "shop", "question": question}], "rules", context)
    return out


def test_rules_records_the_memory_and_offers_its_candidate(world, tmp_path):
    with remembered(tmp_path / "m.sqlite", STATUS_COUNT, CITY_TOTAL) as memory:
        out = rules_prediction(world, memory, "What is the total of the orders in Oslo?", candidates=2)
        prediction = out["prediction"]
        assert prediction["memory"]["file"] == "m.sqlite" and prediction["memory"]["entries"] == [2]
        offered = [c for c in [prediction, *out["candidates"]] if c.get("reading", "").startswith("memory")
                   or prediction["memory"]["chosen"]]
        assert offered, "the memory candidate is the prediction or one of the candidates"
        remembered_one = prediction if prediction["memory"]["chosen"] else offered[0]
        assert 0 < remembered_one["confidence"] < 1
        assert mql.aggregate(ORDERS, remembered_one["pipeline"]) == [{"total": 67}]
    out = rules_prediction(world, None, "What is the total of the orders in Oslo?")
    assert "memory" not in out["prediction"]  # no memory, nothing recorded


def client(fake) -> ChatClient:
    return ChatClient(ModelConfig(model="fake-model", base_url=fake.url, backoff=0.001, max_retries=1))


def test_model_methods_show_the_nearest_entries_as_examples(fake_llm, world, tmp_path):
    index = index_of(world)
    fake_llm.responder = lambda body: reply(json.dumps({"collection": "orders", "pipeline": [{"$count": "n"}]}))
    with remembered(tmp_path / "m.sqlite", STATUS_COUNT, CITY_TOTAL) as memory:
        context = generate.Context({"shop": index}, model=client(fake_llm), memory=memory, shots=1)
        [out] = generate.run([{"id": "shop/9", "db": "shop", "question": "How many orders are pending?"}], "card",
                             context)
    messages = fake_llm.bodies[0]["messages"]
    assert messages[1] == {"role": "user", "content": f"Question: {STATUS_COUNT[0]}"}
    assert json.loads(messages[2]["content"]) == {"collection": "orders", "pipeline": STATUS_COUNT[1]}
    assert messages[-1]["role"] == "user" and "How many orders are pending?" in messages[-1]["content"]
    assert out["prediction"]["memory"] == {"file": "m.sqlite", "entries": [1], "shots": 1}
    assert "verified_examples" in out["prediction"]["disclosure"]


def test_a_repaired_round_leaves_a_lesson_that_later_prompts_show(fake_llm, tmp_path):
    backend = EmbeddedBackend(WORLDS)
    indexes = {doc["db"]: doc for doc in grounding.build(backend, ["clinic"])}
    tasks = [orjson.loads(line) for line in (ROOT / "fixtures" / "tasks" / "clinic.jsonl").read_bytes().splitlines()]
    gold = tasks[0]["gold"]
    wrong = {"collection": gold["collection"],
             "pipeline": [{"$match": {"values_by_year.2019.HBA1C.cnt": {"$gt": 0}}}, *gold["pipeline"][1:]]}
    fake_llm.responder = lambda body: reply(json.dumps(gold if "It has these problems" in body["messages"][-1]
                                                       ["content"] else wrong))
    with Memory(tmp_path / "m.sqlite") as memory:
        context = generate.Context(indexes, backend=backend, model=client(fake_llm), memory=memory, shots=2,
                                   sag=sag.Settings(attempts=1))
        first = {"id": "clinic/1", "db": "clinic", "question": tasks[0]["question"]}
        [out] = generate.run([first], "sag", context)
        assert out["repair"]["lessons"][0]["query"] == gold
        [lesson] = memory.entries("clinic")
        assert lesson.kind == "lesson" and "cnt" in lesson.note and out["prediction"]["memory"]["learned"] == [1]
        fake_llm.requests.clear()
        second = {"id": "clinic/2", "db": "clinic", "question": "How many lab histories have an HBA1C reading in 2020?"}
        [again] = generate.run([second], "sag", context)
    shown = [m["content"] for m in fake_llm.bodies[0]["messages"] if m["role"] == "user"]
    assert any(text.startswith("Lessons from earlier repairs") and "cnt" in text for text in shown)
    assert again["prediction"]["memory"]["lessons"] == 1


def test_ask_confirm_remembers_the_answer(runner, tmp_path):
    path = tmp_path / "m.sqlite"
    question = "How many patients are allergic to penicillin?"
    args = ["ask", "--data", str(WORLDS), "--db", "clinic", "--no-cache", question]
    assert runner.invoke(cli, [*args, "--confirm"]).exit_code == 2  # --confirm needs --memory
    result = runner.invoke(cli, [*args, "--memory", str(path), "--confirm"])
    assert result.exit_code == 0, result.output
    assert "remembered as verified entry 1" in result.stderr
    with Memory(path) as memory:
        [entry] = memory.entries("clinic")
        assert entry.verified_by == "user" and entry.question == question


def generate_line(tmp_path, *extra) -> str:
    """The `nlq generate` command `make paper` would run for the sag arm (a dry run)."""
    dry = subprocess.run(["make", "-n", f"OUT={tmp_path}", f"{tmp_path}/runs/sag.pred.jsonl", *extra], cwd=ROOT,
                         capture_output=True, text=True, env={**os.environ, "NLQ_MEMORY": str(tmp_path / "leak")})
    return next(line for line in dry.stdout.splitlines() if " generate " in line)


def test_make_paper_runs_without_a_memory_unless_asked(tmp_path):
    assert "NLQ_MEMORY='' " in generate_line(tmp_path)  # the user's NLQ_MEMORY is not passed on
    assert f"NLQ_MEMORY='{tmp_path}/m.sqlite' " in generate_line(tmp_path, f"MEMORY={tmp_path}/m.sqlite")


# -- fields re-bound ------------------------------------------------------------------------------

STUDENTS = [
    {"_id": 1, "name": "Ann", "age": 20, "weight": 61.5, "city": "Lyon", "major": "math"},
    {"_id": 2, "name": "Bo", "age": 23, "weight": 80, "city": "Oslo", "major": "art"},
    {"_id": 3, "name": "Cy", "age": 31, "weight": 72, "city": "Oslo", "major": "math"},
]
AVERAGE_AGE = [{"$group": {"_id": None, "avg": {"$avg": "$age"}}}]


@pytest.fixture
def school(tmp_path):
    (tmp_path / "school").mkdir()
    (tmp_path / "school" / "students.json").write_bytes(orjson.dumps(STUDENTS))
    return next(grounding.build(EmbeddedBackend(tmp_path), ["school"]))


def adapted_with_fields(index, old_q, pipeline, new_q):
    from nlq.memory.rebind import named_fields
    from nlq.methods.rules.schema import prepare

    schema = prepare(index)
    old_w, new_w = witness.find(old_q, index), witness.find(new_q, index)
    fields = (named_fields(old_q, old_w, index, schema, "students", pipeline),
              named_fields(new_q, new_w, index, schema, "students", pipeline))
    return adapt(old_q, old_w, pipeline, new_q, new_w, fields=fields)


def test_a_field_the_new_question_names_is_re_bound_and_reported(school):
    adapted = adapted_with_fields(school, "What is the average age of students?", AVERAGE_AGE,
                                  "What is the average weight of students?")
    assert adapted.rebound == [{"from": "age", "to": "weight"}] and adapted.complete
    assert mql.aggregate(STUDENTS, adapted.pipeline) == [{"_id": None, "avg": pytest.approx(71.1666, abs=1e-3)}]
    # with a literal replaced too, and a group key and a sort key re-bound
    pipeline = [{"$match": {"city": "Lyon"}}, {"$group": {"_id": "$major", "avg": {"$avg": "$age"}}},
                {"$sort": {"_id": 1}}]
    adapted = adapted_with_fields(school, "What is the average age of students in Lyon for each major?", pipeline,
                                  "What is the average weight of students in Oslo for each major?")
    assert adapted.rebound == [{"from": "age", "to": "weight"}]
    assert adapted.substitutions == [{"from": "Lyon", "to": "Oslo", "path": "city"}]
    assert mql.aggregate(STUDENTS, adapted.pipeline) == [{"_id": "art", "avg": 80}, {"_id": "math", "avg": 72}]
    sorted_by = adapted_with_fields(school, "Show the name of students sorted by age.",
                                    [{"$sort": {"age": 1}}, {"$project": {"_id": 0, "name": 1}}],
                                    "Show the name of students sorted by weight.")
    assert sorted_by.pipeline == [{"$sort": {"weight": 1}}, {"$project": {"_id": 0, "name": 1}}]


def test_a_field_that_does_not_exist_is_not_invented(school):
    adapted = adapted_with_fields(school, "What is the average age of students?", AVERAGE_AGE,
                                  "What is the average height of students?")
    assert adapted.rebound == [] and adapted.pipeline == AVERAGE_AGE


def test_a_remembered_field_with_no_counterpart_is_said_and_lowers_the_confidence(school):
    # 'major' holds text: it cannot stand where the query averages a number
    adapted = adapted_with_fields(school, "What is the average age of students?", AVERAGE_AGE,
                                  "What is the average major of students?")
    assert adapted.rebound == [] and adapted.unrebound == ["age"] and adapted.unread == ["major"]
    assert not adapted.complete
    from nlq.memory.recall import Recalled, calibration, features, probability

    recalled = Recalled(Entry(db="school", question="q", collection="students", pipeline=AVERAGE_AGE,
                              verified_by="user"), 0.8, 0.8, 1.0)
    clean = adapted_with_fields(school, "What is the average age of students?", AVERAGE_AGE,
                                "What is the average weight of students?")
    assert "unrebound" in calibration()["features"]
    assert probability(features(recalled, adapted, 0.5, True)) < probability(features(recalled, clean, 0.5, True))
