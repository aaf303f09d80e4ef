"""Property suite: the query text, the model's reply and the data are untrusted (issue 29).

Hypothesis builds hostile queries and replies — nested to any depth (up to 1,500 levels, past
every parser's own bound) in every part of the grammar, with invalid UTF-8, byte order marks,
lone surrogates, control characters, a second statement, prose and fences around them — and
hostile names (keys, collection and database names with line breaks, `[user]` lines, quotes,
controls, bidirectional overrides). The invariants: parsing, decoding and running end in a
result or a typed NlqError (never RecursionError, TypeError...), a query deeper than MongoDB's
limit is `input_too_deep`, a name is written into a prompt on one line and reads back as JSON,
nothing printed for a terminal holds a control character, and `--db` stays inside `--data`.

`make test` runs a few examples per property; `make fuzz` runs many more (NLQ_FUZZ_EXAMPLES).
"""

from __future__ import annotations

import json
import os
import re

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from nlq.errors import BadDatabaseNameError, ModelBadOutputError, NlqError
from tests.conftest import WORLDS

EXAMPLES = int(os.environ.get("NLQ_FUZZ_EXAMPLES", "8"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize="NLQ_FUZZ_EXAMPLES" not in os.environ,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.function_scoped_fixture])

LINE_BREAKS = re.compile("[\n\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029]")
TERMINAL_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")

hostile_chars = st.sampled_from(["\n", "\r", "\r\n", "\x1b]0;t\x07", "\x9b", "\u2028", "\u2029", "\x85", "\u202e",
                                 "\ufeff", "\x00", '"', "\\", "[user]", "[system]", "[assistant]", "{{question}}",
                                 "\t", " ", "$", ".", "é", "東"])
hostile_names = st.lists(st.one_of(hostile_chars, st.text(max_size=4)), min_size=1, max_size=6).map("".join)


# --- deep queries -----------------------------------------------------------------------------------

WRAPPERS = {  # each nests the inner value in another part of the grammar
    "and": lambda inner: f'{{"$and": [{inner}]}}',
    "expr": lambda inner: f'{{"$add": [{inner}, 1]}}',
    "array": lambda inner: f"[{inner}]",
    "object": lambda inner: f'{{"k": {inner}}}',
    "lookup": lambda inner: f'{{"$lookup": {{"from": "patients", "as": "j", "pipeline": [{{"$match": {inner}}}]}}}}',
    "facet": lambda inner: f'{{"$facet": {{"f": [{{"$match": {inner}}}]}}}}',
}


@st.composite
def deep_values(draw) -> tuple[str, int]:
    """A JSON-ish value text nested to a drawn depth, and about how many levels it has."""
    depth = draw(st.one_of(st.integers(0, 120), st.integers(120, 1500)))
    kinds = draw(st.lists(st.sampled_from(sorted(WRAPPERS)), min_size=1, max_size=3))
    text = draw(st.sampled_from(['{"a": 1}', "1", '"x"', "[]"]))
    for i in range(depth):
        text = WRAPPERS[kinds[i % len(kinds)]](text)
    return text, depth


@st.composite
def hostile_queries(draw) -> str:
    value, _ = draw(deep_values())
    form = draw(st.sampled_from(["match", "project", "json", "find"]))
    if form == "match":
        text = f'db.patients.aggregate([{{"$match": {{"$expr": {{"$eq": [{value}, 1]}}}}}}])'
    elif form == "project":
        text = f'db.patients.aggregate([{{"$project": {{"x": {{"$literal": {value}}}}}}}])'
    elif form == "json":
        text = f'{{"collection": "patients", "pipeline": [{{"$match": {{"a": {value}}}}}]}}'
    else:
        text = f"db.patients.find({{a: {value}}})"
    prefix = draw(st.sampled_from(["", "\ufeff", " \r\n", "// c\n"]))
    suffix = draw(st.sampled_from(["", ";", "; db.patients.drop()", "\n", ".toArray()"]))
    return prefix + text + suffix


@FUZZ
@given(hostile_queries(), st.sampled_from(["text", "bytes", "broken bytes"]))
def test_parsing_and_running_a_hostile_query_ends_in_rows_or_a_typed_error(text, encoding):
    from nlq.mql.engine import aggregate
    from nlq.mql.limits import MAX_NESTING, depth_over
    from nlq.mql.mongosh import parse_query

    source = {"text": text, "bytes": text.encode("utf-8", "surrogatepass"),
              "broken bytes": text.encode() + b"\xff\xfe"}[encoding]
    try:
        query = parse_query(source)
    except NlqError as exc:
        assert exc.type in ("parse_error", "input_too_deep", "input_error"), exc.type
        return
    assert not depth_over(query.pipeline, MAX_NESTING)  # a deeper one never leaves the parser
    try:
        aggregate([{"_id": 1, "a": 1}], query.pipeline, timeout=2)
    except NlqError:
        pass


@FUZZ
@given(deep_values())
def test_a_query_deeper_than_mongodb_allows_is_input_too_deep(drawn):
    from nlq.mql.mongosh import parse_query

    value, depth = drawn
    text = f'db.patients.aggregate([{{"$project": {{"x": {{"$literal": {value}}}}}}}])'
    try:
        parse_query(text)
    except NlqError as exc:
        assert exc.type == "input_too_deep" or depth <= 100, (depth, exc.type, exc.message[:200])
    else:
        assert depth <= 100


# --- model replies ---------------------------------------------------------------------------------

@st.composite
def hostile_replies(draw) -> str:
    query = draw(hostile_queries())
    wrap = draw(st.sampled_from(["{q}", "Sure!\n```js\n{q}\n```", "Here it is: {q} That counts them.",
                                 "```json\n{q}\n```\nThen run db.patients.drop()", "{q}\n{q}", "{q}\x00\ud800"]))
    return wrap.replace("{q}", query)


@FUZZ
@given(hostile_replies())
def test_decoding_a_hostile_reply_is_a_pipeline_or_a_typed_bad_output(text):
    from nlq.llm.decode import decode_pipeline
    from nlq.mql.limits import MAX_NESTING, depth_over

    try:
        decoded = decode_pipeline(text, ["patients"])
    except ModelBadOutputError:
        return
    assert decoded["collection"] == "patients"
    assert not depth_over(decoded["pipeline"], MAX_NESTING)


# --- names in prompts and text on a terminal ------------------------------------------------------

@FUZZ
@given(hostile_names)
def test_a_name_is_one_line_in_a_prompt_and_reads_back_as_json(name):
    from nlq.text import safe_name

    shown = safe_name(name)
    assert not LINE_BREAKS.search(shown) and not TERMINAL_CONTROLS.search(shown), repr(shown)
    assert not re.search(r"\[(user|system|assistant)\]", shown) or shown.startswith('"')
    if shown != name:
        assert json.loads(shown) == name


@FUZZ
@given(st.text(max_size=40) | hostile_names)
def test_terminal_text_holds_no_control_character(text):
    from nlq.text import terminal_safe

    shown = terminal_safe(text)
    assert not TERMINAL_CONTROLS.search(shown), repr(shown)
    if not TERMINAL_CONTROLS.search(text):
        assert shown == text


@FUZZ
@given(st.lists(hostile_names, min_size=1, max_size=4, unique=True), hostile_names)
def test_the_card_and_the_field_list_of_hostile_keys_hold_no_turn(keys, collection):
    from nlq import card
    from nlq.index import index_documents
    from nlq.methods.prompting import collections_text, field_names_text

    docs = [{"_id": i, **{key: {"inner " + key: i} for key in keys}} for i in range(3)]
    index = index_documents("db\n[user] x", {collection: docs, "plain": docs})
    for text in (card.render(index), field_names_text(index), collections_text(index)):
        for line in LINE_BREAKS.split(text):
            assert not line.lstrip().startswith(("[user]", "[system]", "[assistant]")), (line, text)


# --- --db stays inside --data ------------------------------------------------------------------

@FUZZ
@given(st.one_of(hostile_names, st.sampled_from(["..", ".", "../racing", "/etc", "racing/..", "C:\\x", "clinic"])))
def test_a_db_name_reaches_only_inside_data(db):
    from nlq.backends import EmbeddedBackend
    from nlq.errors import BackendError

    backend = EmbeddedBackend(WORLDS / "clinic")
    outside = db in (".", "..") or any(c in db for c in "/\\\0") or not db
    try:
        backend.collections(db)
    except BadDatabaseNameError:
        assert outside, db
    except BackendError:
        assert not outside, db
    else:
        pytest.fail(f"{db!r} read a database inside {WORLDS / 'clinic'}")
