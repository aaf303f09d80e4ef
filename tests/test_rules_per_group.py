"""`rules` reads what a count is per: 'for different investors' (each document, its
array's elements counted), 'each course' (an array's elements), 'play each sport' (a value)."""

from __future__ import annotations

from nlq.methods import rules
from tests.helpers import rules_answer, rules_world


def entry(collection, path, kind="scalar", types=None, present=4):
    return {"collection": collection, "path": path, "kind": kind, "types": types or {"string": present},
            "present": present, "null": 0, "missing": 0, "empty": 0, "array_len": None}


INDEX = {
    "db": "brokers",
    "collections": {"investor": {"count": 4, "sampled": 4}},
    "lattice": [
        entry("investor", "investor_id", types={"int": 4}), entry("investor", "details"),
        entry("investor", "transactions", kind="array", types={"array": 4}),
        entry("investor", "transactions[].transaction_id", types={"int": 9}, present=9),
        entry("investor", "transactions[].amount", types={"double": 9}, present=9),
    ],
    "values": {},
}


def test_for_different_documents_groups_rather_than_deduplicates():
    ir = rules.build_ir("Show the number of transactions for different investors.", [], INDEX)
    assert not ir.distinct
    assert [f.mql for f in ir.sizes] == ["transactions"] and [f.mql for f in ir.outputs] == ["investor_id"]


SCHOOL = {
    "db": "school",
    "collections": {"department": {"count": 3, "sampled": 3}},
    "lattice": [
        entry("department", "dept_code"), entry("department", "dept_name"),
        entry("department", "course", kind="array", types={"array": 3}),
        entry("department", "course[].crs_code", present=6), entry("department", "course[].crs_title", present=6),
        entry("department", "course[].class", kind="array", types={"array": 6}, present=6),
        entry("department", "course[].class[].class_section", present=12),
        entry("department", "course[].class[].class_room", present=12),
        entry("department", "course[].class[].sport", present=12),
    ],
    "values": {},
}


def test_a_count_for_each_element_of_an_array():
    ir = rules.build_ir("How many sections does each course have?", [], SCHOOL)
    assert [f.mql for f in ir.group_by] == ["course.crs_title"] and ir.count  # its own label
    assert ir.outputs == [] and "course.class" in ir.unwinds  # the sections are counted, not shown


def test_the_element_attributes_named_are_the_keys():
    ir = rules.build_ir("Show the course titles and the number of classes for each course.", [], SCHOOL)
    assert [f.mql for f in ir.group_by] == ["course.crs_title"]


def test_a_count_for_each_value_after_a_verb():
    ir = rules.build_ir("How many classes play each sport?", [], SCHOOL)
    assert [f.mql for f in ir.group_by] == ["course.class.sport"] and ir.count


def test_a_statistic_ranked_to_pick_an_entity_is_computed_per_entity(tmp_path):
    """'which game has the highest total hours played': one total per game, the game with the
    greatest shown — not the one total over every game; 'the region with the highest average
    score', regions an array of each country: one average per region."""
    from tests.helpers import rules_answer, rules_world

    games = [{"game_id": 1, "game_name": "Go", "Plays": [{"hours": 5}, {"hours": 1}]},
             {"game_id": 2, "game_name": "Chess", "Plays": [{"hours": 4}, {"hours": 4}]},
             {"game_id": 3, "game_name": "Tag", "Plays": [{"hours": 7}]}]
    countries = [{"country": "A", "Regions": [{"region_name": "North", "Towns": [{"score": s} for s in (1, 9)]},
                                              {"region_name": "South", "Towns": [{"score": 6}]}]},
                 {"country": "B", "Regions": [{"region_name": "East", "Towns": [{"score": 4}, {"score": 2}]}]}]
    world = rules_world(tmp_path, {"arcade": {"games": games}, "atlas": {"countries": countries}})
    prediction, rows = rules_answer(world, "arcade", "Which game has the highest total hours played?")
    assert [r["game_name"] for r in rows] == ["Chess"], prediction["pipeline"]
    prediction, rows = rules_answer(world, "atlas", "Name the region that has the highest average town score.")
    assert [r["region_name"] for r in rows] == ["South"], prediction["pipeline"]


PUPILS = [{"name": n, "sex": sex, "age": age} for n, sex, age in
          [("Ann", "F", 20), ("Bea", "F", 22), ("Cal", "M", 19), ("Dan", "M", 23), ("Eve", "X", 40)]]


def test_a_statistic_for_values_joined_by_and_is_one_for_each(tmp_path):
    world = rules_world(tmp_path, {"school": {"pupil": PUPILS}})
    prediction, rows = rules_answer(world, "school", 'Show the average age for "M" and "F" pupils.')
    assert sorted((r["sex"], r["avg_age"]) for r in rows) == [("F", 21), ("M", 21)], prediction["pipeline"]
    # joined by 'or': one statistic over them all
    _, rows = rules_answer(world, "school", 'What is the average age of pupils whose sex is "M" or "F"?')
    assert rows == [{"avg_age": 21}]
