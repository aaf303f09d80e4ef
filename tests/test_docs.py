"""Docs are tested: every command has help with a working example and a README
section, and the README's shell examples run on the shipped fixtures."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from nlq.commands import COMMANDS, cli
from tests.conftest import ROOT, SHARED

README = (ROOT / "README.md").read_text()


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_command_has_help_ending_with_an_example(runner, name):
    result = runner.invoke(cli, [name, "--help"])
    assert result.exit_code == 0, result.output
    tail = result.output.strip().splitlines()[-8:]
    assert any("nlq " in line for line in tail), f"`nlq {name} --help` should end with an example"
    assert re.search(r"Examples?:", result.output)


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_command_has_a_readme_section(name):
    assert f"### `nlq {name}`" in README


def test_top_level_help_and_version(runner):
    assert runner.invoke(cli, ["--version"]).output.startswith("nlq, version ")
    listed = runner.invoke(cli, ["--help"]).output
    assert all(name in listed for name in COMMANDS)


def readme_commands() -> list[str]:
    """The `nlq ...` command lines of the README's sh blocks, continuations joined."""
    commands = []
    for block in re.findall(r"```sh\n(.*?)```", README, flags=re.S):
        text = re.sub(r"\\\n\s*", " ", block)
        for line in text.splitlines():
            line = line.strip()
            synopsis = re.search(r"\[|\b(?:DIR|URI|FILE|INDEX|QUERY|TASKS|SCORED|OUT|DB|RUN|FIELD)\b", line)
            if line.startswith(("nlq ", "cat fixtures")) and not synopsis:
                commands.append(line)
    return commands


def test_readme_marks_the_examples_that_need_shared_data():
    """An example reading ../shared (not shipped) says so in a comment line above it."""
    for block in re.findall(r"```sh\n(.*?)```", README, flags=re.S):
        lines = re.sub(r"\\\n\s*", " ", block).splitlines()
        for i, line in enumerate(lines):
            if "../shared" in line and not line.startswith("#"):
                assert any(above.startswith("# needs ../shared") for above in lines[:i]), line


def test_example_outputs_are_git_ignored_and_cleaned():
    assert "/out/" in (ROOT / ".gitignore").read_text().splitlines()
    clean = re.search(r"^clean:.*\n\t(.*)$", (ROOT / "Makefile").read_text(), re.M)
    assert clean and " out " in f" {clean.group(1)} "


def test_readme_examples_run(tmp_path):
    """Run every README example in order in a scratch folder that sees the
    fixtures (and ../shared when present), so files made by one example feed
    the next; an example needing ../shared is skipped when it is absent."""
    work = tmp_path / "proj"
    work.mkdir()
    (work / "fixtures").symlink_to(ROOT / "fixtures")
    if SHARED.exists():
        (tmp_path / "shared").symlink_to(SHARED)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "XDG_CACHE_HOME": str(tmp_path / "cache")}  # `nlq ask` keeps its index cache out of the home folder
    ran = 0
    for command in readme_commands():
        if "../shared" in command and not SHARED.exists():
            continue
        result = subprocess.run(command, shell=True, cwd=work, env=env, capture_output=True, text=True,
                                timeout=300)
        assert result.returncode == 0, f"{command}\n{result.stderr}"
        assert result.stdout.strip() or " -o " in command or ">" in command, f"no output from: {command}"
        ran += 1
    assert ran >= 10
    # what the examples write lands in out/ (git-ignored, removed by `make clean`)
    assert sorted(p.name for p in work.iterdir()) == ["fixtures", "out"]


def test_readme_operator_coverage_is_generated_from_the_registry():
    from tests.readme import render

    assert render(README) == README, "README operator table is stale: run `make docs`"


def test_readme_demo_numbers_are_what_the_demo_computes():
    """The quickstart's headline row is recomputed: index -> witness -> rules -> score."""
    import orjson

    from nlq import generate, score, witness
    from nlq import index as grounding
    from nlq.backends import EmbeddedBackend
    from tests.conftest import WORLDS

    backend = EmbeddedBackend(WORLDS)
    indexes = {doc["db"]: doc for doc in grounding.build(backend)}
    tasks = [orjson.loads(line) for path in sorted((ROOT / "fixtures" / "tasks").glob("*.jsonl"))
             for line in path.read_bytes().splitlines() if line.strip()]
    records = generate.run(witness.run(tasks, indexes), "rules", generate.Context(indexes))
    scored = list(score.run(records, backend))
    exc = 100 * sum(r["score"]["exc"] for r in scored) / len(scored)
    demo = README[README.index("<!-- demo:begin -->"):README.index("<!-- demo:end -->")]
    assert re.search(rf"rules\s+{len(scored)}\s+{exc:.1f}\s", demo), f"README demo block is stale (EXC {exc:.1f})"
