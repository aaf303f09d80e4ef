"""The operator declarations are the single source of truth, and they are complete.

Every stage declares its argument and its output; the fields the engine
outputs and the variables the conformance pipelines use are all known to the
scoped walk from those declarations alone; and a toy operator declared in one
place is known to the parser, the engine, the walk, the gate and the
forbidden scan.
"""

from __future__ import annotations

import json

import pytest

from nlq import gate
from nlq.errors import ForbiddenOperatorError, UnknownOperatorError
from nlq.index import index_documents
from nlq.io import from_extjson
from nlq.mql import analyze, engine, grammar, registry, scope
from nlq.mql.expressions import compile_expression
from nlq.mql.grammar import ADD, DATA, EXPR, NAME, Bound, Keys, Value
from nlq.mql.mongosh import parse_query
from nlq.mql.query import Query
from nlq.mql.registry import EXPRESSION, STAGE
from nlq.mql.stages.base import set_nested
from tests.test_conformance import CASES, case_pipeline, run_case

RUNNING = [(family, case) for family, case in CASES if "error" not in case]


def _declarations():
    for name in registry.names():
        op = registry.get(name)
        for kind, term in op.args.items():
            yield name, kind, term


def test_every_stage_declares_its_argument_and_output():
    undeclared = [n for n in registry.names(STAGE) if STAGE not in registry.get(n).args or registry.get(n).output is None]
    assert undeclared == []


def test_binding_and_naming_keys_are_declared_as_such():
    """A key called `as`, `let`, `vars`, `includeArrayIndex`... binds a variable or names a field: its
    declaration says so (a `let` walked as a plain expression would leave `$$x` unbound)."""
    naming = {"includeArrayIndex", "depthField", "distanceField", "includeLocs"}
    for name, kind, term in _declarations():
        for keys in (t for t in grammar.terms(term) if isinstance(t, Keys)):
            binders = [t for t in keys.keys.values() if isinstance(t, Bound) or
                       (isinstance(t, Value) and isinstance(t.term, Bound))]
            for key, sub in keys.keys.items():
                if key in ("let", "vars"):
                    assert isinstance(sub, grammar.Vars), (name, kind, key)
                elif key == "as":
                    named_by_sibling = any((b.term if isinstance(b, Value) else b).name_key == "as" for b in binders)
                    assert sub in (grammar.JOINED, NAME) or (sub is DATA and named_by_sibling), (name, kind, key)
                elif key in naming:
                    assert sub in (NAME, grammar.JOINED_NAME), (name, kind, key)


def test_the_derived_properties_name_the_binding_and_introducing_operators():
    binding = {n for n in registry.names() if registry.get(n).binds_variables}
    assert binding == {"$let", "$map", "$filter", "$reduce", "$lookup", "$merge"}
    introducing = {n for n in registry.names(STAGE) if registry.get(n).introduces_fields}
    assert {"$group", "$project", "$addFields", "$set", "$lookup", "$graphLookup", "$unwind", "$count", "$facet",
            "$bucket", "$bucketAuto", "$sortByCount", "$setWindowFields", "$unionWith", "$replaceRoot",
            "$replaceWith"} <= introducing
    assert not {"$match", "$sort", "$limit", "$skip", "$unset", "$redact"} & introducing


def _paths(value, prefix=()):
    """Every path of a result document (through arrays); a key with a dot or a `$` is no path."""
    if isinstance(value, dict):
        for key, sub in value.items():
            if "." in key or key.startswith("$"):
                continue
            yield prefix + (key,)
            yield from _paths(sub, prefix + (key,))
    elif isinstance(value, list):
        for sub in value:
            yield from _paths(sub, prefix)


def _walk_case(case):
    docs, others = from_extjson(case["docs"]), from_extjson(case.get("collections", {}))
    schema = gate.prepare(index_documents("conformance", {"input": docs, **others})).schema
    return scope.walk(Query("input", case_pipeline(case)), schema)


@pytest.mark.parametrize("family, case", RUNNING, ids=[f"{f}:{c['id']}" for f, c in RUNNING])
def test_every_field_the_engine_outputs_is_known_to_the_walk(family, case):
    """A stage that introduces a field its declaration does not name would fail here: the walk,
    knowing the input collection's paths, would say the field does not exist after the pipeline."""
    walked = _walk_case(case)
    missing = sorted({".".join(p) for row in run_case(case) for p in _paths(row)
                      if walked.output.resolve(list(p)) is None})
    assert missing == [], case["_where"]


@pytest.mark.parametrize("family, case", RUNNING, ids=[f"{f}:{c['id']}" for f, c in RUNNING])
def test_every_variable_the_engine_binds_is_bound_in_the_walk(family, case):
    """An operator that binds `$$name` without declaring it would leave the name unbound here."""
    unbound = [(name, where) for name, bound, where in analyze.variables(case_pipeline(case))
               if not bound]
    assert unbound == [], case["_where"]


def test_the_conformance_cases_run_every_implemented_stage_and_binding_operator():
    """So the two checks above cover every stage and every binding operator the engine has."""
    used = {name for _, case in RUNNING for name, _, _ in analyze.operators(case_pipeline(case))}
    implemented = set(registry.supported(STAGE))
    binding = {n for n in registry.supported(EXPRESSION) if registry.get(n).binds_variables}
    assert implemented - used == set()
    assert binding - used == set()


# -- adding an operator: one declaration (and its evaluator) -----------------------------------

@pytest.fixture
def toy_registry(monkeypatch):
    """The registry with two toy operators declared, removed again after the test."""
    registry.load()
    monkeypatch.setattr(registry, "_TABLE", dict(registry._TABLE))
    # `{$toyTag: {value: <expression>, as: <new field>}}` and
    # `{$toyApply: {input: <expression>, as: <variable>, in: <expression over $$variable>}}`
    registry.declare(STAGE, "$toyTag", args=Keys({"value": EXPR, "as": NAME}), output=ADD)
    registry.declare(EXPRESSION, "$toyApply", args=Keys({"input": Bound(EXPR, into=("in",)), "as": DATA,
                                                        "in": Value(EXPR)}))

    @registry.implements(STAGE, "$toyTag")
    def compile_toy_tag(spec, ctx):
        value, name = compile_expression(spec["value"]), tuple(spec["as"].split("."))
        return lambda stream: (set_nested(doc, name, value(ctx.vars(doc))) for doc in stream)

    @registry.implements(EXPRESSION, "$toyApply")
    def compile_toy_apply(args):
        input_, body, name = compile_expression(args["input"]), compile_expression(args["in"]), args["as"]
        return lambda vars: body({**vars, name: input_(vars)})

    return registry


TOY = [{"$toyTag": {"value": {"$toyApply": {"input": "$item", "as": "it", "in": {"$concat": ["$$it.name", "!"]}}},
                    "as": "tag"}},
       {"$match": {"tag": "pen!"}}]


def test_a_toy_operator_declared_once_is_known_everywhere(toy_registry):
    docs = [{"_id": 1, "item": {"name": "pen"}}, {"_id": 2, "item": {"name": "ink"}}]
    # the parser and the analyzer
    query = parse_query("db.shop.aggregate(" + json.dumps(TOY) + ")")
    assert analyze.unknown_operators(query) == []
    analyze.check_operators(query)
    assert [(n, k) for n, k, _ in analyze.operators(query)] == [
        ("$toyTag", "stage"), ("$toyApply", "expression"), ("$concat", "expression"), ("$match", "stage")]
    assert [(n, bound) for n, bound, _ in analyze.variables(query)] == [("$$it", True)]
    # the engine
    assert engine.aggregate(docs, query.pipeline) == [{"_id": 1, "item": {"name": "pen"}, "tag": "pen!"}]
    # the scoped walk and the gate: the new field exists after the stage, the bound variable has the input's shape
    index = index_documents("toy", {"shop": docs})
    assert gate.check_path(query, index) == []
    typo = [{"$toyTag": {"value": {"$toyApply": {"input": "$item", "as": "it", "in": "$$it.nmae"}}, "as": "tag"}},
            {"$match": {"tga": "pen!"}}]
    assert [v.path for v in gate.check_path(Query("shop", typo), index)] == ["$$it.nmae", "tga"]
    # the forbidden scan sees into its argument
    assert analyze.forbidden([{"$toyTag": {"value": {"$rand": {}}, "as": "r"}}]) == ["$rand"]


def test_a_toy_operator_declared_forbidden_is_never_run(toy_registry):
    toy_registry.declare(STAGE, "$toyWrite", args=DATA, output=grammar.OPEN, forbidden=True)
    with pytest.raises(ForbiddenOperatorError, match=r"\$toyWrite is forbidden"):
        engine.aggregate([{"a": 1}], [{"$toyWrite": "elsewhere"}])


def test_an_undeclared_operator_is_unknown(toy_registry):
    with pytest.raises(UnknownOperatorError, match=r"\$toyUndeclared"):
        analyze.check_operators([{"$toyUndeclared": {}}])
