"""Methods as plugins: the `nlq.methods` entry-point group, nlq's own methods included."""

from __future__ import annotations

import configparser
import importlib.metadata
import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from nlq import methods
from nlq.errors import InputError, PluginError
from tests.conftest import ROOT

TOY = '''
class Toy:
    name = "toy"
    channels = ("question",)

    def generate(self, task, context):
        return {"collection": "patients", "pipeline": [{"$count": "n"}], "method": "toy", "confidence": 0.5,
                "disclosure": list(self.channels)}


METHOD = Toy()
'''


def plugin(tmp_path: Path, entry_points: str, module: str = TOY) -> Path:
    """A third-party distribution `toy-plugin` installed as a folder on sys.path: module + dist-info."""
    site = tmp_path / "site"
    (site / "toy_plugin-1.0.dist-info").mkdir(parents=True)
    (site / "toy_plugin.py").write_text(module)
    (site / "toy_plugin-1.0.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-plugin\n"
                                                                "Version: 1.0\n")
    (site / "toy_plugin-1.0.dist-info" / "entry_points.txt").write_text(f"[nlq.methods]\n{entry_points}\n")
    return site


def nlq(site: Path, *args: str, input: str = "") -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)])}
    return subprocess.run([sys.executable, "-c", "from nlq.commands import cli; cli()", *args], input=input,
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)


def test_every_builtin_method_is_declared_in_setup_cfg_and_loads():
    parser = configparser.ConfigParser()
    parser.read(ROOT / "setup.cfg")
    declared = {line.partition("=")[0].strip()
                for line in parser.get("options.entry_points", "nlq.methods").splitlines() if line.strip()}
    assert declared == set(methods.names())
    for name in declared:
        assert methods.get(name).name == name


def test_a_checkout_finds_its_own_methods_without_the_installed_metadata(monkeypatch):
    # a stale editable install (a method added to setup.cfg since `make install`): the checkout still has it
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda **kw: [])
    methods._entry_points.cache_clear()
    try:
        assert "rules" in methods.names() and methods.get("rules").name == "rules"
    finally:
        methods._entry_points.cache_clear()


def test_a_third_party_method_runs_through_generate(tmp_path, clinic_index_file):
    site = plugin(tmp_path, "toy = toy_plugin:METHOD")
    task = orjson.dumps({"id": "q1", "db": "clinic", "question": "How many patients are there?"}).decode()
    result = nlq(site, "generate", "--method", "toy", "--index", str(clinic_index_file), input=task + "\n")
    assert result.returncode == 0, result.stderr
    prediction = orjson.loads(result.stdout)["prediction"]
    assert prediction["method"] == "toy" and prediction["pipeline"] == [{"$count": "n"}]
    assert "toy" in nlq(site, "generate", "--help").stdout


def test_a_broken_plugin_is_a_clear_error_and_leaves_the_others_alone(tmp_path, clinic_index_file):
    site = plugin(tmp_path, "broken = toy_plugin_missing:METHOD\nodd = toy_plugin:Toy.name")
    result = nlq(site, "generate", "--method", "broken", "--index", str(clinic_index_file), input="")
    assert result.returncode == 1
    assert result.stderr.startswith("nlq: the method 'broken' (toy-plugin: toy_plugin_missing:METHOD) cannot be "
                                    "loaded: ModuleNotFoundError: No module named 'toy_plugin_missing'\n"
                                    "hint: reinstall or uninstall toy-plugin")
    odd = nlq(site, "generate", "--method", "odd", "--index", str(clinic_index_file), input="")
    assert odd.returncode == 1 and "is not a method: it needs a `name` and a `generate" in odd.stderr
    task = orjson.dumps({"id": "q1", "db": "clinic", "question": "How many patients are there?"}).decode()
    rules = nlq(site, "generate", "--method", "rules", "--index", str(clinic_index_file), input=task + "\n")
    assert rules.returncode == 0, rules.stderr


def test_unknown_and_clashing_names(monkeypatch):
    with pytest.raises(InputError, match="unknown method 'nope'; choose one of: card, cascade"):
        methods.get("nope")

    class Dist:
        def __init__(self, name):
            self.name = name

    def entry(name, value, dist):
        ep = importlib.metadata.EntryPoint(name, value, methods.GROUP)
        return type("EP", (), {"name": name, "value": value, "dist": Dist(dist), "load": ep.load})()

    fake = [entry("twin", "a:M", "one"), entry("twin", "b:M", "two"), entry("rules", "c:M", "three")]
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda **kw: fake)
    methods._entry_points.cache_clear()
    methods._load.cache_clear()
    try:
        with pytest.raises(PluginError, match=r"registered by several distributions \(one and two\)"):
            methods.get("twin")
        assert methods.get("rules").name == "rules"  # a plugin does not replace nlq's own
    finally:
        methods._entry_points.cache_clear()
        methods._load.cache_clear()
