"""`rules` chooses between fields of one leaf name held by different arrays of a collection
(`SAVINGS.balance`, `CHECKING.balance`) by the parent named beside the word: the modifier
before it ('the savings balance') or the owner after it ('the balance of the savings'), even
when the other parent is said elsewhere in the question."""

from __future__ import annotations

import pytest

from tests.helpers import rules_answer, rules_world

ACCOUNTS = [{"custid": 1, "name": "Brown", "SAVINGS": [{"custid": 1, "balance": 200.0}],
             "CHECKING": [{"custid": 1, "balance": 10.0}]},
            {"custid": 2, "name": "Wang", "SAVINGS": [{"custid": 2, "balance": 999.0}],
             "CHECKING": [{"custid": 2, "balance": 2000.0}]},
            {"custid": 3, "name": "Ortiz", "SAVINGS": [{"custid": 3, "balance": 50.0}],
             "CHECKING": [{"custid": 3, "balance": 70.0}]}]


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return rules_world(tmp_path_factory.mktemp("parents"), {"bank": {"ACCOUNTS": ACCOUNTS}})


def test_the_modifier_before_the_field_names_its_array(world):
    prediction, rows = rules_answer(world, "bank", "Find the saving balance of the account with the highest checking balance.")
    assert [r["balance"] for r in rows] == [999.0], prediction["pipeline"]


def test_a_total_of_the_field_named_by_its_array(world):
    prediction, rows = rules_answer(world, "bank", "Find the total saving balance for each account name.")
    assert sorted((r["name"], r["sum_SAVINGS_balance"]) for r in rows) == [
        ("Brown", 200.0), ("Ortiz", 50.0), ("Wang", 999.0)], prediction["pipeline"]
