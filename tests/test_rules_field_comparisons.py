"""`rules` compares two stored numbers of one document when a comparative names a field on
each side ('a checking balance higher than the savings balance', 'colder in March than in
July', 'a spent amount below the planned amount'), and says so when it cannot read one."""

from __future__ import annotations

import pytest

from tests.helpers import rules_answer, rules_world

HOLDERS = [{"name": "Ann", "checking": [{"balance": 500}], "saving": [{"balance": 100}]},
           {"name": "Bob", "checking": [{"balance": 50}], "saving": [{"balance": 900}]},
           {"name": "Cy", "checking": [{"balance": 700}], "saving": [{"balance": 300}]}]
TOWNS = [{"town": "Vik", "climate": [{"Mar": 2, "Jul": 15, "Oct": 6}]},
         {"town": "Rio", "climate": [{"Mar": 27, "Jul": 22, "Oct": 25}]},
         {"town": "Oslo", "climate": [{"Mar": 1, "Jul": 0, "Oct": 3}]}]
PROJECTS = [{"title": "Roof", "planned": 100, "spent": 80}, {"title": "Wall", "planned": 50, "spent": 90},
            {"title": "Door", "planned": 70, "spent": 60}]


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return rules_world(tmp_path_factory.mktemp("fieldcmp"), {
        "bank": {"holder": HOLDERS}, "weather": {"city": TOWNS}, "works": {"project": PROJECTS}})


@pytest.mark.parametrize("question", [
    "Find the names of holders whose checking balance is higher than their saving balance.",
    "Which holders have a balance in checking that exceeds that in saving? Show their names.",
    "List the names of holders where the checking account has a greater balance than the saving account.",
])
def test_parallel_fields_are_told_apart_by_what_holds_them(world, question):
    prediction, rows = rules_answer(world, "bank", question)
    assert sorted(r["name"] for r in rows) == ["Ann", "Cy"], prediction["pipeline"]
    assert not prediction["unresolved"]


def test_sibling_fields_compare_and_an_or_keeps_the_first_side(world):
    prediction, rows = rules_answer(world, "weather", "Which towns have a temperature in March that is lower "
                                                      "than in July or higher than in October?")
    assert sorted(r["town"] for r in rows) == ["Rio", "Vik"], prediction["pipeline"]


def test_a_bound_needs_no_than(world):
    prediction, rows = rules_answer(world, "works", "How many projects have a spent amount below the planned amount?")
    assert rows == [{"count": 2}], prediction["pipeline"]


def test_a_number_on_the_other_side_is_a_bound_not_a_field(world):
    _, rows = rules_answer(world, "works", "Which projects have a spent amount higher than 85? Show the titles.")
    assert [r["title"] for r in rows] == ["Wall"]


def test_a_statistic_on_the_other_side_is_no_field_and_stays_said(world):
    prediction, _ = rules_answer(world, "bank", "Which holders have a checking balance beneath the total saving "
                                                "balance of all holders?")
    assert not any("$expr" in str(s) and "saving.balance" in str(s) and "checking.balance" in str(s)
                   for s in prediction["pipeline"] if "$match" in s), prediction["pipeline"]


@pytest.mark.parametrize("question", [
    "Find the name of the holder with the lowest total checking and saving balance.",
    "Which holder has the lowest combined balance from checking and saving? Give the name.",
    "What is the name of the holder with the smallest sum of checking and saving balances?",
])
def test_a_sum_of_two_parallel_numbers_ranks(world, question):
    prediction, rows = rules_answer(world, "bank", question)
    assert [r["name"] for r in rows] == ["Ann"], prediction["pipeline"]
    assert "$add" in str(prediction["pipeline"])


def test_a_sum_of_two_siblings_is_shown(world):
    prediction, rows = rules_answer(world, "works", "Show the title and the sum of planned and spent for each project.")
    assert sorted(sum(v for k, v in r.items() if k != "title") for r in rows) == [130, 140, 180], prediction["pipeline"]


def test_the_total_of_two_siblings_without_of_stays_two_totals(world):
    prediction, _ = rules_answer(world, "works", "What are the total planned and spent amounts?")
    assert "$add" not in str(prediction["pipeline"])


def test_a_comparative_left_unread_is_said(world):
    prediction, _ = rules_answer(world, "weather", "Which towns are cooler in March than Vik?")
    assert "cooler" in [u["word"] for u in prediction["unresolved"] if u["kind"] == "comparison"], prediction
