"""`rules` on questions read in two steps: a condition on how many elements a document
holds beside an order ('colleges with at least two players, sorted by name'), and a
field compared with its own average."""

from __future__ import annotations

import pytest

from tests.helpers import rules_answer, rules_world

COLLEGES = [{"college_id": i, "Name": name, "player": [{"player_id": p} for p in players]}
            for i, (name, players) in enumerate([("Alpha", [1, 2]), ("Beta", [3]), ("Gamma", [4, 5, 6]),
                                                 ("Delta", [7, 8])])]


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return rules_world(tmp_path_factory.mktemp("two_step"), {"league": {"college": COLLEGES}})


def test_a_count_bound_beside_an_order_limits_nothing(world):
    question = "Show the name of colleges that have at least two players in descending alphabetical order."
    prediction, rows = rules_answer(world, "league", question)
    assert [r["Name"] for r in rows] == ["Gamma", "Delta", "Alpha"], prediction["pipeline"]


ACCOUNTS = [{"custid": i, "name": name, "SAVINGS": [{"balance": b}]}
            for i, (name, b) in enumerate([("Ann", 100), ("Bob", 300), ("Cy", 800)])]


@pytest.fixture(scope="module")
def bank(tmp_path_factory):
    return rules_world(tmp_path_factory.mktemp("bank"), {"bank": {"accounts": ACCOUNTS}})


def test_an_element_field_is_compared_with_its_average_over_the_elements(bank):
    question = "What are the names of accounts whose savings balance is higher than the average savings balance?"
    prediction, rows = rules_answer(bank, "bank", question)
    assert [r["name"] for r in rows] == ["Cy"], prediction["pipeline"]


PEOPLE = [{"People_ID": i, "Name": name, "Height": h} for i, (name, h) in enumerate([("Al", 160), ("Bo", 190),
                                                                                      ("Cy", 170), ("Di", 180)])]


@pytest.fixture(scope="module")
def people(tmp_path_factory):
    return rules_world(tmp_path_factory.mktemp("people"), {"poll": {"people": PEOPLE}})


def test_a_comparative_naming_no_field_compares_its_own_measure_with_the_average(people):
    prediction, rows = rules_answer(people, "poll", "What are the names of people who are shorter than average?")
    assert sorted(r["Name"] for r in rows) == ["Al", "Cy"], prediction["pipeline"]


FIRMS = [{"Code": i, "Name": name, "Headquarter": city, "Revenue": revenue} for i, (name, city, revenue) in
         enumerate([("Ace", "Austin", 120), ("Bolt", "Austin", 200), ("Cog", "Tokyo", 100), ("Dyn", "Paris", 150),
                     ("Eon", "Tokyo", 250)])]


@pytest.fixture(scope="module")
def firms(tmp_path_factory):
    return rules_world(tmp_path_factory.mktemp("firms"), {"firms": {"manufacturer": FIRMS}})


def test_a_value_after_a_compared_statistic_says_which_documents_it_is_over(firms):
    question = "What are the names of companies with revenue less than the lowest revenue of any manufacturer in Austin?"
    prediction, rows = rules_answer(firms, "firms", question)
    assert [r["Name"] for r in rows] == ["Cog"], prediction["pipeline"]


def test_a_field_compared_with_its_maximum(firms):
    question = "What are the names of manufacturers with a revenue less than the highest revenue?"
    prediction, rows = rules_answer(firms, "firms", question)
    assert sorted(r["Name"] for r in rows) == ["Ace", "Bolt", "Cog", "Dyn"], prediction["pipeline"]


CUSTOMERS = [{"Customer_ID": i, "Customer_name": name,
              "Policies": [{"Policy_ID": 10 * i + j, "Policy_Type_Code": t} for j, t in enumerate(types)]}
             for i, (name, types) in enumerate([("Ann", ["Car", "Car", "Life"]), ("Bob", ["Car"]),
                                                ("Cy", ["Life", "Home"]), ("Di", ["Life"]), ("Ed", ["Home"])])]


@pytest.fixture(scope="module")
def insurer(tmp_path_factory):
    return rules_world(tmp_path_factory.mktemp("insurer"), {"insurer": {"customers": CUSTOMERS}})


def test_a_count_of_documents_per_value_of_their_elements_counts_each_document_once(insurer):
    prediction, rows = rules_answer(insurer, "insurer", "Find all the policy types that are used by more than 2 customers.")
    assert [r["Policy_Type_Code"] for r in rows] == ["Life"], prediction["pipeline"]


BUYERS = [{"customer_id": i, "customer_name": name, "payment_method": method} for i, (name, method) in
          enumerate([("Ann", "Card"), ("Bob", "Cash"), ("Cy", "Card"), ("Di", "Cheque"), ("Ed", "Card")])]


@pytest.fixture(scope="module")
def shop(tmp_path_factory):
    return rules_world(tmp_path_factory.mktemp("shop"), {"shop": {"customers": BUYERS}})


def test_the_documents_holding_the_most_common_value_are_each_listed(shop):
    question = "What are the names of customers using the most popular payment method?"
    prediction, rows = rules_answer(shop, "shop", question)
    assert sorted(r["customer_name"] for r in rows) == ["Ann", "Cy", "Ed"], prediction["pipeline"]


def test_the_documents_of_the_values_passing_a_count_are_each_listed(shop):
    question = "List the names of all customers whose payment method is used by at least two customers."
    prediction, rows = rules_answer(shop, "shop", question)
    assert sorted(r["customer_name"] for r in rows) == ["Ann", "Cy", "Ed"], prediction["pipeline"]
