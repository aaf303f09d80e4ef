"""Shards of a run: a stable split of records by id, and the join of the shards' outputs.

    shard_of("clinic/7", 4)            -> 1..4, the same on every machine and every run
    select(records, 2, 4)              -> the records of shard 2 of 4
    join(order, [part1, part2])        -> the shards' records, in the order of `order`'s ids

A reproduction split across machines runs each shard of the tasks on its own
machine (`make paper SHARD=i/N`) and joins the scored files (`make
paper-join`): the joined file holds the records of one unsharded run, in the
task file's order, so its report is the unsharded run's. The split hashes the
record id (sha256), so it does not depend on the order or the number of
records; a record without an id falls in shard 1.
"""

from __future__ import annotations

import hashlib
from typing import Iterable, Iterator

from nlq.errors import InputError


def parse(spec: str) -> tuple[int, int]:
    """`"2/4"` -> (2, 4) (InputError unless 1 <= i <= n)."""
    try:
        i, n = (int(part) for part in spec.split("/"))
    except ValueError:
        raise InputError(f"a shard is I/N (e.g. 1/4), not {spec!r}") from None
    if not 1 <= i <= n:
        raise InputError(f"shard {spec}: I must lie between 1 and N")
    return i, n


def shard_of(record_id, n: int) -> int:
    """The shard (1..n) of a record id."""
    if not isinstance(record_id, str):
        return 1
    return int.from_bytes(hashlib.sha256(record_id.encode("utf-8")).digest()[:8], "big") % n + 1


def select(records: Iterable[dict], i: int, n: int) -> Iterator[dict]:
    """The records of shard `i` of `n`, in input order."""
    for record in records:
        if shard_of(record.get("id"), n) == i:
            yield record


def join(order: Iterable[dict], parts: Iterable[Iterable[dict]]) -> Iterator[dict]:
    """The records of `parts` in the order of the ids of `order` (those of no listed id after them,
    in the parts' order). Two records with one id are an InputError: shards never overlap."""
    by_id: dict[str, dict] = {}
    rest: list[dict] = []
    for part in parts:
        for record in part:
            record_id = record.get("id")
            if not isinstance(record_id, str):
                rest.append(record)
            elif record_id in by_id:
                raise InputError(f"record {record_id!r} is in two shards: join the shards of one split")
            else:
                by_id[record_id] = record
    for record in order:
        found = by_id.pop(record.get("id"), None) if isinstance(record.get("id"), str) else None
        if found is not None:
            yield found
    yield from by_id.values()
    yield from rest
