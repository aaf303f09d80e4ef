"""`rules` reads "X and the number of Y" (Y an array) as one row per document with its
array's size when X labels each document, and as a count per value when documents share X."""

from __future__ import annotations

import pytest

from tests.helpers import rules_answer, rules_world

CARDS = [{"card_id": i, "card_type_code": kind, "card_number": f"N{i}",
          "Transactions": [{"transaction_id": 10 * i + k} for k in range(n)]}
         for i, (kind, n) in enumerate([("Credit", 2), ("Debit", 1), ("Credit", 3), ("Debit", 0)])]


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return rules_world(tmp_path_factory.mktemp("shared"), {"cards": {"Cards": CARDS}})


def test_a_shared_value_counts_the_elements_of_its_documents(world):
    """'card type codes and the number of transactions': per code, every card's transactions."""
    prediction, rows = rules_answer(world, "cards", "Show the card type codes and the number of transactions.")
    counts = {r["card_type_code"]: next(v for k, v in r.items() if k != "card_type_code") for r in rows}
    assert counts == {"Credit": 5, "Debit": 1}, prediction["pipeline"]


def test_a_label_of_each_document_keeps_its_own_size(world):
    """'card numbers and the number of transactions': one row per card, its array's size."""
    prediction, rows = rules_answer(world, "cards", "Show the card numbers and the number of transactions.")
    counts = {r["card_number"]: next(v for k, v in r.items() if k != "card_number") for r in rows}
    assert counts == {"N0": 2, "N1": 1, "N2": 3}, prediction["pipeline"]
