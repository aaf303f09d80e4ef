"""`rules` reads the piece of text a condition names however the piece is called: 'the French word
"Moulin"' (a word qualifying the piece), 'the keywords', 'beginning with the digit "2"' (the
digit is what it starts with, not the text 'digit')."""

from __future__ import annotations

import pytest

from tests.helpers import rules_answer, rules_world

MILLS = [{"mill_name": "Moulin de la Galette", "stock_code": "2-114"}, {"mill_name": "Grist House", "stock_code": "31"},
         {"mill_name": "Le Moulin Rouge", "stock_code": "207"}, {"mill_name": "Digit Works", "stock_code": "9"}]


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return rules_world(tmp_path_factory.mktemp("pieces"), {"heritage": {"mill": MILLS}})


@pytest.mark.parametrize("question", [
    "Which mill names include the French word 'Moulin'?",
    "What are the names of the mills that feature the French term 'Moulin'?",
    "Which mills have names containing the keyword 'Moulin'?",
])
def test_a_qualified_piece_of_text_is_still_the_piece(world, question):
    prediction, rows = rules_answer(world, "heritage", question)
    assert sorted(r["mill_name"] for r in rows) == ["Le Moulin Rouge", "Moulin de la Galette"], prediction["pipeline"]


def test_a_digit_a_text_starts_with_is_the_digit_said(world):
    prediction, rows = rules_answer(world, "heritage", 'List the names of mills with a stock code beginning with the '
                                                       'digit "2".')
    assert sorted(r["mill_name"] for r in rows) == ["Le Moulin Rouge", "Moulin de la Galette"], prediction["pipeline"]
