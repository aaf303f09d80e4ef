"""`rules` reads which operations a question asks for however it is phrased:
comparators, top N, superlatives, distinct, counting, grouping and negation."""

from __future__ import annotations

import pytest

from nlq.methods import rules


def entry(collection, path, kind="scalar", types=None, present=4):
    return {"collection": collection, "path": path, "kind": kind, "types": types or {"string": present},
            "present": present, "null": 0, "missing": 0, "empty": 0, "array_len": None}


INDEX = {
    "db": "hills",
    "collections": {"peak": {"count": 6, "sampled": 6}, "shop": {"count": 3, "sampled": 3}},
    "lattice": [
        entry("peak", "Peak_ID", types={"int": 6}, present=6), entry("peak", "Name", present=6),
        entry("peak", "Region", present=6), entry("peak", "Height", types={"int": 6}, present=6),
        entry("peak", "Prominence", types={"int": 6}, present=6),
        entry("peak", "First_Climbed", types={"int": 6}, present=6),
        entry("peak", "Visitors", types={"int": 6}, present=6),
        entry("peak", "guide", kind="array", types={"array": 6}, present=6),
        entry("peak", "guide[].Guide_Name", present=9), entry("peak", "guide[].Age", types={"int": 9}, present=9),
        entry("shop", "Title", present=3), entry("shop", "Owner", present=3), entry("shop", "Shop_Type", present=3),
        entry("shop", "Owner_Age", types={"int": 3}, present=3),
        entry("shop", "Price", types={"int": 3}, present=3),
    ],
    "values": {},
}


def ir_of(question, witnesses=()):
    return rules.build_ir(question, list(witnesses), INDEX)


def filters_of(question, witnesses=()):
    ir = ir_of(question, witnesses)
    return [(f.field.mql, f.op, f.value, f.branch) for f in ir.filters]


def pipeline_of(question, witnesses=()):
    return rules.render(ir_of(question, witnesses))


def order_of(question):
    ir = ir_of(question)
    return [(k.mql if hasattr(k, "mql") else k, d) for k, d in ir.sort], ir.limit


# -- comparators -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("question, expected", [
    # another bound follows 'N or later': two bounds joined by 'or', not 'N and later'
    ("Names of peaks first climbed earlier than 1900 or later than 1950.",
     [("First_Climbed", "$lt", 1900, 1), ("First_Climbed", "$gt", 1950, 2)]),
    ("Names of peaks first climbed prior to 1900 or subsequent to 1950.",
     [("First_Climbed", "$lt", 1900, 1), ("First_Climbed", "$gt", 1950, 2)]),
    ("Names of peaks first climbed no later than 1900.", [("First_Climbed", "$lte", 1900, 0)]),
    ("Names of peaks first climbed no earlier than 1900.", [("First_Climbed", "$gte", 1900, 0)]),
    ("Names of guides younger than 40 years old.", [("guide.Age", "$lt", 40, 0)]),
])
def test_comparator_phrases(question, expected):
    assert filters_of(question) == expected


def test_a_currency_sign_is_part_of_the_number():
    assert filters_of("Titles of shops with prices between $50 and $100.") == [
        ("Price", "$gte", 50, 0), ("Price", "$lte", 100, 0)]


def test_an_amount_after_for_with_no_unit_is_a_price():
    assert filters_of("Titles of shops selling for under 50.") == [("Price", "$lt", 50, 0)]
    # a unit after the amount names another measure: no price is assumed
    assert filters_of("Titles of shops open for over 50 years.") == []


# -- top N and superlatives ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("question, expected", [
    ("Names of the 5 tallest peaks.", ([("Height", -1)], 5)),
    ("Names of the three oldest guides.", ([("guide.Age", -1)], 3)),
    ("Names of the two youngest guides.", ([("guide.Age", 1)], 2)),
    # the measure named after 'by' ranks, not the one the adjective names
    ("Regions of the three tallest peaks by prominence.", ([("Prominence", -1)], 3)),
])
def test_the_n_superlative_is_a_top_n(question, expected):
    assert order_of(question) == expected


def test_a_superlative_listed_first_orders_without_a_limit():
    assert order_of("Names of guides, with the oldest listed first.") == ([("guide.Age", -1)], None)


# -- distinct ------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("question", ["Show the regions of peaks without duplicates.",
                                      "List peak regions, each listed once.", "List peak regions with no repeats."])
def test_without_duplicates_is_distinct(question):
    assert ir_of(question).distinct


# -- text patterns -------------------------------------------------------------------------------------------------

def test_a_quoted_word_featured_in_a_field_named_after_it():
    assert filters_of("Count the shops with the word 'Corner' featured in their titles.") == [
        ("Title", "$regex", "Corner", 0)]


def test_finishing_with_a_letter_is_a_suffix():
    assert filters_of("Names of peaks that finish with the letter k.") == [("Name", "$regex", "k$", 0)]


# -- counting ------------------------------------------------------------------------------------------------------

def test_the_number_of_an_entity_compared_is_a_count_per_group():
    ir = ir_of("Show the regions where the number of peaks is below three.")
    assert [f.mql for f in ir.group_by] == ["Region"] and ir.having == ("$lt", 3) and not ir.filters


def test_the_number_of_an_array_compared_is_its_size():
    ir = ir_of("List the names of peaks where the number of guides exceeds one.")
    assert [(f.field.mql, f.op, f.value, f.size) for f in ir.filters] == [("guide", "$gt", 1, True)]
    assert not ir.count and not ir.sizes


def test_a_temporal_comparison_after_a_count_dates_what_is_counted():
    assert filters_of("Which region has the most number of peaks first climbed before 1900?") == [
        ("First_Climbed", "$lt", 1900, 0)]


def test_the_average_number_of_a_stored_quantity_averages_it():
    assert pipeline_of("What is the average number of visitors of peaks first climbed before 1900?") == [
        {"$match": {"First_Climbed": {"$lt": 1900}}},
        {"$group": {"_id": None, "avg_Visitors": {"$avg": "$Visitors"}}},
        {"$project": {"_id": 0, "avg_Visitors": 1}}]


def test_the_largest_number_of_a_stored_quantity_ranks_by_it():
    assert pipeline_of("Show the name of the peak with the largest number of visitors.") == [
        {"$sort": {"Visitors": -1}}, {"$limit": 1}, {"$project": {"_id": 0, "Name": "$Name"}}]


@pytest.mark.parametrize("question", ["Which region has the greatest number of peaks?",
                                      "Identify the region with the highest count of peaks.",
                                      "What is the region that the majority of peaks are in?"])
def test_the_most_counted_value_is_one_group_ranked_by_its_count_not_shown(question):
    assert pipeline_of(question) == [
        {"$group": {"_id": "$Region", "count": {"$sum": 1}}}, {"$sort": {"count": -1, "_id": 1}}, {"$limit": 1},
        {"$project": {"_id": 0, "Region": "$_id"}}]


@pytest.mark.parametrize("question", ["What is the count of peaks from different regions?",
                                      "What is the number of peaks classified under different regions?"])
def test_a_count_over_different_values_is_a_count_per_value(question):
    assert pipeline_of(question) == [
        {"$group": {"_id": "$Region", "count": {"$sum": 1}}}, {"$sort": {"_id": 1}},
        {"$project": {"_id": 0, "Region": "$_id", "count": 1}}]


# -- grouping ------------------------------------------------------------------------------------------------------

def test_a_statistic_for_all_values_of_a_compound_attribute_groups_by_it():
    ir = ir_of("What are the average prices for all shop types?")
    assert [f.mql for f in ir.group_by] == ["Shop_Type"] and [op for op, _ in ir.aggregates] == ["$avg"]


@pytest.mark.parametrize("question", ["What is the average price for all shops?",
                                      "What is the maximum price across all shops?"])
def test_a_statistic_for_all_documents_is_over_the_whole_collection(question):
    assert ir_of(question).group_by == []


def test_according_to_an_attribute_groups_a_statistic():
    ir = ir_of("Show the average price of shops according to their owner.")
    assert [f.mql for f in ir.group_by] == ["Owner"]


# -- negation ------------------------------------------------------------------------------------------------------

EAST = {"term": "East", "hard": True,
        "matches": [{"stored": "East", "kind": "value", "collection": "peak", "path": "Region", "frequency": 2}]}


@pytest.mark.parametrize("question", ["Names of peaks that are not located in the East region.",
                                      "Names of peaks whose regions exclude East.",
                                      "Names of peaks located elsewhere than the East region."])
def test_a_denied_value_is_ne_and_says_nothing_of_the_field_presence(question):
    assert filters_of(question, [EAST]) == [("Region", "$ne", "East", 0)]


def test_not_aged_n_is_only_an_inequality():
    forty = {"term": "40", "hard": True, "matches": [
        {"stored": 40, "kind": "value", "collection": "shop", "path": "Owner_Age", "frequency": 1}]}
    assert filters_of("Titles of shops whose owners are not aged 40.", [forty]) == [("Owner_Age", "$ne", 40, 0)]


# -- trailing superlatives -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("question, expected", [
    ("Titles of the 2 shops whose price is the lowest.", ([("Price", 1)], 2)),
    ("Name of the peak whose prominence is the greatest.", ([("Prominence", -1)], 1)),
    ("Name of the peak that was first climbed the earliest.", ([("First_Climbed", 1)], 1)),
])
def test_a_superlative_after_its_measure_ranks_by_it(question, expected):
    assert order_of(question) == expected


def test_a_superlative_before_a_noun_is_not_read_backwards():
    # 'the highest peaks' names no measure before 'highest': the height word decides
    assert order_of("Prominence of the highest peak.") == ([("Height", -1)], 1)


# -- outputs -------------------------------------------------------------------------------------------------------

NAMES = {**INDEX, "lattice": INDEX["lattice"] + [entry("shop", "Fname", present=3), entry("shop", "Lname", present=3)]}


@pytest.mark.parametrize("question", ["List the first and last names of the shops.",
                                      "What are the names (both first and last) of the shops?",
                                      "List the first name and last name of the shops."])
def test_name_parts_sharing_one_head_are_both_shown(question):
    assert [f.mql for f in rules.build_ir(question, [], NAMES).outputs] == ["Fname", "Lname"]


def test_the_information_about_an_entity_is_all_its_fields():
    ir = ir_of("Show the information about shops sorted by price.")
    assert {f.mql for f in ir.outputs} == {"Title", "Owner", "Shop_Type", "Owner_Age", "Price"}


def test_a_noun_before_numbers_of_makes_a_compound_not_a_count():
    assert not ir_of("Show the telephone numbers of shops.").count
    assert ir_of("Show the owners and the corresponding number of shops.").count


@pytest.mark.parametrize("question", ["Which region has the largest peak population?",
                                      "Which region has the largest population of peaks?"])
def test_a_population_of_an_entity_is_its_count(question):
    ir = ir_of(question)
    assert [f.mql for f in ir.group_by] == ["Region"] and ir.sort == [("count", -1)] and ir.limit == 1


def test_the_value_shared_by_the_most_array_elements_is_a_count_per_value():
    ir = ir_of("Which guide name do the most guides have?")
    assert [f.mql for f in ir.group_by] == ["guide.Guide_Name"] and ir.sort == [("count", -1)] and ir.limit == 1


def test_a_literal_between_most_and_the_entity_is_a_condition_of_the_count():
    corner = {"term": "corner", "hard": True, "matches": [
        {"stored": "corner", "kind": "value", "collection": "shop", "path": "Shop_Type", "frequency": 2}]}
    ir = ir_of("Which owner has the most corner shops?", [corner])
    assert [f.mql for f in ir.group_by] == ["Owner"] and ir.sort == [("count", -1)] and ir.limit == 1
    assert [(f.field.mql, f.op, f.value) for f in ir.filters] == [("Shop_Type", "$eq", "corner")]


# -- existence, identity and default measures ----------------------------------------------------------------------

@pytest.mark.parametrize("question", ["Names of peaks that have an empty guide list.",
                                      "Names of peaks whose guide list is empty."])
def test_an_empty_array_has_size_zero(question):
    assert [(f.field.mql, f.op, f.value, f.size) for f in ir_of(question).filters] == [("guide", "$eq", 0, True)]


def test_having_an_array_means_it_has_elements():
    assert [(f.field.mql, f.op, f.value, f.size) for f in ir_of("Names of peaks that currently have guides.").filters
            ] == [("guide", "$gte", 1, True)]
    # the elements' own condition follows: no separate size test
    assert all(not f.size for f in ir_of("Names of peaks that have guides with age over 50.").filters)


def test_a_number_of_kinds_counts_the_array():
    # (an upper bound counts among the peaks that have some guides: `size_bounds`)
    assert [(f.field.mql, f.op, f.value) for f in ir_of("Names of peaks with three or fewer types of guides.").filters
            ] == [("guide", "$lte", 3), ("guide", "$gte", 1)]


@pytest.mark.parametrize("question", ["What is the name of peak 12?", "What is the name of the peak numbered 12?",
                                      "What is the name of the peak with id 12?"])
def test_a_singular_entity_then_a_number_names_it_by_its_identifier(question):
    assert filters_of(question) == [("Peak_ID", "$eq", 12, 0)]


def test_people_over_n_are_older_than_n():
    ages = {**INDEX, "collections": {"climber": {"count": 3, "sampled": 3}},
            "lattice": [entry("climber", "Name", present=3), entry("climber", "Age", types={"int": 3}, present=3)]}
    ir = rules.build_ir("Names of climbers who are under 40.", [], ages)
    assert [(f.field.mql, f.op, f.value) for f in ir.filters] == [("Age", "$lt", 40)]


# -- orders and sets -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("question, expected", [
    ("Names of guides sorted from oldest to youngest.", [("guide.Age", -1)]),
    ("Names of guides arranged from the youngest to the oldest.", [("guide.Age", 1)]),
    ("Names of guides sorted by age from oldest to youngest.", [("guide.Age", -1)]),
])
def test_from_one_superlative_to_its_opposite_orders_by_its_measure(question, expected):
    assert order_of(question) == (expected, None)


def test_the_year_they_were_done_names_the_year_field():
    assert order_of("Names of peaks sorted by the year they were first climbed.") == ([("First_Climbed", 1)], None)


@pytest.mark.parametrize("question", ["What regions do peaks lie in?", "Identify the regions where peaks are found."])
def test_asking_which_values_an_attribute_takes_is_a_set(question):
    assert ir_of(question).distinct


def test_a_set_of_rows_ordered_by_a_column_it_does_not_show_is_listed_as_asked():
    ir = ir_of("What are the different names and regions of peaks, ordered by their heights?")
    assert not ir.distinct and order_of("What are the different names and regions of peaks, ordered by their heights?"
                                        ) == ([("Height", 1)], None)


# -- statistics per document ---------------------------------------------------------------------------------------

FILMS = {
    "db": "cinema",
    "collections": {"film": {"count": 3, "sampled": 3}, "company": {"count": 3, "sampled": 3}},
    "lattice": [
        entry("film", "Title", present=3), entry("film", "schedule", kind="array", types={"array": 3}, present=3),
        entry("film", "schedule[].Price", types={"double": 6}, present=6),
        entry("company", "Company", present=3), entry("company", "Market_Value", types={"double": 3}, present=3),
        entry("company", "station", kind="array", types={"array": 3}, present=3),
        entry("company", "station[].Manager", present=5),
    ],
    "values": {},
}


@pytest.mark.parametrize("question", ["What titles do the films have, and what is the highest price for each?",
                                      "Show each film's title and its maximum price."])
def test_an_extreme_for_each_of_the_documents_named_is_a_statistic_per_document(question):
    ir = rules.build_ir(question, [], FILMS)
    assert [f.mql for f in ir.group_by] == ["Title"] and [(op, f.mql) for op, f in ir.aggregates] == [
        ("$max", "schedule.Price")]


def test_a_statistic_for_every_document_named_by_itself_is_over_all_of_them():
    ir = rules.build_ir("What is the minimum and average market value for every company?", [], FILMS)
    assert ir.group_by == [] and [op for op, _ in ir.aggregates] == ["$min", "$avg"]


@pytest.mark.parametrize("question, expected", [
    ("Show the youngest, average, and oldest ages of guides.", ["$min", "$avg", "$max"]),
    ("What is the oldest age among the guides?", ["$max"]),
])
def test_youngest_and_oldest_ages_are_statistics_of_the_age(question, expected):
    assert [op for op, f in ir_of(question).aggregates if f.mql == "guide.Age"] == expected


def test_the_attribute_of_each_element_is_listed_not_grouped():
    ir = rules.build_ir("Find the manager of each station in alphabetical order.", [], FILMS)
    assert ir.group_by == [] and [f.mql for f in ir.outputs] == ["station.Manager"]


# -- which field a comparison constrains ---------------------------------------------------------------------------

def test_a_year_placed_in_time_compares_a_year_not_the_measure_named_before():
    assert filters_of("Show the visitors of peaks first climbed before 1900.") == [("First_Climbed", "$lt", 1900, 0)]
    assert filters_of("Show the heights of peaks climbed since 1950.") == [("First_Climbed", "$gte", 1950, 0)]


def test_older_than_n_years_is_an_age():
    years = {**INDEX, "collections": {"driver": {"count": 3, "sampled": 3}},
             "lattice": [entry("driver", "Name", present=3), entry("driver", "Age", types={"int": 3}, present=3),
                         entry("driver", "Years_Working", types={"int": 3}, present=3)]}
    ir = rules.build_ir("Names of drivers who are older than 40 years.", [], years)
    assert [(f.field.mql, f.op, f.value) for f in ir.filters] == [("Age", "$gt", 40)]


def test_n_things_whose_ids_an_array_holds_is_the_array_size():
    enrolled = {**INDEX, "collections": {"student": {"count": 3, "sampled": 3}},
                "lattice": [entry("student", "Name", present=3),
                            entry("student", "enrolment", kind="array", types={"array": 3}, present=3),
                            entry("student", "enrolment[].course_id", types={"int": 5}, present=5)]}
    ir = rules.build_ir("Names of students enrolled in at least two courses.", [], enrolled)
    assert [(f.field.mql, f.op, f.value, f.size) for f in ir.filters] == [("enrolment", "$gte", 2, True)]
    ir = rules.build_ir("Names of students enrolled in more than one course.", [], enrolled)
    assert [(f.field.mql, f.op, f.value, f.size) for f in ir.filters] == [("enrolment", "$gt", 1, True)]


def test_n_things_an_array_of_two_words_names_is_the_array_size():
    committees = {**INDEX, "collections": {"editor": {"count": 3, "sampled": 3}},
                  "lattice": [entry("editor", "Name", present=3),
                              entry("editor", "journal_committee", kind="array", types={"array": 3}, present=3),
                              entry("editor", "journal_committee[].Journal_ID", types={"int": 5}, present=5)]}
    ir = rules.build_ir("Names of editors on at least two journal committees.", [], committees)
    assert [(f.field.mql, f.op, f.value, f.size) for f in ir.filters] == [("journal_committee", "$gte", 2, True)]


def test_a_text_piece_in_a_field_named_after_it_filters_that_field():
    assert filters_of("Heights of peaks without the letter M in their names.") == [("Name", "$not", "M", 0)]


@pytest.mark.parametrize("question, op", [('Names of peaks that have "Alps" as their region.', "$eq"),
                                          ('Names of peaks that do not have "Alps" as their region.', "$ne")])
def test_a_quoted_literal_said_to_be_a_fields_value_is_that_whole_value(question, op):
    """'have "Alps" as their region': the region equals the literal (the names are shown), not
    a piece of text in the names; 'as part of their names' stays a piece."""
    ir = ir_of(question)
    assert [(f.field.mql, f.op, f.value) for f in ir.filters] == [("Region", op, "Alps")]
    assert [f.mql for f in ir.outputs] == ["Name"]
    assert filters_of('Names of peaks that have "Mont" as part of their names.') == [("Name", "$regex", "Mont", 0)]


def test_a_unit_after_the_number_names_the_measure():
    assert filters_of("Which regions have peaks that rise above 5000 meters?") == [("Height", "$gt", 5000, 0)]


def test_an_entity_count_compared_is_a_count_per_group():
    ir = ir_of("Identify regions with a peak count of less than three.")
    assert [f.mql for f in ir.group_by] == ["Region"] and ir.having == ("$lt", 3)


def test_numbers_joined_to_names_is_an_attribute_not_a_count():
    assert not ir_of("Provide the names and numbers of peaks.").count


def test_which_n_then_a_superlative_keeps_n():
    assert order_of("Which 4 peaks have the highest prominence?") == ([("Prominence", -1)], 4)
    assert ir_of("Which 4 peaks are in the Alps?").limit is None  # no ranking: no arbitrary 4


def test_a_modifier_between_the_number_and_the_entity_keeps_the_count_per_group():
    ir = ir_of("List the regions that have fewer than three climbed peaks.")
    assert [f.mql for f in ir.group_by] == ["Region"] and ir.having == ("$lt", 3)


def test_a_negated_field_before_a_named_place_denies_a_value_not_its_presence():
    firms = {**INDEX, "collections": {"firm": {"count": 3, "sampled": 3}},
             "lattice": [entry("firm", "Name", present=3), entry("firm", "Headquarters", present=3)]}
    ir = rules.build_ir("Names of firms not headquartered in the United States.", [], firms)
    assert not any(f.op in ("$exists", "$type") for f in ir.filters) and [f.mql for f in ir.outputs] == ["Name"]
    ir = rules.build_ir("Names of firms with no headquarters.", [], firms)
    assert [(f.field.mql, f.op) for f in ir.filters] == [("Headquarters", "$exists")]


@pytest.mark.parametrize("question, expected", [
    ("Names of peaks with height not exceeding 4000.", [("Height", "$lte", 4000, 0)]),
    ("Names of peaks with height up to 4000.", [("Height", "$lte", 4000, 0)]),
    ("Names of peaks with heights between four thousand and five thousand.",
     [("Height", "$gte", 4000, 0), ("Height", "$lte", 5000, 0)]),
    ("Names of peaks higher than 4000.", [("Height", "$gt", 4000, 0)]),
])
def test_more_comparator_phrases(question, expected):
    assert filters_of(question) == expected


def test_ranked_in_the_top_n_is_descending():
    assert order_of("Names of peaks ranked in the top 5 by height.") == ([("Height", -1)], 5)


def test_the_n_values_with_the_most_documents_keep_n():
    ir = ir_of("List the three regions with the most peaks.")
    assert [f.mql for f in ir.group_by] == ["Region"] and ir.sort == [("count", -1)] and ir.limit == 3


@pytest.mark.parametrize("question", ["For each region, what is the highest peak?",
                                      "Which peak is the tallest in each region?"])
def test_a_superlative_per_group_is_the_top_document_of_each_group(question):
    ir = ir_of(question)
    assert [f.mql for f in ir.group_by] == ["Region"] and ir.limit is None
    assert [(f.mql, d) for f, d in ir.presort] == [("Height", -1)] and "Name" in [f.mql for f in ir.outputs]


def test_shortest_with_no_length_stored_is_the_lowest_height():
    assert order_of("What is the name of the shortest peak?") == ([("Height", 1)], 1)


def test_a_superlative_listed_first_gives_the_order_its_direction():
    assert order_of("List the names of peaks in order of height, tallest first.") == ([("Height", -1)], None)


def test_exactly_n_is_an_equality():
    assert [(f.field.mql, f.op, f.value, f.size) for f in ir_of("Names of peaks with exactly two guides.").filters
            ] == [("guide", "$eq", 2, True)]


def test_a_statistic_of_elements_for_each_document_is_per_document():
    ir = ir_of("What is the average age of guides for each peak?")
    assert [f.mql for f in ir.group_by] == ["Name"] and [(op, f.mql) for op, f in ir.aggregates] == [
        ("$avg", "guide.Age")]


def test_how_many_elements_each_document_has_is_its_array_size():
    ir = ir_of("How many guides does each peak have?")
    assert [f.mql for f in ir.outputs] == ["Name"] and [f.mql for f in ir.sizes] == ["guide"] and not ir.count


def test_the_head_of_a_compound_after_order_of_is_the_key():
    assert order_of("Regions of peaks sorted in ascending order of peak visitors.") == ([("Visitors", 1)], None)


def test_the_entity_right_after_most_is_counted_not_a_measure_named_later():
    ir = ir_of("Which region has the most peaks that were first climbed after 1900?")
    assert [f.mql for f in ir.group_by] == ["Region"] and ir.sort == [("count", -1)]
    assert [(f.field.mql, f.op) for f in ir.filters] == [("First_Climbed", "$gt")]


# -- an array inside the entity a relative clause is said of ----------------------------------------------------

BANKS = {
    "db": "banks",
    "collections": {"bank": {"count": 3, "sampled": 3}},
    "lattice": [
        entry("bank", "bname", present=3),
        entry("bank", "customer", kind="array", types={"array": 3}, present=3),
        entry("bank", "customer[].cust_name", present=6),
        entry("bank", "customer[].credit_score", types={"int": 6}, present=6),
        entry("bank", "customer[].loan", kind="array", types={"array": 6}, present=6),
        entry("bank", "customer[].loan[].amount", types={"int": 4}, present=4),
        entry("bank", "loan", kind="array", types={"array": 3}, present=3),
        entry("bank", "loan[].amount", types={"int": 4}, present=4),
    ],
    "values": {},
}


@pytest.mark.parametrize("question, op, value", [
    ("Find the name and credit score of the customers who have some loans.", "$gte", 1),
    ("Show the names of customers that have any loan.", "$gte", 1),
    ("Find the name of customers who do not have any loans.", "$eq", 0),
])
def test_having_an_array_said_of_array_elements_reads_their_own_array(question, op, value):
    """'customers who have loans': each customer's own `customer.loan[]`, tested after the
    customers are unwound — not the bank document's `loan[]`."""
    pipeline = rules.render(rules.build_ir(question, [], BANKS))
    unwind = pipeline.index({"$unwind": "$customer"})
    size = {"$expr": {op: [{"$size": {"$ifNull": ["$customer.loan", []]}}, value]}}
    assert {"$match": size} in pipeline[unwind + 1:], pipeline


PEOPLE = {
    "db": "ventures",
    "collections": {"people": {"count": 4, "sampled": 4}},
    "lattice": [
        entry("people", "Name"), entry("people", "Height", types={"double": 4}),
        entry("people", "entrepreneur", kind="array", types={"array": 4}),
        entry("people", "entrepreneur[].Company", present=2),
        entry("people", "entrepreneur[].Money_Requested", types={"double": 2}, present=2),
    ],
    "values": {},
}


@pytest.mark.parametrize("question, has", [
    ("What are the names of entrepreneurs?", True),
    ("Show the heights of entrepreneurs.", True),
    ("What are the names of people?", False),
    ("What are the companies of entrepreneurs?", False),    # their own values: the elements, unwound
])
def test_the_values_of_an_entity_kept_in_an_array_are_of_documents_holding_one(question, has):
    """'the names of entrepreneurs', entrepreneurs an array of each person: only people with an
    entrepreneur element are entrepreneurs."""
    ir = rules.build_ir(question, [], PEOPLE)
    sizes = [(f.field.mql, f.op, f.value) for f in ir.filters if f.size]
    assert (sizes == [("entrepreneur", "$gte", 1)]) is has, sizes


@pytest.mark.parametrize("question", ["Show the names of peaks that have a guide.",
                                      "Show the names of peaks that have some guides.",
                                      # a participle naming the act ('users who have posted tweets')
                                      "Show the names of peaks that have hired a guide.",
                                      "What is the average height of peaks that have taken guides?",
                                      # the documents themselves said right before 'have' or 'with'
                                      "How many peaks have guides?", "How many peaks with guides are there?"])
def test_having_a_named_array_element_is_presence(question):
    assert ("guide", "$gte", 1, 0) in filters_of(question)


def test_both_bounds_on_one_field_are_met_by_different_members_of_each_group():
    """'the regions with both peaks higher than 4000 and peaks lower than 2000': no peak is
    both, so each region needs one peak on each side (a flag per side per group)."""
    pipeline = pipeline_of("Show the regions that have both peaks with height higher than 4000 "
                           "and peaks with height lower than 2000.")
    group = next(stage["$group"] for stage in pipeline if "$group" in stage)
    assert group["_id"] == "$Region"
    assert group["_side1"] == {"$max": {"$cond": [{"$gt": ["$Height", 4000]}, 1, 0]}}
    assert group["_side2"] == {"$max": {"$cond": [{"$lt": ["$Height", 2000]}, 1, 0]}}
    assert {"$match": {"_side1": 1, "_side2": 1}} in pipeline



TEAMS = {
    "db": "league",
    "collections": {"teams": {"count": 3, "sampled": 3}},
    "lattice": [
        entry("teams", "Name"), entry("teams", "player", kind="array", types={"array": 3}),
        entry("teams", "player[].name", present=3), entry("teams", "player[].Points", types={"double": 3}, present=3),
    ],
    "values": {},
}


@pytest.mark.parametrize("question", ["List the names of teams together with their players.",
                                      "Show the names of teams and the players they signed."])
def test_an_array_entity_listed_after_what_is_shown_shows_its_elements_names(question):
    """'teams together with their players': the players are asked for (their names), not a
    condition that each team has one."""
    ir = rules.build_ir(question, [], TEAMS)
    assert "player.name" in [f.mql for f in ir.outputs] and not [f for f in ir.filters if f.size], ir


def test_an_array_entity_listed_without_a_name_of_its_own_is_left_unresolved():
    """'people and their entrepreneurs', no element field naming an entrepreneur: the word is
    left unresolved rather than read as a condition that each person has one."""
    ir = rules.build_ir("Show the names of people and their entrepreneurs.", [], PEOPLE)
    assert not [f for f in ir.filters if f.size] and "entrepreneurs" in ir.unresolved, ir
