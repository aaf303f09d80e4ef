"""`rules` grounding: the question's words bound to the fields they name, however a question is phrased."""

from __future__ import annotations

from nlq.methods import rules
from nlq.methods.rules.question import Question, mention_fields
from nlq.methods.rules.schema import prepare


def entry(collection, path, kind="scalar", types=None, present=4):
    return {"collection": collection, "path": path, "kind": kind, "types": types or {"string": present},
            "present": present, "null": 0, "missing": 0, "empty": 0, "array_len": None}


def value(collection, path, stored):
    return {"stored": stored, "kind": "value", "collection": collection, "path": path, "frequency": 1}


INDEX = {
    "db": "town",
    "collections": {"venue": {"count": 4, "sampled": 4}, "member": {"count": 4, "sampled": 4}},
    "lattice": [
        entry("venue", "Venue_ID", types={"int": 4}), entry("venue", "Name"),
        entry("venue", "Seats", types={"int": 4}), entry("venue", "Opening_Year", types={"int": 4}),
        entry("venue", "ticket_price", types={"double": 4}),
        entry("member", "Member_ID", types={"int": 4}), entry("member", "FName"), entry("member", "LName"),
        entry("member", "Hire_Date", types={"date": 4}),
    ],
    "values": {"1999": [value("venue", "Opening_Year", 1999)], "2012": [value("venue", "Opening_Year", 2012)],
               "300": [value("venue", "Seats", 300)]},
}


def mentioned(question, collection, index=INDEX):
    """The fields named in the question, with the words naming them."""
    q = Question.of(question)
    return {(m.field.mql, " ".join(q.raw[m.start:m.end]))
            for m in mention_fields(q.stems, prepare(index).schema) if m.field.collection == collection}


def shown(question):
    ir = rules.build_ir(question, [], INDEX)
    return ir.collection, [f.mql for f in ir.outputs]


def test_a_field_of_years_is_named_by_its_event_alone():
    # 'opened' names Opening_Year: the field's stored values are the years, 'year' goes without saying
    assert ("Opening_Year", "opened") in mentioned("venues that opened after 2000", "venue")
    ir = rules.build_ir("Show the average seats of venues opened in 2005 or afterward.", [], INDEX)
    assert [(f.field.mql, f.op, f.value) for f in ir.filters] == [("Opening_Year", "$gte", 2005)]


def test_a_date_field_is_named_by_its_event_alone():
    assert ("Hire_Date", "hired") in mentioned("members hired last", "member")


def test_a_synonym_names_a_field_whose_other_words_are_its_collections():
    # 'cost' names venue_price in venues ('venue' goes without saying), not ticket_price ('ticket' is unsaid)
    index = {**INDEX, "lattice": INDEX["lattice"] + [entry("venue", "venue_price", types={"double": 4})]}
    found = mentioned("the average cost of each venue", "venue", index)
    assert ("venue_price", "cost") in found and ("ticket_price", "cost") not in found


def test_a_naming_verb_or_a_number_word_alone_names_no_field():
    # 'named' introduces a value and 'number' is no identifier by itself
    assert not {m for m, w in mentioned("members not named 'Jo'", "member") if w == "named"}
    assert not {m for m, w in mentioned("the number of members", "member") if w == "number"}


def test_a_one_letter_field_word_is_the_initial_of_the_question_word():
    assert ("LName", "last name") in mentioned("the last name of members", "member")
    assert ("FName", "first name") in mentioned("the first name of members", "member")


def test_two_modifiers_share_one_head_noun():
    assert shown("Provide the first and last names of every member.") == ("member", ["FName", "LName"])
    assert shown("List the first name and last name of every member.") == ("member", ["FName", "LName"])
    # the head said first: each modifier is read with it
    assert shown("What are the names (both first and last) of all members?") == ("member", ["FName", "LName"])
    assert shown("List the names, first and last, of all members.") == ("member", ["FName", "LName"])
    # a conjunct that names no field with the head does not lend it
    assert not {m for m, w in mentioned("the first and only venue", "venue") if w == "first"}


SYNONYM_INDEX = {
    "db": "travel",
    "collections": {"trip": {"count": 4, "sampled": 4}, "shop": {"count": 4, "sampled": 4}},
    "lattice": [
        entry("trip", "trip_id", types={"int": 4}), entry("trip", "origin"), entry("trip", "destination"),
        entry("trip", "departure_date", types={"date": 4}), entry("trip", "Duration", types={"int": 4}),
        entry("trip", "Home_city"), entry("trip", "first_name"), entry("trip", "login_name"),
        entry("trip", "Position"), entry("trip", "Score", types={"int": 4}),
        entry("trip", "Birth_Place"), entry("trip", "job"), entry("trip", "Result"),
        entry("shop", "Shop_ID", types={"int": 4}), entry("shop", "Shop_Type"),
    ],
    "values": {},
}


def test_a_general_synonym_names_a_field():
    said = mentioned("the departure location, arrival point, length, role and rating of each trip", "trip",
                     SYNONYM_INDEX)
    assert {("origin", "departure"), ("destination", "arrival"), ("Duration", "length"), ("Position", "role"),
            ("Score", "rating")} <= said
    said = mentioned("the birth location, occupation and outcome of each trip", "trip", SYNONYM_INDEX)
    assert {("Birth_Place", "birth location"), ("job", "occupation"), ("Result", "outcome")} <= said
    # the field's own two words still name it in full
    assert ("departure_date", "departure date") in mentioned("the departure date of each trip", "trip", SYNONYM_INDEX)
    assert ("Shop_Type", "category") in mentioned("the category of each store", "shop", SYNONYM_INDEX)


def test_one_word_names_two_field_words():
    said = mentioned("the hometown, forename and username of each trip", "trip", SYNONYM_INDEX)
    assert {("Home_city", "hometown"), ("first_name", "forename"), ("login_name", "username")} <= said
    assert not {m for m, w in mentioned("the homeland of each trip", "trip", SYNONYM_INDEX) if m == "Home_city"}


EPONYM_INDEX = {
    "db": "business",
    "collections": {"company": {"count": 4, "sampled": 4}, "product": {"count": 4, "sampled": 4}},
    "lattice": [
        entry("company", "Company_ID", types={"int": 4}), entry("company", "Company"),
        entry("company", "Headquarters"), entry("company", "Rank", types={"int": 4}),
        entry("product", "Product_ID", types={"int": 4}), entry("product", "Product"),
        entry("product", "product_name"),
    ],
    "values": {},
}


def test_a_field_named_like_its_entity_holds_the_entitys_name():
    ir = rules.build_ir("What are the names and headquarters of all companies?", [], EPONYM_INDEX)
    assert (ir.collection, [f.mql for f in ir.outputs]) == ("company", ["Company", "Headquarters"])
    ir = rules.build_ir("Which companies have a rank above 3?", [], EPONYM_INDEX)
    assert [f.mql for f in ir.outputs] == ["Company"]
    # a collection with a name field keeps it; a 'name' of another entity is not the eponym
    assert ("Product", "names") not in mentioned("the names of all products", "product", EPONYM_INDEX)
    assert ("Company", "name") not in mentioned("the name of the product", "company", EPONYM_INDEX)


RANGE_INDEX = {
    "db": "census",
    "collections": {"city": {"count": 4, "sampled": 4}},
    "lattice": [
        entry("city", "City_ID", types={"int": 4}), entry("city", "Name"),
        entry("city", "Population", types={"int": 4}), entry("city", "White", types={"double": 4}),
        entry("city", "Price", types={"int": 4}), entry("city", "Year", types={"int": 4}),
    ],
    "values": {"5000": [value("city", "Population", 5000)], "90000": [value("city", "Population", 90000)],
               "12.5": [value("city", "White", 12.5)], "95.0": [value("city", "White", 95.0)],
               "20": [value("city", "Price", 20)], "3000": [value("city", "Price", 3000)],
               "1998": [value("city", "Year", 1998)], "2012": [value("city", "Year", 2012)]},
}


def compared(question):
    return [(f.field.mql, f.op, f.value) for f in rules.build_ir(question, [], RANGE_INDEX).filters]


def test_a_compared_number_binds_a_field_it_can_be_a_value_of():
    # a percentage is a value of the field whose numbers lie within 0..100, not of the nearer Population
    assert compared("Which cities have a White population exceeding 90%?") == [("White", "$gt", 90)]
    assert compared("Which cities have a population exceeding 90?") == [("Population", "$gt", 90)]
    # ... or said before the comparator, and the field qualifying the chosen one is not shown
    said = "Show the names of cities whose White population percentage exceeds 90."
    assert compared(said) == [("White", "$gt", 90)]
    assert [f.mql for f in rules.build_ir(said, [], RANGE_INDEX).outputs] == ["Name"]
    # a year placed in time is one of the field of years; a quantity keeps the field it follows
    assert compared("Show the prices of cities built before 2010.") == [("Year", "$lt", 2010)]
    assert compared("Show the cities with a price of more than 2010.") == [("Price", "$gt", 2010)]


def test_a_field_words_left_out_are_read_from_the_words_close_by():
    index = {"db": "ledger", "collections": {"ledger": {"count": 4, "sampled": 4}},
             "lattice": [entry("ledger", "Statement_ID", types={"int": 4}), entry("ledger", "Statement_Details"),
                         entry("ledger", "Document_Details"), entry("ledger", "login_name"),
                         entry("ledger", "family_name")],
             "values": {}}
    for question in ("List all statement IDs along with their details.",
                     "Show the IDs and details of every statement."):
        assert [f.mql for f in rules.build_ir(question, [], index).outputs] == ["Statement_ID", "Statement_Details"]
    # the first of two coordinated modifiers lends nothing to the second's head
    q = Question.of("the login and last names")
    echoed = {m.field.mql for m in mention_fields(q.stems, prepare(index).schema) if m.start == 4 and m.echo}
    assert "login_name" not in echoed


def test_an_entity_listed_with_its_attributes_is_shown_by_its_name():
    for question in ("Identify the companies and their headquarters.",
                     "Provide a list of companies along with their headquarters."):
        assert [f.mql for f in rules.build_ir(question, [], EPONYM_INDEX).outputs] == ["Company", "Headquarters"]
    # an entity owning another attribute, or counted, is not listed
    ir = rules.build_ir("What are the ranks of companies and their headquarters?", [], EPONYM_INDEX)
    assert "Company" not in [f.mql for f in ir.outputs]


def test_the_possessor_of_a_list_must_be_covered_by_the_field_it_lends_words_to():
    index = {"db": "papers", "collections": {"Ref_Document_Types": {"count": 4, "sampled": 4}},
             "lattice": [entry("Ref_Document_Types", "Document_Type_Code"),
                         entry("Ref_Document_Types", "Document_Type_Name"),
                         entry("Ref_Document_Types", "Document_Type_Description"),
                         entry("Ref_Document_Types", "Documents", kind="array", types={"array": 4}),
                         entry("Ref_Document_Types", "Documents[].Document_Name"),
                         entry("Ref_Document_Types", "Documents[].Document_Description")],
             "values": {}}
    ir = rules.build_ir("What are the names and descriptions of the different document types?", [], index)
    assert [f.mql for f in ir.outputs] == ["Document_Type_Name", "Document_Type_Description"]
    # modifiers before a list lend themselves only to a field covering them all
    ir = rules.build_ir("Provide the document type codes, names, and their corresponding descriptions.", [], index)
    assert [f.mql for f in ir.outputs] == ["Document_Type_Code", "Document_Type_Name", "Document_Type_Description"]


def test_derivations_and_a_collections_initial_name_a_field():
    index = {"db": "campus", "collections": {"Department": {"count": 4, "sampled": 4}},
             "lattice": [entry("Department", "DNO", types={"int": 4}), entry("Department", "DName"),
                         entry("Department", "DPhone"), entry("Department", "Population", types={"int": 4})],
             "values": {}}
    # 'phone' names DPhone in departments (D is the department's initial); 'populous' is of population
    assert ("DPhone", "telephone") in mentioned("the telephone numbers of departments", "Department", index)
    assert ("Population", "populous") in mentioned("the most populous department", "Department", index)


def test_a_field_named_x_of_y_is_named_by_y_x():
    index = {"db": "school", "collections": {"enrolment": {"count": 4, "sampled": 4}},
             "lattice": [entry("enrolment", "date_of_completion"), entry("enrolment", "date_of_enrolment"),
                         entry("enrolment", "course_name")],
             "values": {}}
    assert ("date_of_completion", "completion dates") in mentioned("the completion dates of each course", "enrolment",
                                                                   index)
    assert ("course_name", "name of the course") in mentioned("the name of the course", "enrolment", index)


def test_a_comparator_naming_its_measure_reads_a_unit_after_the_number_as_a_unit():
    index = {"db": "fleet", "collections": {"driver": {"count": 4, "sampled": 4}},
             "lattice": [entry("driver", "Name"), entry("driver", "Age", types={"int": 4}),
                         entry("driver", "Years_Working", types={"int": 4})],
             "values": {}}
    ir = rules.build_ir("List the names of drivers older than 40 years.", [], index)
    assert [(f.field.mql, f.op, f.value) for f in ir.filters] == [("Age", "$gt", 40)]
    assert [f.mql for f in ir.outputs] == ["Name"]
    ir = rules.build_ir("List the names of drivers with more than 4 working years.", [], index)
    assert [(f.field.mql, f.op, f.value) for f in ir.filters] == [("Years_Working", "$gt", 4)]


def test_a_field_named_like_its_collection_is_named_in_the_singular():
    index = {"db": "hotel", "collections": {"Room_Type": {"count": 4, "sampled": 4}},
             "lattice": [entry("Room_Type", "Room"), entry("Room_Type", "RoomType")], "values": {}}
    ir = rules.build_ir("Which room type is the most common?", [], index)
    assert [f.mql for f in ir.group_by] == ["RoomType"]
    # in the plural the words are the collection's documents, no field
    assert not rules.build_ir("Show all room types.", [], index).mentions


def test_a_definite_head_said_again_refers_back_to_the_field_named_in_full():
    ir = rules.build_ir('List the last names of members where the name contains the letter "a".', [], INDEX)
    assert [(f.field.mql, f.op) for f in ir.filters] == [("LName", "$regex")]
    # a possessor after it names another thing
    q = Question.of("the last names of members and the names of their venues")
    assert not {m.start for m in mention_fields(q.stems, prepare(INDEX).schema)
                if m.field.mql == "LName" and m.start == 7 and m.share == 1.0}


def test_the_entitys_word_before_a_field_modifies_it():
    # 'company rank' is the rank of the company, not the eponymous `Company` field and a rank
    ir = rules.build_ir("List the headquarters of companies in ascending order of company rank.", [], EPONYM_INDEX)
    assert [f.mql for f in ir.outputs] == ["Headquarters"] and [(f.mql, d) for f, d in ir.sort] == [("Rank", 1)]
    assert [f.mql for f in rules.build_ir("List the company headquarters.", [], EPONYM_INDEX).outputs] == \
        ["Headquarters"]
    assert [f.mql for f in rules.build_ir("Show all company names.", [], EPONYM_INDEX).outputs] == ["Company"]


def test_a_fields_unit_after_in_or_per_goes_without_saying():
    # `Rating_in_percent` is the rating: 'in percent' states its unit; `lost_in_battle` in battles
    # relates the document to its collection, so 'lost' alone does not name it
    index = {**INDEX, "collections": {**INDEX["collections"], "battle": {"count": 4, "sampled": 4}},
             "lattice": INDEX["lattice"] + [entry("venue", "Rating_in_percent", types={"double": 4}),
                                            entry("battle", "lost_in_battle")]}
    assert ("Rating_in_percent", "rating") in mentioned("the venue with the highest rating", "venue", index)
    assert not any(f == "lost_in_battle" for f, _ in mentioned("the battles where ships were lost", "battle", index))
    ir = rules.build_ir("Show the name of the venue with the highest rating.", [], index)
    assert [(k.mql, d) for k, d in ir.sort] == [("Rating_in_percent", -1)] and ir.limit == 1


def test_a_plural_the_normalizer_reads_by_the_regular_rule_names_its_singular():
    """'movies' (normal form 'movy') is a `Movie`, 'heroes' a hero, 'women' a woman — on either side."""
    index = {"db": "films", "collections": {"Movie": {"count": 4, "sampled": 4}, "Studio": {"count": 4, "sampled": 4}},
             "lattice": [entry("Movie", "title"), entry("Movie", "hero_name"), entry("Movie", "woman_lead"),
                         entry("Studio", "name"), entry("Studio", "Movies", kind="array", types={"array": 4})],
             "values": {}}
    ir = rules.build_ir("List the titles of all movies.", [], index)
    assert ir.collection == "Movie" and [f.mql for f in ir.outputs] == ["title"]
    assert ("hero_name", "heroes names") in mentioned("the heroes names of each movie", "Movie", index)
    assert ("woman_lead", "women lead") in mentioned("the women lead of each movie", "Movie", index)
    assert ("Movies", "movie") in mentioned("each movie of a studio", "Studio", index)
