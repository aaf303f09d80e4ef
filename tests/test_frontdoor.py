"""The front door: the example data installed with nlq (`--data example`, `example:PATH`),
the documented Python API, and model-only options given without a model."""

from __future__ import annotations

import filecmp
from pathlib import Path

import orjson
import pytest

from nlq import examples
from nlq.commands import cli
from nlq.errors import InputError
from tests.conftest import FIXTURES, WORLDS


# ---------------------------------------------------------------- example data

def test_the_shipped_examples_are_the_fixtures():
    """In the source tree nlq/examples/ links to fixtures/; the wheel holds copies (tests/test_install.py)."""
    for kind in ("worlds", "tasks", "predictions"):
        shipped, fixture = examples.ROOT / kind, FIXTURES / kind
        assert shipped.is_dir()
        cmp = filecmp.dircmp(shipped, fixture)
        assert not cmp.left_only and not cmp.right_only and not cmp.diff_files, kind
    assert examples.shipped() == ["worlds", "tasks/clinic.jsonl", "tasks/club.jsonl", "tasks/racing.jsonl",
                                  "predictions/other-system.jsonl"]


@pytest.mark.parametrize("name, expected", [
    ("example", "worlds"), ("example:", "worlds"), ("example:worlds", "worlds"), ("example:worlds/", "worlds"),
    ("example:tasks/clinic.jsonl", "tasks/clinic.jsonl"),
])
def test_example_names_resolve_to_the_shipped_files(name, expected):
    assert Path(examples.resolve(name)) == examples.ROOT / expected


@pytest.mark.parametrize("value", ["examples", "./example", "fixtures/worlds", "my-example:x", "-"])
def test_other_values_are_left_alone(value):
    assert examples.resolve(value) == value


@pytest.mark.parametrize("name", ["example:nope", "example:../fixtures/worlds", "example:tasks/../../setup.py",
                                  "example:tasks"])
def test_an_unknown_example_is_an_error_listing_the_shipped_names(name):
    with pytest.raises(InputError) as info:
        examples.resolve(name)
    assert "nlq ships no example" in info.value.message
    assert "example:tasks/clinic.jsonl" in info.value.hint


def test_data_example_serves_the_three_worlds(runner):
    result = runner.invoke(cli, ["exec", "--data", "example", "--db", "clinic", "db.patients.countDocuments({})"])
    assert result.exit_code == 0, result.output
    assert orjson.loads(result.output) == {"count": 900}
    from nlq import open_backend

    with open_backend(data="example") as backend:
        assert backend.databases() == ["clinic", "club", "racing"]
    with open_backend(uri="file:example") as backend:
        assert backend.collections("racing") == ["drivers", "incidents", "weekends"]


def test_nlq_data_example_from_the_environment(runner, monkeypatch):
    monkeypatch.setenv("NLQ_DATA", "example")
    result = runner.invoke(cli, ["exec", "--db", "club", "db.members.countDocuments({})"])
    assert result.exit_code == 0, result.output
    assert orjson.loads(result.output) == {"count": 700}


def test_example_files_are_read_as_inputs(runner):
    result = runner.invoke(cli, ["exec", "--data", "example", "--tasks", "example:tasks/racing.jsonl"])
    assert result.exit_code == 0, result.output
    records = [orjson.loads(line) for line in result.output.splitlines()]
    tasks = [orjson.loads(line) for line in (FIXTURES / "tasks" / "racing.jsonl").read_bytes().splitlines()]
    assert [r["id"] for r in records] == [t["id"] for t in tasks]
    assert all(r["execution"]["error"] is None for r in records)


def test_an_unknown_example_file_exits_1_with_the_names(runner):
    result = runner.invoke(cli, ["exec", "--data", "example", "--tasks", "example:tasks/shop.jsonl"])
    assert result.exit_code == 1
    assert "nlq ships no example 'tasks/shop.jsonl'" in result.output
    assert "hint: the shipped names are example:worlds" in result.output


def test_a_folder_called_example_is_reached_as_dot_slash(runner, tmp_path, monkeypatch):
    (tmp_path / "example" / "shop").mkdir(parents=True)
    (tmp_path / "example" / "shop" / "items.jsonl").write_text('{"a": 1}\n')
    monkeypatch.chdir(tmp_path)
    own = runner.invoke(cli, ["exec", "--data", "./example", "--db", "shop", "db.items.countDocuments({})"])
    assert orjson.loads(own.output) == {"count": 1}
    shipped = runner.invoke(cli, ["exec", "--data", "example", "--db", "clinic", "db.patients.countDocuments({})"])
    assert orjson.loads(shipped.output) == {"count": 900}


def test_the_data_option_help_names_the_example(runner):
    text = " ".join(runner.invoke(cli, ["exec", "--help"]).output.split())
    assert "`example` serves the worlds installed with nlq" in text


# ---------------------------------------------------------------- the Python API

def test_every_documented_name_of_the_package_exists():
    import nlq

    for name in nlq.__all__:
        assert getattr(nlq, name) is not None, name
    assert callable(nlq.witness.run) and callable(nlq.generate.run) and callable(nlq.score.run)
    assert callable(nlq.ask.run) and issubclass(nlq.errors.InputError, nlq.errors.NlqError)
    assert nlq.generate.Context is not None


# ---------------------------------------------------------------- model-only options

@pytest.fixture
def rules_run(tmp_path, clinic_index_file) -> tuple[Path, Path]:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_bytes(b"\n".join((FIXTURES / "tasks" / "clinic.jsonl").read_bytes().splitlines()[:2]) + b"\n")
    return clinic_index_file, tasks


@pytest.mark.parametrize("flags, message", [
    (["--rounds", "6"], "--rounds only applies when a model is called"),
    (["--attempts", "3", "--rounds", "6"], "--rounds, --attempts only apply when a model is called"),
    (["--temperature", "0.2"], "--temperature only applies"),
    (["--log", "x.jsonl"], "--log only applies"),
    (["--no-model", "--model", "m", "--attempts", "2"], "--attempts only applies when a model is called: "
                                                         "--no-model keeps the vote model-free"),
])
def test_repair_refuses_model_only_options_without_a_model(runner, rules_run, monkeypatch, flags, message):
    monkeypatch.delenv("NLQ_MODEL", raising=False)
    index, tasks = rules_run
    result = runner.invoke(cli, ["repair", "--data", str(WORLDS), "--index", str(index), str(tasks), *flags])
    assert result.exit_code == 2, result.output
    assert message in result.output


def test_repair_without_model_options_votes(runner, rules_run, monkeypatch):
    monkeypatch.delenv("NLQ_MODEL", raising=False)
    monkeypatch.setenv("NLQ_BASE_URL", "http://127.0.0.1:9/v1")  # an environment default is not a flag
    index, tasks = rules_run
    result = runner.invoke(cli, ["repair", "--data", str(WORLDS), "--index", str(index), str(tasks)])
    assert result.exit_code == 0, result.output
    assert len(result.output.splitlines()) == 2


@pytest.mark.parametrize("flags, message", [
    (["--temperature", "0.5"], "--temperature only applies when a model is called: --method rules calls none"),
    (["--model", "m", "--option", "seed=1"], "--model, --option only apply"),
    (["--offline"], "--offline only applies"),
])
def test_generate_refuses_model_only_options_with_a_method_that_calls_none(runner, rules_run, flags, message):
    index, tasks = rules_run
    result = runner.invoke(cli, ["generate", "-m", "rules", "--index", str(index), str(tasks), *flags])
    assert result.exit_code == 2, result.output
    assert message in result.output


def test_ask_refuses_model_only_options_without_a_model(runner, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("NLQ_MODEL", raising=False)
    result = runner.invoke(cli, ["ask", "--data", "example", "--db", "clinic", "--request-timeout", "5",
                                 "How many patients are there?"])
    assert result.exit_code == 2, result.output
    assert "--request-timeout only applies when a model is called" in result.output
    # --no-cache is not model-only: it also turns off the index cache
    result = runner.invoke(cli, ["ask", "--data", "example", "--db", "clinic", "--no-cache",
                                 "How many patients are there?"])
    assert result.exit_code == 0, result.output
