"""A MongoDB wire-protocol server on 127.0.0.1 answering from nlq's embedded engine (test-only).

mockupdb (MongoDB's mock server library for driver tests) speaks the protocol;
`WireServer` answers the commands the MongoBackend sends — the handshake,
`listDatabases`, `listCollections`, `aggregate` (+ `getMore`, `killCursors`),
`count` and `find` — by running them on an `EmbeddedBackend`, so the backend
is exercised through real pymongo: connection pool, cursors, batches, errors
and timeouts as a server produces them.

    with WireServer(EmbeddedBackend("fixtures/worlds")) as server:
        MongoBackend(server.uri).collections("clinic")

`server.hang(command)` leaves that command unanswered (a server that never
replies); `server.fail(command, code, errmsg)` answers it with a server error;
`server.requests` holds the commands received, in order (`server.commands` their names).
"""

from __future__ import annotations

import itertools

import bson
from bson.codec_options import CodecOptions

# The handshake of a MongoDB 7.0 standalone (wire version 21); pymongo needs >= 8.
HELLO = {"ismaster": True, "isWritablePrimary": True, "helloOk": True, "minWireVersion": 0,
         "maxWireVersion": 21, "maxBsonObjectSize": 16 * 1024 * 1024, "maxMessageSizeBytes": 48_000_000,
         "maxWriteBatchSize": 100_000, "logicalSessionTimeoutMinutes": 30}

# mockupdb decodes requests into OrderedDicts of naive datetimes; the engine reads plain documents.
_CODEC = CodecOptions(tz_aware=True)
_UNLIMITED = 1 << 40
_DEFAULT_BATCH = 101


def _plain(doc) -> dict:
    return bson.decode(bson.encode(doc), _CODEC)


class WireServer:
    def __init__(self, backend):
        from mockupdb import MockupDB

        self.backend = backend
        self.requests: list[dict] = []
        self._hung: set[str] = set()
        self._failures: dict[str, dict] = {}
        self._cursors: dict[int, list] = {}
        self._ids = itertools.count(1)
        self._mock = MockupDB()
        self._mock.autoresponds(self._respond)

    # -- lifecycle -------------------------------------------------------------------
    def start(self) -> "WireServer":
        self._mock.run()
        return self

    def stop(self) -> None:
        self._mock.stop()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    @property
    def uri(self) -> str:
        return f"mongodb://127.0.0.1:{self._mock.port}/"

    # -- scripted misbehaviour -------------------------------------------------------
    def hang(self, command: str) -> None:
        """Never answer `command` (the request waits in mockupdb's queue until the server stops)."""
        self._hung.add(command.lower())

    def fail(self, command: str, code: int, errmsg: str, code_name: str = "Location") -> None:
        """Answer `command` with a server error."""
        self._failures[command.lower()] = {"ok": 0, "code": code, "codeName": code_name, "errmsg": errmsg}

    @property
    def commands(self) -> list[str]:
        return [next(iter(doc)).lower() for doc in self.requests]

    def open_cursors(self) -> int:
        return len(self._cursors)

    # -- dispatch --------------------------------------------------------------------
    def _respond(self, request) -> bool:
        name = (request.command_name or "").lower()
        if name in ("ismaster", "hello"):  # the handshake and the driver's monitoring
            request.replies(dict(HELLO))
            return True
        doc = _plain(request.doc)
        self.requests.append(doc)
        if name in self._hung:
            return False
        if name in self._failures:
            request.replies(dict(self._failures[name]))
            return True
        handler = getattr(self, f"_cmd_{name}", None)
        if handler is None:
            request.replies({"ok": 0, "code": 59, "codeName": "CommandNotFound",
                             "errmsg": f"no such command: '{request.command_name}'"})
            return True
        from nlq.errors import NlqError, QueryTimeout

        try:
            request.replies(handler(request.namespace, doc))
        except QueryTimeout as exc:
            request.replies({"ok": 0, "code": 50, "codeName": "MaxTimeMSExpired", "errmsg": str(exc)})
        except NlqError as exc:
            request.replies({"ok": 0, "code": getattr(exc, "code", None) or 2, "codeName": "BadValue",
                             "errmsg": str(exc)})
        return True

    # -- commands --------------------------------------------------------------------
    def _cmd_ping(self, db, doc):
        return {"ok": 1}

    _cmd_endsessions = _cmd_ping

    def _cmd_buildinfo(self, db, doc):
        return {"ok": 1, "version": "7.0.0", "versionArray": [7, 0, 0, 0]}

    def _cmd_listdatabases(self, db, doc):
        names = self.backend.databases()
        return {"ok": 1, "databases": [{"name": n, "sizeOnDisk": 1, "empty": False} for n in names]}

    def _cmd_listcollections(self, db, doc):
        names = self.backend.collections(db) if db in self.backend.databases() else []
        infos = [{"name": n, "type": "collection"} for n in names]
        if doc.get("filter"):
            infos = self._run(infos, [{"$match": doc["filter"]}])
        return self._cursor(f"{db}.$cmd.listCollections", infos, doc.get("cursor", {}).get("batchSize"))

    def _cmd_aggregate(self, db, doc):
        rows = self._query(db, doc["aggregate"], doc["pipeline"], doc.get("maxTimeMS"))
        return self._cursor(f"{db}.{doc['aggregate']}", rows, doc.get("cursor", {}).get("batchSize"))

    def _cmd_find(self, db, doc):
        pipeline = [{"$match": doc.get("filter", {})}]
        for key, stage in (("sort", "$sort"), ("skip", "$skip"), ("limit", "$limit"), ("projection", "$project")):
            if doc.get(key):
                pipeline.append({stage: abs(doc[key]) if key == "limit" else doc[key]})
        rows = self._query(db, doc["find"], pipeline, doc.get("maxTimeMS"))
        batch = doc.get("batchSize")
        if doc.get("singleBatch"):
            rows = rows[:batch] if batch else rows
        return self._cursor(f"{db}.{doc['find']}", rows, batch)

    def _cmd_count(self, db, doc):
        pipeline = [{"$match": doc.get("query") or {}}, {"$count": "n"}]
        rows = self._query(db, doc["count"], pipeline, doc.get("maxTimeMS"))
        return {"ok": 1, "n": rows[0]["n"] if rows else 0}

    def _cmd_getmore(self, db, doc):
        cursor_id = int(doc["getMore"])
        pending = self._cursors.get(cursor_id)
        if pending is None:
            return {"ok": 0, "code": 43, "codeName": "CursorNotFound", "errmsg": f"cursor id {cursor_id} not found"}
        batch = doc.get("batchSize") or len(pending)
        out, rest = pending[:batch], pending[batch:]
        if rest:
            self._cursors[cursor_id] = rest
        else:
            del self._cursors[cursor_id]
        return {"ok": 1, "cursor": {"id": bson.int64.Int64(cursor_id if rest else 0),
                                    "ns": f"{db}.{doc['collection']}", "nextBatch": out}}

    def _cmd_killcursors(self, db, doc):
        killed = [c for c in doc.get("cursors", []) if self._cursors.pop(int(c), None) is not None]
        return {"ok": 1, "cursorsKilled": killed, "cursorsNotFound": [], "cursorsAlive": [], "cursorsUnknown": []}

    # -- helpers ---------------------------------------------------------------------
    def _query(self, db, collection, pipeline, max_time_ms):
        timeout = max_time_ms / 1000 if max_time_ms else 3600.0
        if db not in self.backend.databases():
            return self._run([], pipeline, timeout)
        return self.backend.aggregate(db, collection, pipeline, timeout=timeout,
                                      max_rows=_UNLIMITED, max_bytes=_UNLIMITED)

    @staticmethod
    def _run(docs, pipeline, timeout=3600.0):
        from nlq.mql import engine

        return engine.aggregate(docs, pipeline, timeout=timeout, max_rows=_UNLIMITED, max_bytes=_UNLIMITED)

    def _cursor(self, ns: str, rows: list, batch_size) -> dict:
        batch = _DEFAULT_BATCH if batch_size is None else batch_size
        first, rest = rows[:batch], rows[batch:]
        cursor_id = 0
        if rest:
            cursor_id = next(self._ids)
            self._cursors[cursor_id] = rest
        return {"ok": 1, "cursor": {"id": bson.int64.Int64(cursor_id), "ns": ns, "firstBatch": first}}


class StoreServer(WireServer):
    """A WireServer that also writes: documents kept in memory, per database and collection.

    It answers the reads of WireServer (find, aggregate, count) from its own
    store, and the writes the shared response cache and the run ledger send:
    `insert`, `update` (upsert, `$set`, `$setOnInsert`, `$unset`, replacement),
    `findAndModify`, `delete`, `createIndexes` and `drop`. `_id` is unique: a
    second insert of one is the server's duplicate key error (code 11000). Each
    command runs under one lock, so concurrent clients see atomic writes, as on
    a server.

        with StoreServer() as server:
            MongoClient(server.uri).nlq.llm_cache.insert_one({"_id": "k"})
    """

    def __init__(self):
        import threading

        super().__init__(None)  # no backend: every read is of the store
        self.store: dict[tuple[str, str], list[dict]] = {}
        self._lock = threading.RLock()

    def _respond(self, request) -> bool:
        with self._lock:
            return super()._respond(request)

    def docs(self, db: str, collection: str) -> list[dict]:
        return self.store.setdefault((db, collection), [])

    def _query(self, db, collection, pipeline, max_time_ms):
        return self._run([dict(d) for d in self.docs(db, collection)], pipeline)

    def _cmd_listdatabases(self, db, doc):
        names = sorted({d for d, _ in self.store})
        return {"ok": 1, "databases": [{"name": n, "sizeOnDisk": 1, "empty": False} for n in names]}

    def _cmd_listcollections(self, db, doc):
        names = sorted(c for d, c in self.store if d == db)
        return {"ok": 1, "cursor": {"id": bson.int64.Int64(0), "ns": f"{db}.$cmd.listCollections",
                                    "firstBatch": [{"name": n, "type": "collection"} for n in names]}}

    def _matching(self, db, collection, query) -> list[dict]:
        from nlq.mql.match import compile_filter

        test = compile_filter(query or {})
        return [d for d in self.docs(db, collection) if test(d)]

    def _insert(self, db, collection, doc) -> dict | None:
        """Insert one document (an ObjectId `_id` when it has none); the write error of a duplicate `_id`."""
        doc = dict(doc)
        if "_id" not in doc:
            doc = {"_id": bson.ObjectId(), **doc}
        if any(d["_id"] == doc["_id"] for d in self.docs(db, collection)):
            return {"code": 11000, "errmsg": f"E11000 duplicate key error collection: {db}.{collection} index: "
                                             f"_id_ dup key: {{ _id: {doc['_id']!r} }}"}
        self.docs(db, collection).append(doc)
        return None

    @staticmethod
    def _updated(doc: dict, update: dict, inserting: bool) -> dict:
        if not any(k.startswith("$") for k in update):
            return {"_id": doc["_id"], **{k: v for k, v in update.items() if k != "_id"}}
        out = dict(doc)
        for op, fields in update.items():
            if op == "$set" or (op == "$setOnInsert" and inserting):
                out.update(fields)
            elif op == "$unset":
                for name in fields:
                    out.pop(name, None)
            elif op != "$setOnInsert":
                raise ValueError(f"update operator {op} is not served by the test server")
        return out

    def _upsert_seed(self, query: dict) -> dict:
        return {k: v for k, v in (query or {}).items() if not k.startswith("$") and not isinstance(v, dict)}

    def _cmd_insert(self, db, doc):
        errors = []
        for i, item in enumerate(doc.get("documents", [])):
            error = self._insert(db, doc["insert"], item)
            if error:
                errors.append({"index": i, **error})
                if doc.get("ordered", True):
                    break
        out = {"ok": 1, "n": len(doc.get("documents", [])) - len(errors)}
        return {**out, "writeErrors": errors} if errors else out

    def _cmd_update(self, db, doc):
        n = modified = 0
        upserted, errors = [], []
        for i, spec in enumerate(doc.get("updates", [])):
            found = self._matching(db, doc["update"], spec.get("q"))
            if not spec.get("multi"):
                found = found[:1]
            if found:
                for old in found:
                    new = self._updated(old, spec["u"], False)
                    n += 1
                    if new != old:
                        modified += 1
                        docs = self.docs(db, doc["update"])
                        docs[docs.index(old)] = new
            elif spec.get("upsert"):
                seed = self._upsert_seed(spec.get("q"))
                seed = {"_id": seed.get("_id", bson.ObjectId()), **seed}
                error = self._insert(db, doc["update"], self._updated(seed, spec["u"], True))
                if error:
                    errors.append({"index": i, **error})
                else:
                    n += 1
                    upserted.append({"index": i, "_id": seed["_id"]})
        out = {"ok": 1, "n": n, "nModified": modified}
        if upserted:
            out["upserted"] = upserted
        return {**out, "writeErrors": errors} if errors else out

    def _cmd_findandmodify(self, db, doc):
        collection = doc.get("findAndModify") or doc.get("findandmodify")
        found = self._matching(db, collection, doc.get("query"))[:1]
        if doc.get("remove"):
            if found:
                self.docs(db, collection).remove(found[0])
            return {"ok": 1, "value": found[0] if found else None}
        if found:
            old = found[0]
            new = self._updated(old, doc["update"], False)
            docs = self.docs(db, collection)
            docs[docs.index(old)] = new
            return {"ok": 1, "value": new if doc.get("new") else old,
                    "lastErrorObject": {"n": 1, "updatedExisting": True}}
        if doc.get("upsert"):
            seed = self._upsert_seed(doc.get("query"))
            seed = {"_id": seed.get("_id", bson.ObjectId()), **seed}
            new = self._updated(seed, doc["update"], True)
            error = self._insert(db, collection, new)
            if error:
                return {"ok": 0, "codeName": "DuplicateKey", **error}
            return {"ok": 1, "value": new if doc.get("new") else None,
                    "lastErrorObject": {"n": 1, "updatedExisting": False, "upserted": new["_id"]}}
        return {"ok": 1, "value": None, "lastErrorObject": {"n": 0, "updatedExisting": False}}

    def _cmd_delete(self, db, doc):
        n = 0
        for spec in doc.get("deletes", []):
            found = self._matching(db, doc["delete"], spec.get("q"))
            if spec.get("limit", 0) == 1:
                found = found[:1]
            for old in found:
                self.docs(db, doc["delete"]).remove(old)
                n += 1
        return {"ok": 1, "n": n}

    def _cmd_createindexes(self, db, doc):
        return {"ok": 1, "numIndexesBefore": 1, "numIndexesAfter": 1 + len(doc.get("indexes", []))}

    def _cmd_drop(self, db, doc):
        self.store.pop((db, doc["drop"]), None)
        return {"ok": 1}
