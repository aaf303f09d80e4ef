"""`rules` counts distinct values when a count names them 'different', 'distinct' or
'unique': of a top-level field or of array elements, overall or per group."""

from __future__ import annotations

import pytest

from tests.helpers import rules_answer, rules_world

BANKS = [{"branch_ID": i, "bname": name, "city": city, "state": state, "no_of_customers": n,
          "customer": [{"cust_name": f"c{i}{k}", "acc_type": kind} for k, kind in enumerate(kinds)]}
         for i, (name, city, state, n, kinds) in enumerate([
             ("morningside", "New York", "New York", 203, ["saving", "checking"]),
             ("downtown", "Salt Lake", "Utah", 123, ["saving"]),
             ("broadway", "New York", "New York", 453, ["checking", "saving"]),
             ("high", "Austin", "Texas", 367, [])])]


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return rules_world(tmp_path_factory.mktemp("distinct"), {"loans": {"bank": BANKS}})


def count_of(rows: list[dict]) -> object:
    """The one value of a one-row answer."""
    assert len(rows) == 1 and len(rows[0]) == 1, rows
    return next(iter(rows[0].values()))


def test_a_count_of_different_values_is_not_a_stored_quantity(world):
    """'the number of different cities' beside a stored `no_of_customers`: the cities are counted."""
    prediction, rows = rules_answer(world, "loans", "Find the number of different cities which banks are located at.")
    assert count_of(rows) == 3, prediction["pipeline"]


def test_a_distinct_count_counts_the_values_the_distinct_word_names(world):
    """'how many unique cities have bank branches': the cities, not (city, branch) pairs."""
    prediction, rows = rules_answer(world, "loans", "How many unique cities have bank branches?")
    assert count_of(rows) == 3, prediction["pipeline"]


def test_a_plural_inside_an_array_beside_the_distinct_values_asks_for_elements(world):
    """'how many different states have customers': only banks with some customers count."""
    prediction, rows = rules_answer(world, "loans", "How many different states have customer names?")
    assert count_of(rows) == 2, prediction["pipeline"]


CARDS = [{"card_id": i, "customer_id": owner, "card_type_code": kind}
         for i, (owner, kind) in enumerate([(1, "Credit"), (1, "Credit"), (2, "Credit"), (1, "Debit"), (3, "Debit")])]


@pytest.fixture(scope="module")
def cards(tmp_path_factory):
    return rules_world(tmp_path_factory.mktemp("cards"), {"cards": {"Customers_Cards": CARDS}})


@pytest.mark.parametrize("question", ["Show the card type codes and the number of different customers holding each type.",
                                      "How many unique customers have cards of each card type code?"])
def test_a_distinct_count_per_group_counts_the_reference_its_plural_names(cards, question):
    """'how many unique customers ... each type': per type, the distinct `customer_id`s."""
    prediction, rows = rules_answer(cards, "cards", question)
    counts = {r["card_type_code"]: r["count"] for r in rows}
    assert counts == {"Credit": 2, "Debit": 2}, prediction["pipeline"]


@pytest.mark.parametrize("db, question", [("loans", "How many different kinds of accounts are there?"),
                                          ("loans", "How many unique customers does each state have?"),
                                          ("cards", "How many different holders does each card type code have?")])
def test_a_distinct_word_the_count_does_not_read_is_left_unresolved(world, cards, db, question):
    """A count of documents or elements, its 'different' unread: said, never silently dropped."""
    prediction, _ = rules_answer(world if db == "loans" else cards, db, question)
    assert {"word": question.split()[2], "kind": "operation"} in prediction["unresolved"], prediction["pipeline"]


def test_distinct_counted_documents_need_no_distinct_values(cards):
    """'how many distinct cards': each document is one; nothing is left unread."""
    prediction, rows = rules_answer(cards, "cards", "How many distinct cards are there?")
    assert rows == [{"count": 5}] and not prediction["unresolved"], prediction


STUDENTS = [{"student_id": i, "student_name": name, "Enrolment": [{"course_id": c} for c in courses]}
            for i, (name, courses) in enumerate([("Ann", [1, 2]), ("Bob", [2]), ("Cy", []), ("Di", [1, 2])])]


@pytest.fixture(scope="module")
def school(tmp_path_factory):
    return rules_world(tmp_path_factory.mktemp("school"), {"school": {"Students": STUDENTS}})


def test_distinct_documents_counted_have_the_elements_said_after_them(school):
    """'how many distinct students are enrolled in courses': students with some course, not courses."""
    prediction, rows = rules_answer(school, "school", "How many distinct students are enrolled in courses?")
    assert count_of(rows) == 3, prediction["pipeline"]


CATEGORIES = [{"category_code": "Food", "Products": [
                  {"sku": 1, "title": "bread", "Order_Items": [{"order_id": 7}, {"order_id": 7}, {"order_id": 8}]},
                  {"sku": 2, "title": "milk", "Order_Items": [{"order_id": 7}]}]},
              {"category_code": "Books", "Products": [
                  {"sku": 3, "title": "atlas", "Order_Items": [{"order_id": 8}]}]}]


@pytest.fixture(scope="module")
def shop(tmp_path_factory):
    return rules_world(tmp_path_factory.mktemp("shop"), {"shop": {"Product_Categories": CATEGORIES}})


def test_distinct_elements_per_group_inside_them_count_what_names_them(shop):
    """'how many different products in each order id', orders inside products: order 7 holds
    bread twice and milk once, two products."""
    prediction, rows = rules_answer(shop, "shop", "How many different products correspond to each order id?")
    assert {r["order_id"]: r["count"] for r in rows} == {7: 2, 8: 2}, prediction["pipeline"]


CUSTOMERS = [{"customer_id": i, "customer_first_name": name} for i, name in enumerate(["Ann", "Bob", "Cy", "Di"], 1)]
ACCOUNTS = [{"account_id": 10 + i, "customer_id": owner, "account_name": f"acc{i}"}
            for i, owner in enumerate([1, 1, 2, 2, 2, 3])]


@pytest.fixture(scope="module")
def bank(tmp_path_factory):
    return rules_world(tmp_path_factory.mktemp("bank"), {"bank": {"Customers": CUSTOMERS, "Accounts": ACCOUNTS}})


def test_documents_counted_through_a_reference_are_its_distinct_values(bank):
    """'how many customers have an account' over Accounts: three customers, not six accounts."""
    prediction, rows = rules_answer(bank, "bank", "How many customers have an account?")
    assert count_of(rows) == 3, prediction


def test_a_distinct_word_before_a_modifier_of_another_noun_is_read(world):
    """'how many different bank kinds': the documents' name modifies what is counted; unread, it is said."""
    prediction, _ = rules_answer(world, "loans", "How many different bank kinds are there?")
    assert {"word": "different", "kind": "operation"} in prediction["unresolved"], prediction["pipeline"]



PEOPLE = [{"name": name, "job": job, "city": city} for name, job, city in [
    ("Alice", "student", "Austin"), ("Bob", "engineer", "Austin"), ("Dan", "student", "Boise"),
    ("Zach", "doctor", "Austin"), ("Eve", "engineer", "Reno")]]


@pytest.fixture(scope="module")
def people(tmp_path_factory):
    return rules_world(tmp_path_factory.mktemp("people"), {"network": {"Person": PEOPLE}})


@pytest.mark.parametrize("question, values", [("Count the number of cities where people live.", 3),
                                              ("How many types of jobs do they have?", 3)])
def test_a_count_of_a_shared_field_counts_its_values_once(people, question, values):
    """'the number of cities where people live': three cities, not five people."""
    prediction, rows = rules_answer(people, "network", question)
    assert count_of(rows) == values, prediction["pipeline"]


def test_a_count_of_the_documents_is_no_count_of_values(people):
    """'how many people live in Austin': the documents, each one."""
    prediction, rows = rules_answer(people, "network", "How many people live in Austin?")
    assert count_of(rows) == 3, prediction["pipeline"]


TRADED = [dict(card, Financial_Transactions=[{"transaction_type": kind} for kind in kinds])
          for card, kinds in zip(CARDS, [["Payment"], ["Refund", "Payment"], [], ["Payment"], ["Refund"]])]


@pytest.fixture(scope="module")
def traded(tmp_path_factory):
    return rules_world(tmp_path_factory.mktemp("traded"), {"cards": {"Customers_Cards": TRADED}})


def test_each_with_a_word_of_a_field_named_before_groups_by_that_field(traded):
    """'the card type codes, and how many customers hold each type': per card type, not per
    transaction type (the other field a 'type' names)."""
    prediction, rows = rules_answer(traded, "cards", "What are the different card type codes, and how many "
                                                     "different customers hold each type?")
    counts = {r["card_type_code"]: r["count"] for r in rows}
    assert counts == {"Credit": 2, "Debit": 2}, prediction["pipeline"]


@pytest.mark.parametrize("question", ["Give the number of people of different jobs.",
                                      "What is the number of people with different jobs?",
                                      "How many people are there at various jobs?"])
def test_a_count_for_different_values_is_one_count_per_value(people, question):
    """'the number of people of different jobs': a count per job, not the number of jobs."""
    prediction, rows = rules_answer(people, "network", question)
    assert {r["job"]: r["count"] for r in rows} == {"student": 2, "engineer": 2, "doctor": 1}, prediction["pipeline"]


def test_the_number_of_different_values_is_still_their_count(people):
    """'the number of different jobs': the 'of' of the count phrase groups nothing."""
    prediction, rows = rules_answer(people, "network", "Count the number of different jobs.")
    assert count_of(rows) == 3, prediction["pipeline"]


def test_a_count_per_group_of_a_reference_plural_counts_each_once(cards):
    """'the number of customers holding cards in each type': customers, not their cards."""
    prediction, rows = rules_answer(cards, "cards", "Show all card type codes and the number of customers "
                                                    "holding cards in each type.")
    assert {r["card_type_code"]: r["count"] for r in rows} == {"Credit": 2, "Debit": 2}, prediction["pipeline"]


GROCERIES = [{"category_code": "Food", "Products": [
    {"product_id": 1, "product_name": "Apple", "Order_Items": [{"order_id": 7}, {"order_id": 7}, {"order_id": 8}]},
    {"product_id": 2, "product_name": "Bread", "Order_Items": [{"order_id": 7}]}]}]


@pytest.fixture(scope="module")
def orders(tmp_path_factory):
    return rules_world(tmp_path_factory.mktemp("orders"), {"shop": {"Product_Categories": GROCERIES}})


def test_a_count_per_inner_group_of_the_enclosing_elements_counts_each_once(orders):
    """'the number of products in each order', order items inside products: order 7 holds two
    products (Apple twice), not three items."""
    prediction, rows = rules_answer(orders, "shop", "Show order ids and the number of products in each order.")
    assert {r["order_id"]: r["count"] for r in rows} == {7: 2, 8: 1}, prediction["pipeline"]


EMPLOYEES = [{"eid": i, "name": name, "certificate": [{"aid": a} for a in aids]}
             for i, (name, aids) in enumerate([("Ann", [1, 2]), ("Bob", []), ("Cy", [3]), ("Di", [])])]


@pytest.fixture(scope="module")
def staff(tmp_path_factory):
    return rules_world(tmp_path_factory.mktemp("staff"), {"flights": {"employee": EMPLOYEES}})


@pytest.mark.parametrize("question, count", [("How many employees hold a certificate?", 2),
                                             ("What is the count of distinct employees with certificates?", 2),
                                             ("How many employees are there?", 4)])
def test_counted_documents_holding_an_array_named_after_them_have_elements(staff, question, count):
    """'how many employees hold a certificate': those whose `certificate` array has one."""
    prediction, rows = rules_answer(staff, "flights", question)
    assert count_of(rows) == count, prediction["pipeline"]


KINDS_OF_CARDS = [{"card_id": i, "card_type_code": kind}
                  for i, kind in enumerate(["Credit", "Debit", "Credit", "Credit"])]


@pytest.mark.parametrize("question", ["Show the number of card types.", "How many types of cards are there?",
                                      "How many different card types are there?"])
def test_a_count_of_types_counts_the_kinds_there_are(tmp_path, question):
    world = rules_world(tmp_path, {"bank": {"cards": KINDS_OF_CARDS}})
    prediction, rows = rules_answer(world, "bank", question)
    assert count_of(rows) == 2, prediction["pipeline"]
