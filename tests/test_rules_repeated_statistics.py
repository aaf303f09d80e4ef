"""`rules` accounts for every statistic a question names: 'the average score and average employee
number' read as one average leaves the second out (unresolved), while 'the highest average score,
and what is the average score' names one average twice and stays answered; 'the minimal follower count' or 'the peak number of
followers' read without a minimum or a maximum leaves its statistic out."""

from __future__ import annotations

import pytest

from tests.helpers import rules_answer, rules_world

SHOPS = [{"Shop_ID": i, "Address": f"{i} Main St", "Score": 30 + i, "Num_of_staff": 5 + 2 * i} for i in range(1, 6)]


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return rules_world(tmp_path_factory.mktemp("shops"), {"cafe": {"shop": SHOPS}})


def test_a_second_average_left_unread_is_unresolved(world):
    prediction, rows = rules_answer(world, "cafe", "Please tell me the average score and average employee number "
                                                   "across all shops.")
    assert rows == [{"avg_Score": 33.0}]  # the staff's average is not computed
    assert {"word": "average", "kind": "operation"} in prediction["unresolved"]


def test_one_average_named_twice_is_read(world):
    prediction, rows = rules_answer(world, "cafe", "Which shop has the highest average score, and what is the "
                                                   "average score?")
    assert rows == [{"Shop_ID": 5, "avg_Score": 35.0}]
    assert prediction["unresolved"] == []


def test_both_averages_read(world):
    prediction, rows = rules_answer(world, "cafe", "What are the average score and average staff number of all shops?")
    assert rows == [{"avg_Score": 33.0, "avg_Num_of_staff": 11.0}]
    assert prediction["unresolved"] == []


USERS = [{"uid": i, "name": n, "email": f"{n.lower()}@x.org", "followers": f}
         for i, (n, f) in enumerate([("Ann", 40), ("Bo", 7), ("Cy", 90)])]


@pytest.mark.parametrize("question, word", [
    ("Provide the name and email of the user that has the minimal follower count.", "minimal"),
    ("What is the peak number of followers across all users?", "peak")])
def test_an_adjective_statistic_left_unread_is_unresolved(tmp_path, question, word):
    world = rules_world(tmp_path, {"social": {"user_profiles": USERS}})
    prediction, rows = rules_answer(world, "social", question)
    if {"word": word, "kind": "operation"} not in prediction["unresolved"]:
        assert rows in ([{"name": "Bo", "email": "bo@x.org"}], [{"max_followers": 90}])  # or read right
