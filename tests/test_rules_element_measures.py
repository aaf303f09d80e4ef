"""`rules` binds a statistic word that names an embedded array to the number each element
stores ('the average fee' of `fees` elements holding a `CampusFee`), not to the array's
size — the size is meant only when the words count ('the average number of ...') or the
elements hold no number the words pick out."""

from __future__ import annotations

import pytest

from tests.helpers import rules_answer, rules_world

CAMPUSES = [{"Campus": "North", "Id": 1, "campus_fees": [{"Year": 2001, "CampusFee": 100, "Campus": 1},
                                                         {"Year": 2002, "CampusFee": 300, "Campus": 1}]},
            {"Campus": "South", "Id": 2, "campus_fees": [{"Year": 2001, "CampusFee": 200, "Campus": 2}]},
            {"Campus": "East", "Id": 3, "campus_fees": [{"Year": 2002, "CampusFee": 600, "Campus": 3}]}]
FILMS = [{"film_id": 1, "title": "Up", "Review": [{"critic_id": 4, "stars": 2}, {"critic_id": 5, "stars": 4}]},
         {"film_id": 2, "title": "Go", "Review": [{"critic_id": 4, "stars": 5}]},
         {"film_id": 3, "title": "On", "Review": [{"critic_id": 6, "stars": 3}, {"critic_id": 4, "stars": 3},
                                                  {"critic_id": 5, "stars": 3}]}]
SHOPS = [{"shop_id": 1, "shop_name": "A", "Sale": [{"units": 2, "revenue": 10}, {"units": 1, "revenue": 30}]},
         {"shop_id": 2, "shop_name": "B", "Sale": [{"units": 5, "revenue": 20}]}]


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return rules_world(tmp_path_factory.mktemp("measures"), {"fees": {"Campuses": CAMPUSES}, "films": {"Films": FILMS},
                                                            "shops": {"Shops": SHOPS}})


def only_value(rows):
    assert len(rows) == 1 and len(rows[0]) == 1, rows
    return next(iter(rows[0].values()))


def test_a_statistic_of_an_array_named_by_its_elements_number(world):
    """'the average fee', elements holding `CampusFee` (and a `Year`, a `Campus` reference): the
    element number whose name the word says, averaged over every element."""
    prediction, rows = rules_answer(world, "fees", "What is the average fee of the campuses?")
    assert only_value(rows) == 300, prediction["pipeline"]


def test_the_only_number_of_the_elements_is_the_measure(world):
    """'the average rating', `Review` elements holding an identifier and `stars`: the stars."""
    prediction, rows = rules_answer(world, "films", "What is the average review of all films?")
    assert only_value(rows) == pytest.approx(20 / 6), prediction["pipeline"]


def test_a_count_of_elements_still_averages_sizes(world):
    """'the average number of reviews' counts the elements of each document."""
    prediction, rows = rules_answer(world, "films", "What is the average number of reviews of the films?")
    assert only_value(rows) == 2, prediction["pipeline"]


def test_numbers_the_words_do_not_tell_apart_keep_the_size(world):
    """'the total sales', elements holding `units` and `revenue`: neither is said, so the
    number of sales is what the words can mean."""
    prediction, rows = rules_answer(world, "shops", "What is the total sales of the shops?")
    assert only_value(rows) == 3, prediction["pipeline"]


def test_several_statistics_share_the_elements_number(world):
    """'the maximum, minimum and average fee': one run of statistics, each of `CampusFee`."""
    prediction, rows = rules_answer(world, "fees", "What are the maximum, minimum and average fee of the campuses?")
    assert len(rows) == 1 and sorted(rows[0].values()) == [100, 300, 600], prediction["pipeline"]


GUESTS = [{"guest_id": 1, "guest_name": "Al", "stay": [{"Num_of_Nights": 2}, {"Num_of_Nights": 4}]},
          {"guest_id": 2, "guest_name": "Bea", "stay": [{"Num_of_Nights": 6}]}]


@pytest.fixture(scope="module")
def inn(tmp_path_factory):
    return rules_world(tmp_path_factory.mktemp("inn"), {"inn": {"guest": GUESTS}})


@pytest.mark.parametrize("question, value", [
    ("How many nights were, on average, booked during a stay?", 4),
    ("How many nights, in total, were booked?", 12),
])
def test_a_closing_statistic_measures_the_quantity_how_many_asks(inn, question, value):
    """'how many nights ..., on average': the stored quantity's statistic, no count beside it."""
    prediction, rows = rules_answer(inn, "inn", question)
    assert only_value(rows) == value, prediction["pipeline"]


TOWNS = [{"Town": "Ayr", "awards": [{"Year": 2001, "Awards": 3}, {"Year": 2002, "Awards": 5}]},
         {"Town": "Bute", "awards": [{"Year": 2001, "Awards": 4}]}]


def test_how_many_sums_the_tally_its_array_stores(tmp_path):
    """'how many awards', each element of `awards` holding its `Awards`: the elements are tallies,
    so the answer sums them rather than counting the elements."""
    world = rules_world(tmp_path, {"prizes": {"towns": TOWNS}})
    prediction, rows = rules_answer(world, "prizes", "How many awards were given in 2001?")
    assert only_value(rows) == 7, prediction["pipeline"]


def test_the_most_tallies_sum_them_per_value(tmp_path):
    """'in which year were the most awards given': the tallies summed per year, not the elements
    counted (2001 has two elements holding 7, 2002 one holding 5 — and 2003 one holding 9)."""
    towns = TOWNS + [{"Town": "Cork", "awards": [{"Year": 2003, "Awards": 9}]}]
    world = rules_world(tmp_path, {"prizes": {"towns": towns}})
    prediction, rows = rules_answer(world, "prizes", "In which year were the most awards given?")
    assert [r["Year"] for r in rows] == [2003], prediction["pipeline"]


def test_elements_compared_with_their_average_are_compared_one_at_a_time(world):
    """'fees above the average fee', each campus's fees an array: the average is over every
    element (300) and each element is compared with it, not the arrays (which `$avg` skips and
    `$gt` orders above any number)."""
    prediction, rows = rules_answer(world, "fees", "Which campuses have a campus fee above the average campus fee?")
    assert sorted(r["Campus"] for r in rows) == ["East"], prediction["pipeline"]


def test_two_fields_compared_with_their_own_averages_keep_one_average_each(tmp_path):
    """'a checking balance above the average checking balance and a savings balance below the
    average savings balance': each field against its own average, not both against the first."""
    accounts = [{"name": n, "checking_balance": c, "savings_balance": s}
                for n, c, s in [("Ann", 100, 10), ("Bob", 300, 400), ("Cy", 500, 5), ("Di", 200, 2000)]]
    world = rules_world(tmp_path, {"bank": {"accounts": accounts}})
    prediction, rows = rules_answer(world, "bank", "What are the names of accounts with a checking balance above the "
                                                   "average checking balance and a savings balance below the average "
                                                   "savings balance?")
    assert sorted(r["name"] for r in rows) == ["Bob", "Cy"], prediction["pipeline"]


def test_two_statistics_of_one_field_are_each_kept(tmp_path):
    """'higher than the minimum balance and lower than the maximum balance': two statistics of one
    field, each set under its own name."""
    accounts = [{"name": n, "balance": b} for n, b in [("Ann", 100), ("Bob", 300), ("Cy", 500), ("Di", 200)]]
    world = rules_world(tmp_path, {"bank": {"accounts": accounts}})
    prediction, rows = rules_answer(world, "bank", "What are the names of accounts with a balance higher than the "
                                                   "minimum balance and lower than the maximum balance?")
    assert sorted(r["name"] for r in rows) == ["Bob", "Di"], prediction["pipeline"]
