"""The response cache: SQLite in WAL mode, content-addressed by the request.

    cache = ResponseCache("~/.cache/nlq/llm.sqlite")
    cache.get(key) -> dict | None;  cache.put(key, request, response)

Several threads and several processes may share one file: every write is
one short transaction, readers never block writers (WAL), and a busy file is
waited for rather than reported as an error.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
import time
from pathlib import Path

import orjson

from nlq.errors import ModelConfigError

_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    request BLOB NOT NULL,
    response BLOB NOT NULL,
    created REAL NOT NULL
)
"""


def request_key(request: dict) -> str:
    """sha256 of the canonical JSON of a logical request (never holds the API key)."""
    return hashlib.sha256(orjson.dumps(request, option=orjson.OPT_SORT_KEYS)).hexdigest()


class ResponseCache:
    """A thread-safe handle on one cache file (one connection, one lock)."""

    def __init__(self, path: str | Path):
        self.path = Path(path).expanduser()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, timeout=60.0, check_same_thread=False, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute(_SCHEMA)
        except (OSError, sqlite3.Error) as exc:
            raise ModelConfigError(f"cannot open the response cache {self.path}: {exc}",
                                   hint="pick another file with --cache FILE, or --no-cache") from None
        self._lock = threading.Lock()

    def get(self, key: str) -> dict | None:
        with self._lock:
            row = self._db.execute("SELECT response FROM responses WHERE key = ?", (key,)).fetchone()
        return orjson.loads(row[0]) if row else None

    def put(self, key: str, request: dict, response: dict) -> None:
        """Store a response; the first writer of a key wins (replies are replayed, never replaced)."""
        with self._lock:
            self._db.execute("INSERT OR IGNORE INTO responses (key, request, response, created) VALUES (?, ?, ?, ?)",
                             (key, orjson.dumps(request, option=orjson.OPT_SORT_KEYS), orjson.dumps(response),
                              time.time()))

    def abandon(self, key: str) -> None:
        """Nothing to give up: a SQLite cache holds no claim on a missed key (see MongoResponseCache)."""

    def __len__(self) -> int:
        with self._lock:
            return self._db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]

    def close(self) -> None:
        with self._lock:
            self._db.close()
