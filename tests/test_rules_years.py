"""`rules` binds a year literal ('opened after 2010', 'registered in 2016') to a field whose
stored values are calendar years — numbers or text spelling them — never to another number
of the document, and compares it in the form the field stores."""

from __future__ import annotations

import pytest

from tests.helpers import rules_answer, rules_world

MUSEUMS = [{"Museum_ID": 1, "Name": "Plaza", "Num_of_Staff": 62, "Open_Year": "2000"},
           {"Museum_ID": 2, "Name": "Capital", "Num_of_Staff": 25, "Open_Year": "2012"},
           {"Museum_ID": 3, "Name": "Jefferson", "Num_of_Staff": 18, "Open_Year": "2010"},
           {"Museum_ID": 4, "Name": "Willow", "Num_of_Staff": 30, "Open_Year": "2014"}]

BRANCHES = [{"Branch_ID": 1, "Name": "Alley", "Open_year": "2001",
             "register": [{"Member_ID": 1, "Register_Year": "2016"}, {"Member_ID": 2, "Register_Year": "2014"}]},
            {"Branch_ID": 2, "Name": "Bridge", "Open_year": "2017",
             "register": [{"Member_ID": 3, "Register_Year": "2012"}]},
            {"Branch_ID": 3, "Name": "Cliff", "Open_year": "2009", "register": []}]

CONDUCTORS = [{"Conductor_ID": 1, "Name": "Antal", "Year_of_Work": 10,
               "orchestra": [{"Orchestra": "London", "Year_of_Founded": 2003}]},
              {"Conductor_ID": 2, "Name": "Colin", "Year_of_Work": 12,
               "orchestra": [{"Orchestra": "Detroit", "Year_of_Founded": 2009}]}]


CHIPS = [{"Model_name": "A", "Launch_year": 2002.0, "RAM_MiB": 32.0},
         {"Model_name": "B", "Launch_year": 2004.0, "RAM_MiB": 16.0},
         {"Model_name": "C", "Launch_year": 2005.0, "RAM_MiB": 64.0}]


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return rules_world(tmp_path_factory.mktemp("years"), {
        "museums": {"museum": MUSEUMS}, "shops": {"branch": BRANCHES}, "music": {"conductor": CONDUCTORS},
        "phones": {"chip_model": CHIPS}})


def names(rows):
    return sorted(row["Name"] for row in rows)


def test_a_year_compares_the_field_of_years_stored_as_text(world):
    """'opened after 2010': `Open_Year` holds years as text, not the staff number beside it."""
    prediction, rows = rules_answer(world, "museums", "Find the names of museums opened after 2010.")
    assert names(rows) == ["Capital", "Willow"], prediction["pipeline"]


def test_an_unwitnessed_year_finds_the_field_of_years(world):
    """'after 2013 or before 2008': neither year is stored, yet only `Open_Year` holds years."""
    prediction, rows = rules_answer(world, "museums", "How many museums were opened after 2013 or before 2001?")
    assert rows == [{"count": 2}], prediction["pipeline"]


def test_a_witnessed_year_stored_as_text_is_an_equality(world):
    prediction, rows = rules_answer(world, "shops", "Show the names of branches with a member registered in 2016.")
    assert names(rows) == ["Alley"], prediction["pipeline"]


def test_the_field_of_years_a_word_names_is_compared(world):
    """'members registered after 2015': `Register_Year`, not the branch's `Open_year`."""
    prediction, rows = rules_answer(world, "shops", "Show the names of branches with members registered after 2015.")
    assert names(rows) == ["Alley"], prediction["pipeline"]


def test_a_field_named_year_that_holds_no_years_is_not_compared(world):
    """'founded after 2008': `Year_of_Work` (10, 12) counts years; `Year_of_Founded` holds them."""
    prediction, rows = rules_answer(world, "music", "List the names of conductors whose orchestras were founded after 2008.")
    assert names(rows) == ["Colin"], prediction["pipeline"]


def test_a_number_that_is_no_year_is_not_compared_with_years_as_text(world):
    """'more than 1 registered member': whatever it counts, no `Register_Year` over 1."""
    prediction, _ = rules_answer(world, "shops", "Show the names of branches with more than 1 registered members.")
    assert all(f["path"] != "register.Register_Year" for f in prediction["ir"]["filters"]), prediction["pipeline"]


@pytest.mark.parametrize("question", [
    "Find the names of museums opened from 2010 to 2012.",
    "Find the names of museums opened during the years 2010 through 2012.",
])
def test_a_span_of_years_includes_both_ends(world, question):
    prediction, rows = rules_answer(world, "museums", question)
    assert names(rows) == ["Capital", "Jefferson"], prediction["pipeline"]



def test_a_number_that_is_no_year_skips_a_field_of_years(world):
    """'launched in 2002 or with more than 32 MiB of RAM': 32 is no value of `Launch_year`."""
    prediction, rows = rules_answer(world, "phones", "List the model names of chips launched in 2002 "
                                                      "or with more than 32 MiB of RAM.")
    assert sorted(r["Model_name"] for r in rows) == ["A", "C"], prediction["pipeline"]
