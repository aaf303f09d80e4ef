"""`make paper`: each arm a file target, a resume rebuilds only what is missing, reports in the paper layout."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, ROOT

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
    arms = {"MAIN_ARMS": "rules", "LADDER_ARMS": "rules", "KNOCKOUT_ARMS": "", "PAPER_REF": "rules",
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
