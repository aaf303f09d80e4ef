"""`make paper`: each arm a file target, a resume rebuilds only what is missing, reports in the paper layout."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, ROOT
from tests.fakellm import reply

pytestmark = pytest.mark.slow


def _make(out: Path, *targets: str, **variables: str) -> subprocess.CompletedProcess:
    """Run the project's Makefile against the test's own venv (already installed: STAMP made up to date)."""
    bin_dir = Path(sys.executable).parent
    args = ["make", "--no-print-directory", "-C", str(ROOT), *targets, f"OUT={out}",
            f"BIN={bin_dir}", f"STAMP={out / 'installed'}"]
    args += [f"{k}={v}" for k, v in variables.items()]
    env = {k: v for k, v in os.environ.items() if not k.startswith("NLQ_")}
    return subprocess.run(args, capture_output=True, text=True, env=env, timeout=600)


@pytest.fixture
def paper_out(tmp_path):
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    out = tmp_path / "paper"
    out.mkdir()
    (out / "installed").touch()
    tasks = out / "tasks.jsonl"
    # a handful of fixture tasks from every world
    lines = [line for db in ("clinic", "racing", "club")
             for line in (FIXTURES / "tasks" / f"{db}.jsonl").read_text().splitlines()[:3]]
    tasks.write_text("\n".join(lines) + "\n")
    return out


def test_paper_targets_build_each_arm_once_and_resume(paper_out):
    arms = {"MAIN_ARMS": "rules", "LADDER_ARMS": "rules", "KNOCKOUT_ARMS": "", "CONTROL_ARMS": "", "ADDED_ARMS": "",
            "PAPER_REF": "rules",
            "TASKS": str(paper_out / "tasks.jsonl"), "REPORT_ARGS": "--bootstrap 100"}
    first = _make(paper_out, "paper", **arms)
    assert first.returncode == 0, first.stderr[-3000:]
    runs = paper_out / "runs"
    assert sorted(p.name for p in runs.iterdir()) == ["rules.pred.jsonl", "rules.scored.jsonl"]
    assert first.stdout.count(" generate ") == 1  # the arm shared by both tables is generated once
    table3 = (paper_out / "table3.md").read_text()
    assert "| Method | EXC | EXF1 | NoSub | Exec | Empty | Struct. | Value | p vs rules |" in table3
    assert "### EXC (%) by labels.schema_flex" in table3 and "### EXC (%) by labels.anti_sql" in table3
    assert (paper_out / "table3.tex").read_text().count(r"\begin{tabular}") == 3
    assert (paper_out / "table3.html").read_text().startswith("<!DOCTYPE html>")
    assert "### EXC (%) by db" in (paper_out / "table5.md").read_text()
    assert "rules" in (paper_out / "table3.txt").read_text()

    again = _make(paper_out, "paper", **arms)
    assert again.returncode == 0 and " generate " not in again.stdout and " score " not in again.stdout

    # an interrupted run: the scored file is gone, its predictions are kept and reused
    (runs / "rules.scored.jsonl").unlink()
    resumed = _make(paper_out, "paper-main", **arms)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert " generate " not in resumed.stdout and resumed.stdout.count(" score ") == 1
    assert not list(paper_out.rglob("*.part"))


def test_an_unknown_arm_is_an_error_naming_the_known_ones(paper_out):
    result = _make(paper_out, "paper-main", MAIN_ARMS="nonesuch", PAPER_REF="nonesuch",
                   TASKS=str(paper_out / "tasks.jsonl"))
    assert result.returncode != 0
    assert "arm 'nonesuch' has no GEN_nonesuch" in result.stderr and "rules" in result.stderr


MAIN = ["nlq-only", "schema", "sampled", "data-rich", "sql-pivot", "react", "sag", "sag (nlq profile)"]
ABLATION = ["card", "gated-repair", "value-bisection", "sag", "sag (same batch)", "no-gate", "no-witnesses",
            "no-bisection", "top-level-card", "no-collapse", "control", "contract"]


def answer_with_gold(tasks: list[dict]):
    """A fake model that answers each task's question with its gold, in the format each request asks
    for: a pipeline, a ReAct `submit`, a contract-first answer, or free text (the SQL sketch)."""
    golds = {t["question"]: t["gold"] for t in tasks}

    def respond(body):
        text = "\n".join(m["content"] for m in body["messages"] if isinstance(m.get("content"), str))
        gold = next(g for q, g in golds.items() if q in text)
        fmt = body.get("response_format") or {}
        if fmt.get("type") != "json_schema":
            return reply("SELECT COUNT(*) FROM t")
        properties = fmt["json_schema"]["schema"]["properties"]
        if "action" in properties:
            return reply(json.dumps({"thought": "known", "action": "submit", **gold}))
        if "contract" in properties:
            return reply(json.dumps({"contract": {"columns": [], "rows": "few", "order": "none"}, **gold}))
        return reply(json.dumps(gold))

    return respond


def test_paper_runs_every_arm_against_a_model_and_replays_from_the_cache(paper_out, fake_llm):
    worlds = paper_out / "worlds"
    worlds.mkdir()
    (worlds / "clinic").symlink_to(FIXTURES / "worlds" / "clinic")
    tasks = [json.loads(line) for line in (FIXTURES / "tasks" / "clinic.jsonl").read_text().splitlines()[:3]]
    (paper_out / "tasks.jsonl").write_text("".join(json.dumps(t) + "\n" for t in tasks))
    fake_llm.responder = answer_with_gold(tasks)
    settings = {"TASKS": str(paper_out / "tasks.jsonl"), "DATA": str(worlds), "MODEL": "fake-model",
                "BASE_URL": fake_llm.url, "REPORT_ARGS": "--bootstrap 50", "JOBS": "2",
                "KNOCKOUT_DBS": "clinic", "CONTROL_DBS": "clinic"}
    first = _make(paper_out, "paper", **settings)
    assert first.returncode == 0, first.stderr[-3000:]
    assert fake_llm.unscripted == 0 and fake_llm.requests
    table3, table5 = (paper_out / "table3.md").read_text(), (paper_out / "table5.md").read_text()
    assert "| Method | EXC | EXF1 | NoSub | Exec | Empty | Struct. | Value | p vs sag |" in table3
    for arm in MAIN:
        assert f"\n| {arm} |" in table3, arm
    for arm in ABLATION:
        assert f"\n| {arm} |" in table5, arm
    assert "### EXC (%) by labels.schema_flex" in table3
    economics = table3[table3.index("Interaction economics"):]
    assert all(column in economics for column in ("Calls/task", "Tokens/task", "Rounds/attempt", "Steps/task"))
    runs = paper_out / "runs"

    def records(name):
        return [json.loads(line) for line in (runs / name).read_text().splitlines()]

    # the gold answers every request: sag is right on every task, in one round per attempt
    sag = records("sag.scored.jsonl")
    assert [r["score"]["exc"] for r in sag] == [1] * len(tasks)
    assert all(r["repair"]["rounds"] == [1, 1, 1] and r["prediction"]["usage"]["model_calls"] == 3 for r in sag)
    control = records("control.pred.jsonl")
    assert all(r["repair"]["attempts"] == 3 and r["repair"]["usage"]["model_calls"] == 2 for r in control)

    # every arm in the paper's profile, the reasoning effort sent, no request seed in the control; the
    # nlq row in this toolkit's profile (its card in the user turn, no reasoning effort of its own)
    assert all(b.get("reasoning_effort") == "max" and "seed" not in b for b in fake_llm.bodies)
    assert all(r["prediction"]["profile"]["name"] == "paper" for r in sag)
    nlq_row = records("sag-nlq.pred.jsonl")
    assert all(r["prediction"]["profile"] == {"name": "nlq", "overrides": {"reasoning_effort": "max"}}
               for r in nlq_row)
    sag_systems = [b["messages"][0]["content"] for b in fake_llm.bodies if b["messages"][0]["content"].startswith(
        "You translate questions about a MongoDB database")]
    assert any("Path card:" in text for text in sag_systems) and any("Path card:" not in t for t in sag_systems)

    # an interrupted experiment: model arms' files are gone; they are made again from the cache alone
    sent = len(fake_llm.requests)
    before = {name: records(name) for name in ("sag.pred.jsonl", "react.pred.jsonl", "control.pred.jsonl")}
    for name in ("sag", "react", "control", "contract"):  # control.* holds the control's two extra draws
        for path in runs.glob(f"{name}.*jsonl"):
            path.unlink()
    again = _make(paper_out, "paper", **settings)
    assert again.returncode == 0, again.stderr[-3000:]
    assert again.stdout.count(" generate ") == 6 and len(fake_llm.requests) == sent
    for name, old in before.items():
        assert [r["prediction"]["pipeline"] for r in records(name)] == [r["prediction"]["pipeline"] for r in old]
    for name in ("sag.pred.jsonl", "react.pred.jsonl", "control.seed1.pred.jsonl"):
        assert all(r["prediction"]["usage"]["cache_hits"] == r["prediction"]["usage"]["model_calls"] > 0
                   for r in records(name))
