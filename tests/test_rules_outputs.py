"""`rules` shows the fields a question names: an entity word inside a compound naming a field
of it, and fields named by coordinated words that share a head or a modifier."""

from __future__ import annotations

from nlq.methods import rules
from nlq.methods.rules.question import word_match
from tests.helpers import rules_answer, rules_world


def entry(collection, path, kind="scalar", types=None, present=4):
    return {"collection": collection, "path": path, "kind": kind, "types": types or {"string": present},
            "present": present, "null": 0, "missing": 0, "empty": 0, "array_len": None}


INDEX = {
    "db": "office",
    "collections": {"departments": {"count": 4, "sampled": 4}, "Students": {"count": 4, "sampled": 4}},
    "lattice": [
        entry("departments", "DEPARTMENT_ID", types={"int": 4}), entry("departments", "DEPARTMENT_NAME"),
        entry("departments", "employees", kind="array", types={"array": 4}),
        entry("departments", "employees[].EMPLOYEE_ID", types={"int": 9}, present=9),
        entry("departments", "employees[].FIRST_NAME", present=9),
        entry("departments", "employees[].LAST_NAME", present=9),
        entry("departments", "employees[].PHONE_NUMBER", present=9),
        entry("departments", "employees[].DEPARTMENT_ID", types={"int": 9}, present=9),
        entry("Students", "student_id", types={"int": 4}), entry("Students", "personal_name"),
        entry("Students", "address_line_1"), entry("Students", "address_line_2"),
        entry("Students", "Student_Course_Enrolment", kind="array", types={"array": 4}),
        entry("Students", "Student_Course_Enrolment[].course_id", types={"int": 9}, present=9),
        entry("Students", "Student_Course_Enrolment[].date_of_enrolment", types={"date": 9}, present=9),
        entry("Students", "Student_Course_Enrolment[].date_of_completion", types={"date": 9}, present=9),
    ],
    "values": {},
}


def outputs_of(question):
    return [f.mql for f in rules.build_ir(question, [], INDEX).outputs]


# -- an entity word in a compound ---------------------------------------------------------------------------------

def test_an_entity_word_modifying_a_field_word_names_that_field():
    # 'department' names the collection, but 'department number' is a department's identifier
    shown = outputs_of("Display the first name and department number of all employees.")
    assert "employees.FIRST_NAME" in shown and "employees.PHONE_NUMBER" not in shown
    assert {"DEPARTMENT_ID", "employees.DEPARTMENT_ID"} & set(shown)


def test_a_possessed_entity_word_stays_the_entity():
    # 'the number of employees' counts them, it names no field
    ir = rules.build_ir("What is the number of employees?", [], INDEX)
    assert ir.count and not ir.outputs


# -- coordinated words sharing a field's other words --------------------------------------------------------------

def test_a_coordinated_word_names_the_sibling_field_sharing_the_head():
    assert outputs_of("List the dates of enrollment and completion of the student.") == [
        "Student_Course_Enrolment.date_of_enrolment", "Student_Course_Enrolment.date_of_completion"]
    assert outputs_of("Find the address line 1 and 2 of the student with personal name Jo.")[:2] == [
        "address_line_1", "address_line_2"]


def test_a_coordinated_word_naming_no_sibling_adds_nothing():
    assert outputs_of("List the dates of enrollment and names of the students.") == [
        "Student_Course_Enrolment.date_of_enrolment", "personal_name"]


# -- all the information about an entity --------------------------------------------------------------------------

SCHOOL = {
    "db": "school",
    "collections": {"Department": {"count": 3, "sampled": 3}},
    "lattice": [
        entry("Department", "DNO", types={"int": 3}), entry("Department", "DName"),
        entry("Department", "Course", kind="array", types={"array": 3}),
        entry("Department", "Course[].CID", present=9), entry("Department", "Course[].CName", present=9),
        entry("Department", "Course[].Credits", types={"int": 9}, present=9),
        entry("Department", "Course[].Enrolled_in", kind="array", types={"array": 9}, present=9),
        entry("Department", "Course[].Enrolled_in[].Grade", present=20),
    ],
    "values": {},
}


AUTHORS = {
    "db": "authors",
    "collections": {"Course_Authors": {"count": 3, "sampled": 3}},
    "lattice": [
        entry("Course_Authors", "author_id", types={"int": 3}), entry("Course_Authors", "personal_name"),
        entry("Course_Authors", "Courses", kind="array", types={"array": 3}),
        entry("Course_Authors", "Courses[].course_name", present=9),
    ],
    "values": {},
}


def test_all_the_information_about_an_array_entity_is_its_elements_fields():
    ir = rules.build_ir("List all information about courses sorted by credits in the ascending order.", [], SCHOOL)
    assert {f.mql for f in ir.outputs} == {"Course.CID", "Course.CName", "Course.Credits"}


def test_all_the_information_about_the_collection_spelled_out_is_its_documents():
    ir = rules.build_ir("List all the information about course authors in order of the personal name.", [], AUTHORS)
    assert ir.collection == "Course_Authors" and {f.mql for f in ir.outputs} == {"author_id", "personal_name"}


# -- an agent noun names the field of its verb --------------------------------------------------------------------

def test_an_agent_noun_and_its_verb_name_one_field():
    assert word_match("directed", "director") >= 0.85
    films = {"db": "cinema", "collections": {"film": {"count": 3, "sampled": 3}},
             "lattice": [entry("film", "Film_ID", types={"int": 3}), entry("film", "Title"), entry("film", "director"),
                         entry("film", "Gross_in_dollar", types={"int": 3})],
             "values": {}}
    ir = rules.build_ir("Show the title of each film and who directed it.", [], films)
    assert [f.mql for f in ir.outputs] == ["Title", "director"]


# -- a field a condition or an order reads, listed with the fields shown ------------------------------------------

SHOP = {"db": "shop", "collections": {"furniture": {"count": 3, "sampled": 3}},
        "lattice": [entry("furniture", "Furniture_ID", types={"int": 3}), entry("furniture", "Name"),
                    entry("furniture", "Num_of_Component", types={"int": 3}),
                    entry("furniture", "Price", types={"int": 3})],
        "values": {}}


def test_a_field_listed_with_the_shown_ones_is_shown_though_a_condition_reads_it():
    ir = rules.build_ir("Retrieve the names along with the number of components for furniture items that have "
                        "over 10 components.", [], SHOP)
    assert [f.mql for f in ir.outputs] == ["Name", "Num_of_Component"] and ir.filters
    ir = rules.build_ir("What are the names and prices of furniture, highest prices first?", [], SHOP)
    assert [f.mql for f in ir.outputs] == ["Name", "Price"] and ir.sort


def test_a_field_a_condition_reads_outside_the_list_is_not_shown():
    ir = rules.build_ir("What are the names of furniture with a price over 10?", [], SHOP)
    assert [f.mql for f in ir.outputs] == ["Name"]
    ir = rules.build_ir("List the names of furniture sorted by price.", [], SHOP)
    assert [f.mql for f in ir.outputs] == ["Name"]


# -- a person's full name, stored in two parts --------------------------------------------------------------------

STAFF = {"db": "staff", "collections": {"departments": {"count": 3, "sampled": 3}},
         "lattice": [entry("departments", "DEPARTMENT_ID", types={"int": 3}), entry("departments", "DEPARTMENT_NAME"),
                     entry("departments", "employees", kind="array", types={"array": 3}),
                     entry("departments", "employees[].FIRST_NAME", present=9),
                     entry("departments", "employees[].LAST_NAME", present=9),
                     entry("departments", "employees[].SALARY", types={"int": 9}, present=9)],
         "values": {}}
CLIENTS = {"db": "clients", "collections": {"Customers": {"count": 3, "sampled": 3}},
           "lattice": [entry("Customers", "customer_id", types={"int": 3}), entry("Customers", "customer_first_name"),
                       entry("Customers", "customer_last_name"), entry("Customers", "customer_phone")],
           "values": {}}


def test_a_full_name_is_the_first_and_last_name_of_the_elements_shown():
    ir = rules.build_ir("What are the full name and salary of every employee?", [], STAFF)
    assert [f.mql for f in ir.outputs] == ["employees.FIRST_NAME", "employees.LAST_NAME", "employees.SALARY"]


def test_a_full_name_joins_its_parts_whatever_words_precede_them():
    assert outputs_of_index("What are the full names of customers?", CLIENTS) == [
        "customer_first_name", "customer_last_name"]
    assert outputs_of_index("What are the ids, full names, and phones of each customer?", CLIENTS) == [
        "customer_id", "customer_phone", "customer_first_name", "customer_last_name"]


def outputs_of_index(question, index):
    return [f.mql for f in rules.build_ir(question, [], index).outputs]


# -- 'their X': the X of what was named before -------------------------------------------------------------------

LEDGER = {"db": "ledger", "collections": {"Statements": {"count": 3, "sampled": 3}},
          "lattice": [entry("Statements", "Statement_ID", types={"int": 3}), entry("Statements", "Statement_Details"),
                      entry("Statements", "Accounts", kind="array", types={"array": 3}),
                      entry("Statements", "Accounts[].Account_ID", types={"int": 9}, present=9),
                      entry("Statements", "Accounts[].Account_Details", present=9)],
          "values": {}}


def test_their_details_are_those_of_the_entity_named_before_not_after():
    assert outputs_of_index("Can you provide the statement IDs along with their details and corresponding "
                            "account details for all accounts?", LEDGER) == [
        "Statement_ID", "Statement_Details", "Accounts.Account_Details"]


def test_an_agent_noun_names_a_field_of_its_verb_and_preposition():
    films = {"db": "cinema", "collections": {"film": {"count": 3, "sampled": 3}},
             "lattice": [entry("film", "Film_ID", types={"int": 3}), entry("film", "Title"),
                         entry("film", "Directed_by"), entry("film", "Rank_in_series", types={"int": 3})],
             "values": {}}
    assert outputs_of_index("What are the title and director of each film?", films) == ["Title", "Directed_by"]


# -- a word naming the entity, listed with attributes ------------------------------------------------------------

REGIONS = {"db": "regions", "collections": {"appellations": {"count": 3, "sampled": 3}},
           "lattice": [entry("appellations", "No", types={"int": 3}), entry("appellations", "Appelation"),
                       entry("appellations", "County"),
                       entry("appellations", "wine", kind="array", types={"array": 3}),
                       entry("appellations", "wine[].Grape", present=9), entry("appellations", "wine[].Score",
                                                                                  types={"int": 9}, present=9)],
           "values": {}}


def test_an_entity_word_listed_with_attributes_names_its_field():
    assert outputs_of_index("What are the grapes and appelations of each wine?", REGIONS) == ["wine.Grape",
                                                                                             "Appelation"]
    assert outputs_of_index("Show the counties and appelations of all regions.", REGIONS) == ["County", "Appelation"]
    assert outputs_of_index("List all grapes along with their associated appellations.", REGIONS) == [
        "wine.Grape", "Appelation"]


# -- every field of an entity, asked in other words ----------------------------------------------------------------

CHIPS = {"db": "chips",
         "collections": {"chip_model": {"count": 3, "sampled": 3}, "investors": {"count": 3, "sampled": 3}},
         "lattice": [entry("chip_model", "Model_name"), entry("chip_model", "Launch_year", types={"int": 3}),
                     entry("chip_model", "RAM_MiB", types={"int": 3}),
                     entry("investors", "investor_id", types={"int": 3}), entry("investors", "Investor_details"),
                     entry("investors", "lot", types={"int": 3})],
         "values": {}}


def test_the_details_of_an_entity_without_a_details_field_are_all_its_fields():
    every = ["Model_name", "Launch_year", "RAM_MiB"]
    for question in ("What are the details of each chip model?", "Find the details for all chip models.",
                     "Present all relevant data for each chip model."):
        assert sorted(outputs_of_index(question, CHIPS)) == sorted(every), question
    assert sorted(outputs_of_index("Retrieve all investor records.", CHIPS)) == [
        "Investor_details", "investor_id", "lot"]


def test_details_a_field_is_named_by_are_that_field():
    assert outputs_of_index("Show the details of each investor.", CHIPS) == ["Investor_details"]


def test_a_field_named_beside_the_records_is_what_is_shown():
    assert outputs_of_index("Retrieve all investor records, listing the lot.", CHIPS) == ["lot"]


def test_a_closed_compound_field_word_is_named_by_its_two_words():
    staff = {"db": "staff", "collections": {"EMPLOYEE": {"count": 3, "sampled": 3}},
             "lattice": [entry("EMPLOYEE", "EMP_NUM", types={"int": 3}), entry("EMPLOYEE", "EMP_LNAME"),
                         entry("EMPLOYEE", "EMP_HIREDATE"), entry("EMPLOYEE", "EMP_OFFICE")],
             "values": {}}
    assert outputs_of_index("Find the last name and hire date of each employee.", staff) == [
        "EMP_LNAME", "EMP_HIREDATE"]


def test_an_entity_word_and_its_attribute_after_a_possessive_name_their_fields():
    kinds = {"db": "kinds", "collections": {"Allergy_Type": {"count": 3, "sampled": 3}},
             "lattice": [entry("Allergy_Type", "Allergy"), entry("Allergy_Type", "AllergyType")],
             "values": {}}
    for question in ("What are the allergies and their types?",
                     "Please provide the list of allergies along with their corresponding types."):
        assert outputs_of_index(question, kinds) == ["Allergy", "AllergyType"], question


def test_a_name_bound_to_one_part_the_part_unsaid_is_both_parts():
    assert outputs_of_index("What are the names and salaries of employees?", STAFF) == [
        "employees.FIRST_NAME", "employees.LAST_NAME", "employees.SALARY"]
    assert outputs_of_index("What are the first names and salaries of employees?", STAFF) == [
        "employees.FIRST_NAME", "employees.SALARY"]


def test_the_name_of_something_else_is_not_the_entitys_whole_name():
    pupils = {"db": "pupils", "collections": {"Student": {"count": 3, "sampled": 3}},
              "lattice": [entry("Student", "StuID", types={"int": 3}), entry("Student", "Fname"),
                          entry("Student", "LName"), entry("Student", "Advisor", types={"int": 3})],
              "values": {}}
    shown = outputs_of_index("What are the names of the advisors for students?", pupils)
    assert "Advisor" in shown and not {"Fname", "LName"} <= set(shown)


CLUBS = [{"club_name": "Chess", "club_location": "Hall A", "members": 12},
         {"club_name": "Tennis", "club_location": "Court 2", "members": 30}]


def test_a_question_opening_with_where_shows_where_the_entity_is(tmp_path):
    world = rules_world(tmp_path, {"campus": {"club": CLUBS}})
    for question in ('Where can I find the "Tennis" club?', "Where is the club with the most members?"):
        prediction, rows = rules_answer(world, "campus", question)
        assert rows == [{"club_location": "Court 2"}], (question, prediction["pipeline"])
    _, rows = rules_answer(world, "campus", 'What is the name of the club with the most members?')
    assert rows == [{"club_name": "Tennis"}]  # (not a 'where' question)


# -- a noun bound to the identifier of what it names ------------------------------------------------------------

MANAGED = {"db": "managed", "collections": {"department": {"count": 3, "sampled": 3}},
           "lattice": [entry("department", "Department_ID", types={"int": 3}), entry("department", "Name"),
                       entry("department", "Num_Employees", types={"int": 3}),
                       entry("department", "management", kind="array", types={"array": 3}),
                       entry("department", "management[].head_ID", types={"int": 5}, present=5),
                       entry("department", "management[].temporary_acting", present=5)],
           "values": {}}


def test_a_noun_bound_to_its_identifier_names_whose_fields_are_shown_not_an_identifier():
    # 'heads' binds `head_ID`, but says which departments, not that their heads' IDs are shown
    ir = rules.build_ir("Show the name and number of employees for the departments managed by heads who are "
                        "temporary acting.", [], MANAGED)
    assert [f.mql for f in ir.outputs] == ["Name", "Num_Employees"]
    # an identifier the question names as one is shown
    ir = rules.build_ir("Show the department names along with the head IDs.", [], MANAGED)
    assert [f.mql for f in ir.outputs] == ["Name", "management.head_ID"]


def test_a_counted_noun_bound_to_an_identifier_is_what_is_counted(tmp_path):
    """'how many distinct patients have ... in any year': 'patients' binds `patient_id`, which
    the count counts once each — not the years it is read over."""
    histories = [{"patient_id": p, "values_by_year": {y: {"LDL": {"readings": r}} for y, r in years.items()}}
                 for p, years in [(1, {"2020": [3.0, 4.8], "2021": [4.9]}), (2, {"2020": [2.0]}),
                                  (3, {"2021": [5.1], "2022": [4.7]}), (4, {"2022": [4.0]})]]
    world = rules_world(tmp_path, {"lab": {"lab_histories": histories}})
    prediction, rows = rules_answer(world, "lab", "How many distinct patients have at least one LDL reading above "
                                                  "4.5 in any year?")
    assert rows == [{"count": 2}], prediction["pipeline"]
