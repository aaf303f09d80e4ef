"""`rules` reads 'how many X', 'the number of X', 'the most X' as a stored quantity when a
document stores its number of X (`no_of_customers`, `Num_of_Component`): the field's values,
summed when one number is asked, not a count of documents or elements."""

from __future__ import annotations

import pytest

from nlq.methods import rules
from nlq.methods.rules.ir import Field
from nlq.methods.rules.question import Question, quantity_noun


def entry(collection, path, kind="scalar", types=None, present=4):
    return {"collection": collection, "path": path, "kind": kind, "types": types or {"string": present},
            "present": present, "null": 0, "missing": 0, "empty": 0, "array_len": None}


INDEX = {
    "db": "stores",
    "collections": {"bank": {"count": 4, "sampled": 4}, "furniture": {"count": 5, "sampled": 5}},
    "lattice": [
        entry("bank", "branch_ID", types={"int": 4}), entry("bank", "bname"), entry("bank", "city"),
        entry("bank", "no_of_customers", types={"int": 4}),
        entry("bank", "customer", kind="array", types={"array": 4}),
        entry("bank", "customer[].cust_name", present=6),
        entry("bank", "customer[].credit_score", types={"int": 6}, present=6),
        entry("furniture", "Furniture_ID", types={"int": 5}, present=5), entry("furniture", "Name", present=5),
        entry("furniture", "Num_of_Component", types={"int": 5}, present=5),
        entry("furniture", "Market_Rate", types={"double": 5}, present=5),
    ],
    "values": {},
}


def ir_of(question):
    return rules.build_ir(question, [], INDEX)


def reading(question):
    ir = ir_of(question)
    return {"collection": ir.collection, "count": ir.count, "aggregates": [(op, f and f.mql) for op, f in ir.aggregates],
            "outputs": [f.mql for f in ir.outputs], "sort": [(k.mql if hasattr(k, "mql") else k, d) for k, d in ir.sort]}


@pytest.mark.parametrize("name, words, noun", [
    ("no_of_customers", ("no", "of", "customer"), ("customer",)),
    ("Num_Employees", ("num", "employee"), ("employee",)),
    ("room_count", ("room", "count"), ("room",)),
    ("apt_number", ("apt", "number"), ()),  # a number that identifies an apartment counts nothing
    ("Employee_ID", ("employee", "id"), ()),
])
def test_what_a_stored_quantity_counts(name, words, noun):
    assert quantity_noun(Field("c", name, name, (), "scalar", "int", words, ())) == noun


def test_a_quantity_stored_as_text_is_none():
    assert quantity_noun(Field("c", "no_of_customers", "no_of_customers", (), "scalar", "string",
                               ("no", "of", "customer"), ())) == ()


@pytest.mark.parametrize("question", [
    "How many customers are there?",
    "What is the total number of customers across banks?",
    "How many total customers are registered across the banking system?",
])
def test_how_many_of_a_stored_quantity_sums_it(question):
    r = reading(question)
    assert (r["collection"], r["count"], r["aggregates"]) == ("bank", False, [("$sum", "no_of_customers")])


@pytest.mark.parametrize("question", [
    "How many furniture components are there in total?",  # the noun after the qualifier 'furniture'
    "What is the total number of components in the furniture?",
])
def test_the_number_of_a_stored_quantity_asked_once_sums_it(question):
    r = reading(question)
    assert (r["count"], r["aggregates"], r["outputs"]) == (False, [("$sum", "Num_of_Component")], [])


def test_the_number_of_each_document_is_shown():
    r = reading("Show the name and the number of components of each furniture.")
    assert (r["count"], r["aggregates"], r["outputs"]) == (False, [], ["Name", "Num_of_Component"])


def test_the_most_of_a_stored_quantity_ranks_by_it():
    r = reading("What is the name of the bank that serves the most customers?")
    assert (r["count"], r["sort"]) == (False, [("no_of_customers", -1)])


def test_elements_read_by_the_question_are_counted():
    # a condition on each customer: the customers (elements) are counted, not the stored number
    ir = ir_of("How many customers have a credit score above 700?")
    assert ir.count and ir.aggregates == [] and ir.grain == "customer"


def test_a_count_of_a_noun_is_rephrased_as_its_number():
    assert Question.of("List the addresses and staff counts of shops.").text == \
        "List the addresses and number of staff of shops."
    assert Question.of("the highest and lowest counts of medals").text.startswith("the highest and lowest")
