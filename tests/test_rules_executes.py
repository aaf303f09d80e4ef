"""Every pipeline `rules` emits runs: the size of an array is counted before that array is
unwound, an equality next to an operator document joins its operators (no operator document
inside `$in`), and an array whose size is aggregated stays whole."""

from __future__ import annotations

import pytest

from tests.helpers import rules_answer, rules_world

BLOCKS = [{"building_id": b, "Apartments": [{"apt_number": n, "Apartment_Bookings": [{"booking_status_code": c}
                                                                                   for c in codes]}
                                            for n, codes in apartments]}
          for b, apartments in enumerate([[("1A", ["Provisional"]), ("1B", ["Confirmed"])],
                                          [("2A", ["Confirmed", "Provisional"]), ("2B", [])]])]
CITIES = [{"City": c, "temperature": [{"Feb": feb, "Jun": jun}], "hosting_city": [{"Year": y, "Host_City": c}
                                                                                  for y in hosts]}
          for c, feb, jun, hosts in [("Oslo", 10, 20, [2008]), ("Lima", 25, 18, []), ("Rome", 5, 25, []),
                                     ("Cairo", 30, 28, [2010])]]
NATIONS = [{"Name": "Austria", "Languages": ["German"]}, {"Name": "Peru", "Languages": ["Spanish"]},
           {"Name": "Fiji"}]


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return rules_world(tmp_path_factory.mktemp("executes"), {"rentals": {"Apartment_Buildings": BLOCKS},
                                                             "towns": {"city": CITIES},
                                                             "geo": {"country": NATIONS}})


def test_the_size_of_an_unwound_array_is_counted_before_its_unwind(world):
    """'apartments that have confirmed bookings', the bookings of each apartment unwound to
    read their status: that the apartment has bookings is matched before they are unwound
    (after it each booking is an object, no array a `$size` could count)."""
    prediction, rows = rules_answer(world, "rentals",
                                    "What are the apartment numbers of the apartments that have confirmed bookings?")
    stages = prediction["pipeline"]
    unwind = stages.index({"$unwind": "$Apartments.Apartment_Bookings"})
    assert all("$size" not in str(stage) for stage in stages[unwind:])
    assert sorted(r["apt_number"] for r in rows) == ["1B", "2A"]


def test_a_size_on_one_side_of_an_or_is_kept_before_the_unwind(world):
    """'cities ... or that have served as host cities', the host cities unwound to be shown and
    the 'or' waiting for the temperatures' unwind: the number of host cities is kept in a field
    before they are unwound, and the `$or` reads it."""
    prediction, rows = rules_answer(world, "towns", "Which cities have higher temperature in Feb than in Jun "
                                                    "or have once served as host cities?")
    stages = prediction["pipeline"]
    unwind = stages.index({"$unwind": "$hosting_city"})
    assert all("$size" not in str(stage) for stage in stages[unwind:])
    assert {"Oslo", "Cairo"} <= {r["City"] for r in rows}


def test_an_equality_next_to_an_operator_document_is_one_of_its_operators(world):
    """Two conditions read on one field, one an operator document ('not ...', 'missing'):
    the value joins its operators; an operator document in `$in` would not run."""
    prediction, rows = rules_answer(world, "geo", 'Identify countries where "German" is not a spoken language.')
    assert "'$in': [{" not in str(prediction["pipeline"])
    assert isinstance(rows, list)


def test_an_array_whose_size_is_aggregated_stays_whole():
    """'the total number of discipline enrollments' counted per element of the array (its grain):
    the sum adds up each document's array size, so the array is not unwound (after an unwind
    each element is an object, no array `$size` could count)."""
    from nlq.methods.rules.ir import IR, Field
    from nlq.methods.rules.outputs import plan_unwinds
    from nlq.methods.rules.render import render

    array = Field("Campuses", "discipline_enrollments[]", "discipline_enrollments", ("discipline_enrollments",),
                  "array", "array", ("discipline", "enrollments"), ())
    ir = IR("Campuses", aggregates=[("$sum", array)], grain="discipline_enrollments",
            array_paths=frozenset({"discipline_enrollments"}))
    ir.unwinds = plan_unwinds(ir)
    assert ir.unwinds == []
    assert {"$unwind": "$discipline_enrollments"} not in render(ir)
