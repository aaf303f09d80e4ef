"""Literals the sampled grounding index missed are asked of the database (nlq.probe, `nlq ask`)."""

import pytest

from nlq import ask, probe
from nlq.backends import EmbeddedBackend
from nlq.errors import QueryTimeout
from tests.helpers import rules_world

STORES = 1200  # more than the index samples (400): most cities are not in it


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


@pytest.fixture
def world(tmp_path):
    docs = [{"store_id": i, "address": {"city": f"Town{i:04d}", "state": "Ohio"}} for i in range(STORES)]
    backend, indexes = rules_world(tmp_path, {"retail": {"stores": docs}})
    return backend, indexes["retail"]


def unsampled_city(index: dict) -> str:
    """A stored city the index's sample does not hold (title case: 'Town0042')."""
    return next(f"Town{i:04d}" for i in range(STORES) if f"town{i:04d}" not in index["values"])


def test_probe_finds_a_value_the_sample_missed(world):
    backend, index = world
    city = unsampled_city(index)
    found = probe.probe(backend, index, [city.lower()])
    assert [(m["stored"], m["path"], m["frequency"], m["probed"]) for m in found[city.lower()]] == [
        (city, "address.city", 1, True)]
    assert probe.probe(backend, index, ["Atlantis"]) == {}


def test_ask_answers_with_the_probed_value_and_abstains_without(world):
    backend, index = world
    city = unsampled_city(index)
    question = f"How many stores are in {city}?"
    warned = []
    answered = ask.run(question, backend, "retail", warn=warned.append)
    assert answered["execution"]["rows"] == [{"count": 1}]
    assert warned == [f'"{city}" is not in the index\'s sample: found in the database as '
                      "stores.address.city (1 document)"]
    assert answered["explain"]["probed"][0]["stored"] == city
    assert "found in the database" in ask.explain_text(answered)
    assert answered["prediction"]["confidence"] <= probe.MAX_CONFIDENCE < 0.8
    unprobed = ask.run(question, backend, "retail", probe_values=False)
    assert unprobed["failure"]["type"] == "abstained"


def test_a_lower_case_value_left_out_by_the_reading_is_probed_too(world):
    backend, index = world
    city = unsampled_city(index).lower()
    answered = ask.run(f"how many stores are in {city}?", backend, "retail")
    assert answered["execution"]["rows"] == [{"count": 1}]


class Counting:
    """A backend that counts the queries it is asked and can fail them."""

    def __init__(self, inner, fail=False):
        self.inner, self.fail, self.queries = inner, fail, 0

    def aggregate(self, db, coll, pipeline, **limits):
        self.queries += 1
        if self.fail:
            raise QueryTimeout("probe took too long")
        return self.inner.aggregate(db, coll, pipeline, **limits)


def test_a_collection_read_whole_is_not_probed(tmp_path):
    backend, indexes = rules_world(tmp_path, {"small": {"stores": [{"city": "Akron"}, {"city": "Kent"}]}})
    counting = Counting(backend)
    assert probe.probe(counting, indexes["small"], ["Dayton"]) == {}
    assert counting.queries == 0


def test_a_failing_probe_finds_nothing_and_raises_nothing(world):
    backend, index = world
    failing = Counting(backend, fail=True)
    assert probe.probe(failing, index, [unsampled_city(index)]) == {}
    assert failing.queries == 1  # the collection is given up after its first failure


@pytest.mark.parametrize("question, literals", [
    ("Which stores are in Duluth?", ["Duluth"]),
    ("List the stores in Duluth, MN.", ["Duluth", "MN"]),
    ('How many stores are named "Corner Shop"?', ["Corner Shop"]),
    ("Which Stores are in Ohio?", ["Stores", "Ohio"]),
])
def test_literals_are_quoted_title_case_and_codes_but_not_the_opening_word(question, literals):
    assert probe.literals(question) == literals


def test_literals_leave_out_what_a_witness_matched_and_are_bounded():
    witnessed = [{"term": "Ohio", "matches": [{"stored": "Ohio"}]}]
    assert probe.literals("Which stores are in Ohio?", witnessed) == []
    many = [f"w{i}" for i in range(20)]
    assert len(probe.literals("", (), many)) == probe.MAX_TERMS


def test_probe_keeps_the_stored_form_of_array_elements(tmp_path):
    docs = [{"tags": [f"tag{i}", "common"]} for i in range(900)]
    backend, indexes = rules_world(tmp_path, {"blog": {"posts": docs}})
    index = indexes["blog"]
    tag = next(f"Tag{i}" for i in range(900) if f"tag{i}" not in index["values"])
    found = probe.probe(backend, index, [tag])
    assert [(m["stored"], m["path"]) for m in found[tag.lower()]] == [(tag.lower(), "tags[]")]


def test_the_embedded_backend_is_untouched(world):
    backend, index = world
    assert isinstance(backend, EmbeddedBackend)
    before = backend.count("retail", "stores")
    probe.probe(backend, index, [unsampled_city(index)])
    assert backend.count("retail", "stores") == before
