"""`nlq ask`: one question to rows, with the cached grounding index and --explain."""

from __future__ import annotations

import os
import warnings

import orjson
import pytest

from nlq import ask
from nlq.backends import EmbeddedBackend
from nlq.commands import cli
from nlq.mql.mongosh import parse_query
from tests.conftest import WORLDS

PENICILLIN = "How many patients are allergic to penicillin?"
CHAMPIONS = "Which drivers are former junior champions?"


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A private user cache folder (XDG_CACHE_HOME) for the test."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache" / "nlq" / "index"


@pytest.fixture
def shop(tmp_path):
    """A tiny --data folder: database `shop`, collection `items`."""
    folder = tmp_path / "data" / "shop"
    folder.mkdir(parents=True)
    docs = [{"_id": i, "name": f"item {i}", "colour": "red" if i % 3 == 0 else "blue", "price": i * 10}
            for i in range(1, 13)]
    (folder / "items.json").write_bytes(orjson.dumps(docs))
    return tmp_path / "data"


def rows_of(output: str) -> list[dict]:
    return [orjson.loads(line) for line in output.splitlines()]


def test_ask_prints_the_rows_the_equivalent_query_returns(runner, cache):
    result = runner.invoke(cli, ["ask", "--data", str(WORLDS), "--db", "clinic", PENICILLIN])
    assert result.exit_code == 0, result.output
    direct = runner.invoke(cli, ["exec", "--data", str(WORLDS), "--db", "clinic",
                                 'db.patients.countDocuments({allergies: "penicillin"})'])
    assert rows_of(result.stdout) == rows_of(direct.stdout) and rows_of(result.stdout)[0]["count"] > 0


def test_the_index_is_cached_by_content_and_rebuilt_when_the_data_changes(shop, cache):
    backend = EmbeddedBackend(shop)
    question = "How many items are red?"
    first = ask.run(question, backend, "shop")
    assert first["explain"]["index"]["source"] == "built"
    assert first["execution"]["rows"] == [{"count": 4}]
    cached = list(cache.iterdir())
    assert len(cached) == 1 and cached[0].name.startswith("shop-")
    again = ask.run(question, EmbeddedBackend(shop), "shop")
    assert again["explain"]["index"] == {"source": "cache", "path": str(cached[0])}
    assert again["prediction"]["pipeline"] == first["prediction"]["pipeline"]
    # same files, same key; one more document, a new key and a new build
    docs = orjson.loads((shop / "shop" / "items.json").read_bytes()) + [{"_id": 13, "colour": "red"}]
    (shop / "shop" / "items.json").write_bytes(orjson.dumps(docs))
    changed = ask.run(question, EmbeddedBackend(shop), "shop")
    assert changed["explain"]["index"]["source"] == "built"
    assert changed["execution"]["rows"] == [{"count": 5}]
    assert len(list(cache.iterdir())) == 2


def test_the_data_folder_is_never_written(shop, cache):
    before = sorted(p.relative_to(shop) for p in shop.rglob("*"))
    ask.run("How many items are there?", EmbeddedBackend(shop), "shop")
    assert sorted(p.relative_to(shop) for p in shop.rglob("*")) == before


def test_no_cache_builds_and_keeps_nothing(shop, cache):
    record = ask.run("How many items are there?", EmbeddedBackend(shop), "shop", cache=False)
    assert record["explain"]["index"] == {"source": "built_uncached", "path": None}
    assert not cache.exists()


def test_an_unwritable_cache_is_a_warning_not_a_failure(shop, tmp_path, monkeypatch):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder would go")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    told = []
    record = ask.run("How many items are there?", EmbeddedBackend(shop), "shop", warn=told.append)
    assert record["execution"]["rows"] == [{"count": 12}]
    assert record["explain"]["index"]["source"] == "built_uncached"
    assert len(told) == 1 and "cannot write the index cache" in told[0]


def test_a_truncated_cache_file_is_rebuilt(shop, cache):
    first = ask.run("How many items are there?", EmbeddedBackend(shop), "shop")
    path = first["explain"]["index"]["path"]
    with open(path, "r+b") as f:
        f.truncate(100)
    record = ask.run("How many items are there?", EmbeddedBackend(shop), "shop")
    assert record["explain"]["index"]["source"] == "built"
    assert record["execution"]["rows"] == [{"count": 12}]


def test_a_mongodb_database_is_sampled_afresh(cache):
    mongomock_ng = pytest.importorskip("mongomock_ng")
    from nlq.backends.mongo import MongoBackend

    client = mongomock_ng.MongoClient(tz_aware=True)
    client["shop"]["items"].insert_many([{"_id": i, "colour": "red" if i < 3 else "blue"} for i in range(10)])
    backend = MongoBackend("mongodb://localhost/", client_factory=lambda uri: client)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        record = ask.run("How many items are red?", backend, "shop")
    assert record["explain"]["index"]["source"] == "built_uncached"
    assert record["execution"]["rows"] == [{"count": 3}]
    assert not cache.exists()


def test_explain_shows_witnesses_card_lines_pipeline_confidence_and_timings(runner, cache):
    result = runner.invoke(cli, ["ask", "--data", str(WORLDS), "--db", "racing", "--explain", CHAMPIONS])
    assert result.exit_code == 0, result.output
    text = result.stdout
    for heading in ("witnesses (1):", "card lines used:", "pipeline (rules, confidence 0.", "timings: index",
                    "rows ("):
        assert heading in text, heading
    assert '"junior champions" (ngram, hard): value of drivers.profile[].k "junior_champion"' in text
    assert "    profile[].k: string" in text  # the card line of the field the pipeline filters on
    # the pipeline block pastes into mongosh: `use racing`, then a query that parses to the same pipeline
    block = text[text.index("  use racing\n"):text.index("\n\ntimings")]
    lines = [line[2:] for line in block.splitlines()]
    assert lines[0] == "use racing"
    record = orjson.loads(runner.invoke(cli, ["ask", "--data", str(WORLDS), "--db", "racing", "--json",
                                              CHAMPIONS]).stdout)
    assert parse_query("\n".join(lines[1:])).pipeline == parse_query(record["prediction"]).pipeline
    shown = [orjson.loads(line) for line in text.split("rows (", 1)[1].splitlines()[1:]]
    assert shown == record["execution"]["rows"] and len(shown) == record["execution"]["rows_count"]


def test_json_is_the_full_record(runner, cache):
    result = runner.invoke(cli, ["ask", "--data", str(WORLDS), "--db", "clinic", "--json", PENICILLIN])
    assert result.exit_code == 0, result.output
    record, = rows_of(result.stdout)
    assert record["db"] == "clinic" and record["question"] == PENICILLIN
    assert record["witnesses"] and record["prediction"]["method"] == "rules"
    assert record["execution"]["rows_count"] == len(record["execution"]["rows"]) == 1
    assert set(record["explain"]) == {"index", "card_lines", "mongosh", "timings", "probed"}
    assert set(record["explain"]["timings"]) == {"index", "witness", "generate", "load", "exec", "total"}


@pytest.mark.parametrize("args, reason", [
    (["--min-confidence", "1", PENICILLIN], "no answer (generate: abstained): confidence"),
    (["  "], "no answer (witness: missing_question)"),
])
def test_no_answer_exits_1_with_the_reason(runner, cache, args, reason):
    result = runner.invoke(cli, ["ask", "--data", str(WORLDS), "--db", "clinic"] + args)
    assert result.exit_code == 1
    assert reason in result.stderr and result.stdout == ""


def test_a_pipeline_that_fails_to_run_is_no_answer(shop, cache, monkeypatch):
    from nlq.errors import QueryTimeout

    backend = EmbeddedBackend(shop)

    def slow(*args, **kwargs):
        raise QueryTimeout("query exceeded the time limit of 0.01 s")

    monkeypatch.setattr(backend, "aggregate", slow)
    record = ask.run("How many items are there?", backend, "shop")
    assert record["failure"] == record["execution"]["error"]
    assert record["failure"]["type"] == "timeout" and record["failure"]["stage"] == "exec"
    with pytest.raises(Exception, match="no answer \\(exec: timeout\\)"):
        ask.check_answered(record)


def test_an_unknown_database_exits_1(runner, cache):
    result = runner.invoke(cli, ["ask", "--data", str(WORLDS), "--db", "nope", PENICILLIN])
    assert result.exit_code == 1 and "no database 'nope'" in result.stderr


def test_the_cache_lives_in_the_user_cache_folder(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert ask.cache_root() == tmp_path / "nlq"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert str(ask.cache_root()) == os.path.join(os.path.expanduser("~"), ".cache", "nlq")


def test_the_readme_shows_what_explain_prints(runner, cache):
    """The --explain block of docs/COMMANDS.md is the real output on the fixtures (only timings vary)."""
    import re

    from tests.conftest import ROOT

    readme = (ROOT / "docs" / "COMMANDS.md").read_text()
    block = re.search(r"<!-- ask-explain:begin -->\n```text\n(.*?)```\n<!-- ask-explain:end -->", readme, re.S)
    command = re.search(r'^(nlq ask .*--explain "(.*)")$', readme, re.M)
    assert block and command
    result = runner.invoke(cli, ["ask", "--data", str(WORLDS), "--db", "clinic", "--explain", command.group(2)])
    assert result.exit_code == 0, result.output

    def steady(text: str) -> list[str]:
        return [line if not line.startswith("timings: ") else "timings" for line in text.splitlines()]

    assert steady(result.stdout) == steady(block.group(1)), "docs/COMMANDS.md --explain block is stale"


def test_repair_passes_the_prediction_through_nlq_repair(runner, cache):
    from nlq import repair

    result = runner.invoke(cli, ["ask", "--data", str(WORLDS), "--db", "clinic", "--repair", "--json", PENICILLIN])
    assert result.exit_code == 0, result.output
    record, = rows_of(result.stdout)
    assert record["repair"]["vote_share"] == 1.0 and record["repair"]["attempts"] == 1
    assert record["repair"]["original"]["pipeline"] == record["prediction"]["pipeline"]
    assert "repair" in record["explain"]["timings"]
    # the same stage `nlq repair` runs, on the record `ask` generated
    plain = orjson.loads(runner.invoke(cli, ["ask", "--data", str(WORLDS), "--db", "clinic", "--json",
                                             PENICILLIN]).stdout)
    index, _ = ask.grounding_index(EmbeddedBackend(WORLDS), "clinic")
    again, = repair.run([{k: plain[k] for k in ("db", "question", "witnesses", "prediction")}],
                        EmbeddedBackend(WORLDS), {"clinic": index})
    assert again["prediction"]["pipeline"] == record["prediction"]["pipeline"]
    explained = runner.invoke(cli, ["ask", "--data", str(WORLDS), "--db", "clinic", "--repair", "--explain",
                                    PENICILLIN]).stdout
    assert "repair: 0 gate violation(s) on the selected candidate, vote share 1.00 of 1 candidate(s)" in explained
    assert f"selected: from rules, agreed by rules; confidence {record['repair']['confidence']:.2f}" in explained


# ---------------------------------------------------------------------------
# model methods: the model options of `nlq generate`, against the fake chat server

def model_args(fake, tmp_path) -> list[str]:
    return ["--model", "fake", "--base-url", fake.url, "--cache", str(tmp_path / "llm.sqlite")]


def count_patients(body):
    from tests.fakellm import reply

    return reply(orjson.dumps({"collection": "patients", "pipeline": [
        {"$match": {"allergies": "penicillin"}}, {"$count": "count"}]}).decode())


def test_an_llm_method_answers_through_the_model_options(runner, cache, fake_llm, tmp_path):
    fake_llm.responder = count_patients
    result = runner.invoke(cli, ["ask", "--data", str(WORLDS), "--db", "clinic", "-m", "card", "--json",
                                 *model_args(fake_llm, tmp_path), PENICILLIN])
    assert result.exit_code == 0, result.output
    record, = rows_of(result.stdout)
    direct = runner.invoke(cli, ["exec", "--data", str(WORLDS), "--db", "clinic",
                                 'db.patients.countDocuments({allergies: "penicillin"})'])
    assert record["execution"]["rows"] == rows_of(direct.stdout)
    assert record["prediction"]["method"] == "card" and record["prediction"]["usage"]["model_calls"] == 1
    assert "\nmodel: 1 call(s), " in ask.explain_text(record)
    body, = fake_llm.bodies
    assert body["model"] == "fake" and PENICILLIN in body["messages"][-1]["content"]
    # the reply is cached: the same question again makes no model call
    again = runner.invoke(cli, ["ask", "--data", str(WORLDS), "--db", "clinic", "-m", "card",
                                *model_args(fake_llm, tmp_path), PENICILLIN])
    assert again.exit_code == 0 and rows_of(again.stdout) == rows_of(direct.stdout) and len(fake_llm.bodies) == 1


def test_an_llm_method_with_repair(runner, cache, fake_llm, tmp_path):
    fake_llm.responder = count_patients
    result = runner.invoke(cli, ["ask", "--data", str(WORLDS), "--db", "clinic", "-m", "card", "--repair", "--json",
                                 *model_args(fake_llm, tmp_path), PENICILLIN])
    assert result.exit_code == 0, result.output
    record, = rows_of(result.stdout)
    assert record["repair"]["vote_share"] == 1.0 and record["prediction"]["method"] == "card"
    assert record["execution"]["rows_count"] == 1


def test_repair_with_a_model_runs_the_repair_loop_from_the_prediction(runner, cache, fake_llm, tmp_path):
    from tests.fakellm import reply

    def wrong_then_right(body):  # the first answer reads a path the data does not have
        path = "allergy" if len(fake_llm.bodies) == 1 else "allergies"
        return reply(orjson.dumps({"collection": "patients", "pipeline": [
            {"$match": {path: "penicillin"}}, {"$count": "count"}]}).decode())

    fake_llm.responder = wrong_then_right
    result = runner.invoke(cli, ["ask", "--data", str(WORLDS), "--db", "clinic", "--repair", "--json",
                                 *model_args(fake_llm, tmp_path), "-m", "card", PENICILLIN])
    assert result.exit_code == 0, result.output
    record, = rows_of(result.stdout)
    assert record["repair"]["original"]["pipeline"][0] == {"$match": {"allergy": "penicillin"}}
    assert record["prediction"]["pipeline"][0] == {"$match": {"allergies": "penicillin"}}
    assert record["repair"]["rounds"][0] == 2 and record["repair"]["vote_share"] == 1.0
    assert "allergy" in fake_llm.bodies[1]["messages"][-1]["content"]  # the feedback named the bad path
    direct = runner.invoke(cli, ["exec", "--data", str(WORLDS), "--db", "clinic",
                                 'db.patients.countDocuments({allergies: "penicillin"})'])
    assert record["execution"]["rows"] == rows_of(direct.stdout)


def test_a_model_fault_is_no_answer_with_the_reason(runner, cache, fake_llm, tmp_path):
    from tests.fakellm import status

    fake_llm.responder = lambda body: status(401, "Incorrect API key")
    result = runner.invoke(cli, ["ask", "--data", str(WORLDS), "--db", "clinic", "-m", "card", "--no-cache",
                                 *model_args(fake_llm, tmp_path)[:4], PENICILLIN])
    assert result.exit_code == 1
    assert result.stderr.startswith("nlq: no answer (generate: model_auth)")


def test_an_llm_method_without_a_model_is_a_usage_error(runner, cache, monkeypatch):
    for name in ("NLQ_MODEL", "NLQ_BASE_URL", "NLQ_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    result = runner.invoke(cli, ["ask", "--data", str(WORLDS), "--db", "clinic", "-m", "card", PENICILLIN])
    assert result.exit_code == 2
    assert "--method card needs a model: set NLQ_BASE_URL, NLQ_API_KEY and NLQ_MODEL" in result.stderr


def test_several_methods_answer_and_the_explanation_says_who_agreed(runner, cache, fake_llm, tmp_path):
    fake_llm.responder = count_patients
    result = runner.invoke(cli, ["ask", "--data", str(WORLDS), "--db", "clinic", "-m", "card", "--also", "nlq-only",
                                 "--also", "rules", "--json", *model_args(fake_llm, tmp_path), PENICILLIN])
    assert result.exit_code == 0, result.output
    record, = rows_of(result.stdout)
    assert [c["method"] for c in record["candidates"]] == ["nlq-only", "rules"]
    assert {"card", "nlq-only"} <= set(record["repair"]["agreed"]) and 0 < record["repair"]["confidence"] <= 1
    assert record["repair"]["rounds"] == 0  # LLM-free selection among the methods' answers
    explained = runner.invoke(cli, ["ask", "--data", str(WORLDS), "--db", "clinic", "-m", "card", "--also",
                                    "nlq-only", "--explain", *model_args(fake_llm, tmp_path), PENICILLIN]).stdout
    assert "selected: from card, agreed by card, nlq-only; confidence" in explained


def by_model(wrong_model: str):
    """A responder whose model `wrong_model` counts the wrong field, the others the right one."""
    from tests.fakellm import reply

    def respond(body):
        field = "allergy" if body["model"] == wrong_model else "allergies"
        return reply(orjson.dumps({"collection": "patients", "pipeline": [
            {"$match": {field: "penicillin"}}, {"$count": "count"}]}).decode())
    return respond


def test_several_models_answer_each_its_own_system_and_the_selection_names_who_agreed(runner, cache, fake_llm,
                                                                                     tmp_path):
    fake_llm.responder = by_model("m3")
    args = ["ask", "--data", str(WORLDS), "--db", "clinic", "-m", "card", "--base-url", fake_llm.url,
            "--cache", str(tmp_path / "llm.sqlite"), "--model", "m1", "--model", "m2", "--model", "m3"]
    result = runner.invoke(cli, [*args, "--json", PENICILLIN])
    assert result.exit_code == 0, result.output
    record, = rows_of(result.stdout)
    assert sorted(b["model"] for b in fake_llm.bodies) == ["m1", "m2", "m3"]  # every model was asked
    assert [c["system"] for c in record["candidates"]] == ["card@m2", "card@m3"]
    assert record["repair"]["agreed"] == ["card@m1", "card@m2"]  # m3's empty count lost to the two that agree
    assert record["prediction"]["pipeline"][0] == {"$match": {"allergies": "penicillin"}}
    explained = runner.invoke(cli, [*args, "--explain", PENICILLIN]).stdout
    assert "agreed by card@m1, card@m2; confidence" in explained


def test_several_models_need_an_llm_method_and_distinct_names(runner, cache, fake_llm, tmp_path):
    base = ["ask", "--data", str(WORLDS), "--db", "clinic", "--base-url", fake_llm.url]
    rules = runner.invoke(cli, [*base, "--model", "a", "--model", "b", "--repair", PENICILLIN])
    assert rules.exit_code == 2 and "several --model answer with a method that calls a model" in rules.stderr
    twice = runner.invoke(cli, [*base, "-m", "card", "--model", "a", "--model", "a", PENICILLIN])
    assert twice.exit_code == 2 and "each --model is named once" in twice.stderr
    assert fake_llm.bodies == []

