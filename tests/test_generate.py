"""The generate frame and the `rules` method, over a small hand-built index."""

from __future__ import annotations

import orjson
import pytest

from commands import cli
from nlq import generate
from nlq.methods import rules


def entry(collection, path, kind="scalar", types=None, present=4):
    return {"collection": collection, "path": path, "kind": kind, "types": types or {"string": present},
            "present": present, "null": 0, "missing": 0, "empty": 0, "array_len": None}


INDEX = {
    "db": "fleet",
    "collections": {"ship": {"count": 4, "sampled": 4}, "port": {"count": 2, "sampled": 2}},
    "lattice": [
        entry("ship", "Name"), entry("ship", "Flag"), entry("ship", "Tonnage", types={"int": 4}),
        entry("ship", "Built_Year", types={"int": 4}),
        entry("ship", "captain", kind="array", types={"array": 4}),
        entry("ship", "captain[].Name"), entry("ship", "captain[].Rank"),
        entry("ship", "captain[].age", types={"int": 6}),
        entry("port", "Port_Name"), entry("port", "Country"),
    ],
    "values": {},
}
PANAMA = {"term": "Panama", "hard": True,
          "matches": [{"stored": "Panama", "kind": "value", "collection": "ship", "path": "Flag", "frequency": 2}]}


def ir_of(question, witnesses=()):
    return rules.build_ir(question, list(witnesses), INDEX)


def pipeline_of(question, witnesses=()):
    return rules.render(ir_of(question, witnesses))


def test_split_name_handles_camel_and_snake_case():
    assert rules.split_name("Openning_year") == ["openning", "year"]
    assert rules.split_name("StuID") == ["stu", "id"]
    assert rules.split_name("captain[]") == ["captain"]


def test_collection_resolved_from_names_and_fields():
    ir = ir_of("List the port names and countries.")
    assert ir.collection == "port"
    assert [f.mql for f in ir.outputs] == ["Port_Name", "Country"]


def test_count_per_group_unwinds_the_counted_array():
    assert pipeline_of("How many captains are in each rank?") == [
        {"$unwind": "$captain"},
        {"$group": {"_id": "$captain.Rank", "count": {"$sum": 1}}},
        {"$project": {"_id": 0, "Rank": "$_id", "count": 1}},
    ]


def test_superlative_sorts_and_limits():
    assert pipeline_of("Show the name of the ship with the highest tonnage.") == [
        {"$sort": {"Tonnage": -1}}, {"$limit": 1}, {"$project": {"_id": 0, "Name": "$Name"}},
    ]


def test_witnessed_literal_binds_exact_stored_value_and_average_aggregates():
    assert pipeline_of("What is the average tonnage of ships with flag Panama?", [PANAMA]) == [
        {"$match": {"Flag": "Panama"}},
        {"$group": {"_id": None, "avg_Tonnage": {"$avg": "$Tonnage"}}},
        {"$project": {"_id": 0, "avg_Tonnage": 1}},
    ]


def test_negated_literal_becomes_ne():
    ir = ir_of("Show the names of ships whose flag is not Panama.", [PANAMA])
    assert [(f.field.mql, f.op, f.value) for f in ir.filters] == [("Flag", "$ne", "Panama")]


def test_numeric_comparison_binds_nearest_numeric_field():
    ir = ir_of("Show names of ships with tonnage more than 5000.")
    assert [(f.field.mql, f.op, f.value) for f in ir.filters] == [("Tonnage", "$gt", 5000)]
    ir = ir_of("Which ships were built before 1990?")
    assert [(f.field.mql, f.op, f.value) for f in ir.filters] == [("Built_Year", "$lt", 1990)]
    ir = ir_of("List ships with tonnage between 100 and 200.")
    assert [(f.op, f.value) for f in ir.filters] == [("$gte", 100), ("$lte", 200)]


def test_plain_count_and_distinct_count():
    assert pipeline_of("How many ships are there?") == [{"$count": "count"}]
    assert pipeline_of("How many different flags are there?") == [
        {"$group": {"_id": "$Flag"}}, {"$count": "count"}]


def test_order_phrase_sorts_by_the_named_field():
    assert pipeline_of("List the names of ships in descending order of tonnage.") == [
        {"$sort": {"Tonnage": -1}}, {"$project": {"_id": 0, "Name": "$Name"}}]


def test_most_common_groups_counts_and_takes_one():
    assert pipeline_of("What is the most common flag of ships?") == [
        {"$group": {"_id": "$Flag", "count": {"$sum": 1}}}, {"$sort": {"count": -1, "_id": 1}}, {"$limit": 1},
        {"$project": {"_id": 0, "Flag": "$_id", "count": 1}}]


def test_text_patterns_and_array_sizes():
    ir = ir_of("Find the names of ships whose name contains letter \"a\".")
    assert [(f.field.mql, f.op, f.value) for f in ir.filters] == [("Name", "$regex", "a")]
    assert [f.mql for f in ir.outputs] == ["Name"]
    assert pipeline_of("Show names of ships with at least two captains.") == [
        {"$match": {"$expr": {"$gte": [{"$size": {"$ifNull": ["$captain", []]}}, 2]}}},
        {"$project": {"_id": 0, "Name": "$Name"}}]
    assert pipeline_of("Show the name of the ship with the most captains.") == [
        {"$addFields": {"_size": {"$size": {"$ifNull": ["$captain", []]}}}}, {"$sort": {"_size": -1}},
        {"$limit": 1}, {"$project": {"_id": 0, "Name": "$Name"}}]


def test_abbreviated_field_names():
    index = {"db": "s", "collections": {"Student": {"count": 1, "sampled": 1}},
             "lattice": [entry("Student", "Fname"), entry("Student", "LName"), entry("Student", "Age", types={"int": 1})]}
    ir = rules.build_ir("What are the first names of students older than 20?", [], index)
    assert [f.mql for f in ir.outputs] == ["Fname"]
    assert [(f.field.mql, f.op, f.value) for f in ir.filters] == [("Age", "$gt", 20)]


def test_confidence_is_bounded_and_lower_when_ungrounded():
    good = rules.confidence(ir_of("How many captains are in each rank?"))
    poor = rules.confidence(ir_of("Which vessels sailed through storms, frequently?"))
    assert 0.15 <= poor < good <= 0.97


POISON = {"collection": "port", "pipeline": [{"$match": {"Country": "Atlantis"}}]}


def run_one(record, **options):
    context = generate.Context({"fleet": INDEX}, **options)
    return next(generate.run([record], "rules", context))


def test_method_never_sees_gold_or_labels():
    clean = {"id": "fleet/1", "db": "fleet", "question": "How many captains are in each rank?"}
    poisoned = {**clean, "gold": POISON, "gold_mql": "db.port.find({Country: 'Atlantis'})",
                "labels": {"schema_flex": "event_stream", "hint": "port"}}
    a, b = run_one(clean)["prediction"], run_one(poisoned)["prediction"]
    for p in (a, b):
        p.pop("ms")
    assert a == b
    assert a["disclosure"] == ["grounding_index", "question", "witnesses"]
    assert generate.task_view(poisoned) == clean


def test_min_confidence_abstains_with_a_typed_failure():
    out = run_one({"id": "x", "db": "fleet", "question": "Which vessels sailed through storms?"},
                  min_confidence=0.96)
    assert out["prediction"] is None
    assert out["failure"]["type"] == "abstained" and out["failure"]["stage"] == "generate"


def test_records_without_question_or_with_earlier_failure_flow_on():
    failed = {"id": "y", "failure": {"stage": "witness", "type": "input_error", "message": "m"}}
    assert run_one(failed) == failed
    out = run_one({"id": "z", "db": "fleet"})
    assert out["failure"]["type"] == "error" and out["prediction"] is None


def test_cli_writes_one_record_per_input_line(runner, tmp_path):
    index_file = tmp_path / "fleet.index.jsonl"
    index_file.write_bytes(orjson.dumps(INDEX) + b"\n")
    lines = [orjson.dumps({"id": "a", "db": "fleet", "question": "How many ships are there?"}).decode(),
             "{not json", orjson.dumps({"id": "b", "db": "nope", "question": "How many ships?"}).decode()]
    result = runner.invoke(cli, ["generate", "--index", str(index_file)], input="\n".join(lines) + "\n")
    assert result.exit_code == 0, result.output
    out = [orjson.loads(line) for line in result.stdout.splitlines()]
    assert [r.get("id") for r in out] == ["a", None, "b"]
    assert out[0]["prediction"]["pipeline"] == [{"$count": "count"}]
    assert out[1]["failure"]["type"] == "malformed_input" and out[1]["line"] == 2
    assert "no grounding index for database 'nope'" in out[2]["failure"]["message"]


def test_cli_rejects_unknown_method(runner, tmp_path):
    index_file = tmp_path / "i.jsonl"
    index_file.write_bytes(orjson.dumps(INDEX) + b"\n")
    result = runner.invoke(cli, ["generate", "--method", "oracle", "--index", str(index_file)], input="")
    assert result.exit_code == 2


# --- dynamic maps ------------------------------------------------------------------

LABS = {
    "db": "labs",
    "collections": {"lab_histories": {"count": 3, "sampled": 3}},
    "lattice": [
        entry("lab_histories", "patient_id"), entry("lab_histories", "lab"),
        entry("lab_histories", "values_by_year", kind="dynamic_map", types={"object": 3}),
        entry("lab_histories", "values_by_year.<*>", kind="dynamic_map", types={"object": 5}),
        entry("lab_histories", "values_by_year.<*>.<*>", kind="object", types={"object": 9}),
        entry("lab_histories", "values_by_year.<*>.<*>.count", types={"int": 9}),
        entry("lab_histories", "values_by_year.<*>.<*>.readings", kind="array", types={"array": 9}),
        entry("lab_histories", "values_by_year.<*>.<*>.readings[]", types={"double": 20}),
    ],
}


def key_witness(term, path):
    return {"term": term, "hard": True,
            "matches": [{"stored": term, "kind": "key", "collection": "lab_histories", "path": path, "frequency": 3}]}


def test_map_keys_are_fields_named_after_the_map():
    fields = rules.schema_of(LABS)["lab_histories"]
    keys = {f.mql: f.words for f in fields if f.kind == "key"}
    assert keys == {"values_by_year.<*>": ("year",), "values_by_year.<*>.<*>": ()}
    count = next(f for f in fields if f.mql == "values_by_year.<*>.<*>.count")
    assert count.maps == ("values_by_year", "values_by_year.<*>")


def test_physical_paths_bind_keys_and_follow_expansions():
    ir = rules.IR(collection="lab_histories", bound_keys={"values_by_year.<*>": "HBA1C"},
                  expand=["values_by_year"])
    assert rules.physical("values_by_year.<*>.<*>.count", ir) == "_values_by_year.v.HBA1C.count"
    assert rules.physical("values_by_year.<*>", ir, key=True) == "_values_by_year.k"
    ir = rules.IR(collection="lab_histories", bound_keys={"values_by_year": "1987"})
    assert rules.physical("values_by_year.<*>.<*>.count", ir) == "values_by_year.1987.<*>.count"


def test_witnessed_year_key_is_addressed_directly():
    # the paper's example: the literal 1987 binds to a dynamic key of values_by_year
    pipeline = pipeline_of_labs("Show the patient id and HBA1C count in 1987.",
                                [key_witness("1987", "values_by_year"),
                                 key_witness("HBA1C", "values_by_year.<*>")])
    assert pipeline[0] == {"$match": {"values_by_year.1987": {"$exists": True},
                                      "values_by_year.1987.HBA1C": {"$exists": True}}}
    assert {"$project": {"_id": 0, "patient_id": "$patient_id",
                         "count": "$values_by_year.1987.HBA1C.count"}} in pipeline


def test_ranging_over_a_map_expands_it():
    pipeline = pipeline_of_labs("For each year, what is the total HBA1C count?",
                                [key_witness("HBA1C", "values_by_year.<*>")])
    assert pipeline[:3] == [
        {"$addFields": {"_values_by_year": {"$objectToArray": "$values_by_year"}}},
        {"$unwind": "$_values_by_year"},
        {"$match": {"_values_by_year.v.HBA1C": {"$exists": True}}},
    ]
    assert pipeline[3]["$group"]["_id"] == "$_values_by_year.k"
    assert pipeline[3]["$group"]["sum_values_by_year_count"] == {"$sum": "$_values_by_year.v.HBA1C.count"}


def pipeline_of_labs(question, witnesses):
    return rules.render(rules.build_ir(question, witnesses, LABS))


def test_multiword_collection_name_is_the_entity_not_a_field():
    ir = rules.build_ir("How many lab histories are there?", [], LABS)
    assert ir.mentions == [] and rules.render(ir) == [{"$count": "count"}]


def test_count_groups_only_by_attributes_named_before_it():
    assert pipeline_of("Show each flag and the number of ships.")[0] == {
        "$group": {"_id": "$Flag", "count": {"$sum": 1}}}
    assert pipeline_of("How many ships have a flag?") == [{"$count": "count"}]


def test_most_common_first_orders_without_limit():
    pipeline = pipeline_of("List flags of ships, most common first.")
    assert {"$limit": 1} not in pipeline and pipeline[1] == {"$sort": {"count": -1, "_id": 1}}


def test_year_of_a_date_field_is_a_date_range():
    import datetime as dt

    index = {"db": "v", "collections": {"visits": {"count": 1, "sampled": 1}},
             "lattice": [entry("visits", "type"), entry("visits", "date", types={"date": 1})]}
    witness = {"term": "2021", "hard": True, "matches": [
        {"stored": "2021-01-01", "kind": "value", "collection": "visits", "path": "date", "frequency": 4,
         "part": "year"}]}
    ir = rules.build_ir("How many visits took place in 2021?", [witness], index)
    utc = dt.timezone.utc
    assert [(f.op, f.value) for f in ir.filters] == [
        ("$gte", dt.datetime(2021, 1, 1, tzinfo=utc)), ("$lt", dt.datetime(2022, 1, 1, tzinfo=utc))]
