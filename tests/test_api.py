"""The public API: the README's Python example runs as written, and the names stay light and stable."""

from __future__ import annotations

import doctest
import os
import re
import subprocess
import sys

import pytest

from tests.conftest import ROOT

README = (ROOT / "README.md").read_text()


def test_readme_python_example_runs(monkeypatch):
    monkeypatch.chdir(ROOT)  # the example reads fixtures/worlds
    blocks = re.findall(r"```pycon\n(.*?)```", README, flags=re.S)
    assert blocks, "the README's Python API section has a ```pycon example"
    parser, runner = doctest.DocTestParser(), doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    for i, block in enumerate(blocks):
        test = parser.get_doctest(block, {}, f"README pycon block {i}", "README.md", 0)
        runner.run(test)
    assert runner.failures == 0 and runner.tries > 0


def test_public_names_are_stable():
    import nlq
    from nlq import mql

    assert set(nlq.__all__) == {"__version__", "ask", "errors", "generate", "index", "mql", "open_backend", "score",
                               "score_one", "witness"}
    assert set(mql.__all__) == {"parse", "aggregate", "to_mongosh", "Query"}
    from nlq.backends import open_backend
    from nlq.mql.engine import aggregate
    from nlq.mql.mongosh import parse_query

    assert nlq.open_backend is open_backend
    assert mql.parse is parse_query and mql.aggregate is aggregate
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        nlq.nope  # noqa: B018
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        mql.nope  # noqa: B018


def test_importing_nlq_loads_nothing_else():
    code = ("import sys, nlq, nlq.mql; "
            "print(sorted(m for m in sys.modules if m.startswith('nlq')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT)}).stdout
    assert out.strip() == "['nlq', 'nlq.mql']"


def test_module_examples_run():
    from nlq import mql
    from nlq.mql import find_projection

    for module in (mql, find_projection):
        assert doctest.testmod(module).failed == 0, module.__name__
