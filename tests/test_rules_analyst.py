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
