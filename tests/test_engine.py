"""The engine frame: compile once, typed errors before running, streaming, no copies."""

from __future__ import annotations

import pytest

from nlq.errors import ExecutionError, ForbiddenOperatorError, UnknownOperatorError, UnsupportedOperatorError
from nlq.mql import registry
from nlq.mql.engine import StageContext, aggregate, compile_pipeline


def test_unknown_stage_names_a_suggestion():
    with pytest.raises(UnknownOperatorError, match=r"\$sortby.*did you mean \$sort"):
        compile_pipeline([{"$sortby": {"a": 1}}])
    with pytest.raises(UnknownOperatorError, match="expression operator"):
        compile_pipeline([{"$gt": 1}])


def test_unknown_accumulator_and_expression_operators():
    with pytest.raises(UnknownOperatorError, match=r"\$summ.*did you mean \$sum"):
        compile_pipeline([{"$group": {"_id": None, "n": {"$summ": 1}}}])
    with pytest.raises(UnknownOperatorError):
        compile_pipeline([{"$project": {"a": {"$addd": [1, 2]}}}])


@pytest.mark.parametrize("pipeline", [
    [{"$out": "x"}],
    [{"$merge": {"into": "x"}}],
    [{"$sample": {"size": 1}}],
    [{"$match": {"$where": "true"}}],
    [{"$project": {"r": {"$rand": {}}}}],
    [{"$addFields": {"now": "$$NOW"}}],
    [{"$group": {"_id": None, "a": {"$accumulator": {}}}}],
    [{"$match": {"a": 1}}, {"$facet": {"x": [{"$out": "y"}]}}],
])
def test_forbidden_operators_are_rejected_before_running(pipeline):
    consumed = []

    def docs():
        consumed.append(1)
        yield {"a": 1}
    with pytest.raises(ForbiddenOperatorError):
        aggregate(docs(), pipeline)
    assert consumed == []


def test_known_but_unimplemented_stage_is_unsupported():
    name = registry.unsupported(registry.STAGE)[0]
    with pytest.raises(UnsupportedOperatorError, match=name.replace("$", r"\$")):
        compile_pipeline([{name: {}}])


def test_malformed_pipelines():
    with pytest.raises(ExecutionError):
        compile_pipeline({"$match": {}})
    with pytest.raises(ExecutionError, match="exactly one field"):
        compile_pipeline([{"$match": {}, "$limit": 1}])


def test_compile_once_run_many():
    run = compile_pipeline([{"$match": {"a": {"$gt": 1}}}, {"$project": {"_id": 0, "a": 1}}])
    assert list(run([{"a": 1}, {"a": 2}])) == [{"a": 2}]
    assert list(run([{"a": 3}])) == [{"a": 3}]


def test_unmodified_documents_are_shared_not_copied():
    docs = [{"a": 1, "b": {"c": [1, 2]}}, {"a": 2}]
    out = aggregate(docs, [{"$match": {"a": {"$gte": 1}}}, {"$sort": {"a": -1}}, {"$skip": 0}, {"$limit": 5}])
    assert out[1] is docs[0] and out[0] is docs[1]


def test_modified_documents_share_untouched_subdocuments():
    docs = [{"a": 1, "b": {"c": [1, 2]}}]
    out = aggregate(docs, [{"$set": {"z": 1}}])
    assert out[0] is not docs[0] and out[0]["b"] is docs[0]["b"] and "z" not in docs[0]


def test_match_first_pipeline_streams():
    consumed = []

    def docs():
        for i in range(1000):
            consumed.append(i)
            yield {"i": i}
    out = aggregate(docs(), [{"$match": {"i": {"$mod": [2, 0]}}}, {"$limit": 3}])
    assert out == [{"i": 0}, {"i": 2}, {"i": 4}] and len(consumed) == 5


def test_stage_context_sub_pipelines_see_variables_by_reference():
    ctx = StageContext(lambda name: {"c": [{"v": 1}, {"v": 2}]}.get(name))
    scope = {}
    sub = ctx.compile_pipeline([{"$match": {"$expr": {"$eq": ["$v", "$$want"]}}}], scope)
    ctx.start()
    scope["want"] = 2
    assert list(sub(ctx.catalog("c"))) == [{"v": 2}]
    scope["want"] = 1
    assert list(sub(ctx.catalog("c"))) == [{"v": 1}]
    assert ctx.catalog("missing") == []


def test_every_core_stage_is_registered():
    core = ["$match", "$project", "$addFields", "$set", "$unset", "$group", "$sort", "$skip", "$limit",
            "$unwind", "$count", "$lookup", "$facet", "$replaceRoot", "$replaceWith", "$sortByCount"]
    assert [n for n in core if registry.evaluator(n, registry.STAGE) is None] == []
