"""JSONL in and out, MongoDB Extended JSON, and failure records.

Reading accepts canonical and relaxed Extended JSON v2 (and the legacy
`{"$date": <ms>}` / `{"$oid"}` forms mongoexport writes); writing produces
relaxed Extended JSON, so ObjectIds, dates, longs beyond 2^53, decimals,
regexes and binary survive a round trip.

The Extended JSON value conversion itself is `nlq.mql.extjson` (the query
language needs it too); `from_extjson` and `to_extjson` are re-exported here.

    >>> loads('{"n": {"$numberLong": "5"}}')["n"]
    Int64(5)
"""

from __future__ import annotations

import json
import re
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from typing import IO, Iterable, Iterator

import orjson

from nlq.errors import InputError, failure
from nlq.mql.extjson import from_extjson, to_extjson
from nlq.mql.numeric import INT64_MAX, INT64_MIN
from nlq.mql.values import MISSING

# orjson reads an integer beyond 64 bits as a double (99999999999999999999999 -> 1e+23) and
# one in 2^63..2^64 as an int no BSON type holds; a text with a run of 19+ digits is read
# again by the json module, whose integer hook rejects both.
_LONG_DIGITS = re.compile(rb"\d{19}")
_LONG_DIGITS_STR = re.compile(r"\d{19}")


def _checked_int(text: str) -> int:
    value = int(text)
    if not INT64_MIN <= value <= INT64_MAX:
        raise InputError(f"the integer {text} is outside the 64-bit range of a BSON long "
                         f"(write it as {{\"$numberDecimal\": \"{text}\"}} or as a double)")
    return value


def _check_integers(text: str | bytes) -> None:
    found = (_LONG_DIGITS if isinstance(text, (bytes, bytearray, memoryview)) else _LONG_DIGITS_STR).search(text)
    if found:
        try:
            json.loads(text, parse_int=_checked_int)
        except json.JSONDecodeError:  # orjson accepted the text: nothing more to check
            pass


def loads(text: str | bytes):
    """Parse one JSON text with Extended JSON wrappers into BSON values.

    InputError for an integer outside the 64-bit range (MongoDB has no such number)."""
    value = orjson.loads(text)
    _check_integers(text)
    return from_extjson(value)


def dumps(value, *, sort_keys: bool = False, indent: bool = False) -> bytes:
    """Relaxed Extended JSON bytes of a value (no trailing newline)."""
    option = 0
    if sort_keys:
        option |= orjson.OPT_SORT_KEYS
    if indent:
        option |= orjson.OPT_INDENT_2
    return orjson.dumps(to_extjson(value), option=option)


# ---------------------------------------------------------------------------
# JSONL streams


@dataclass
class Line:
    """One input line: its 1-based number and either a record or a failure."""

    number: int
    record: dict | None
    error: str | None = None


def iter_lines(stream: IO[bytes]) -> Iterator[Line]:
    """Parse a JSONL byte stream; blank lines are skipped, bad ones become errors."""
    for number, raw in enumerate(stream, start=1):
        if not raw.strip():
            continue
        try:
            record = loads(raw)
        except (orjson.JSONDecodeError, InputError) as exc:
            yield Line(number, None, f"line {number}: malformed JSON: {exc}")
            continue
        if not isinstance(record, dict):
            yield Line(number, None, f"line {number}: expected a JSON object, got {type(record).__name__}")
            continue
        yield Line(number, record)


def read_records(source: str | IO[bytes] = "-", *, strict: bool = False, stage: str = "input") -> Iterator[dict]:
    """Yield the records of a JSONL file or '-' (stdin).

    A malformed line yields `{"line": N, "failure": {...}}` so that it keeps
    its place in the output; with `strict=True` it raises InputError instead.
    """
    with open_input(source) as stream:
        for line in iter_lines(stream):
            if line.error is None:
                yield line.record
            elif strict:
                raise InputError(line.error)
            else:
                yield {"line": line.number, "failure": failure(stage, "malformed_input", line.error)}


def open_input(source: str | IO[bytes] = "-"):
    """A binary input stream for a path, '-' (stdin) or an open file."""
    return _open_stream(source, "read", sys.stdin, "rb")


def open_output(target: str | IO = "-"):
    """A binary output stream for a path, '-' (stdout) or an open file."""
    return _open_stream(target, "write", sys.stdout, "wb")


@contextmanager
def _open_stream(where, verb: str, standard, mode: str):
    """An open file object (one with a `verb` method) as is, '-' as the `standard` stream, or
    a path opened in `mode`: binary (the `.buffer` of text streams); InputError when the
    system refuses the path."""
    if hasattr(where, verb):
        yield getattr(where, "buffer", where)
    elif where == "-":
        yield standard.buffer
    else:
        try:
            f = open(where, mode)
        except OSError as exc:
            raise InputError(f"cannot {verb} {where}: {exc.strerror}") from None
        with f:
            yield f


def write_records(records: Iterable[dict], target: str | IO = "-") -> int:
    """Write records as JSONL (relaxed Extended JSON), flushing per line. Returns the count."""
    n = 0
    with open_output(target) as out:
        for record in records:
            out.write(dumps(record) + b"\n")
            out.flush()
            n += 1
    return n


def has_failure(record: dict) -> bool:
    """True when an earlier stage marked the record as failed."""
    return bool(record.get("failure"))


def load_json_file(path) -> object:
    """Read a whole JSON file (Extended JSON aware)."""
    try:
        with open(path, "rb") as f:
            return loads(f.read())
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror}") from None
    except orjson.JSONDecodeError as exc:
        raise InputError(f"{path}: malformed JSON: {exc}") from None


__all__ = ["from_extjson", "to_extjson", "loads", "dumps", "read_records", "write_records",
           "iter_lines", "open_input", "open_output", "has_failure", "load_json_file", "Line", "MISSING"]
