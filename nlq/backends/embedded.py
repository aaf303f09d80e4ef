"""The embedded backend: JSON/JSONL files served by nlq's own MQL engine.

Layouts of `--data DIR` (both may be mixed):

- `DIR/<db>.json` shaped `{"<collection>": [docs], ...}` (the TEND v1 layout);
- `DIR/<db>/<collection>.json` (a JSON array) or `.jsonl` (Extended JSON lines).

A malformed line of a `.jsonl` file (or an array element that is not a
document) is reported once per file, with the file and the line: fatal
(BackendError) by default, skipped with one warning with `skip_bad_lines`.

Files are read lazily, once per database, and documents are never copied by
the backend; the engine does not modify them either.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Callable

from nlq import io
from nlq.backends import sampling
from nlq.backends.base import Closing
from nlq.errors import BackendError, InputError, json_type
from nlq.mql import engine
from nlq.mql.limits import DEFAULT_MAX_BYTES, DEFAULT_MAX_ROWS, DEFAULT_TIMEOUT


class EmbeddedBackend(Closing):
    name = "embedded"

    def __init__(self, root: str | Path, *, skip_bad_lines: bool = False,
                 warn: Callable[[str], None] | None = None):
        self.root = Path(root)
        self.skip_bad_lines, self.warn = skip_bad_lines, warn
        if not self.root.is_dir():
            raise BackendError(f"--data {root}: not a directory",
                               hint="point --data at a folder of <db>.json files or <db>/<collection>.jsonl")
        self._dbs: dict[str, dict[str, list[dict]]] = {}

    # -- discovery -----------------------------------------------------------------
    def databases(self) -> list[str]:
        found = {p.stem for p in self.root.glob("*.json")}
        found |= {p.name for p in self.root.iterdir()
                  if p.is_dir() and any(p.glob("*.json*"))}
        return sorted(found)

    def _load(self, db: str) -> dict[str, list[dict]]:
        cached = self._dbs.get(db)
        if cached is not None:
            return cached
        collections: dict[str, list[dict]] = {}
        single = self.root / f"{db}.json"
        for path in self._files(db):
            if path == single:
                data = io.load_json_file(single)
                if not isinstance(data, dict) or not all(isinstance(v, list) for v in data.values()):
                    raise BackendError(f"{single}: expected {{collection: [documents]}}")
                problems: list[str] = []
                for name, docs in data.items():
                    collections[name] = _documents(docs, problems, where=f"collection {name!r}, ")
                self._bad(single, problems)
            elif path.suffix == ".jsonl":
                problems, docs = [], []
                with open(path, "rb") as f:
                    for line in io.iter_lines(f):
                        if line.error is None:
                            docs.append(line.record)
                        else:
                            problems.append(line.error)
                self._bad(path, problems)
                collections[path.stem] = docs
            else:
                docs = io.load_json_file(path)
                if not isinstance(docs, list):
                    raise BackendError(f"{path}: expected a JSON array of documents")
                problems = []
                collections[path.stem] = _documents(docs, problems)
                self._bad(path, problems)
        self._dbs[db] = collections
        return collections

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
        """The files that hold `db`, in reading order (BackendError when there are none)."""
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
        return sorted(self._load(db))

    def documents(self, db: str, collection: str) -> list[dict]:
        """All documents of a collection (empty for a collection that does not exist,
        as MongoDB answers an aggregate on a missing collection)."""
        return self._load(db).get(collection, [])

    def count(self, db: str, collection: str) -> int:
        return len(self.documents(db, collection))

    def sample(self, db: str, collection: str, n: int, seed: int = 0) -> list[dict]:
        return sampling.sample(self.documents(db, collection), n, seed)

    def aggregate(self, db: str, collection: str, pipeline: list, *,
                  timeout: float = DEFAULT_TIMEOUT, max_rows: int = DEFAULT_MAX_ROWS,
                  max_bytes: int = DEFAULT_MAX_BYTES) -> list[dict]:
        colls = self._load(db)
        return engine.aggregate(colls.get(collection, []), pipeline,
                                catalog=lambda name: colls.get(name, []),
                                timeout=timeout, max_rows=max_rows, max_bytes=max_bytes)


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
    if data:
        return EmbeddedBackend(data, skip_bad_lines=skip_bad_lines, warn=warn)
    if uri:
        from nlq.backends.mongo import MongoBackend

        return MongoBackend(uri, timeout=timeout)
    raise InputError("no database: give --data DIR (embedded) or --uri mongodb://... (or set NLQ_DATA / NLQ_URI)")
