"""nlq installed the way users install it: a built wheel in a fresh venv.

The editable install that `make` uses hides packaging mistakes (a module left
out of the wheel, a top-level name, an import that only works from the source
tree), so this test builds the wheel from a copy of the tree, installs it into
a new virtual environment (pip resolves the dependencies, reusing its cache)
and runs `nlq --help`, every subcommand's `--help`, every example those
help texts end with and the README's tour, from an empty folder outside the
clone: they read only the example data installed with the wheel
(`--data example`, `example:tasks/...`).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from nlq.commands import COMMANDS
from tests.conftest import ROOT
from tests.helpers import help_examples

SKIP = shutil.ignore_patterns(".venv", ".git", "build", "dist", "out", "*.egg-info", "__pycache__", ".hypothesis")


def run(args, **kwargs) -> subprocess.CompletedProcess:
    result = subprocess.run(args, capture_output=True, text=True, timeout=600, **kwargs)
    assert result.returncode == 0, f"{args}\n{result.stdout}\n{result.stderr}"
    return result


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """The bin/ folder of a fresh venv holding nlq installed from its wheel."""
    tmp = tmp_path_factory.mktemp("install")
    source = tmp / "src"
    # symlinks kept, as in a clone: nlq/examples/ links to fixtures/, and the wheel must hold the files
    shutil.copytree(ROOT, source, ignore=SKIP, symlinks=True)
    run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", str(source), "-w", str(tmp / "dist")])
    wheel, = (tmp / "dist").glob("nlq-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert {name.split("/")[0] for name in names} == {"nlq", wheel.name.split("-py")[0] + ".dist-info"}, \
        "the wheel installs a top-level name other than nlq"
    assert "nlq/commands/__init__.py" in names
    for db in ("clinic", "club", "racing"):  # the example data travels in the wheel as files
        assert f"nlq/examples/tasks/{db}.jsonl" in names
        assert any(name.startswith(f"nlq/examples/worlds/{db}/") and name.endswith(".jsonl") for name in names)
    venv = tmp / "venv"
    run([sys.executable, "-m", "venv", str(venv)])
    run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", str(wheel)])
    return venv / "bin"


def clean_env(installed: Path, tmp_path: Path) -> dict:
    """Only the venv's nlq on PATH, nothing of the source tree importable, no nlq settings."""
    env = {**os.environ, "PATH": f"{installed}{os.pathsep}{os.environ['PATH']}",
           "XDG_CACHE_HOME": str(tmp_path / "cache")}
    for name in ("PYTHONPATH", "NLQ_DATA", "NLQ_URI", "NLQ_MODEL", "NLQ_BASE_URL", "NLQ_API_KEY"):
        env.pop(name, None)
    return env


@pytest.mark.slow
def test_the_wheel_runs_every_help_and_its_examples(installed, tmp_path):
    work = tmp_path / "empty"
    work.mkdir()
    env = clean_env(installed, tmp_path)
    listed = run([str(installed / "nlq"), "--help"], cwd=work, env=env).stdout
    assert all(name in listed for name in COMMANDS)
    ran = 0
    for name in COMMANDS:
        text = run([str(installed / "nlq"), name, "--help"], cwd=work, env=env).stdout
        examples = help_examples(text)
        assert examples, f"`nlq {name} --help` shows no example"
        for command in examples:
            result = run(command, shell=True, cwd=work, env=env)
            assert result.stdout.strip() or " -o " in command, f"no output from: {command}"
            ran += 1
    assert ran >= len(COMMANDS)
    assert sorted(p.name for p in work.iterdir()) == ["out"], "help examples write outside out/"


@pytest.mark.slow
def test_the_wheel_runs_the_readme_tour_from_an_empty_folder(installed, tmp_path):
    readme = (ROOT / "README.md").read_text()
    tour = readme[readme.index("<!-- tour:begin -->"):readme.index("<!-- tour:end -->")]
    block, = re.findall(r"```sh\n(.*?)```", tour, flags=re.S)
    work = tmp_path / "empty"
    work.mkdir()
    result = run(["bash", "-e", "-c", block], cwd=work, env=clean_env(installed, tmp_path))
    assert '{"count":78}' in result.stdout  # the tour's first answer
    assert "EXC" in result.stdout
    assert sorted(p.name for p in work.iterdir()) == ["out"]


@pytest.mark.slow
def test_the_installed_package_has_no_top_level_commands_module(installed, tmp_path):
    python = str(installed / "python")
    probe = "import importlib.util, nlq.commands; print(importlib.util.find_spec('commands') is None)"
    assert run([python, "-c", probe], cwd=tmp_path).stdout.strip() == "True"


@pytest.mark.slow
def test_the_installed_package_has_every_prompt(installed, tmp_path):
    from nlq import methods

    probe = ("from nlq import methods; from nlq.methods import prompting; "
             "[prompting.load(methods.get(n).prompt_name) for n in methods.names() "
             "if getattr(methods.get(n), 'needs_model', False)]; print('ok')")
    assert run([str(installed / "python"), "-c", probe], cwd=tmp_path).stdout.strip() == "ok"
    assert sum(getattr(methods.get(n), "needs_model", False) for n in methods.names()) >= 7
