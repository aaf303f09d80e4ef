"""nlq.mql.mongosh: mongosh literals, surface forms, lowering and errors."""

from __future__ import annotations

import datetime as dt
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nlq.errors import ParseError
from nlq.mql.mongosh import parse_query
from nlq.mql.values import UTC, Decimal128, Int64, MaxKey, MinKey, ObjectId, Regex, Timestamp


def value(text: str):
    """The value of `text` as the filter argument of a find()."""
    return parse_query(f"db.c.find({{v: {text}}})").pipeline[0]["$match"]["v"]


# --- literals -----------------------------------------------------------------

@pytest.mark.parametrize("text, expected", [
    ("1", 1), ("-1", -1), ("+3", 3), ("1.5", 1.5), ("1.", 1.0), (".5", 0.5), ("1e3", 1000.0),
    ("2E-2", 0.02), ("0x1F", 31), ("0o17", 15), ("0b101", 5), ("-0x10", -16),
    ("9223372036854775807", 9223372036854775807), ("9223372036854775808", 9.223372036854775808e18),
    ("'a'", "a"), ('"b"', "b"), (r"'it\'s'", "it's"), (r'"q\"q"', 'q"q'), (r"'\n\t\\'", "\n\t\\"),
    (r"'\x41\u0042\u{43}'", "ABC"), (r"'\uD83D\uDE00'", "\U0001F600"), ("'\\\nx'", "x"),
    ("true", True), ("false", False), ("null", None), ("undefined", None),
    ("[1, 2,]", [1, 2]), ("{a: 1, 'b': 2, \"c.d\": 3, $e: 4, 5: 6,}", {"a": 1, "b": 2, "c.d": 3, "$e": 4, "5": 6}),
    ("{true: 1, new: 2}", {"true": 1, "new": 2}),
    ('ObjectId("5f1d7a3e2c4b1a0012345678")', ObjectId("5f1d7a3e2c4b1a0012345678")),
    ('new ObjectId("5f1d7a3e2c4b1a0012345678")', ObjectId("5f1d7a3e2c4b1a0012345678")),
    ('NumberInt(5)', 5), ('NumberInt("7")', 7), ('NumberLong(5)', Int64(5)),
    ('NumberLong("9007199254740993")', Int64(9007199254740993)),
    ('NumberDecimal("1.10")', Decimal128("1.10")), ('Timestamp(5, 2)', Timestamp(5, 2)),
    ('MinKey()', MinKey()), ('MaxKey()', MaxKey()),
])
def test_literals(text, expected):
    got = value(text)
    assert got == expected and type(got) is type(expected)


def test_special_floats():
    assert value("Infinity") == math.inf and value("-Infinity") == -math.inf
    assert math.isnan(value("NaN"))


@pytest.mark.parametrize("text, expected", [
    ('ISODate("2020-01-02")', dt.datetime(2020, 1, 2, tzinfo=UTC)),
    ('ISODate("2020-01-02T03:04:05Z")', dt.datetime(2020, 1, 2, 3, 4, 5, tzinfo=UTC)),
    ('ISODate("2020-01-02T03:04:05.123+0000")', dt.datetime(2020, 1, 2, 3, 4, 5, 123000, tzinfo=UTC)),
    ('ISODate("2020-01-02T05:04:05+02:00")', dt.datetime(2020, 1, 2, 3, 4, 5, tzinfo=UTC)),
    ('new Date("2020-01-02T03:04:05")', dt.datetime(2020, 1, 2, 3, 4, 5, tzinfo=UTC)),
    ('new Date(0)', dt.datetime(1970, 1, 1, tzinfo=UTC)),
    ('new Date(86400000)', dt.datetime(1970, 1, 2, tzinfo=UTC)),
])
def test_dates_are_utc_aware(text, expected):
    got = value(text)
    assert got == expected and got.tzinfo is not None


def test_regex_literals():
    assert value("/^ab+c$/i") == Regex("^ab+c$", "i")
    assert value(r"/a\/b[/]/") == Regex(r"a\/b[/]", "")
    assert value("/x/mig") == Regex("x", "im")  # JavaScript-only g is dropped, flags sorted
    assert value('RegExp("a/b", "i")') == Regex("a/b", "i")


def test_comments_and_whitespace():
    text = """// leading comment
    db.c.aggregate([ /* block
    comment */ {$match: {a: 1}}, // trailing
    ]);"""
    assert parse_query(text).pipeline == [{"$match": {"a": 1}}]


def test_integers_stay_int_floats_stay_float():
    m = value("{a: 1, b: 1.0, c: 1e0}")
    assert type(m["a"]) is int and type(m["b"]) is float and type(m["c"]) is float


# --- surface forms --------------------------------------------------------------

@pytest.mark.parametrize("text", [
    'db.users.aggregate([{$match: {a: 1}}])',
    'db.getCollection("users").aggregate([{$match: {a: 1}}])',
    "db['users'].aggregate([{$match: {a: 1}}]);",
    'db.users.aggregate([{$match: {a: 1}}], {allowDiskUse: true})',
    'db.users.aggregate({$match: {a: 1}})',
    'db.users.aggregate([{$match: {a: 1}}]).toArray()',
    '{"collection": "users", "pipeline": [{"$match": {"a": 1}}]}',
    "{collection: 'users', pipeline: [{$match: {a: 1}}]}",
])
def test_aggregate_forms(text):
    q = parse_query(text)
    assert (q.collection, q.pipeline) == ("users", [{"$match": {"a": 1}}])


def test_json_form_as_dict_with_extended_json():
    q = parse_query({"collection": "c", "pipeline": [{"$match": {"_id": {"$oid": "5f1d7a3e2c4b1a0012345678"}}}]})
    assert q.pipeline == [{"$match": {"_id": ObjectId("5f1d7a3e2c4b1a0012345678")}}] and q.form == "json"


def test_dotted_collection_name():
    assert parse_query("db.system.users.find()").collection == "system.users"


def test_find_lowering_applies_sort_skip_limit_in_mongodb_order():
    q = parse_query("db.c.find({a: 1}, {b: 1}).limit(5).skip(2).sort({b: -1})")
    assert q.form == "find"
    assert q.pipeline == [{"$match": {"a": 1}}, {"$sort": {"b": -1}}, {"$skip": 2}, {"$limit": 5},
                          {"$project": {"b": 1}}]


def test_find_empty_parts_omitted():
    assert parse_query("db.c.find()").pipeline == []
    assert parse_query("db.c.find({}).limit(0)").pipeline == []
    assert parse_query("db.c.find({}).limit(-3)").pipeline == [{"$limit": 3}]
    assert parse_query("db.c.find({}).projection({a: 1})").pipeline == [{"$project": {"a": 1}}]


def test_find_one():
    q = parse_query("db.c.findOne({a: 1})")
    assert q.pipeline == [{"$match": {"a": 1}}, {"$limit": 1}] and q.form == "findOne"


COUNT_TAIL = [{"$facet": {"count": [{"$count": "count"}]}},
              {"$project": {"count": {"$ifNull": [{"$arrayElemAt": ["$count.count", 0]}, 0]}}}]


@pytest.mark.parametrize("text, head, form", [
    ("db.c.countDocuments({a: 1})", [{"$match": {"a": 1}}], "countDocuments"),
    ("db.c.countDocuments({})", [], "countDocuments"),
    ("db.c.count({a: 1})", [{"$match": {"a": 1}}], "count"),
    ("db.c.find({a: 1}).count()", [{"$match": {"a": 1}}], "count"),
    ("db.c.find({a: 1}).sort({a: 1}).limit(2).count()", [{"$match": {"a": 1}}], "count"),
    ("db.c.find({a: 1}).skip(1).limit(2).count(true)", [{"$match": {"a": 1}}, {"$skip": 1}, {"$limit": 2}], "count"),
    ("db.c.countDocuments({a: 1}, {limit: 4})", [{"$match": {"a": 1}}, {"$limit": 4}], "countDocuments"),
    ("db.c.estimatedDocumentCount()", [], "estimatedDocumentCount"),
])
def test_count_lowering(text, head, form):
    q = parse_query(text)
    assert q.pipeline == head + COUNT_TAIL and q.form == form


def test_distinct_lowering():
    q = parse_query('db.c.distinct("a.b", {x: 1})')
    assert q.form == "distinct"
    assert q.pipeline == [
        {"$match": {"x": 1}},
        {"$project": {"_id": 0, "value": "$a"}},
        {"$unwind": {"path": "$value", "preserveNullAndEmptyArrays": True}},
        {"$project": {"value": "$value.b"}},
        {"$unwind": {"path": "$value", "preserveNullAndEmptyArrays": True}},
        {"$match": {"value": {"$exists": True}}},
        {"$group": {"_id": "$value"}},
        {"$project": {"_id": 0, "b": "$_id"}},
    ]
    assert parse_query('db.c.distinct("_id")').pipeline[-1] == {"$group": {"_id": "$value"}}


# --- errors ---------------------------------------------------------------------

@pytest.mark.parametrize("text, fragment", [
    ("db.c.find({a: x})", "JavaScript variable"),
    ("db.c.find({a: 1 + 2})", "arithmetic"),
    ("db.c.find({a: 2 * 3})", "not part of a static query literal"),
    ("db.c.find({$where: function() { return true }})", "JavaScript code"),
    ("db.c.find({a: () => 1})", "arrow functions"),
    ("db.c.find({a: x => 1})", "arrow functions"),
    ("db.c.find({a: `x`})", "template strings"),
    ("db.c.find({}); db.d.find({})", "only one statement"),
    ("var x = 1", "starts with db"),
    ("db.c.find({a: Date()})", "without 'new'"),
    ("db.c.find({a: new Date()})", "not deterministic"),
    ("db.c.find({a: ObjectId()})", "not deterministic"),
    ('db.c.find({a: ObjectId("zz")})', "invalid ObjectId"),
    ("db.c.find({a: 'x})", "unterminated string"),
    ("db.c.find({a: 1", "missing '}'"),
    ("db.c.find({a: [1, , 2]})", "array holes"),
    ("db.c.find({a})", "shorthand property"),
    ("db.c.find({...x})", "spread"),
    ("db.c.find({a: 010})", "legacy octal"),
    ("db.c.drop()", "unsupported collection method"),
    ("db.c.find().hint({a: 1})", "unsupported cursor method"),
    ("db.c.find({}, {'a.$': 1})", "needs a condition on 'a' in the filter"),
    ("db.c.find({a: 1}, {'a.$': 0})", "takes 1 (an inclusion)"),
    ("db.c.find({}, {a: {$elemMatch: 1}})", "takes a query document"),
    ("db.c.find({}, {a: {$slice: [1, 0]}})", "must be positive"),
    ("db.c.find({}, {a: {$slice: 'x'}})", "takes a number or [skip, limit]"),
    ("db.c.find({}, {b: 0, a: {$elemMatch: {x: 1}}})", "mixes exclusions (b)"),
    ("db.c.find({}, {'a.b': {$elemMatch: {x: 1}}})", "Cannot use $elemMatch projection on a nested field"),
    ("use clinic", "takes the database from --db"),
    ("use clinic; db.c.find()", "drop the `use` line"),
    ("db.getSiblingDB('clinic').c.find()", "--db clinic"),
    ("db.c.find().explain()", "nlq exec --explain"),
    ("db.c.explain().find()", "query plan, not rows"),
    ("db.c.aggregate([]).explain('executionStats')", "nlq exec --explain"),
    ("db.c.find().forEach(function (d) { print(d) })", "only as .forEach(printjson)"),
    ("db.c.find().forEach(printjson).limit(1)", "must end the query"),
    ("db.c.aggregate([{$match: {}}], {collation: {locale: 'fr'}})", "collation"),
    ("db.c.aggregate([1])", "not a document"),
    ('{"collection": "c"}', "pipeline"),
    ("db.c.find({a: /x/q})", "flags"),
    ("/* open", "unterminated /* comment"),
    ("", "empty query"),
])
def test_errors_are_clear(text, fragment):
    with pytest.raises(ParseError) as info:
        parse_query(text)
    assert fragment in str(info.value)


@pytest.mark.parametrize("text, pipeline", [
    ("db.c.find({a: 1}).forEach(printjson)", [{"$match": {"a": 1}}]),
    ("db.c.aggregate([{$limit: 1}]).forEach(printjsononeline);", [{"$limit": 1}]),
])
def test_trailing_foreach_printjson_is_a_noted_noop(text, pipeline):
    query = parse_query(text)
    assert query.pipeline == pipeline
    assert query.warnings == (f".forEach({text.split('forEach(')[1].split(')')[0]}) ignored: nlq prints every row",)


def test_find_projection_operators_are_lowered():
    # the behaviour is checked against the manual's examples in tests/conformance/find.jsonl
    assert parse_query("db.c.find({}, {a: {$slice: -2}, _id: 0})").pipeline == [
        {"$addFields": {"a": {"$cond": [{"$isArray": "$a"}, {"$slice": ["$a", -2]}, "$a"]}}},
        {"$project": {"_id": 0}}]
    stages = parse_query("db.c.find({'a.b': 1}, {'a.$': 1, c: 1})").pipeline
    assert [next(iter(s)) for s in stages] == ["$match", "$lookup", "$project", "$addFields", "$project"]
    assert stages[1]["$lookup"]["pipeline"][1] == {"$match": {"v.b": 1}}
    assert stages[2] == {"$project": {"c": 1, "a": 1, "__nlq_0": 1}}
    assert parse_query("db.c.find({}, {a: 1})").pipeline == [{"$project": {"a": 1}}]


def test_a_dotted_slice_goes_through_arrays_of_documents():
    from nlq.mql import engine

    docs = [{"_id": 1, "d": [{"c": [1, 2, 3], "s": 0}, {"c": [4, 5]}, {"o": 1}, 7]}, {"_id": 2, "d": {"c": "x"}}, {"_id": 3}]
    run = lambda text: engine.aggregate(docs, parse_query(text).pipeline)  # noqa: E731
    assert run("db.c.find({}, {'d.c': {$slice: 1}})") == [
        {"_id": 1, "d": [{"c": [1], "s": 0}, {"c": [4]}, {"o": 1}, 7]}, {"_id": 2, "d": {"c": "x"}}, {"_id": 3}]
    assert run("db.c.find({}, {_id: 0, 'd.c': {$slice: -1}, 'd.s': 1})") == [
        {"d": [{"c": [3], "s": 0}, {"c": [5]}, {}]}, {"d": {"c": "x"}}, {}]


def test_error_has_line_column_and_caret():
    text = "db.c.aggregate([\n  {$match: {a: oops}}\n])"
    with pytest.raises(ParseError) as info:
        parse_query(text)
    err = info.value
    assert (err.line, err.column) == (2, 16)
    line, caret = err.excerpt.splitlines()
    assert line == "    {$match: {a: oops}}"
    assert caret.index("^") == line.index("oops")


def test_error_excerpt_of_a_long_line_points_at_the_column():
    text = "db.c.aggregate([" + ",".join(['{"$match":{"a":1}}'] * 20) + ",{$match: {b: bad}}])"
    with pytest.raises(ParseError) as info:
        parse_query(text)
    line, caret = info.value.excerpt.splitlines()
    assert len(line) < 120 and line[caret.index("^"):].startswith("bad")


def test_missing_final_paren_is_reported_or_tolerated():
    text = 'db.c.aggregate([{"$match": {"a": 1}}]'
    with pytest.raises(ParseError, match=r"missing '\)' to close aggregate\("):
        parse_query(text)
    q = parse_query(text, tolerant=True)
    assert q.pipeline == [{"$match": {"a": 1}}]
    assert q.warnings and "missing ')'" in q.warnings[0]
    assert parse_query('db.c.aggregate([]);', tolerant=True).warnings == ()


def test_deep_nesting_is_a_parse_error():
    with pytest.raises(ParseError, match="levels deep"):
        parse_query("db.c.find(" + "[" * 500 + "]" * 500 + ")")


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_arbitrary_text_raises_only_parse_error(text):
    try:
        parse_query(text)
    except ParseError:
        pass


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="db.c()[]{}'\"/\\*,:;$abx01e+-`=> \nNumberLongISODate", max_size=60))
def test_mongosh_like_text_raises_only_parse_error(text):
    try:
        parse_query("db.c.aggregate(" + text)
    except ParseError:
        pass


# --- the lowerings run as the shell helpers answer ------------------------------

DOCS = [{"_id": 1, "a": [1, 2], "b": {"c": 3}, "x": 1},
        {"_id": 2, "a": 2.0, "b": [{"c": 4}, {"c": [5, 6]}], "x": 1},
        {"_id": 3, "a": None, "x": 2},
        {"_id": 4, "x": 2},
        {"_id": 5, "a": [], "x": 3}]


@pytest.mark.parametrize("text, expected", [
    # distinct: array elements, null included, missing/[] contribute nothing, 2 == 2.0
    ('db.c.distinct("a")', [{"a": 1}, {"a": 2}, {"a": None}]),
    # through arrays of subdocuments, the leaf array flattened
    ('db.c.distinct("b.c")', [{"c": 3}, {"c": 4}, {"c": 5}, {"c": 6}]),
    ('db.c.distinct("_id", {x: 2})', [{"_id": 3}, {"_id": 4}]),
    ("db.c.countDocuments({x: 9})", [{"count": 0}]),
    ("db.c.countDocuments({x: 1})", [{"count": 2}]),
    ("db.c.find({}).limit(2).count()", [{"count": 5}]),
    ("db.c.find({}).limit(2).count(true)", [{"count": 2}]),
    ("db.c.find({x: {$gte: 1}}, {x: 1}).limit(2).skip(1).sort({_id: -1})", [{"_id": 4, "x": 2}, {"_id": 3, "x": 2}]),
    ("db.c.findOne({x: 2}, {_id: 1})", [{"_id": 3}]),
])
def test_lowered_forms_execute_like_the_shell(text, expected):
    from nlq.mql.engine import aggregate

    rows = aggregate(DOCS, parse_query(text).pipeline)
    assert sorted(map(repr, rows)) == sorted(map(repr, expected)) if "distinct" in text else rows == expected
