"""The LLM methods against the scripted fake server: what each request carries
(channel purity), decoding, typed failures, the CLI end to end, cache replay."""

from __future__ import annotations

import json
import re

import orjson
import pytest

from nlq import generate
from nlq import io as nlq_io
from nlq import index as grounding
from nlq.backends import EmbeddedBackend
from nlq.llm import ChatClient, ModelConfig
from nlq.llm.decode import REPAIR_MESSAGE
from nlq.methods import prompting
from tests.conftest import ROOT, WORLDS
from tests.fakellm import reply, status

KEY = "sk-methods-5ecret-0123456789"
TASKS = ROOT / "fixtures" / "tasks"


@pytest.fixture(scope="module")
def backend():
    return EmbeddedBackend(WORLDS)


@pytest.fixture(scope="module")
def indexes(backend):
    return {doc["db"]: doc for doc in grounding.build(backend)}


def tasks(db: str, n: int = 3) -> list[dict]:
    lines = (TASKS / f"{db}.jsonl").read_bytes().splitlines()
    return [orjson.loads(line) for line in lines[:n]]


def client(fake, **overrides) -> ChatClient:
    settings = {"model": "fake-model", "base_url": fake.url, "api_key": KEY, "backoff": 0.001, "max_retries": 2}
    settings.update(overrides)
    return ChatClient(ModelConfig(**settings))


def run(method, records, fake, indexes, backend=None, **overrides):
    context = generate.Context(indexes, backend=backend, model=client(fake, **overrides))
    return list(generate.run(iter(records), method, context))


def answer_first_collection(body) -> dict:
    """A responder: a valid answer on the first collection the response schema allows."""
    names = body["response_format"]["json_schema"]["schema"]["properties"]["collection"].get("enum") or ["x"]
    return reply(json.dumps({"collection": names[0], "pipeline": [{"$limit": 1}]}))


def prompt_text(body) -> str:
    return "\n".join(m["content"] for m in body["messages"])


def stored_strings(backend, db: str) -> set[str]:
    """Every string value stored in a database's documents (walking objects and arrays)."""
    found: set[str] = set()

    def walk(value):
        if isinstance(value, dict):
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)
        elif isinstance(value, str):
            found.add(value)

    for name in backend.collections(db):
        for document in backend.aggregate(db, name, []):
            walk(document)
    return found


def names_of(index: dict) -> set[str]:
    """Collection names and every field-name segment of the database's lattice."""
    names = set(index["collections"])
    for entry in index["lattice"]:
        names.update(s for s in re.split(r"[.\[\]]+", entry["path"]) if s and s != "<*>")
    return names


def mentions(text: str, word: str) -> bool:
    return re.search(rf"(?<![\w$]){re.escape(word)}(?!\w)", text) is not None


# -- card ----------------------------------------------------------------------


def test_card_sends_the_card_the_witnesses_and_the_decoder_instructions(fake_llm, indexes):
    fake_llm.responder = answer_first_collection
    [record] = tasks("clinic", 1)
    [out] = run("card", [record], fake_llm, indexes)
    prediction = out["prediction"]
    [body] = fake_llm.bodies
    system, user = body["messages"]
    assert system["role"] == "system" and user["role"] == "user"
    assert prompting.card_text(indexes["clinic"]) in user["content"]
    assert record["question"] in user["content"]
    assert "HBA1C" in prompting.witness_text(out["witnesses"]) and prompting.witness_text(out["witnesses"]) in \
        user["content"]
    for rule in ("does not exist", "embedded", "verbatim", "_id", "$limit", "tie-breaks", "boolean"):
        assert rule in system["content"]
    schema = body["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["collection"]["enum"] == sorted(indexes["clinic"]["collections"])
    assert prediction["collection"] == "lab_histories" and prediction["pipeline"] == [{"$limit": 1}]
    assert prediction["disclosure"] == ["path_card", "question", "value_witnesses"]
    assert prediction["prompt"] == prompting.load("card").ref and len(prediction["prompt"]["sha256"]) == 64
    assert prediction["usage"]["model_calls"] == 1 and prediction["method"] == "card"
    for hidden in ("gold", "labels"):
        assert hidden not in json.dumps(body)
    assert json.dumps(record["gold"]["pipeline"]) not in json.dumps(body)


def test_card_bad_replies_are_typed_failures_and_the_stream_goes_on(fake_llm, indexes):
    records = tasks("racing", 3)
    fake_llm.enqueue("I don't know", "nope", "still nothing",
                     json.dumps({"collection": "pit_crews", "pipeline": []}), "x", "y")
    fake_llm.responder = answer_first_collection
    out = run("card", records, fake_llm, indexes, concurrency=1)
    assert [r["id"] for r in out] == [r["id"] for r in records]
    assert out[0]["failure"]["type"] == "model_bad_output" and out[0]["prediction"] is None
    assert out[0]["failure"]["usage"]["model_calls"] == 3
    assert "unknown collection 'pit_crews'" in fake_llm.bodies[4]["messages"][-1]["content"]
    assert out[1]["failure"]["type"] == "model_bad_output"
    assert out[2]["prediction"]["pipeline"] == [{"$limit": 1}]


def test_model_faults_become_failures(fake_llm, indexes):
    fake_llm.enqueue(status(401, "Incorrect API key"))
    [out] = run("card", tasks("clinic", 1), fake_llm, indexes)
    assert out["failure"]["type"] == "model_auth" and KEY.encode() not in nlq_io.dumps(out)


def test_prompts_are_package_data_with_a_stable_identity():
    for name in ("card", "nlq-only", "schema", "sampled", "data-rich", "sql-pivot", "react"):
        prompt = prompting.load(name)
        assert prompt.id == name and re.fullmatch(r"[0-9a-f]{64}", prompt.sha256)
        slots = set(re.findall(r"\{\{\s*([a-z_]+)\s*\}\}", "".join(prompt.sections.values())))
        filled = {name: f"<{name}>" for name in slots}
        for section in prompt.sections:
            assert "{{" not in prompt.render(section, **filled)
    assert "package_data" in (ROOT / "setup.cfg").read_text() and "prompts/*.txt" in (ROOT / "setup.cfg").read_text()


# -- channel purity of the one-call baselines -----------------------------------


def test_nlq_only_sends_nothing_of_the_database(fake_llm, indexes):
    fake_llm.responder = lambda body: reply(json.dumps({"collection": "heroes", "pipeline": []}))
    for db in ("clinic", "racing", "club"):
        out = run("nlq-only", tasks(db, 4), fake_llm, indexes, concurrency=1)
        assert all(r["failure"]["type"] == "model_bad_output" for r in out)  # 'heroes' is nowhere
    records = [t for db in ("clinic", "racing", "club") for t in tasks(db, 4)]
    assert len(fake_llm.bodies) == 3 * len(records)
    for body, record in zip(fake_llm.bodies, [r for r in records for _ in range(3)]):
        text = prompt_text(body)
        assert record["question"] in text
        db_names = names_of(indexes[record["db"]])
        leaked = {n for n in db_names if len(n) > 2 and mentions(text, n) and not mentions(record["question"], n)
                  and not mentions(prompting.load("nlq-only").render("system") + REPAIR_MESSAGE, n)}
        assert not leaked, f"nlq-only leaked {leaked}"
        assert "enum" not in json.dumps(body["response_format"])
    repair = fake_llm.bodies[1]["messages"][-1]["content"]
    assert "does not exist" in repair and "lab_histories" not in repair


def test_nlq_only_requests_depend_on_the_question_alone(fake_llm, indexes):
    fake_llm.responder = answer_first_collection
    question = "How many items are there?"
    run("nlq-only", [{"db": "clinic", "question": question}, {"db": "racing", "question": question}], fake_llm,
        indexes, concurrency=1)
    assert len(fake_llm.bodies) == 6 and fake_llm.bodies[:3] == fake_llm.bodies[3:]


def test_schema_sends_names_and_no_stored_value(fake_llm, indexes, backend):
    fake_llm.responder = answer_first_collection
    for db in ("clinic", "racing", "club"):
        out = run("schema", tasks(db, 2), fake_llm, indexes, concurrency=1)
        assert all(r["prediction"]["disclosure"] == ["collection_names", "field_names", "question"] for r in out)
        body = fake_llm.bodies[-1]
        text = prompt_text(body)
        assert all(name in text for name in indexes[db]["collections"])
        assert "values_by_year" in text or db != "clinic"
        names = names_of(indexes[db])
        question = tasks(db, 2)[-1]["question"]
        values = {v for v in stored_strings(backend, db)
                  if len(v) > 3 and v not in names and not mentions(question, v)
                  and not mentions(prompting.load("schema").render("system"), v)}
        leaked = {v for v in values if mentions(text, v)}
        assert not leaked, f"schema leaked stored values {sorted(leaked)[:5]}"
    assert "<*>" not in prompting.field_names_text(indexes["clinic"])


@pytest.mark.parametrize("method, n", [("sampled", 3), ("data-rich", 8)])
def test_sampled_methods_send_the_seeded_sample(fake_llm, indexes, backend, method, n):
    fake_llm.responder = answer_first_collection
    out = run(method, tasks("clinic", 2), fake_llm, indexes, backend=backend, concurrency=1)
    assert out[0]["prediction"]["disclosure"] == ["collection_names", "question", "sample_documents"]
    text = prompt_text(fake_llm.bodies[0])
    for name in indexes["clinic"]["collections"]:
        for document in backend.sample("clinic", name, n, seed=prompting.SAMPLE_SEED):
            assert nlq_io.dumps(document).decode()[:200] in text
    assert prompt_text(fake_llm.bodies[0]).split("Question:")[0] == prompt_text(fake_llm.bodies[1]).split(
        "Question:")[0]
    assert "path card" not in text.lower() and "witness" not in text.lower()


def test_sampled_needs_a_backend(fake_llm, indexes):
    [out] = run("sampled", tasks("clinic", 1), fake_llm, indexes)
    assert out["failure"]["type"] == "backend_error" and "--data" in out["failure"]["message"]


def test_sql_pivot_sketches_then_translates(fake_llm, indexes, backend):
    sketch = "SELECT COUNT(*) FROM lab_histories WHERE year = 2019"
    fake_llm.enqueue(sketch, json.dumps({"collection": "lab_histories", "pipeline": [{"$count": "n"}]}))
    [out] = run("sql-pivot", tasks("clinic", 1), fake_llm, indexes, backend=backend)
    first, second = fake_llm.bodies
    assert "response_format" not in first and "SQL" in first["messages"][-1]["content"]
    assert second["messages"][2] == {"role": "assistant", "content": sketch}
    assert "translate" in second["messages"][3]["content"] and second["response_format"]["type"] == "json_schema"
    prediction = out["prediction"]
    assert prediction["sql"] == sketch and prediction["usage"]["model_calls"] == 2
    assert prediction["prompt"] == prompting.load("sql-pivot").ref


# -- react ----------------------------------------------------------------------


def act(action, collection, pipeline, thought="t"):
    return json.dumps({"thought": thought, "action": action, "collection": collection, "pipeline": pipeline})


def test_react_loops_with_observations_and_submits(fake_llm, indexes, backend):
    fake_llm.enqueue(act("execute", "patients", [{"$project": {"_id": 0, "patient_id": 1}}]),
                     act("execute", "patients", [{"$bogus": 1}]),
                     act("execute", "wards", []),
                     act("submit", "patients", [{"$count": "n"}]))
    [out] = run("react", tasks("clinic", 1), fake_llm, indexes, backend=backend)
    prediction = out["prediction"]
    assert prediction["pipeline"] == [{"$count": "n"}] and prediction["steps"] == 4
    assert prediction["disclosure"] == ["collection_names", "execution_observations", "question"]
    first = fake_llm.bodies[0]
    assert first["response_format"]["json_schema"]["schema"]["properties"]["action"]["enum"] == ["execute", "submit"]
    assert "path card" not in prompt_text(first).lower() and "value_by" not in prompt_text(first)
    second = fake_llm.bodies[1]["messages"][-1]["content"]
    assert second.startswith("Observation: rows=900; first 5: {") and len(second) <= 2000 + len("Observation: ")
    assert fake_llm.bodies[2]["messages"][-1]["content"].startswith("Observation: ERROR: ")
    assert "no collection 'wards'" in fake_llm.bodies[3]["messages"][-1]["content"]
    assert [step["action"] for step in prediction["trace"]] == ["execute"] * 3 + ["submit"]
    assert prediction["usage"]["model_calls"] == 4


def test_react_observations_are_capped(fake_llm, indexes, backend):
    from nlq.methods.react import observe

    rows = [{"text": "x" * 1000} for _ in range(10)]
    assert len(observe(rows)) == 2000 and observe(rows).startswith("rows=10; first 5: ")
    assert observe([]) == "rows=0; first 5: (none)"


def test_react_budget_exhaustion_is_typed(fake_llm, indexes, backend):
    fake_llm.responder = lambda body: reply(act("execute", "patients", [{"$limit": 1}]))
    context = generate.Context(indexes, backend=backend, model=client(fake_llm), max_steps=5)
    [out] = list(generate.run(iter(tasks("clinic", 1)), "react", context))
    assert out["failure"]["type"] == "budget_exhausted" and "within 5 model turns" in out["failure"]["message"]
    assert out["failure"]["usage"]["model_calls"] == 5 and len(fake_llm.requests) == 5


def test_react_garbled_last_turns_are_budget_exhausted(fake_llm, indexes, backend):
    fake_llm.enqueue(act("execute", "patients", [{"$limit": 1}]), act("execute", "patients", [{"$limit": 1}]),
                     "garbled", "still garbled", "never asked")
    context = generate.Context(indexes, backend=backend, model=client(fake_llm), max_steps=4)
    [out] = list(generate.run(iter(tasks("clinic", 1)), "react", context))
    assert out["failure"]["type"] == "budget_exhausted", out["failure"]
    assert "within 4 model turns" in out["failure"]["message"] and len(fake_llm.requests) == 4


def test_react_bad_turns_are_repaired_within_the_budget(fake_llm, indexes, backend):
    fake_llm.enqueue("thinking...", act("submit", "patients", []))
    [out] = run("react", tasks("clinic", 1), fake_llm, indexes, backend=backend)
    assert out["prediction"]["steps"] == 2
    assert "not valid JSON" in fake_llm.bodies[1]["messages"][-1]["content"]


# -- the command line -----------------------------------------------------------


def cli_env(fake, tmp_path) -> dict:
    return {"NLQ_BASE_URL": fake.url, "NLQ_API_KEY": KEY, "NLQ_MODEL": "fake-model",
            "XDG_CACHE_HOME": str(tmp_path / "xdg")}


def strip_timing(output: str) -> list[dict]:
    records = [json.loads(line) for line in output.splitlines()]
    for record in records:
        for part in (record.get("prediction") or {}, record.get("failure") or {}):
            part.pop("ms", None)
            for varying in ("cache_hits", "http_attempts"):  # what this run spent, not the answer
                part.get("usage", {}).pop(varying, None)
    return records


@pytest.mark.parametrize("method", ["card", "nlq-only", "schema", "sampled", "data-rich", "sql-pivot", "react"])
def test_every_method_runs_from_the_command_line(runner, fake_llm, tmp_path, method, clinic_index_file):
    from nlq.commands import cli

    def responder(body):
        if "response_format" not in body:
            return reply("SELECT 1")
        properties = body["response_format"]["json_schema"]["schema"]["properties"]
        names = properties["collection"].get("enum") or ["patients"]
        if "action" in properties:
            return reply(act("submit", names[0], [{"$limit": 1}]))
        return reply(json.dumps({"collection": names[-1], "pipeline": [{"$limit": 1}]}))

    fake_llm.responder = responder
    task_file = tmp_path / "tasks.jsonl"
    task_file.write_bytes(b"".join(line + b"\n" for line in (TASKS / "clinic.jsonl").read_bytes().splitlines()[:3]))
    args = ["generate", "-m", method, "--index", str(clinic_index_file), "--data", str(WORLDS),
            "--log", str(tmp_path / "log.jsonl"), str(task_file)]
    first = runner.invoke(cli, args, env=cli_env(fake_llm, tmp_path))
    assert first.exit_code == 0, first.output
    records = [json.loads(line) for line in first.stdout.splitlines()]
    assert len(records) == 3 and all(r["prediction"]["method"] == method for r in records), first.output
    assert all(r["prediction"]["usage"]["cache_hits"] == 0 for r in records)
    calls = len(fake_llm.requests)
    again = runner.invoke(cli, args, env=cli_env(fake_llm, tmp_path))
    assert len(fake_llm.requests) == calls, "a rerun must be answered from the cache"
    assert strip_timing(again.stdout) == strip_timing(first.stdout)
    offline = [runner.invoke(cli, args + ["--offline"], env={**cli_env(fake_llm, tmp_path), "NLQ_BASE_URL": ""})
               for _ in range(2)]
    assert strip_timing(offline[0].stdout) == strip_timing(first.stdout)
    # Two replays differ only in the run's own timing, prediction.ms.
    assert [re.sub(r',"ms":[0-9.e-]+}', "}", line) for line in offline[0].stdout.splitlines()] == \
        [re.sub(r',"ms":[0-9.e-]+}', "}", line) for line in offline[1].stdout.splitlines()]
    for text in (first.output, again.output, (tmp_path / "log.jsonl").read_text(),
                 (tmp_path / "xdg" / "nlq" / "llm.sqlite").read_bytes().decode("latin-1")):
        assert KEY not in text


def test_a_model_method_without_a_model_exits_2(runner, clinic_index_file, tmp_path):
    from nlq.commands import cli

    env = {"NLQ_BASE_URL": "", "NLQ_MODEL": "", "NLQ_API_KEY": ""}
    result = runner.invoke(cli, ["generate", "-m", "card", "--index", str(clinic_index_file)], input="", env=env)
    assert result.exit_code == 2
    assert all(name in result.output for name in ("NLQ_BASE_URL", "NLQ_API_KEY", "NLQ_MODEL"))


def test_offline_cache_miss_is_a_typed_failure(runner, clinic_index_file, tmp_path):
    from nlq.commands import cli

    env = {"NLQ_MODEL": "m", "NLQ_BASE_URL": "", "XDG_CACHE_HOME": str(tmp_path)}
    task = json.dumps({"db": "clinic", "question": "How many patients?"})
    result = runner.invoke(cli, ["generate", "-m", "card", "--index", str(clinic_index_file), "--offline"],
                           input=task + "\n", env=env)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["failure"]["type"] == "cache_miss"
