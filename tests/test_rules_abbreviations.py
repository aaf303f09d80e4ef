"""`rules` reads a field or collection name abbreviated from the question's words: a
prefix ('Inst' institution), a consonant skeleton ('qty' quantity, 'dept' department),
words run together ('HIREDATE' hire date) or initials ('GDP' gross domestic product) —
morphology, no list of abbreviations — and 'the number of X bookings' stays a count."""

from __future__ import annotations

import pytest

from nlq.methods.rules.question import word_match
from tests.helpers import rules_answer, rules_world

ITEMS = [{"item_id": 1, "item_desc": "pen", "qty": 5, "unit_amt": 2.0},
         {"item_id": 2, "item_desc": "ink", "qty": 9, "unit_amt": 7.5},
         {"item_id": 3, "item_desc": "cap", "qty": 1, "unit_amt": 1.0}]

STAFF = [{"EMP_NUM": 1, "EMP_LNAME": "Ames", "EMP_HIREDATE": "1999-01-02", "DEPT_CODE": "ACC"},
         {"EMP_NUM": 2, "EMP_LNAME": "Boyd", "EMP_HIREDATE": "2004-05-06", "DEPT_CODE": "BIO"}]

COUNTRIES = [{"Name": "Aland", "GDP": 10.5}, {"Name": "Borland", "GDP": 3.2}]

FLATS = [{"building_id": 1, "Apartments": [{"apt_id": 1, "apt_number": "A1", "Bookings": [{"booking_id": 1}]},
                                           {"apt_id": 2, "apt_number": "A2", "Bookings": [{"booking_id": 2},
                                                                                          {"booking_id": 3}]}]}]


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return rules_world(tmp_path_factory.mktemp("abbreviations"), {
        "store": {"items": ITEMS}, "school": {"employee": STAFF}, "atlas": {"country": COUNTRIES},
        "rentals": {"buildings": FLATS}})


@pytest.mark.parametrize("word, name", [("quantity", "qty"), ("amount", "amt"), ("department", "dept"),
                                        ("course", "crs"), ("manager", "mgr"), ("description", "desc"),
                                        ("institution", "inst"), ("apartment", "apt")])
def test_a_name_abbreviating_a_word_matches_it_below_an_exact_match(word, name):
    assert 0 < word_match(word, name) < word_match(word, word)


@pytest.mark.parametrize("word, name", [("student", "std"), ("year", "yr"), ("price", "pct"), ("amount", "mnt")])
def test_a_skeleton_keeps_the_first_and_last_consonants(word, name):
    """'std' ends in a letter 'student' does not end its consonants with; 'mnt' drops the first letter."""
    assert word_match(word, name) == 0.0


def test_a_consonant_skeleton_names_the_field(world):
    prediction, rows = rules_answer(world, "store", "What is the description of the item with the largest quantity?")
    assert [row.get("item_desc") for row in rows] == ["ink"], prediction["pipeline"]


def test_words_run_together_name_one_field_word(world):
    """'hire date' is `EMP_HIREDATE`, its `EMP` the collection's abbreviation."""
    prediction, rows = rules_answer(world, "school", "What is the hire date of the employee with last name Boyd?")
    assert [row.get("EMP_HIREDATE") for row in rows] == ["2004-05-06"], prediction["pipeline"]


def test_initials_name_a_field(world):
    prediction, rows = rules_answer(world, "atlas", "Which country has the largest gross domestic product?")
    assert [row.get("Name") for row in rows] == ["Aland"], prediction["pipeline"]


def test_the_number_of_a_plural_is_a_count_not_a_number_field(world):
    """'the number of apartment bookings' counts bookings; it is no `apt_number`."""
    prediction, rows = rules_answer(world, "rentals", "Count the total number of apartment bookings.")
    assert "apt_number" not in str(prediction["pipeline"]) and list(rows[0]) == ["count"], prediction["pipeline"]
