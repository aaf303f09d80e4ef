"""docs/ARCHITECTURE.md stays true: every module is in its map, and the operator recipe runs as written."""

from __future__ import annotations

import re

import pytest

from nlq.errors import UnknownOperatorError
from nlq.mql import analyze, engine, ops_arith, registry
from tests.conftest import ROOT

DOC = (ROOT / "docs" / "ARCHITECTURE.md").read_text()


def test_the_module_map_names_every_module():
    files = sorted(p.relative_to(ROOT).as_posix() for folder in ("nlq", "commands")
                   for p in (ROOT / folder).rglob("*.py"))
    missing = [f for f in files if f"`{f}`" not in DOC]
    assert not missing, f"add a line for each to the module map of docs/ARCHITECTURE.md: {missing}"


def recipe_blocks(title: str) -> list[str]:
    section = DOC.split(f"### {title}\n", 1)[1].split("\n### ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    # the blocks are indented under list items: dedent each by its first line's indent
    out = []
    for block in blocks:
        lines = block.splitlines()
        indent = len(lines[0]) - len(lines[0].lstrip())
        out.append("\n".join(line[indent:] for line in lines) + "\n")
    return out


def test_the_operator_recipe_adds_a_working_operator():
    declare, implement, check = recipe_blocks("An expression operator")
    registry.load()
    assert registry.get("$twice") is None
    try:
        exec(declare, vars(registry))     # step 1, in nlq/mql/registry.py
        exec(implement, vars(ops_arith))  # step 2, in nlq/mql/ops_arith.py
        exec(check, {})                   # step 3, the test
        assert "$twice" in registry.supported(registry.EXPRESSION)
        assert "`$twice`" in registry.coverage_markdown()
        analyze.check_forbidden([{"$project": {"y": {"$twice": 1}}}])
        with pytest.raises(UnknownOperatorError, match="did you mean \\$twice"):
            engine.aggregate([{"x": 1}], [{"$project": {"y": {"$twise": "$x"}}}])
    finally:
        registry._TABLE.pop("$twice", None)
        vars(ops_arith).pop("_twice", None)
    assert registry.get("$twice") is None
