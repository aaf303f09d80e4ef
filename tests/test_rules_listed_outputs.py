"""`rules` shows every noun phrase a question lists as an output, or says which it left out:
a listed phrase no field is named by ('the names and outcomes of battles' with no field for
'outcomes') is an unresolved `output`, never silently dropped."""

from __future__ import annotations

from nlq.methods import rules
from nlq.methods.rules.confidence import UNRESOLVED_CAP, confidence


def entry(collection, path, types=None):
    return {"collection": collection, "path": path, "kind": "scalar", "types": types or {"string": 4},
            "present": 4, "null": 0, "missing": 0, "empty": 0, "array_len": None}


INDEX = {
    "db": "wars",
    "collections": {"battle": {"count": 4, "sampled": 4}},
    "lattice": [entry("battle", "id", {"int": 4}), entry("battle", "name"), entry("battle", "casualties", {"int": 4}),
                entry("battle", "date")],
    "values": {},
}


def left_out(question):
    ir = rules.build_ir(question, [], INDEX)
    return ir, [c["word"] for c in ir.constraints if c["kind"] == "output"]


def test_a_listed_phrase_naming_no_field_is_an_unresolved_output():
    ir, words = left_out("List the names and outcomes of battles.")
    assert [f.mql for f in ir.outputs] == ["name"] and words == ["outcomes"]
    assert confidence(ir) <= UNRESOLVED_CAP


def test_a_phrase_listed_after_a_comma_before_the_last_item_is_an_output():
    assert left_out("Show the names, outcomes and dates of battles.")[1] == ["outcomes"]


def test_listed_fields_that_are_found_leave_nothing_out():
    ir, words = left_out("List the names and dates of battles.")
    assert [f.mql for f in ir.outputs] == ["name", "date"] and words == []


def test_a_clause_after_a_comma_or_a_possessive_is_no_listed_output():
    # 'organized by', 'their career': no second item of a list
    assert left_out("Show the names of battles, organized by date.")[1] == []
    assert left_out("What date did the battle named Boril begin their campaign?")[1] == []


# -- an entity with no name field ---------------------------------------------------------------------------------

CLIENTS = {
    "db": "shop",
    "collections": {"Clients": {"count": 4, "sampled": 4}},
    "lattice": [entry("Clients", "Client_ID", {"int": 4}), entry("Clients", "Client_Details"),
                entry("Clients", "Address_Details")],
    "values": {},
}


def test_an_entity_with_no_name_is_shown_by_its_own_details():
    # no name, title or field named like the entity: its own free-text details stand for it
    for question in ("What are the names of clients?", "List all clients."):
        assert [f.mql for f in rules.build_ir(question, [], CLIENTS).outputs] == ["Client_Details"]


# -- 'what <entities> ...' asks for the entities ------------------------------------------------------------------

SITES = {
    "db": "schools",
    "collections": {"Campuses": {"count": 4, "sampled": 4}},
    "lattice": [entry("Campuses", "Id", {"int": 4}), entry("Campuses", "Campus"), entry("Campuses", "Location"),
                entry("Campuses", "County"), entry("Campuses", "Campus_Type")],
    "values": {},
}


def test_what_and_the_entity_word_asks_for_the_entities():
    ir = rules.build_ir("What campuses are located in the county of Orange?", [], SITES)
    assert [f.mql for f in ir.outputs][:1] == ["Campus"]


def test_what_and_an_entity_word_modifying_a_field_asks_for_the_field():
    ir = rules.build_ir("What campus types are there?", [], SITES)
    assert "Campus" not in [f.mql for f in ir.outputs]


# -- the field a question opens with, narrowed by a condition on it -----------------------------------------------

NATIONS = {
    "db": "nations",
    "collections": {"country": {"count": 4, "sampled": 4}},
    "lattice": [entry("country", "Country_id", {"int": 4}), entry("country", "Country_name"),
                entry("country", "Official_native_language")],
    "values": {},
}


def test_the_field_asked_for_is_shown_when_its_own_condition_narrows_it():
    ir = rules.build_ir('Show all official native languages that contain the word "Irish".', [], NATIONS)
    assert [f.mql for f in ir.outputs] == ["Official_native_language"]
    assert [f.field.mql for f in ir.filters] == ["Official_native_language"]


def test_a_condition_on_the_entity_still_shows_the_entity():
    ir = rules.build_ir('Show the countries whose official native language contains "Irish".', [], NATIONS)
    assert [f.mql for f in ir.outputs] == ["Country_name"]


def test_an_entity_word_qualifying_a_listed_phrase_leaves_its_noun_out():
    world = {"db": "bank", "collections": {"accounts": {"count": 4, "sampled": 4}},
             "lattice": [entry("accounts", "custid", {"int": 4}), entry("accounts", "name"),
                         {**entry("accounts", "savings", {"array": 4}), "kind": "array"},
                         entry("accounts", "savings[].balance", {"double": 4})],
             "values": {}}
    ir = rules.build_ir("Show the names and savings amounts of accounts.", [], world)
    assert [c["word"] for c in ir.constraints if c["kind"] == "output"] == ["amounts"]


# -- 'for each <the collection's own name>' groups its documents by their label -----------------------------------

MAKERS = {
    "db": "factory",
    "collections": {"Makers": {"count": 4, "sampled": 4}},
    "lattice": [entry("Makers", "Code", {"int": 4}), entry("Makers", "Name"), entry("Makers", "Revenue", {"double": 4}),
                {**entry("Makers", "Products", {"array": 4}), "kind": "array"},
                entry("Makers", "Products[].Price", {"double": 4}), entry("Makers", "Products[].Maker", {"int": 4})],
    "values": {},
}


def test_each_document_is_grouped_by_its_label_not_its_elements_coded_reference():
    for question in ("How many products are there for each maker?", "Find the total revenue for each maker."):
        assert [f.mql for f in rules.build_ir(question, [], MAKERS).group_by] == ["Name"]


# -- an entity listed before 'and the', 'along with the' is shown by its name ----------------------------------------

DELEGATES = {
    "db": "votes",
    "collections": {"delegate": {"count": 4, "sampled": 4}},
    "lattice": [entry("delegate", "Delegate_ID", {"int": 4}), entry("delegate", "Name"),
                {**entry("delegate", "ballot", {"array": 4}), "kind": "array"},
                entry("delegate", "ballot[].Date"), entry("delegate", "ballot[].Votes", {"int": 4})],
    "values": {},
}


def test_an_entity_listed_before_and_the_is_shown_by_its_name():
    for question in ("List the delegates and the dates of their ballots.",
                     "Show the delegates along with the dates of their ballots."):
        shown = [f.mql for f in rules.build_ir(question, [], DELEGATES).outputs]
        assert shown == ["Name", "ballot.Date"], question


# -- 'who are the <field>' asks for the field's values -------------------------------------------------------------

FILMS = {
    "db": "films",
    "collections": {"film": {"count": 4, "sampled": 4}},
    "lattice": [entry("film", "Film_ID", {"int": 4}), entry("film", "Title"), entry("film", "Directed_by")],
    "values": {},
}


def test_who_are_the_field_shows_the_field_alone():
    assert [f.mql for f in rules.build_ir("Who are all the directors?", [], FILMS).outputs] == ["Directed_by"]


def test_who_and_a_condition_still_asks_for_the_documents():
    people = {"db": "people", "collections": {"people": {"count": 4, "sampled": 4}},
              "lattice": [entry("people", "People_ID", {"int": 4}), entry("people", "Name"),
                          entry("people", "Age", {"int": 4})], "values": {}}
    assert [f.mql for f in rules.build_ir("Who is older than 30?", [], people).outputs] == ["Name"]


def test_name_opening_a_question_is_a_verb_not_the_name_field():
    shows = {"db": "shows", "collections": {"musical": {"count": 4, "sampled": 4}},
             "lattice": [entry("musical", "Musical_ID", {"int": 4}), entry("musical", "Name"),
                         entry("musical", "Nominee")], "values": {}}
    assert [f.mql for f in rules.build_ir("Name the nominees of all musicals.", [], shows).outputs] == ["Nominee"]
    assert "Name" in [f.mql for f in rules.build_ir("What is the name of each musical?", [], shows).outputs]
