"""`rules` reads general English rephrasings as the phrasing its passes know (paraphrase.canonical)."""

from __future__ import annotations

import pytest

from nlq.methods import rules
from nlq.methods.rules.paraphrase import canonical
from tests.helpers import rules_answer, rules_world


def entry(collection, path, kind="scalar", types=None, present=4):
    return {"collection": collection, "path": path, "kind": kind, "types": types or {"string": present},
            "present": present, "null": 0, "missing": 0, "empty": 0, "array_len": None}


INDEX = {
    "db": "school",
    "collections": {"student": {"count": 4, "sampled": 4}},
    "lattice": [
        entry("student", "StuID", types={"int": 4}), entry("student", "Name"), entry("student", "Major"),
        entry("student", "Advisor"),
        entry("student", "Age", types={"int": 4}), entry("student", "Salary", types={"int": 4}),
        entry("student", "allergies", kind="array", types={"array": 4}),
        entry("student", "allergies[].Allergy"),
    ],
    "values": {},
}


def pipeline_of(question):
    return rules.render(rules.build_ir(question, [], INDEX))


@pytest.mark.parametrize("said, canonical_form", [
    ("students who are 21 years old and above", "students who are age 21 or more"),
    ("How many students are 18 years old?", "How many students are age 18?"),
    ("students who are either 24 or 25 years old", "students who are age either 24 or 25"),
    ("pilots over the age of thirty", "pilots older than thirty"),
    ("salaries equal to or exceed 100,000", "salaries at least 100,000"),
    ("mountains that exceed a height of 5000 meters", "mountains that height more than 5000 meters"),
    ("ships with multiple captains", "ships with more than one captains"),
    ("pilots who lack any records", "pilots who without any records"),
    ("the most prevalent allergy", "the most common allergy"),
    ("the most widely used flag", "the most common flag"),
    ("the least commonly reported allergy", "the least common allergy"),
    ("the nationality most represented among journalists", "the nationality most common among journalists"),
    ("the type that appears most commonly", "the type that appears most commonly"),  # (a trailing 'most commonly')
    ("the advisor with the highest student count", "the advisor with the most number of student"),
    ("names that exclude the letter M", "names that not containing the letter M"),
    ("names ordered by age from highest to lowest", "names ordered by age in descending order"),
    ("drivers with the oldest listed first", "drivers oldest first"),
    ("schools whose denomination isn't Catholic", "schools whose denomination is not Catholic"),
    ("cinemas opened in the year 2011 and later", "cinemas opened since the year 2011"),
    ("wines made before 2000 or after 2010", "wines made before 2000 or after 2010"),
    ("the ages of the youngest and oldest students", "the minimum and maximum age of the students"),
    # a second bound ('and lower than'), not 'N and lower'
    ("mountains higher than 5600 and lower than 5200", "mountains higher than 5600 and lower than 5200"),
    ("prices of 100 and less", "prices of 100 or less"),
    ("the first, middle, and last names", "the first names, middle names and last names"),
    ("comprehensive details for all people", "all the details for all people"),
    ("all relevant data for each body builder", "all the data for each body builder"),
    ("every detail concerning the matches", "all the details concerning the matches"),
    ("visitors below age 30", "visitors age below 30"),
    ("pets with a greater weight than 10", "pets with weight greater than 10"),
    ("students between the ages of 20 and 25", "students age between 20 and 25"),
    ("hotels with more than one 3 star rating", "hotels with more than one 3 star rating"),  # a count, no measure
    ("the names of every county sorted from Z to A", "the names of every county sorted in reverse alphabetical order"),
    ("cities sorted in alphabetical order from A to Z", "cities sorted in alphabetical order"),
    # a plural noun right after 'the most' is counted; an adjective, a duration or an order's end is not
    ("the city that hosted the most events", "the city that hosted the most number of events"),
    ("the party with the most people", "the party with the most number of people"),
    ("the most famous actors", "the most famous actors"),
    ("the driver with the most years of experience", "the driver with the most years of experience"),
    ("names ordered by age in a descending manner", "names ordered by age in descending order"),
])
def test_rephrasings_are_rewritten_to_the_canonical_phrasing(said, canonical_form):
    assert canonical(said) == canonical_form


def test_quoted_literals_are_never_rewritten():
    assert canonical("films titled 'lacking any multiple' older than 3") == "films titled 'lacking any multiple' older than 3"


@pytest.mark.parametrize("first, other", [
    ("Show the ids of students with age 21 or more.", "Retrieve the IDs of students who are 21 years old and above."),
    ("How many students are age 18?", "How many students are 18 years old?"),
    ("Show the names of students with salary more than 999.", "List the names of students whose salaries exceed 999."),
    ("Find the names of students without any allergies.", "Find the names of students who lack any allergies."),
    ("What is the most common major?", "What is the most prevalent major?"),
    ("What is the most common major?", "Which major is the most widely represented?"),
    ("How many students are there for each advisor?", "How many students does each advisor have?"),
    ("Show the names of students in alphabetical order.", "Show the names of students, organized alphabetically."),
    ("Show the names of students with age between 20 and 30.",
     "Show the names of students in the age range of twenty to thirty."),
    # the measure said between the comparator and its number
    ("Show the names of students with age less than 30.", "Show the names of students below age 30."),
    ("Show the names of students with salary more than 999.", "Which students have a greater salary than 999?"),
    ("Show the names of students with age between 20 and 25.",
     "Show the names of students between the ages of 20 and 25."),
    ("Show the names of students in reverse alphabetical order.", "Show the names of students sorted from Z to A."),
    ("Which major has the largest number of members?", "Which major has the most members?"),
    ("Which advisor has the greatest number of people?", "Which advisor has the most people?"),
])
def test_a_rephrasing_reads_like_the_first_phrasing(first, other):
    assert [s for s in pipeline_of(other) if {"$match", "$group", "$sort", "$limit"} & set(s)] == \
        [s for s in pipeline_of(first) if {"$match", "$group", "$sort", "$limit"} & set(s)]


def test_a_gender_word_binds_the_one_letter_code_the_collection_stores():
    index = {**INDEX, "lattice": INDEX["lattice"] + [entry("student", "Sex")],
             "values": {"f": [{"stored": "F", "kind": "value", "collection": "student", "path": "Sex", "frequency": 2}]}}
    ir = rules.build_ir("List the names of all female students.", [], index)
    assert [(f.field.mql, f.op, f.value) for f in ir.filters] == [("Sex", "$eq", "F")]
    assert not rules.build_ir("List the names of all male students.", [], index).filters  # no "M" stored


def test_the_entity_named_before_a_count_of_its_array_is_shown_with_the_size():
    said = pipeline_of("Provide a list of all students and the total number of allergies each has.")
    assert said == pipeline_of("List the names of all students along with the number of allergies.")
    assert said[-1]["$project"]["count"] == {"$size": {"$ifNull": ["$allergies", []]}}


CLIENTS = [{"client_id": 1, "client_name": "Ada", "visits": [{"visit_id": 1}, {"visit_id": 2}, {"visit_id": 3}]},
           {"client_id": 2, "client_name": "Bo", "visits": [{"visit_id": 4}]},
           {"client_id": 3, "client_name": "Cy", "visits": [{"visit_id": 5}, {"visit_id": 6}, {"visit_id": 7},
                                                             {"visit_id": 8}]}]


def test_a_participle_between_a_count_and_its_array_is_a_filler(tmp_path):
    world = rules_world(tmp_path, {"crm": {"client": CLIENTS}})
    prediction, rows = rules_answer(world, "crm", "What are the names of clients who have three or more recorded visits?")
    assert sorted(r["client_name"] for r in rows) == ["Ada", "Cy"], prediction["pipeline"]
