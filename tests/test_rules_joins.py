"""`rules` reaches another collection through a join edge the index induced: the values a
question names in a collection other than the one it is about are read through `$lookup`."""

from __future__ import annotations

import pytest

from tests.helpers import rules_answer, rules_world

PAPERS = [{"paperID": 200 + i, "title": title, "Authorship": [{"authID": a, "paperID": 200 + i} for a in authors]}
          for i, (title, authors) in enumerate([("Binders Unbound", [50, 51]), ("Nameless Painless", [52]),
                                                ("Proving Theorems", [51, 53]), ("Typed Closures", [50])])]
AUTHORS = [{"authID": 50 + i, "fname": f, "lname": l, "affiliation": a} for i, (f, l, a) in
           enumerate([("Stephanie", "Weirich", "Penn"), ("Aaron", "Turon", "Mozilla"), ("Olin", "Shivers", "NEU"),
                      ("Jeremy", "Gibbons", "Oxford")])]
LEAGUE = [{"team": "Ravens", "coach": "Ada", "player": [{"Position": "Midfielder", "College": "Duke"},
                                                        {"Position": "Defender", "College": "Yale"}]},
          {"team": "Hawks", "coach": "Ben", "player": [{"Position": "Defender", "College": "Duke"},
                                                      {"Position": "Defender", "College": "Rice"}]}]


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return rules_world(tmp_path_factory.mktemp("joins"), {"papers": {"Papers": PAPERS, "Authors": AUTHORS},
                                                          "league": {"teams": LEAGUE}})


answer = rules_answer


def test_a_value_of_another_collection_is_shown_through_a_lookup(world):
    prediction, rows = answer(world, "papers", 'What are the last names of the authors of the paper titled "Binders Unbound"?')
    assert any("$lookup" in stage for stage in prediction["pipeline"]), prediction["pipeline"]
    assert sorted(r["lname"] for r in rows) == ["Turon", "Weirich"]


def test_a_literal_only_another_collection_stores_filters_through_a_lookup(world):
    prediction, rows = answer(world, "papers", 'What are the titles of the papers written by "Turon"?')
    assert any("$lookup" in stage for stage in prediction["pipeline"]), prediction["pipeline"]
    assert sorted(r["title"] for r in rows) == ["Binders Unbound", "Proving Theorems"]


def test_a_question_one_collection_explains_needs_no_join(world):
    prediction, _ = answer(world, "papers", "What are the titles of all papers?")
    assert not any("$lookup" in stage for stage in prediction["pipeline"])
    prediction, _ = answer(world, "league", "Which coach does the Ravens team have?")
    assert not any("$lookup" in stage for stage in prediction["pipeline"])


def test_the_collection_asked_for_is_read_and_the_literal_of_another_reached(world):
    """'which papers have "Turon" as an author': the papers are asked for (their titles), the
    author only filters them — though the literal and 'author' favour Authors."""
    prediction, rows = answer(world, "papers", 'Which papers have "Turon" as an author?')
    assert prediction["collection"] == "Papers"
    assert sorted(r["title"] for r in rows) == ["Binders Unbound", "Proving Theorems"]


def test_a_text_pattern_on_another_collection_replaces_a_partial_field_name(world):
    """'a paper with title containing ...': 'paper' names Papers, not half of `paperID`."""
    prediction, rows = answer(world, "papers", 'Find the last names of the authors that have written a paper with '
                                               'title containing the word "Closures".')
    assert rows == [{"lname": "Weirich"}], prediction["pipeline"]


def test_a_field_only_another_collection_has_is_read_through_a_lookup(world):
    """'the affiliations of the writers of each paper': no collection is named, but only Authors
    has an affiliation (a name no collection could share, unlike 'name' or 'id')."""
    prediction, rows = answer(world, "papers", 'Show the affiliations for the paper titled "Binders Unbound".')
    assert sorted(r["affiliation"] for r in rows) == ["Mozilla", "Penn"], prediction["pipeline"]


def test_both_values_of_the_element_shown_are_held_by_different_elements(world):
    """'which colleges have both midfielders and defenders': each player holds one position, so
    positions are gathered per college (not required of one team's array at once)."""
    prediction, rows = answer(world, "league", "Which college have both players with position Midfielder "
                                               "and players with position Defender?")
    assert rows == [{"College": "Duke"}], prediction["pipeline"]


CUSTOMERS = [{"customer_id": 1, "first_name": "Ada"}, {"customer_id": 2, "first_name": "Ben"},
             {"customer_id": 3, "first_name": "Cy"}]
CARDS = [{"card_id": 10 + i, "customer_id": c, "card_type": t}
         for i, (c, t) in enumerate([(1, "Debit"), (1, "Credit"), (2, "Debit"), (1, "Debit"), (3, "Credit"),
                                     (3, "Credit")])]


@pytest.fixture(scope="module")
def bank(tmp_path_factory):
    return rules_world(tmp_path_factory.mktemp("bank"), {"bank": {"Customers": CUSTOMERS, "Customer_Cards": CARDS}})


def test_documents_of_another_collection_counted_are_the_size_of_their_lookup(bank):
    """'customers with at least two cards': the cards each customer's `$lookup` joins, counted."""
    prediction, rows = answer(bank, "bank", "Show the first names of customers with at least three cards.")
    assert prediction["collection"] == "Customers" and any("$lookup" in s for s in prediction["pipeline"])
    assert [r["first_name"] for r in rows] == ["Ada"]
    _, rows = answer(bank, "bank", "Show the first names of customers with more than one card.")
    assert sorted(r["first_name"] for r in rows) == ["Ada", "Cy"]


def test_documents_of_another_collection_counted_per_document_or_ranked(bank):
    """'how many cards does each customer have', 'the customer with the most cards': the size of
    each customer's `$lookup`, shown or ranked."""
    _, rows = answer(bank, "bank", "Show the first name of each customer and the number of cards they hold.")
    assert sorted((r["first_name"], r["count"]) for r in rows) == [("Ada", 3), ("Ben", 1), ("Cy", 2)]
    _, rows = answer(bank, "bank", "What is the first name of the customer with the most cards?")
    assert [r["first_name"] for r in rows] == ["Ada"]


def test_documents_counted_per_document_of_a_joined_collection_are_read_from_it(bank):
    """'how many cards does each customer hold', the cards a collection of their own: the
    customers are read, each one's `$lookup` of cards counted."""
    prediction, rows = answer(bank, "bank", "How many cards are held by each customer?")
    assert prediction["collection"] == "Customers"
    assert sorted(r["count"] for r in rows) == [1, 2, 3]


def test_documents_of_another_collection_meeting_a_condition_are_counted_per_document(bank):
    """'how many debit cards does each customer hold': the joined cards meeting the condition,
    counted per customer."""
    _, rows = answer(bank, "bank", "How many cards of type Debit does each customer have?")
    assert sorted((r["first_name"], r["count"]) for r in rows) == [("Ada", 2), ("Ben", 1)]


def test_a_bare_id_on_both_sides_is_no_trusted_join_edge():
    """`station.id` = `train.id`: each collection's own identifier, equal by chance; a field
    named the same on both sides otherwise is trusted."""
    from nlq.methods.rules.schema import join_edge

    def edge(a, b):
        return {"join_edges": [{"from": {"collection": "station", "path": a}, "to": {"collection": "train", "path": b}}]}

    assert join_edge(edge("id", "id"), "station", "train") is None
    assert join_edge(edge("route[].train_id", "train_id"), "station", "train") == ("route.train_id", "train_id")


MUSICALS = [{"Musical_ID": 1, "Name": "Cats"}, {"Musical_ID": 2, "Name": "Hair"}, {"Musical_ID": 3, "Name": "Rent"}]
ACTORS = [{"Actor_ID": 10 + i, "Name": n, "Musical_ID": m}
          for i, (n, m) in enumerate([("Ann", 1), ("Bo", 1), ("Cal", 2), ("Dee", 1), ("Eve", 3), ("Fay", 3)])]


def test_documents_listed_before_a_count_of_a_joined_collection_are_read(tmp_path):
    """'the names of musicals and the number of actors': the musicals listed, each one's
    actors counted (not the actors' own names)."""
    stage = rules_world(tmp_path, {"stage": {"musical": MUSICALS, "actor": ACTORS}})
    prediction, rows = answer(stage, "stage", "Show names of musicals and the number of actors in the musicals.")
    assert prediction["collection"] == "musical"
    assert sorted((r["Name"], r["count"]) for r in rows) == [("Cats", 3), ("Hair", 1), ("Rent", 2)]


PEOPLE = [{"person_id": i, "name": n, "home_state": s} for i, (n, s) in
          enumerate([("Ann", "Ohio"), ("Bo", "Ohio"), ("Cy", "Iowa"), ("Di", "Ohio"), ("Ed", "Utah")], 1)]
OFFICES = [{"office_id": 10 + i, "Name": n, "staff": [{"person_id": p} for p in ps]} for i, (n, ps) in
           enumerate([("State", [1, 3]), ("Treasury", [2]), ("Defense", [4, 5])])]


@pytest.fixture(scope="module")
def offices(tmp_path_factory):
    return rules_world(tmp_path_factory.mktemp("offices"), {"civil": {"people": PEOPLE, "offices": OFFICES}})


def test_a_lowercase_word_naming_a_field_here_is_no_literal_of_a_joined_collection(offices):
    """'which states are home to ...': 'states' names `home_state`; that another collection
    stores an office named "State" is no reason to join it and filter on it."""
    prediction, rows = answer(offices, "civil", "Which states are home to at least 2 people?")
    assert not any("$lookup" in stage for stage in prediction["pipeline"]), prediction["pipeline"]
    assert rows == [{"home_state": "Ohio"}], prediction["pipeline"]


def test_a_capitalized_literal_of_a_joined_collection_still_filters_through_a_lookup(offices):
    prediction, rows = answer(offices, "civil", "What are the names of the people working in the State office?")
    assert any("$lookup" in stage for stage in prediction["pipeline"]), prediction["pipeline"]
    assert sorted(r["name"] for r in rows) == ["Ann", "Cy"], prediction["pipeline"]



CLIENTS = [{"client_id": i, "name": n, "outcome_code": o}
           for i, (n, o) in enumerate([("Bo", "Order"), ("Al", "Browse"), ("Cy", "Order"), ("Di", "Leave")], 1)]


def test_an_ordering_word_is_no_literal_a_stored_value_spells(tmp_path_factory):
    """'... and order by name': "Order", a stored outcome, is not filtered on."""
    world = rules_world(tmp_path_factory.mktemp("shop"), {"shop": {"clients": CLIENTS}})
    prediction, rows = answer(world, "shop", "List the names of all clients and order by name.")
    assert [r["name"] for r in rows] == ["Al", "Bo", "Cy", "Di"], prediction["pipeline"]


DORMS = [{"dormid": 100 + i, "dorm_name": n, "Has_amenity": [{"dormid": 100 + i, "amenid": a} for a in amenities]}
         for i, (n, amenities) in enumerate([("Smith Hall", [900, 902]), ("Fawlty Towers", [901]),
                                             ("Dreamland", [900, 901, 902])])]
AMENITIES = [{"amenid": 900 + i, "amenity_name": n} for i, n in enumerate(["TV Lounge", "Study Room", "Gym"])]


@pytest.fixture(scope="module")
def dorms(tmp_path_factory):
    return rules_world(tmp_path_factory.mktemp("dorms"), {"campus": {"Dorm": DORMS, "Dorm_amenity": AMENITIES}})


def test_an_array_linking_to_another_collection_does_not_name_this_one(dorms):
    """'what amenities does Smith Hall offer': the amenities are asked for, though the dorms'
    array `Has_amenity`, which links them, ends with the word."""
    prediction, rows = answer(dorms, "campus", "What amenities does Smith Hall offer?")
    assert prediction["collection"] == "Dorm_amenity", prediction["pipeline"]
    assert sorted(r["amenity_name"] for r in rows) == ["Gym", "TV Lounge"]


def test_documents_counted_per_the_document_asked_for_do_not_name_the_collection_asked(dorms):
    """'the dorm with the fewest amenities': dorms are asked for, amenities counted per dorm."""
    prediction, rows = answer(dorms, "campus", "Identify the dormitory with the fewest amenities and give its name.")
    assert prediction["collection"] == "Dorm", prediction["pipeline"]
    assert rows == [{"dorm_name": "Fawlty Towers"}], prediction["pipeline"]


MEMBERSHIPS = [(1, 10, "President"), (2, 10, "CTO"), (3, 11, "President"), (2, 11, "Treasurer")]
CLUBS = [{"ClubID": c, "ClubName": n, "Member_of_club": [{"StuID": s, "ClubID": c, "Position": p}
                                                         for s, club, p in MEMBERSHIPS if club == c]}
         for c, n in [(10, "Bootup Baltimore"), (11, "Hopkins Student Enterprises")]]
STUDENTS = [{"StuID": s, "Fname": f, "LName": l, "Member_of_club": [{"StuID": s, "ClubID": c, "Position": p}
                                                                    for who, c, p in MEMBERSHIPS if who == s]}
            for s, f, l in [(1, "Linda", "Smith"), (2, "Tracy", "Kim"), (3, "Shiela", "Jones")]]


def test_a_longer_name_in_another_collection_reads_the_words_of_a_shorter_one_here(tmp_path):
    """'the last names of the members of the club ...' over clubs: 'last names' is the
    students' `LName`, not the clubs' own name the word 'names' alone would show."""
    world = rules_world(tmp_path, {"clubs": {"Club": CLUBS, "Student": STUDENTS}})
    prediction, rows = answer(world, "clubs", 'Find the last names of the members of the club "Bootup Baltimore".')
    assert sorted(r["LName"] for r in rows) == ["Kim", "Smith"], prediction["pipeline"]


def test_a_loose_holder_of_a_value_stored_whole_elsewhere_is_no_piece_of_text(world):
    """'papers that have "Olin Shivers" as one of their authors': a first and a last name the
    authors store, reached through the join — not a piece of text in the papers' titles."""
    prediction, rows = answer(world, "papers", 'What are the titles of the papers that have "Olin Shivers" as one of '
                                               'their authors?')
    assert [r["title"] for r in rows] == ["Nameless Painless"], prediction["pipeline"]
    prediction, rows = answer(world, "papers", 'Which papers have titles with the word "Closures"?')
    assert [r["title"] for r in rows] == ["Typed Closures"], prediction["pipeline"]


PET_OWNERS = [{"StuID": 1, "LName": "Ann", "Sex": "F", "Has_Pet": [{"PetID": 10}, {"PetID": 11}]},
              {"StuID": 2, "LName": "Bo", "Sex": "M", "Has_Pet": [{"PetID": 12}]},
              {"StuID": 3, "LName": "Cat", "Sex": "F", "Has_Pet": [{"PetID": 13}]}]
PETS = [{"PetID": 10 + i, "PetType": t} for i, t in enumerate(["dog", "dog", "dog", "cat"])]


@pytest.fixture(scope="module")
def pets(tmp_path_factory):
    return rules_world(tmp_path_factory.mktemp("pets"), {"pets": {"Student": PET_OWNERS, "Pets": PETS}})


def test_joined_documents_a_condition_reads_are_what_a_count_of_them_counts(pets):
    """'the number of dogs kept by female students': the joined pets that are dogs, counted (Ann's
    two), not the students who keep one; 'how many female students have dogs' counts students."""
    _, rows = answer(pets, "pets", "Count the number of dogs that are kept by students who are female.")
    assert rows == [{"count": 2}]
    _, rows = answer(pets, "pets", "How many female students have dogs?")
    assert rows == [{"count": 1}]


LEARNERS = [{"student_id": i, "login_name": name, "Enrolment": [{"course_id": c} for c in courses]}
            for i, (name, courses) in enumerate([("ann", [1, 2]), ("bob", [2]), ("cal", [1, 2, 3]), ("dee", [3])])]
COURSE_AUTHORS = [{"author_id": 100, "family_name": "Ross", "Courses": [{"course_id": 1, "course_name": "Algebra"},
                                                                     {"course_id": 2, "course_name": "Biology"}]},
                  {"author_id": 101, "family_name": "Chan", "Courses": [{"course_id": 3, "course_name": "Chemistry"},
                                                                     {"course_id": 4, "course_name": "Drama"}]}]
SINGERS = [{"Singer_ID": i, "Name": name, "singer_in_concert": [{"concert_ID": c} for c in concerts]}
           for i, (name, concerts) in enumerate([("Joe", [1, 2]), ("Tim", [2]), ("Ann", [1, 3])])]
STADIUMS = [{"Stadium_ID": 1, "Name": "Big", "concert": [{"concert_ID": 1, "concert_Name": "Auditions", "Theme": "Free"},
                                                         {"concert_ID": 2, "concert_Name": "Super", "Theme": "Happy"}]},
            {"Stadium_ID": 2, "Name": "Small", "concert": [{"concert_ID": 3, "concert_Name": "Home", "Theme": "Party"}]}]


@pytest.fixture(scope="module")
def paired(tmp_path_factory):
    return rules_world(tmp_path_factory.mktemp("paired"), {
        "learning": {"Students": LEARNERS, "Course_Authors": COURSE_AUTHORS},
        "concerts": {"singer": SINGERS, "stadium": STADIUMS}})


def test_each_element_joins_the_joined_element_it_refers_to(paired):
    """'the name of each course and the number of student enrollments', each student's
    enrolments referring to courses kept in the authors' arrays: each enrolment is paired with
    its own course — not every course of each author any enrolment reaches."""
    prediction, rows = answer(paired, "learning",
                              "What is the name of each course and the corresponding number of student enrollments?")
    assert any("$lookup" in stage for stage in prediction["pipeline"]), prediction["pipeline"]
    assert sorted((r["course_name"], r["count"]) for r in rows) == [("Algebra", 2), ("Biology", 3),
                                                                    ("Chemistry", 2)], rows


def test_a_generic_name_listed_with_a_joined_field_is_the_joined_ones(paired):
    """'the name and theme for all concerts', `Theme` read in the joined concerts: 'name' is
    the concerts' `concert_Name`, not the singers' own `Name`."""
    for question in ("Show the name and theme for all concerts and the number of singers in each concert.",
                     "What are the names, themes, and number of singers for every concert?"):
        _, rows = answer(paired, "concerts", question)
        assert sorted((r["concert_Name"], r["Theme"], r["count"]) for r in rows) == [
            ("Auditions", "Free", 2), ("Home", "Party", 1), ("Super", "Happy", 2)], rows


def test_a_piece_of_text_then_a_value_stored_whole_are_both_read(tmp_path):
    """'titles containing "deep" and associated with the "Google" institution': a piece of a
    title, then a value some field stores whole; the first literal's reading leaves the second's."""
    papers = [{"title": t, "Inst": [{"name": i}]} for t, i in [("deep nets", "Google"), ("deep sea", "MIT"),
                                                                ("shallow", "Google")]]
    world = rules_world(tmp_path, {"papers": {"Papers": papers}})
    prediction, rows = rules_answer(world, "papers", 'Which papers have titles containing "deep" and are associated '
                                                     'with the "Google" institution?')
    assert rows == [{"title": "deep nets"}], prediction["pipeline"]
