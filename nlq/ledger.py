"""The run ledger: which record of which arm is done, shared by the runners of one reproduction.

    with Ledger("mongodb://host/nlq?collection=ledger", arm="sag") as ledger:
        records = ledger.run(records, handle)   # each record handled once across every runner

Several machines run the same arm over the same tasks; each record is
claimed with a lease (`{_id: "<arm>/<record id>", state: "leased", owner,
expires}`), handled by the runner that holds it, and stored as done with
its output record (`state: "done", record`). A runner that finds a record
done takes the stored output; one that finds it leased goes on with the
next records and comes back to it, taking it over once its lease has expired
(the runner that held it died), so a crashed runner's records are finished
by another. Every runner writes every record, in input order: the outputs
of two runners are the same records.

The lease (`--lease`, seconds) must outlast the handling of one record; a
record whose handler outlives its lease may be handled twice (both outputs
are equivalent: model replies come from the shared cache). Records without
an `id` are handled by every runner (there is nothing to key them by).
"""

from __future__ import annotations

import os
import socket
import time
import uuid
from collections import deque
from typing import Callable, Iterable, Iterator

import orjson

from nlq.errors import NlqError
from nlq.llm.shared_cache import connect

DEFAULT_COLLECTION = "ledger"
DEFAULT_LEASE_S = 900.0
POLL_S = 0.5


class LedgerError(NlqError):
    type = "ledger_error"


class Ledger:
    """One arm's view of the ledger collection."""

    def __init__(self, uri: str, arm: str, *, lease: float = DEFAULT_LEASE_S, owner: str | None = None,
                 clock: Callable[[], float] = time.time, sleep: Callable[[float], None] = time.sleep):
        if not arm:
            raise LedgerError("a ledger needs the name of the arm it records (--arm NAME)")
        if lease <= 0:
            raise LedgerError("the lease must be a positive number of seconds")
        self._client, self._collection = connect(uri, "run ledger", DEFAULT_COLLECTION)
        self.arm, self.lease = arm, lease
        self.owner = owner or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._clock, self._sleep = clock, sleep

    def __enter__(self) -> "Ledger":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self._client.close()

    def key(self, record_id: str) -> str:
        return f"{self.arm}/{record_id}"

    def claim(self, record_id: str) -> tuple[str, dict | None]:
        """`("mine", None)` when this runner now holds the record's lease, `("done", output record)`
        when a runner finished it, `("busy", None)` while another runner's lease runs."""
        from pymongo.errors import DuplicateKeyError

        key = self.key(record_id)
        now = self._clock()
        try:
            self._collection.insert_one({"_id": key, "state": "leased", "owner": self.owner,
                                         "expires": now + self.lease})
            return "mine", None
        except DuplicateKeyError:
            pass
        doc = self._collection.find_one({"_id": key})
        if doc is None:  # removed between the two calls: try again
            return self.claim(record_id)
        if doc.get("state") == "done":
            try:
                return "done", orjson.loads(doc["record"])
            except (KeyError, TypeError, ValueError):
                pass  # a damaged done entry: handle the record again
        elif doc.get("owner") != self.owner and float(doc.get("expires", 0)) > now:
            return "busy", None
        taken = self._collection.find_one_and_update(
            {"_id": key, "state": doc.get("state"), "expires": doc.get("expires")},
            {"$set": {"state": "leased", "owner": self.owner, "expires": now + self.lease}})
        return ("mine", None) if taken is not None else self.claim(record_id)

    def finish(self, record_id: str, record: dict) -> None:
        """Store the record's output as done (a done record is never written again)."""
        self._collection.update_one({"_id": self.key(record_id), "state": {"$ne": "done"}},
                                    {"$set": {"state": "done", "owner": self.owner,
                                              "record": orjson.dumps(record).decode()}})

    def run(self, records: Iterable[dict], handle: Callable[[dict], dict]) -> Iterator[dict]:
        """`handle(record)` for each record not done elsewhere, in input order (see the module docstring).

        Records after one that another runner holds are handled on, and kept until it is
        resolved: the output stays in input order."""
        waiting: deque = deque()  # [record, output or None], from the first unresolved one on
        for record in records:
            record_id = record.get("id") if isinstance(record, dict) else None
            if not isinstance(record_id, str):
                waiting.append([record, handle(record)])
            else:
                waiting.append([record, self._try(record_id, record, handle)])
            while waiting and waiting[0][1] is not None:
                yield waiting.popleft()[1]
        while waiting:
            record, output = waiting[0]
            if output is None:
                output = self._try(record["id"], record, handle)
                if output is None:
                    self._sleep(POLL_S)
                    continue
            waiting.popleft()
            yield output

    def _try(self, record_id: str, record: dict, handle) -> dict | None:
        state, stored = self.claim(record_id)
        if state == "done":
            return stored
        if state == "busy":
            return None
        output = handle(record)
        self.finish(record_id, output)
        return output
