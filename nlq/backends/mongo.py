"""The MongoDB backend: a real deployment through pymongo, used read-only.

Only listing, counting, `find` (for samples) and `aggregate` are ever sent.
Every aggregate is checked for forbidden operators before it is sent, runs
with `allowDiskUse=False`, and its cursor is read with the row and byte caps.

Every operation runs under a client-side operation timeout (pymongo's
`timeoutMS`, `pymongo.timeout(seconds)`): the query's `timeout` for an
aggregate, the backend's `timeout` for listing, counting and sampling. pymongo
derives the server's `maxTimeMS` from what is left of it and stops reading the
socket when it runs out, so a query that outlives its limit is a QueryTimeout
(a per-record `exec_error`) after about `timeout` seconds, never retried past
it; a server that cannot be reached stays a BackendError (the run stops).

Samples follow the one rule of nlq.backends.sampling (seeded positions in
`_id` order). A collection of at most ID_SCAN_LIMIT documents is sampled by
reading its `_id`s in order (a covered scan of the `_id` index) and fetching
the picked documents; a larger one by walking the `_id` index from one picked
position to the next (`find({_id: {$gt: previous}}).sort({_id: 1}).skip(k)
.limit(1)`), so only the sampled documents cross the network.
"""

from __future__ import annotations

import contextlib
import re
from typing import Callable

from nlq.backends import sampling
from nlq.backends.base import Closing
from nlq.mql.limits import DEFAULT_MAX_BYTES, DEFAULT_MAX_ROWS, DEFAULT_TIMEOUT
from nlq.errors import BackendError, ExecutionError, QueryTimeout

ID_SCAN_LIMIT = 100_000  # up to this many documents, a sample reads the collection's _ids in one scan

# pymongo raises these for a URI it cannot read (a syntax or option error, not a server down).
_URI_ERRORS = ("InvalidURI", "ConfigurationError")

_SYSTEM_DATABASES = {"admin", "config", "local"}

# Client options nlq sets unless the URI sets them itself.
_CLIENT_DEFAULTS = {"serverSelectionTimeoutMS": 5000, "appname": "nlq"}


def _pymongo_client(uri: str):
    import pymongo

    # The option names of the URI, read without resolving a mongodb+srv:// host.
    given = {part.split("=", 1)[0].lower() for part in re.split("[&;]", uri.partition("?")[2]) if part}
    options = {k: v for k, v in _CLIENT_DEFAULTS.items() if k.lower() not in given}
    return pymongo.MongoClient(uri, tz_aware=True, **options)


def _classes(exc: Exception) -> set[str]:
    return {cls.__name__ for cls in type(exc).__mro__}


# URI options whose values are secrets (matched without regard to case): passwords of any
# kind (tlsCertificateKeyFilePassword, proxyPassword, ...) and authMechanismProperties,
# which may carry an AWS_SESSION_TOKEN.
_SECRET_OPTION = re.compile(r"(?i)(?<=[?&;])([^=&;?]*(?:password|secret|token)[^=&;?]*|authMechanismProperties)=[^&;]*")
# What follows the user information: a host list, then the path, the options or the end.
_HOSTS = re.compile(r"[\w.\-\[\]:%,]*(?:[/?]|$)")


def redact(uri: str) -> str:
    """The URI with every secret hidden: `mongodb://user:***@host/?tlsCertificateKeyFilePassword=***`.

    The user information ends at the last '@' that a host list follows (a password may
    hold '@', '/', '?' or ':' when it was not percent-encoded). A string without '://'
    (a malformed scheme, `user:pw@host`) shows nothing before its last '@'."""
    scheme, sep, rest = uri.partition("://")
    if not sep:
        at = uri.rfind("@")
        return uri if at < 0 else _SECRET_OPTION.sub(r"\1=***", "***" + uri[at:])
    at = next((i for i in range(len(rest) - 1, -1, -1) if rest[i] == "@" and _HOSTS.match(rest, i + 1)), -1)
    if at >= 0:
        user, colon, _ = rest[:at].partition(":")
        if colon:
            rest = f"{user}:***{rest[at:]}"
    return scheme + "://" + _SECRET_OPTION.sub(r"\1=***", rest)


def _scrub(text: str, uri: str) -> str:
    """`text` (a driver's message) without the URI's secrets, should it quote them."""
    shown = redact(uri)
    text = text.replace(uri, shown)
    _, sep, rest = uri.partition("://")
    rest = rest if sep else uri
    secrets = []
    for m in _SECRET_OPTION.finditer(rest):
        value = m.group(0).split("=", 1)[1]
        secrets += [value] + [pair.split(":", 1)[-1] for pair in re.split(r",|%2C", value)]  # KEY:VALUE pairs
    userinfo = rest[:rest.rfind("@")] if "@" in rest else ""
    parts = userinfo.split(":")
    secrets += [":".join(parts[i:]) for i in range(1, len(parts))]  # whatever may be the password
    for secret in sorted(filter(None, secrets), key=len, reverse=True):
        text = text.replace(secret, "***")
    return text


class MongoBackend(Closing):
    name = "mongo"

    def __init__(self, uri: str, *, timeout: float = DEFAULT_TIMEOUT,
                 client_factory: Callable[[str], object] | None = None):
        self.uri = uri
        self.timeout = timeout
        self._reached = False
        self._unreachable: BackendError | None = None  # why the server could not be reached
        try:
            self._client = (client_factory or _pymongo_client)(uri)
        except Exception as exc:  # noqa: BLE001 - pymongo raises several classes for a bad URI
            raise self._backend_error(exc) from None

    def close(self) -> None:
        close = getattr(self._client, "close", None)
        if close is not None:
            close()

    # -- errors ----------------------------------------------------------------------
    def _backend_error(self, exc: Exception) -> BackendError:
        shown = redact(self.uri)
        # pymongo appends a long topology description after the reason; keep the reason.
        reason = _scrub(str(exc), self.uri).split(" (configured timeouts")[0].split(", Timeout:")[0][:300]
        if _classes(exc) & set(_URI_ERRORS):
            hint = "check the URI: mongodb://[user:password@]host[:port][/?options] (percent-encode '@' and ':' " \
                   "in a password)"
        else:
            hint = f"is MongoDB running at {shown}?"
        return BackendError(f"cannot use MongoDB at {shown}: {reason}", hint=hint)

    def _translate(self, exc: Exception, what: str, timeout: float, query: bool) -> Exception:
        """A pymongo exception as the NlqError it means: for a query (`query=True`) a timeout is a
        QueryTimeout and a server error an ExecutionError (both per record); for listing, counting
        and sampling both stop the run (BackendError). An unreachable server always stops it."""
        classes = _classes(exc)
        if "ServerSelectionTimeoutError" in classes:
            return self._backend_error(exc)
        if getattr(exc, "timeout", False) or getattr(exc, "code", None) == 50:
            message = f"{what} exceeded the time limit of {timeout:g} s"
            if query:
                return QueryTimeout(f"query exceeded the time limit of {timeout:g} s (maxTimeMS; raise it with "
                                    "--timeout)", code=50)
            return BackendError(f"MongoDB at {redact(self.uri)}: {message}",
                                hint="raise --timeout, or check the server's load")
        if classes & ({"ConnectionFailure"} | set(_URI_ERRORS)):
            return self._backend_error(exc)
        if "OperationFailure" in classes:
            details = getattr(exc, "details", None) or {}
            message = details.get("errmsg") or str(exc)
            if query:
                return ExecutionError(message, code=getattr(exc, "code", None))
            return BackendError(f"MongoDB at {redact(self.uri)} refused {what}: {message}",
                                hint="nlq needs the read role on the database (docs/TUTORIAL.md: permissions)")
        if "PyMongoError" in classes:
            return BackendError(f"MongoDB error: {exc}")
        return exc

    def _call(self, what: str, fn, *args, timeout: float | None = None, query: bool = False, **kwargs):
        """`fn(*args, **kwargs)` within one client-side operation timeout, errors translated."""
        import pymongo

        limit = self.timeout if timeout is None else timeout
        if not self._reached:
            self._reach_once(limit)
        try:
            with pymongo.timeout(limit):
                return fn(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - translated to NlqError below
            translated = self._translate(exc, what, limit, query)
            if translated is exc:
                raise
            raise translated from None

    def _reach_once(self, limit: float) -> None:
        """`_reach`, and when the server cannot be reached, the same BackendError at once for every
        later call: one wait of serverSelectionTimeoutMS per command, whatever the command asks
        first (a listing, a count, a query)."""
        if self._unreachable is not None:
            raise self._unreachable
        try:
            self._reach()
        except Exception as exc:  # noqa: BLE001 - translated to NlqError below
            translated = self._translate(exc, "ping", limit, False)
            if translated is exc:
                raise
            if isinstance(translated, BackendError):
                self._unreachable = translated
            raise translated from None

    def _reach(self) -> None:
        """Ping the server once, within the client's serverSelectionTimeoutMS: under an operation
        timeout pymongo waits the whole of it for a server, so an unreachable one would cost
        `--timeout` on the first call instead of failing fast."""
        import pymongo

        if isinstance(self._client, pymongo.MongoClient):  # not a test's stand-in client
            with pymongo.timeout(min(self._client.options.server_selection_timeout, self.timeout)):
                self._client.admin.command("ping")
        self._reached = True

    # -- interface -------------------------------------------------------------------
    def databases(self) -> list[str]:
        """The databases of the deployment, without MongoDB's own (admin, config, local)."""
        names = self._call("listDatabases", self._client.list_database_names)
        return sorted(n for n in names if n not in _SYSTEM_DATABASES)

    def collections(self, db: str) -> list[str]:
        names = self._call(f"listCollections on {db}", self._client[db].list_collection_names)
        if not names and db not in self.databases():
            known = ", ".join(self.databases()) or "none"
            raise BackendError(f"no database {db!r} at {redact(self.uri)} (found: {known})")
        return sorted(n for n in names if not n.startswith("system."))

    def count(self, db: str, collection: str) -> int:
        return int(self._call(f"counting {db}.{collection}", self._client[db][collection].count_documents, {}))

    def sample(self, db: str, collection: str, n: int, seed: int = 0) -> list[dict]:
        coll = self._client[db][collection]
        what = f"sampling {db}.{collection}"
        count = self.count(db, collection)
        picked = sampling.positions(count, n, seed)
        if len(picked) >= count:
            return self._call(what, lambda: list(coll.find({}).sort("_id", 1)))
        if count <= ID_SCAN_LIMIT:
            return self._call(what, _by_id_scan, coll, picked)
        docs, previous, at = [], None, -1
        for position in picked:
            doc = self._call(what, _next_in_id_order, coll, previous, position - at - 1, position)
            if doc is None:  # the collection shrank while it was sampled
                break
            docs.append(doc)
            previous, at = doc["_id"], position
        return docs

    def aggregate(self, db: str, collection: str, pipeline: list, *,
                  timeout: float = DEFAULT_TIMEOUT, max_rows: int = DEFAULT_MAX_ROWS,
                  max_bytes: int = DEFAULT_MAX_BYTES) -> list[dict]:
        from nlq.mql import analyze
        from nlq.mql.engine import capped_rows
        from nlq.mql.limits import check_query_depth

        check_query_depth(pipeline)  # before the recursive walks below (MongoDB would refuse it too)
        analyze.check_forbidden(pipeline)  # never sent to the server
        coll = self._client[db][collection]
        # One row beyond the cap is enough to know the cap is exceeded.
        capped = list(pipeline) + [{"$limit": max_rows + 1}]

        def read():
            cursor = coll.aggregate(capped, allowDiskUse=False)
            with contextlib.closing(cursor) if hasattr(cursor, "close") else contextlib.nullcontext():
                return capped_rows(cursor, max_rows=max_rows, max_bytes=max_bytes)
        return self._call(f"aggregate on {db}.{collection}", read, timeout=timeout, query=True)


def _by_id_scan(coll, picked: list[int]) -> list[dict]:
    """The documents at `picked` positions: the `_id`s read in order, then the picked ones fetched."""
    from nlq.mql.values import sort_key

    ids = [doc["_id"] for doc in coll.find({}, {"_id": 1}).sort("_id", 1)]
    wanted = [ids[i] for i in picked if i < len(ids)]
    keys = {sort_key(v) for v in wanted}
    # $in treats a regular expression as a pattern: keep only the exact _ids asked for.
    return [doc for doc in coll.find({"_id": {"$in": wanted}}).sort("_id", 1) if sort_key(doc["_id"]) in keys]


def _next_in_id_order(coll, previous, skip: int, position: int):
    """The document `skip` places after `previous` in `_id` order (at `position` from the start).

    `$gt` compares within one BSON type (the manual's type bracketing), so when
    the documents of `previous`'s type run out the position is read from the start."""
    if previous is not None:
        try:
            doc = next(iter(coll.find({"_id": {"$gt": previous}}).sort("_id", 1).skip(skip).limit(1)), None)
        except Exception as exc:  # noqa: BLE001 - an _id that $gt cannot take (a regex): read from the start
            if "OperationFailure" not in _classes(exc):
                raise
            doc = None
        if doc is not None:
            return doc
    return next(iter(coll.find({}).sort("_id", 1).skip(position).limit(1)), None)


__all__ = ["ID_SCAN_LIMIT", "MongoBackend", "redact"]
