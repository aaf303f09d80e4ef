"""`rules` lists a set of values as the distinct word names it: what 'distinct', 'different'
or 'unique' stands before (and what is listed with it) is shown, not the fields that say
whose values they are."""

from __future__ import annotations

import pytest

from tests.helpers import rules_answer, rules_world

COUNTRIES = [{"Country_id": i, "Capital": capital,
              "squad": [{"Player": player, "Position": position} for player, position in players]}
             for i, (capital, players) in enumerate([
                 ("Dublin", [("Keane", "Defender"), ("Duff", "Midfielder"), ("Given", "Defender")]),
                 ("Oslo", [("Riise", "Defender"), ("Flo", "Forward")])])]
COMPETITIONS = [{"Competition_ID": i, "Competition_type": kind, "Country": country}
                for i, (kind, country) in enumerate([("Friendly", "Ireland"), ("Friendly", "Ireland"),
                                                     ("Cup", "Ireland"), ("Cup", "Spain")])]


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return rules_world(tmp_path_factory.mktemp("distinct_values"),
                       {"soccer": {"country": COUNTRIES, "competition": COMPETITIONS}})


def test_the_values_a_distinct_word_names_are_shown_alone(world):
    """'the distinct positions of the players from ...': positions, not players beside them."""
    prediction, rows = rules_answer(world, "soccer", "What are the distinct positions of the players from a "
                                                     "country whose capital is Dublin?")
    assert sorted(tuple(r.values()) for r in rows) == [("Defender",), ("Midfielder",)], prediction["pipeline"]


def test_a_field_listed_past_the_values_owner_is_shown_too(world):
    """'the various types of competitions and the countries ...': both, one row per pair."""
    prediction, rows = rules_answer(world, "soccer",
                                    "What are the different types of competitions and the countries they are held in?")
    assert sorted(tuple(sorted(r.values())) for r in rows) == [
        ("Cup", "Ireland"), ("Cup", "Spain"), ("Friendly", "Ireland")], prediction["pipeline"]


SERVICES = [{"service_id": i, "service_type_code": kind, "Forms": [{"form_id": 10 * i + k, "form_type_code": form}
                                                                   for k, form in enumerate(forms)]}
            for i, (kind, forms) in enumerate([("Education", ["Basic", "Complex"]), ("Welfare", ["Basic"]),
                                               ("Education", [])])]


@pytest.fixture(scope="module")
def services(tmp_path_factory):
    return rules_world(tmp_path_factory.mktemp("services"), {"government": {"Services": SERVICES}})


@pytest.mark.parametrize("question", ["What are the different types of forms?", "List all the types of forms."])
def test_the_field_of_the_owner_an_of_phrase_names(services, question):
    """'the types of forms': the forms' `form_type_code`, not the services' own type."""
    prediction, rows = rules_answer(services, "government", question)
    assert sorted(tuple(r.values()) for r in rows) == [("Basic",), ("Complex",)], prediction["pipeline"]
