"""The response cache in a MongoDB deployment, shared by every machine of a run.

    cache = open_cache("mongodb://cache-host/nlq?collection=llm_cache")   # or a SQLite file path
    cache.get(key) -> dict | None;  cache.put(key, request, response)

The same contract as the SQLite `ResponseCache`, for runners on several
machines against one inference cluster (SQLite must not be shared over a
network file system): one document per request, `{_id: key, request,
response, created}`, so the key is the collection's `_id` index; a write is an
upsert that only fills a key without a reply, so concurrent writers of one key
never overwrite the reply stored first (replies are replayed, never replaced),
and a miss claims its key so that other runners wait for that reply rather than
pay for the same call (`MongoResponseCache`). The request
and the reply are kept as JSON text, exactly as the SQLite cache keeps them.
A damaged document (a reply that is not the JSON object the client wrote) is
a miss, reported once on stderr, and the model is asked again.

`--cache mongodb://HOST/DB[?collection=NAME]` (env NLQ_CACHE): the database
from the URI's path (default `nlq`), the collection from `collection=`
(default `llm_cache`), every other option passed to pymongo as given. The
user needs the built-in `readWrite` role on that database.
"""

from __future__ import annotations

import os
import socket
import sys
import threading
import time
import uuid
from typing import Callable
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import orjson

from nlq.errors import ModelConfigError

DEFAULT_DATABASE = "nlq"
DEFAULT_COLLECTION = "llm_cache"
SCHEMES = ("mongodb://", "mongodb+srv://")
TIMEOUT_S = 10.0  # each cache operation, at most (a cache that stops answering must not hang a run)
CLAIM_S = 600.0   # how long a runner's claim on a missed key holds before another runner takes it over
POLL_S = 0.2      # how often a runner waiting for another's reply looks again


def is_uri(spec) -> bool:
    """Whether a `--cache` value names a MongoDB deployment rather than a file."""
    return isinstance(spec, str) and spec.startswith(SCHEMES)


def split_uri(uri: str, default_collection: str = DEFAULT_COLLECTION) -> tuple[str, str, str]:
    """(the URI pymongo connects with, database, collection) of `mongodb://host/db?collection=c&...`."""
    parts = urlsplit(uri)
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True)]
    collection = next((v for k, v in query if k == "collection"), default_collection)
    rest = [(k, v) for k, v in query if k != "collection"]
    database = parts.path.lstrip("/") or DEFAULT_DATABASE
    if not collection or "$" in collection or "\x00" in collection:
        raise ModelConfigError(f"not a collection name: {collection!r}", hint="--cache mongodb://HOST/DB?collection=NAME")
    client_uri = urlunsplit((parts.scheme, parts.netloc, "/" + database, urlencode(rest), ""))
    return client_uri, database, collection


def shown(uri: str) -> str:
    """The URI with its password masked, for messages."""
    parts = urlsplit(uri)
    if parts.password is None:
        return uri
    netloc = f"{parts.username}:***@{parts.hostname}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, ""))


def connect(uri: str, what: str, default_collection: str = DEFAULT_COLLECTION):
    """(client, collection) for `uri` (ModelConfigError, with a hint, when unreachable)."""
    from pymongo import MongoClient
    from pymongo.errors import PyMongoError

    client_uri, database, collection = split_uri(uri, default_collection)
    try:
        client = MongoClient(client_uri, serverSelectionTimeoutMS=5000, appname="nlq", timeoutMS=TIMEOUT_S * 1000)
        client.admin.command("ping")
    except (PyMongoError, ValueError) as exc:
        raise ModelConfigError(f"cannot open the {what} at {shown(uri)}: {exc}",
                               hint="check the URI and that the user has the readWrite role on "
                                    f"database {database}") from None
    return client, client[database][collection]


class MongoResponseCache:
    """The response cache in one MongoDB collection (thread-safe: pymongo's client is).

    The same interface as the SQLite ResponseCache: a reply is stored under the
    logical request's key and the identity of the endpoint that gave it
    (`{_id: "<endpoint> <key>", key, endpoint, request, response}`); `get(key, None)`
    (an `--offline` replay without `--base-url`) serves the entry of any endpoint.
    `mask(bytes)` is applied to what is stored (the API key); `warn` reports a
    damaged entry or an unreachable cache, once.

    With `claim` (the default; off for `--offline`), a miss also claims the key for
    `claim_s` seconds (`state: "pending", owner, expires`): another runner that misses
    the same key meanwhile waits for the reply instead of asking the model too, so
    runners sharing the cache make each distinct request once. A claim whose owner
    gave up (`abandon`, after a model fault) or died (its time ran out) is taken over."""

    def __init__(self, uri: str, *, warn: Callable[[str], None] | None = None,
                 mask: Callable[[bytes], bytes] | None = None, claim: bool = True, claim_s: float = CLAIM_S,
                 poll_s: float = POLL_S):
        self.uri = uri
        self.path = shown(uri)  # what messages name (as ResponseCache.path)
        self._client, self._collection = connect(uri, "response cache")
        self._claim, self._claim_s, self._poll_s = claim, claim_s, poll_s
        self._warn_to = warn or _stderr_warning
        self._mask = mask or (lambda data: data)
        self._owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._warned: set[str] = set()
        self._lock = threading.Lock()

    @staticmethod
    def _id(key: str, endpoint: str | None) -> str:
        return f"{endpoint or ''} {key}"

    def get(self, key: str, endpoint: str | None) -> dict | None:
        """The stored reply of `key` from `endpoint` (any endpoint when None), or None (after
        claiming the key, when claims are on and an endpoint is named)."""
        from pymongo.errors import DuplicateKeyError, PyMongoError

        try:
            if endpoint is None:
                doc = self._collection.find_one({"key": key, "response": {"$exists": True}})
                return self._reply(doc) if doc is not None else None
            _id = self._id(key, endpoint)
            while True:
                doc = self._collection.find_one({"_id": _id})
                if doc is not None and "response" in doc:
                    return self._reply(doc)
                if not self._claim:
                    return None
                now = time.time()
                if doc is None:
                    try:
                        self._collection.insert_one({"_id": _id, "key": key, "endpoint": endpoint, "state": "pending",
                                                     "owner": self._owner, "expires": now + self._claim_s})
                        return None
                    except DuplicateKeyError:
                        continue  # another runner claimed it first: read its claim
                if doc.get("owner") == self._owner or float(doc.get("expires") or 0) <= now:
                    taken = self._collection.find_one_and_update(
                        {"_id": _id, "response": {"$exists": False}, "expires": doc.get("expires")},
                        {"$set": {"state": "pending", "owner": self._owner, "expires": now + self._claim_s}})
                    if taken is not None:
                        return None
                    continue
                time.sleep(self._poll_s)  # another runner is asking the model: wait for its reply
        except PyMongoError as exc:
            self._once("read", f"the response cache at {self.path} cannot be read ({exc}): asking the model")
            return None

    def _reply(self, doc: dict) -> dict | None:
        try:
            response = orjson.loads(doc["response"])
            if not isinstance(response, dict) or not isinstance(response.get("text"), str):
                raise ValueError("not a stored reply")
        except (KeyError, TypeError, ValueError) as exc:
            self._once("row", f"a damaged entry of the response cache at {self.path} ({exc}) is read as a miss")
            return None
        return response

    def put(self, key: str, endpoint: str | None, request: dict, response: dict) -> bool:
        """Store a response; the first reply stored for a key stands (a claim is filled, a reply is
        never replaced). False when it could not be written (warned once): the reply is used all the same."""
        from pymongo.errors import DuplicateKeyError, PyMongoError

        doc = {"key": key, "endpoint": endpoint or "", "state": "done",
               "request": self._mask(orjson.dumps(request, option=orjson.OPT_SORT_KEYS, default=str)).decode(),
               "response": self._mask(orjson.dumps(response, default=str)).decode(), "created": time.time()}
        try:
            self._collection.update_one({"_id": self._id(key, endpoint), "response": {"$exists": False}},
                                        {"$set": doc}, upsert=True)
        except DuplicateKeyError:
            pass  # another runner stored this reply first: theirs stands
        except PyMongoError as exc:
            self._once("write", f"the response cache at {self.path} cannot be written ({exc}): the reply is used, "
                                "not kept")
            return False
        return True

    def abandon(self, key: str, endpoint: str | None) -> None:
        """Give up this runner's claim on `key` (the model call failed): a waiting runner takes it over."""
        from pymongo.errors import PyMongoError

        try:
            self._collection.delete_one({"_id": self._id(key, endpoint), "owner": self._owner,
                                         "response": {"$exists": False}})
        except PyMongoError:
            pass  # the claim then runs out by itself

    def __len__(self) -> int:
        """The stored replies (claims not counted)."""
        return self._collection.count_documents({"response": {"$exists": True}})

    def close(self) -> None:
        self._client.close()

    def _once(self, what: str, message: str) -> None:
        with self._lock:
            if what in self._warned:
                return
            self._warned.add(what)
        self._warn_to(message)


def _stderr_warning(message: str) -> None:
    print(f"nlq: warning: {message}", file=sys.stderr, flush=True)


def open_cache(spec, *, warn=None, mask=None, claim: bool = True):
    """The response cache `spec` names: a MongoDB URI (MongoResponseCache; `claim` as there) or a
    SQLite file (ResponseCache)."""
    if is_uri(spec):
        return MongoResponseCache(spec, warn=warn, mask=mask, claim=claim)
    from nlq.llm.cache import ResponseCache

    return ResponseCache(spec, warn=warn, mask=mask)
