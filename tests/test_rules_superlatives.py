"""`rules` grounds a superlative's measure: numbers stored as text, arrays named in several words
or by the noun their name ends on; a superlative it cannot ground is said, never dropped."""

from __future__ import annotations

import pytest

from nlq.methods import rules
from nlq.methods.rules.accounting import constraints
from nlq.methods.rules.ir import IR
from nlq.methods.rules.question import Question
from nlq.methods.rules.schema import prepare


def entry(collection, path, kind="scalar", types=None, present=4):
    return {"collection": collection, "path": path, "kind": kind, "types": types or {"string": present},
            "present": present, "null": 0, "missing": 0, "empty": 0, "array_len": None}


def value(stored, path, collection="wrestler", frequency=1):
    return {"stored": stored, "kind": "value", "collection": collection, "path": path, "frequency": frequency}


INDEX = {
    "db": "ring",
    "collections": {"wrestler": {"count": 4, "sampled": 4}, "region": {"count": 3, "sampled": 3},
                    "department": {"count": 3, "sampled": 3}, "Addresses": {"count": 9, "sampled": 9}},
    "lattice": [
        entry("wrestler", "Wrestler_ID", types={"int": 4}), entry("wrestler", "Name"),
        entry("wrestler", "Days_held"), entry("wrestler", "Location"),
        entry("region", "Region_Name", present=3),
        entry("region", "Chess_Study_Groups", kind="array", types={"array": 3}, present=3),
        entry("region", "Chess_Study_Groups[]", kind="object", types={"object": 5}, present=5),
        entry("region", "Chess_Study_Groups[].Leader_Code", present=5),
        entry("department", "Dept_Name", present=3),
        entry("department", "Member_of", kind="array", types={"array": 3}, present=3),
        entry("department", "Member_of[]", kind="object", types={"object": 6}, present=6),
        entry("department", "Member_of[].Student_Ref", types={"int": 6}, present=6),
        entry("wrestler", "Champion", present=4),
        entry("department", "Head_Name", present=3), entry("department", "Head_DOB", present=3),
        entry("Addresses", "address_id", types={"int": 9}, present=9), entry("Addresses", "country", present=9),
        entry("Addresses", "Client_Addresses", kind="array", types={"array": 9}, present=9),
        entry("Addresses", "Client_Addresses[]", kind="object", types={"object": 9}, present=9),
        entry("Addresses", "Client_Addresses[].client_id", types={"int": 9}, present=9),
    ],
    # Days_held holds numbers written as text ('344'); Location holds text that spells none
    "values": {"344": [value("344", "Days_held")], "1285": [value("1285", "Days_held")],
               "9": [value("9", "Days_held")], "10": [value("10", "Days_held")],
               "tokyo": [value("Tokyo", "Location", frequency=2)], "osaka": [value("Osaka", "Location", frequency=2)]},
}


def pipeline_of(question):
    return rules.render(rules.build_ir(question, [], INDEX))


def test_a_field_of_numbers_written_as_text_is_a_measure():
    fields = {f.mql: f for f in prepare(INDEX).schema["wrestler"]}
    assert fields["Days_held"].numeric_text and fields["Days_held"].measurable
    assert not fields["Location"].numeric_text and not fields["Name"].numeric_text


@pytest.mark.parametrize("question", ["What is the name of the wrestler with the fewest days held?",
                                      "Return the name of the wrestler who had the lowest number of days held."])
def test_a_superlative_of_numbers_written_as_text_sorts_by_the_numbers(question):
    converted = {"$convert": {"input": "$Days_held", "to": "double", "onError": None, "onNull": None}}
    assert pipeline_of(question) == [
        {"$addFields": {"_number_Days_held": converted}}, {"$sort": {"_number_Days_held": 1}}, {"$limit": 1},
        {"$project": {"_id": 0, "Name": "$Name"}}]


def test_the_most_elements_of_an_array_named_in_several_words_count_per_value():
    assert pipeline_of("What is the leader code that has the most chess study groups?")[-4:] == [
        {"$group": {"_id": "$Chess_Study_Groups.Leader_Code", "count": {"$sum": 1}}},
        {"$sort": {"count": -1, "_id": 1}}, {"$limit": 1}, {"$project": {"_id": 0, "Leader_Code": "$_id"}}]


def test_the_fewest_of_an_array_named_by_its_head_noun_ranks_documents_that_have_some():
    size = {"$size": {"$ifNull": ["$Member_of", []]}}
    assert pipeline_of("Find the name of the department that has the fewest members.") == [
        {"$match": {"$expr": {"$gt": [size, 0]}}}, {"$addFields": {"_size": size}}, {"$sort": {"_size": 1}},
        {"$limit": 1}, {"$project": {"_id": 0, "Dept_Name": "$Dept_Name"}}]


def test_a_superlative_nothing_ranks_by_is_an_unresolved_operation():
    q = Question.of("Which wrestler has the fewest titles?")
    unranked = IR(collection="wrestler")
    assert [(c["word"], c["kind"]) for c in constraints(q, set(), set(), unranked)] == [("fewest", "operation")]
    ranked = IR(collection="wrestler", limit=1, sort=[("count", 1)])
    assert constraints(q, set(), set(), ranked) == []
    # a limit over rows no key orders ranks nothing, even where a pass read the superlative
    unordered = IR(collection="wrestler", limit=1)
    assert [(c["word"], c["kind"]) for c in constraints(q, set(), set(), unordered)] == [("fewest", "operation")]
    assert [c["word"] for c in constraints(q, {4}, set(), unordered)] == ["fewest"]
    default = IR(collection="wrestler", sort=[("Wrestler_ID", 1)], default_sort=True)
    assert [c["word"] for c in constraints(q, set(), set(), default)] == ["fewest"]


def test_at_least_one_unread_says_only_that_some_exists():
    q = Question.of("List the wrestlers with at least one title.")
    assert constraints(q, set(), set(), IR(collection="wrestler")) == []
    q = Question.of("List the wrestlers with at least three titles.")
    assert [(c["word"], c["kind"]) for c in constraints(q, set(), set(), IR(collection="wrestler"))][:1] == [
        ("least", "comparison")]


@pytest.mark.parametrize("question", ["Show the champion that has won the most times.",
                                      "Which champion won the most number of times?"])
def test_the_most_times_is_the_most_common_value(question):
    assert pipeline_of(question) == [
        {"$group": {"_id": "$Champion", "count": {"$sum": 1}}}, {"$sort": {"count": -1, "_id": 1}}, {"$limit": 1},
        {"$project": {"_id": 0, "Champion": "$_id"}}]


def test_more_than_n_of_the_collections_own_documents_counts_them_per_value():
    # 'addresses' names the collection itself, and `Client_Addresses` only in part
    assert pipeline_of("List the countries having more than 4 addresses listed.") == [
        {"$group": {"_id": "$country", "count": {"$sum": 1}}}, {"$match": {"count": {"$gt": 4}}},
        {"$sort": {"_id": 1}}, {"$project": {"_id": 0, "country": "$_id"}}]


@pytest.mark.parametrize("question, direction", [("Who is the head name of the oldest department head?", 1),
                                                 ("Show the head name of the youngest head.", -1)])
def test_with_no_age_stored_the_oldest_was_born_first(question, direction):
    assert pipeline_of(question)[:2] == [{"$sort": {"Head_DOB": direction}}, {"$limit": 1}]
