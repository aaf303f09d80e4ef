"""`rules` reads a condition on how many documents share a value (SQL's HAVING) when the
counted noun names no field of the data ('cities common to at least two individuals'), and
keeps a comparison of the field itself when the field's own numbers reach the number."""

from __future__ import annotations

import pytest

from tests.helpers import rules_answer, rules_world

PEOPLE = [{"person_id": i, "Name": f"P{i}", "Home_Town": town, "Level": level, "Height": height}
          for i, (town, level, height) in enumerate([("Oslo", 9, 180.0), ("Oslo", 9, 195.0), ("Rome", 10, 201.0),
                                                     ("Rome", 11, 170.0), ("Rome", 11, 188.0), ("Lima", 12, 205.0)])]


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return rules_world(tmp_path_factory.mktemp("groups"), {"town": {"people": PEOPLE}})


def _towns(world, question):
    prediction, rows = rules_answer(world, "town", question)
    return sorted(r["Home_Town"] for r in rows), prediction["pipeline"]


def test_an_unnamed_plural_counts_the_documents_per_value(world):
    """'individuals' names no field: how many people share each home town."""
    towns, pipeline = _towns(world, "Which home towns are common to at least two individuals?")
    assert towns == ["Oslo", "Rome"], pipeline


def test_an_upper_bound_or_fewer(world):
    towns, pipeline = _towns(world, "List the home towns shared by 2 or fewer residents.")
    assert towns == ["Lima", "Oslo"], pipeline


def test_a_number_the_field_cannot_hold_counts_per_value(world):
    """Levels run 9..12: 'levels with at least 2 pupils' counts the pupils of each level."""
    prediction, rows = rules_answer(world, "town", "Show all levels that have at least 2 pupils.")
    assert sorted(r["Level"] for r in rows) == [9, 11], prediction["pipeline"]


def test_a_unit_keeps_the_comparison_of_the_field(world):
    """'over 200 centimeters' is a height, not a count of documents (there are only six)."""
    prediction, rows = rules_answer(world, "town", "Give the names of people taller than 200 centimeters.")
    assert sorted(r["Name"] for r in rows) == ["P2", "P5"], prediction["pipeline"]


def test_at_least_one_says_that_some_exists_and_counts_nothing(world):
    """'at least one visitor' asks that one exists: it is no condition on a count per home town."""
    prediction, _ = rules_answer(world, "town", "How many home towns have at least one visitor?")
    assert not prediction["ir"]["having"], prediction["pipeline"]


PATIENTS = [{"patient_id": i, "readings": [{"test": test, "value": value} for test, value in readings]}
            for i, readings in enumerate([[("LDL", 3.1), ("LDL", 4.9)], [("LDL", 2.0)], [("HDL", 5.2), ("LDL", 4.6)],
                                          [("LDL", 4.4), ("LDL", 3.9)], []])]


@pytest.fixture(scope="module")
def clinic(tmp_path_factory):
    return rules_world(tmp_path_factory.mktemp("clinic"), {"clinic": {"patients": PATIENTS}})


def test_at_least_one_element_above_a_bound_is_existence_not_a_size(clinic):
    """'at least one reading above 4.5 mmol/L': one such reading exists; 'L' after the unit's '/' is no value."""
    prediction, rows = rules_answer(clinic, "clinic", "How many patients have at least one LDL reading above 4.5 mmol/L?")
    assert '"$gte": 1' not in str(prediction["pipeline"]).replace("'", '"'), prediction["pipeline"]
    assert not {"l", "mmol"} & {u["word"].lower() for u in prediction.get("unresolved", [])}, prediction
    assert rows and list(rows[0].values())[-1] in (2, 3), (prediction["pipeline"], rows)
