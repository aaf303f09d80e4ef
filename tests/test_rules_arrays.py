"""`rules` ranks documents by how many elements an embedded array holds: elements named by the
identifier each holds are counted (not their identifiers ranked), a count per group counts
them, and a noun naming the collection's own documents counts those, not an array's elements."""

from __future__ import annotations

import pytest

from tests.helpers import rules_answer, rules_world

READERS = [{"reader_id": 1, "reader_name": "Ada", "Newsletter_Readers": [{"newsletter_id": 7}]},
           {"reader_id": 2, "reader_name": "Bo", "Newsletter_Readers": [{"newsletter_id": 1}, {"newsletter_id": 2},
                                                                        {"newsletter_id": 3}]},
           {"reader_id": 3, "reader_name": "Cy", "Newsletter_Readers": [{"newsletter_id": 4}, {"newsletter_id": 5}]},
           {"reader_id": 4, "reader_name": "Di", "Newsletter_Readers": []}]
VOTERS = [{"Voter_ID": i, "Name": name, "Party": party, "poll_voters": [{"Poll_ID": p} for p in polls]}
          for i, (name, party, polls) in enumerate([("Ann", "Green", [1, 2, 3]), ("Ben", "Blue", [1]),
                                                    ("Cat", "Blue", []), ("Dan", "Blue", [2])])]

CLIENTS = [{"client_id": 1, "Wallets": [{"wallet_id": 10, "wallet_name": "Main",
                                         "Payments": [{"amount": a} for a in range(5)]},
                                        {"wallet_id": 11, "wallet_name": "Spare", "Payments": [{"amount": 3}]}]},
           {"client_id": 2, "Wallets": [{"wallet_id": 12, "wallet_name": "Travel", "Payments": []}]}]
DEPOTS = [{"depot_id": 1, "Aisles": [{"aisle_id": 4, "Boxes": [{"box_id": b} for b in range(6)]}],
           "Deliveries": [{"delivery_id": 7, "Boxes": [{"box_id": 1}]}, {"delivery_id": 8, "Boxes": []},
                          {"delivery_id": 9, "Boxes": [{"box_id": 2}, {"box_id": 3}]}]}]
GADGETS = [{"gadget_id": 1, "gadget_name": "Lamp", "Owner_Gadgets": [{"since": y} for y in (2018, 2019, 2020)]},
           {"gadget_id": 2, "gadget_name": "Fan", "Owner_Gadgets": [{"since": 2021}]},
           {"gadget_id": 3, "gadget_name": "Kettle", "Owner_Gadgets": []}]
NATIONS = [{"Country_id": i, "Country_name": name, "roster": [{"Player": p, "Position": pos} for p, pos in players]}
           for i, (name, players) in enumerate([("Peru", [("Ana", "Forward"), ("Bea", "Defender"), ("Cid", "Forward")]),
                                                ("Chad", [("Dov", "Forward"), ("Eli", "Forward")]),
                                                ("Fiji", [("Fay", "Defender")])])]
ARENAS = [{"Stadium_ID": i, "Name": name, "concert": [{"concert_Name": c, "Year": y} for c, y in concerts]}
          for i, (name, concerts) in enumerate([("Arena", [("Aida", 2014), ("Bolero", 2015)]),
                                                ("Bowl", [("Carmen", 2014), ("Tosca", 2014)]),
                                                ("Dome", [("Norma", 2015)]), ("Hall", [("Faust", 2016)])])]
BLOCKS = [{"building_id": b, "Apartments": [{"apt_number": n, "Apartment_Bookings": [{"booking_status_code": c}
                                                                                   for c in codes]}
                                            for n, codes in apartments]}
          for b, apartments in enumerate([[("1A", ["Provisional"]), ("1B", ["Confirmed"])],
                                          [("2A", ["Confirmed", "Provisional"]), ("2B", [])]])]


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return rules_world(tmp_path_factory.mktemp("arrays"), {"letters": {"Readers": READERS},
                                                           "polls": {"voters": VOTERS},
                                                           "bank": {"Clients": CLIENTS},
                                                           "depots": {"Depots": DEPOTS},
                                                           "home": {"Gadgets": GADGETS},
                                                           "league": {"country": NATIONS},
                                                           "venues": {"stadium": ARENAS},
                                                           "rentals": {"Apartment_Buildings": BLOCKS}})


def test_elements_named_by_their_identifier_are_counted(world):
    """'the most newsletters', each element of `Newsletter_Readers` holding a `newsletter_id`:
    the reader with the most elements, not the one holding the highest identifier."""
    prediction, rows = rules_answer(world, "letters", "Show the names of readers who have the most newsletters.")
    assert rows == [{"reader_name": "Bo"}], prediction["pipeline"]


def test_elements_a_superlative_counts_rank_without_showing_the_count(world):
    """'the largest number of newsletters' ranks the readers by their array's size; the size is not asked for."""
    prediction, rows = rules_answer(world, "letters",
                                    "Show the names of readers who have the largest number of newsletters.")
    assert rows == [{"reader_name": "Bo"}], prediction["pipeline"]


def test_a_count_per_group_counts_the_ranked_array(world):
    """'the reader who received the highest number of newsletters', counted per name: each
    group counts the array's elements, and the groups are ranked by that count."""
    question = "Retrieve the name of the reader who has received the highest number of newsletters."
    prediction, rows = rules_answer(world, "letters", question)
    assert [r["reader_name"] for r in rows] == ["Bo"], prediction["pipeline"]


def test_the_collections_own_documents_are_counted(world):
    """'the party with the most voters' in `voters`, whose documents also hold a `poll_voters`
    array: the voters themselves are counted per party."""
    prediction, rows = rules_answer(world, "polls", "Show the party that has the most voters.")
    assert rows == [{"Party": "Blue"}], prediction["pipeline"]


def test_a_qualifier_naming_nothing_stored_leaves_the_array_counted(world):
    """'the most print newsletters': `print` names nothing the readers store, the array is still
    the one counted — and the word stays unread, not silently taken as explained."""
    prediction, rows = rules_answer(world, "letters", "Which reader has the most print newsletters? Give the name.")
    assert rows == [{"reader_name": "Bo"}], prediction["pipeline"]
    prediction, rows = rules_answer(world, "letters", "Which reader has the most expensive newsletters?")
    assert "_size" not in str(prediction["pipeline"]), prediction["pipeline"]


def test_a_count_phrase_a_superlative_reads_counts_nothing(world):
    """'the reader with the greatest number of newsletters': the readers ranked by their array's
    size, the top one shown — not a count of every reader."""
    prediction, rows = rules_answer(world, "letters",
                                    "Identify the reader with the greatest number of newsletters and show their name.")
    assert rows == [{"reader_name": "Bo"}], prediction["pipeline"]


def test_a_count_compares_the_size_of_each_elements_own_array(world):
    """'wallets with at least 4 payments', payments an array of each wallet (itself an array of
    each client): each wallet's own payments are counted, not left out."""
    prediction, rows = rules_answer(world, "bank", "Show the wallet id and name with at least 4 payments.")
    assert rows == [{"wallet_id": 10, "wallet_name": "Main"}], prediction["pipeline"]


def test_an_upper_bound_on_a_size_counts_among_documents_that_have_some(world):
    """'readers with at most two newsletters': as a count per reader of its elements, a
    reader without any forms no count — the bound is read among those that have some."""
    prediction, rows = rules_answer(world, "letters", "Show the names of readers with at most two newsletters.")
    assert sorted(r["reader_name"] for r in rows) == ["Ada", "Cy"], prediction["pipeline"]


def test_a_superlative_closing_the_clause_counts_how_often(world):
    """'which party is seen the most among voters': no measure is named, so how often each
    value occurs ranks them."""
    prediction, rows = rules_answer(world, "polls", "Which party is seen the most among voters?")
    assert rows == [{"Party": "Blue"}], prediction["pipeline"]


def test_a_count_per_element_counts_that_elements_own_array(world):
    """'the number of boxes in each delivery', boxes an array of each aisle and of each delivery
    of the depot: each delivery's own boxes are counted, not every aisle box beside it."""
    prediction, rows = rules_answer(world, "depots", "Show the delivery ids and the number of boxes in each delivery.")
    assert sorted((r["delivery_id"], r["count"]) for r in rows) == [(7, 1), (9, 2)], prediction["pipeline"]


def test_a_link_array_is_named_by_the_word_before_the_documents_name(world):
    """`Owner_Gadgets` in `Gadgets`: each element names an owner, so 'owners' are its elements."""
    prediction, rows = rules_answer(world, "home", "How many owners are listed across the gadgets?")
    assert rows == [{"count": 4}], prediction["pipeline"]


def test_a_count_per_document_is_keyed_by_what_is_shown_outside_the_elements(world):
    """'for each gadget, how many owners ...? the gadget name': a count per gadget, by its name."""
    question = "For each gadget, how many owners use it? Give the gadget name and the count."
    prediction, rows = rules_answer(world, "home", question)
    assert sorted((r["gadget_name"], r["count"]) for r in rows) == [("Fan", 1), ("Lamp", 3)], prediction["pipeline"]


def test_the_grain_is_chosen_once_the_keys_named_before_the_count_are_known(world):
    """'the delivery id for the delivery with most number of boxes': the keys are the delivery's,
    so each delivery's own boxes are counted, not the aisles'."""
    question = "What is the delivery id for the delivery with most number of boxes?"
    prediction, rows = rules_answer(world, "depots", question)
    assert rows == [{"delivery_id": 9}], prediction["pipeline"]


@pytest.mark.parametrize("question", ["What is the id of the delivery with the most boxes?",
                                      "Which delivery id has the fewest boxes?"])
def test_the_most_elements_of_an_array_nested_in_the_one_read_rank_its_elements(world, question):
    """'the delivery with the most boxes', each delivery holding its `Boxes`: the deliveries ranked by
    the size of their own array, not an array of the same name inside the aisles."""
    prediction, rows = rules_answer(world, "depots", question)
    assert rows == [{"delivery_id": 9 if "most" in question else 7}], prediction["pipeline"]


def test_the_members_holding_both_values_are_not_shown(world):
    """'countries that have players who occupy both the Forward and Defender positions': each
    player holds one of the values, so no one player is the answer — the countries are shown,
    once each, not every player of theirs."""
    question = "Which countries have players who occupy both the Forward and Defender positions?"
    prediction, rows = rules_answer(world, "league", question)
    assert rows == [{"Country_name": "Peru"}], prediction["pipeline"]


def test_values_joined_by_and_are_each_held_by_an_element_of_the_document_shown(world):
    """'stadiums that hosted concerts in 2014 and 2015': each stadium holds its concerts, so
    'and' asks for a concert of each year; 'or' offers them as alternatives, and so does
    'and' of the concerts themselves (each held in one year)."""
    prediction, rows = rules_answer(world, "venues", "Which stadiums hosted concerts in the years 2014 and 2015?")
    assert rows == [{"Name": "Arena"}], prediction["pipeline"]
    _, rows = rules_answer(world, "venues", "Which stadiums hosted concerts in the years 2014 or 2015?")
    assert sorted(r["Name"] for r in rows) == ["Arena", "Bowl", "Dome"]
    prediction, rows = rules_answer(world, "venues", "List the names of the concerts held in 2014 and 2015.")
    assert sorted(r["concert_Name"] for r in rows) == ["Aida", "Bolero", "Carmen", "Norma", "Tosca"], \
        prediction["pipeline"]


def test_both_values_of_a_nested_array_are_held_by_one_element_of_the_array_around_it(world):
    """'apartments with bookings both Provisional and Confirmed', bookings inside each apartment
    inside each building: one apartment's bookings hold both — not the building's, and no one
    booking (the bookings stay whole once the apartments are unwound)."""
    question = 'Which apartments have bookings with both status codes "Provisional" and "Confirmed"? ' \
               'Give me the apartment numbers.'
    prediction, rows = rules_answer(world, "rentals", question)
    assert rows == [{"apt_number": "2A"}], prediction["pipeline"]


@pytest.mark.parametrize("question", [
    "Return the names of countries that have players that play the Forward position, as well as players who "
    "play the Defender position.",
    "Which countries have players in the Forward position and also in the Defender position?"])
def test_a_value_added_as_one_more_is_required_too(world, question):
    """'A, as well as B', 'A and also B': the second value is one more the document must hold
    (as after 'both'), not an alternative to the first."""
    prediction, rows = rules_answer(world, "league", question)
    assert rows == [{"Country_name": "Peru"}], prediction["pipeline"]
