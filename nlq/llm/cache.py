"""The response cache: SQLite in WAL mode, content-addressed by the request and the endpoint.

    cache = ResponseCache("~/.cache/nlq/llm.sqlite")
    cache.get(key, endpoint) -> dict | None;  cache.put(key, endpoint, request, response)

A reply is stored under the logical request (`request_key`) and the identity of
the endpoint that gave it (`endpoint_identity`: scheme, host, port and path,
never the key or a query string), so two servers answering for one model name
never see each other's replies. `get(key, None)` (an `--offline` replay without
`--base-url`) serves the entry of any endpoint.

Several threads and several processes may share one file: every write is
one short transaction and readers never block writers (WAL). The cache never
costs an answer: a damaged file, table or row is a miss (reported once through
`warn`), and a write that finds the file locked is retried for a bounded time
(`LOCK_WAIT` seconds per try, `LOCK_TRIES` tries), then given up with a warning
while the fetched reply is still returned.

Entries written before the endpoint was part of the identity (the `responses`
table of older nlq) are kept and replayed by `--offline` only: online, the
endpoint that answered them is unknown, so they are asked again.
"""

from __future__ import annotations

import hashlib
import sqlite3
import sys
import threading
import time
from pathlib import Path
from typing import Callable
from urllib.parse import urlsplit

import orjson

_SCHEMA = """
CREATE TABLE IF NOT EXISTS replies (
    key TEXT NOT NULL,
    endpoint TEXT NOT NULL,
    request BLOB NOT NULL,
    response BLOB NOT NULL,
    created REAL NOT NULL,
    PRIMARY KEY (key, endpoint)
)
"""
LEGACY_TABLE = "responses"
# Seconds one statement waits for a lock held by another connection, and how often a write is tried.
LOCK_WAIT = 5.0
LOCK_TRIES = 6
_DEFAULT_PORTS = {"http": 80, "https": 443}


def request_key(request: dict) -> str:
    """sha256 of the canonical JSON of a logical request (never holds the API key)."""
    return hashlib.sha256(orjson.dumps(request, option=orjson.OPT_SORT_KEYS)).hexdigest()


def endpoint_identity(base_url: str) -> str:
    """`scheme://host:port/path` of a base URL: what tells endpoints apart (no user, password or query)."""
    parts = urlsplit(base_url.strip())
    scheme = (parts.scheme or "http").lower()
    host = (parts.hostname or "").lower()
    try:
        port = parts.port
    except ValueError:
        port = None
    port = port or _DEFAULT_PORTS.get(scheme, 0)
    path = parts.path.rstrip("/")
    return f"{scheme}://{host}:{port}{path}"


def _stderr_warning(message: str) -> None:
    print(f"nlq: warning: {message}", file=sys.stderr, flush=True)


class ResponseCache:
    """A thread-safe handle on one cache file (one connection, one lock).

    `mask(bytes) -> bytes` is applied to every stored blob (the API key)."""

    def __init__(self, path: str | Path, *, warn: Callable[[str], None] | None = None,
                 mask: Callable[[bytes], bytes] | None = None, lock_wait: float = LOCK_WAIT,
                 lock_tries: int = LOCK_TRIES):
        self.path = Path(path).expanduser()
        self._warn = warn or _stderr_warning
        self._mask = mask or (lambda data: data)
        self._lock_wait, self._lock_tries = lock_wait, lock_tries
        self._warned: set[str] = set()
        self._lock = threading.Lock()
        self._legacy = False
        self._db = None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, timeout=lock_wait, check_same_thread=False, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute(_SCHEMA)
            columns = [row[1] for row in self._db.execute("PRAGMA table_info(replies)")]
            if columns != ["key", "endpoint", "request", "response", "created"]:
                raise sqlite3.DatabaseError(f"its replies table has the columns {columns}, not nlq's")
            self._legacy = self._db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?",
                                            (LEGACY_TABLE,)).fetchone() is not None
        except (OSError, sqlite3.Error) as exc:
            self._disable(f"cannot use the response cache {self.path} ({exc}): running without it",
                          "damaged")

    @property
    def usable(self) -> bool:
        return self._db is not None

    def get(self, key: str, endpoint: str | None) -> dict | None:
        """The stored response for `key` from `endpoint` (from any endpoint when None), or None.

        A row that cannot be read or decoded is a miss (warned about once)."""
        if self._db is None:
            return None
        try:
            with self._lock:
                if endpoint is None:
                    row = self._db.execute("SELECT response FROM replies WHERE key = ? ORDER BY created LIMIT 1",
                                           (key,)).fetchone()
                    if row is None and self._legacy:
                        row = self._db.execute(f"SELECT response FROM {LEGACY_TABLE} WHERE key = ?",
                                               (key,)).fetchone()
                else:
                    row = self._db.execute("SELECT response FROM replies WHERE key = ? AND endpoint = ?",
                                           (key, endpoint)).fetchone()
        except sqlite3.Error as exc:
            self._once("damaged", f"the response cache {self.path} cannot be read ({exc}): asking the model instead")
            return None
        if row is None:
            return None
        response = _decoded(row[0])
        if response is None:
            self._once("row", f"a damaged entry in the response cache {self.path} was ignored "
                              "(the model is asked again)")
        return response

    def put(self, key: str, endpoint: str | None, request: dict, response: dict) -> bool:
        """Store a response; the first writer of a key wins (replies are replayed, never replaced).

        A locked file is waited for (bounded) and tried again; False when the entry could
        not be written (warned about once): the caller keeps its reply either way."""
        if self._db is None:
            return False
        row = (key, endpoint or "", self._mask(orjson.dumps(request, option=orjson.OPT_SORT_KEYS, default=str)),
               self._mask(orjson.dumps(response, default=str)), time.time())
        for attempt in range(self._lock_tries):
            try:
                with self._lock:
                    self._db.execute("INSERT OR IGNORE INTO replies (key, endpoint, request, response, created) "
                                     "VALUES (?, ?, ?, ?, ?)", row)
                return True
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) and "busy" not in str(exc):
                    self._once("damaged", f"cannot write to the response cache {self.path} ({exc}): "
                                        "replies are not kept")
                    return False
                if attempt + 1 < self._lock_tries:
                    time.sleep(min(1.0, 0.05 * 2 ** attempt))
            except sqlite3.Error as exc:
                self._once("damaged", f"cannot write to the response cache {self.path} ({exc}): replies are not kept")
                return False
        self._once("locked", f"the response cache {self.path} stayed locked by another process for "
                             f"{self._lock_tries} tries of {self._lock_wait:g} s: a reply was not cached "
                             "(it is used all the same)")
        return False

    def abandon(self, key: str, endpoint: str | None) -> None:
        """Nothing to give up: a SQLite cache holds no claim on a missed key (see MongoResponseCache)."""

    def __len__(self) -> int:
        if self._db is None:
            return 0
        with self._lock:
            return self._db.execute("SELECT COUNT(*) FROM replies").fetchone()[0]

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None

    def _once(self, what: str, message: str) -> None:
        if what not in self._warned:
            self._warned.add(what)
            self._warn(message)

    def _disable(self, message: str, what: str) -> None:
        if self._db is not None:
            try:
                self._db.close()
            except sqlite3.Error:
                pass
        self._db = None
        self._once(what, message)


def _decoded(blob) -> dict | None:
    """A stored response, or None when it is not one (a damaged row)."""
    try:
        response = orjson.loads(blob)
    except (orjson.JSONDecodeError, TypeError):
        return None
    if not isinstance(response, dict) or not isinstance(response.get("text"), str):
        return None
    usage = response.get("usage") if isinstance(response.get("usage"), dict) else {}
    response["usage"] = {name: _count(usage.get(name)) for name in ("prompt_tokens", "completion_tokens")}
    ms = response.get("ms")
    if not isinstance(ms, (int, float)) or isinstance(ms, bool):
        response["ms"] = 0.0
    if not isinstance(response.get("finish_reason"), (str, type(None))):
        response["finish_reason"] = None
    return response


def _count(value) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0
