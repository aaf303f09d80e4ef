"""The generate frame and the `rules` method, over a small hand-built index."""

from __future__ import annotations

import orjson
import pytest

from nlq.commands import cli
from nlq import generate
from nlq.methods import rules
from nlq.methods.rules.render import count_stages

COUNT = count_stages()  # one row {count: N}, {count: 0} on no documents


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
        {"$sort": {"_id": 1}},  # groups are listed by their key when no order is asked
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
        {"$project": {"_id": 0, "avg_Tonnage": 1}},  # no support count: the question does not ask for one
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
    assert pipeline_of("How many ships are there?") == COUNT
    assert pipeline_of("How many different flags are there?") == [
        {"$group": {"_id": "$Flag"}}, *COUNT]


def test_order_phrase_sorts_by_the_named_field():
    assert pipeline_of("List the names of ships in descending order of tonnage.") == [
        {"$sort": {"Tonnage": -1}}, {"$project": {"_id": 0, "Name": "$Name"}}]


def test_most_common_groups_counts_and_takes_one():
    assert pipeline_of("What is the most common flag of ships?") == [
        {"$group": {"_id": "$Flag", "count": {"$sum": 1}}}, {"$sort": {"count": -1, "_id": 1}}, {"$limit": 1},
        {"$project": {"_id": 0, "Flag": "$_id"}}]  # the count ranks; only the flag is asked for
    assert pipeline_of("How many ships have each flag? Most common first.")[-1] == {
        "$project": {"_id": 0, "Flag": "$_id", "count": 1}}


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


def test_confidence_is_a_probability_and_lower_when_ungrounded():
    good = rules.confidence(ir_of("How many captains are in each rank?"))
    poor = rules.confidence(ir_of("Which vessels sailed through storms, frequently?"))
    assert 0.0 <= poor < good <= 1.0


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
    assert out["failure"]["type"] == "missing_question" and out["prediction"] is None


def test_cli_writes_one_record_per_input_line(runner, tmp_path):
    index_file = tmp_path / "fleet.index.jsonl"
    index_file.write_bytes(orjson.dumps(INDEX) + b"\n")
    lines = [orjson.dumps({"id": "a", "db": "fleet", "question": "How many ships are there?"}).decode(),
             "{not json", orjson.dumps({"id": "b", "db": "nope", "question": "How many ships?"}).decode()]
    result = runner.invoke(cli, ["generate", "--index", str(index_file)], input="\n".join(lines) + "\n")
    assert result.exit_code == 0, result.output
    out = [orjson.loads(line) for line in result.stdout.splitlines()]
    assert [r.get("id") for r in out] == ["a", None, "b"]
    assert out[0]["prediction"]["pipeline"] == COUNT
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
    assert ir.mentions == [] and rules.render(ir) == COUNT


def test_count_groups_only_by_attributes_named_before_it():
    assert pipeline_of("Show each flag and the number of ships.")[0] == {
        "$group": {"_id": "$Flag", "count": {"$sum": 1}}}
    assert pipeline_of("How many ships have a flag?") == COUNT


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


# --- native shapes: identifiers, sparse fields, attribute bags ------------------------

def sparse(collection, path, present, null=0, missing=0, types=None):
    return {**entry(collection, path, types=types or {"string": present - null, "null": null}, present=present),
            "null": null, "missing": missing}


CREW = {
    "db": "crew",
    "collections": {"sailors": {"count": 10, "sampled": 10}, "logs": {"count": 5, "sampled": 5}},
    "lattice": [
        entry("sailors", "sailor_id", present=10), entry("sailors", "name", present=10),
        entry("sailors", "grade", present=10), entry("sailors", "joined", types={"int": 10}, present=10),
        sparse("sailors", "phone", present=7, null=3, missing=3),
        sparse("sailors", "ship", present=10, null=2),
        sparse("sailors", "email", present=6, missing=4, types={"string": 6}),
        entry("sailors", "traits", kind="array", types={"array": 10}, present=10),
        entry("sailors", "traits[]", kind="object", types={"object": 30}, present=10),
        entry("sailors", "traits[].k", present=10),
        entry("sailors", "traits[].v", types={"bool": 10, "double": 10, "string": 10}, present=10),
        entry("logs", "sailor_id", present=5), entry("logs", "note", present=5),
    ],
    "join_edges": [{"from": {"collection": "logs", "path": "sailor_id"},
                    "to": {"collection": "sailors", "path": "sailor_id"}, "overlap": 1.0, "shared": 5}],
}


def crew_witness(term, stored, path, collection="sailors"):
    return {"term": term, "hard": True,
            "matches": [{"stored": stored, "kind": "value", "collection": collection, "path": path, "frequency": 3}]}


def crew(question, witnesses=()):
    ir = rules.build_ir(question, list(witnesses), CREW)
    return ir, rules.render(ir)


def test_bare_entity_shows_its_name_and_the_identified_reading_adds_the_identifier():
    ir, pipeline = crew("Which sailors are there?")
    assert [f.mql for f in ir.outputs] == ["name"]
    assert pipeline == [{"$project": {"_id": 0, "name": "$name"}}]
    other = rules.build_ir("Which sailors are there?", [], CREW, variant=frozenset({"identified"}))
    assert [f.mql for f in other.outputs] == ["sailor_id", "name"] and other.alternative
    assert rules.render(other) == [{"$sort": {"sailor_id": 1}},
                                   {"$project": {"_id": 0, "sailor_id": "$sailor_id", "name": "$name"}}]


def test_rounding_phrase_rounds_aggregates():
    _, pipeline = crew("What is the average joined year per grade, rounded to 2 decimals?")
    assert pipeline[-1]["$project"]["avg_joined"] == {"$round": ["$avg_joined", 2]}
    assert rules.build_ir("Average joined, rounded to one decimal place", [], CREW).round == 1


def test_lowercase_word_binds_only_through_a_hard_witness():
    ir, _ = crew("How many sailors of grade captain are there?", [crew_witness("captain", "Captain", "grade")])
    assert [(f.field.mql, f.op, f.value) for f in ir.filters] == [("grade", "$eq", "Captain")]
    soft = {**crew_witness("captain", "Captain", "grade"), "hard": False}
    assert rules.build_ir("How many sailors of grade captain are there?", [soft], CREW).filters == []
    # a word naming the collection itself is the entity, not a value
    ir, _ = crew("How many sailors are there?", [crew_witness("sailors", "Sailors", "grade")])
    assert ir.filters == []


def test_a_year_binds_to_an_exact_stored_value_before_a_date_part():
    both = {"term": "2019", "hard": True, "matches": [
        {"stored": "2019-01-01", "kind": "value", "collection": "sailors", "path": "name", "frequency": 9,
         "part": "year"},
        {"stored": 2019, "kind": "value", "collection": "sailors", "path": "joined", "frequency": 2}]}
    ir, _ = crew("Which sailors came aboard in 2019?", [both])
    assert [(f.field.mql, f.op, f.value) for f in ir.filters] == [("joined", "$eq", 2019)]


def test_no_field_means_null_or_absent_as_the_lattice_says():
    ir, pipeline = crew("How many sailors have no ship yet?")  # ship is null, never absent
    assert pipeline[0] == {"$match": {"ship": {"$type": "null"}}}
    ir, pipeline = crew("How many sailors have no email?")  # email is absent, never null
    assert pipeline[0] == {"$match": {"email": {"$exists": False}}}
    # phone is both: 'never ... at all' is absent, 'no recorded' is an unrecorded value
    assert crew("How many sailors never gave a phone at all?")[1][0] == {"$match": {"phone": {"$exists": False}}}
    assert crew("How many sailors have no recorded phone?")[1][0] == {"$match": {"phone": {"$type": "null"}}}


def bag(term, key):
    return crew_witness(term, key, "traits[].k")


def test_bag_key_as_flag_is_an_elem_match_on_true():
    ir, pipeline = crew("How many sailors are swimmers?", [bag("swimmers", "swimmer")])
    assert pipeline[0] == {"$match": {"traits": {"$elemMatch": {"k": "swimmer", "v": True}}}}


def test_bag_key_grouped_aggregated_or_ranked_reads_the_value():
    _, pipeline = crew("How many sailors per blood group?", [bag("blood group", "blood_group")])
    assert pipeline[:3] == [{"$unwind": "$traits"}, {"$match": {"traits.k": "blood_group"}},
                            {"$group": {"_id": "$traits.v", "count": {"$sum": 1}}}]
    _, pipeline = crew("What is the average height of sailors by grade?", [bag("height", "height_cm")])
    assert pipeline[1] == {"$match": {"traits.k": "height_cm", "traits.v": {"$type": "number"}}}
    assert pipeline[2]["$group"]["_id"] == "$grade" and pipeline[2]["$group"]["avg_traits_v"] == {"$avg": "$traits.v"}
    _, pipeline = crew("List the 3 sailors with the highest height.", [bag("height", "height_cm")])
    assert pipeline[2:4] == [{"$sort": {"traits.v": -1}}, {"$limit": 3}]


def test_by_groups_after_an_aggregate_but_not_after_a_participle():
    assert rules.build_ir("Average joined by grade.", [], CREW).group_by[0].mql == "grade"
    for question in ("How many logs were written by sailor id?", "How many logs signed by sailor id?"):
        assert rules.build_ir(question, [], CREW).group_by == []


MEETS = {
    "db": "club",
    "collections": {"meets": {"count": 8, "sampled": 8}},
    "lattice": [
        entry("meets", "meet_id", present=8), entry("meets", "kind", present=8),
        entry("meets", "date", types={"date": 8}, present=8),
        entry("meets", "season", types={"int": 8}, present=8),
        entry("meets", "spent", types={"double": 8}, present=8),
        entry("meets", "goals", types={"int": 8}, present=8),
        entry("meets", "retired_after", types={"int": 3}, present=3),
        entry("meets", "status", present=8),
        entry("meets", "guests", kind="array", types={"array": 8}, present=8),
        entry("meets", "guests[]", present=8),
        sparse("meets", "finish_position", present=8, null=2),
    ],
}


def meets(question, witnesses=()):
    ir = rules.build_ir(question, list(witnesses), MEETS)
    return ir, rules.render(ir)


def test_average_number_of_an_array_averages_its_sizes():
    ir, pipeline = meets("What is the average number of guests per kind?")
    assert not ir.count
    assert pipeline[0]["$group"]["avg_guests"] == {"$avg": {"$size": {"$ifNull": ["$guests", []]}}}


def test_per_year_without_a_year_field_groups_by_the_year_of_the_date():
    _, pipeline = meets("How much was spent each year?")
    assert pipeline[0] == {"$group": {"_id": {"$year": "$date"}, "sum_spent": {"$sum": "$spent"}}}
    assert meets("How many meets per month?")[1][0]["$group"]["_id"] == {"$month": "$date"}


def test_year_comparison_binds_where_the_witness_stored_the_year():
    stored = {"term": "2016", "hard": True, "matches": [
        {"stored": 2016, "kind": "value", "collection": "meets", "path": "season", "frequency": 2},
        {"stored": "2016-01-01", "kind": "value", "collection": "meets", "path": "date", "frequency": 2,
         "part": "year"}]}
    ir, _ = meets("How many meets were held since 2016?", [stored])
    assert [(f.field.mql, f.op, f.value) for f in ir.filters] == [("season", "$gte", 2016)]
    dated = {**stored, "matches": stored["matches"][1:]}
    ir, _ = meets("How many meets were held after 2016?", [dated])
    assert [(f.field.mql, f.op, f.value.year) for f in ir.filters] == [("date", "$gte", 2017)]


def test_how_many_of_a_quantity_sums_it():
    ir, pipeline = meets("How many goals were scored per kind?")
    assert not ir.count and pipeline[0]["$group"]["sum_goals"] == {"$sum": "$goals"}


def test_how_many_a_and_how_many_b_counts_per_value():
    witnesses = [crew_witness(w, w, "status", "meets") for w in ("open", "closed")]
    ir, pipeline = meets("How many open and how many closed meets are there?", witnesses)
    assert [f.mql for f in ir.group_by] == ["status"]
    assert pipeline[1]["$group"] == {"_id": "$status", "count": {"$sum": 1}}


def test_by_after_a_comma_starts_a_grouping_clause():
    ir, _ = meets("How many meets were cancelled, by kind?")
    assert [f.mql for f in ir.group_by] == ["kind"]


def test_no_modifier_field_is_missing_but_a_quoted_literal_is_not_a_modifier():
    _, pipeline = meets("How many meets have no final finish position?")
    assert pipeline[0] == {"$match": {"finish_position": {"$type": "null"}}}
    ir, _ = meets('How many meets have no "Final" finish position?')
    assert ir.filters == []


def test_boolean_field_as_predicate_and_negated():
    index = {"db": "t", "collections": {"trials": {"count": 4, "sampled": 4}},
             "lattice": [entry("trials", "arm"), entry("trials", "cancelled", types={"bool": 2}, present=2)]}
    ir = rules.build_ir("How many trials per arm, not counting cancelled ones?", [], index)
    assert [(f.field.mql, f.op, f.value) for f in ir.filters] == [("cancelled", "$ne", True)]
    ir = rules.build_ir("How many cancelled trials per arm?", [], index)
    assert [(f.field.mql, f.op, f.value) for f in ir.filters] == [("cancelled", "$eq", True)]


def test_first_after_a_superlative_is_an_order_not_a_field():
    index = {"db": "t", "collections": {"patients": {"count": 4, "sampled": 4}},
             "lattice": [entry("patients", "kind"), entry("patients", "first_seen", types={"date": 4})]}
    pipeline = rules.render(rules.build_ir("How many patients of each kind? Most common first.", [], index))
    assert pipeline[0] == {"$group": {"_id": "$kind", "count": {"$sum": 1}}}
    assert pipeline[1] == {"$sort": {"count": -1, "_id": 1}}


def test_a_witnessed_date_inside_the_counted_array_is_preferred():
    index = {"db": "t", "collections": {"patients": {"count": 4, "sampled": 4}},
             "lattice": [entry("patients", "first_seen", types={"date": 4}),
                         entry("patients", "visits", kind="array", types={"array": 4}),
                         entry("patients", "visits[].date", types={"date": 9})]}
    witness = {"term": "2021", "hard": True, "matches": [
        {"stored": "2021-01-04", "kind": "value", "collection": "patients", "path": path, "frequency": 3,
         "part": "year"} for path in ("first_seen", "visits[].date")]}
    ir = rules.build_ir("How many visits took place in 2021?", [witness], index)
    assert {f.field.mql for f in ir.filters} == {"visits.date"} and ir.unwinds == ["visits"]


def test_which_bag_attribute_lists_its_values():
    _, pipeline = crew("Which blood groups do sailors have, and how many sailors per blood group?",
                       [bag("blood groups", "blood_group")])
    assert pipeline[:3] == [{"$unwind": "$traits"}, {"$match": {"traits.k": "blood_group"}},
                            {"$group": {"_id": "$traits.v", "count": {"$sum": 1}}}]


def test_superlative_of_a_total_ranks_groups_and_list_every_keeps_them_all():
    ir, pipeline = meets("Which month had the highest total spent? List every month with its total.")
    assert ir.limit is None
    assert pipeline[1] == {"$sort": {"sum_spent": -1, "_id": 1}}
    assert pipeline[0]["$group"]["_id"] == {"$month": "$date"}


def test_negated_text_pattern_is_a_not_regex():
    _, pipeline = crew("Which sailors have a name that does not contain the letter M?")
    assert pipeline[0] == {"$match": {"name": {"$not": {"$regex": "M", "$options": "i"}}}}


def test_alphabetic_order_sorts_the_shown_names_not_the_filtered_field():
    witness = crew_witness("Captain", "Captain", "grade")
    ir, _ = crew("List the names of sailors with grade Captain in alphabetical order.", [witness])
    assert [(k.mql, d) for k, d in ir.sort] == [("name", 1)]


def test_a_number_right_before_its_field_is_its_value():
    witness = crew_witness("3", 3, "goals", "meets")
    ir, _ = meets("List the meets with 3 goals.", [witness])
    assert [(f.field.mql, f.op, f.value) for f in ir.filters] == [("goals", "$eq", 3)]


def test_coordinated_fields_share_an_aggregate_and_groups_keep_extremes():
    ir, _ = meets("What are the maximum spent and goals of meets in each season?")
    assert [(op, f.mql) for op, f in ir.aggregates] == [("$max", "spent"), ("$max", "goals")]
    assert [f.mql for f in ir.group_by] == ["season"] and ir.limit is None


def test_the_field_shared_by_most_documents_is_a_top_count():
    _, pipeline = meets("Which kind has the most meets?")
    assert pipeline == [{"$group": {"_id": "$kind", "count": {"$sum": 1}}}, {"$sort": {"count": -1, "_id": 1}},
                        {"$limit": 1}, {"$project": {"_id": 0, "kind": "$_id"}}]
    index = {"db": "m", "collections": {"mountain": {"count": 3, "sampled": 3}},
             "lattice": [entry("mountain", "Name"), entry("mountain", "Height", types={"int": 3})]}
    pipeline = rules.render(rules.build_ir("What is the name of the highest mountain?", [], index))
    assert pipeline[:2] == [{"$sort": {"Height": -1}}, {"$limit": 1}]


def test_a_comparator_before_a_witnessed_date_compares():
    index = {"db": "h", "collections": {"staff": {"count": 4, "sampled": 4}},
             "lattice": [entry("staff", "name"), entry("staff", "hired")]}
    witness = {"term": "7th September, 1987", "hard": True, "matches": [
        {"stored": "1987-09-07", "kind": "value", "collection": "staff", "path": "hired", "frequency": 1}]}
    ir = rules.build_ir("Show the staff who were hired after 7th September, 1987.", [witness], index)
    assert [(f.field.mql, f.op, f.value) for f in ir.filters] == [("hired", "$gt", "1987-09-07")]


def test_a_comparison_naming_the_year_binds_the_year_field():
    index = {"db": "w", "collections": {"grapes": {"count": 4, "sampled": 4}},
             "lattice": [entry("grapes", "wine", kind="array", types={"array": 4}),
                         entry("grapes", "wine[].Name"), entry("grapes", "wine[].Price", types={"int": 9}),
                         entry("grapes", "wine[].Year", types={"int": 9})]}
    ir = rules.build_ir("What are the prices of wines produced before the year of 2010?", [], index)
    assert [(f.field.mql, f.op, f.value) for f in ir.filters] == [("wine.Year", "$lt", 2010)]
    # a bare entity named first as an embedded array lists that array's elements
    ir = rules.build_ir("What are the wines that have prices lower than 50?", [], index)
    assert [f.mql for f in ir.outputs] == ["wine.Name"] and ir.unwinds == ["wine"]


def test_non_negates_and_coordinated_extremes_aggregate():
    witness = crew_witness("Captain", "Captain", "grade")
    ir, _ = crew("How many non Captain sailors are there?", [witness])
    assert [(f.op, f.value) for f in ir.filters] == [("$ne", "Captain")]
    ir, _ = meets("What are the maximum spent and goals of the meets with kind cup?")
    assert [op for op, _ in ir.aggregates] == ["$max", "$max"] and not ir.sort


def test_more_than_n_documents_per_value_is_a_having_count():
    ir, pipeline = meets("Which kinds have more than 2 meets?")
    assert pipeline[:2] == [{"$group": {"_id": "$kind", "count": {"$sum": 1}}},
                            {"$match": {"count": {"$gt": 2}}}]
    # a count of an embedded array's elements stays a size condition
    ir, _ = meets("Which meets have more than 2 guests?")
    assert ir.having == () and [(f.field.mql, f.size) for f in ir.filters] == [("guests", True)]


def test_a_denied_collection_linked_by_a_join_edge_is_an_anti_join():
    ir, pipeline = crew("Which sailors have no logs?")
    assert ir.collection == "sailors"
    assert pipeline[:2] == [
        {"$lookup": {"from": "logs", "localField": "sailor_id", "foreignField": "sailor_id", "as": "_logs"}},
        {"$match": {"_logs": {"$size": 0}}}]


def test_join_edges_are_trusted_only_between_like_named_keys():
    index = {"collections": {"a": {}, "b": {}}, "join_edges": [
        {"from": {"collection": "a", "path": "Rank"}, "to": {"collection": "b", "path": "B_ID"}},
        {"from": {"collection": "b", "path": "items[].A_ID"}, "to": {"collection": "a", "path": "A_ID"}}]}
    assert rules.join_edge(index, "a", "b") == ("A_ID", "items.A_ID")
    assert rules.join_edge({"join_edges": index["join_edges"][:1]}, "a", "b") is None


def test_top_n_values_by_a_total_group_and_rank():
    index = {"db": "r", "collections": {"results": {"count": 9, "sampled": 9}},
             "lattice": [entry("results", "team"), entry("results", "driver"),
                         entry("results", "points", types={"int": 9})]}
    pipeline = rules.render(rules.build_ir("Top 3 teams by total points.", [], index))
    assert pipeline[0]["$group"]["_id"] == "$team"
    assert pipeline[1:3] == [{"$sort": {"sum_points": -1, "_id": 1}}, {"$limit": 3}]
    pipeline = rules.render(rules.build_ir("Which 5 drivers collected the most points?", [], index))
    assert pipeline[0]["$group"] == {"_id": "$driver", "sum_points": {"$sum": "$points"}}
    assert pipeline[1:3] == [{"$sort": {"sum_points": -1, "_id": 1}}, {"$limit": 5}]


# --- round 2: counts, statistics, alternatives, superlatives, confidence ----------------

def test_a_count_phrase_number_and_a_stopword_span_name_no_field():
    index = {"db": "h", "collections": {"dept": {"count": 2, "sampled": 2}},
             "lattice": [entry("dept", "Dept_Name"), entry("dept", "All_Games", types={"int": 2}),
                         entry("dept", "staff", kind="array", types={"array": 2}),
                         entry("dept", "staff[].Phone_Number"), entry("dept", "Manager_ID", types={"int": 2})]}
    ir = rules.build_ir("List all dept names and the number of staff.", [], index)
    assert [f.mql for f in ir.outputs] == ["Dept_Name"]  # neither All_Games nor Phone_Number
    ir = rules.build_ir("Show the manager number of every dept.", [], index)
    assert [f.mql for f in ir.outputs] == ["Manager_ID"]  # 'number' is an identifier


def test_values_and_the_number_of_an_array_list_documents_that_have_some():
    assert pipeline_of("Show ship names and the number of captains for each ship.") == [
        {"$match": {"$expr": {"$gt": [{"$size": {"$ifNull": ["$captain", []]}}, 0]}}},
        {"$project": {"_id": 0, "Name": "$Name", "count": {"$size": {"$ifNull": ["$captain", []]}}}}]


def test_different_values_and_the_corresponding_number_count_per_value():
    assert pipeline_of("Show different flags and the corresponding number of ships.")[0] == {
        "$group": {"_id": "$Flag", "count": {"$sum": 1}}}
    assert pipeline_of("How many different flags are there?")[-2:] == COUNT


def test_numbers_joined_by_or_are_alternatives_and_n_or_later_includes_n():
    hundred = {"term": "100", "hard": True, "matches": [
        {"stored": 100, "kind": "value", "collection": "ship", "path": "Tonnage", "frequency": 1}]}
    ir = ir_of("Show names of ships with tonnage either 100 or 200.", [hundred])
    assert [(f.field.mql, f.op, f.value) for f in ir.filters] == [("Tonnage", "$in", [100, 200])]
    ir = ir_of("Which ships were built in 1990 or later?")
    assert [(f.field.mql, f.op, f.value) for f in ir.filters] == [("Built_Year", "$gte", 1990)]


def test_coordinated_statistic_words_share_the_field():
    ir = ir_of("What is the maximum, minimum and average tonnage of ships?")
    assert [(op, f.mql) for op, f in ir.aggregates] == [("$max", "Tonnage"), ("$min", "Tonnage"), ("$avg", "Tonnage")]
    ir = ir_of("What is the total and minimum tonnage of all ships?")
    assert [(op, f.mql) for op, f in ir.aggregates] == [("$sum", "Tonnage"), ("$min", "Tonnage")] and not ir.sort


def test_order_of_the_count_sorts_groups_but_the_number_of_a_stored_quantity_is_that_field():
    assert pipeline_of("Show the flags of ships in descending order of the count.")[1] == {
        "$sort": {"count": -1, "_id": 1}}
    index = {"db": "c", "collections": {"county": {"count": 3, "sampled": 3}},
             "lattice": [entry("county", "Name"), entry("county", "Police_officers", types={"int": 3})]}
    ir = rules.build_ir("Show the county names in ascending order of number of police officers.", [], index)
    assert not ir.count and [(k.mql, d) for k, d in ir.sort] == [("Police_officers", 1)]


def test_measure_superlatives_use_the_adjacent_field_a_year_valued_field_and_prices():
    index = {"db": "u", "collections": {"college": {"count": 3, "sampled": 3}},
             "lattice": [entry("college", "School"), entry("college", "Founded", types={"double": 3}),
                         entry("college", "Open_Year", types={"int": 3}), entry("college", "Fee", types={"int": 3}),
                         entry("college", "tuition_cost", types={"int": 3})],
             "values": {"1850": [{"stored": 1850.0, "kind": "value", "collection": "college", "path": "Founded"}],
                        "1901": [{"stored": 1901.0, "kind": "value", "collection": "college", "path": "Founded"}],
                        "12": [{"stored": 12, "kind": "value", "collection": "college", "path": "Fee"}]}}
    sort_of = lambda q: [(k.mql, d) for k, d in rules.build_ir(q, [], index).sort]  # noqa: E731
    assert sort_of("Show the school of the oldest college.") == [("Founded", 1)]  # no age: founded first
    assert sort_of("Show the school with the latest open year.") == [("Open_Year", -1)]
    assert sort_of("Show the school with the most expensive tuition.") == [("tuition_cost", -1)]
    assert sort_of("Which school is the cheapest?") == [("tuition_cost", 1)]


def test_a_field_named_without_its_collection_words():
    index = {"db": "p", "collections": {"Products": {"count": 3, "sampled": 3}},
             "lattice": [entry("Products", "product_name"), entry("Products", "product_category_code"),
                         entry("Products", "product_price", types={"int": 3})]}
    ir = rules.build_ir("What is the average price for each category?", [], index)
    assert [f.mql for f in ir.group_by] == ["product_category_code"]


def test_a_comparison_with_the_average_compares_with_a_window_average():
    assert pipeline_of("Show names of ships with tonnage more than the average.") == [
        {"$setWindowFields": {"output": {"_average": {"$avg": "$Tonnage"}}}},
        {"$match": {"$expr": {"$gt": ["$Tonnage", "$_average"]}}},
        {"$project": {"_id": 0, "Name": "$Name"}}]


def test_or_between_two_conditions_is_a_disjunction():
    ir = ir_of("Show names of ships with tonnage more than 5000 or built before 1990.")
    assert rules.render(ir)[0] == {"$match": {"$or": [{"Tonnage": {"$gt": 5000}}, {"Built_Year": {"$lt": 1990}}]}}
    assert not ir.issues
    ir = ir_of("Which ships were built before 1900 or after 2000?")
    assert rules.render(ir)[0] == {"$match": {"$or": [{"Built_Year": {"$lt": 1900}}, {"Built_Year": {"$gt": 2000}}]}}
    both = ir_of("Which ships have both a captain of rank A and one of rank B?")
    assert "a conjunction over one array is not represented" in both.issues


def test_the_counted_noun_naming_the_collection_counts_documents():
    index = {"db": "g", "collections": {"company": {"count": 3, "sampled": 3}},
             "lattice": [entry("company", "Headquarters"),
                         entry("company", "station_company", kind="array", types={"array": 3}),
                         entry("company", "station_company[].Rank", types={"int": 3}),
                         entry("company", "Enrolled_in", kind="array", types={"array": 3})]}
    ir = rules.build_ir("List all headquarters and the number of companies in each headquarter.", [], index)
    assert ir.unwinds == [] and [f.mql for f in ir.group_by] == ["Headquarters"]
    ir = rules.build_ir("What is the number of companies in London?", [], index)
    assert ir.unwinds == []  # 'in' names no array (`Enrolled_in`)


def test_a_context_word_next_to_a_field_picks_the_nested_field():
    ir = ir_of("Show the names of captains on ships with tonnage over 100.")
    assert [f.mql for f in ir.outputs] == ["captain.Name"]


def test_most_common_ranks_counts_without_a_maximum():
    ir = ir_of("Please show the most common flag of ships.")
    assert ir.aggregates == [] and ir.sort == [("count", -1)]


def test_confidence_separates_missed_references_from_relation_verbs():
    verb = ir_of("Show the names of ships launched with tonnage over 100.")
    missed = ir_of("Show the names of ports for ships with tonnage over 100.")
    assert verb.unresolved == ["launched"] and verb.missed == []
    assert "port" in missed.missed or "ports" in missed.missed
    assert rules.confidence(missed) < rules.confidence(verb)


def test_an_unwound_array_the_question_never_names_costs_confidence():
    named = ir_of("List the rank of every captain.")
    inferred = ir_of("List every rank.")
    assert named.unwinds == inferred.unwinds == ["captain"]
    assert named.inferred == [] and inferred.inferred == ["captain"]
    assert rules.confidence(inferred) < rules.confidence(named)


def test_values_named_before_an_aggregate_are_its_groups():
    ir = ir_of("What are the name and maximum tonnage of each ship?")
    assert [f.mql for f in ir.group_by] == ["Name"] and [(op, f.mql) for op, f in ir.aggregates] == [
        ("$max", "Tonnage")]
    ir = ir_of("What is the total and minimum tonnage of all ships?")
    assert ir.group_by == []  # nothing is named before the statistics


def test_a_comparison_on_an_aggregated_field_constrains_each_group():
    pipeline = pipeline_of("Find the flags whose average tonnage is above 8000.")
    assert pipeline[:2] == [
        {"$group": {"_id": "$Flag", "avg_Tonnage": {"$avg": "$Tonnage"}}},
        {"$match": {"avg_Tonnage": {"$gt": 8000}}}]


def test_a_spelled_number_before_a_superlative_limits():
    ir = ir_of("Show the names of ships with the three lowest tonnages.")
    assert ir.limit == 3 and [(k.mql, d) for k, d in ir.sort] == [("Tonnage", 1)]
    assert ir_of("Show the names of ships with the top three lowest tonnages.").sort[0][1] == 1


def test_a_superlative_over_documents_ranks_before_unwinding():
    assert pipeline_of("Show the ranks of captains of the ship with the highest tonnage.")[:3] == [
        {"$sort": {"Tonnage": -1}}, {"$limit": 1}, {"$unwind": "$captain"}]


def test_a_denied_array_with_a_literal_means_no_element_holds_it():
    midshipman = {"term": "Midshipman", "hard": True, "matches": [
        {"stored": "Midshipman", "kind": "value", "collection": "ship", "path": "captain[].Rank", "frequency": 2}]}
    ir = ir_of("Find the names of ships that are not steered by any captain with Midshipman rank.", [midshipman])
    # no element holds it: `$not` of an `$elemMatch` on the whole array (documents without it qualify too)
    assert [(f.field.mql, f.op, f.value, f.size) for f in ir.filters] == [
        ("captain", "$not", {"$elemMatch": {"Rank": "Midshipman"}}, False)]


def test_abbreviated_names_and_initial_identifiers():
    index = {"db": "f", "collections": {"aircraft": {"count": 2, "sampled": 2}},
             "lattice": [entry("aircraft", "aid", types={"int": 2}), entry("aircraft", "name"),
                         entry("aircraft", "flno", types={"int": 2}), entry("aircraft", "paid", types={"int": 2})]}
    ir = rules.build_ir("Show the id and flight number of every aircraft.", [], index)
    assert [f.mql for f in ir.outputs] == ["aid", "flno"]
    assert rules.schema_of(index)["aircraft"][3].words == ("paid",)  # not an initial + 'id'


def test_the_domain_after_all_is_not_a_column():
    ir = ir_of("What is the maximum tonnage across all flags?")
    assert [(op, f.mql) for op, f in ir.aggregates] == [("$max", "Tonnage")] and not ir.limit


def test_an_exclusion_phrase_negates_the_literal_of_its_clause():
    ir = ir_of("List the names of ships, leaving out those with flag Panama.", [PANAMA])
    assert [(f.field.mql, f.op, f.value) for f in ir.filters] == [("Flag", "$ne", "Panama")]


def test_which_entities_show_the_entity_beside_what_ranks_them():
    ir = ir_of("Which 2 ships have the highest tonnage?")
    assert [f.mql for f in ir.outputs][:1] == ["Name"] and ir.limit == 2


def test_which_entity_per_group_is_the_top_document_of_each_group():
    pipeline = pipeline_of("For each flag, which ship has the highest tonnage?")
    assert pipeline[:2] == [
        {"$sort": {"Tonnage": -1}},
        {"$group": {"_id": "$Flag", "first_Tonnage": {"$first": "$Tonnage"}, "Name": {"$first": "$Name"}}}]


def test_in_the_range_of_is_a_between_and_or_after_a_year_is_a_second_bound():
    ir = ir_of("Show names of ships whose tonnage is in the range of 100 and 200.")
    assert [(f.op, f.value) for f in ir.filters] == [("$gte", 100), ("$lte", 200)]
    ir = ir_of("Which ships were built before the year of 1900 or after the year of 2000?")
    assert sorted((f.op, f.value) for f in ir.filters) == [("$gt", 2000), ("$lt", 1900)]


def test_a_quoted_word_binds_to_the_text_field_named_a_little_later():
    ir = ir_of("How many ships have the word 'Star' in their names?")
    assert [(f.field.mql, f.op, f.value) for f in ir.filters] == [("Name", "$regex", "Star")]


def test_plural_es_nouns_name_their_arrays_and_year_fields_absorb_year():
    index = {"db": "s", "collections": {"school": {"count": 2, "sampled": 2}},
             "lattice": [entry("school", "Type"), entry("school", "Founded", types={"int": 2}),
                         entry("school", "Location"),
                         entry("school", "school_bus", kind="array", types={"array": 2}),
                         entry("school", "school_bus[].School_Year", types={"int": 2})],
             "values": {"1890": [{"stored": 1890, "kind": "value", "collection": "school", "path": "Founded"}]}}
    ir = rules.build_ir("Show the type of school and the number of buses for each type.", [], index)
    assert ir.unwinds == ["school_bus"] and [f.mql for f in ir.group_by] == ["Type"]
    ir = rules.build_ir("List the locations of schools in descending order of founded year.", [], index)
    assert [f.mql for f in ir.outputs] == ["Location"] and [(k.mql, d) for k, d in ir.sort] == [("Founded", -1)]


def test_an_array_required_to_have_elements_is_still_unwound_for_its_fields():
    ir = ir_of("Show the ranks of captains of ships with at least one captain.")
    assert ir.unwinds == ["captain"]
    assert rules.render(ir)[:2] == [
        {"$match": {"$expr": {"$gte": [{"$size": {"$ifNull": ["$captain", []]}}, 1]}}}, {"$unwind": "$captain"}]
    assert ir_of("Show the names of ships without any captain.").unwinds == []


def test_distinct_values_of_the_top_documents_rank_before_grouping():
    assert pipeline_of("List the distinct flags of the ships with the top 3 tonnage.") == [
        {"$sort": {"Tonnage": -1}}, {"$limit": 3}, {"$group": {"_id": "$Flag"}},
        {"$project": {"_id": 0, "Flag": "$_id"}}]


def test_a_grouping_phrase_naming_the_collection_groups_by_its_eponymous_field():
    index = {"db": "w", "collections": {"grapes": {"count": 3, "sampled": 3}},
             "lattice": [entry("grapes", "Grape"), entry("grapes", "Color"),
                         entry("grapes", "wine", kind="array", types={"array": 3}), entry("grapes", "wine[].Name")]}
    numbers = {"term": "numbers", "hard": True, "matches": [
        {"stored": "Numbers", "kind": "value", "collection": "grapes", "path": "wine[].Name", "frequency": 1}]}
    ir = rules.build_ir("What are the numbers of wines for different grapes?", [numbers], index)
    assert ir.filters == [] and ir.count  # a count phrase, not the wine named "Numbers"
    assert [f.mql for f in ir.group_by] == ["Grape"] and ir.unwinds == ["wine"]


def test_grounding_is_prepared_once_per_database_per_run(monkeypatch):
    calls = []
    real = rules.prepare
    monkeypatch.setattr(rules, "prepare", lambda index: calls.append(index["db"]) or real(index))
    context = generate.Context({"fleet": INDEX, "labs": LABS})
    records = [{"id": str(i), "db": db, "question": "How many are there?"}
               for i, db in enumerate(["fleet", "labs", "fleet", "labs", "fleet"])]
    assert len(list(generate.run(records, "rules", context))) == 5
    assert calls == ["fleet", "labs"]


def test_generate_without_witnesses_finds_them_itself(clinic_index_file):
    """`generate` alone and `witness | generate` give the same records (issue: a question's
    filters were silently dropped when the record had no witnesses)."""
    from nlq import index as grounding
    from nlq import witness
    from tests.conftest import FIXTURES

    indexes = grounding.load(str(clinic_index_file))
    tasks = [orjson.loads(line) for line in (FIXTURES / "tasks" / "clinic.jsonl").read_bytes().splitlines()]
    alone = list(generate.run([dict(t) for t in tasks], "rules", generate.Context(indexes)))
    piped = list(generate.run(witness.run([dict(t) for t in tasks], indexes), "rules", generate.Context(indexes)))
    for a, b in zip(alone, piped, strict=True):
        a["prediction"].pop("ms"), b["prediction"].pop("ms")
        assert a == b
    penicillin = next(r for r in alone if "penicillin" in r["question"])
    assert penicillin["witnesses"] and {"$match": {"allergies": "penicillin"}} in penicillin["prediction"]["pipeline"]


def test_empty_witnesses_are_kept_as_given():
    """`witnesses: []` means a witness stage ran and found nothing: generate does not redo it."""
    indexes = {"fleet": {**INDEX, "values": {"panama": PANAMA["matches"]}}}
    question = {"id": "x", "db": "fleet", "question": "How many ships fly the Panama flag?"}
    found = next(generate.run([dict(question)], "rules", generate.Context(indexes)))
    given = next(generate.run([{**question, "witnesses": []}], "rules", generate.Context(indexes)))
    assert [w["term"] for w in found["witnesses"]] == ["Panama"] and given["witnesses"] == []
    assert "Panama" in orjson.dumps(found["prediction"]["pipeline"]).decode()
    assert "Panama" not in orjson.dumps(given["prediction"]["pipeline"]).decode()


def test_a_record_without_db_is_told_so_when_several_indexes_are_loaded():
    from nlq.errors import InputError

    context = generate.Context({"a": {"db": "a"}, "b": {"db": "b"}})
    with pytest.raises(InputError, match=r'the record has no db: add "db": NAME.*\(indexes: a, b\)'):
        context.index_for(None)
