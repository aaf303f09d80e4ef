"""`rules` names a field inside an embedded array by its own words when the array's name is
said with them: 'the types of forms' are the forms' `form_type_code`, not the document's
`service_type_code` (whose other word, the collection's, is implied as well)."""

from __future__ import annotations

import pytest

from tests.helpers import rules_answer, rules_world

SERVICES = [{"service_id": 1, "service_type_code": "Health",
             "Forms": [{"form_id": 10, "form_type_code": "Basic"}, {"form_id": 11, "form_type_code": "Complex"}]},
            {"service_id": 2, "service_type_code": "Health", "Forms": [{"form_id": 12, "form_type_code": "Basic"}]},
            {"service_id": 3, "service_type_code": "Welfare", "Forms": []}]


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return rules_world(tmp_path_factory.mktemp("nested"), {"gov": {"Services": SERVICES}})


def test_a_nested_field_is_named_by_a_weak_word_and_its_arrays_name(world):
    prediction, rows = rules_answer(world, "gov", "List all the types of forms.")
    assert sorted(r["form_type_code"] for r in rows) == ["Basic", "Complex"], prediction["pipeline"]


def test_the_documents_own_field_is_named_when_no_array_is(world):
    prediction, rows = rules_answer(world, "gov", "List all the types of services.")
    assert sorted(r["service_type_code"] for r in rows) == ["Health", "Welfare"], prediction["pipeline"]
