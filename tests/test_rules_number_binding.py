"""`rules` binds a compared number to the field named right after it ('more than 2000 distance')
before a field named earlier in the question ('flight number ... more than 2000 distance')."""

from __future__ import annotations

import pytest

from tests.helpers import rules_answer, rules_world

FLIGHTS = [{"flno": 2, "distance": 2308, "price": 235.98}, {"flno": 7, "distance": 1500, "price": 99.0},
           {"flno": 13, "distance": 2606, "price": 220.98}]


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return rules_world(tmp_path_factory.mktemp("unit"), {"air": {"flight": FLIGHTS}})


def test_the_field_named_after_the_number_is_compared(world):
    prediction, rows = rules_answer(world, "air", "Show flight number for all flights with more than 2000 distance.")
    assert sorted(r["flno"] for r in rows) == [2, 13], prediction["pipeline"]
