"""Listed outputs that live in another collection or an embedded array, and sort keys listed
after 'then by': each is projected (or sorted on) from where it is stored, in order."""

from __future__ import annotations

import pytest

from tests.helpers import rules_answer, rules_world

# Reviews are embedded on both sides (as a normalised link table is denormalised): each critic's
# review names its film by `fID`, each film's review its critic by `rID`.
REVIEWS = [(1, 10, 4), (1, 11, 2), (2, 10, 5), (3, 12, 3), (2, 12, 1)]
CRITICS = [{"rID": r, "name": name, "Review": [{"rID": a, "fID": f, "stars": s} for a, f, s in REVIEWS if a == r]}
           for r, name in ((1, "Vera Quill"), (2, "Otto Brandt"), (3, "Mina Lowe"))]
FILMS = [{"fID": f, "title": title, "year": year,
          "Review": [{"rID": a, "fID": b, "stars": s} for a, b, s in REVIEWS if b == f]}
         for f, title, year in ((10, "Glass Harbor", 1999), (11, "Red Meadow", 2004), (12, "Cold Lantern", 2011))]
ACCOUNTS = [{"account_id": 7 + i, "account_name": str(160 + i), "customer_id": c} for i, c in enumerate((1, 2, 1, 3))]
CUSTOMERS = [{"customer_id": c, "customer_first_name": n, "customer_phone": p}
             for c, n, p in ((1, "Aino", "555-0101"), (2, "Bram", "555-0102"), (3, "Cleo", "555-0103"))]
GOODS = [{"name": n, "price": p} for n, p in (("kettle", 30), ("lamp", 30), ("desk", 90), ("chair", 45))]


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return rules_world(tmp_path_factory.mktemp("joined_outputs"),
                       {"reviews": {"Critic": CRITICS, "Film": FILMS}, "shop": {"goods": GOODS},
                        "bank": {"Accounts": ACCOUNTS, "Customers": CUSTOMERS}})


answer = rules_answer


def test_a_field_qualified_by_the_other_collection_is_projected_from_it(world):
    """'the critic's name, film title and stars': 'title' partly names the critic's own `name`,
    but 'film' qualifies it as the film's title, read through the join, one row per review."""
    prediction, rows = answer(world, "reviews", "Display the critic's name, corresponding film title, and stars, "
                                                "sorted by critic name, then by film title.")
    assert prediction["collection"] == "Critic", prediction["pipeline"]
    expected = sorted((c["name"], next(f["title"] for f in FILMS if f["fID"] == r["fID"]), r["stars"])
                      for c in CRITICS for r in c["Review"])
    assert [(r.get("name"), r.get("title"), r.get("stars")) for r in rows] == expected, prediction["pipeline"]


def test_a_field_named_with_the_other_collection_first_is_read_through_the_join(world):
    """'the customer first name for every account': 'customer' partly names the account's own
    `customer_id`, but begins the customers' `customer_first_name`, said whole."""
    prediction, rows = answer(world, "bank", "List the accounts with their account name and customer first name.")
    assert prediction["collection"] == "Accounts", prediction["pipeline"]
    assert sorted(r.get("customer_first_name") for r in rows) == ["Aino", "Aino", "Bram", "Cleo"], prediction["pipeline"]


def test_each_element_is_joined_by_its_own_reference(world):
    """The review's `fID` joins each review to its film (not every film the critic reviewed)."""
    prediction, rows = answer(world, "reviews", "Show the critic name, the title of the film and the stars.")
    assert len(rows) == len(REVIEWS), prediction["pipeline"]


def test_sort_keys_after_then_by_apply_in_order_with_their_own_directions(world):
    prediction, rows = answer(world, "shop", "List the names and prices of goods, sorted by price in descending "
                                             "order, then by name.")
    sort = next(stage["$sort"] for stage in prediction["pipeline"] if "$sort" in stage)
    assert list(sort.items()) == [("price", -1), ("name", 1)], prediction["pipeline"]
    assert [r["name"] for r in rows] == ["desk", "chair", "kettle", "lamp"]


def test_a_listed_phrase_naming_no_field_stays_unresolved(world):
    prediction, _ = answer(world, "reviews", "Show the critic name, the film title and the film budgets.")
    assert prediction["unresolved"], prediction["pipeline"]


def test_one_field_bound_for_two_owners_records_the_second_unresolved(world):
    """'the names of goods and names of their makers', both bound to the goods' `name`: the
    makers' names are placed nowhere, and the reading says so."""
    prediction, _ = answer(world, "shop", "Show the names of goods and names of their makers.")
    assert {"word": "makers", "kind": "output"} in prediction["unresolved"], prediction["unresolved"]
