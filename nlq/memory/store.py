"""The memory file: verified question -> query pairs (and lessons) per database, in one SQLite file.

    with Memory("answers.sqlite") as memory:
        memory.add(Entry(db="clinic", question="How many patients?", collection="patients",
                         pipeline=[{"$count": "n"}], verified_by="user"))
        memory.entries("clinic")      # the usable (not stale) entries of one database

An entry is `{id, db, kind, question, collection, pipeline, verified_by, at,
source, stale, note}`: `kind` is `answer` (a verified query for the question)
or `lesson` (what a repair learned: `note` says it); `verified_by` says who
vouched for it (`score` = it scored EXC 1, `user` = confirmed in `nlq ask`,
`gold` = a benchmark gold the user added on purpose, `repair` = a lesson);
`source` is the id of the record it came from, so a record is never answered
from an entry of itself or of its paraphrases (`recall.own_entry`). The same
(db, question, query) is stored once. `stale` entries (`nlq memory verify`
found that they no longer run, or return nothing) are kept but never used.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import sqlite3
import threading
from dataclasses import asdict, dataclass, field
from pathlib import Path

import orjson

from nlq.errors import InputError, NlqError

KINDS = ("answer", "lesson")
VERIFIERS = ("score", "user", "gold", "repair")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    db TEXT NOT NULL,
    kind TEXT NOT NULL,
    question TEXT NOT NULL,
    collection TEXT NOT NULL,
    pipeline BLOB NOT NULL,
    verified_by TEXT NOT NULL,
    at TEXT NOT NULL,
    source TEXT,
    stale TEXT,
    note TEXT,
    identity TEXT NOT NULL UNIQUE
);
CREATE INDEX IF NOT EXISTS entries_db ON entries (db);
"""
_COLUMNS = "id, db, kind, question, collection, pipeline, verified_by, at, source, stale, note"


class MemoryFileError(NlqError):
    type = "memory_error"


@dataclass
class Entry:
    """One remembered answer or lesson."""

    db: str
    question: str
    collection: str
    pipeline: list
    verified_by: str
    kind: str = "answer"
    source: str | None = None
    note: str | None = None
    at: str = field(default_factory=lambda: _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"))
    stale: str | None = None  # why `verify` found it unusable, else None
    id: int | None = None

    def to_json(self) -> dict:
        """The entry as a JSON record (`nlq memory list`): `mql` is its query."""
        out = asdict(self)
        out["mql"] = {"collection": out.pop("collection"), "pipeline": out.pop("pipeline")}
        return {k: v for k, v in out.items() if v is not None or k == "stale"}

    def check(self) -> None:
        if self.kind not in KINDS:
            raise InputError(f"an entry's kind is one of {', '.join(KINDS)}, not {self.kind!r}")
        if self.verified_by not in VERIFIERS:
            raise InputError(f"an entry is verified by one of {', '.join(VERIFIERS)}, not {self.verified_by!r}")
        if not isinstance(self.db, str) or not self.db:
            raise InputError("an entry needs the database it is about (db)")
        if not isinstance(self.question, str) or not self.question.strip():
            raise InputError("an entry needs its question")
        if not isinstance(self.collection, str) or not isinstance(self.pipeline, list):
            raise InputError("an entry needs a query: a collection and a pipeline")


def _identity(entry: Entry) -> str:
    text = orjson.dumps([entry.db, entry.kind, " ".join(entry.question.split()), entry.collection, entry.pipeline,
                         entry.note], option=orjson.OPT_SORT_KEYS)
    return hashlib.sha256(text).hexdigest()


class Memory:
    """A handle on one memory file (thread-safe: one connection, one lock)."""

    def __init__(self, path: str | Path):
        self.path = Path(path).expanduser()
        try:
            if self.path.parent and not self.path.parent.exists():
                self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, timeout=30.0, check_same_thread=False, isolation_level=None)
            self._db.executescript(_SCHEMA)
            self._db.execute("SELECT " + _COLUMNS + " FROM entries LIMIT 1").fetchall()
        except (OSError, sqlite3.Error) as exc:
            raise MemoryFileError(f"cannot open the memory file {self.path}: {exc}",
                               hint="pick another file with --memory FILE (a new name starts an empty memory)") \
                from None
        self._lock = threading.Lock()
        self._by_db: dict[str, list[Entry]] = {}

    def __enter__(self) -> "Memory":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def name(self) -> str:
        """What a prediction records of the memory it consulted: the file's name."""
        return self.path.name

    def add(self, entry: Entry) -> tuple[int, bool]:
        """Store `entry` (its id and True), or find the same entry already stored (its id and False)."""
        entry.check()
        identity = _identity(entry)
        with self._lock:
            row = self._db.execute("SELECT id FROM entries WHERE identity = ?", (identity,)).fetchone()
            if row:
                return row[0], False
            cursor = self._db.execute(
                "INSERT INTO entries (db, kind, question, collection, pipeline, verified_by, at, source, stale, note,"
                " identity) VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL, ?, ?)",
                (entry.db, entry.kind, entry.question, entry.collection, orjson.dumps(entry.pipeline),
                 entry.verified_by, entry.at, entry.source, entry.note, identity))
            self._by_db.pop(entry.db, None)
            return cursor.lastrowid, True

    def entries(self, db: str | None = None, *, stale: bool = False) -> list[Entry]:
        """The entries of `db` (every database when None), oldest first; stale ones only with `stale`."""
        if db is not None and not stale and db in self._by_db:
            return self._by_db[db]
        where, args = [], []
        if db is not None:
            where.append("db = ?")
            args.append(db)
        if not stale:
            where.append("stale IS NULL")
        sql = "SELECT " + _COLUMNS + " FROM entries" + (" WHERE " + " AND ".join(where) if where else "") + \
            " ORDER BY id"
        with self._lock:
            rows = self._db.execute(sql, args).fetchall()
        out = [_entry(row) for row in rows]
        if db is not None and not stale:
            self._by_db[db] = out
        return out

    def get(self, entry_id: int) -> Entry | None:
        with self._lock:
            row = self._db.execute("SELECT " + _COLUMNS + " FROM entries WHERE id = ?", (entry_id,)).fetchone()
        return _entry(row) if row else None

    def remove(self, ids) -> int:
        """Delete the entries with these ids; how many there were."""
        ids = [int(i) for i in ids]
        with self._lock:
            n = sum(self._db.execute("DELETE FROM entries WHERE id = ?", (i,)).rowcount for i in ids)
            self._by_db.clear()
        return n

    def mark(self, entry_id: int, stale: str | None) -> None:
        """Mark an entry stale (with the reason) or usable again (None)."""
        with self._lock:
            self._db.execute("UPDATE entries SET stale = ? WHERE id = ?", (stale, entry_id))
            self._by_db.clear()

    def __len__(self) -> int:
        with self._lock:
            return self._db.execute("SELECT COUNT(*) FROM entries").fetchone()[0]

    def close(self) -> None:
        with self._lock:
            self._db.close()


def _entry(row) -> Entry:
    id_, db, kind, question, collection, pipeline, verified_by, at, source, stale, note = row
    return Entry(db=db, kind=kind, question=question, collection=collection, pipeline=orjson.loads(pipeline),
                 verified_by=verified_by, at=at, source=source, stale=stale, note=note, id=id_)
