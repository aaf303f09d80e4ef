"""nlq.card and `nlq card`: the path card, its cap and the ablation flags."""

from __future__ import annotations

import orjson
import pytest
from hypothesis import given, settings, strategies as st

from nlq.commands import cli
from nlq import card as path_card
from nlq import io
from nlq.errors import InputError
from nlq.index import index_documents
from tests.conftest import WORLDS, need

DOCS = {
    "labs": [
        {"_id": 1, "lab": "Central Lab", "values_by_year": {"1987": {"HBA1C": 5.1}, "1990": {"A12": 4.8}}},
        {"_id": 2, "lab": "North Lab", "values_by_year": {"1990": {"HBA1C": 6.0}}, "tags": ["a", "b"]},
        {"_id": 3, "lab": None, "values_by_year": {"2001": {"B12": 7.0}}, "tags": []},
        {"_id": 4, "lab": "North Lab", "values_by_year": {}},
    ],
    "codes": [{"code": "HBA1C"}],
}


@pytest.fixture
def index():
    return index_documents("w", DOCS)


def test_render(index):
    assert path_card.render(index).splitlines() == [
        "# database w",
        "collections:",
        "  codes: 1 document",
        "  labs: 4 documents",
        "",
        "codes:",
        "  code: string",
        "",
        "labs:",
        "  _id: int",
        "  lab: string|null  null 25%",
        "  tags: array  present 50%, empty 25%, len 0-2",
        "  tags[]: string  present 25%",
        '  values_by_year: dynamic_map  empty 25%, keys "1990", "1987", "2001" (3 distinct)',
        '  values_by_year.<*>: dynamic_map  present 75%, keys "HBA1C", "A12", "B12" (3 distinct)',
        "  values_by_year.<*>.<*>: double  present 75%",
    ]


def test_no_collapse_renders_the_concrete_keys(index):
    assert path_card.render(index, collapse=False).splitlines()[8:] == [
        "labs:",
        "  _id: int",
        "  lab: string|null  null 25%",
        "  tags: array  present 50%, empty 25%, len 0-2",
        "  tags[]: string  present 25%",
        "  values_by_year: object  empty 25%",
        "  values_by_year.1987: object",
        "  values_by_year.1987.HBA1C: double",
        "  values_by_year.1990: object",
        "  values_by_year.1990.A12: double",
        "  values_by_year.1990.HBA1C: double",
        "  values_by_year.2001: object",
        "  values_by_year.2001.B12: double",
    ]


def test_no_collapse_says_when_the_index_did_not_keep_every_concrete_path():
    from nlq.index import MAX_CONCRETE

    docs = [{"m": {str(1950 + y): {"A1": y, "B2": y} for y in range(i, i + 10)}} for i in range(31)]
    lines = path_card.render(index_documents("w", {"c": docs}), collapse=False).splitlines()
    paths = [line.split(":")[0].strip() for line in lines[5:-2]]
    assert lines[3:5] == ["", "c:"] and paths[0] == "m"
    for path in paths[1:]:  # no orphan: every concrete path's parent is listed too
        assert path.rsplit(".", 1)[0] in paths, path
    years = [p for p in paths if p.count(".") == 1]
    assert len(years) == MAX_CONCRETE and len(paths) == 1 + 2 * MAX_CONCRETE
    # 40 years (8 not kept) and 80 year.code paths (48 not kept)
    assert lines[-2:] == ["", f"[56 concrete paths not kept by the index: at most {MAX_CONCRETE} per collapsed "
                              "path, parents before children]"]
    assert "not kept" not in path_card.render(index_documents("w", {"c": docs}))


def test_no_collapse_has_no_note_when_every_concrete_path_was_kept(index):
    assert "not kept" not in path_card.render(index, collapse=False)


def test_top_level_keeps_top_fields_only(index):
    assert path_card.render(index, top_level=True).splitlines()[8:] == [
        "labs:",
        "  _id: int",
        "  lab: string|null  null 25%",
        "  tags: array  present 50%, empty 25%, len 0-2",
        "  values_by_year: object  empty 25%",
    ]


def test_cap_cuts_deepest_least_present_first_with_a_note(index):
    lines = path_card.render(index, max_entries=4).splitlines()
    assert lines[5:] == [
        "codes:",
        "  code: string",
        "",
        "labs:",
        "  _id: int",
        "  lab: string|null  null 25%",
        '  values_by_year: dynamic_map  empty 25%, keys "1990", "1987", "2001" (3 distinct)',
        "",
        "[4 of 8 paths cut to fit --max-entries 4: deepest and least present first]",
    ]
    card = path_card.build(index, max_entries=6)
    assert (card["paths"], card["cut"]) == (6, 2)
    kept = card["card"].splitlines()
    assert '  values_by_year.<*>: dynamic_map  present 75%, keys "HBA1C", "A12", "B12" (3 distinct)' in kept
    assert "  tags[]: string  present 25%" not in kept  # as deep, less present
    assert "  values_by_year.<*>.<*>: double  present 75%" not in kept  # deepest


def parent(path: str) -> str | None:
    if path.endswith("[]"):
        return path[:-2]
    return path.rsplit(".", 1)[0] if "." in path else None


def test_a_parent_is_never_cut_before_its_children(index):
    for cap in range(9):
        lines = path_card.render(index, max_entries=cap).splitlines()
        body = lines[lines.index(""):]
        assert sum(line.startswith("  ") for line in body) == cap
        shown = {line.split(": ")[0].strip() for line in lines[lines.index("labs:"):] if line.startswith("  ")}
        for path in shown:
            assert parent(path) is None or parent(path) in shown, (cap, path)


def test_card_is_deterministic(index):
    assert path_card.render(index) == path_card.render(index_documents("w", DOCS))


def test_sampled_counts_show_in_the_header():
    ix = index_documents("w", {"c": [{"a": 1}] * 3}, counts={"c": 3000})
    assert path_card.render(ix).splitlines()[2] == "  c: 3000 documents, 3 sampled"


def test_bad_inputs():
    with pytest.raises(InputError):
        path_card.build({"db": "w"})
    with pytest.raises(InputError, match="no index document for database x"):
        list(path_card.run([index_documents("w", DOCS)], dbs=["x"]))


@pytest.mark.parametrize("db", ["clinic", "racing", "club"])
def test_fixture_cards_show_collapsed_maps(db):
    from nlq.backends import EmbeddedBackend
    from nlq.index import build

    ix = next(build(EmbeddedBackend(need(WORLDS / db).parent), [db]))
    text = path_card.render(ix)
    maps = [e["path"] for e in ix["lattice"] if e["kind"] == "dynamic_map"]
    assert maps
    for path in maps:
        assert any(line.startswith(f"  {path}: dynamic_map") and " keys " in line for line in text.splitlines())
    assert "paths cut" not in text  # the default cap holds a whole fixture world


# ---------------------------------------------------------------------------
# the command


def index_jsonl(*indexes) -> bytes:
    return b"".join(io.dumps(ix) + b"\n" for ix in indexes)


def test_cli_card_text(runner, index):
    result = runner.invoke(cli, ["card", "--max-entries", "3"], input=index_jsonl(index))
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines() == [
        "# database w", "collections:", "  codes: 1 document", "  labs: 4 documents", "",
        "codes:", "  code: string", "",
        "labs:", "  _id: int", "  lab: string|null  null 25%", "",
        "[5 of 8 paths cut to fit --max-entries 3: deepest and least present first]",
    ]


def test_cli_card_db_filter_json_and_flags(runner, index, tmp_path):
    other = index_documents("v", {"d": [{"x": {"1987": 1}}]})
    path = tmp_path / "ix.jsonl"
    path.write_bytes(index_jsonl(index, other))
    result = runner.invoke(cli, ["card", str(path), "--db", "v", "--format", "json"])
    assert result.exit_code == 0, result.stderr
    assert [orjson.loads(line) for line in result.stdout.splitlines()] == [{
        "db": "v", "paths": 2, "cut": 0,
        "card": '# database v\ncollections:\n  d: 1 document\n\nd:\n'
                '  x: dynamic_map  keys "1987" (1 distinct)\n  x.<*>: int'}]
    result = runner.invoke(cli, ["card", str(path), "--db", "v", "--no-collapse"])
    assert result.stdout.splitlines()[-2:] == ["  x: object", "  x.1987: int"]
    result = runner.invoke(cli, ["card", str(path), "--top-level"])
    assert result.stdout.count("# database") == 2
    assert "  x: object" in result.stdout.splitlines()


def test_cli_card_errors(runner, tmp_path):
    result = runner.invoke(cli, ["card"], input=b"{not json\n")
    assert result.exit_code == 1 and result.stderr.startswith("nlq: line 1: malformed JSON")
    result = runner.invoke(cli, ["card", "--db", "x"], input=index_jsonl(index_documents("w", DOCS)))
    assert result.exit_code == 1
    assert result.stderr.splitlines() == ["nlq: no index document for database x",
                                          "hint: index it first: nlq index --data DIR --db x"]


def test_cli_card_help_has_an_example(runner):
    result = runner.invoke(cli, ["card", "--help"])
    assert result.stdout.rstrip().splitlines()[-1].strip() == \
        "nlq index --data example clinic | nlq card --max-entries 60"


def test_cli_help_example_runs_on_the_fixtures(runner):
    need(WORLDS / "clinic")
    indexed = runner.invoke(cli, ["index", "--data", str(WORLDS), "clinic"])
    assert indexed.exit_code == 0, indexed.stderr
    result = runner.invoke(cli, ["card", "--max-entries", "60"], input=indexed.stdout_bytes)
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    from nlq.backends import EmbeddedBackend

    backend = EmbeddedBackend(WORLDS)
    assert lines[:2] == ["# database clinic", "collections:"]
    for line, coll in zip(lines[2:5], ["lab_histories", "measurement_codes", "patients"]):
        n = backend.count("clinic", coll)
        assert line == f"  {coll}: {n} documents" + (", 400 sampled" if n > 400 else "")
    assert sum(line.startswith("  ") for line in lines[5:]) <= 60
    lines = runner.invoke(cli, ["card", "--max-entries", "30"], input=indexed.stdout_bytes).stdout.splitlines()
    assert sum(line.startswith("  ") for line in lines[5:]) == 30
    assert lines[-1].endswith("paths cut to fit --max-entries 30: deepest and least present first]")


def test_docstring_examples():
    import doctest

    import nlq.card

    assert doctest.testmod(nlq.card).failed == 0


@settings(max_examples=100, deadline=None)
@given(st.lists(st.dictionaries(st.sampled_from(["a", "b", "1987", "1990"]), st.recursive(
    st.one_of(st.none(), st.integers(), st.text(max_size=3)),
    lambda c: st.one_of(st.lists(c, max_size=3), st.dictionaries(st.sampled_from(["x", "2001", "y"]), c, max_size=3)),
    max_leaves=8), max_size=4), max_size=6), st.integers(0, 30), st.booleans(), st.booleans())
def test_card_respects_the_cap_for_any_lattice(docs, cap, collapse, top_level):
    ix = index_documents("h", {"c": docs})
    card = path_card.build(ix, max_entries=cap, collapse=collapse, top_level=top_level)
    body = card["card"].splitlines()[4:]
    assert card["paths"] == sum(line.startswith("  ") and line != "  (no documents sampled)" for line in body)
    assert card["paths"] <= cap and (card["cut"] == 0 or card["paths"] == cap)
    assert (card["cut"] > 0) == body[-1].startswith("[")
    if collapse and not top_level:
        assert card["paths"] + card["cut"] == len(ix["lattice"])
