"""JSONL in and out, MongoDB Extended JSON, and failure records.

Reading accepts canonical and relaxed Extended JSON v2 (and the legacy
`{"$date": <ms>}` / `{"$oid"}` forms mongoexport writes); writing produces
relaxed Extended JSON, so ObjectIds, dates, longs, decimals, regexes and
binary survive a round trip (a long in the int32 range is written
`{"$numberLong": "5"}`, since a plain 5 reads back as an int).

The Extended JSON value conversion itself is `nlq.mql.extjson` (the query
language needs it too); `from_extjson` and `to_extjson` are re-exported here.

    >>> loads('{"n": {"$numberLong": "5"}}')["n"]
    Int64(5)
"""

from __future__ import annotations

import errno
import fcntl
import os
import re
import stat
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Callable, Iterable, Iterator

import orjson

from nlq import examples
from nlq.errors import InputError, InputTooDeep, InputTooLarge, OutputError, failure
from nlq.mql.extjson import decode_parsed, from_extjson, to_extjson
from nlq.mql.numeric import INT64_MAX, INT64_MIN
from nlq.mql.values import MISSING

# orjson reads an integer beyond 64 bits as a double (99999999999999999999999 -> 1e+23) and
# one in 2^63..2^64 as an int no BSON type holds. Such an integer is written with at least 19
# digits in a row: a text without 19 digits in a row (found at the speed of bytes methods:
# every digit made b"0", then one substring search) has none. In a text with one, escapes are
# dropped and each such run with an even number of quotes before it (outside strings) is read
# as a number token, an integer one checked against the 64-bit range.
_DIGIT_MARKS = bytes(48 if 48 <= b <= 57 else 32 for b in range(256))
_LONG_RUN = b"0" * 19
_LONG_INTEGER = re.compile(rb"(?<![\w.+\-])-?\d{19,}(?![\d.eE])")
_DIGITS = re.compile(rb"\d*")


def _check_integers(text: str | bytes) -> None:
    """InputError for the first integer token of a valid JSON text outside the 64-bit range."""
    if isinstance(text, str):
        text = text.encode()
    elif not isinstance(text, bytes):
        text = bytes(text)
    if _LONG_RUN not in text.translate(_DIGIT_MARKS):
        return
    cleaned = text.replace(b"\\\\", b"").replace(b'\\"', b"")  # escapes gone: a quote opens or closes a string
    marks = cleaned.translate(_DIGIT_MARKS)
    quotes, counted = 0, 0
    at = marks.find(_LONG_RUN)
    while at >= 0:  # at: the first digit of a run of 19 or more (the previous byte is no digit)
        quotes += cleaned.count(b'"', counted, at)
        counted = at
        if quotes % 2 == 0:  # outside strings: a number token
            token = _LONG_INTEGER.match(cleaned, at - 1 if cleaned[at - 1:at] == b"-" else at)
            if token and not INT64_MIN <= int(token.group()) <= INT64_MAX:
                literal = token.group().decode()
                raise InputError(f"the integer {literal} is outside the 64-bit range of a BSON long "
                                 f"(write it as {{\"$numberDecimal\": \"{literal}\"}} or as a double)")
        at = marks.find(_LONG_RUN, _DIGITS.match(cleaned, at).end())


check_integers = _check_integers  # public name, for readers that parse with orjson themselves


def utf8_error(text: bytes) -> tuple[int, int, str] | None:
    """(line, byte column, what) of the first byte sequence of `text` that is not UTF-8, both
    1-based (the column counts bytes from the line's start), or None when it all decodes."""
    if isinstance(text, str):
        return None
    try:
        bytes(text).decode("utf-8")
    except UnicodeDecodeError as exc:
        at = exc.start
        line_start = text.rfind(b"\n", 0, at) + 1
        bad = bytes(text[at:exc.end])
        what = f"the byte 0x{bad.hex()}" if len(bad) == 1 else f"the bytes 0x{bad.hex()}"
        return text.count(b"\n", 0, at) + 1, at - line_start + 1, what
    return None


def describe_json_error(exc: orjson.JSONDecodeError, text: bytes, *, one_line: bool = False) -> str:
    """orjson's complaint about `text` with where it is: 'MESSAGE (line L column C)' ('(column C)'
    for `one_line`). A text that is not UTF-8 is named by its first bad byte and that byte's
    own line and column (orjson reports such a text at column 1)."""
    bad = utf8_error(text) if "UTF-8" in exc.msg else None
    if bad is not None:
        line, column, what = bad
        where = f"column {column}" if one_line else f"line {line} column {column}"
        return (f"not valid UTF-8: {what} at {where} (a Latin-1 or Windows-1252 file? re-save it as UTF-8, "
                "as MongoDB stores strings)")
    if one_line:
        return f"{exc.msg} ({f'column {exc.colno}' if exc.lineno == 1 else 'at the end of the line'})"
    return f"{exc.msg} (line {exc.lineno} column {exc.colno})"


def _may_hold_wrappers(text: str | bytes) -> bool:
    """False when no key of the text can start with `$` (no Extended JSON wrapper in it):
    such a key is written `"$` or, escaped, `"\\u0024`."""
    if isinstance(text, str):
        return '"$' in text or "\\u0024" in text
    return b'"$' in text or b"\\u0024" in text


# Limits on one input record (docs/LIMITS.md). MongoDB nests documents at most 100 levels;
# a record wraps documents and pipelines in a few levels of its own. The JSON writer
# (orjson) writes at most 254 levels, so a record read is always a record that can be written.
DEFAULT_MAX_NESTING = 200
MAX_NESTING = 250
DEFAULT_MAX_RECORD_BYTES = 64 << 20

_BOM = b"\xef\xbb\xbf"
# Nesting is measured on the text, before any value is built, at the speed of bytes methods:
# escapes are dropped (an escaped backslash first, then an escaped quote), only quotes and
# brackets are kept, the brackets between quotes (inside strings) are dropped, every opener
# made "(" and every closer ")", and the innermost pairs "()" are removed pass after pass:
# each pass lowers every subtree by one level, so the number of passes is the depth.
_NOT_QUOTES_OR_BRACKETS = bytes(b for b in range(256) if b not in b'"[]{}')
_PARENTHESES = bytes.maketrans(b"[]{}", b"()()")


def nesting_depth(text: str | bytes) -> int:
    """How many levels of arrays and objects a valid JSON text nests (0 for a scalar).

        >>> nesting_depth(b'{"a": [1, {"b": "[[["}]}')
        3
    """
    if isinstance(text, str):
        text = text.encode()
    kept = bytes(text).replace(b"\\\\", b"").replace(b'\\"', b"").translate(None, _NOT_QUOTES_OR_BRACKETS)
    # Strings without brackets leave adjacent quote pairs; a bracket inside a string leaves a
    # quote behind, and only then are the strings cut out one by one.
    brackets = kept.replace(b'""', b"")
    if b'"' in brackets:
        brackets = b"".join(kept.split(b'"')[::2])
    brackets = brackets.translate(_PARENTHESES)
    depth = 0
    while brackets:
        peeled = brackets.replace(b"()", b"")
        if len(peeled) == len(brackets):  # unbalanced (not valid JSON): no pair left to peel
            break
        brackets, depth = peeled, depth + 1
    return depth


def check_nesting(text: str | bytes, max_nesting: int = DEFAULT_MAX_NESTING) -> None:
    """InputTooDeep when a valid JSON text nests more than `max_nesting` levels."""
    if isinstance(text, str):
        openers = text.count("{") + text.count("[")
    else:
        openers = text.count(b"{") + text.count(b"[")
    if openers > max_nesting and nesting_depth(text) > max_nesting:
        raise InputTooDeep(f"nested more than {max_nesting} levels deep (the limit is --max-nesting; "
                           "MongoDB itself stores documents of at most 100 levels)")


def loads(text: str | bytes, *, max_nesting: int = DEFAULT_MAX_NESTING):
    """Parse one JSON text with Extended JSON wrappers into BSON values.

    InputError for an integer outside the 64-bit range (MongoDB has no such number),
    InputTooDeep for a text nested more than `max_nesting` levels."""
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        if str(exc).startswith("depth limit exceeded"):  # orjson's own bound (1024 levels)
            raise InputTooDeep(f"nested more than {max_nesting} levels deep (the limit is --max-nesting)") from None
        raise
    check_nesting(text, max_nesting)
    _check_integers(text)
    # orjson's values are fresh: the wrappers are converted in place, plain JSON is returned as is
    if not _may_hold_wrappers(text):
        return value
    escaped = "\\u0024" in text if isinstance(text, str) else b"\\u0024" in text
    return decode_parsed(value, None if escaped else text.count('"$' if isinstance(text, str) else b'"$'))


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
    """One input line: its 1-based number and either a record or a failure (`error`, of `type`)."""

    number: int
    record: dict | None
    error: str | None = None
    type: str = "malformed_input"


def raw_lines(stream, max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES) -> Iterator[bytes | None]:
    """The lines of a byte stream, split at b"\\n" only (a bare \\r is JSON whitespace), a leading
    byte order mark dropped; None for a line longer than `max_record_bytes`, which is skipped
    without being held. `parse_line` reads each one as `iter_lines` does."""
    first = True
    while True:
        raw = stream.readline(max_record_bytes + 1)
        if not raw:
            return
        if first:
            first = False
            raw = strip_bom(raw)  # a UTF-8 byte order mark some editors write
        if len(raw) > max_record_bytes and not raw.endswith(b"\n"):
            while raw and not raw.endswith(b"\n"):
                raw = stream.readline(1 << 20)
            yield None
            continue
        yield raw


def is_blank(raw: bytes | None) -> bool:
    """True for a line `iter_lines` skips (only whitespace)."""
    return raw is not None and not raw.strip()


def parse_line(number: int, raw: bytes | None, *, max_nesting: int = DEFAULT_MAX_NESTING,
               max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES) -> Line:
    """The `Line` of one non-blank line of `raw_lines` (None: one longer than `max_record_bytes`)."""
    if raw is None:
        return Line(number, None, f"line {number}: the record is larger than {max_record_bytes} bytes "
                                  "(the limit is --max-record-bytes)", InputTooLarge.type)
    try:
        record = loads(raw, max_nesting=max_nesting)
    except InputTooDeep as exc:
        return Line(number, None, f"line {number}: {exc}", exc.type)
    except orjson.JSONDecodeError as exc:
        # orjson counts lines and columns within this one line: name the column only
        return Line(number, None, f"line {number}: malformed JSON: {describe_json_error(exc, raw, one_line=True)}")
    except InputError as exc:
        return Line(number, None, f"line {number}: malformed JSON: {exc}")
    if not isinstance(record, dict):
        return Line(number, None, f"line {number}: expected a JSON object, got {type(record).__name__}")
    return Line(number, record)


def iter_lines(stream: IO[bytes], *, max_nesting: int = DEFAULT_MAX_NESTING,
               max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES) -> Iterator[Line]:
    """Parse a JSONL byte stream; blank lines are skipped, bad ones become errors.

    A line is a record of at most `max_record_bytes` bytes nested at most
    `max_nesting` levels; a longer one is `input_too_large`, a deeper one
    `input_too_deep`, an unreadable one `malformed_input`."""
    for number, raw in enumerate(raw_lines(stream, max_record_bytes), start=1):
        if not is_blank(raw):
            yield parse_line(number, raw, max_nesting=max_nesting, max_record_bytes=max_record_bytes)


def read_records(source: str | IO[bytes] = "-", *, strict: bool = False, stage: str = "input",
                 max_nesting: int = DEFAULT_MAX_NESTING,
                 max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES) -> Iterator[dict]:
    """Yield the records of a JSONL file or '-' (stdin).

    A malformed line yields `{"line": N, "failure": {...}}` so that it keeps
    its place in the output; with `strict=True` it raises InputError instead.
    Limits as in `iter_lines`.
    """
    with open_input(source) as stream:
        for line in iter_lines(stream, max_nesting=max_nesting, max_record_bytes=max_record_bytes):
            if line.error is None:
                yield line.record
            elif strict:
                raise InputError(line.error)
            else:
                yield {"line": line.number, "failure": failure(stage, line.type, line.error)}


def open_input(source: str | IO[bytes] = "-"):
    """A binary input stream for a path, '-' (stdin) or an open file."""
    return _open_stream(source, "read", sys.stdin, "rb")


def open_output(target: str | IO = "-", *, append: bool = False):
    """A binary output stream for a path (its missing parent folders are made), '-' (stdout) or an
    open file.

    A path is started anew (or added to with `append=True`) and opened in append
    mode either way, so each write lands at the end of the file."""
    return _open_stream(target, "write", sys.stdout, "ab" if append else "wb")


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
        if verb == "read":  # `example:tasks/clinic.jsonl`: a file installed with nlq (nlq.examples)
            where = examples.resolve(where)
        try:
            if verb == "write":  # `-o out/run.jsonl` makes `out/`
                Path(where).parent.mkdir(parents=True, exist_ok=True)
            f = open(where, mode) if mode != "wb" else os.fdopen(
                os.open(where, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o666), "wb")
        except OSError as exc:
            raise InputError(f"cannot {verb} {where}: {exc.strerror}") from None
        with f:
            yield f


def write_records(records: Iterable[dict], target: str | IO = "-", *, append: bool = False,
                  encode: Callable[[dict], bytes] | None = None) -> int:
    """Write records as JSONL (relaxed Extended JSON), one write per line. Returns the count.
    `encode` (default `dumps`) gives a record's bytes: a faster twin of `dumps` for records of
    a known shape (the grounding index's `nlq.index.dumps`), never other bytes.

    Each line goes out whole in one system call, under an exclusive lock when the
    output is a file, so processes writing to one file (`append=True`, or a shell's
    `>>`) never interleave parts of lines. A record that cannot be encoded is
    replaced in its place by a typed failure record (`unwritable`); a write the
    system refuses (a full disk) raises OutputError and stops the run."""
    n = 0
    with open_output(target, append=append) as out:
        write = _line_writer(out, target)
        for record in records:
            write(_encode_line(record, n + 1, encode or dumps))
            n += 1
    return n


def _encode_line(record: dict, position: int, encode: Callable[[dict], bytes] = dumps) -> bytes:
    try:
        return encode(record) + b"\n"
    except (TypeError, ValueError, RecursionError) as exc:  # orjson's JSONEncodeError is a TypeError
        why = "it nests more than 254 levels" if "Recursion" in f"{type(exc).__name__}{exc}" else str(exc)
        out = {"id": record.get("id"), "output": position,
               "failure": failure("output", "unwritable", f"record {position} cannot be written as JSON: {why}")}
        return dumps({k: v for k, v in out.items() if v is not None}) + b"\n"


def _line_writer(out, target):
    """A function writing one whole line to `out` (see `write_records`)."""
    name = "standard output" if target == "-" else getattr(target, "name", target)

    def refused(exc: OSError) -> OutputError:
        return OutputError(f"cannot write {name}: {exc.strerror or exc}")

    try:
        fd = out.fileno()
        out.flush()
    except (AttributeError, ValueError, OSError):  # an in-memory stream: no descriptor to lock
        fd = None
    if fd is None:
        def write(data: bytes) -> None:
            try:
                out.write(data)
                out.flush()
            except OSError as exc:
                raise refused(exc) from None
        return write
    try:
        lockable = stat.S_ISREG(os.fstat(fd).st_mode)
    except OSError:
        lockable = False

    def write(data: bytes) -> None:
        view = memoryview(data)
        try:
            if lockable:
                fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                while view:
                    view = view[os.write(fd, view):]
            finally:
                if lockable:
                    fcntl.flock(fd, fcntl.LOCK_UN)
        except OSError as exc:
            if exc.errno == errno.EPIPE:  # the reader went away (SIGPIPE is ignored here)
                raise OutputError(f"cannot write {name}: the reader closed the pipe") from None
            raise refused(exc) from None
    return write


def has_failure(record: dict) -> bool:
    """True when an earlier stage marked the record as failed."""
    return bool(record.get("failure"))


def load_json_file(path) -> object:
    """Read a whole JSON file (Extended JSON aware, a leading byte order mark ignored)."""
    try:
        with open(path, "rb") as f:
            text = strip_bom(f.read())
        return loads(text)
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror}") from None
    except orjson.JSONDecodeError as exc:
        raise InputError(f"{path}: malformed JSON: {describe_json_error(exc, text)}") from None
    except InputTooDeep as exc:
        raise InputTooDeep(f"{path}: {exc}") from None


def strip_bom(data: bytes) -> bytes:
    """The bytes without a leading UTF-8 byte order mark."""
    return data[len(_BOM):] if data.startswith(_BOM) else data


__all__ = ["from_extjson", "to_extjson", "loads", "dumps", "read_records", "write_records",
           "iter_lines", "raw_lines", "is_blank", "parse_line", "open_input", "open_output", "has_failure", "load_json_file", "strip_bom", "Line",
           "MISSING", "nesting_depth", "check_nesting", "DEFAULT_MAX_NESTING", "MAX_NESTING",
           "DEFAULT_MAX_RECORD_BYTES", "check_integers", "utf8_error", "describe_json_error"]
