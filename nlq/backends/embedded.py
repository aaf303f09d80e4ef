"""The embedded backend: exported data files served by nlq's own MQL engine.

Layouts of `--data DIR` (both may be mixed; docs/DATA.md for users):

- `DIR/<db>.json` shaped `{"<collection>": [docs], ...}` (the TEND v1 layout);
- `DIR/<db>/<collection>.<ext>`, one file per collection:
  - `.jsonl`: Extended JSON, one document per line;
  - `.json`: a JSON array of documents when its first non-blank byte is `[`
    (`mongoexport --jsonArray`), else one document per line (mongoexport's default);
  - `.bson`: a `mongodump` file (documents back to back); `<collection>.metadata.json`
    beside it is mongodump's own and ignored, as is a `prelude.json` at the top of a dump;
  - any of these gzip-compressed with `.gz` added (`mongodump --gzip`, `gzip export.json`).

Every document is served as an insert would store it (the MongoDB manual, "Documents":
the `_id` field is always the first field; an insert adds an ObjectId `_id` to a document
without one): a stored `_id` is moved first, and a document without one gets
`synthetic_id(db, collection, position)`, a deterministic ObjectId of its 0-based position
among the collection's documents. Every command and every run sees the same `_id`s, and
they ascend in file order after every stored ObjectId (as fresh ones would).

A malformed line of a line file (or an array element that is not a document) is
reported once per file, with the file and the line: fatal (BackendError) by default,
skipped with one warning with `skip_bad_lines`.

Collections are read lazily, each when it is first used, and documents are
never copied by the backend once served; the engine does not modify them either. A query
reads its collection whole (and those its `$lookup`s name). Counting and
sampling a line file that has not been read (what `nlq index` does)
read only its lines: the count is its number of non-blank lines, and only the
sampled lines are parsed (plus, when the collection has `_id`s, each line's
`_id`, read from the text when the line starts with a plain `_id` it holds
once, else parsed), so a malformed line outside the sample is reported only by
the commands that read the collection whole. Counting and sampling an array file
split it into its elements' byte spans (`_Array`) and parse only the sampled ones (and
each element's `_id` when the collection has `_id`s), with the same reporting rule. With
`skip_bad_lines` the collection is read whole, so the count
leaves the malformed lines out. A `<db>.json` object and a `.bson` file are read whole.
"""

from __future__ import annotations

import gc
import gzip
import hashlib
import re
import zlib
from contextlib import contextmanager
from pathlib import Path
from typing import Callable

import orjson

from nlq import examples, io
from nlq.backends import sampling
from nlq.backends.base import Closing
from nlq.errors import BackendError, BadDatabaseNameError, InputError, json_type
from nlq.mql.limits import DEFAULT_MAX_BYTES, DEFAULT_MAX_ROWS, DEFAULT_TIMEOUT
from nlq.mql.values import ObjectId, sort_key

LINES, ARRAY, BSON = "lines", "array", "bson"  # how a collection's file holds its documents
_SUFFIXES = (".jsonl.gz", ".json.gz", ".bson.gz", ".jsonl", ".json", ".bson")


def collection_name(path: Path) -> str | None:
    """The collection a `<db>/` folder's file holds (None: not a data file, such as mongodump's
    `<collection>.metadata.json`)."""
    name = path.name
    for suffix in _SUFFIXES:
        if name.endswith(suffix):
            stem = name[:-len(suffix)]
            if not stem or (suffix.startswith(".json.") or suffix == ".json") and stem.endswith(".metadata"):
                return None
            return stem
    return None


def _id_seed(db: str, collection: str) -> int:
    """39 bits of SHA-256 of the collection's name: the middle of its synthesized ObjectIds."""
    return int.from_bytes(hashlib.sha256(f"{db}\0{collection}".encode()).digest()[:5], "big") >> 1


def _synthetic(seed: int, position: int) -> ObjectId:
    return ObjectId(((0xFFFFFFFF << 64) | (seed << 24) + position).to_bytes(12, "big"))


def synthetic_id(db: str, collection: str, position: int) -> ObjectId:
    """The `_id` the embedded backend gives the document at `position` (0-based, in file order)
    of a collection when it has none: an ObjectId whose 4-byte timestamp is ffffffff (so it
    sorts after every ObjectId a server made before 2106, as a fresh insert's would), then 39
    bits of the collection's name hash, then the position (3 bytes, carrying into the middle
    part past 16,777,215): the same for every command and every run, unique in the collection
    and ascending in file order.

        >>> synthetic_id("clinic", "patients", 0) < synthetic_id("clinic", "patients", 1)
        True
    """
    return _synthetic(_id_seed(db, collection), position)


def _open_data(path: Path):
    """A binary stream of a data file, decompressed when its name ends in `.gz`."""
    try:
        return gzip.open(path, "rb") if path.name.endswith(".gz") else open(path, "rb")
    except OSError as exc:
        raise BackendError(f"cannot read {path}: {exc.strerror}") from None


def _read_bytes(path: Path) -> bytes:
    """The whole (decompressed) content of a data file."""
    with _open_data(path) as f:
        try:
            return f.read()
        except OSError as exc:
            raise BackendError(f"{path}: cannot be read ({exc.strerror or exc})") from None
        except (EOFError, zlib.error) as exc:  # a damaged or truncated .gz
            raise BackendError(f"{path}: cannot be decompressed ({exc})") from None


def _bson_documents(data: bytes, problems: list[str]) -> list[dict]:
    """The documents of a mongodump `.bson` file (back to back, each prefixed by its int32
    size), decoded as pymongo decodes a server's replies (`tz_aware=True`); a damaged one
    noted in `problems` with its number and byte offset, and the reading stops there."""
    import bson
    from bson.codec_options import CodecOptions

    options = CodecOptions(tz_aware=True)
    try:
        return bson.decode_all(data, options)
    except Exception:  # noqa: BLE001 - located below, document by document
        pass
    docs, at = [], 0
    while at < len(data):
        size = int.from_bytes(data[at:at + 4], "little") if at + 4 <= len(data) else 0
        try:
            if size < 5 or at + size > len(data):
                raise ValueError(f"a document size of {size} bytes does not fit the {len(data) - at} left")
            docs.append(bson.decode(data[at:at + size], options))
        except Exception as exc:  # noqa: BLE001 - bson raises InvalidBSON, ValueError, OverflowError...
            problems.append(f"document {len(docs) + 1} (byte {at}): not valid BSON: {exc}")
            break
        at += size
    return docs

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
        self._last_lines: _Lines | _Array | None = None
        self._kinds: dict[Path, str] = {}  # data file -> LINES, ARRAY or BSON
        self._file_ordered: set[tuple[str, str]] = set()  # collections whose _ids all were synthesized

    # -- discovery -----------------------------------------------------------------
    def databases(self) -> list[str]:
        folders = {p.name: p for p in self.root.iterdir() if p.is_dir()
                   and any(collection_name(f) is not None for f in p.iterdir() if f.is_file())}
        found = {p.stem for p in self.root.glob("*.json") if not self._dump_prelude(p, folders.values())}
        return sorted(found | set(folders))

    @staticmethod
    def _dump_prelude(path: Path, folders) -> bool:
        """Whether a top-level .json file is the `prelude.json` mongodump writes beside its
        database folders (of .bson files), not a database."""
        return path.name == "prelude.json" and any(
            collection_name(f) is not None and f.name.removesuffix(".gz").endswith(".bson")
            for folder in folders for f in folder.iterdir())

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
                sources[collection_name(path)] = path
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
        for name, docs in collections.items():
            self._served(db, name, docs)
        self._singles[db] = collections
        return collections

    def _read(self, db: str, collection: str, path: Path) -> list[dict]:
        """All documents of a collection's file (reported once: malformed lines or elements),
        as an insert stores them (see the module docstring)."""
        if path.name == f"{db}.json" and path.parent == self.root:
            return self._single(db)[collection]
        kind = self._kind(path)
        with _collector_paused():
            if kind == BSON:
                problems: list[str] = []
                docs = _bson_documents(_read_bytes(path), problems)
            elif kind == LINES:
                problems, docs = [], []
                with _open_data(path) as f:
                    try:
                        for line in io.iter_lines(f):
                            if line.error is None:
                                docs.append(line.record)
                            else:
                                problems.append(line.error)
                    except (OSError, EOFError, zlib.error) as exc:  # a damaged .gz
                        raise BackendError(f"{path}: cannot be decompressed ({exc})") from None
                if problems and not path.name.removesuffix(".gz").endswith(".jsonl"):
                    problems[0] += (" (a .json file that does not open with '[' is read as one document per line,"
                                    " as mongoexport writes it)")
            else:
                text = io.strip_bom(_read_bytes(path))
                try:
                    parsed = io.loads(text)
                except orjson.JSONDecodeError as exc:
                    raise InputError(f"{path}: malformed JSON: {io.describe_json_error(exc, text)}") from None
                except InputError as exc:
                    raise type(exc)(f"{path}: {exc}") from None
                if not isinstance(parsed, list):
                    raise BackendError(f"{path}: expected a JSON array of documents")
                problems = []
                docs = _documents(parsed, problems)
        self._bad(path, problems)
        return self._served(db, collection, docs)

    def _served(self, db: str, collection: str, docs: list[dict]) -> list[dict]:
        """The documents as an insert stores them, in place: `_id` first, synthesized when absent."""
        seed = None
        synthesized = 0
        for i, doc in enumerate(docs):
            if "_id" not in doc:
                if seed is None:
                    seed = _id_seed(db, collection)
                docs[i] = {"_id": _synthetic(seed, i), **doc}
                synthesized += 1
            elif next(iter(doc)) != "_id":
                docs[i] = {"_id": doc["_id"], **doc}
        if synthesized == len(docs):
            self._file_ordered.add((db, collection))  # _id order is file order: sampling needs no sort
        return docs

    def _kind(self, path: Path) -> str:
        """LINES, ARRAY or BSON: a `.json` file is an array when its first non-blank byte is `[`."""
        kind = self._kinds.get(path)
        if kind is None:
            name = path.name.removesuffix(".gz")
            if name.endswith(".bson"):
                kind = BSON
            elif name.endswith(".jsonl"):
                kind = LINES
            else:
                try:
                    with _open_data(path) as f:
                        head = io.strip_bom(f.read(1 << 16)).lstrip()
                except (OSError, EOFError, zlib.error) as exc:
                    raise BackendError(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}") from None
                kind = ARRAY if head[:1] == b"[" else LINES
            self._kinds[path] = kind
        return kind

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
            files += [path for path in sorted(folder.iterdir())
                      if path.is_file() and path.name != "manifest.json" and collection_name(path) is not None]
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
        """The line or array file to count or sample without serving every document (None: use
        the documents read whole)."""
        if (db, collection) in self._docs or self.skip_bad_lines:
            return None
        path = self._catalog(db).get(collection)
        if path is None or (path.name == f"{db}.json" and path.parent == self.root):
            return None
        return path if self._kind(path) in (LINES, ARRAY) else None

    def _lines_of(self, path: Path) -> "_Lines | _Array":
        """The lines (or parsed array) of a file, kept from `count` for the `sample` that follows it."""
        if self._last_lines is None or self._last_lines.path != path:
            self._last_lines = None  # the previous file's memory goes first
            with _collector_paused():
                self._last_lines = _Lines(path) if self._kind(path) == LINES else _Array(path)
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
            docs = self.documents(db, collection)
            if (db, collection) in self._file_ordered:
                return [docs[i] for i in sampling.positions(len(docs), n, seed)]
            return sampling.sample(docs, n, seed)
        with _collector_paused():
            lines, self._last_lines = self._lines_of(path), None
            if isinstance(lines, _Array):
                return self._sample_array(lines, db, collection, n, seed)
            return self._sample_lines(lines, db, collection, n, seed)

    def _sample_array(self, array: "_Array", db: str, collection: str, n: int, seed: int) -> list[dict]:
        """The sample of an array file parsing only the elements it needs: the same documents as
        `sampling.sample` over the file read whole."""
        id_seed = _id_seed(db, collection)
        order = None
        if b'"_id"' in array.text or _may_escape_ascii(array.text):
            order = array.objectid_order()
        if order is None and (b'"_id"' in array.text or _may_escape_ascii(array.text)):
            keys = [array.id_key(i) for i in range(len(array))]
            if any(k is not None for k in keys):
                order = sampling.key_order([sort_key(_synthetic(id_seed, i)) if k is None else k
                                            for i, k in enumerate(keys)])
        docs = []
        for position in sampling.positions(len(array), n, seed):
            i = position if order is None else order[position]
            doc = array.element(i)
            if "_id" not in doc:
                doc = {"_id": _synthetic(id_seed, i), **doc}
            elif next(iter(doc)) != "_id":
                doc = {"_id": doc["_id"], **doc}
            docs.append(doc)
        return docs

    def _sample_lines(self, lines: "_Lines", db: str, collection: str, n: int, seed: int) -> list[dict]:
        """The sample of a line file parsing only the lines it needs (see the module
        docstring): the same documents as `sampling.sample` over the file read whole."""
        problems: list[tuple[int, str]] = []
        order = None
        id_seed = _id_seed(db, collection)
        if lines.may_hold_ids:
            order = lines.objectid_order()
            if order is None:
                from nlq.mql.values import sort_key

                keys = []
                for i in range(len(lines)):
                    number, raw = lines.line(i)
                    key = _line_id_key(number, raw)
                    if type(key) is io.Line:
                        problems.append((number, key.error))
                        key = None
                    keys.append(sort_key(_synthetic(id_seed, i)) if key is None else key)
                order = sampling.key_order(keys)
        docs = []
        for position in sampling.positions(len(lines), n, seed):
            i = position if order is None else order[position]
            number, raw = lines.line(i)
            line = io.parse_line(number, raw)
            if line.error is None:
                doc = line.record
                if "_id" not in doc:
                    doc = {"_id": _synthetic(id_seed, i), **doc}
                elif next(iter(doc)) != "_id":
                    doc = {"_id": doc["_id"], **doc}
                docs.append(doc)
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
    """The non-blank lines of a line file (decompressed), each as `io.raw_lines` reads it."""

    def __init__(self, path: Path):
        self.path = path
        self.text = b""
        compressed = path.name.endswith(".gz")
        try:
            size = path.stat().st_size * (8 if compressed else 1)  # a compressed file's size, guessed
        except OSError as exc:
            raise BackendError(f"cannot read {path}: {exc.strerror}") from None
        if size > WHOLE_FILE_BYTES:  # by line: memory bounded by the longest one
            with _open_data(path) as f:
                try:
                    self.pieces = [raw for raw in io.raw_lines(f)]
                except (OSError, EOFError, zlib.error) as exc:
                    raise BackendError(f"{path}: cannot be read ({exc})") from None
            self.numbers = [i for i, raw in enumerate(self.pieces) if not io.is_blank(raw)]
            self.bare_last, self.newline, self.may_hold_ids = -1, b"", True  # raw_lines keeps newlines
            return
        self.text = io.strip_bom(_read_bytes(path))
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


class _Array:
    """An array file split into its elements' byte spans without building them: `_sample_array`
    parses and converts only the sampled ones (and reads each element's `_id` when the
    collection has any). The split is a vectorized bracket count outside strings (numpy);
    a file it cannot split into documents (an element that is not one, brackets that do not
    balance) is parsed whole instead, and what is wrong with it reported as reading the file
    whole reports it. As with line files, an element outside the sample is checked only by the
    commands that read the collection whole."""

    def __init__(self, path: Path):
        self.path = path
        self.text = text = io.strip_bom(_read_bytes(path))
        spans = _element_spans(text)  # each sampled element is checked as `io.loads` checks a text
        if spans is None:  # not a plain array of documents: parse it whole to say what is wrong
            self._whole()
        self.starts, self.ends = spans

    def _whole(self) -> None:
        text = self.text
        try:
            parsed = io.loads(text)
        except orjson.JSONDecodeError as exc:
            raise InputError(f"{self.path}: malformed JSON: {io.describe_json_error(exc, text)}") from None
        except InputError as exc:  # InputTooDeep included
            raise type(exc)(f"{self.path}: {exc}") from None
        if not isinstance(parsed, list):
            raise BackendError(f"{self.path}: expected a JSON array of documents")
        problems: list[str] = []
        _documents(parsed, problems)
        if problems:
            more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
            raise BackendError(f"{self.path}, {problems[0]}{more}",
                               hint="fix the file, or pass --skip-bad-lines to skip malformed lines")
        raise BackendError(f"{self.path}: cannot be split into its documents")  # not reached: spans or parse fail

    def __len__(self) -> int:
        return len(self.starts)

    def raw(self, i: int) -> bytes:
        return self.text[self.starts[i]:self.ends[i]]

    def element(self, i: int) -> dict:
        """The i-th document, parsed and converted (InputError naming the file when it cannot be)."""
        line = io.parse_line(1, self.raw(i))
        if line.error is not None:  # said with the file's own line and column
            self._whole()
        return line.record

    def objectid_order(self) -> list[int] | None:
        """`sampling.key_order` of the `_id`s when every element opens with an ObjectId `_id` it
        holds once (read from the text, as `_Lines.objectid_order`), else None."""
        text = self.text
        if _may_escape_ascii(text) or text.count(b'"_id"') != len(self.starts):
            return None
        match = _ID_OBJECTID.match
        found = [m.group(1) if (m := match(text, start)) else None for start in self.starts]
        if None in found:
            return None
        if b"".join(found).translate(None, b"0123456789abcdef"):
            found = [bytes.fromhex(hex_id.decode()) for hex_id in found]
        return sorted(range(len(found)), key=found.__getitem__)

    def id_key(self, i: int):
        """The `sort_key` of the i-th element's `_id` (None without one), read from the text when
        it opens with a plain ObjectId `_id` it holds once, else parsed."""
        raw = self.raw(i)
        if b'"_id"' not in raw and b"\\u00" not in raw:
            return None
        found = _ID_OBJECTID.match(raw) if raw.count(b'"_id"') == 1 and b"\\u00" not in raw else None
        if found:
            return (_OBJECTID_BRACKET, bytes.fromhex(found.group(1).decode()))
        doc = self.element(i)
        return sort_key(doc["_id"]) if "_id" in doc else None


_STRUCTURE = bytes(b if b in b'"{}' else 0 for b in range(256))  # the bytes the split looks at, others 0


SPAN_CHUNK = 1 << 20  # bytes of an array file `_element_spans` looks at in one piece


def _element_spans(text: bytes, chunk: int = SPAN_CHUNK) -> tuple[list[int], list[int]] | None:
    """(starts, ends) of the top-level elements of a JSON array of objects, or None when the text
    is not one (a scalar or array element, a top-level value that is no array, unbalanced
    braces, something after the array).

    Escaped backslashes and quotes are blanked (same length), so each remaining quote opens or
    closes a string. Only quotes and braces are looked at (their positions found in one pass):
    the braces outside strings give the object depth; an element opens with a `{` reaching
    depth 1 and closes with the `}` back at depth 0. What lies between two elements must be one
    comma (blanks aside), before the first `[`, after the last `]`: so no element is a scalar or
    an array, and nothing follows the array."""
    import numpy as np

    first, last = len(text) - len(text.lstrip()), len(text.rstrip()) - 1
    if last < first or text[first] != 0x5B or text[last] != 0x5D:  # "[" ... "]"
        return None
    blanked = text.replace(b"\\\\", b"  ").replace(b'\\"', b"  ") if b"\\" in text else text
    found_starts, found_ends = [], []
    within, depth_before = False, 0  # the state at the start of each piece: in a string, object depth
    for offset in range(0, len(blanked), chunk):  # in pieces: small temporaries, the same result
        structure = np.frombuffer(blanked[offset:offset + chunk].translate(_STRUCTURE), dtype=np.uint8)
        at = np.flatnonzero(structure)
        chars = structure[at]
        del structure
        quote = chars == 34
        inside = np.bitwise_xor.accumulate(quote)  # in a string after each byte (opening quote: yes)
        if within:
            inside = ~inside
        if len(inside):
            within = bool(inside[-1])
        outside = ~(inside | quote)
        at, chars = at[outside], chars[outside]
        step = (chars == 123).astype(np.int32)
        step -= chars == 125
        depth = np.cumsum(step)  # after each brace
        depth += depth_before
        if len(depth):
            if depth.min() < 0:
                return None
            depth_before = int(depth[-1])
        found_starts.append(at[(step == 1) & (depth == 1)] + offset)
        found_ends.append(at[(step == -1) & (depth == 0)] + (offset + 1))
    if depth_before != 0 or within or not found_starts:
        return None
    starts, ends = np.concatenate(found_starts), np.concatenate(found_ends)
    if len(starts) != len(ends):
        return None
    # the gaps between elements: "," or ",\n" (what JSON writers put there) checked at once,
    # any other one by its text
    a = np.frombuffer(blanked, dtype=np.uint8)
    inner_starts, inner_ends = starts[1:], ends[:-1]
    size = inner_starts - inner_ends
    plain = (a[inner_ends] == 44) & ((size == 1) | ((size == 2) & (a[np.minimum(inner_ends + 1, len(a) - 1)] == 10)))
    others = np.flatnonzero(~plain).tolist()
    starts, ends = starts.tolist(), ends.tolist()
    if any(blanked[ends[k]:starts[k + 1]].strip() != b"," for k in others):
        return None  # a scalar or an array element
    if blanked[first + 1:starts[0] if starts else last].strip() or (starts and blanked[ends[-1]:last].strip()):
        return None  # text before the first element or after the last one
    return starts, ends


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
