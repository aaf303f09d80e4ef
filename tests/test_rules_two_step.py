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
