"""`rules` reads conditions on the fields of one embedded array's elements as met by the same
element: two conditions on one order are one `$elemMatch`, not each met by any order, and the
conditions on the elements counted ('at least 2 mailshots with outcome Order') qualify what
is counted, not the document."""

from __future__ import annotations

import pytest

from tests.helpers import rules_answer, rules_world

CUSTOMERS = [
    {"customer_id": 1, "customer_name": "Ann", "Orders": [{"shipping_method": "FedEx", "order_status": "Paid"}]},
    {"customer_id": 2, "customer_name": "Bob", "Orders": [{"shipping_method": "FedEx", "order_status": "Cancelled"},
                                                           {"shipping_method": "UPS", "order_status": "Paid"}]},
    {"customer_id": 3, "customer_name": "Cy", "Orders": [{"shipping_method": "UPS", "order_status": "Paid"}]}]
PATRONS = [
    {"patron_id": 1, "patron_name": "Ada", "Mailshots": [{"outcome_code": "Order", "n": 1},
                                                          {"outcome_code": "Order", "n": 7}]},
    {"patron_id": 2, "patron_name": "Ben", "Mailshots": [{"outcome_code": "Order"}, {"outcome_code": "NoResponse"},
                                                          {"outcome_code": "NoResponse"}]},
    {"patron_id": 3, "patron_name": "Cal", "Mailshots": [{"outcome_code": "NoResponse"}]}]


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return rules_world(tmp_path_factory.mktemp("elements"), {"shop": {"Customers": CUSTOMERS},
                                                             "post": {"Patrons": PATRONS}})


def test_two_conditions_on_an_element_are_met_by_one_element(world):
    """Bob has a FedEx order and a Paid order, but no order that is both."""
    question = "Show the names of customers having an order with shipping method FedEx and order status Paid."
    prediction, rows = rules_answer(world, "shop", question)
    assert rows == [{"customer_name": "Ann"}], prediction["pipeline"]


def test_bounds_no_one_element_meets_are_left_to_different_elements(world):
    """Nothing is both below 2 and above 5: such bounds ('both a museum opened before 2009 and
    one opened after 2011') are met by different elements, not made one `$elemMatch`."""
    from nlq.methods.rules.ir import IR, Field, Filter
    from nlq.methods.rules.render import render

    backend, _ = world
    number = Field("Patrons", "Mailshots[].n", "Mailshots.n", ("Mailshots",), "leaf", "int", ("n",), ())
    ir = IR("Patrons", filters=[Filter(number, "$lt", 2), Filter(number, "$gt", 5)])
    rows = backend.aggregate("post", "Patrons", render(ir)[:1] + [{"$project": {"_id": 0, "patron_name": 1}}])
    assert list(rows) == [{"patron_name": "Ada"}]


def test_conditions_on_the_counted_elements_qualify_the_count(world):
    """Ben has three mailshots but only one with outcome Order."""
    question = "Show the names of patrons who have at least 2 mailshots with outcome code 'Order'."
    prediction, rows = rules_answer(world, "post", question)
    assert rows == [{"patron_name": "Ada"}], prediction["pipeline"]
