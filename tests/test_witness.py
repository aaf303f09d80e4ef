"""nlq.witness and `nlq witness`: literals bound to stored values and dynamic keys."""

from __future__ import annotations

import datetime as dt

import orjson
import pytest
from hypothesis import given, settings, strategies as st

from nlq.commands import cli
from nlq import io
from nlq import witness as witnesses
from nlq.index import index_documents
from tests.conftest import FIXTURES, WORLDS, need

TASKS = FIXTURES / "tasks"

UTC = dt.timezone.utc

WORLD = {
    "lab_histories": [
        {"patient_id": "P00001", "lab": "Central Lab",
         "values_by_year": {"1987": {"HBA1C": {"readings": [5.1]}}, "1990": {"GLU": {"readings": [6.2]}}}},
        {"patient_id": "P00002", "lab": "North Lab",
         "values_by_year": {"1991": {"HBA1C": {"readings": [7.4]}}}},
    ],
    "patients": [
        {"patient_id": "P00001", "diabetes_type": "Type 2", "ward": "Cardiology", "city": "São Paulo",
         "admitted": dt.datetime(2021, 3, 5, tzinfo=UTC), "diagnoses": ["E11.9", "I10"]},
        {"patient_id": "P00002", "diabetes_type": "Type 1", "ward": "Nephrology", "city": "Oslo",
         "admitted": dt.datetime(2022, 1, 9, tzinfo=UTC), "diagnoses": ["E10.9"]},
    ],
    "measurement_codes": [{"code": "HBA1C", "name": "Hemoglobin A1c"}, {"code": "GLU", "name": "Fasting glucose"}],
}


@pytest.fixture(scope="module")
def index():
    return index_documents("clinic", WORLD)


def short(found):
    return [(w["term"], w["source"], w["hard"], [(m["stored"], m["kind"], m["collection"], m["path"])
                                                 for m in w["matches"]]) for w in found]


def test_the_papers_example_1987_binds_to_a_dynamic_key(index):
    assert short(witnesses.find("What was the HbA1c reading in 1987?", index)) == [
        ("1987", "number", True, [("1987", "key", "lab_histories", "values_by_year")]),
        ("HbA1c", "title", True, [("HBA1C", "key", "lab_histories", "values_by_year.<*>"),
                                  ("HBA1C", "value", "measurement_codes", "code")]),
    ]


def test_literal_kinds(index):
    found = short(witnesses.find(
        'Which "type 2" patients of Central Lab admitted on March 5, 2021 have E11.9 in Sao Paulo?', index))
    assert found == [
        ("type 2", "quoted", True, [("Type 2", "value", "patients", "diabetes_type")]),
        ("March 5, 2021", "date", True, [(dt.datetime(2021, 3, 5, tzinfo=UTC), "value", "patients", "admitted")]),
        ("E11.9", "code", True, [("E11.9", "value", "patients", "diagnoses[]")]),
        ("Central Lab", "title", True, [("Central Lab", "value", "lab_histories", "lab")]),
        ("Sao Paulo", "title", True, [("São Paulo", "value", "patients", "city")]),
    ]


@pytest.mark.parametrize("question", ["admitted 2021-03-05", "admitted 5 March 2021", "admitted Mar. 5th, 2021"])
def test_date_forms(index, question):
    assert short(witnesses.find(question, index)) == [
        (question.split("admitted ")[1], "date", True,
         [(dt.datetime(2021, 3, 5, tzinfo=UTC), "value", "patients", "admitted")])]


def test_unmatched_quoted_literals_are_reported_soft(index):
    assert short(witnesses.find("Patients in 'Atlantis'?", index)) == [("Atlantis", "quoted", False, [])]


def test_a_quoted_name_stored_in_two_fields_gives_each_word():
    people = index_documents("staff", {"staff": [{"first_name": "Linda", "last_name": "Smith", "city": "Oslo"},
                                                 {"first_name": "Tom", "last_name": "Oslo", "city": "Rome"}]})
    assert short(witnesses.find('Clubs of "Linda Smith"?', people)) == [
        ("Linda Smith", "quoted", False, []),
        ("Linda", "quoted_part", True, [("Linda", "value", "staff", "first_name")]),
        ("Smith", "quoted_part", True, [("Smith", "value", "staff", "last_name")])]
    # a word stored nowhere, or a phrase that is stored whole: no parts
    assert [w["term"] for w in witnesses.find('Clubs of "Linda Jones"?', people)] == ["Linda Jones"]
    assert [w["term"] for w in witnesses.find('Clubs of "Linda"?', people)] == ["Linda"]


def test_unmatched_other_literals_are_not_reported(index):
    assert witnesses.find("How many patients are older than 70 in Bergen, ZZ9?", index) == []


def test_normalization_singular_plural_case_accents(index):
    assert short(witnesses.find("cardiology wards and the nephrologies", index))[0][3] == [
        ("Cardiology", "value", "patients", "ward")]
    assert short(witnesses.find("central labs", index)) == [
        ("central labs", "ngram", True, [("Central Lab", "value", "lab_histories", "lab")])]


def test_title_phrases_lose_a_capitalized_opening_word(index):
    assert short(witnesses.find("Which North Lab patients?", index)) == [
        ("North Lab", "title", True, [("North Lab", "value", "lab_histories", "lab")])]
    assert witnesses.find("Which Patients?", index) == []


def test_longest_ngram_wins(index):
    assert [w["term"] for w in witnesses.find("readings of fasting glucose", index)] == ["fasting glucose"]


def test_year_matches_dates_by_year_softly(index):
    found = witnesses.find("admitted in 2022", index)
    assert [(w["term"], w["matches"], w["hard"]) for w in found] == [("2022", [
        {"stored": dt.datetime(2022, 1, 9, tzinfo=UTC), "kind": "value", "collection": "patients",
         "path": "admitted", "frequency": 1, "part": "year"}], False)]


def test_year_parts_of_dates_do_not_count_as_locations():
    when = [dt.datetime(1987, 1, 1, tzinfo=UTC)]
    ix = index_documents("w", {"a": [{"d1": when[0], "d2": when[0], "d3": when[0], "m": {"1987": 1}}]})
    found = witnesses.find("in 1987", ix, hard_max=1)
    assert [(m["path"], m.get("part")) for m in found[0]["matches"]] == [
        ("m", None), ("d1", "year"), ("d2", "year"), ("d3", "year")]
    assert found[0]["hard"] is True


def test_hard_max_threshold():
    ix = index_documents("w", {f"c{i}": [{"name": "Alpha"}] for i in range(4)})
    assert witnesses.find("Alpha", ix, hard_max=3)[0]["hard"] is False  # 4 locations
    assert witnesses.find("Alpha", ix, hard_max=4)[0]["hard"] is True
    assert witnesses.find("Alpha", ix, hard_max=0)[0]["hard"] is False
    assert len({(m["collection"], m["path"]) for m in witnesses.find("Alpha", ix)[0]["matches"]}) == 4


def test_nothing_is_taken_inside_a_quoted_literal(index):
    assert short(witnesses.find('Patients of "Central Lab E11.9 1987"', index)) == [
        ("Central Lab E11.9 1987", "quoted", False, [])]


def test_witnesses_do_not_repeat_a_term(index):
    found = witnesses.find('HBA1C, "HBA1C" and hba1c', index)
    assert [(w["term"], w["source"]) for w in found] == [("HBA1C", "quoted")]


# ---------------------------------------------------------------------------
# the stage


def test_run_adds_witnesses_and_never_reads_gold():
    class Guarded(dict):
        def __getitem__(self, key):
            assert key not in ("gold", "gold_mql", "labels")
            return super().__getitem__(key)

        def get(self, key, default=None):
            assert key not in ("gold", "gold_mql", "labels")
            return super().get(key, default)

    ix = index_documents("clinic", WORLD)
    record = Guarded(id="t1", db="clinic", question="in 1987", gold={"pipeline": []}, labels={})
    out = list(witnesses.run([record], {"clinic": ix}))
    assert out[0]["witnesses"][0]["term"] == "1987"


def test_run_failures_flow_on(index):
    earlier = {"id": "x", "failure": {"stage": "input", "type": "malformed_input", "message": "m"}}
    records = [earlier, {"id": "a", "db": "clinic"}, {"id": "b", "db": "nope", "question": "q"},
               {"id": "c", "db": "clinic", "question": "  "}, {"id": "d", "question": "q"}]
    out = list(witnesses.run(records, {"clinic": index}))
    assert out[0] is earlier and "witnesses" not in out[0]
    assert [r["failure"]["type"] for r in out[1:]] == ["missing_question", "unknown_db", "missing_question",
                                                        "input_error"]
    assert out[4]["failure"]["message"] == ('the record has no db: add "db": NAME, the database its question '
                                            'is about (indexes: clinic)')
    assert out[2]["failure"] == {"stage": "witness", "type": "unknown_db",
                                 "message": "no index document for db 'nope' (index has: clinic)"}


# ---------------------------------------------------------------------------
# the command


def test_cli_witness(runner, index, tmp_path):
    path = tmp_path / "ix.jsonl"
    path.write_bytes(io.dumps(index_documents("other", {"c": [{"a": 1}]})) + b"\n" + io.dumps(index) + b"\n")
    tasks = (b'{"id": "t1", "db": "clinic", "question": "Mean HBA1C in 1987?", "gold_mql": "db.x.aggregate([])"}\n'
             b'{"id": "t2", "db": "clinic"}\n'
             b'not json\n')
    result = runner.invoke(cli, ["witness", "--index", str(path), "--hard-max", "1"], input=tasks)
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines() == [
        '{"id":"t1","db":"clinic","question":"Mean HBA1C in 1987?","gold_mql":"db.x.aggregate([])",'
        '"witnesses":[{"term":"HBA1C","source":"code","matches":['
        '{"stored":"HBA1C","kind":"key","collection":"lab_histories","path":"values_by_year.<*>","frequency":2},'
        '{"stored":"HBA1C","kind":"value","collection":"measurement_codes","path":"code","frequency":1}],'
        '"hard":false},'
        '{"term":"1987","source":"number","matches":['
        '{"stored":"1987","kind":"key","collection":"lab_histories","path":"values_by_year","frequency":1}],'
        '"hard":true}]}',
        '{"id":"t2","db":"clinic","failure":{"stage":"witness","type":"missing_question",'
        '"message":"the record has no question text"}}',
        '{"line":3,"failure":{"stage":"witness","type":"malformed_input","message":"line 3: malformed JSON: '
        + orjson.loads(result.stdout.splitlines()[2])["failure"]["message"].split("malformed JSON: ")[1] + '"}}',
    ]


def test_cli_witness_strict_and_bad_index(runner, index, tmp_path):
    path = tmp_path / "ix.jsonl"
    path.write_bytes(io.dumps(index) + b"\n")
    result = runner.invoke(cli, ["witness", "--index", str(path), "--strict"], input=b"oops\n")
    assert result.exit_code == 1 and result.stderr.startswith("nlq: line 1: malformed JSON")
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b'{"db": "x"}\n')
    result = runner.invoke(cli, ["witness", "--index", str(bad)], input=b"")
    assert result.exit_code == 1
    assert result.stderr == f"nlq: {bad}: not an index document (build one with `nlq index`)\n"


def test_cli_witness_help_has_an_example(runner):
    result = runner.invoke(cli, ["witness", "--help"])
    assert result.stdout.rstrip().splitlines()[-1].strip() == \
        "nlq witness --index out/clinic.index.jsonl example:tasks/clinic.jsonl"


def test_cli_help_example_runs_on_the_fixtures(runner, tmp_path):
    tasks = need(TASKS / "clinic.jsonl")
    out = tmp_path / "clinic.index.jsonl"
    assert runner.invoke(cli, ["index", "--data", str(WORLDS), "clinic", "-o", str(out)]).exit_code == 0
    result = runner.invoke(cli, ["witness", "--index", str(out), str(tasks)])
    assert result.exit_code == 0, result.stderr
    records = [orjson.loads(line) for line in result.stdout.splitlines()]
    inputs = [orjson.loads(line) for line in tasks.read_bytes().splitlines() if line.strip()]
    assert [r["id"] for r in records] == [t["id"] for t in inputs]
    assert all("witnesses" in r for r in records)
    hba1c = next(r for r in records if "HBA1C" in r["question"])
    assert any(m["kind"] == "key" and m["path"] == "values_by_year.<*>"
               for w in hba1c["witnesses"] if w["term"] == "HBA1C" for m in w["matches"])


def test_docstring_examples():
    import doctest

    import nlq.witness

    assert doctest.testmod(nlq.witness).failed == 0


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=80))
def test_find_never_crashes_and_only_reports_indexed_matches(question):
    ix = index_documents("clinic", WORLD)
    for w in witnesses.find(question, ix):
        assert w["matches"] or w["source"] == "quoted"
        assert all(m in sum(ix["values"].values(), []) for m in w["matches"])
        assert isinstance(w["hard"], bool)
