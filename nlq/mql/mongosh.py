"""Queries as MongoDB users write them, parsed into one :class:`Query`.

    >>> parse_query('db.singer.find({Age: {$gt: 30}}, {Name: 1, _id: 0}).limit(3)').pipeline
    [{'$match': {'Age': {'$gt': 30}}}, {'$limit': 3}, {'$project': {'Name': 1, '_id': 0}}]

Accepted surface forms:

- the JSON form ``{"collection": "c", "pipeline": [...]}`` (a dict or its JSON
  text, MongoDB Extended JSON wrappers such as ``{"$oid": ...}`` allowed);
- mongosh: ``db.c.aggregate([...])`` (stages may also be given as separate
  arguments; an options document such as ``{allowDiskUse: true}`` is ignored),
  ``db.getCollection("c")``, ``db["c"]``, ``db.c.find(filter, projection)``
  with chained ``.sort() .skip() .limit() .projection() .count()``,
  ``db.c.findOne()``, ``db.c.countDocuments(filter)``, ``db.c.count(filter)``,
  ``db.c.estimatedDocumentCount()``, ``db.c.distinct(field, filter)``; a
  trailing ``;``, ``.toArray()`` and ``.pretty()`` are allowed, and so is a final
  ``.forEach(printjson)`` (nlq prints every row anyway; noted in ``Query.warnings``).

``use <db>``, ``db.getSiblingDB(...)`` and ``.explain()`` are ParseErrors that
say what to do instead: the database is named by ``--db`` (or the record's
``db`` field), and ``nlq exec --explain`` shows the pipeline nlq runs.

A missing final ``)`` (TEND-native record 6039147) is a ParseError; with
``parse_query(text, tolerant=True)`` it is accepted and recorded in
``Query.warnings``.

Values (strings, numbers, ``ObjectId(...)``, ``ISODate(...)``, regexes...) are read by
:mod:`nlq.mql.jsliteral`, which documents its value choices.

Lowering of the non-aggregate forms to equivalent aggregation pipelines
(``Query.form`` keeps the surface form):

- ``find(filter, projection).sort(s).skip(k).limit(n)`` ->
  ``[{$match: filter}, {$sort: s}, {$skip: k}, {$limit: n}, {$project: projection}]``
  in MongoDB's order of application whatever the chain order; empty parts
  are omitted, ``limit(0)`` means no limit and ``limit(-n)`` is ``$limit: n``.
  ``findOne(...)`` is ``find(...).limit(1)``. The find-only projection operators
  (``$slice``, ``$elemMatch``, positional ``a.$``) become equivalent stages
  (:mod:`nlq.mql.find_projection`).
- ``count``: ``.count()``, ``countDocuments(filter, {skip, limit})``,
  ``count(filter)`` and ``estimatedDocumentCount()`` ->
  ``[{$match: filter}, ({$skip}, {$limit},) {$facet: {count: [{$count: "count"}]}},
  {$project: {count: {$ifNull: [{$arrayElemAt: ["$count.count", 0]}, 0]}}}]``:
  always exactly one row ``{count: N}``, also ``{count: 0}`` on an empty input
  (a bare ``$count`` stage yields no row there, unlike the shell helpers).
  ``cursor.count()`` ignores the cursor's sort/skip/limit as mongosh does;
  ``.count(true)`` applies skip and limit.
- ``distinct(field, filter)`` -> one row per distinct value, keyed by the last
  component of the field path (``distinct("a.b")`` gives rows ``{b: v}``; for
  ``_id`` rows are ``{_id: v}``), in no particular order. For ``"a.b"``::

      [{$match: filter},
       {$project: {_id: 0, value: "$a"}},
       {$unwind: {path: "$value", preserveNullAndEmptyArrays: true}},
       {$project: {value: "$value.b"}},
       {$unwind: {path: "$value", preserveNullAndEmptyArrays: true}},
       {$match: {value: {$exists: true}}},
       {$group: {_id: "$value"}},
       {$project: {_id: 0, b: "$_id"}}]

  One `$project`/`$unwind` pair per path component walks through arrays of
  subdocuments and flattens an array at the end of the path one level, like
  MongoDB's distinct; null is a value, documents without the field contribute
  nothing, and 1, 1.0 and NumberLong(1) are one value.
"""


from __future__ import annotations

import orjson

from nlq.errors import InputError, ParseError
from nlq.mql import find_projection
from nlq.mql.extjson import from_extjson
from nlq.mql.jsliteral import Parser, Token, Tokenizer, syntax_error
from nlq.mql.limits import check_query_depth
from nlq.mql.query import Query
from nlq.mql.values import Int64

_IGNORED_AGGREGATE_OPTIONS = {"allowDiskUse", "maxTimeMS", "comment", "hint", "batchSize", "cursor",
                              "bypassDocumentValidation", "readConcern", "readPreference"}

# ---------------------------------------------------------------------------
# the db.<collection>.<method>(...) surface


_SHAPES = {"aggregate", "find", "findOne", "count", "countDocuments", "estimatedDocumentCount", "distinct"}
_CURSOR_NOOPS = {"toArray", "pretty"}
_EXPLAIN = (".explain() returns MongoDB's query plan, not rows: drop it (`nlq exec --explain` shows the "
            "pipeline nlq runs; `nlq ask --explain` also shows how it was generated)")
# Trailing calls that print the rows in mongosh: nlq prints them anyway (noted in Query.warnings).
_PRINTERS = {"printjson", "printjsononeline", "print"}


def parse_query(source, *, tolerant: bool = False) -> Query:
    """Parse a query given as a JSON object (dict or text) or a mongosh string.

    Raises ParseError (with line, column and a caret excerpt) when the text is
    not a query nlq can read, QueryTooDeep (a ParseError of type `input_too_deep`)
    for one nested more levels than MongoDB accepts (checked without recursion,
    before any other walk of it). `tolerant=True` accepts a missing final `)` and
    records it in `Query.warnings`.
    """
    if isinstance(source, Query):
        check_query_depth(source.pipeline)
        return source
    if isinstance(source, dict):
        return _from_json(source)
    if isinstance(source, bytes):
        try:
            source = source.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ParseError(f"query is not UTF-8 text: {exc}") from None
    if not isinstance(source, str):
        raise ParseError(f"a query must be text or a JSON object, not {type(source).__name__}")
    stripped = source.lstrip("\ufeff \t\r\n")
    if stripped.startswith("{"):
        return _from_json_text(source)
    query = _ShellParser(source, tolerant).query()
    check_query_depth(query.pipeline)  # a find filter gains two levels when lowered to $match
    return query


def _from_json_text(text: str) -> Query:
    try:
        obj = orjson.loads(text.encode("utf-8", "surrogatepass"))
    except orjson.JSONDecodeError:
        # Not strict JSON: read it as a mongosh object literal (unquoted keys, comments...).
        parser = Parser(text)
        obj = parser.value()
        if parser.at(";"):
            parser.advance()
        if parser.token.kind != "eof":
            raise parser.error("unexpected text after the query object")
    if not isinstance(obj, dict):
        raise syntax_error(text, 0, "expected a JSON object {\"collection\", \"pipeline\"}")
    return _from_json(obj)


def _from_json(obj: dict) -> Query:
    missing = [k for k in ("collection", "pipeline") if k not in obj]
    if missing:
        raise ParseError(f"a JSON query needs \"collection\" and \"pipeline\" (missing {', '.join(missing)})")
    check_query_depth(obj["pipeline"])  # before the Extended JSON walk of it
    try:
        obj = from_extjson(obj)
    except InputError as exc:
        raise ParseError(str(exc)) from None
    collection, pipeline = obj["collection"], obj["pipeline"]
    if not isinstance(collection, str) or not collection:
        raise ParseError("\"collection\" must be a non-empty string")
    if not isinstance(pipeline, list) or not all(isinstance(s, dict) for s in pipeline):
        raise ParseError("\"pipeline\" must be an array of stage documents")
    return Query(collection, pipeline, "json")


class _ShellParser(Parser):
    def __init__(self, text: str, tolerant: bool):
        super().__init__(text)
        self.tolerant = tolerant

    def query(self) -> Query:
        start = self.token
        if not (start.kind == "ident" and start.value == "db"):
            if self.token.kind == "eof":
                raise self.error("empty query")
            if start.kind == "ident" and start.value == "use":
                raise self.error("`use <db>` selects a database in mongosh; nlq takes the database from "
                                 "--db (or the record's db field): drop the `use` line and give only the "
                                 "db.<collection>... query")
            raise self.error("a mongosh query starts with db.<collection> (or use the JSON form "
                             "{\"collection\", \"pipeline\"})")
        self.advance()
        collection = self.collection()
        method_token = self.token
        if method_token.kind != "ident":
            raise self.error("expected a collection method such as aggregate or find")
        method = self.advance().value
        if method == "explain":
            raise self.error(_EXPLAIN, method_token)
        if method not in _SHAPES:
            raise self.error(f"unsupported collection method .{method}(): expected one of "
                             f"{', '.join(sorted(_SHAPES))}", method_token)
        args = self.call_arguments(method)
        chain: list[tuple[Token, list]] = []
        while self.at("."):
            self.advance()
            if self.token.kind != "ident":
                raise self.error("expected a method name after '.'")
            name_token = self.advance()
            chain.append((name_token, self.call_arguments(name_token.value)))
        while self.at(";"):
            self.advance()
        if self.token.kind != "eof":
            raise self.error("unexpected text after the query (only one statement is allowed)")
        chain = self.printing_and_explain(chain)
        pipeline, form = _lower(self, collection, method, method_token, args, chain)
        return Query(collection, pipeline, form, tuple(self.warnings))

    def printing_and_explain(self, chain: list[tuple[Token, list]]) -> list[tuple[Token, list]]:
        """`chain` without a final `.forEach(printjson)` (noted as a warning); `.explain()` is an error
        that points to nlq's own explain."""
        for token, _ in chain:
            if token.value == "explain":
                raise self.error(_EXPLAIN, token)
        for token, _ in chain[:-1]:
            if token.value == "forEach":
                raise self.error(".forEach(printjson) must end the query", token)
        if chain and chain[-1][0].value == "forEach":
            token, cargs = chain[-1]
            self.warnings.append(f".forEach({cargs[0].name}) ignored: nlq prints every row")
            chain = chain[:-1]
        return chain

    def collection(self) -> str:
        if self.at("["):
            self.advance()
            token = self.token
            if token.kind != "string":
                raise self.error("expected a collection name string in db[...]")
            self.advance()
            self.expect("]")
            self.expect(".", " and a method after db[...]")
            return self._name(token)
        self.expect(".", " after db")
        token = self.token
        if token.kind != "ident":
            raise self.error("expected a collection name after db.")
        self.advance()
        if token.value == "getSiblingDB" and self.at("("):
            args = self.arguments("getSiblingDB")
            name = args[0] if len(args) == 1 and isinstance(args[0], str) and args[0] else "DB"
            raise self.error(f"db.getSiblingDB(...) switches databases, which a query given to nlq cannot do: "
                             f"name the database with --db {name} (or the record's db field) and write "
                             "db.<collection>... for the rest", token)
        if token.value == "getCollection" and self.at("("):
            args = self.arguments("getCollection")
            if len(args) != 1 or not isinstance(args[0], str):
                raise self.error("getCollection takes one string argument", token)
            self.expect(".", " and a method after getCollection(...)")
            return self._name(Token("string", args[0], token.pos, token.end))
        # db.a.b.find(): the collection is 'a.b'; the last name before '(' is the method.
        parts = [token.value]
        self.expect(".", f" and a method after db.{token.value}")
        while True:
            if self.token.kind != "ident":
                raise self.error("expected a method name")
            peek = Tokenizer(self.text)
            peek.pos, peek.previous = self.token.end, "ident"
            if peek.next().value == "(":
                break
            parts.append(self.advance().value)
            self.expect(".", f" or '(' after {parts[-1]}")
        return ".".join(parts)

    def _name(self, token: Token) -> str:
        if not token.value:
            raise self.error("empty collection name", token)
        return token.value

    def call_arguments(self, what: str) -> list:
        if not self.at("("):
            raise self.error(f"expected '(' after .{what}")
        if what == "forEach":  # printjson is a name, not a literal: read it here
            self.advance()
            token = self.token
            if token.kind == "ident" and token.value in _PRINTERS:
                self.advance()
                self.expect(")")
                return [_Printer(token.value)]
            raise self.error(".forEach() is accepted only as .forEach(printjson) (it prints each row, "
                             "which nlq does anyway)", token)
        return self.arguments(what, unclosed_ok=self.tolerant)


class _Printer:
    """The print function named in `.forEach(printjson)`."""

    def __init__(self, name: str):
        self.name = name


def _lower(parser: _ShellParser, collection: str, method: str, method_token: Token, args: list,
           chain: list[tuple[Token, list]]) -> tuple[list, str]:
    def fail(message, token=method_token):
        return parser.error(message, token)

    if method == "aggregate":
        for token, _ in chain:
            if token.value not in _CURSOR_NOOPS:
                raise fail(f"unsupported method .{token.value}() after aggregate()", token)
        if args and isinstance(args[0], list):
            pipeline, options = args[0], args[1:]
            if len(options) > 1 or (options and not isinstance(options[0], dict)):
                raise fail("aggregate(pipeline, options) takes at most an options document after the pipeline")
            for key in options[0] if options else {}:
                if key not in _IGNORED_AGGREGATE_OPTIONS:
                    raise fail(f"aggregate option {key!r} changes the result and is not supported")
        else:
            pipeline = args
        for i, stage in enumerate(pipeline):
            if not isinstance(stage, dict):
                raise fail(f"stage {i} of the pipeline is not a document")
        return pipeline, "aggregate"

    if method in ("count", "countDocuments", "estimatedDocumentCount"):
        if chain:
            raise fail(f"unsupported method .{chain[0][0].value}() after {method}()", chain[0][0])
        if method == "estimatedDocumentCount":
            if args and not (len(args) == 1 and isinstance(args[0], dict)):
                raise fail("estimatedDocumentCount() takes only an options document")
            return _count_stages({}, 0, 0), method
        filter_ = _filter_arg(args, method, fail)
        options = args[1] if len(args) > 1 else {}
        if len(args) > 2 or not isinstance(options, dict):
            raise fail(f"{method}(filter, options) takes at most two documents")
        skip, limit = _count_options(options, fail)
        return _count_stages(filter_, skip, limit), method

    if method == "distinct":
        if chain:
            raise fail(f"unsupported method .{chain[0][0].value}() after distinct()", chain[0][0])
        if not args or not isinstance(args[0], str) or not args[0] or len(args) > 3:
            raise fail("distinct(field, filter) takes a field name and an optional filter")
        filter_ = _filter_arg(args[1:], "distinct", fail)
        return _distinct_stages(args[0], filter_), "distinct"

    # find / findOne
    if len(args) > 2:
        raise fail(f"{method}(filter, projection) takes at most two arguments")
    filter_ = _filter_arg(args, method, fail)
    projection = args[1] if len(args) > 1 else None
    if projection is not None and not isinstance(projection, dict):
        raise fail("the projection must be a document")
    sort = skip = limit = None
    counted = None
    for token, cargs in chain:
        name = token.value
        if counted is not None:
            raise fail(f"unsupported method .{name}() after .count()", token)
        if name in _CURSOR_NOOPS:
            if cargs:
                raise fail(f".{name}() takes no argument", token)
        elif name == "sort":
            if len(cargs) != 1 or not isinstance(cargs[0], dict):
                raise fail(".sort() takes one document", token)
            sort = cargs[0]
        elif name in ("skip", "limit"):
            if len(cargs) != 1 or not _is_integer(cargs[0]):
                raise fail(f".{name}() takes one integer", token)
            if name == "skip":
                if cargs[0] < 0:
                    raise fail(".skip() takes a non-negative integer", token)
                skip = int(cargs[0])
            else:
                limit = abs(int(cargs[0]))
        elif name == "projection":
            if len(cargs) != 1 or not isinstance(cargs[0], dict):
                raise fail(".projection() takes one document", token)
            projection = cargs[0]
        elif name in ("count", "itcount", "size"):
            if len(cargs) > 1 or (cargs and not isinstance(cargs[0], bool)):
                raise fail(f".{name}() takes at most one boolean", token)
            apply_skip_limit = name in ("itcount", "size") or bool(cargs and cargs[0])
            counted = apply_skip_limit
        else:
            raise fail(f"unsupported cursor method .{name}() (supported: sort, skip, limit, "
                       "projection, count, toArray, pretty)", token)
    if method == "findOne":
        if counted is not None or sort is not None or skip is not None or limit is not None:
            raise fail("findOne() returns a document, not a cursor: no cursor methods may follow")
        limit = 1
    if counted is not None:
        if counted:
            return _count_stages(filter_, skip or 0, limit or 0), "count"
        return _count_stages(filter_, 0, 0), "count"
    pipeline = [{"$match": filter_}] if filter_ else []
    if sort:
        pipeline.append({"$sort": sort})
    if skip:
        pipeline.append({"$skip": skip})
    if limit:
        pipeline.append({"$limit": limit})
    if projection:
        pipeline += find_projection.stages(filter_, projection, fail)
    return pipeline, method


def _is_integer(value) -> bool:
    return (type(value) is int or type(value) is Int64
            or (type(value) is float and value.is_integer()))


def _filter_arg(args, method, fail) -> dict:
    if not args or args[0] is None:
        return {}
    if not isinstance(args[0], dict):
        raise fail(f"the filter of {method}() must be a document")
    return args[0]


def _count_options(options: dict, fail) -> tuple[int, int]:
    skip = limit = 0
    for key, value in options.items():
        if key in ("skip", "limit"):
            if not _is_integer(value) or value < 0:
                raise fail(f"countDocuments option {key} must be a non-negative integer")
            if key == "skip":
                skip = int(value)
            else:
                limit = int(value)
        elif key not in _IGNORED_AGGREGATE_OPTIONS:
            raise fail(f"count option {key!r} is not supported")
    return skip, limit


def _count_stages(filter_: dict, skip: int, limit: int) -> list:
    stages = [{"$match": filter_}] if filter_ else []
    if skip:
        stages.append({"$skip": skip})
    if limit:
        stages.append({"$limit": limit})
    stages.append({"$facet": {"count": [{"$count": "count"}]}})
    stages.append({"$project": {"count": {"$ifNull": [{"$arrayElemAt": ["$count.count", 0]}, 0]}}})
    return stages


def _distinct_stages(field: str, filter_: dict) -> list:
    parts = field.split(".")
    unwind = {"$unwind": {"path": "$value", "preserveNullAndEmptyArrays": True}}
    stages = [{"$match": filter_}] if filter_ else []
    stages += [{"$project": {"_id": 0, "value": "$" + parts[0]}}, unwind]
    for part in parts[1:]:
        stages += [{"$project": {"value": "$value." + part}}, unwind]
    stages += [{"$match": {"value": {"$exists": True}}}, {"$group": {"_id": "$value"}}]
    if parts[-1] != "_id":
        stages.append({"$project": {"_id": 0, parts[-1]: "$_id"}})
    return stages


__all__ = ["parse_query"]
