"""The `exec` stage: run one query, or the gold query of every task record.

    rows = run_query(backend, "clinic", "db.patients.find({}, {name: 1}).limit(2)")

`run_tasks(records, backend)` adds `execution = {rows_count, ms, error}` to each
task record (plus `rows` when asked). A record that cannot be executed (no
gold, no db, a database the backend does not hold, parse error,
unknown/forbidden operator, timeout, an unexpected engine error typed
`internal_error`...) gets `execution.error`, a typed failure object, and
flows on: no record is lost. A BackendError (the database cannot be reached
or read) is no fault of the record: it stops the run.
"""

from __future__ import annotations

import difflib
import sys
import time
from typing import Callable, Iterable, Iterator

from nlq import io
from nlq.errors import BackendError, InputError, NlqError, UnknownDatabaseError, failure, json_type
from nlq.mql import serialize
from nlq.mql.fields import named_collections
from nlq.mql.limits import DEFAULT_MAX_ROWS, DEFAULT_TIMEOUT
from nlq.mql.mongosh import parse_query

STAGE = "exec"


def read_query_text(text: str) -> str:
    """The query argument, or stdin's text for `-`."""
    if text == "-":
        data = sys.stdin.buffer.read()
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(f"the query on stdin is not UTF-8 text: {exc}") from None
    return text


def gold_source(record: dict):
    """The gold query of a task record (`gold` object or `gold_mql` text), or None."""
    gold = record.get("gold")
    if gold is not None:
        return gold
    return record.get("gold_mql")


def unknown_database(backend, db: str) -> str | None:
    """Why `db` is unknown when the backend holds no such database, None when it does.

    Raises the BackendError of a backend that cannot be reached, or that lists
    `db` but cannot read it.
    """
    if db in backend.databases():  # listing first: an unreachable server fails once, here
        backend.collections(db)
        return None
    try:
        backend.collections(db)  # a database that is not listed may still be readable
    except BackendError as exc_:
        return str(exc_)
    return None


class CollectionCheck:
    """Tells `warn` once per (db, collection) when a query names a collection the database
    does not hold, with the closest existing name. MongoDB answers such a query with no
    documents, and so does nlq: the warning only explains the empty result.

        database 'clinic' has no collection 'patient' (did you mean 'patients'?); it reads as empty
    """

    def __init__(self, backend, warn: Callable[[str], None] | None):
        self.backend, self.warn = backend, warn
        self._collections: dict[str, set[str] | None] = {}
        self._told: set[tuple[str, str]] = set()

    def __call__(self, db: str, query) -> None:
        if self.warn is None:
            return
        for name in named_collections(query.collection, query.pipeline):
            if (db, name) in self._told:
                continue
            existing = self._existing(db)
            if existing is None or name in existing:
                continue
            self._told.add((db, name))
            self.warn(f"database {db!r} has no collection {name!r}{_did_you_mean(name, existing)}; "
                      "it reads as empty")

    def _existing(self, db: str) -> set[str] | None:
        if db not in self._collections:
            try:
                self._collections[db] = set(self.backend.collections(db))
            except NlqError:
                self._collections[db] = None  # an unknown database is reported on its own
        return self._collections[db]


FIELD_SAMPLE = 1000  # documents a field check reads per collection (the seeded sample of `nlq index`)


class FieldCheck:
    """Tells `warn` once per (db, collection, path) when a query reads a stored field that no
    sampled document of its collection has, with the closest existing path. MongoDB reads such
    a field as missing (`{"count": 0}` for a misspelled filter): the warning only explains it.

        no document of the 3 sampled in 'patients' has the field 'nmae' (did you mean 'name'?); it reads as missing
    """

    def __init__(self, backend, warn: Callable[[str], None] | None, sample: int = FIELD_SAMPLE):
        self.backend, self.warn, self.sample = backend, warn, sample
        self._paths: dict[tuple[str, str], tuple[set[str], int] | None] = {}
        self._told: set[tuple[str, str, str]] = set()

    def __call__(self, db: str, query) -> None:
        if self.warn is None:
            return
        from nlq.mql.fields import read_paths

        try:
            wanted = read_paths(query.collection, query.pipeline)
        except Exception:  # noqa: BLE001 - a pipeline the walk cannot read is reported by its execution
            return
        for collection, path in sorted(wanted):
            path = ".".join(part for part in path.split(".") if not part.isdigit())  # array positions
            if not path or (db, collection, path) in self._told:
                continue
            known = self._known(db, collection)
            if known is None or path in known[0]:
                continue
            self._told.add((db, collection, path))
            self.warn(f"no document of the {known[1]} sampled in {collection!r} has the field {path!r}"
                      f"{_did_you_mean(path, known[0])}; it reads as missing")

    def _known(self, db: str, collection: str) -> tuple[set[str], int] | None:
        key = (db, collection)
        if key not in self._paths:
            try:
                if collection not in self.backend.collections(db):
                    docs = []
                elif getattr(self.backend, "name", "") == "embedded":  # the seeded sample of `nlq index`
                    docs = self.backend.sample(db, collection, self.sample)
                else:  # one server query (the seeded sample would be one per document of a large collection)
                    docs = self.backend.aggregate(db, collection, [{"$sample": {"size": self.sample}}])
            except NlqError:
                docs = []
            self._paths[key] = (set().union(*map(_stored_paths, docs)), len(docs)) if docs else None
        return self._paths[key]


def _stored_paths(doc: dict, prefix: str = "") -> set[str]:
    """The dotted paths of a document, through arrays of documents as MongoDB's paths go."""
    out: set[str] = set()
    stack = [(doc, prefix)]
    while stack:
        value, at = stack.pop()
        if isinstance(value, dict):
            for key, sub in value.items():
                path = f"{at}.{key}" if at else key
                out.add(path)
                stack.append((sub, path))
        elif isinstance(value, list):
            stack.extend((item, at) for item in value if isinstance(item, (dict, list)))
    return out


def _did_you_mean(name: str, existing: set[str]) -> str:
    lowered = {n.lower(): n for n in existing}
    close = [lowered[name.lower()]] if name.lower() in lowered else \
        difflib.get_close_matches(name, sorted(existing), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def run_query(backend, db: str, source, *, timeout: float = DEFAULT_TIMEOUT,
              max_rows: int = DEFAULT_MAX_ROWS, warn: Callable[[str], None] | None = None) -> list[dict]:
    """Parse `source` (mongosh text, JSON text or a `{collection, pipeline}` dict) and run it on `db`.

    `warn` is told about collections the query names that `db` does not hold, about stored
    fields it reads that no sampled document has (`FieldCheck`), and about what the parser
    noted (an ignored `.forEach(printjson)`)."""
    query = parse_query(source)
    for note in query.warnings if warn is not None else ():
        warn(note)
    CollectionCheck(backend, warn)(db, query)
    FieldCheck(backend, warn)(db, query)
    return backend.aggregate(db, query.collection, query.pipeline, timeout=timeout, max_rows=max_rows)


def explain(source) -> dict:
    """The parsed and lowered form of a query: `{collection, pipeline, form, mongosh}`.

    `pipeline` is canonical relaxed Extended JSON; `mongosh` is the aggregate call
    the query was lowered to (find/count/distinct become aggregation stages).
    """
    query = parse_query(source)
    out = {**serialize.to_json(query), "form": query.form, "mongosh": serialize.to_mongosh(query)}
    if query.warnings:
        out["warnings"] = list(query.warnings)
    return out


def run_tasks(records: Iterable[dict], backend, *, db: str | None = None, rows: bool = False,
              timeout: float = DEFAULT_TIMEOUT, max_rows: int = DEFAULT_MAX_ROWS,
              warn: Callable[[str], None] | None = None) -> Iterator[dict]:
    """Execute each task record's gold (`gold` object or `gold_mql` text) and add `execution`.

    `db` overrides the records' own `db`. With `rows=True` the result rows are
    embedded as `execution.rows`. `warn` is told (once each) about collections the
    queries name that their database does not hold.
    """
    databases: dict[str, str | None] = {}  # db -> None (usable) or why it is unknown
    check_collections = CollectionCheck(backend, warn)
    for record in records:
        execution: dict = {"rows_count": None, "ms": None, "error": None}
        if io.has_failure(record):
            execution["error"] = failure(STAGE, InputError.type, "the record failed before execution")
            yield {**record, "execution": execution}
            continue
        try:
            source = gold_source(record)
            if source is None:
                raise InputError("the record has no gold or gold_mql to execute")
            target = db or record.get("db")
            if target is None or target == "":
                raise InputError("the record names no database: give it a db field or pass --db")
            if not isinstance(target, str):
                raise InputError(f"the record's db must be a string, not {json_type(target)}")
            query = parse_query(source)
            if target not in databases:  # load/validate the database outside the timed part
                databases[target] = unknown_database(backend, target)
            if databases[target] is not None:
                raise UnknownDatabaseError(databases[target])
            check_collections(target, query)
            started = time.perf_counter()
            result = backend.aggregate(target, query.collection, query.pipeline, timeout=timeout,
                                       max_rows=max_rows)
            execution["ms"] = round((time.perf_counter() - started) * 1000, 3)
            execution["rows_count"] = len(result)
            if rows:
                execution["rows"] = result
        except BackendError:
            raise
        except NlqError as exc:
            execution["error"] = exc.to_failure(STAGE)
        except Exception as exc:  # noqa: BLE001 - an engine bug must not lose the record
            execution["error"] = failure(STAGE, "internal_error", f"{type(exc).__name__}: {exc}")
        yield {**record, "execution": execution}


__all__ = ["run_query", "run_tasks", "explain", "read_query_text", "CollectionCheck", "gold_source", "unknown_database"]
