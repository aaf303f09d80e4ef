"""`rules` keeps only sort keys its rows can be ordered by: a superlative's limit never
falls silently on rows in no order (ordering.sortable, accounting.unordered_limit)."""

from __future__ import annotations

import pytest

from nlq.methods.rules.accounting import asks_order, constraints
from nlq.methods.rules.ir import IR, Field
from nlq.methods.rules.ordering import ORDER_PHRASE, aged_direction, orders_here, sortable
from nlq.methods.rules.question import Question, word_match
from tests.helpers import rules_answer, rules_world


def field(path, arrays=(), type_="string"):
    return Field("city", path, path, arrays, "scalar", type_, tuple(path.split(".")[-1].lower().split("_")), ())


CITY, HOST, POP = field("City"), field("events.Host", ("events",)), field("Population", type_="int")


def test_a_field_of_the_counted_elements_ranks_groups_by_their_count():
    ir = IR("city", group_by=[CITY], count=True, sort=[(HOST, -1)], limit=1)
    assert sortable(ir) == [("count", -1)]


def test_a_key_no_group_carries_is_dropped_and_the_superlative_said():
    ir = IR("city", group_by=[CITY], sort=[(POP, -1)], limit=1, aggregates=[("$sum", field("Area", type_="int"))])
    assert sortable(ir) == []
    ir.sort = []
    q = Question.of("Which city has the largest population?")
    assert [(c["word"], c["kind"]) for c in constraints(q, set(range(7)), set(), ir)] == [("largest", "operation")]


def test_documents_keep_their_keys_and_no_count_orders_them():
    assert sortable(IR("city", outputs=[CITY], sort=[(POP, 1)], limit=3)) == [(POP, 1)]
    assert sortable(IR("city", outputs=[CITY], sort=[("count", 1)])) == []
    assert sortable(IR("city", count=True, sort=[(POP, 1)], limit=1)) == []  # one number: no order


def test_group_keys_and_measures_order_groups():
    area = field("Area", type_="int")
    ir = IR("city", group_by=[CITY], aggregates=[("$sum", area)], sort=[(area, -1), (CITY, 1)])
    assert sortable(ir) == [(area, -1), (CITY, 1)]


@pytest.mark.parametrize("word, name", [("populated", "population"), ("located", "location"),
                                        ("operated", "operation"), ("graduating", "graduation")])
def test_a_participle_in_ated_names_the_noun_in_ation(word, name):
    assert word_match(word, name) == 0.85


def test_the_least_populated_sorts_by_the_population(tmp_path):
    world = rules_world(tmp_path, {"geo": {"county": [
        {"County_Id": i, "County_name": n, "Population": p}
        for i, (n, p) in enumerate([("Ash", 900), ("Elm", 100), ("Oak", 500), ("Fir", 300)])]}})
    prediction, rows = rules_answer(world, "geo", "Which two counties are the least populated? Give their names.")
    assert rows == [{"County_name": "Elm"}, {"County_name": "Fir"}]
    assert prediction["unresolved"] == []


@pytest.fixture(scope="module")
def shop(tmp_path_factory):
    customers = [{"customer_id": i, "customer_name": n, "date_became_customer": f"2000-0{i}-01",
                  "Customer_Orders": [{"order_id": 10 * i + k, "order_date": f"201{i + k}-01-01"} for k in range(2)],
                  "Customer_Channels": [{"channel_code": "Email", "active_from_date": f"199{9 - i}-05-01"}]}
                 for i, n in enumerate(["Ann", "Bob", "Cid"], start=1)]
    debates = [{"Debate_ID": i, "Venue": v, "Num_of_Audience": a}
               for i, (v, a) in enumerate([("Hall", 300), ("Dome", 90), ("Park", 150)])]
    return rules_world(tmp_path_factory.mktemp("shop"), {"shop": {"Customers": customers, "debate": debates}})


def test_most_recently_ranks_by_the_date_the_words_around_it_name(shop):
    _, rows = rules_answer(shop, "shop", "Find the name of the customer who made an order most recently.")
    assert rows == [{"customer_name": "Cid"}]  # the order dates, not the date each became a customer
    _, rows = rules_answer(shop, "shop", "Which customer has the earliest channel? Give the customer name.")
    assert rows == [{"customer_name": "Cid"}]


def test_the_number_of_a_stored_count_orders_by_it(shop):
    prediction, rows = rules_answer(shop, "shop", "List the venues of debates in ascending order of the number of audience.")
    assert [r["Venue"] for r in rows] == ["Dome", "Park", "Hall"]
    assert prediction["unresolved"] == []


@pytest.mark.parametrize("question, asks", [("Find the customer who made an order most recently.", False),
                                            ("Show the names and order the results by age.", True),
                                            ("List them in descending order of age.", True)])
def test_order_the_noun_asks_no_order(question, asks):
    q = Question.of(question)
    assert any(asks_order(q, i) for i, w in enumerate(q.raw) if w == "order") == asks


def test_a_number_named_like_its_array_is_what_the_elements_count(tmp_path):
    campuses = [{"Id": i, "Campus": c, "faculty": [{"Year": y, "Faculty": f + y % 7} for y in (2002, 2003)]}
                for i, (c, f) in enumerate([("North", 40), ("South", 90), ("East", 60)], start=1)]
    world = rules_world(tmp_path, {"uni": {"Campuses": campuses}})
    _, rows = rules_answer(world, "uni", "Which campus has the most faculties in year 2003? Give the campus.")
    assert [r["Campus"] for r in rows] == ["South"]  # the stored number per year, not how many entries


@pytest.mark.parametrize("key, asked, expected", [
    (field("Founded_year", type_="int"), "sorted by year, starting with the oldest", 1),
    (field("Date_of_Birth"), "sorted by date of birth from the oldest to the youngest", 1),
    (field("Date_of_Birth"), "sorted by date of birth from the youngest to the oldest", -1),
    (field("Age", type_="int"), "sorted by age, starting with the oldest", -1)])
def test_the_oldest_of_dates_is_the_earliest_of_ages_the_greatest(key, asked, expected):
    window = Question.of(asked).text.lower()
    assert aged_direction(window, key, -1 if "oldest first" in window else 1) == expected


def test_a_limit_over_groups_with_a_minimum_each_ranks_no_group():
    q = Question.of("Which gender has the lowest rate?")
    rate = field("Rate", type_="double")
    per_group = IR("city", group_by=[CITY], aggregates=[("$min", rate)], limit=1)
    assert [c["word"] for c in constraints(q, set(range(6)), set(), per_group)] == ["lowest"]
    overall = IR("city", aggregates=[("$min", rate)], limit=1)
    assert constraints(q, set(range(6)), set(), overall) == []


def test_oldest_first_is_read_with_the_order(shop):
    prediction, rows = rules_answer(shop, "shop", "List the customer names sorted by date became customer, "
                                                  "starting with the oldest.")
    assert [r["customer_name"] for r in rows] == ["Ann", "Bob", "Cid"]
    assert prediction["unresolved"] == []


def test_the_top_n_highest_values_of_a_measure_are_sorted_not_one_maximum(tmp_path):
    polls = [{"Poll_ID": i, "Support_rate": r} for i, r in enumerate([0.2, 0.9, 0.5, 0.7, 0.1])]
    world = rules_world(tmp_path, {"vote": {"poll": polls}})
    _, rows = rules_answer(world, "vote", "What are the top 3 highest support rates?")
    assert [r["Support_rate"] for r in rows] == [0.9, 0.7, 0.5]


@pytest.mark.parametrize("question, asks", [("Name the city that has organized the most events.", False),
                                            ("List the names organized lexicographically by name.", True),
                                            ("Show the teams and arrange them in alphabetical order.", True)])
def test_arranged_or_organized_as_a_verb_asks_no_order(question, asks):
    q = Question.of(question)
    assert any(orders_here(q, m) for m in ORDER_PHRASE.finditer(q.text.lower())) == asks


def test_an_order_naming_no_key_over_counts_per_group_orders_by_the_count(tmp_path):
    stations = [{"Station_ID": i, "Location": loc} for i, loc in enumerate(["Ash", "Elm", "Elm", "Oak", "Elm", "Oak"])]
    world = rules_world(tmp_path, {"gas": {"gas_station": stations}})
    _, rows = rules_answer(world, "gas", "What is the count of gas stations at each location, organized in descending order?")
    assert [(r["Location"], r["count"]) for r in rows] == [("Elm", 3), ("Oak", 2), ("Ash", 1)]


@pytest.mark.parametrize("question", ["Sort the names of products in ascending order of their price.",
                                      "Arrange the product names in descending order of price.",
                                      "List the names of products in ascending order of price."])
def test_order_of_after_a_sort_verb_names_the_key_not_the_verbs_object(tmp_path, question):
    docs = [{"name": n, "price": p} for n, p in (("pear", 3), ("apple", 9), ("fig", 1), ("kiwi", 5))]
    prediction, rows = rules_answer(rules_world(tmp_path, {"shop": {"products": docs}}), "shop", question)
    names = [r["name"] for r in rows]
    expected = ["fig", "pear", "kiwi", "apple"]
    assert names == (expected[::-1] if "descending" in question else expected)
    assert all(set(r) == {"name"} for r in rows)


@pytest.mark.parametrize("question, order", [("List all club names in descending alphabetical order.", ["Cy", "Bo", "Al"]),
                                             ("Show all the club names sorted in reverse alphabetical order.",
                                              ["Cy", "Bo", "Al"]),
                                             ("List all club names in alphabetical order.", ["Al", "Bo", "Cy"])])
def test_a_descending_alphabetical_order_runs_from_z_to_a(tmp_path, question, order):
    world = rules_world(tmp_path, {"league": {"club": [{"Club_ID": i, "name": n} for i, n in enumerate(["Bo", "Al", "Cy"])]}})
    prediction, rows = rules_answer(world, "league", question)
    assert [r["name"] for r in rows] == order, prediction["pipeline"]


def test_first_and_last_rank_in_time_by_the_date_named_around_them(tmp_path):
    """'the customer who last made an order', 'the employee born first': 'first'/'last' pick the
    earliest or latest by a date the words around them name."""
    customers = [{"customer_id": 1, "customer_name": "Ann", "Orders": [{"order_date": "2021-03-01"}]},
                 {"customer_id": 2, "customer_name": "Bob", "Orders": [{"order_date": "2022-07-09"}]},
                 {"customer_id": 3, "customer_name": "Cid", "Orders": [{"order_date": "2020-05-05"}]}]
    staff = [{"staff_id": i, "name": f, "date_of_birth": d}
             for i, (f, d) in enumerate([("Al", "1990-01-01"), ("Bea", "1970-06-30"), ("Cy", "1985-12-12")])]
    world = rules_world(tmp_path, {"shop": {"Customers": customers}, "office": {"Staff": staff}})
    prediction, rows = rules_answer(world, "shop", "Identify the name of the customer who last made an order.")
    assert rows == [{"customer_name": "Bob"}], prediction["pipeline"]
    prediction, rows = rules_answer(world, "office", "What is the name of the staff member born first?")
    assert rows == [{"name": "Bea"}], prediction["pipeline"]


@pytest.mark.parametrize("question", ["What is the average rating stars and title for the oldest movie?",
                                      "What is the average stars of the ratings of the movie with the highest budget?"])
def test_a_statistic_of_the_top_documents_elements_ranks_the_documents_first(tmp_path, question):
    """'the average rating of the oldest movie': the movie is picked by its own field, then its
    ratings averaged — not the average of every movie's, nor one group per title cut at one."""
    movies = [{"mID": 1, "title": "Ada", "year": 1990, "budget": 5, "Rating": [{"stars": 2}, {"stars": 4}]},
              {"mID": 2, "title": "Bo", "year": 1950, "budget": 9, "Rating": [{"stars": 5}, {"stars": 4}]},
              {"mID": 3, "title": "Cy", "year": 2000, "budget": 1, "Rating": [{"stars": 1}]}]
    world = rules_world(tmp_path, {"films": {"Movie": movies}})
    prediction, rows = rules_answer(world, "films", question)
    assert [r.get("avg_Rating_stars") for r in rows] == [4.5], prediction["pipeline"]


def test_a_superlative_in_an_asked_order_keeps_every_row(tmp_path):
    makers = [{"name": "Acme", "revenue": 50}, {"name": "Bolt", "revenue": 90}, {"name": "Cog", "revenue": 70}]
    world = rules_world(tmp_path, {"trade": {"maker": makers}})
    _, rows = rules_answer(world, "trade", "List the names of makers, sorted with the highest revenue first.")
    assert [r["name"] for r in rows] == ["Bolt", "Cog", "Acme"]
    _, rows = rules_answer(world, "trade", "Which maker has the highest revenue?")
    assert [r["name"] for r in rows] == ["Bolt"]
