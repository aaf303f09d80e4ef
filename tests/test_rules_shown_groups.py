"""`rules` computes a statistic per the category shown beside it ('the average points of
players based on their positions'): one row over every document cannot show such a value,
so it is the group key — unless it names the documents or the domain ('across all schools')."""

from __future__ import annotations

import pytest

from tests.helpers import rules_answer, rules_world

CLUBS = [{"club_id": 1, "club_name": "Reds", "player": [{"Position": "Wing", "Points": 10},
                                                         {"Position": "Back", "Points": 2}]},
         {"club_id": 2, "club_name": "Blues", "player": [{"Position": "Wing", "Points": 20},
                                                          {"Position": "Back", "Points": 4}]}]
SCHOOLS = [{"School_ID": i, "School": name, "Enrollment": n}
           for i, (name, n) in enumerate([("Oak", 300), ("Elm", 900), ("Ash", 500)])]


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return rules_world(tmp_path_factory.mktemp("shown"), {"league": {"club": CLUBS}, "towns": {"school": SCHOOLS}})


def test_a_category_shown_beside_a_statistic_groups_it(world):
    question = "What are the average points of players based on their respective positions?"
    prediction, rows = rules_answer(world, "league", question)
    assert sorted((r["Position"], r["avg_player_Points"]) for r in rows) == [("Back", 3), ("Wing", 15)], \
        prediction["pipeline"]


def test_the_domain_named_after_all_does_not_group(world):
    prediction, rows = rules_answer(world, "towns", "What is the maximum enrollment across all schools?")
    assert [list(r.values()) for r in rows] == [[900]], prediction["pipeline"]
