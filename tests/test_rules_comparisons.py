"""`rules` reads each comparison of a question with its own bound: a field bounded once takes no
second bound the same way ('a price over 160 and more than 2 guests'), and a number's own
'or earlier' says the bound ('from 2001 or earlier')."""

from __future__ import annotations

import pytest

from tests.helpers import rules_answer, rules_world

ROOMS = [{"room": "Ash", "nightly_price": 150, "beds": 4}, {"room": "Birch", "nightly_price": 175, "beds": 2},
         {"room": "Cedar", "nightly_price": 250, "beds": 3}, {"room": "Dune", "nightly_price": 100, "beds": 1}]
BUDGETS = [{"office": "North", "year": 1999, "spent": 10}, {"office": "South", "year": 2001, "spent": 20},
           {"office": "East", "year": 2003, "spent": 30}, {"office": "West", "year": 2005, "spent": 40}]


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return rules_world(tmp_path_factory.mktemp("cmp"), {"inn": {"room": ROOMS}, "money": {"budget": BUDGETS}})


def test_a_second_bound_the_same_way_is_not_read_on_the_same_field(world):
    prediction, rows = rules_answer(world, "inn", "Which rooms have a nightly price exceeding 160 and sleep more than "
                                                  "2 travellers?")
    assert 2 not in [f.get("nightly_price", {}).get("$gt") for f in _matches(prediction)], prediction["pipeline"]
    assert "2" in [u["word"] for u in prediction["unresolved"]]  # not silently dropped


def test_two_bounds_on_one_field_make_a_range(world):
    _, rows = rules_answer(world, "inn", "Which rooms have a nightly price above 120 and below 200?")
    assert sorted(r["room"] for r in rows) == ["Ash", "Birch"]


def test_or_earlier_after_from_is_an_upper_bound(world):
    _, rows = rules_answer(world, "money", "How many budget entries from 2001 or earlier are there?")
    assert rows == [{"count": 2}]


def _matches(prediction: dict) -> list[dict]:
    return [stage["$match"] for stage in prediction["pipeline"] if "$match" in stage]


SCHOOLS = [{"school": "Oak", "founded": 1958, "grants": [{"year": 1999, "count": 5}, {"year": 2001, "count": 7}],
            "fund": [{"amount": 5000}]},
           {"school": "Elm", "founded": 2001, "grants": [{"year": 2001, "count": 3}, {"year": 2004, "count": 9}],
            "fund": [{"amount": 100}]},
           {"school": "Fir", "founded": 1990, "grants": [{"year": 1958, "count": 4}], "fund": [{"amount": 9000}]}]
SHEETS = [{"unit": "A", "budget": [{"year": 2000, "budgeted": 4000}, {"year": 2002, "budgeted": 5000}],
           "endowment": [{"amount": 100}]},
          {"unit": "B", "budget": [{"year": 1999, "budgeted": 1000}], "endowment": [{"amount": 9000}]}]


@pytest.fixture(scope="module")
def schools(tmp_path_factory):
    return rules_world(tmp_path_factory.mktemp("grants"), {"edu": {"school": SCHOOLS}, "fin": {"sheet": SHEETS}})


def test_a_year_compares_the_elements_the_question_names(schools):
    prediction, rows = rules_answer(schools, "edu", "How many grants were given between 1998 and 2002?")
    assert rows == [{"count": 3}], prediction["pipeline"]


def test_of_two_fields_named_together_the_named_entity_s_is_compared(schools):
    prediction, rows = rules_answer(schools, "fin", "How many budget entries have a budgeted amount greater than 3000?")
    assert rows == [{"count": 2}], prediction["pipeline"]


CHAMPIONS = [{"name": "Rex", "days_held": "344"}, {"name": "Max", "days_held": "1"},
             {"name": "Ace", "days_held": "15"}]


def test_a_number_compared_with_digits_stored_as_text_is_written_as_they_are(tmp_path):
    world = rules_world(tmp_path, {"ring": {"champion": CHAMPIONS}})
    prediction, _ = rules_answer(world, "ring", "Which champions have days held under 100?")
    assert {"days_held": {"$lt": "100"}} in _matches(prediction), prediction["pipeline"]


def test_a_bound_said_with_a_longer_phrase_is_read_once(world):
    prediction, rows = rules_answer(world, "inn", "Which rooms have a nightly price of no more than $150?")
    assert sorted(r["room"] for r in rows) == ["Ash", "Dune"], prediction["pipeline"]


PRODUCTS = [{"code": "A", "price": 5000}, {"code": "A", "price": 1000}, {"code": "B", "price": 6000},
            {"code": "C", "price": 500}]


def test_two_bounds_no_value_meets_are_two_sides_of_a_group(tmp_path):
    world = rules_world(tmp_path, {"shop": {"product": PRODUCTS}})
    prediction, rows = rules_answer(world, "shop", "Which product codes have products priced over 4500 as well as "
                                                   "products priced under 3000?")
    assert rows == [{"code": "A"}], prediction["pipeline"]


CAMPUSES = [{"campus": "Oak", "year": 1958, "intake": [{"year": 1957, "size": 5}, {"year": 1958, "size": 6}]},
            {"campus": "Elm", "year": 1960, "intake": [{"year": 1958, "size": 3}, {"year": 1959, "size": 4}]},
            {"campus": "Fir", "year": 1961, "intake": [{"year": 1958, "size": 2}]}]


def test_a_literal_binds_to_the_document_s_own_field_before_unnamed_elements(tmp_path):
    world = rules_world(tmp_path, {"uni": {"campus": CAMPUSES}})
    prediction, rows = rules_answer(world, "uni", "Which campuses opened in 1958?")
    assert rows == [{"campus": "Oak"}], prediction["pipeline"]


PEOPLE = [{"name": "Ann", "height": 205, "weight": 80}, {"name": "Bob", "height": 195, "weight": 90},
          {"name": "Cy", "height": 180, "weight": 70}]


@pytest.fixture(scope="module")
def people(tmp_path_factory):
    return rules_world(tmp_path_factory.mktemp("people"), {"poll": {"person": PEOPLE}})


def test_a_bound_naming_no_field_pairs_with_the_bound_before_it(people):
    prediction, rows = rules_answer(people, "poll", "Who are the people taller than 200 or lower than 190?")
    assert sorted(r["name"] for r in rows) == ["Ann", "Cy"], prediction["pipeline"]


def test_a_unit_of_length_names_a_height(people):
    prediction, rows = rules_answer(people, "poll", "Which people are more than 200 cm?")
    assert [r["name"] for r in rows] == ["Ann"], prediction["pipeline"]


CLIENTS = [{"client": "Ann", "orders": [{"order_id": 1, "total": 50}, {"order_id": 2, "total": 500}]},
           {"client": "Bob", "orders": [{"order_id": 3, "total": 20}]}, {"client": "Cy", "orders": []}]


def test_a_comparison_after_an_array_noun_compares_its_only_measure(tmp_path):
    world = rules_world(tmp_path, {"sales": {"client": CLIENTS}})
    prediction, rows = rules_answer(world, "sales", "List the clients who have orders greater than 100.")
    assert rows == [{"client": "Ann"}], prediction["pipeline"]


def test_up_to_and_including_is_an_upper_bound(world):
    prediction, rows = rules_answer(world, "money", "How many budget entries have a year up to and including 2001?")
    assert rows == [{"count": 2}], prediction["pipeline"]


def test_a_field_of_years_takes_no_number_that_is_not_a_year(world):
    prediction, _ = rules_answer(world, "money", "How many budget entries with a year of 2001 or before are over 3000?")
    assert all(3000 not in (f.get("year") or {}).values() for f in _matches(prediction)
               if isinstance(f.get("year"), dict)), prediction["pipeline"]
    assert "3000" in [u["word"] for u in prediction["unresolved"]]


PLANES = [{"plane": "P1", "velocity": 150}, {"plane": "P2", "velocity": 250}]


def test_speed_names_a_velocity(tmp_path):
    world = rules_world(tmp_path, {"air": {"plane": PLANES}})
    prediction, rows = rules_answer(world, "air", "Which planes fly at a speed under 200?")
    assert rows == [{"plane": "P1"}], prediction["pipeline"]


def test_a_comparator_naming_its_measure_bounds_it_not_the_field_before(people):
    # 'taller' is a height even with the weight named first; 'whose height is taller' still a height
    prediction, rows = rules_answer(people, "poll", "What is the average weight of people who are taller than 190?")
    assert rows == [{"avg_weight": 85}], prediction["pipeline"]
    _, rows = rules_answer(people, "poll", "List the weights of people whose height is taller than 200.")
    assert rows == [{"weight": 80}]
