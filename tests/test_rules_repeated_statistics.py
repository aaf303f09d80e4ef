"""`rules` accounts for every statistic a question names: 'the average score and average employee
number' read as one average leaves the second out (unresolved), while 'the highest average score,
and what is the average score' names one average twice and stays answered."""

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
