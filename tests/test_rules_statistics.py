"""`rules` reads several statistics in one question — a list of statistic words sharing
one field, or each naming its own — as one group of aggregates, not a ranking."""

from __future__ import annotations

import pytest

from nlq.methods import rules


def entry(collection, path, kind="scalar", types=None, present=4):
    return {"collection": collection, "path": path, "kind": kind, "types": types or {"string": present},
            "present": present, "null": 0, "missing": 0, "empty": 0, "array_len": None}


INDEX = {
    "db": "towns",
    "collections": {"station": {"count": 4, "sampled": 4}, "building": {"count": 4, "sampled": 4}},
    "lattice": [
        entry("station", "Station_ID", types={"int": 4}), entry("station", "Name"),
        entry("station", "weekly", kind="array", types={"array": 4}),
        entry("station", "weekly[].low_temperature", types={"int": 12}, present=12),
        entry("station", "weekly[].precipitation", types={"double": 12}, present=12),
        entry("station", "weekly[].wind_speed", types={"int": 12}, present=12),
        entry("building", "Building_ID", types={"int": 4}), entry("building", "Title"),
        entry("building", "bathroom_count", types={"int": 4}), entry("building", "followers", types={"int": 4}),
        entry("building", "Share"), entry("building", "Average", types={"int": 4}),
        entry("building", "Revenue", types={"int": 4}),
    ],
    "values": {},
}


def reading(question):
    ir = rules.build_ir(question, [], INDEX)
    return [(op, f.mql) for op, f in ir.aggregates], ir.count, [(getattr(k, "mql", k), d) for k, d in ir.sort]


@pytest.mark.parametrize("question, aggregates", [
    # each statistic names its own field: none of them ranks the weeks
    ("What is the maximum low temperature and average precipitation of the stations?",
     [("$max", "weekly.low_temperature"), ("$avg", "weekly.precipitation")]),
    ("Show the lowest low temperature and highest wind speed.",
     [("$min", "weekly.low_temperature"), ("$max", "weekly.wind_speed")]),
])
def test_statistics_of_several_fields_are_aggregates(question, aggregates):
    assert reading(question) == (aggregates, False, [])


@pytest.mark.parametrize("question, aggregates", [
    # a count phrase after a run of statistics names the field's quantity: nothing is counted
    ("What is the minimum and maximum number of bathrooms of all the buildings?",
     [("$min", "bathroom_count"), ("$max", "bathroom_count")]),
    ("What are the least and most number of bathrooms in the buildings?",
     [("$min", "bathroom_count"), ("$max", "bathroom_count")]),
    ("Find the maximum and total number of followers of all buildings.",
     [("$max", "followers"), ("$sum", "followers")]),
    # words that name a statistic only in a run of them
    ("Provide the average, peak, and cumulative revenues of the buildings.",
     [("$avg", "Revenue"), ("$max", "Revenue"), ("$sum", "Revenue")]),
    ("What are the top and bottom revenues of the buildings?", [("$max", "Revenue"), ("$min", "Revenue")]),
    # extremes of a value stored as text are still its extremes
    ("What are the maximum and minimum share of the buildings?", [("$max", "Share"), ("$min", "Share")]),
    # the article repeated after 'and' ('Average' a field of its own, named by no statistic here)
    ("Please tell me the average and the largest revenues of the buildings.",
     [("$avg", "Revenue"), ("$max", "Revenue")]),
])
def test_a_statistics_run_shares_its_field(question, aggregates):
    assert reading(question)[:2] == (aggregates, False)


def test_a_superlative_beside_a_shown_field_still_ranks():
    aggregates, _, sort = reading("Find the name of the station with the highest wind speed.")
    assert aggregates == [] and sort == [("weekly.wind_speed", -1)]


def test_a_field_named_by_a_statistic_word_in_a_run_is_not_shown():
    ir = rules.build_ir("What is the average and maximum revenue of all buildings?", [], INDEX)
    assert [(op, f.mql) for op, f in ir.aggregates] == [("$avg", "Revenue"), ("$max", "Revenue")]
    assert ir.group_by == [] and ir.outputs == []


def test_gender_names_a_sex_field():
    index = {**INDEX, "lattice": INDEX["lattice"] + [entry("building", "Sex")]}
    ir = rules.build_ir("What is the average revenue for each gender?", [], index)
    assert [f.mql for f in ir.group_by] == ["Sex"]


def test_most_and_least_common_rank_counts():
    ir = rules.build_ir("What are the most and least common titles of the buildings?", [], INDEX)
    assert ir.aggregates == [] and ir.count


@pytest.mark.parametrize("question", ["Find the title of the building with the highest average score.",
                                      "Which building has the maximum average? Give its title."])
def test_a_superlative_before_a_field_named_by_a_statistic_word_ranks_by_that_field(question):
    """'the greatest average attendance', 'the maximum total score', where a field is called
    `Average` or `Total`: the statistic word names the field the superlative ranks by."""
    ir = rules.build_ir(question, [], INDEX)
    assert ir.aggregates == [] and [(k.mql, d) for k, d in ir.sort] == [("Average", -1)] and ir.limit == 1
    assert [f.mql for f in ir.outputs] == ["Title"] and ir.constraints == []


@pytest.mark.parametrize("word", ["greatest", "biggest", "highest"])
def test_any_superlative_ranking_groups_by_a_statistic_picks_one(word):
    """'the station with the greatest average wind speed': one station, as with 'highest'."""
    ir = rules.build_ir(f"What is the name of the station with the {word} average wind speed?", [], INDEX)
    assert [(op, f.mql) for op, f in ir.aggregates] == [("$avg", "weekly.wind_speed")]
    assert [(getattr(k, "mql", k), d) for k, d in ir.sort] == [("weekly.wind_speed", -1)] and ir.limit == 1
