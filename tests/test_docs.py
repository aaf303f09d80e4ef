"""Docs are tested: every command has help with a working example and a section in
docs/COMMANDS.md, the README stays short, every link resolves, the generated pages are
current, and the shell examples of README.md and of every docs/ page run on the example data.

Convention: a ```sh block is a runnable example (it is executed, whole, by
`test_page_examples_run`); ```text, ```bash and the others are not (a synopsis, output, or an
example that needs a server, a model or data nlq does not ship). A line that needs the TEND
release reads it from `$TEND` and says so in a `# needs $TEND` comment above it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from nlq.commands import COMMANDS, cli
from tests.conftest import ROOT, TEND_V1

README = (ROOT / "README.md").read_text()
PAGES = [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))
COMMANDS_PAGE = (ROOT / "docs" / "COMMANDS.md").read_text()


def page_id(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_command_has_help_ending_with_an_example(runner, name):
    result = runner.invoke(cli, [name, "--help"])
    assert result.exit_code == 0, result.output
    tail = result.output.strip().splitlines()[-8:]
    assert any("nlq " in line for line in tail), f"`nlq {name} --help` should end with an example"
    assert re.search(r"Examples?:", result.output)


@pytest.mark.parametrize("name", [None, *sorted(COMMANDS)])
def test_help_examples_read_only_the_installed_example_data(runner, name):
    """After a plain `pip install` there is no fixtures/ folder: help names `--data example`."""
    result = runner.invoke(cli, [name, "--help"] if name else ["--help"])
    assert "fixtures" not in result.output
    assert "--data example" in result.output


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_command_has_a_section_in_the_commands_page(name):
    assert f"## `nlq {name}`" in COMMANDS_PAGE


def test_top_level_help_and_version(runner):
    assert runner.invoke(cli, ["--version"]).output.startswith("nlq, version ")
    listed = runner.invoke(cli, ["--help"]).output
    assert all(name in listed for name in COMMANDS)


# ---------------------------------------------------------------- the README's shape

def test_the_readme_is_short_and_has_a_table_of_contents():
    assert len(README.splitlines()) <= 250
    headings = re.findall(r"^## (.+)$", README, re.M)
    toc = re.findall(r"^- \[[^\]]+\]\(#([^)]+)\)$", README, re.M)
    assert [anchor(h) for h in headings] == toc, "the README's contents list every ## heading, in order"


def test_the_readme_links_the_paper_and_the_docs():
    assert "Bridging the Gap: Enabling\nNatural Language Queries for NoSQL Databases" in README
    for page in sorted((ROOT / "docs").glob("*.md")):
        assert f"(docs/{page.name})" in README, f"the README's documentation table misses docs/{page.name}"


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_no_page_cites_what_a_user_does_not_have(page):
    text = page.read_text()
    assert "../shared" not in text and "SPEC" not in text, page


# ---------------------------------------------------------------- links

def anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(text: str) -> set[str]:
    body = re.sub(r"```.*?```", "", text, flags=re.S)
    return {anchor(h) for h in re.findall(r"^#{1,6} (.+)$", body, re.M)}


def test_anchor_matches_github():
    assert anchor("`nlq repair` — gate, execute, vote in result space") == \
        "nlq-repair--gate-execute-vote-in-result-space"
    assert anchor("1. Point nlq at the data") == "1-point-nlq-at-the-data"
    assert anchor("`--data` or `--uri`") == "--data-or---uri"


# written by another part of the work: linked from README before the page lands
PENDING = {"docs/REPRODUCTION.md"}


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_every_relative_link_resolves(page):
    text = page.read_text()
    body = re.sub(r"```.*?```", "", text, flags=re.S)
    for target in re.findall(r"\]\(([^)\s]+)\)", body):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, fragment = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if (file.relative_to(ROOT).as_posix() if file.is_relative_to(ROOT) else "") in PENDING and not file.exists():
            continue
        assert file.exists(), f"{page_id(page)}: broken link {target}"
        if fragment and file.suffix == ".md":
            assert fragment in anchors(file.read_text()), f"{page_id(page)}: no heading for {target}"


# ---------------------------------------------------------------- generated pages

def test_operator_coverage_is_generated_from_the_registry():
    from tests.readme import ENGINE, render

    text = ENGINE.read_text()
    assert "<!-- operators:begin -->" in text
    assert render(text) == text, "docs/ENGINE.md operator table is stale: run `make docs`"


def test_the_cli_reference_is_every_commands_help():
    from tests.readme import CLI, cli_reference, help_text

    assert CLI.read_text() == cli_reference(), "docs/CLI.md is stale: run `make docs`"
    for name in COMMANDS:
        assert help_text(name).rstrip() in CLI.read_text()


# ---------------------------------------------------------------- examples run

def sh_blocks(text: str) -> list[str]:
    return re.findall(r"```sh\n(.*?)```", text, flags=re.S)


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_examples_that_need_the_tend_release_say_so(page):
    for block in sh_blocks(page.read_text()):
        lines = re.sub(r"\\\n\s*", " ", block).splitlines()
        for i, line in enumerate(lines):
            if "$TEND" in line and not line.startswith("#"):
                assert any(above.startswith("# needs $TEND") for above in lines[:i]), line


def test_example_outputs_are_git_ignored_and_cleaned():
    assert "/out/" in (ROOT / ".gitignore").read_text().splitlines()
    clean = re.search(r"^clean:.*\n\t(.*)$", (ROOT / "Makefile").read_text(), re.M)
    assert clean and " out " in f" {clean.group(1)} "


def run_blocks(blocks: list[str], work: Path, env: dict) -> int:
    """Run each block in `work` as one bash script (stop at the first failing command)."""
    ran = 0
    for block in blocks:
        if "$TEND" in block and not env.get("TEND"):
            continue
        result = subprocess.run(["bash", "-e", "-c", block], cwd=work, env=env,
                                capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, f"{block}\n{result.stderr}"
        writes = " -o " in block or ">" in block or block.lstrip().startswith("mkdir")
        assert result.stdout.strip() or writes, f"no output from:\n{block}"
        ran += 1
    return ran


def example_env(tmp_path: Path) -> dict:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "XDG_CACHE_HOME": str(tmp_path / "cache")}  # `nlq ask` keeps its index cache out of the home folder
    for name in ("NLQ_DATA", "NLQ_URI", "NLQ_MODEL", "NLQ_BASE_URL", "NLQ_API_KEY", "TEND"):
        env.pop(name, None)
    if TEND_V1.exists():
        env["TEND"] = str(TEND_V1)
    return env


# pages whose examples take more than ~3 s together (they run in `make check`)
SLOW_PAGES = {"README.md", "docs/COMMANDS.md", "docs/TUTORIAL.md"}


@pytest.mark.parametrize("page", [pytest.param(p, marks=[pytest.mark.slow] if page_id(p) in SLOW_PAGES else [],
                                               id=page_id(p))
                                  for p in PAGES if sh_blocks(p.read_text())])
def test_page_examples_run(page, tmp_path):
    """A page's sh blocks, in order, in an empty folder (files one makes feed the next):
    they read only the example data installed with nlq and what they write themselves."""
    work = tmp_path / "work"
    work.mkdir()
    assert run_blocks(sh_blocks(page.read_text()), work, example_env(tmp_path)) >= 1
    # what the examples write lands in out/ (git-ignored, removed by `make clean`)
    assert sorted(p.name for p in work.iterdir()) in (["out"], []), page_id(page)


def test_the_readme_tour_is_runnable_examples():
    tour = README[README.index("<!-- tour:begin -->"):README.index("<!-- tour:end -->")]
    assert sh_blocks(tour) and "--data example" in tour and "fixtures" not in tour


def test_readme_demo_numbers_are_what_the_demo_computes():
    """The demo block's headline row is recomputed: index -> witness -> rules -> score."""
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
    exf1 = 100 * sum(r["score"]["exf1"] for r in scored) / len(scored)
    demo = README[README.index("<!-- demo:begin -->"):README.index("<!-- demo:end -->")]
    assert re.search(rf"rules\s+{len(scored)}\s+{exc:.1f}\s+\[[^\]]+\]\s+{exf1:.1f}\s", demo), \
        f"README demo block is stale (EXC {exc:.1f}, EXF1 {exf1:.1f})"
