"""`nlq score`: outcomes end to end on the embedded engine, gold caching, self-check, beta sweep."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest

from nlq.commands import cli
from nlq import importers, io, score
from nlq.backends import EmbeddedBackend
from nlq.errors import BackendError

from tests.conftest import FIXTURES

WORLD = {
    "items": [
        {"_id": 1, "name": "pen", "price": 1.5, "tags": ["office"], "stock": {"a": 3, "b": 0}},
        {"_id": 2, "name": "ink", "price": 4, "tags": ["office", "refill"], "stock": {"a": 1}},
        {"_id": 3, "name": "cup", "price": 4.0, "tags": [], "stock": {}},
        {"_id": 4, "name": "mug", "price": 6, "tags": ["kitchen"]},
    ],
}
BY_PRICE = {"collection": "items", "pipeline": [{"$sort": {"price": 1, "name": 1}},
                                                  {"$project": {"_id": 0, "name": 1}}]}
NAMES = {"collection": "items", "pipeline": [{"$project": {"_id": 0, "name": 1}}]}


class CountingBackend(EmbeddedBackend):
    """The embedded backend, remembering every pipeline it runs."""

    def __init__(self, root):
        super().__init__(root)
        self.calls = []

    def aggregate(self, db, collection, pipeline, **opts):
        self.calls.append((db, collection, pipeline))
        return super().aggregate(db, collection, pipeline, **opts)


@pytest.fixture
def data(tmp_path) -> Path:
    (tmp_path / "shop.json").write_bytes(io.dumps(WORLD))
    return tmp_path


@pytest.fixture
def backend(data):
    return CountingBackend(data)


def _score(backend, prediction, gold=NAMES, **opts):
    record = {"id": "shop/1", "db": "shop", "gold": gold}
    if prediction is not ...:
        record["prediction"] = prediction
    return next(score.run([record], backend, **opts))["score"]


def _outcome(s):
    return s["outcome"], s["near_miss"]


# --- outcomes ---------------------------------------------------------------------

def test_correct_json_prediction(backend):
    s = _score(backend, {"collection": "items", "pipeline": [{"$project": {"label": "$name"}}]})
    assert {k: v for k, v in s.items() if k != "ms"} == {
        "exc": 1, "exf1": 0.0, "outcome": "correct", "near_miss": None, "order_sensitive": False,
        "gold_rows": 4, "pred_rows": 4, "error": None, "diff": None}
    assert s["ms"] >= 0


def test_correct_mongosh_prediction_and_bare_string(backend):
    assert _outcome(_score(backend, {"mql": 'db.items.find({}, {name: 1, _id: 0})'})) == ("correct", None)
    assert _score(backend, 'db.items.find({}, {name: 1, _id: 0});')["exf1"] == 1.0
    assert _score(backend, {"mql": '{"collection": "items", "pipeline": [{"$project": {"_id": 0, "name": 1}}]}'}
                  )["exc"] == 1


@pytest.mark.parametrize("prediction", [..., None, {}, {"method": "rules"}, "  ",
                                        {"mql": "db.items.find()", "failure": {"type": "abstained"}}])
def test_no_submission(backend, prediction):
    s = _score(backend, prediction)
    assert (s["exc"], s["exf1"], s["outcome"], s["pred_rows"]) == (0, 0.0, "no_submission", None)
    failed = isinstance(prediction, dict) and "failure" in prediction
    assert s["error"] == ({"stage": "prediction", "type": "abstained", "message": s["error"]["message"]}
                          if failed else None)
    assert s["gold_rows"] == 4
    assert len(backend.calls) == 1  # the gold only


def test_invalid_parse_failure(backend):
    s = _score(backend, {"mql": "db.items.aggregate([{$match: }])"})
    assert (s["outcome"], s["error"]["stage"], s["error"]["type"]) == ("invalid", "prediction", "parse_error")


@pytest.mark.parametrize("pipeline", [[{"$out": "copy"}],
                                      [{"$project": {"t": "$$NOW"}}],
                                      [{"$facet": {"x": [{"$sample": {"size": 1}}]}}]])
def test_forbidden_operator_is_invalid_and_never_executed(backend, pipeline):
    s = _score(backend, {"collection": "items", "pipeline": pipeline})
    assert (s["outcome"], s["error"]["type"]) == ("invalid", "forbidden_operator")
    assert [c[2] for c in backend.calls] == [NAMES["pipeline"]]


def test_exec_error(backend):
    s = _score(backend, {"collection": "items", "pipeline": [{"$project": {"x": {"$add": ["$name", 1]}}}]})
    assert (s["outcome"], s["error"]["stage"], s["error"]["type"]) == ("exec_error", "prediction", "exec_error")
    assert s["ms"] is not None and s["pred_rows"] is None


def test_unknown_operator_is_an_execution_error(backend):
    s = _score(backend, {"collection": "items", "pipeline": [{"$projec": {"name": 1}}]})
    assert s["outcome"] == "exec_error"


def test_row_cap_is_an_execution_error(backend):
    s = _score(backend, {"collection": "items", "pipeline": [{"$project": {"_id": 0, "name": 1}}]},
               gold={"collection": "items", "pipeline": [{"$limit": 1}]}, max_rows=2)
    assert (s["outcome"], s["error"]["type"]) == ("exec_error", "result_too_large")


def test_empty(backend):
    s = _score(backend, {"collection": "items", "pipeline": [{"$match": {"name": "nope"}}]})
    assert (s["exc"], s["outcome"], s["pred_rows"]) == (0, "empty", 0)


def test_missing_collection_is_empty_like_mongodb(backend):
    assert _score(backend, {"collection": "nope", "pipeline": []})["outcome"] == "empty"


def test_order_only(backend):
    desc = {"collection": "items", "pipeline": [{"$sort": {"price": -1, "name": -1}},
                                                {"$project": {"_id": 0, "name": 1}}]}
    s = _score(backend, desc, gold=BY_PRICE)
    assert (s["exc"], s["exf1"], s["order_sensitive"]) == (0, 1.0, True)
    assert _outcome(s) == ("wrong_rows", "order_only")


def test_order_not_enforced_without_a_root_order_stage(backend):
    desc = {"collection": "items", "pipeline": [{"$sort": {"price": -1}}, {"$project": {"_id": 0, "name": 1}}]}
    s = _score(backend, desc)
    assert (s["exc"], s["order_sensitive"]) == (1, False)
    nested = {"collection": "items", "pipeline": [{"$facet": {"x": [{"$sort": {"name": 1}}]}}]}
    assert _score(backend, None, gold=nested)["order_sensitive"] is False


@pytest.mark.parametrize("stage, sensitive", [
    ({"$sort": {"name": 1}}, True), ({"$limit": 10}, True), ({"$skip": 0}, True),
    ({"$setWindowFields": {"sortBy": {"price": 1}, "output": {"r": {"$rank": {}}}}}, True),
    ({"$match": {}}, False), ({"$group": {"_id": "$name"}}, False),
    ({"$lookup": {"from": "items", "pipeline": [{"$sort": {"name": 1}}, {"$limit": 1}], "as": "x"}}, False),
    ({"$unionWith": {"coll": "items", "pipeline": [{"$sort": {"name": 1}}]}}, False),
])
def test_order_sensitive_only_for_root_order_stages(backend, stage, sensitive):
    gold = {"collection": "items", "pipeline": [stage, {"$project": {"_id": 0, "name": 1}}]}
    s = _score(backend, {"collection": "items", "pipeline": [stage, {"$project": {"_id": 0, "name": 1}}]}, gold=gold)
    assert (s["order_sensitive"], s["outcome"]) == (sensitive, "correct")


def test_row_subset_and_superset(backend):
    subset = {"collection": "items", "pipeline": [{"$match": {"price": {"$gt": 2}}}, {"$project": {"name": 1}}]}
    assert _outcome(_score(backend, subset)) == ("wrong_rows", "row_subset")
    superset = {"collection": "items", "pipeline": [{"$unwind": {"path": "$tags", "preserveNullAndEmptyArrays": True}},
                                                    {"$project": {"_id": 0, "name": 1}}]}
    s = _score(backend, superset)
    assert _outcome(s) == ("wrong_rows", "row_superset")
    # 5 rows (pen, ink, ink, cup, mug) against 4: overlap 4, P = 4/5, R = 1
    assert s["exf1"] == pytest.approx(2 * 0.8 / 1.8)


def test_value_mismatch(backend):
    upper = {"collection": "items", "pipeline": [{"$project": {"_id": 0, "n": {"$toUpper": "$name"}}}]}
    assert _outcome(_score(backend, upper)) == ("wrong_rows", "value_mismatch")


def test_whole_document_dump_is_rejected(backend):
    s = _score(backend, {"collection": "items", "pipeline": []})
    assert (s["exc"], s["exf1"]) == (0, 0.0)


def test_beta_option(backend):
    three = {"collection": "items", "pipeline": [{"$project": {"name": 1, "price": 1, "tags": 1}}]}
    assert _score(backend, three)["exc"] == 0
    assert _score(backend, three, beta=3)["exc"] == 1


def test_numeric_types_across_gold_and_prediction(backend):
    gold = {"collection": "items", "pipeline": [{"$group": {"_id": None, "total": {"$sum": "$price"}}}]}
    pred = {"mql": "db.items.aggregate([{$group: {_id: 0, t: {$sum: {$toDecimal: '$price'}}}}, {$project: {_id: 0}}])"}
    # the gold keeps `_id: null`, a value the prediction projected away
    assert _score(backend, pred, gold=gold)["exc"] == 0
    gold["pipeline"].append({"$project": {"_id": 0}})
    assert _score(backend, pred, gold=gold)["exc"] == 1


# --- gold defects and caching ------------------------------------------------------

@pytest.mark.parametrize("record, kind", [
    ({"db": "shop", "gold_mql": "db.items.find("}, "parse_error"),
    ({"db": "shop", "gold": {"collection": "items", "pipeline": [{"$merge": "x"}]}}, "forbidden_operator"),
    ({"db": "shop"}, "input_error"),
    ({"gold": NAMES}, "input_error"),
    ({"db": "nope", "gold": NAMES}, "unknown_db"),
    ({"db": ["shop"], "gold": NAMES}, "input_error"),
])
def test_gold_error_is_a_typed_defect_in_the_denominator(backend, record, kind):
    s = next(score.run([{**record, "prediction": NAMES}], backend))["score"]
    assert (s["exc"], s["exf1"], s["outcome"], s["error"]["stage"], s["error"]["type"]) == (
        0, 0.0, "gold_error", "gold", kind)


def test_gold_results_are_cached_per_db_and_query(backend):
    records = [{"id": str(i), "db": "shop", "gold": NAMES, "prediction": {"mql": "db.items.find({}, {name: 1})"}}
               for i in range(3)]
    records.append({"id": "x", "db": "shop", "gold_mql": "db.items.aggregate([{$project: {_id: 0, name: 1}}])",
                    "prediction": None})
    out = list(score.run(records, backend))
    assert [r["score"]["exc"] for r in out] == [1, 1, 1, 0]
    golds = [c for c in backend.calls if c[2] == NAMES["pipeline"]]
    assert len(golds) == 1 and len(backend.calls) == 4


def test_records_pass_through_unchanged_in_order(backend):
    records = [{"id": str(i), "db": "shop", "gold": NAMES, "extra": {"k": i}} for i in range(3)]
    out = list(score.run(records, backend))
    assert [{k: v for k, v in r.items() if k != "score"} for r in out] == records


# --- self-check and beta sweep -----------------------------------------------------

def test_self_check_lists_defects_and_empty_golds(backend):
    records = [{"id": "ok", "db": "shop", "gold": BY_PRICE},
               {"id": "bad", "db": "shop", "gold_mql": "db.items.aggregate([{$sample: {size: 2}}])"},
               {"id": "none", "db": "shop", "gold": {"collection": "items", "pipeline": [{"$match": {"x": 1}}]}}]
    lines = []
    out = list(score.run(records, backend, self_check=True, summary=lines.append))
    assert [r["score"]["outcome"] for r in out] == ["correct", "gold_error", "correct"]
    assert lines == [
        "self-check: 2 of 3 golds earn EXC = 1 against themselves; 1 defect; 1 empty gold "
        "(EXC = 1, but any empty prediction would be too)",
        "defect bad: forbidden_operator: $sample is forbidden (nlq runs only read-only, deterministic queries); never executed",
        "empty none: the gold returns no rows",
    ]


def test_beta_sweep_probes_and_summary(backend):
    records = [{"id": "names", "db": "shop", "gold": BY_PRICE},
               {"id": "wide", "db": "shop", "gold": {"collection": "items", "pipeline": [
                   {"$project": {"_id": 0, "name": 1, "price": 1, "tags": 1}}]}}]
    lines = []
    out = list(score.run(records, backend, beta_sweep=True, summary=lines.append))
    # items documents have 5 fields: a dump of {name} has 4 surplus values, of {name, price, tags} 2
    assert out[0]["score"]["probes"] == {"leftover_id": 1, "two_helpers": 2, "three_surplus": 3,
                                         "document_dump": 4, "empty": None, "constant": None}
    assert out[1]["score"]["probes"]["document_dump"] == 2
    summary = json.loads(lines[-1])["beta_sweep"]
    assert summary["separated_at"]["2"] == 1 and summary["separated_at"]["3"] == 0
    assert summary["smallest_separating_beta"] is None and summary["best_beta"] == 2
    assert summary["unseparated_at_beta"] == ["wide"] and summary["probed"] == 2


def test_separated_rule():
    probes = {"leftover_id": 1, "two_helpers": 2, "three_surplus": 3, "document_dump": 5,
              "empty": None, "constant": None}
    assert [b for b in range(6) if score.separated(probes, b)] == [2]


# --- the command ------------------------------------------------------------------

def _lines(stdout: str) -> list[dict]:
    return [orjson.loads(line) for line in stdout.splitlines()]


def test_cli_scores_stdin(runner, data):
    tasks = [{"id": "a", "db": "shop", "gold": NAMES, "prediction": {"mql": "db.items.find({}, {name: 1, _id: 0})"}},
             {"id": "b", "db": "shop", "gold": NAMES}]
    result = runner.invoke(cli, ["score", "--data", str(data)],
                           input=b"".join(io.dumps(t) + b"\n" for t in tasks) + b"{oops\n")
    assert result.exit_code == 0, result.stderr
    assert result.stderr == ""
    out = _lines(result.stdout)
    assert [(r.get("id"), r["score"]["outcome"]) for r in out] == [("a", "correct"), ("b", "no_submission"),
                                                                  (None, "no_submission")]
    assert out[2]["line"] == 3 and out[2]["failure"]["type"] == "malformed_input"
    assert out[2]["score"]["error"] == out[2]["failure"]  # a failed line is no benchmark defect


def test_cli_self_check_summary_on_stderr(runner, data, tmp_path):
    tasks = tmp_path / "t.jsonl"
    io.write_records([{"id": "a", "db": "shop", "gold": NAMES}], str(tasks))
    out = tmp_path / "o.jsonl"
    result = runner.invoke(cli, ["score", "--data", str(data), "--self-check", str(tasks), "-o", str(out)])
    assert result.exit_code == 0
    assert result.stdout == ""
    assert result.stderr.splitlines() == [
        "self-check: 1 of 1 golds earn EXC = 1 against themselves; 0 defects; 0 empty golds "
        "(EXC = 1, but any empty prediction would be too)"]
    assert _lines(out.read_text())[0]["score"]["exc"] == 1


def test_cli_beta_sweep_summary_is_the_last_stderr_line(runner, data):
    task = io.dumps({"id": "a", "db": "shop", "gold": BY_PRICE}) + b"\n"
    result = runner.invoke(cli, ["score", "--data", str(data), "--beta-sweep"], input=task)
    assert result.exit_code == 0, result.stderr
    assert result.stderr.splitlines() == [
        '{"beta_sweep":{"golds":1,"probed":1,"separated_at":{"0":0,"1":0,"2":1,"3":0,"4":0,"5":0,"6":0,'
        '"7":0,"8":0,"9":0,"10":0,"11":0,"12":0,"13":0,"14":0,"15":0,"16":0},"smallest_separating_beta":2,'
        '"best_beta":2,"beta":2,"unseparated_at_beta":[]}}']
    assert _lines(result.stdout)[0]["score"]["probes"]["document_dump"] == 4


def test_cli_progress_goes_to_stderr(runner, data):
    task = io.dumps({"id": "a", "db": "shop", "gold": NAMES}) + b"\n"
    result = runner.invoke(cli, ["score", "--data", str(data), "--progress"], input=task)
    assert result.exit_code == 0
    assert "score" in result.stderr and len(_lines(result.stdout)) == 1


def test_cli_usage_and_data_errors(runner, data, tmp_path):
    result = runner.invoke(cli, ["score", "--data", str(tmp_path / "absent")], input=b"")
    assert result.exit_code == 1
    assert result.stderr.splitlines()[0] == f"nlq: --data {tmp_path / 'absent'}: not a directory"
    assert runner.invoke(cli, ["score", "--data", str(data), "--beta", "-1"], input=b"").exit_code == 2


# --- acceptance: every gold earns EXC = 1 against itself ----------------------------

def _tend_v1_tasks(root: Path) -> list[dict]:
    return list(importers.run(str(root / "test.jsonl"), "tend-v1", strict=True))


@pytest.mark.shared
def test_self_check_tend_v1(tend_v1):
    lines = []
    backend = EmbeddedBackend(tend_v1 / "mongodb_data")
    out = list(score.run(_tend_v1_tasks(tend_v1), backend, self_check=True, summary=lines.append))
    assert len(out) == 524
    assert [(r["id"], r["score"]["error"]) for r in out if r["score"]["exc"] != 1] == []
    assert lines[0].startswith("self-check: 524 of 524 golds earn EXC = 1 against themselves; 0 defects;")


def test_self_check_fixture_golds():
    tasks = sorted((FIXTURES / "tasks").glob("*.jsonl"))
    if not tasks:
        pytest.skip("fixtures/tasks/*.jsonl not present yet")
    backend = EmbeddedBackend(FIXTURES / "worlds")
    for path in tasks:
        lines = []
        out = list(score.run(io.read_records(str(path)), backend, self_check=True, summary=lines.append))
        assert out, path
        assert [(r.get("id"), r["score"]["error"]) for r in out if r["score"]["exc"] != 1] == [], path
        assert [line for line in lines[1:] if line.startswith("defect")] == [], path


# --- environment errors escape; record errors stay typed ---------------------------

class DownBackend(EmbeddedBackend):
    """A backend whose database cannot be reached once a query is sent."""

    def aggregate(self, db, collection, pipeline, **opts):
        raise BackendError("cannot use MongoDB at mongodb://127.0.0.1:1: Connection refused",
                           hint="is MongoDB running at mongodb://127.0.0.1:1?")


class CrashingBackend(CountingBackend):
    """The embedded backend, with an engine bug on pipelines that hold a $round."""

    def aggregate(self, db, collection, pipeline, **opts):
        if "$round" in io.dumps(pipeline).decode():
            raise ArithmeticError("engine bug")
        return super().aggregate(db, collection, pipeline, **opts)


@pytest.mark.parametrize("opts", [{}, {"self_check": True}])
def test_an_unreachable_database_stops_the_run(data, opts):
    records = [{"id": "a", "db": "shop", "gold": NAMES, "prediction": NAMES}]
    with pytest.raises(BackendError, match="Connection refused"):
        list(score.run(records, DownBackend(data), **opts))


def test_an_unreadable_database_stops_the_run(tmp_path):
    (tmp_path / "shop.json").write_bytes(b"[1, 2]")  # listed, but not {collection: [documents]}
    with pytest.raises(BackendError, match="expected"):
        list(score.run([{"id": "a", "db": "shop", "gold": NAMES}], EmbeddedBackend(tmp_path)))


def test_cli_unreachable_database_is_one_line_and_exit_1(runner, data, monkeypatch):
    monkeypatch.setattr(EmbeddedBackend, "aggregate", DownBackend.aggregate)
    task = io.dumps({"id": "a", "db": "shop", "gold": NAMES, "prediction": NAMES}) + b"\n"
    for args in (["score", "--data", str(data)], ["score", "--data", str(data), "--self-check"],
                 ["exec", "--data", str(data), "--tasks", "-"]):
        result = runner.invoke(cli, args, input=task)
        assert result.exit_code == 1, args
        assert result.stderr.splitlines() == ["nlq: cannot use MongoDB at mongodb://127.0.0.1:1: Connection refused",
                                              "hint: is MongoDB running at mongodb://127.0.0.1:1?"]
        assert "defect" not in result.stderr and result.stdout == ""


def test_an_engine_bug_is_typed_and_the_stream_goes_on(data):
    rounded = {"collection": "items", "pipeline": [{"$project": {"_id": 0, "p": {"$round": ["$price", 0]}}}]}
    records = [{"id": "pred", "db": "shop", "gold": NAMES, "prediction": rounded},
               {"id": "gold", "db": "shop", "gold": rounded, "prediction": NAMES},
               {"id": "next", "db": "shop", "gold": NAMES, "prediction": NAMES}]
    out = [r["score"] for r in score.run(records, CrashingBackend(data))]
    assert [(s["outcome"], s["error"] and (s["error"]["stage"], s["error"]["type"])) for s in out] == [
        ("exec_error", ("prediction", "internal_error")), ("gold_error", ("gold", "internal_error")),
        ("correct", None)]
    assert out[0]["error"]["message"] == "ArithmeticError: engine bug"


@pytest.mark.parametrize("prediction", [[NAMES], 7, True])
def test_a_prediction_of_the_wrong_json_type_is_invalid(backend, prediction):
    s = _score(backend, prediction)
    assert (s["outcome"], s["error"]["type"]) == ("invalid", "input_error")
    assert "must be an object, a query string or null" in s["error"]["message"]


def test_failed_records_without_gold_are_no_submission_not_defects(backend):
    failed = {"stage": "generate", "type": "abstained", "message": "confidence 0.20 is below 0.50"}
    records = [{"line": 2, "failure": {"stage": "score", "type": "malformed_input", "message": "line 2: bad"}},
               {"id": "g", "db": "shop", "failure": failed, "prediction": None},
               {"id": "h", "db": "shop", "gold": NAMES, "failure": failed, "prediction": None},
               {"id": "ok", "db": "shop", "gold": NAMES}]
    lines = []
    out = [r["score"] for r in score.run(records, backend, self_check=True, summary=lines.append)]
    assert [s["outcome"] for s in out] == ["no_submission", "no_submission", "correct", "correct"]
    assert out[0]["error"]["type"] == "malformed_input" and out[1]["error"] == failed
    assert lines[0].startswith("self-check: 2 of 2 golds earn EXC = 1 against themselves; 0 defects;")
    assert lines[0].endswith("; 2 records failed before scoring")
    assert lines[1:] == ["skipped record 1: failed before scoring: malformed_input: line 2: bad",
                         "skipped g: failed before scoring: abstained: confidence 0.20 is below 0.50"]
    plain = [r["score"] for r in score.run(records, backend)]
    assert [s["outcome"] for s in plain] == ["no_submission", "no_submission", "no_submission", "no_submission"]
    assert plain[2]["error"] == failed and plain[3]["error"] is None


def test_score_warns_once_about_a_prediction_on_a_missing_collection(runner, data):
    wrong = {"collection": "item", "pipeline": [{"$project": {"_id": 0, "name": 1}}]}
    lines = [orjson.dumps({"id": i, "db": "shop", "gold": NAMES, "prediction": wrong}).decode() for i in range(2)]
    result = runner.invoke(cli, ["score", "--data", str(data)], input="\n".join(lines) + "\n")
    assert result.exit_code == 0, result.output
    scored = [orjson.loads(line)["score"] for line in result.stdout.splitlines()]
    assert [s["outcome"] for s in scored] == ["empty", "empty"] and [s["pred_rows"] for s in scored] == [0, 0]
    assert result.stderr == ("nlq: warning: database 'shop' has no collection 'item' (did you mean 'items'?); "
                             "it reads as empty\n")


# ---------------------------------------------------------------------------
# score.diff explains every verdict but `correct`; `report --explain ID` prints it

GROUP_NULL = {"collection": "items", "pipeline": [{"$group": {"_id": None, "n": {"$sum": 1}}}]}
COUNT = {"collection": "items", "pipeline": [{"$count": "n"}]}


def test_every_non_correct_verdict_has_a_diff(runner, data):
    records = [
        {"id": "ok", "db": "shop", "gold": NAMES, "prediction": NAMES},
        {"id": "null", "db": "shop", "gold": GROUP_NULL, "prediction": COUNT},
        {"id": "empty", "db": "shop", "gold": NAMES, "prediction": {"collection": "items", "pipeline": [
            {"$match": {"name": "none"}}]}},
        {"id": "order", "db": "shop", "gold": BY_PRICE, "prediction": {"collection": "items", "pipeline": [
            {"$sort": {"price": -1}}, {"$project": {"_id": 0, "name": 1}}]}},
        {"id": "invalid", "db": "shop", "gold": NAMES, "prediction": {"mql": "db.items.find({"}},
        {"id": "none", "db": "shop", "gold": NAMES, "prediction": None},
    ]
    scored = {r["id"]: r["score"] for r in score.run(records, EmbeddedBackend(data))}
    assert scored["ok"]["diff"] is None
    assert scored["null"]["outcome"] == "wrong_rows" and scored["null"]["diff"]["missing"]["values"] == [None]
    assert scored["empty"]["diff"]["summary"].startswith("0 rows instead of 4")
    assert scored["order"]["near_miss"] == "order_only" and scored["order"]["diff"]["order"]["position"] == 0
    assert scored["invalid"]["diff"]["summary"].startswith("invalid: prediction parse_error: ")
    assert scored["none"]["diff"] == {"summary": "no prediction was submitted"}
    assert all(s["diff"]["summary"] for name, s in scored.items() if name != "ok")


def test_report_explain_prints_the_diff_readably(runner, data, tmp_path):
    scored = tmp_path / "run.jsonl"
    lines = [{"id": "shop/1", "db": "shop", "question": "How many items?", "gold": GROUP_NULL, "prediction": COUNT},
             {"id": "shop/2", "db": "shop", "gold": NAMES, "prediction": NAMES}]
    scored.write_bytes(b"".join(io.dumps(r) + b"\n" for r in score.run(lines, EmbeddedBackend(data))))
    result = runner.invoke(cli, ["report", str(scored), "--explain", "shop/1"])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        "shop/1 in run run: wrong_rows (value_mismatch), EXC 0, EXF1 0.00",
        "  question: How many items?",
        "  why: 1 gold value with no partner: null",
        "  rows: gold 1, prediction 1, aligned one-to-one 0",
        "  gold values with no partner (1): null",
    ]
    assert runner.invoke(cli, ["report", str(scored), "--explain", "shop/2"]).stdout.startswith(
        "shop/2 in run run: correct, EXC 1")
    missing = runner.invoke(cli, ["report", str(scored), "--explain", "shop/9"])
    assert missing.exit_code == 1 and "no record with id 'shop/9' in run" in missing.stderr
