"""The shared response cache and the run ledger on a real MongoDB server (SecantusDB): `make wire`.

    problems = check(server_uri)     # [] when every check holds

The same contract the in-process tests check against tests/wire.py's
StoreServer, here against an independent server: the first reply stored for
a key stands, a damaged document is a miss, a miss claims its key and a second
runner waits for the first one's reply, two runners on one ledger handle each
record once, and a dead runner's lease is taken over once it expires.
"""

from __future__ import annotations

import threading
import time

from nlq.ledger import Ledger
from nlq.llm.shared_cache import MongoResponseCache

REPLY = {"text": "{}", "usage": {}, "ms": 1.0}
EP = "http://127.0.0.1:8000/v1"


def check(uri: str) -> list[str]:
    problems: list[str] = []
    cache_uri = f"{uri.rstrip('/')}/nlq_wire?collection=llm_cache"
    first, second = MongoResponseCache(cache_uri), MongoResponseCache(cache_uri, poll_s=0.01)
    if first.get("k", EP) is not None:
        problems.append("cache: a fresh key is not a miss")
    got: list = []
    waiter = threading.Thread(target=lambda: got.append(second.get("k", EP)))
    waiter.start()
    time.sleep(0.3)
    if got:
        problems.append("cache: a second runner did not wait for the first one's claim")
    first.put("k", EP, {"messages": []}, REPLY)
    first.put("k", EP, {"messages": []}, {**REPLY, "text": "later"})
    waiter.join(10)
    if got != [REPLY]:
        problems.append(f"cache: the waiting runner got {got!r}, not the first reply")
    if first.get("k", EP) != REPLY or len(first) != 1:
        problems.append("cache: the first reply did not stand")
    first._collection.update_one({"key": "k"}, {"$set": {"response": "{damaged"}})
    if MongoResponseCache(cache_uri, claim=False).get("k", EP) is not None:
        problems.append("cache: a damaged document is not a miss")

    ledger_uri = f"{uri.rstrip('/')}/nlq_wire?collection=ledger"
    records = [{"id": f"w/{i}"} for i in range(8)]
    handled, outputs, lock = [], {}, threading.Lock()

    def handle(record):
        with lock:
            handled.append(record["id"])
        return {**record, "done": True}

    def runner(name):
        with Ledger(ledger_uri, "arm", owner=name) as ledger:
            outputs[name] = list(ledger.run(records, handle))

    threads = [threading.Thread(target=runner, args=(n,)) for n in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    if sorted(handled) != sorted(r["id"] for r in records):
        problems.append(f"ledger: records handled {sorted(handled)}, not each once")
    if outputs.get("a", EP) != outputs.get("b", EP) or len(outputs.get("a", EP) or []) != len(records):
        problems.append("ledger: the two runners did not write the same records")
    dead = Ledger(ledger_uri, "expiring", lease=0.5, owner="dead")
    dead.claim("w/1")
    with Ledger(ledger_uri, "expiring", lease=0.5, owner="alive") as alive:
        out = list(alive.run([{"id": "w/1"}], lambda r: {**r, "by": "alive"}))
    if out != [{"id": "w/1", "by": "alive"}]:
        problems.append(f"ledger: an expired lease was not taken over ({out!r})")
    first._client.drop_database("nlq_wire")  # the run's own checks leave no database for the comparison to list
    for handle_ in (first, second):
        handle_.close()
    dead.close()
    return problems
