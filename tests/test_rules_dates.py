"""`rules` compares a date said in the question ('hired before June 21, 2002', 'in March
2010', 'before 2005', 'born in January') with the field storing dates, in its stored form:
ISO strings as text, a date written with its month's name by its month."""

from __future__ import annotations

import pytest

from tests.helpers import rules_answer, rules_world

STAFF = [{"Staff_ID": 1, "Name": "Ada", "Salary": 10, "hire_date": "1999-03-02", "leave_date": "2004-01-01"},
         {"Staff_ID": 2, "Name": "Bo", "Salary": 20, "hire_date": "2002-06-21", "leave_date": "2005-01-01"},
         {"Staff_ID": 3, "Name": "Cy", "Salary": 30, "hire_date": "2003-03-15", "leave_date": "2006-01-01"},
         {"Staff_ID": 4, "Name": "Di", "Salary": 40, "hire_date": "2010-03-30", "leave_date": "2011-01-01"}]

ORDERS = [{"order_id": 1, "item": "pen", "placed": "2010-03-01 10:00:00"},
          {"order_id": 2, "item": "ink", "placed": "2010-03-31 23:00:00"},
          {"order_id": 3, "item": "cap", "placed": "2010-04-01 00:00:00"}]

BOOKS = [{"book_id": 1, "title": "Old", "Publish_Year": 2009, "shelved": "2020-01-02"},
         {"book_id": 2, "title": "New", "Publish_Year": 2015, "shelved": "2010-05-06"}]

PEOPLE = [{"People_ID": 1, "Name": "Eve", "Birth_Date": "January 3, 1975"},
          {"People_ID": 2, "Name": "Fay", "Birth_Date": "March 9, 1980"},
          {"People_ID": 3, "Name": "Gus", "Birth_Date": "January 30, 1981"}]


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return rules_world(tmp_path_factory.mktemp("dates"), {
        "office": {"staff": STAFF}, "shop": {"orders": ORDERS}, "club": {"people": PEOPLE},
        "catalog": {"books": BOOKS}})


def names(rows, key="Name"):
    return sorted(row[key] for row in rows)


@pytest.mark.parametrize("question", [
    "What are the names of staff hired before June 21, 2002?",
    "What are the names of staff hired prior to 21 June 2002?",
    "What are the names of staff hired before 2002-06-21?",
])
def test_a_day_compares_with_iso_strings_as_text(world, question):
    """An unwitnessed day, however written, is the ISO string the field compares with; the
    words before it ('hired') name the date field among two."""
    prediction, rows = rules_answer(world, "office", question)
    assert names(rows) == ["Ada"], prediction["pipeline"]


def test_a_year_compares_with_the_date_it_names(world):
    """'hired after 2002': from the first day of 2003, not the year as a number."""
    prediction, rows = rules_answer(world, "office", "Show the names of staff hired after 2002.")
    assert names(rows) == ["Cy", "Di"], prediction["pipeline"]


def test_a_month_and_year_is_a_span_of_dates_with_times(world):
    """'in March 2010' over strings with a time: every instant of the month."""
    prediction, rows = rules_answer(world, "shop", "Which items were placed in March 2010?")
    assert names(rows, "item") == ["ink", "pen"], prediction["pipeline"]


def test_a_month_alone_matches_dates_written_with_its_name(world):
    """'born in January' where dates are written 'January 3, 1975': the month's name."""
    prediction, rows = rules_answer(world, "club", "List the names of people born in January.")
    assert names(rows) == ["Eve", "Gus"], prediction["pipeline"]


def test_a_year_beside_a_field_of_years_stays_a_year(world):
    """'placed before 2011' where a field of years is stored too: that field takes the year
    (the date field is no fallback for a bare year)."""
    prediction, rows = rules_answer(world, "catalog", "Which titles were published before 2011?")
    assert names(rows, "title") == ["Old"], prediction["pipeline"]


def test_a_birthday_names_the_birth_date(world):
    """'birthday' is a closed compound of `Birth_Date`: a day is a date."""
    prediction, rows = rules_answer(world, "club", "What are the birthdays of people named Eve?")
    assert [row.get("Birth_Date") for row in rows] == ["January 3, 1975"], prediction["pipeline"]
