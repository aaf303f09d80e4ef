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
    prediction, rows = rules_answer(world, "bank",
                                    "Find the saving balance of the account with the highest checking balance.")
    assert [r["balance"] for r in rows] == [999.0], prediction["pipeline"]


def test_a_total_of_the_field_named_by_its_array(world):
    prediction, rows = rules_answer(world, "bank", "Find the total saving balance for each account name.")
    assert sorted((r["name"], r["sum_SAVINGS_balance"]) for r in rows) == [
        ("Brown", 200.0), ("Ortiz", 50.0), ("Wang", 999.0)], prediction["pipeline"]


AGENCIES = [{"agency_id": 1, "name": "North",
             "Clients": [{"client_name": "Ann", "Bookings": [{"booking_id": 1, "Status_Code": "stop"}]}],
             "Workshop_Groups": [{"group_name": "Alpha", "Bookings": [{"booking_id": 2, "Status_Code": "good"}]},
                                 {"group_name": "Beta", "Bookings": [{"booking_id": 3, "Status_Code": "stop"}]}]},
            {"agency_id": 2, "name": "South",
             "Clients": [{"client_name": "Bob", "Bookings": [{"booking_id": 4, "Status_Code": "good"}]}],
             "Workshop_Groups": [{"group_name": "Gamma", "Bookings": [{"booking_id": 5, "Status_Code": "good"}]}]}]

TEAMS = [{"team_id": 1, "Name": "Reds", "match_season": [{"Season": 2001, "Position": "Defender", "Team": 1},
                                                         {"Season": 2002, "Position": "Midfielder", "Team": 1}],
          "player": [{"Player": "Ian", "Team": 9}]},
         {"team_id": 2, "Name": "Blues", "match_season": [{"Season": 2001, "Position": "Forward", "Team": 2}],
          "player": [{"Player": "Joe", "Team": 8}]}]


@pytest.fixture(scope="module")
def deeper(tmp_path_factory):
    return rules_world(tmp_path_factory.mktemp("deeper"), {"shows": {"agency": AGENCIES}, "league": {"team": TEAMS}})


def test_the_parent_whose_names_the_question_says_holds_the_field(deeper):
    prediction, rows = rules_answer(deeper, "shows", "What are the group names of the workshop groups that have "
                                                     'bookings with status code "stop"?')
    assert [r["group_name"] for r in rows] == ["Beta"], prediction["pipeline"]


def test_a_field_of_two_arrays_is_read_in_the_array_the_other_fields_are_in(deeper):
    prediction, rows = rules_answer(deeper, "league",
                                    'Show the positions of the players from the team with name "Reds".')
    assert sorted((r["Position"], r["Team"]) for r in rows) == [("Defender", 1), ("Midfielder", 1)], \
        prediction["pipeline"]
