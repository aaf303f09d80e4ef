"""nlq.mql.analyze: operators in context, forbidden scan, order sensitivity, unknown names."""

from __future__ import annotations

import pytest

from nlq.errors import ExecutionError, ForbiddenOperatorError, UnknownOperatorError
from nlq.mql.analyze import (check_forbidden, check_operators, forbidden, operators, order_sensitive, unknown_operators,
                             variables)
from nlq.mql.mongosh import parse_query
from nlq.mql.query import Query


def kinds(pipeline) -> list[tuple[str, str]]:
    return [(name, kind) for name, kind, _ in operators(Query("c", pipeline))]


def test_stage_expression_accumulator_and_query_contexts():
    pipeline = [
        {"$match": {"a": {"$gt": 1}, "$or": [{"b": {"$in": [1, 2]}}, {"$expr": {"$eq": ["$c", 1]}}]}},
        {"$group": {"_id": {"$toLower": "$d"}, "n": {"$sum": 1}, "m": {"$max": {"$abs": "$e"}}}},
    ]
    assert kinds(pipeline) == [
        ("$match", "stage"), ("$gt", "query"), ("$or", "query"), ("$in", "query"), ("$expr", "query"),
        ("$eq", "expression"), ("$group", "stage"), ("$toLower", "expression"), ("$sum", "accumulator"),
        ("$max", "accumulator"), ("$abs", "expression"),
    ]


def test_paths_locate_each_occurrence():
    occurrences = operators(Query("c", [{"$project": {"x": {"$add": ["$a", 1]}}}]))
    assert occurrences == [("$project", "stage", (0, "$project")), ("$add", "expression", (0, "$project", "x", "$add"))]


def test_field_names_are_not_operators():
    pipeline = [
        {"$project": {"total": 1, "nested": {"inner": "$x", "deep": {"k": 0}}, "a.$": 1}},
        {"$addFields": {"sum": {"$add": [1, 2]}, "obj": {"k": "$v"}}},
        {"$group": {"_id": "$g", "items": {"$push": {"name": "$n"}}}},
    ]
    assert kinds(pipeline) == [("$project", "stage"), ("$", "projection"), ("$addFields", "stage"),
                               ("$add", "expression"), ("$group", "stage"), ("$push", "accumulator")]


def test_literal_content_is_data():
    pipeline = [{"$project": {"x": {"$literal": {"$sample": 1, "$out": "$$NOW"}}}}]
    assert kinds(pipeline) == [("$project", "stage"), ("$literal", "expression")]
    assert forbidden(Query("c", pipeline)) == []
    assert unknown_operators(Query("c", pipeline)) == []


def test_query_operator_values_are_data():
    # {$eq: {"$x": 1}} compares with a document; $elemMatch holds a query or operators.
    pipeline = [{"$match": {"a": {"$eq": {"b": 1}}, "c": {"$elemMatch": {"d": {"$gte": 2}}},
                            "e": {"$elemMatch": {"$lt": 3}}, "f": {"$not": {"$regex": "x"}}}}]
    assert kinds(pipeline) == [("$match", "stage"), ("$eq", "query"), ("$elemMatch", "query"),
                               ("$gte", "query"), ("$elemMatch", "query"), ("$lt", "query"),
                               ("$not", "query"), ("$regex", "query")]


def test_window_and_sub_pipelines():
    pipeline = [
        {"$setWindowFields": {"partitionBy": "$p", "sortBy": {"t": 1},
                              "output": {"r": {"$rank": {}}, "s": {"$sum": "$v", "window": {"documents": ["unbounded", "current"]}}}}},
        {"$lookup": {"from": "o", "let": {"k": "$id"}, "pipeline": [{"$match": {"$expr": {"$eq": ["$k2", "$$k"]}}}], "as": "j"}},
        {"$facet": {"a": [{"$count": "n"}], "b": [{"$sortByCount": "$x"}]}},
    ]
    assert kinds(pipeline) == [
        ("$setWindowFields", "stage"), ("$rank", "window"), ("$sum", "window"), ("$lookup", "stage"),
        ("$match", "stage"), ("$expr", "query"), ("$eq", "expression"), ("$facet", "stage"),
        ("$count", "stage"), ("$sortByCount", "stage")]
    assert unknown_operators(Query("c", pipeline)) == []


def test_variable_scoping():
    pipeline = [
        {"$project": {"x": {"$map": {"input": "$a", "as": "el", "in": {"$add": ["$$el", "$$ROOT.b"]}}},
                      "y": {"$let": {"vars": {"v": 1}, "in": "$$v"}},
                      "z": "$$el",
                      "r": {"$reduce": {"input": "$a", "initialValue": 0, "in": {"$add": ["$$value", "$$this"]}}}}},
    ]
    refs = [(name, bound) for name, bound, _ in variables(Query("c", pipeline))]
    assert refs == [("$$el", True), ("$$ROOT", True), ("$$v", True), ("$$el", False),
                    ("$$value", True), ("$$this", True)]


@pytest.mark.parametrize("pipeline, expected", [
    ([{"$out": "x"}], ["$out"]),
    ([{"$merge": {"into": "x"}}], ["$merge"]),
    ([{"$sample": {"size": 3}}], ["$sample"]),
    ([{"$match": {"$where": "this.a > 1"}}], ["$where"]),
    ([{"$match": {"$expr": {"$lt": [{"$rand": {}}, 0.5]}}}], ["$rand"]),
    ([{"$addFields": {"now": "$$NOW"}}], ["$$NOW"]),
    ([{"$addFields": {"y": "$$NOW.year"}}], ["$$NOW"]),
    ([{"$addFields": {"t": "$$CLUSTER_TIME"}}], ["$$CLUSTER_TIME"]),
    ([{"$match": {"d": {"$lt": "$$NOW"}}}], ["$$NOW"]),
    ([{"$facet": {"a": [{"$group": {"_id": None, "x": {"$accumulator": {"init": "function() {}"}}}}]}}], ["$accumulator"]),
    ([{"$lookup": {"from": "o", "pipeline": [{"$project": {"f": {"$function": {"body": "", "args": [], "lang": "js"}}}}], "as": "j"}}], ["$function"]),
    ([{"$currentOp": {}}, {"$collStats": {}}], ["$currentOp", "$collStats"]),
    ([{"$project": {"a": 1}}, {"$sort": {"a": 1}}], []),
    ([{"$project": {"n": "$$NOWHERE"}}], []),
])
def test_forbidden_at_any_depth(pipeline, expected):
    assert forbidden(Query("c", pipeline)) == expected


@pytest.mark.parametrize("pipeline, expected", [
    ([{"$sort": {"a": 1}}], True),
    ([{"$match": {}}, {"$limit": 3}], True),
    ([{"$skip": 1}], True),
    ([{"$setWindowFields": {"output": {}}}], True),
    ([{"$match": {"a": 1}}, {"$group": {"_id": "$a"}}], False),
    ([{"$facet": {"x": [{"$sort": {"a": 1}}]}}], False),  # only root stages count (SPEC §6)
    ([{"$lookup": {"from": "o", "pipeline": [{"$limit": 1}], "as": "j"}}], False),
])
def test_order_sensitive_is_spec_6_literally(pipeline, expected):
    assert order_sensitive(Query("c", pipeline)) is expected


def test_order_sensitive_of_lowered_find():
    assert order_sensitive(parse_query("db.c.find({}).sort({a: 1})"))
    assert not order_sensitive(parse_query("db.c.find({a: 1}, {a: 1})"))


def test_unknown_operators_with_suggestions():
    pipeline = [{"$sortby": {"a": 1}},
                {"$project": {"a": {"$match": 1}, "b": {"$toLowr": "$x"}}},
                {"$group": {"_id": None, "x": {"$summ": 1}}},
                {"$match": {"a": {"$regx": "x"}}}]
    messages = unknown_operators(Query("c", pipeline))
    assert messages == [
        "unknown operator $sortby — did you mean $sortByCount? (as a stage at 0.$sortby)",  # the issue's example
        "$match is not an expression operator (it is a stage operator; at 1.$project.a.$match)",
        "unknown operator $toLowr — did you mean $toLower? (as an expression operator at 1.$project.b.$toLowr)",
        "unknown operator $summ — did you mean $sum? (as an accumulator at 2.$group.x.$summ)",
        "unknown operator $regx — did you mean $regex? (as a query operator at 3.$match.a.$regx)",
    ]
    with pytest.raises(UnknownOperatorError, match=r"\$sortby"):
        check_operators(Query("c", pipeline))


def test_accumulators_are_valid_window_functions():
    q = Query("c", [{"$setWindowFields": {"output": {"a": {"$avg": "$x"}, "b": {"$shift": {"output": "$x", "by": 1}}}}}])
    assert unknown_operators(q) == []
    check_operators(q)


def test_check_forbidden_names_every_operator_in_one_message():
    check_forbidden([{"$match": {"a": 1}}])
    with pytest.raises(ForbiddenOperatorError) as info:
        check_forbidden(Query("c", [{"$sample": {"size": 1}}, {"$addFields": {"t": "$$NOW"}}, {"$out": "x"}]))
    assert str(info.value) == ("$sample, $$NOW, $out are forbidden (nlq runs only read-only, deterministic queries); "
                               "never executed")


def test_check_forbidden_on_a_pipeline_too_deep_to_walk():
    deep = {"a": 1}
    for _ in range(5000):
        deep = {"$and": [deep]}
    with pytest.raises(ExecutionError, match="nested too deeply"):
        check_forbidden([{"$match": deep}])


def test_accepts_dicts_and_bare_pipelines():
    assert forbidden({"collection": "c", "pipeline": [{"$out": "x"}]}) == ["$out"]
    assert order_sensitive([{"$limit": 1}])


def test_get_field_names_are_data_not_operators():
    pipeline = [{"$project": {"p": {"$getField": {"field": {"$literal": "$price"}, "input": "$$ROOT"}},
                              "q": {"$getField": "plain"}}}]
    assert kinds(pipeline) == [("$project", "stage"), ("$getField", "expression"), ("$literal", "expression"),
                               ("$$ROOT", "variable"), ("$getField", "expression")]
    assert unknown_operators(Query("c", pipeline)) == []


def test_a_pipeline_the_engine_can_run_is_not_too_deep_to_check():
    from nlq.errors import QueryTooDeep
    from nlq.mql import engine

    expression, query = "$a", {"a": 1}
    for _ in range(48):  # 98 levels of pipeline: within MongoDB's 100
        expression, query = {"$add": [expression, 1]}, {"$and": [query]}
    for pipeline in ([{"$project": {"x": expression}}], [{"$match": query}]):
        check_forbidden(pipeline)
        assert len(engine.aggregate([{"a": 1}], pipeline)) == 1
    for _ in range(100):  # beyond MongoDB's limit: checked, then refused before any recursive walk
        expression, query = {"$add": [expression, 1]}, {"$and": [query]}
    for pipeline in ([{"$project": {"x": expression}}], [{"$match": query}]):
        check_forbidden(pipeline)
        with pytest.raises(QueryTooDeep, match="nested more than 100 levels"):
            engine.aggregate([{"a": 1}], pipeline)
