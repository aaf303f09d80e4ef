"""Execution feedback: concise errors, forbidden operators, empty-result bisection, leaked ids,
output contracts (issue 12)."""

from __future__ import annotations

import orjson
import pytest

from nlq import feedback
from nlq.backends import EmbeddedBackend
from nlq.mql.query import Query
from nlq.mql.values import ObjectId
from tests.gate_mutants import bisection_localization
from tests.golds import fixture_golds, tend_v1_golds

DOCS = [{"_id": i, "lab": "Central Lab", "status": ["open", "closed"][i % 2],
         "values_by_year": {str(2000 + i % 3): {"count": i}}} for i in range(12)]


@pytest.fixture(scope="module")
def backend(tmp_path_factory):
    root = tmp_path_factory.mktemp("world")
    (root / "w.json").write_bytes(orjson.dumps({"labs": DOCS, "none": [], "owners": [{"lab": "East Lab", "owner": "x"}]}))
    return EmbeddedBackend(root)


def diagnose(backend, pipeline, question="", collection="labs", **options):
    query = Query(collection, pipeline)
    return feedback.diagnose(query, feedback.execute(query, backend, "w"), backend, "w", question=question, **options)


def test_a_good_result_has_no_feedback(backend):
    assert diagnose(backend, [{"$match": {"status": "open"}}, {"$project": {"_id": 0, "lab": 1}}]) == []


def test_execution_error_is_concise(backend):
    [v] = diagnose(backend, [{"$project": {"x": {"$add": ["$lab", 1]}}}])
    assert v.check == "exec" and v.message.startswith("the pipeline failed: ") and "\n" not in v.message


def test_forbidden_operator(backend):
    [v] = diagnose(backend, [{"$sample": {"size": 1}}])
    assert v.check == "forbidden" and "$sample" in v.message


def test_empty_result_names_the_collapsing_stage_and_the_values_there(backend):
    [v] = diagnose(backend, [{"$project": {"status": 1}}, {"$match": {"status": "Open"}}, {"$limit": 3}])
    assert (v.check, v.stage) == ("empty", 1)
    assert "stage 1 ($match) drops all 12 documents" in v.message
    assert "values at 'status' there: 'closed', 'open'" in v.message


def test_empty_result_through_a_missing_map_key_shows_the_keys(backend):
    [v] = diagnose(backend, [{"$match": {"values_by_year.1999.count": {"$gt": 0}}}])
    assert v.stage == 0
    assert "'values_by_year' has keys: '2000', '2001', '2002'" in v.message


def test_empty_collection(backend):
    [v] = diagnose(backend, [{"$match": {"a": 1}}], collection="none")
    assert v.check == "empty" and v.stage is None and "holds no documents" in v.message


def test_an_or_branch_that_matches_nothing_is_named(backend):
    pipeline = [{"$match": {"$or": [{"status": "open"}, {"status": "Closed"}]}},
                {"$group": {"_id": "$status"}}, {"$match": {"_id": "closed"}}]
    [v] = diagnose(backend, pipeline)
    assert v.stage == 0 and "'Closed' at 'status' matches no document" in v.message


def test_an_unwitnessed_join_edge_explains_an_empty_result(backend):
    found = diagnose(backend, [{"$lookup": {"from": "owners", "localField": "lab", "foreignField": "lab", "as": "o"}},
                               {"$unwind": "$o"}])
    assert [v.check for v in found] == ["empty", "join"]
    assert found[0].stage == 1
    assert "lab -> owners.lab is not witnessed" in found[1].message and "'Central Lab'" in found[1].message


def test_a_witnessed_join_edge_is_silent(backend):
    query = Query("owners", [{"$lookup": {"from": "labs", "localField": "owner", "foreignField": "lab", "as": "o"}}])
    assert feedback.join_probe(query, backend, "w") != []
    query = Query("labs", [{"$lookup": {"from": "labs", "localField": "lab", "foreignField": "lab", "as": "o"}}])
    assert feedback.join_probe(query, backend, "w") == []


class ProbeFails:
    """The backend, except that a query on `owners` (the join probe's) runs out of time."""

    def __init__(self, backend):
        self.backend = backend

    def aggregate(self, db, collection, pipeline, **kw):
        from nlq.errors import QueryTimeout

        if collection == "owners":
            raise QueryTimeout("query exceeded the time limit of 0.1 s")
        return self.backend.aggregate(db, collection, pipeline, **kw)


@pytest.mark.parametrize("fail_closed", [False, True])
def test_a_join_probe_that_cannot_run_fails_open_unless_fail_closed(backend, fail_closed):
    found = diagnose(ProbeFails(backend), [{"$lookup": {"from": "owners", "localField": "lab", "foreignField": "lab",
                                                        "as": "o"}}, {"$unwind": "$o"}], fail_closed=fail_closed)
    assert [v.check for v in found] == (["empty", "join"] if fail_closed else ["empty"])
    if fail_closed:
        assert found[1].message == ("stage 0 ($lookup): the join edge lab -> owners.lab could not be probed: "
                                    "query exceeded the time limit of 0.1 s")


def test_without_bisection_empty_is_just_reported(backend):
    [v] = diagnose(backend, [{"$match": {"status": "x"}}], bisection=False)
    assert (v.check, v.stage, v.message) == ("empty", None, "the pipeline returns no rows")


def test_leaked_synthetic_id():
    rows = [{"_id": ObjectId("64b7f0f0f0f0f0f0f0f0f0f0"), "name": "x"}]
    assert feedback.leaked_id(rows, "List the names").check == "leaked_id"
    assert feedback.leaked_id(rows, "List the ids and names") is None
    assert feedback.leaked_id([{"_id": "a", "n": 1}], "List the names") is None


@pytest.mark.parametrize("rows, contract, problems", [
    ([{"a": 1, "b": 2}], {"columns": ["a", "b"], "rows": "one", "order": "none"}, 0),
    ([{"a": 1, "b": 2}], {"columns": ["a"], "rows": "one"}, 1),
    ([{"a": 1}, {"a": 2}], {"columns": ["a"], "rows": "one"}, 1),
    ([], {"rows": "few"}, 1),
    ([{"a": 1}], {"rows": "many"}, 1),
    ([{"a": 2}, {"a": 1}], {"order": "by a desc"}, 0),
    ([{"a": 1}, {"a": 2}], {"order": "by a desc"}, 1),
    ([{"a": 1}, {"a": 2}], {"order": "by b asc"}, 1),
])
def test_contract(rows, contract, problems):
    assert len(feedback.check_contract(rows, contract)) == problems


def test_contract_violations_come_after_execution(backend):
    found = diagnose(backend, [{"$project": {"_id": 0, "lab": 1}}], contract={"columns": ["lab"], "rows": "one"})
    assert [v.check for v in found] == ["contract"]


@pytest.mark.parametrize("name", ["fixtures", "tend-v1"])
def test_bisection_localizes_mutated_match_literals(name, request):
    if name == "tend-v1":
        request.getfixturevalue("tend_v1")
    corpus = fixture_golds() if name == "fixtures" else tend_v1_golds()
    hit, total, missed = bisection_localization(corpus)
    assert total >= 50
    assert hit / total >= 0.95, missed[:5]
