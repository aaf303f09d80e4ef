"""The MongoDB backend: a real deployment through pymongo, used read-only.

Only listing, counting, `find` of `_id`s and documents (for samples) and
`aggregate` are ever called. Every aggregate is checked for forbidden
operators before it is sent, runs with `maxTimeMS` from the timeout and
`allowDiskUse=False`, and its cursor is read with a row cap.

Deterministic sample (`$sample` is forbidden and random): the `_id`s of the
collection are read in ascending `_id` order, `random.Random(seed)` picks `n`
positions, and the picked documents are returned in `_id` order. The same
seed over the same data always gives the same documents.
"""

from __future__ import annotations

import random
import re
from typing import Callable

from nlq.backends.base import DEFAULT_MAX_BYTES, DEFAULT_MAX_ROWS, DEFAULT_TIMEOUT
from nlq.errors import BackendError, ExecutionError, QueryTimeout

# pymongo reports these when the server cannot be reached (any pymongo version).
_CONNECTION_ERRORS = ("ServerSelectionTimeoutError", "ConnectionFailure", "AutoReconnect", "NetworkTimeout",
                      "ConfigurationError", "InvalidURI")


def _pymongo_client(uri: str):
    import pymongo

    return pymongo.MongoClient(uri, tz_aware=True, serverSelectionTimeoutMS=5000, appname="nlq")


# pymongo raises these for a URI it cannot read (a syntax or option error, not a server down).
_URI_ERRORS = ("InvalidURI", "ConfigurationError")


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


class MongoBackend:
    name = "mongo"

    def __init__(self, uri: str, *, client_factory: Callable[[str], object] | None = None):
        self.uri = uri
        try:
            self._client = (client_factory or _pymongo_client)(uri)
        except Exception as exc:  # noqa: BLE001 - pymongo raises several classes for a bad URI
            raise self._backend_error(exc) from None

    # -- errors ----------------------------------------------------------------------
    def _backend_error(self, exc: Exception) -> BackendError:
        shown = redact(self.uri)
        # pymongo appends a long topology description after the reason; keep the reason.
        reason = _scrub(str(exc), self.uri).split(" (configured timeouts")[0].split(", Timeout:")[0][:300]
        if any(cls.__name__ in _URI_ERRORS for cls in type(exc).__mro__):
            hint = "check the URI: mongodb://[user:password@]host[:port][/?options] (percent-encode '@' and ':' " \
                   "in a password)"
        else:
            hint = f"is MongoDB running at {shown}?"
        return BackendError(f"cannot use MongoDB at {shown}: {reason}", hint=hint)

    def _translate(self, exc: Exception) -> Exception:
        """A pymongo exception as the NlqError it means."""
        name = type(exc).__name__
        if name in ("ExecutionTimeout",) or getattr(exc, "code", None) == 50:
            return QueryTimeout(f"query exceeded the time limit (maxTimeMS): {exc}", code=50)
        if any(cls.__name__ in _CONNECTION_ERRORS for cls in type(exc).__mro__):
            return self._backend_error(exc)
        if any(cls.__name__ == "OperationFailure" for cls in type(exc).__mro__):
            details = getattr(exc, "details", None) or {}
            return ExecutionError(details.get("errmsg") or str(exc), code=getattr(exc, "code", None))
        if any(cls.__name__ == "PyMongoError" for cls in type(exc).__mro__):
            return BackendError(f"MongoDB error: {exc}")
        return exc

    def _call(self, fn, *args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - translated to NlqError below
            translated = self._translate(exc)
            if translated is exc:
                raise
            raise translated from None

    # -- interface -------------------------------------------------------------------
    def databases(self) -> list[str]:
        return sorted(self._call(self._client.list_database_names))

    def collections(self, db: str) -> list[str]:
        if db not in self.databases():
            raise BackendError(f"no database {db!r} at {redact(self.uri)}")
        names = self._call(self._client[db].list_collection_names)
        return sorted(n for n in names if not n.startswith("system."))

    def count(self, db: str, collection: str) -> int:
        return int(self._call(self._client[db][collection].count_documents, {}))

    def sample(self, db: str, collection: str, n: int, seed: int = 0) -> list[dict]:
        coll = self._client[db][collection]

        def read():
            ids = [doc["_id"] for doc in coll.find({}, {"_id": 1}).sort("_id", 1)]
            if n >= len(ids):
                return list(coll.find({}).sort("_id", 1))
            picked = [ids[i] for i in sorted(random.Random(seed).sample(range(len(ids)), n))]
            return list(coll.find({"_id": {"$in": picked}}).sort("_id", 1))
        return self._call(read)

    def aggregate(self, db: str, collection: str, pipeline: list, *,
                  timeout: float = DEFAULT_TIMEOUT, max_rows: int = DEFAULT_MAX_ROWS,
                  max_bytes: int = DEFAULT_MAX_BYTES) -> list[dict]:
        from nlq.mql import analyze
        from nlq.mql.engine import capped_rows

        analyze.check_forbidden(pipeline)  # never sent to the server
        coll = self._client[db][collection]
        # One row beyond the cap is enough to know the cap is exceeded.
        capped = list(pipeline) + [{"$limit": max_rows + 1}]

        def read():
            cursor = coll.aggregate(capped, maxTimeMS=max(1, int(timeout * 1000)), allowDiskUse=False)
            try:
                return capped_rows(cursor, max_rows=max_rows, max_bytes=max_bytes)
            finally:
                close = getattr(cursor, "close", None)
                if close is not None:
                    close()
        return self._call(read)


__all__ = ["MongoBackend", "redact"]
