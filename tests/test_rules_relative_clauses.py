"""`rules` does not show a field named inside a relative clause said of the entity whose fields
are shown: 'the governors of the parties that have delegates representing district 1' shows
the governors, the delegates say which parties; a field listed again after the clause ('and
also how old are they') is shown."""

from __future__ import annotations

import pytest

from tests.helpers import rules_answer, rules_world

PARTIES = [{"Party_ID": 1, "Party": "Democratic", "Governor": "Peter Vallone",
            "election": [{"Election_ID": 1, "Delegate": "Bates", "District": 1}]},
           {"Party_ID": 2, "Party": "Liberal", "Governor": "Betsy McCaughey",
            "election": [{"Election_ID": 2, "Delegate": "Miller", "District": 2}]},
           {"Party_ID": 3, "Party": "Working", "Governor": "Tom Golisano", "election": []}]


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return rules_world(tmp_path_factory.mktemp("relative"), {"vote": {"party": PARTIES}})


def test_a_field_named_in_a_relative_clause_is_not_shown(world):
    prediction, rows = rules_answer(world, "vote",
                                    "Identify the governors of the parties that have delegates representing district 1.")
    assert rows == [{"Governor": "Peter Vallone"}], prediction["pipeline"]


def test_a_field_listed_after_the_clause_is_shown(world):
    prediction, rows = rules_answer(world, "vote", "List the governors of the parties that have delegates in "
                                                   "district 1, and also their party names.")
    assert rows == [{"Governor": "Peter Vallone", "Party": "Democratic"}], prediction["pipeline"]
