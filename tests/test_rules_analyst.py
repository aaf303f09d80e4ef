"""The structures analysts ask for, executed: `rules` generates over a tiny world
and the rows its pipeline returns are compared with the answer worked out by hand.

Top N groups ranked by their measure, documents counted (not the elements of an
array their qualifier names), groups over the elements of an array, and a count
that matches nothing answering 0.
"""

from __future__ import annotations

import orjson
import pytest

from nlq import generate, witness
from nlq import index as grounding
from nlq.backends import EmbeddedBackend

WORLD = {
    "venue": [{"venue_id": i, "city": city, "state": state} for i, (city, state) in enumerate([
        ("Reno", "NV"), ("Boise", "ID"), ("Dallas", "TX"), ("Austin", "TX"), ("Austin", "TX"), ("Dallas", "TX"),
        ("Austin", "TX")])],
    "member": [
        {"member_id": 1, "name": "Ann", "tiers": [{"tier": "Gold", "year": 2020}, {"tier": "Gold", "year": 2021}]},
        {"member_id": 2, "name": "Bob", "tiers": [{"tier": "Silver", "year": 2020}]},
        {"member_id": 3, "name": "Cy", "tiers": [{"tier": "Gold", "year": 2022}, {"tier": "Bronze", "year": 2020}]}],
    "portfolio": [{"portfolio_id": i, "products": products} for i, products in enumerate([
        ["Bonds", "Stocks"], ["Stocks"], ["Futures", "Stocks", "Bonds"], ["Gold"]])],
    "stadium": [{"stadium_id": i, "Name": name, "concert": [{"concert_name": c} for c in concerts]}
                for i, (name, concerts) in enumerate([("Arena", ["Aida", "Bolero"]), ("Bowl", ["Aida"]),
                                                      ("Dome", ["Bolero", "Carmen"])])],
    "player": [{"player_id": i, "residence": r, "gender": g} for i, (r, g) in enumerate([
        ("Brandon", "M"), ("Brandon", "F"), ("Minnedosa", "M"), ("Winnipeg", "F"), ("Winnipeg", "M"), ("Selkirk", "F")])],
    "paper": [{"paper_id": i, "title": t} for i, t in enumerate(["Typed Databases", "Lazy Streams", "Database Joins"])],
    "phone": [{"phone_id": i, "model": m, "RAM_MiB": r, "weight": w} for i, (m, r, w) in enumerate([
        ("X1", 32, 100), ("X2", 64, 120), ("X3", 64, 140)])],
    "wrestler": [{"wrestler_id": i, "Name": n, "Elimination": [{"Team": t} for t in teams]} for i, (n, teams) in
                 enumerate([("Al", ["Orton", "Batista"]), ("Bo", ["Orton"]), ("Cy", ["Orton", "Rey", "Batista"]),
                            ("Di", ["Orton", "Rey"])])],
    "reviewer": [{"reviewer_id": i, "name": n, "Rating": [{"stars": v} for v in stars]} for i, (n, stars) in
                 enumerate([("Ann", [2, 4, 5]), ("Ben", [3]), ("Cat", [5, 1, 4, 4])])],
    "gamer": [{"gamer_id": i, "nickname": n, "Plays_Games": [{"game_id": g} for g in games]} for i, (n, games) in
              enumerate([("ace", [1, 2]), ("bolt", []), ("cleo", [3]), ("dash", [])])],
    "order": [
        {"order_id": 1, "items": [{"name": "pen", "quantity": 5}, {"name": "ink", "quantity": 1}]},
        {"order_id": 2, "items": [{"name": "pad", "quantity": 2}, {"name": "pen", "quantity": 4}]},
        {"order_id": 3, "items": [{"name": "cup", "quantity": 20}]}],
}


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("worlds")
    (root / "shop.json").write_bytes(orjson.dumps(WORLD))
    backend = EmbeddedBackend(root)
    indexes = {doc["db"]: doc for doc in grounding.build(backend, ["shop"])}
    return backend, indexes, generate.Context(indexes)


def answer(world, question: str) -> list[dict]:
    backend, indexes, context = world
    task = next(witness.run([{"id": "q", "db": "shop", "question": question}], indexes))
    prediction = next(generate.run([task], "rules", context))["prediction"]
    return backend.aggregate("shop", prediction["collection"], prediction["pipeline"])


def values(rows: list[dict]) -> list[tuple]:
    return [tuple(sorted(map(str, row.values()))) for row in rows]


@pytest.mark.parametrize("question", [
    "What are the top 2 cities by number of venues?",
    "List the top 2 cities by number of venues.",
    "Show the top two cities by the number of venues.",
])
def test_top_n_groups_are_ranked_by_their_count_before_the_limit(world, question):
    # Austin 3, Dallas 2: without the sort the limit would keep whichever groups come first
    assert values(answer(world, question)) == values([{"city": "Austin", "count": 3}, {"city": "Dallas", "count": 2}])


@pytest.mark.parametrize("question", [
    "What are the top 2 items by total quantity?",
    "Top 2 items by total quantity ordered.",
])
def test_top_n_elements_of_an_array_are_grouped_per_element(world, question):
    # one row per item (cup 20, pen 9), not one grand total of every quantity
    rows = answer(world, question)
    assert values(rows) == values([{"name": "cup", "q": 20}, {"name": "pen", "q": 9}])


@pytest.mark.parametrize("question", [
    "How many members have a Gold tier?",
    "How many Gold tier members are there?",
    "Count the members with a Gold tier.",
])
def test_documents_are_counted_not_the_array_elements_that_qualify_them(world, question):
    # Ann holds Gold twice: two members, three Gold entries
    assert answer(world, question) == [{"count": 2}]


@pytest.mark.parametrize("question", [
    "What is the most common product across portfolios?",
    "Which product is the most common in portfolios?",
])
def test_the_most_common_element_of_an_array_unwinds_it_first(world, question):
    # Stocks is in three portfolios; grouping whole arrays would rank ['Bonds', 'Stocks']
    assert values(answer(world, question)) == values([{"products": "Stocks"}])


def test_groups_over_an_array_of_values_count_each_element(world):
    rows = answer(world, "How many portfolios are there for each product?")
    assert sorted(values(rows)) == sorted(values([{"p": "Bonds", "c": 2}, {"p": "Futures", "c": 1},
                                                  {"p": "Gold", "c": 1}, {"p": "Stocks", "c": 3}]))


@pytest.mark.parametrize("question, count", [
    ("How many venues are in Austin?", 3),
    ("How many venues have a venue id greater than 100?", 0),
    ("How many orders are there?", 3),
])
def test_a_count_is_one_row_and_zero_when_nothing_matches(world, question, count):
    assert answer(world, question) == [{"count": count}]


@pytest.mark.parametrize("question", [
    'Which stadiums had both "Aida" and "Bolero" concerts?',
    'List the names of the stadiums that hosted both the concert "Aida" and the concert "Bolero".',
])
def test_both_values_of_an_array_are_all_required(world, question):
    # 'both A and B' is every value (some element holds each), not any of them
    assert values(answer(world, question)) == values([{"Name": "Arena"}])


@pytest.mark.parametrize("question", [
    'Show the residences that have both a player of gender "M" and a player of gender "F".',
    'Which residences have both "M" and "F" players?',
])
def test_both_values_of_a_field_are_held_by_a_group(world, question):
    # one player has one gender: the residences whose players hold both
    assert sorted(values(answer(world, question))) == sorted(values([{"r": "Brandon"}, {"r": "Winnipeg"}]))


def test_a_titled_entity_is_shown_by_its_title(world):
    # papers have a title and no name: the title names them, not the identifier
    assert sorted(values(answer(world, 'Identify papers whose titles contain "Database".'))) == sorted(
        values([{"title": "Typed Databases"}, {"title": "Database Joins"}]))


@pytest.mark.parametrize("question", [
    "What is the weight of phones on average?",
    "What weight do phones have on average?",
])
def test_on_average_after_the_measure_averages_it(world, question):
    assert [v for row in answer(world, question) for v in row.values()] == [120]


def test_a_unit_in_a_field_name_is_one_word(world):
    # `RAM_MiB` is RAM in MiB: 'RAM' names it (not 'ram', 'mi' and 'b', of which 'RAM' is a third)
    rows = answer(world, "What is the average RAM of phones?")
    assert [round(v, 2) for row in rows for v in row.values()] == [53.33]


@pytest.mark.parametrize("question, teams", [
    ("List teams that have experienced over three eliminations.", ["Orton"]),
    ("Which teams have at least two eliminations?", ["Batista", "Orton", "Rey"]),
])
def test_a_count_compared_for_what_lives_in_the_array_is_per_value(world, question, teams):
    # each elimination holds its team: the eliminations are counted per team, not per wrestler
    assert sorted(r["Team"] for r in answer(world, question)) == teams


def test_a_count_compared_for_the_documents_is_their_array_size(world):
    assert values(answer(world, "List wrestlers with more than two eliminations.")) == values([{"Name": "Cy"}])


def test_a_field_named_after_the_number_is_compared_not_the_counted_array(world):
    # 'higher than 3 stars': each rating's stars, not the number of ratings per reviewer
    assert answer(world, "What is the count of ratings higher than 3 stars?") == [{"count": 5}]


@pytest.mark.parametrize("question", [
    "Show the cities that have at least two records.",
    "Which cities have more than one entry?",
])
def test_records_and_entries_are_the_documents_counted_per_value(world, question):
    assert sorted(r["city"] for r in answer(world, question)) == ["Austin", "Dallas"]


@pytest.mark.parametrize("question", [
    'Identify papers whose titles contain "Lazy" or "Joins".',
    "Show the papers whose titles feature either 'lazy' or 'joins'.",
])
def test_a_text_pattern_with_two_pieces_joined_by_or_matches_either(world, question):
    assert sorted(r["title"] for r in answer(world, question)) == ["Database Joins", "Lazy Streams"]


@pytest.mark.parametrize("question, value", [
    ("What is the overall weight of the phones?", 360),
    ("What is the typical weight of a phone?", 120),
])
def test_overall_and_typical_name_a_statistic_of_the_field_after_them(world, question, value):
    assert [v for row in answer(world, question) for v in row.values()] == [value]
