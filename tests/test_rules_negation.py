"""`rules` reads a negation before an array entity and a condition on it as no element
meeting the condition — not as an empty array and the condition at once (a contradiction)."""

from __future__ import annotations

import pytest

from tests.helpers import rules_answer, rules_world

COUNTRIES = [{"Country_ID": 1, "Name": "Austria", "roller_coaster": [{"Name": "Blitz", "Length": 3500, "Speed": 80},
                                                                      {"Name": "Loop", "Length": 1000, "Speed": 40}]},
             {"Country_ID": 2, "Name": "Finland", "roller_coaster": [{"Name": "Kirnu", "Length": 1200, "Speed": 55}]},
             {"Country_ID": 3, "Name": "Sweden", "roller_coaster": [{"Name": "Twist", "Length": 3200, "Speed": 30}]},
             {"Country_ID": 4, "Name": "Norway", "roller_coaster": []}]
DORMS = [{"dormid": 100 + i, "dorm_name": name, "Has_amenity": [{"dormid": 100 + i, "amenid": a} for a in amenities]}
         for i, (name, amenities) in enumerate([("Anonymous Donor Hall", [900, 901]), ("Bud Jones Hall", [901]),
                                                ("Fawlty Towers", [900]), ("Smith Hall", [])])]
AMENITIES = [{"amenid": 900, "amenity_name": "TV Lounge"}, {"amenid": 901, "amenity_name": "Study Room"}]
FILMS = [{"mID": 100 + i, "title": title} for i, title in enumerate(["Gone", "Avatar", "Alien", "Heat", "Brazil"])]
CRITICS = [{"rID": 200 + i, "name": name, "Rating": [{"rID": 200 + i, "mID": m, "stars": 3} for m in seen]}
           for i, (name, seen) in enumerate([("Chris Jackson", [100, 101]), ("Ada Lane", [101, 102]),
                                             ("Ben Ortiz", [103])])]


OWNERS = [{"StuID": 1000 + i, "Fname": name, "Has_Pet": [{"StuID": 1000 + i, "PetID": p} for p in pets]}
          for i, (name, pets) in enumerate([("Linda", [2001]), ("Tracy", [2002, 2003]), ("Shiela", [])])]
PETS = [{"PetID": 2001, "PetType": "cat", "pet_age": 3}, {"PetID": 2002, "PetType": "dog", "pet_age": 2},
        {"PetID": 2003, "PetType": "dog", "pet_age": 1}]

FIRMS = [{"Company_ID": i, "Company": name, "Headquarters": hq, "Main_Industry": industry}
         for i, (name, hq, industry) in enumerate([("Exxon", "USA", "Oil and gas"), ("HSBC", "UK", "Banking"),
                                                   ("Shell", "Netherlands", "Oil and gas")])]

RESIDENTS = [{"StuID": 1 + i, "Fname": name, "city_code": city, "Lives_in": [{"StuID": 1 + i, "dormid": d} for d in dorms]}
             for i, (name, city, dorms) in enumerate([("Ann", "HKG", [100]), ("Bo", "NYC", [100]),
                                                      ("Cy", "PIT", []), ("Di", "HKG", [])])]

WEEKENDS = [{"round": i, "red_flags": [{"lap": 3}] * flags, "marshals": [{"flag": colour}]}
            for i, (flags, colour) in enumerate([(1, "red"), (0, "red"), (0, "yellow"), (2, "blue")])]

SHOWS = [{"show_id": i, "title": t, "Rating": [{"stars": v} for v in stars],
          "show_coach": [{"coach_id": c} for c in coaches]}
         for i, (t, stars, coaches) in enumerate([("Heat", [4, 5], [7]), ("Gone", [], [8]), ("Alien", [3], []),
                                                  ("Brazil", [], [])])]
BUILDINGS = [{"building_id": b, "Apartments": [{"apt_number": n, "Apartment_Facilities": [{"facility": f} for f in fs]}
                                               for n, fs in apartments]}
             for b, apartments in enumerate([[("1A", ["Gym"]), ("1B", [])], [("2A", []), ("2B", [])],
                                             [("3A", ["Pool", "Gym"])]])]
BLOCKS = [{"building_id": 1, "Apartments": [{"apt_number": "A1", "Facilities": [{"facility_code": "Gym"}]},
                                            {"apt_number": "A2", "Facilities": []}]},
          {"building_id": 2, "Apartments": [{"apt_number": "B1", "Facilities": []}]},
          {"building_id": 3, "Apartments": [{"apt_number": "C1", "Facilities": [{"facility_code": "Pool"}]}]}]
FIRMS_ASSETS = [{"company_id": c, "Assets": [{"asset_id": a, "asset_model": m, "Fault_Log": [{"fault": f} for f in fs]}
                                             for a, m, fs in assets]}
                for c, assets in enumerate([[(1, "X1", ["jam"]), (2, "X2", [])], [(3, "Y1", []), (4, "Y2", ["leak"])]])]


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return rules_world(tmp_path_factory.mktemp("negation"), {"rides": {"country": COUNTRIES},
                                                             "dorms": {"Dorm": DORMS, "Dorm_amenity": AMENITIES},
                                                             "films": {"Film": FILMS, "Critic": CRITICS},
                                                             "pets": {"Student": OWNERS, "Pets": PETS},
                                                             "firms": {"company": FIRMS},
                                                             "housing": {"Student": RESIDENTS},
                                                             "racing": {"weekends": WEEKENDS},
                                                             "shows": {"show": SHOWS},
                                                             "flats": {"Apartment_Buildings": BUILDINGS},
                                                             "blocks": {"Buildings": BLOCKS},
                                                             "upkeep": {"Third_Party_Companies": FIRMS_ASSETS}})


answer = rules_answer


def test_no_element_meets_a_denied_comparison(world):
    """'do not have a roller coaster longer than 3000': countries whose coasters are all
    shorter, and those with none — not those with no coaster and a long one."""
    prediction, rows = answer(world, "rides", "How many countries do not have a roller coaster longer than 3000?")
    assert rows == [{"count": 2}], prediction["pipeline"]
    prediction, rows = answer(world, "rides", "Which countries have no roller coaster longer than 3000?")
    assert sorted(r["Name"] for r in rows) == ["Finland", "Norway"], prediction["pipeline"]


def test_the_denied_array_stays_whole_when_counting_documents(world):
    """'How many countries never have coasters faster than 50': a count of countries, each
    counted once, whatever the number of its coasters."""
    prediction, rows = answer(world, "rides", "How many countries have no roller coasters with speed above 50?")
    assert rows == [{"count": 2}], prediction["pipeline"]
    assert not any("$unwind" in stage for stage in prediction["pipeline"])


def test_a_literal_of_a_joined_collection_is_denied_on_the_joined_documents(world):
    """'dorms that do not have amenity TV Lounge': the amenity's name lives in another
    collection, joined through the dorm's array — the dorms none of whose joined amenities
    is the TV Lounge, not the dorms with no amenity at all."""
    prediction, rows = answer(world, "dorms", "Find the name of dorms that do not have amenity TV Lounge.")
    assert any("$lookup" in stage for stage in prediction["pipeline"]), prediction["pipeline"]
    assert sorted(r["dorm_name"] for r in rows) == ["Bud Jones Hall", "Smith Hall"], prediction["pipeline"]


@pytest.mark.parametrize("question", ["Find the titles of films with no critic named Chris Jackson.",
                                      "List the titles of films that no critic named Chris Jackson reviewed.",
                                      "Which films have no critic Chris Jackson? Give their titles."])
def test_a_denied_collection_the_reading_joins_is_denied_on_its_joined_documents(world, question):
    """'films not reviewed by critic Chris Jackson': the critics are joined for the name and
    denied on that one `$lookup` (no joined critic is Chris Jackson) — not also an anti-join
    (a second `$lookup` of the same alias demanding no critic at all)."""
    prediction, rows = answer(world, "films", question)
    lookups = [stage["$lookup"]["as"] for stage in prediction["pipeline"] if "$lookup" in stage]
    assert len(lookups) == 1, prediction["pipeline"]
    assert sorted(r["title"] for r in rows) == ["Alien", "Brazil", "Heat"], prediction["pipeline"]


@pytest.mark.parametrize("question", ["Find the first names of students who do not have a cat pet.",
                                      "Find the first names of students who do not own a cat as a pet.",
                                      "Find the first names of students without any cat pets."])
def test_a_negation_denies_the_literal_it_reaches_before_an_array(world, question):
    """'students who do not have a cat pet': no pet of theirs is a cat — the literal said
    first is denied, not the pets array emptied nor the pets collection anti-joined (students
    with no pet at all)."""
    prediction, rows = answer(world, "pets", question)
    assert sorted(r["Fname"] for r in rows) == ["Shiela", "Tracy"], prediction["pipeline"]


def test_a_negation_reaches_an_array_a_few_words_on(world):
    """'not listed as operators of any roller coasters': the negation empties the array
    named six words after it (no coaster at all)."""
    prediction, rows = answer(world, "rides", "Which countries are not listed as operators of any roller coasters?")
    assert [r["Name"] for r in rows] == ["Norway"], prediction["pipeline"]


def test_a_negation_reaches_a_literal_a_few_words_on(world):
    """'are not ones with headquarters placed in the USA': the literal seven words
    after the negation is denied."""
    prediction, rows = answer(world, "firms", "Which companies are not ones with headquarters placed in the USA?")
    assert sorted(r["Company"] for r in rows) == ["HSBC", "Shell"], prediction["pipeline"]


def test_a_negation_reaches_another_collection_a_few_words_on(world):
    """'films that have not been reviewed by any critic': no critic's rating refers to them."""
    prediction, rows = answer(world, "films", "Which films have not been reviewed by any critic? Give their titles.")
    assert [r["title"] for r in rows] == ["Brazil"], prediction["pipeline"]


def test_an_exclusion_reaches_a_literal_a_few_words_on(world):
    """'excluding the ones with their headquarters in the USA': the clause an exclusion
    opens is set aside, though the literal comes eight words on and after a 'with'."""
    prediction, rows = answer(world, "firms", "List the companies excluding the ones with their headquarters in the USA.")
    assert sorted(r["Company"] for r in rows) == ["HSBC", "Shell"], prediction["pipeline"]


@pytest.mark.parametrize("question", ["List the companies whose headquarters are different from USA.",
                                      "List the companies whose headquarters differs from USA.",
                                      "Which companies' headquarters isn't USA?",
                                      'Which companies have headquarters that differ from "USA"?'])
def test_a_contrast_or_a_copular_negation_denies_the_literal(world, question):
    """'different from USA', 'differs from USA', "isn't USA": the literal is set aside (`$ne`)."""
    prediction, rows = answer(world, "firms", question)
    assert sorted(r["Company"] for r in rows) == ["HSBC", "Shell"], prediction["pipeline"]


def test_a_negation_that_denies_a_literal_does_not_also_empty_an_array(world):
    """'students who do not live in HKG': the city is denied — the negation is read once,
    not also as the `Lives_in` array left empty."""
    prediction, rows = answer(world, "housing", "Which students do not live in HKG? Give their first names.")
    assert sorted(r["Fname"] for r in rows) == ["Bo", "Cy"], prediction["pipeline"]


def test_a_stored_value_that_is_a_word_of_the_arrays_name_does_not_stop_the_negation(world):
    """'weekends with no red flags': 'red' is a stored value too, but here a word of
    `red_flags`, the array the negation empties."""
    prediction, rows = answer(world, "racing", "How many weekends had no red flags?")
    assert rows == [{"count": 2}], prediction["pipeline"]


@pytest.mark.parametrize("question, titles", [("What are the titles of all shows that have not been rated?",
                                               ["Brazil", "Gone"]),
                                              ("List the titles of shows that lack coaching.", ["Alien", "Brazil"])])
def test_a_negation_denies_the_array_its_verb_or_activity_derives_from(world, question, titles):
    """'shows that have not been rated', an array `Rating`: no array is named, but 'rated' is
    the verb its name derives from (and 'coaching' the activity of `show_coach`)."""
    prediction, rows = answer(world, "shows", question)
    assert sorted(r["title"] for r in rows) == titles, prediction["pipeline"]


@pytest.mark.parametrize("question", ["How many apartments do not have any facility?",
                                      "What is the total number of apartments without any facilities?"])
def test_a_negation_after_its_subject_empties_the_subjects_own_array(world, question):
    """'apartments do not have any facility', apartments the elements of each building's
    `Apartments`: each apartment's own facilities are empty, said of the subject before the
    auxiliary (or before 'without'), as of a relative clause's."""
    prediction, rows = answer(world, "flats", question)
    assert rows == [{"count": 3}], prediction["pipeline"]


def test_a_negation_after_an_auxiliary_denies_the_array_of_its_subject(world):
    """'how many apartments do not have any facility', apartments the elements of `Apartments`:
    each apartment's own `Apartments.Facilities` is empty, not the building's apartments; a
    first 'which' asks, it starts no relative clause."""
    prediction, rows = answer(world, "blocks", "How many apartments do not have any facility?")
    assert rows == [{"count": 2}], prediction["pipeline"]
    prediction, rows = answer(world, "blocks", "Which apartments did not have any facilities? List the numbers.")
    assert sorted(r["apt_number"] for r in rows) == ["A2", "B1"], prediction["pipeline"]


@pytest.mark.parametrize("question", ["Which assets did not incur any fault log? List the asset model.",
                                      "Can you list the asset models that have not recorded any fault log?"])
def test_a_negation_is_said_of_the_asked_entity_or_a_compound_naming_it(world, question):
    """'which assets did not incur any fault log', 'the asset models that have not recorded
    any fault log': each asset's own fault log is empty — the question's 'which' is no
    relative pronoun, 'asset' in 'asset models' names the elements, and the negation reaches
    no word of the next sentence ('List the asset model')."""
    prediction, rows = answer(world, "upkeep", question)
    assert sorted(r["asset_model"] for r in rows) == ["X2", "Y1"], prediction["pipeline"]


def test_a_negation_empties_a_nested_array_whose_enclosing_arrays_were_named(world):
    """'how many apartments are there that lack facilities': the relative clause is said of
    'there', but the apartments, named before it, hold the facilities: each one's own are empty."""
    prediction, rows = answer(world, "flats", "How many apartments are there that lack facilities?")
    assert rows == [{"count": 3}], prediction["pipeline"]
