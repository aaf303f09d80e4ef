"""Tolerant decoding of model replies, and the shared repair turns.

    decode_pipeline('Sure! ```json\\n{"collection": "heroes", "pipeline": []}\\n```', ["heroes"])
    -> {"collection": "heroes", "pipeline": []}

A reply may wrap its JSON in a code fence or prose, or answer in mongosh
(`db.heroes.aggregate([...])`); nlq's own query parser reads it (never
`eval`), and Extended JSON values (`{"$date": ...}`, `{"$oid": ...}`) become
BSON values. Anything else is a ModelBadOutputError; `chat_decoded` then asks
the model again, at most twice, saying what was wrong.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable

import orjson

from nlq import io
from nlq.errors import InputError, ModelBadOutputError, ParseError
from nlq.mql.mongosh import parse_query

REPAIR_TURNS = 2
REPAIR_MESSAGE = ("Your reply was not valid JSON for this task: {error}\n"
                  "Reply again with only the JSON object the instructions ask for: no prose, no code fence.")

_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[ \t]*\r?\n?(.*?)```", re.S)
_SHELL_START = re.compile(r"\bdb\s*(?:\.|\[)")
_MAX_ENDS = 64
# What follows a query that is another statement, not prose: after `;` on its line a call, member,
# assignment or declaration (`x.drop()`, `printjson(r)`, `var r =`), or another `db.` call right after
# it. Such a reply is refused whole (its first statement is not run alone).
_SECOND_STATEMENT = re.compile(r"[ \t]*;[ \t]*(?:[A-Za-z_$][\w$]*[ \t]*[.(\[=]|(?:var|let|const)[ \t])"
                               r"|\s*;?\s*db\s*(?:\.|\[)")


def pipeline_schema(collections) -> dict:
    """The JSON schema of the pipeline answer, the collection an enum of the real names
    (a plain string when `collections` is None: a method that must not see them)."""
    collection = {"type": "string"} if collections is None else {"type": "string", "enum": sorted(collections)}
    return {"type": "object",
            "properties": {"collection": collection,
                           "pipeline": {"type": "array", "items": {"type": "object"}}},
            "required": ["collection", "pipeline"], "additionalProperties": False}


def candidates(text: str) -> list[str]:
    """Pieces of a reply that may hold the answer, most likely first: the whole
    text, each fenced block, then each balanced `{...}` object in the prose."""
    stripped = text.strip()
    found = [stripped] if stripped else []
    found += [m.group(2).strip() for m in _FENCE.finditer(text) if m.group(2).strip()]
    found += _objects(text)
    seen, unique = set(), []
    for piece in found:
        if piece not in seen:
            seen.add(piece)
            unique.append(piece)
    return unique


def decode_json(text: str) -> dict:
    """The first JSON object in a reply (whole, fenced or inside prose), Extended JSON decoded.

    ModelBadOutputError when there is none."""
    for piece in candidates(text):
        value = _json_object(piece)
        if value is not None:
            return value
    raise ModelBadOutputError(f"no JSON object in the reply: {_excerpt(text)}")


def decode_pipeline(text: str, collections) -> dict:
    """`{"collection", "pipeline"}` from a reply; the collection must be one of `collections`.

    A bare array of stages is accepted only when there is a single collection
    (then it is not a guess). ModelBadOutputError otherwise."""
    names = set(collections)
    first_error = None
    for piece in candidates(text):
        for source, rest in _query_sources(piece):
            try:
                query = parse_query(source)  # a reply nested past MongoDB's limit is bad output, not a crash
            except (ParseError, InputError) as exc:
                first_error = first_error or exc
                continue
            if _SECOND_STATEMENT.match(rest):
                raise ModelBadOutputError(
                    f"the reply holds more than one statement ({_excerpt(rest.lstrip())} follows the query): "
                    "nlq runs exactly one read-only query per reply and ran none of these")
            return _checked(query.collection, query.pipeline, names)
        bare = _json_array(piece)
        if bare is not None and len(names) == 1 and all(isinstance(stage, dict) for stage in bare):
            return _checked(next(iter(names)), bare, names)
    detail = f" ({first_error.message.splitlines()[0]})" if first_error else ""
    raise ModelBadOutputError('the reply holds no {"collection", "pipeline"} object or db.<collection>.aggregate(...)'
                              f"{detail}: {_excerpt(text)}")


@dataclass
class Decoded:
    """What `chat_decoded` returns: the decoded value, the conversation that led
    to it (ending with the accepted assistant reply), and the repair turns used."""

    value: object
    messages: list = field(default_factory=list)
    repairs: int = 0


def chat_decoded(client, messages: list[dict], decode: Callable[[str], object], *, schema: dict | None = None,
                 schema_name: str = "answer", sample: int = 0, repairs: int = REPAIR_TURNS) -> Decoded:
    """Ask, decode the reply with `decode`; on ModelBadOutputError tell the model
    what was wrong and ask again, at most `repairs` times. Every method uses this."""
    conversation = list(messages)
    for turn in range(repairs + 1):
        reply = client.chat(conversation, schema=schema, schema_name=schema_name, sample=sample)
        answered = conversation + [{"role": "assistant", "content": reply.text}]
        try:
            return Decoded(decode(reply.text), answered, turn)
        except ModelBadOutputError as exc:
            if turn == repairs:
                raise ModelBadOutputError(f"{exc.message} (after {repairs} repair turns)") from None
            conversation = answered + [{"role": "user", "content": REPAIR_MESSAGE.format(error=exc.feedback)}]
    raise AssertionError("unreachable")


# ---------------------------------------------------------------------------


def _checked(collection, pipeline, names: set) -> dict:
    if collection not in names:
        raise ModelBadOutputError(f"unknown collection {collection!r}; the database has: {', '.join(sorted(names))}")
    return {"collection": collection, "pipeline": pipeline}


def _query_sources(piece: str) -> list[tuple[str, str]]:
    """The piece itself when it is an object, else each mongosh `db....(...)` span in it; each with
    the text that follows it in the piece."""
    if piece.startswith("{"):
        return [(piece, "")]
    sources = []
    for match in _SHELL_START.finditer(piece):
        tail = piece[match.start():]
        ends = [i + 1 for i, c in enumerate(tail) if c == ")"]
        sources += [(tail[:end], tail[end:]) for end in reversed(ends[-_MAX_ENDS:])]
    return sources


def _json_object(piece: str):
    if not piece.startswith("{"):
        return None
    try:
        value = io.loads(piece)
    except (orjson.JSONDecodeError, InputError):
        return None
    return value if isinstance(value, dict) else None


def _json_array(piece: str):
    if not piece.startswith("["):
        return None
    try:
        value = io.loads(piece)
    except (orjson.JSONDecodeError, InputError):
        return None
    return value if isinstance(value, list) else None


def _objects(text: str) -> list[str]:
    """Balanced top-level `{...}` spans of the text (string-aware), in order."""
    spans, depth, start, in_string, escaped = [], 0, 0, None, False
    for i, c in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif c == "\\":
                escaped = True
            elif c == in_string:
                in_string = None
        elif c in "\"'" and depth:
            in_string = c
        elif c == "{":
            if depth == 0:
                start = i
            depth += 1
        elif c == "}" and depth:
            depth -= 1
            if depth == 0:
                spans.append(text[start:i + 1])
    return spans


def _excerpt(text: str) -> str:
    flat = " ".join(text.split())
    return repr(flat[:160] + ("..." if len(flat) > 160 else "")) if flat else "(empty reply)"
