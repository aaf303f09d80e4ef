"""The embedded backend: JSON/JSONL files served by nlq's own MQL engine.

Layouts of `--data DIR` (both may be mixed):

- `DIR/<db>.json` shaped `{"<collection>": [docs], ...}` (the TEND v1 layout);
- `DIR/<db>/<collection>.json` (a JSON array) or `.jsonl` (Extended JSON lines).

A malformed line of a `.jsonl` file (or an array element that is not a
document) is reported once per file, with the file and the line: fatal
(BackendError) by default, skipped with one warning with `skip_bad_lines`.

Collections are read lazily, each when it is first used, and documents are
never copied by the backend; the engine does not modify them either. A query
reads its collection whole (and those its `$lookup`s name). Counting and
sampling a `.jsonl` collection that has not been read (what `nlq index` does)
read only its lines: the count is its number of non-blank lines, and only the
sampled lines are parsed (plus, when the collection has `_id`s, each line's
`_id`, read from the text when the line starts with a plain `_id` it holds
once, else parsed), so a malformed line outside the sample is reported only by
the commands that read the collection whole. With `skip_bad_lines` the
collection is read whole, so the count leaves the malformed lines out. A
`.json` file (one array, or a `<db>.json` object) is always parsed whole.
"""

from __future__ import annotations

import gc
import hashlib
import re
from contextlib import contextmanager
from pathlib import Path
from typing import Callable

from nlq import examples, io
from nlq.backends import sampling
from nlq.backends.base import Closing
from nlq.errors import BackendError, BadDatabaseNameError, InputError, json_type
from nlq.mql.limits import DEFAULT_MAX_BYTES, DEFAULT_MAX_ROWS, DEFAULT_TIMEOUT
from nlq.mql.values import ObjectId, sort_key

# A line that opens with its `_id` (as mongoexport writes them): an ObjectId, a small
# integer or a string without escapes, read from the text when "_id" occurs once in the line
# and no \u escape could spell another one.
_WS = rb"[ \t\r\n]*"
_ID_OBJECTID = re.compile(_WS + rb'\{' + _WS + rb'"_id"' + _WS + rb':' + _WS + rb'\{' + _WS + rb'"\$oid"' + _WS
                          + rb':' + _WS + rb'"([0-9a-fA-F]{24})"' + _WS + rb'\}' + _WS + rb'[,}]')
_ID_INTEGER = re.compile(_WS + rb'\{' + _WS + rb'"_id"' + _WS + rb':' + _WS + rb'(-?(?:0|[1-9][0-9]{0,17}))'
                         + _WS + rb'[,}]')
_ID_STRING = re.compile(_WS + rb'\{' + _WS + rb'"_id"' + _WS + rb':' + _WS + rb'"([^"\\\x00-\x1f]*)"' + _WS
                        + rb'[,}]')


@contextmanager
def _collector_paused():
    """No garbage collection while documents are read: they hold no reference cycles, and
    full collections scanning a growing heap would cost more than the reading itself."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def check_db_name(db, root: Path) -> None:
    """BadDatabaseNameError unless `db` names an entry directly inside `root` (the --data folder):
    no path separator, no `.` or `..`, no absolute path, no NUL, for a --db flag and a record's
    `db` alike (MongoDB's own database names hold no `/`, `\\` or `.` either)."""
    if type(db) is not str or not db or db in (".", "..") or any(c in db for c in "/\\\0") \
            or Path(db).is_absolute() or Path(db).drive:
        raise BadDatabaseNameError(f"{db!r} is not a database name inside --data {root} (a database is a "
                                   "<db>.json file or a <db>/ folder directly inside it; path separators, "
                                   "'.' and '..' are refused)")


class EmbeddedBackend(Closing):
    name = "embedded"

    def __init__(self, root: str | Path, *, skip_bad_lines: bool = False,
                 warn: Callable[[str], None] | None = None):
        self.root = Path(root)
        self.skip_bad_lines, self.warn = skip_bad_lines, warn
        if not self.root.is_dir():
            raise BackendError(f"--data {root}: not a directory",
                               hint="point --data at a folder of <db>.json files or <db>/<collection>.jsonl")
        self._sources: dict[str, dict[str, Path]] = {}  # db -> collection -> the file that holds it
        self._singles: dict[str, dict[str, list[dict]]] = {}  # the collections of <db>.json files
        self._docs: dict[tuple[str, str], list[dict]] = {}  # collections read whole
        self._counts: dict[tuple[str, str], int] = {}  # line counts of .jsonl collections not read
        self._last_lines: _Lines | None = None

    # -- discovery -----------------------------------------------------------------
    def databases(self) -> list[str]:
        found = {p.stem for p in self.root.glob("*.json")}
        found |= {p.name for p in self.root.iterdir()
                  if p.is_dir() and any(p.glob("*.json*"))}
        return sorted(found)

    def _catalog(self, db: str) -> dict[str, Path]:
        """{collection: the file that holds it} (a later file holding a name wins, as it would
        overwrite the earlier one); a `<db>.json` file is read here, its names are inside it."""
        cached = self._sources.get(db)
        if cached is not None:
            return cached
        single = self.root / f"{db}.json"
        sources: dict[str, Path] = {}
        for path in self._files(db):
            if path == single:
                for name in self._single(db):
                    sources[name] = single
            else:
                sources[path.stem] = path
        self._sources[db] = sources
        return sources

    def _single(self, db: str) -> dict[str, list[dict]]:
        cached = self._singles.get(db)
        if cached is not None:
            return cached
        single = self.root / f"{db}.json"
        with _collector_paused():
            data = io.load_json_file(single)
        if not isinstance(data, dict) or not all(isinstance(v, list) for v in data.values()):
            raise BackendError(f"{single}: expected {{collection: [documents]}}")
        problems: list[str] = []
        collections = {name: _documents(docs, problems, where=f"collection {name!r}, ")
                       for name, docs in data.items()}
        self._bad(single, problems)
        self._singles[db] = collections
        return collections

    def _read(self, db: str, collection: str, path: Path) -> list[dict]:
        """All documents of a collection's file (reported once: malformed lines or elements)."""
        if path.name == f"{db}.json" and path.parent == self.root:
            return self._single(db)[collection]
        with _collector_paused():
            if path.suffix == ".jsonl":
                problems, docs = [], []
                with open(path, "rb") as f:
                    for line in io.iter_lines(f):
                        if line.error is None:
                            docs.append(line.record)
                        else:
                            problems.append(line.error)
                self._bad(path, problems)
                return docs
            docs = io.load_json_file(path)
        if not isinstance(docs, list):
            raise BackendError(f"{path}: expected a JSON array of documents")
        problems = []
        kept = _documents(docs, problems)
        self._bad(path, problems)
        return kept

    def _bad(self, path: Path, problems: list[str]) -> None:
        """Report a data file's malformed lines or elements once: fatal (BackendError), or
        skipped with one warning when `skip_bad_lines`."""
        if not problems:
            return
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        if not self.skip_bad_lines:
            raise BackendError(f"{path}, {problems[0]}{more}",
                               hint="fix the file, or pass --skip-bad-lines to skip malformed lines")
        if self.warn is not None:
            self.warn(f"{path}: skipped {len(problems)} malformed line{'s' if len(problems) > 1 else ''} "
                      f"(first: {problems[0]})")

    def _files(self, db: str) -> list[Path]:
        """The files that hold `db`, in reading order (BackendError when there are none,
        BadDatabaseNameError for a name that would reach outside --data)."""
        check_db_name(db, self.root)
        single = self.root / f"{db}.json"
        folder = self.root / db
        if not single.is_file() and not folder.is_dir():
            known = ", ".join(self.databases()) or "none"
            raise BackendError(f"no database {db!r} under {self.root} (found: {known})")
        files = [single] if single.is_file() else []
        if folder.is_dir():
            files += [path for path in sorted(folder.iterdir()) if path.is_file() and (
                path.suffix == ".jsonl" or (path.suffix == ".json" and path.name != "manifest.json"))]
        return files

    def content_hash(self, db: str) -> str:
        """SHA-256 (hex) of the names and bytes of the files that hold `db`: equal hashes, equal data."""
        digest = hashlib.sha256()
        for path in self._files(db):
            digest.update(path.relative_to(self.root).as_posix().encode() + b"\0")
            try:
                with open(path, "rb") as f:
                    for chunk in iter(lambda: f.read(1 << 20), b""):
                        digest.update(chunk)
            except OSError as exc:
                raise BackendError(f"cannot read {path}: {exc.strerror}") from None
            digest.update(b"\0")
        return digest.hexdigest()

    def collections(self, db: str) -> list[str]:
        return sorted(self._catalog(db))

    def documents(self, db: str, collection: str) -> list[dict]:
        """All documents of a collection (empty for a collection that does not exist,
        as MongoDB answers an aggregate on a missing collection)."""
        key = (db, collection)
        cached = self._docs.get(key)
        if cached is not None:
            return cached
        path = self._catalog(db).get(collection)
        docs = [] if path is None else self._read(db, collection, path)
        self._docs[key] = docs
        self._counts.pop(key, None)
        return docs

    def _by_lines(self, db: str, collection: str) -> Path | None:
        """The .jsonl file to count or sample by its lines (None: use the documents read whole)."""
        if (db, collection) in self._docs or self.skip_bad_lines:
            return None
        path = self._catalog(db).get(collection)
        return path if path is not None and path.suffix == ".jsonl" else None

    def _lines_of(self, path: Path) -> "_Lines":
        """The lines of a .jsonl file, kept from `count` for the `sample` that follows it."""
        if self._last_lines is None or self._last_lines.path != path:
            self._last_lines = _Lines(path)
        return self._last_lines

    def count(self, db: str, collection: str) -> int:
        path = self._by_lines(db, collection)
        if path is None:
            return len(self.documents(db, collection))
        key = (db, collection)
        if key not in self._counts:
            self._counts[key] = len(self._lines_of(path))
        return self._counts[key]

    def sample(self, db: str, collection: str, n: int, seed: int = 0) -> list[dict]:
        path = self._by_lines(db, collection)
        if path is None:
            return sampling.sample(self.documents(db, collection), n, seed)
        with _collector_paused():
            lines, self._last_lines = self._lines_of(path), None
            return self._sample_lines(lines, n, seed)

    def _sample_lines(self, lines: "_Lines", n: int, seed: int) -> list[dict]:
        """The sample of a .jsonl collection parsing only the lines it needs (see the module
        docstring): the same documents as `sampling.sample` over the file read whole."""
        problems: list[tuple[int, str]] = []
        order = None
        if lines.may_hold_ids:
            order = lines.objectid_order()
            if order is None:
                keys = []
                for i in range(len(lines)):
                    number, raw = lines.line(i)
                    key = _line_id_key(number, raw)
                    if type(key) is io.Line:
                        problems.append((number, key.error))
                        key = None
                    keys.append(key)
                order = sampling.key_order(keys)
        docs = []
        for position in sampling.positions(len(lines), n, seed):
            number, raw = lines.line(position if order is None else order[position])
            line = io.parse_line(number, raw)
            if line.error is None:
                docs.append(line.record)
            else:
                problems.append((number, line.error))
        self._bad(lines.path, [message for _, message in sorted(set(problems))])
        return docs

    def aggregate(self, db: str, collection: str, pipeline: list, *,
                  timeout: float = DEFAULT_TIMEOUT, max_rows: int = DEFAULT_MAX_ROWS,
                  max_bytes: int = DEFAULT_MAX_BYTES) -> list[dict]:
        from nlq.mql import engine  # imported by the first query (`nlq index` runs none)

        return engine.aggregate(self.documents(db, collection), pipeline,
                                catalog=lambda name: self.documents(db, name),
                                timeout=timeout, max_rows=max_rows, max_bytes=max_bytes)


WHOLE_FILE_BYTES = 256 << 20  # a .jsonl file up to this size is read in one piece, a larger one by line
_OBJECTID_BRACKET = sort_key(ObjectId(b"\0" * 12))[0]


# `_ID_OBJECTID` right after a newline: the same matches as at every line start (`(?m)^`), found
# several times faster (the search skips from newline to newline instead of trying every byte).
_ID_OBJECTID_AFTER_NEWLINE = re.compile(rb"\n" + _ID_OBJECTID.pattern)


class _Lines:
    """The non-blank lines of a .jsonl file, each as `io.raw_lines` reads it."""

    def __init__(self, path: Path):
        self.path = path
        self.text = b""
        try:
            if path.stat().st_size > WHOLE_FILE_BYTES:  # by line: memory bounded by the longest one
                with open(path, "rb") as f:
                    self.pieces = [raw for raw in io.raw_lines(f)]
                self.numbers = [i for i, raw in enumerate(self.pieces) if not io.is_blank(raw)]
                self.bare_last, self.newline, self.may_hold_ids = -1, b"", True  # raw_lines keeps newlines
                return
            with open(path, "rb") as f:
                self.text = io.strip_bom(f.read())
        except OSError as exc:
            raise BackendError(f"cannot read {path}: {exc.strerror}") from None
        self.pieces = self.text.split(b"\n")
        self.numbers = [i for i, raw in enumerate(self.pieces) if raw and not raw.isspace()]
        self.bare_last, self.newline = len(self.pieces) - 1, b"\n"  # the last piece has no newline
        if len(self.text) > io.DEFAULT_MAX_RECORD_BYTES:  # lines too long read as io.raw_lines reads them
            self.pieces = [raw if len(raw) <= io.DEFAULT_MAX_RECORD_BYTES else None for raw in self.pieces]
        self.may_hold_ids = b'"_id"' in self.text or _may_escape_ascii(self.text)

    def __len__(self) -> int:
        return len(self.numbers)

    def line(self, i: int) -> tuple[int, bytes | None]:
        """(line number, raw line) of the i-th non-blank line; the raw line ends with its newline
        (so a parse error names what `io.iter_lines` names), None when it is too long."""
        index = self.numbers[i]
        raw = self.pieces[index]
        return index + 1, raw if raw is None or index == self.bare_last else raw + self.newline

    def objectid_order(self) -> list[int] | None:
        """`sampling.key_order` of the lines' `_id`s when every line opens with an ObjectId `_id` it
        holds once (read from the text in one pass), else None."""
        text = self.text
        if not text or _may_escape_ascii(text):
            return None
        first = _ID_OBJECTID.match(text)
        found = _ID_OBJECTID_AFTER_NEWLINE.findall(text, first.end() if first else 0)
        if first:
            found.insert(0, first.group(1))
        if len(found) != len(self.numbers) or text.count(b'"_id"') != len(found):
            return None
        # all keys share the ObjectId bracket, so the order is that of the 12 bytes (that of
        # their hex digits when none is upper-case); a stable sort keeps equal ones in file
        # order, as key_order does
        if b"".join(found).translate(None, b"0123456789abcdef"):
            found = [bytes.fromhex(hex_id.decode()) for hex_id in found]
        return sorted(range(len(found)), key=found.__getitem__)


def _may_escape_ascii(text: bytes) -> bool:
    """Whether a text may spell an ASCII character as a `\\u00XX` escape (a key written so can
    spell `_id`); a text without any backslash is known not to at once (a one-byte search)."""
    return b"\\" in text and b"\\u00" in text


def _line_id_key(number: int, raw: bytes | None):
    """The `sort_key` of one line's `_id` (None without one), read from the text when it can
    be (see the module docstring), else parsed; the failed `io.Line` of a line that cannot be
    parsed."""
    if raw is not None and b"\\u00" not in raw:
        occurrences = raw.count(b'"_id"')
        if occurrences == 0:
            return None  # no key of the line spells _id
        if occurrences == 1:
            found = _ID_OBJECTID.match(raw)
            if found:
                return (_OBJECTID_BRACKET, bytes.fromhex(found.group(1).decode()))
            found = _ID_INTEGER.match(raw)
            if found:
                return sort_key(int(found.group(1)))
            found = _ID_STRING.match(raw)
            if found:
                try:
                    return sort_key(found.group(1).decode())
                except UnicodeDecodeError:
                    pass
    line = io.parse_line(number, raw)
    if line.error is not None:
        return line
    return None if "_id" not in line.record else sort_key(line.record["_id"])


def _documents(docs: list, problems: list[str], where: str = "") -> list:
    """The elements of a JSON array that are documents; each other one noted in `problems`."""
    kept = []
    for i, doc in enumerate(docs, start=1):
        if isinstance(doc, dict):
            kept.append(doc)
        else:
            problems.append(f"{where}element {i}: expected a document, got {json_type(doc)}")
    return kept


def open_backend(data: str | None = None, uri: str | None = None, *, timeout: float = DEFAULT_TIMEOUT,
                 skip_bad_lines: bool = False, warn: Callable[[str], None] | None = None):
    """The backend for `--data DIR` or `--uri URI` (`file:DIR` is the embedded one).

    `timeout` bounds every operation a server backend sends that is not a query
    (listing, counting, sampling); queries take their own `timeout`.

    Library-level check of the choice (the CLI rejects misuse first, as a usage
    error): exactly one of `data` and `uri`, `file:` included. `skip_bad_lines`
    and `warn` apply to data files (see EmbeddedBackend)."""
    if data and uri:
        raise InputError("give either --data or --uri, not both")
    if uri and uri.startswith("file:"):
        data, uri = uri[len("file:"):], None
    if data:  # `example` / `example:worlds`: the worlds installed with nlq (nlq.examples)
        data = examples.resolve(data)
    if data:
        return EmbeddedBackend(data, skip_bad_lines=skip_bad_lines, warn=warn)
    if uri:
        from nlq.backends.mongo import MongoBackend

        return MongoBackend(uri, timeout=timeout)
    raise InputError("no database: give --data DIR (embedded) or --uri mongodb://... (or set NLQ_DATA / NLQ_URI)")
