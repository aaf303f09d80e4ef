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


KINDS = [{"kind_id": 1, "kind_description": "Retail",
          "Sales": [{"sale_id": 1, "amount": 5}, {"sale_id": 2, "amount": 9}]},
         {"kind_id": 2, "kind_description": "Online", "Sales": [{"sale_id": 3, "amount": 7}]}]


def test_each_document_named_by_the_collections_full_name(world, tmp_path):
    """'for each store kind' in `Store_Kinds`: the name's other words before its last one still
    name each document, so the statistic of its elements is computed per document."""
    kinds = rules_world(tmp_path, {"stores": {"Store_Kinds": KINDS}})
    prediction, rows = rules_answer(kinds, "stores", "Show the maximum sale amount for each store kind.")
    assert sorted(r["max_Sales_amount"] for r in rows) == [7, 9], prediction["pipeline"]
