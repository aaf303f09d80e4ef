"""The `nlq memory` stages: add verified records, verify entries against the current data.

    added = add_records(records, memory)            # each record + `memory = {added | skipped}`
    checked = verify(memory, backend)               # each entry + `verify = {ok, rows | reason}`

A record is verified when it scored EXC 1 (`score.exc == 1`, from `nlq
score`), or when a user confirmed its answer (`confirmed: true`, written by
`nlq ask --confirm`); its `prediction` is what is remembered. With
`gold=True` the record's gold is remembered instead (`verified_by: gold`):
on purpose only, since a memory holding a benchmark's golds answers that
benchmark from its own answers. Each entry keeps the record's `id` as its
`source`, so that record (and its other phrasings) is never answered from it.
"""

from __future__ import annotations

from typing import Iterable, Iterator

from nlq import io, mql
from nlq.errors import BackendError, NlqError
from nlq.memory.store import Entry, Memory
from nlq.mql.analyze import check_forbidden

STAGE = "memory"


def query_of(record: dict, *, gold: bool = False):
    """The query a record vouches for: its prediction (or its gold), as a parsed Query."""
    if gold:
        source = record.get("gold") if record.get("gold") is not None else record.get("gold_mql")
        what = "gold"
    else:
        source = record.get("prediction")
        if isinstance(source, dict) and "pipeline" not in source and isinstance(source.get("mql"), str):
            source = source["mql"]
        what = "prediction"
    if source is None:
        raise NlqError(f"the record has no {what} to remember")
    query = mql.parse(source)
    check_forbidden(query)
    return query


def verifier(record: dict, gold: bool) -> str | None:
    """Who vouches for a record's answer (`score`, `user`, `gold`), or None."""
    if gold:
        return "gold"
    if record.get("confirmed") is True:
        return "user"
    exc = (record.get("score") or {}).get("exc")
    return "score" if exc == 1 and not isinstance(exc, bool) else None


def add_records(records: Iterable[dict], memory: Memory, *, gold: bool = False) -> Iterator[dict]:
    """Each record with `memory = {added: id, new: bool}`, or `{skipped: why}` when its answer is not
    verified; a record that cannot be remembered (no db or question, a query that does not parse or
    is forbidden) gets a typed failure (stage `memory`)."""
    for record in records:
        if io.has_failure(record):
            yield record
            continue
        who = verifier(record, gold)
        if who is None:
            yield {**record, "memory": {"skipped": "not verified: it did not score EXC 1 and was not confirmed"}}
            continue
        try:
            query = query_of(record, gold=gold)
            entry = Entry(db=record.get("db"), question=record.get("question"), collection=query.collection,
                          pipeline=query.pipeline, verified_by=who,
                          source=record.get("id") if isinstance(record.get("id"), str) else None)
            entry_id, new = memory.add(entry)
        except NlqError as exc:
            yield {**record, "failure": exc.to_failure(STAGE)}
            continue
        yield {**record, "memory": {"added": entry_id, "new": new}}


def verify(memory: Memory, backend, *, db: str | None = None, timeout: float, max_rows: int) -> Iterator[dict]:
    """Re-run every entry (of `db`, or all) on the current data: an entry that no longer runs, or
    now returns nothing, is marked stale (and no longer used); one that runs again is usable again.
    Yields each entry's record with `verify = {ok, rows}` or `{ok: false, reason}`."""
    for entry in memory.entries(db, stale=True):
        try:
            rows = backend.aggregate(entry.db, entry.collection, entry.pipeline, timeout=timeout, max_rows=max_rows)
            reason = None if rows else "returns nothing on the current data"
        except BackendError:
            raise
        except NlqError as exc:
            rows, reason = [], f"no longer runs: {exc.message}"
        memory.mark(entry.id, reason)
        entry.stale = reason
        yield {**entry.to_json(), "verify": {"ok": True, "rows": len(rows)} if reason is None
               else {"ok": False, "reason": reason}}


def learn(memory: Memory, task: dict, lessons: list[dict]) -> list[int]:
    """Store what a repair learned (`repair.lessons`: the violations a later round fixed, and the
    fix) as `lesson` entries of the task's database; their ids."""
    ids = []
    for lesson in lessons:
        query = lesson["query"]
        note = "; ".join(lesson["violations"])
        entry_id, _ = memory.add(Entry(db=task["db"], question=task["question"], collection=query["collection"],
                                       pipeline=query["pipeline"], verified_by="repair", kind="lesson", note=note,
                                       source=task.get("id") if isinstance(task.get("id"), str) else None))
        ids.append(entry_id)
    return ids


def usable(entry: Entry, backend, *, timeout: float, max_rows: int) -> bool:
    """Whether an entry still answers on the current data (it runs and returns rows): a lesson is
    re-verified so before a prompt shows it."""
    try:
        return bool(backend.aggregate(entry.db, entry.collection, entry.pipeline, timeout=timeout, max_rows=max_rows))
    except BackendError:
        raise
    except NlqError:
        return False
