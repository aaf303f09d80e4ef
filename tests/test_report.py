"""`nlq report`: numbers, paired test, bootstrap, slices, and a snapshot of every format."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from scipy.stats import binomtest

from nlq.commands import cli
from nlq import io, report
from nlq.errors import InputError

SNAPSHOTS = Path(__file__).parent / "snapshots"
UPDATE = os.environ.get("NLQ_UPDATE_SNAPSHOTS") == "1"


def _score(outcome, near_miss=None, exf1=None):
    exc = int(outcome == "correct")
    return {"exc": exc, "exf1": exf1 if exf1 is not None else float(exc), "outcome": outcome,
            "near_miss": near_miss, "order_sensitive": False, "gold_rows": 2, "pred_rows": None,
            "ms": 1.0, "error": None}


# (outcome, near_miss, exf1) per task, for two runs over the same ten tasks.
BASELINE = [("correct",), ("empty",), ("no_submission",), ("wrong_rows", "value_mismatch", 0.5),
            ("exec_error",), ("correct",), ("wrong_rows", "row_subset", 0.8), ("invalid",),
            ("empty",), ("wrong_rows", "order_only", 1.0)]
SAG = [("correct",), ("correct",), ("correct",), ("wrong_rows", "value_mismatch", 0.25),
       ("correct",), ("correct",), ("correct",), ("wrong_rows", "row_superset", 0.5),
       ("correct",), ("wrong_rows", "order_only", 1.0)]
DBS = ["clinic", "clinic", "racing", "racing", "club", "clinic", "club", "racing", "club", "clinic"]
FLEX = ["dynamic_key", "nested_array", "dynamic_key", "polymorphic", "dynamic_key",
        "nested_array", "missing_vs_present", "dynamic_key", "polymorphic", "dynamic_key"]


def _records(outcomes, method):
    return [{"id": f"{db}/{i}", "db": db, "labels": {"schema_flex": flex},
             "prediction": {"method": method}, "score": _score(*o)}
            for i, (o, db, flex) in enumerate(zip(outcomes, DBS, FLEX))]


@pytest.fixture
def runs(tmp_path):
    paths = []
    for name, outcomes in (("baseline", BASELINE), ("sag", SAG)):
        path = tmp_path / f"{name}.scored.jsonl"
        io.write_records(_records(outcomes, name), str(path))
        paths.append(str(path))
    return paths


def _report(paths, **opts):
    return report.build(report.load_runs(paths), **opts)


def test_run_numbers_and_decomposition(runs):
    base, sag = _report(runs, ref="baseline")["runs"]
    assert (base["name"], base["n"], base["exc"]) == ("baseline", 10, 0.2)
    assert base["exf1"] == pytest.approx((1 + 0.5 + 1 + 0.8 + 1) / 10)
    assert base["counts"] == {"correct": 2, "no_submission": 1, "invalid": 1, "exec_error": 1, "empty": 2,
                              "order_only": 1, "row_subset": 1, "row_superset": 0, "value_mismatch": 1,
                              "gold_error": 0, "unscored": 0}
    for run in (base, sag):
        assert sum(run["fractions"].values()) == pytest.approx(1.0)
        assert run["fractions"]["correct"] == run["exc"]
    assert sag["exc"] == 0.7


def test_exact_mcnemar_against_the_reference(runs):
    base, sag = _report(runs, ref="baseline")["runs"]
    assert base["mcnemar"] is None
    # sag alone right on tasks 1, 2, 4, 6, 8 (c = 5); baseline alone right on none (b = 0)
    assert sag["mcnemar"] == {"ref": "baseline", "paired": 10, "ref_only": 0, "run_only": 5,
                              "p": pytest.approx(binomtest(5, 5, 0.5).pvalue)}
    assert sag["mcnemar"]["p"] == pytest.approx(0.0625)


def test_mcnemar_pairs_by_unique_id_only(tmp_path):
    a = [{"id": "x", "score": _score("correct")}, {"id": "y", "score": _score("empty")},
         {"id": "y", "score": _score("correct")}, {"score": _score("correct")}]
    b = [{"id": "x", "score": _score("empty")}, {"id": "y", "score": _score("correct")},
         {"id": "z", "score": _score("correct")}]
    test = report.mcnemar(report.Run("a", a), report.Run("b", b))
    assert test == {"ref": "b", "paired": 1, "ref_only": 0, "run_only": 1, "p": 1.0}


def test_no_discordant_pairs_gives_p_one():
    records = [{"id": "x", "score": _score("correct")}]
    assert report.mcnemar(report.Run("a", records), report.Run("b", records))["p"] == 1.0


def test_bootstrap_interval_is_deterministic_and_brackets_the_mean():
    values = [1, 0, 1, 1, 0, 0, 1, 0, 1, 1]
    lo, hi = report.bootstrap_interval(values, 2000, seed=7)
    assert report.bootstrap_interval(values, 2000, seed=7) == [lo, hi]
    assert lo < 0.6 < hi and 0 <= lo and hi <= 1
    assert report.bootstrap_interval([1, 1, 1], 100, seed=0) == [1.0, 1.0]
    assert report.bootstrap_interval([], 100, seed=0) is None
    assert report.bootstrap_interval(values, 0, seed=0) is None


def test_slices_by_dotted_fields_with_counts(runs):
    built = _report(runs, by=["db", "labels.schema_flex", "prediction.method", "labels.absent"])
    by_db = {v["value"]: v["runs"] for v in built["slices"][0]["values"]}
    assert list(by_db) == ["clinic", "club", "racing"]
    # clinic rows of baseline: correct, empty, correct, order_only (exf1 1.0)
    clinic = by_db["clinic"][0]
    assert (clinic["name"], clinic["n"], clinic["exc"]) == ("baseline", 4, 0.5)
    assert clinic["exf1"] == pytest.approx((1 + 1 + 1) / 4)
    assert {b: c for b, c in clinic["counts"].items() if c} == {"correct": 2, "empty": 1, "order_only": 1}
    assert clinic["fractions"]["empty"] == 0.25 and sum(clinic["fractions"].values()) == pytest.approx(1)
    assert by_db["clinic"][1]["exc"] == 0.75
    assert by_db["clinic"][1]["counts"]["order_only"] == 1
    flex = {v["value"]: v["runs"][1]["n"] for v in built["slices"][1]["values"]}
    assert flex == {"dynamic_key": 5, "missing_vs_present": 1, "nested_array": 2, "polymorphic": 2}
    methods = {v["value"]: [r["n"] for r in v["runs"]] for v in built["slices"][2]["values"]}
    assert methods == {"baseline": [10, 0], "sag": [0, 10]}
    assert [v["value"] for v in built["slices"][3]["values"]] == ["(missing)"]


def test_unscored_and_gold_error_records_stay_in_the_denominator():
    records = [{"id": "a", "score": _score("correct")}, {"line": 3, "failure": {"type": "malformed_input"}},
               {"id": "c", "score": {**_score("gold_error"), "error": {"stage": "gold"}}}]
    built = report.build([report.Run("r", records)], bootstrap=0)
    run = built["runs"][0]
    assert run["exc"] == pytest.approx(1 / 3)
    assert run["counts"]["unscored"] == 1 and run["counts"]["gold_error"] == 1
    assert built["buckets"][-2:] == ["gold_error", "unscored"]
    assert "GoldErr" in report.render(built, "markdown")


def test_extra_buckets_hidden_when_empty(runs):
    assert "GoldErr" not in report.render(_report(runs), "markdown")


def test_unknown_outcome_is_an_error():
    with pytest.raises(InputError, match="unknown score outcome 'great'"):
        report.build([report.Run("r", [{"id": "a", "score": {"outcome": "great"}}])])


def test_names_ref_and_duplicates(runs):
    named = report.load_runs(runs, ["A", "B"])
    assert [r.name for r in named] == ["A", "B"]
    with pytest.raises(InputError, match="2 --name for 1"):
        report.load_runs(runs[:1], ["A", "B"])
    with pytest.raises(InputError, match="two runs are named 'baseline'"):
        report.load_runs([runs[0], runs[0]])
    with pytest.raises(InputError, match="--ref nope: no such run"):
        report.build(named, ref="nope")
    assert report.run_name("out/x.scored.jsonl") == "x" and report.run_name("-") == "stdin"


def test_table_cells_are_not_rich_markup():
    built = report.build([report.Run("[red]x", [{"id": "a", "score": _score("correct")}])], bootstrap=0)
    assert report.render(built, "table").splitlines()[4].split()[0] == "[red]x"


def test_latex_escape():
    assert report.latex_escape("a_b & 50% #1 {x} ~ ^ $ \\") == (
        r"a\_b \& 50\% \#1 \{x\} \textasciitilde{} \textasciicircum{} \$ \textbackslash{}")


@pytest.mark.parametrize("fmt, suffix", [("table", "txt"), ("markdown", "md"), ("json", "json"),
                                         ("latex", "tex")])
def test_snapshot_of_every_format(runs, fmt, suffix):
    text = report.run(runs, by=["db", "labels.schema_flex"], ref="baseline", fmt=fmt, bootstrap=500, seed=1)
    snapshot = SNAPSHOTS / f"report.{suffix}"
    if UPDATE:
        snapshot.write_text(text)
    assert text == snapshot.read_text()


def test_json_format_is_the_built_report(runs):
    text = report.run(runs, ref="sag", fmt="json", bootstrap=0)
    data = json.loads(text)
    assert data["ref"] == "sag" and data["runs"][0]["mcnemar"]["run_only"] == 0
    assert data["runs"][0]["exc_ci"] is None


# --- the command ------------------------------------------------------------------

def test_cli_markdown_to_stdout(runner, runs):
    result = runner.invoke(cli, ["report", *runs, "--name", "base", "--name", "sag", "--ref", "base",
                                 "--format", "markdown", "--bootstrap", "0"])
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "### EXC, EXF1 and outcome decomposition (% of n)"
    assert lines[2] == ("| Run | n | EXC | 95% CI | EXF1 | NoSub | Invalid | Exec | Empty | Order | Subset "
                        "| Superset | Value | p vs base | paired |")
    assert lines[4] == "| base | 10 | 20.0 | - | 43.0 | 10.0 | 10.0 | 10.0 | 20.0 | 10.0 | 10.0 | 0.0 | 10.0 | ref | - |"
    assert lines[5] == "| sag | 10 | 70.0 | - | 87.5 | 0.0 | 0.0 | 0.0 | 0.0 | 10.0 | 0.0 | 10.0 | 10.0 | 0.0625 | 10 |"
    assert result.stderr == ""


def test_cli_reads_stdin_and_writes_a_file(runner, runs, tmp_path):
    out = tmp_path / "r.tex"
    result = runner.invoke(cli, ["report", "--format", "latex", "-o", str(out)],
                           input=Path(runs[1]).read_bytes())
    assert result.exit_code == 0, result.stderr
    assert result.stdout == ""
    lines = out.read_text().splitlines()
    assert lines[1] == r"\begin{tabular}{lrrrrrrrrrrrr}"
    assert lines[5].startswith(r"stdin & 10 & 70.0 & [")


def test_cli_errors_are_one_line(runner, runs):
    result = runner.invoke(cli, ["report", runs[0], "--ref", "nope"])
    assert result.exit_code == 1
    assert result.stderr == "nlq: --ref nope: no such run (runs: baseline)\n"
    result = runner.invoke(cli, ["report", "--format", "pdf", runs[0]])
    assert result.exit_code == 2


def test_slices_carry_the_decomposition_in_every_text_format(runs):
    built = _report(runs, by=["db"], bootstrap=0)
    markdown = report.render(built, "markdown").split("### By db")[1].splitlines()
    assert markdown[2] == ("| db | Run | n | EXC | EXF1 | NoSub | Invalid | Exec | Empty | Order | Subset "
                           "| Superset | Value |")
    assert markdown[4] == "| clinic | baseline | 4 | 50.0 | 75.0 | 0.0 | 0.0 | 0.0 | 25.0 | 25.0 | 0.0 | 0.0 | 0.0 |"
    single = report.build(report.load_runs(runs[:1]), by=["db"], bootstrap=0)
    lines = report.render(single, "markdown").split("### By db")[1].splitlines()
    assert lines[4] == "| clinic | 4 | 50.0 | 75.0 | 0.0 | 0.0 | 0.0 | 25.0 | 25.0 | 0.0 | 0.0 | 0.0 |"
    assert "clinic & baseline & 4 & 50.0 & 75.0 & 0.0 & 0.0 & 0.0 & 25.0 & 25.0" in report.render(built, "latex")
    assert "Empty" in report.render(built, "table").split("By db")[1]


def test_warnings_for_empty_and_unscored_runs(tmp_path):
    scored = {"id": "a", "score": _score("correct")}
    runs = [report.Run("empty", []), report.Run("raw", [{"id": "a"}]),
            report.Run("part", [scored, {"id": "b"}]), report.Run("ok", [scored])]
    assert report.run_warnings(runs) == [
        "run empty is empty (n = 0): its numbers are not defined",
        "run raw has no scored record (1 record without `score`): score it with `nlq score` first",
        "run part: 1 of 2 records have no `score` (counted as unscored, EXC = 0)"]
    with pytest.raises(InputError, match="nothing to report: none of the 2 runs holds a scored record"):
        report.build(runs[:2])


def test_cli_warns_on_a_partly_scored_run_and_fails_on_nothing(runner, tmp_path):
    part = tmp_path / "part.jsonl"
    io.write_records([{"id": "a", "score": _score("correct")}, {"id": "b"}], str(part))
    result = runner.invoke(cli, ["report", str(part), "--bootstrap", "0"])
    assert result.exit_code == 0
    assert result.stderr == "nlq: warning: run part: 1 of 2 records have no `score` (counted as unscored, EXC = 0)\n"
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    for args, text in ((["report", str(empty)], b""), (["report"], b'{"id": "a"}\n')):
        result = runner.invoke(cli, args, input=text)
        assert result.exit_code == 1 and result.stdout == ""
        assert result.stderr.splitlines() == [
            "nlq: nothing to report: the run holds no scored record",
            "hint: report reads the output of `nlq score` (records with a `score` field)"]


# --- the paper layout, narrow terminals, warnings ----------------------------------

def _paper_runs(tmp_path, invalid=False):
    """Two runs with claim-axis labels; the second has one invalid record when asked."""
    paths = []
    for name, outcomes in (("react", BASELINE if invalid else [o if o != ("invalid",) else ("empty",)
                                                                for o in BASELINE]), ("sag", SAG)):
        records = _records(outcomes, name)
        for i, r in enumerate(records):
            r["labels"]["anti_sql"] = "strong" if i % 3 else "medium"
        path = tmp_path / f"{name}.scored.jsonl"
        io.write_records(records, str(path))
        paths.append(str(path))
    return paths


def test_paper_layout_has_the_compact_columns_and_p_against_the_reference(tmp_path):
    paths = _paper_runs(tmp_path)
    text = report.run(paths, layout="paper", ref="sag", fmt="markdown", bootstrap=0)
    lines = text.splitlines()
    assert lines[0] == "### Accuracy and outcome decomposition (%)"
    assert lines[2] == "| Method | EXC | EXF1 | NoSub | Exec | Empty | Struct. | Value | p vs sag |"
    # react: empty 3, order 1 + subset 1 = Struct. 20.0; p of 5 discordant pairs all for sag
    assert lines[4] == "| react | 20.0 | 43.0 | 10.0 | 10.0 | 30.0 | 20.0 | 10.0 | 0.062 |"
    assert lines[5] == "| sag | 70.0 | 87.5 | 0.0 | 0.0 | 0.0 | 20.0 | 10.0 | - |"
    # the claim axes are the default slices, with counts in the header
    schema = text.split("### EXC (%) by labels.schema_flex")[1].splitlines()
    assert schema[2] == ("| Method | dynamic_key (5) | missing_vs_present (1) | nested_array (2) "
                         "| polymorphic (2) |")
    assert schema[4] == "| react | 20.0 | 0.0 | 50.0 | 0.0 |"
    anti = text.split("### EXC (%) by labels.anti_sql")[1].splitlines()
    assert anti[2] == "| Method | medium (4) | strong (6) |"
    assert "Struct. = order-only + subset + superset near misses" in text


def test_paper_layout_shows_invalid_only_when_non_zero(tmp_path):
    with_invalid = report.run(_paper_runs(tmp_path, invalid=True), layout="paper", fmt="markdown", bootstrap=0)
    assert "| Method | EXC | EXF1 | NoSub | Invalid | Exec |" in with_invalid
    without = report.run(_paper_runs(tmp_path), layout="paper", fmt="markdown", bootstrap=0)
    assert "Invalid" not in without.split("\n\n")[1]


def test_paper_layout_in_latex_bolds_the_best_and_writes_small_p(tmp_path):
    text = report.run(_paper_runs(tmp_path), layout="paper", ref="react", fmt="latex", bootstrap=0)
    assert r"Method & EXC & EXF\textsubscript{1} & NoSub & Exec & Empty & Struct. & Value & p vs react \\" in text
    assert r"sag & \textbf{70.0} & \textbf{87.5} &" in text
    assert report._latex_cell("<0.001") == r"$<$0.001" and report._p_paper(0.0004) == "<0.001"


def test_uneven_slice_counts_are_shown_per_cell(tmp_path):
    a = [{"id": "1", "db": "x", "score": _score("correct")}, {"id": "2", "db": "x", "score": _score("empty")}]
    built = report.build([report.Run("a", a), report.Run("b", a[:1])], by=["db"], bootstrap=0)
    table = report.tables(built, "paper")[1]
    assert table.header == ["Method", "x"] and table.rows == [["a", "50.0 (2)"], ["b", "100.0 (1)"]]


@pytest.mark.parametrize("layout", ["full", "paper"])
def test_the_table_fits_80_columns_with_one_record_per_line(tmp_path, layout):
    paths = _paper_runs(tmp_path, invalid=True)
    text = report.run(paths, layout=layout, by=["db", "labels.schema_flex", "labels.anti_sql"], ref="sag",
                      width=80, bootstrap=200)
    assert max(map(len, text.splitlines())) <= 80
    # every run still has a row of its own in the first table, with all its numbers on it
    first = text.split("\n\n")[1].splitlines()
    assert [line.split()[0] for line in first[-2:]] == ["react", "sag"]
    assert first[-1].split()[1:3] == (["10", "70.0"] if layout == "full" else ["70.0", "87.5"])
    assert "NoSub = no submission" in text and "Empty = ran, returned no rows" in text
    if layout == "full":
        assert "Exact McNemar test against sag" in text  # moved out of the narrow main table
    wide = report.run(paths, layout=layout, by=["db"], ref="sag", bootstrap=0)
    assert "p vs sag" in wide


def test_by_a_field_no_record_has_warns(runs):
    warnings = []
    report.run(runs, by=["db", "labels.nope"], bootstrap=0, warn=warnings.append)
    assert warnings == ["--by labels.nope: no record has this field (every record is (missing))"]


def test_cli_warns_on_an_absent_by_field(runner, runs):
    result = runner.invoke(cli, ["report", runs[0], "--by", "labels.nope", "--bootstrap", "0"])
    assert result.exit_code == 0
    assert "nlq: warning: --by labels.nope: no record has this field" in result.stderr


def test_a_null_field_is_present(runs):
    built = report.build([report.Run("r", [{"id": "a", "x": None, "score": _score("correct")}])], by=["x"],
                         bootstrap=0)
    assert report.slice_warnings(built) == []


# --- what predictions carry: confidence, economics, cascade --------------------------

def test_reliability_bins_and_expected_calibration_error():
    records = [{"prediction": {"confidence": c}, "score": _score("correct" if ok else "empty")}
               for c, ok in ((0.95, 1), (0.91, 1), (0.92, 0), (0.35, 0), (0.31, 1), (1.0, 1))]
    records.append({"repair": {"vote_share": 0.66}, "prediction": {}, "score": _score("correct")})
    records.append({"prediction": {"confidence": None}, "score": _score("correct")})
    rel = report.reliability(records)
    assert (rel["n"], rel["without"]) == (7, 1)
    assert rel["sources"] == ["prediction.confidence", "repair.vote_share"]
    top, third, sixth = rel["bins"][9], rel["bins"][3], rel["bins"][6]
    assert (top["n"], top["exc"]) == (4, 0.75) and top["confidence"] == pytest.approx((0.95 + 0.91 + 0.92 + 1) / 4)
    assert (third["n"], third["exc"]) == (2, 0.5) and (sixth["n"], sixth["exc"]) == (1, 1.0)
    assert rel["bins"][0] == {"lo": 0.0, "hi": 0.1, "n": 0, "confidence": None, "exc": None}
    expected = (4 * abs(0.75 - top["confidence"]) + 2 * abs(0.5 - 0.33) + 1 * abs(1 - 0.66)) / 7
    assert rel["ece"] == pytest.approx(expected)
    assert report.reliability([{"score": _score("correct")}]) is None


def test_economics_from_usage_repair_and_steps():
    records = [
        {"prediction": {"usage": {"model_calls": 3, "prompt_tokens": 100, "completion_tokens": 20}},
         "repair": {"rounds": [1, 2, 0], "attempts": 3, "usage": {"model_calls": 2, "prompt_tokens": 5}},
         "score": _score("correct")},
        {"prediction": {"usage": {"model_calls": 1, "prompt_tokens": 50, "completion_tokens": 10}, "steps": 14},
         "repair": {"rounds": 2, "attempts": 1}, "score": _score("empty")},
        {"prediction": {"steps": 6}, "score": _score("empty")},
        {"prediction": None, "score": _score("no_submission")},
    ]
    econ = report.economics(records)
    assert econ == {"tasks_with_usage": 2, "model_calls": 3.0, "tokens": (125 + 60) / 2,
                    "tasks_with_repair": 2, "repair_rounds": 5 / 4, "tasks_with_steps": 2, "react_steps": 10.0}
    assert report.economics([{"score": _score("correct")}]) is None
    built = report.build([report.Run("sag", records)], bootstrap=0)
    table = report.tables(built)[-2 if built["runs"][0]["reliability"] else -1]
    assert table.header == ["Run", "n", "Calls/task", "Tokens/task", "Rounds/attempt", "Steps/task"]
    assert table.rows == [["sag", "4", "3.00", "92", "1.25", "10.0"]]


def _cascade_records(threshold, answers):
    return [{"id": str(i), "prediction": {"method": "cascade", "confidence": 0.5,
                                          "cascade": {"threshold": threshold, "answered_by": by}},
             "score": _score("correct" if ok else "empty")} for i, (by, ok) in enumerate(answers)]


def test_a_cascade_run_is_one_measured_point():
    run = report.Run("c", _cascade_records(0.8, [("rules", 1), ("rules", 0), ("card", 1), ("card", 1)]))
    assert report.cascade_point(run) == {"run": "c", "threshold": 0.8, "exc": 0.75, "calls_saved": 0.5, "n": 4}
    assert report.cascade_point(report.Run("r", [{"score": _score("correct")}])) is None
    mixed = report.Run("m", _cascade_records(0.8, [("rules", 1)]) + _cascade_records(0.5, [("rules", 1)]))
    with pytest.raises(InputError, match="2 distinct thresholds"):
        report.cascade_point(mixed)


def test_cascade_curve_over_every_threshold():
    cheap = report.Run("rules", [{"id": str(i), "prediction": {"confidence": c}, "score": _score("correct" if ok else "empty")}
                                 for i, (c, ok) in enumerate(((0.9, 1), (0.6, 0), (0.3, 1), (None, 0)))])
    model = report.Run("llm", [{"id": str(i), "score": _score("correct" if ok else "empty")}
                               for i, ok in enumerate((0, 1, 0, 1))])
    curve = report.cascade_curve(cheap, model)
    assert (curve["run"], curve["fallback"], curve["paired"]) == ("rules", "llm", 4)
    got = [(p["threshold"], p["exc"], p["calls_saved"]) for p in curve["points"]]
    # t=0: rules answers 3 (1, 0, 1), the one without confidence falls back (1) -> 3/4
    assert got == [(0.0, 0.75, 0.75), (0.3, 0.75, 0.75), (0.6, 0.5, 0.5), (0.9, 0.75, 0.25), (1.0, 0.5, 0.0)]
    built = report.build([cheap, model], cascade_fallback="llm", bootstrap=0)
    assert built["cascade_curves"] == [curve]
    with pytest.raises(InputError, match="--cascade-fallback nope: no such run"):
        report.build([cheap, model], cascade_fallback="nope")
