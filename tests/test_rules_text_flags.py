"""`rules` reads a text field that stores only a yes and a no ('Y'/'N', 'Yes'/'No') as a flag:
named as a predicate ('students on scholarship') it holds its yes, denied its yes is not
held; counted as values ('how many acting statuses') it is no predicate."""

from __future__ import annotations

import pytest

from tests.helpers import rules_answer, rules_world

STUDENTS = [{"StuID": 1, "LName": "Kim", "SportsInfo": [{"SportName": "Tennis", "OnScholarship": "Y"}]},
            {"StuID": 2, "LName": "Lee", "SportsInfo": [{"SportName": "Golf", "OnScholarship": "N"}]},
            {"StuID": 3, "LName": "Moe", "SportsInfo": [{"SportName": "Golf", "OnScholarship": "N"},
                                                         {"SportName": "Chess", "OnScholarship": "Y"}]},
            {"StuID": 4, "LName": "Ng", "SportsInfo": []}]
HEADS = [{"head_ID": i, "name": n, "temporary_acting": a} for i, (n, a) in
         enumerate([("Ann", "Yes"), ("Bo", "No"), ("Cy", "No"), ("Di", "Yes"), ("Ed", "No")])]


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return rules_world(tmp_path_factory.mktemp("flags"), {"sports": {"Student": STUDENTS},
                                                          "heads": {"head": HEADS}})


def test_a_yes_no_text_named_as_a_predicate_holds_its_yes(world):
    prediction, rows = rules_answer(world, "sports", "Show last names for all students who are on scholarship.")
    assert sorted(r["LName"] for r in rows) == ["Kim", "Moe"], prediction["pipeline"]


def test_a_denied_yes_no_text_does_not_hold_its_yes(world):
    prediction, rows = rules_answer(world, "heads", "List the names of heads who are not temporary acting.")
    assert sorted(r["name"] for r in rows) == ["Bo", "Cy", "Ed"], prediction["pipeline"]


def test_a_yes_no_text_counted_as_values_is_no_predicate(world):
    prediction, rows = rules_answer(world, "heads", "How many different temporary acting statuses are there?")
    assert rows == [{"count": 2}], prediction["pipeline"]
