"""Stages that order and page the stream: $sort (with the $sort+$limit
coalescence), $skip and $limit; the sort order helpers shared with
$sortArray, the N-accumulators and $setWindowFields."""

from __future__ import annotations

import heapq
from itertools import islice

from nlq.errors import ExecutionError, UnsupportedOperatorError
from nlq.mql.match import path_values
from nlq.mql.registry import STAGE, implements
from nlq.mql.stages.base import checked, field_parts, materialize, non_negative_int
from nlq.mql.values import MISSING, NUMBER, STRING, is_number, number_value, sort_key

# ---------------------------------------------------------------------------
# $sort  (https://www.mongodb.com/docs/manual/reference/operator/aggregation/sort/)

# "A comparison of an empty array treats the empty array as less than null or a
# missing field" (manual, Comparison/Sort Order): a key between MinKey and null.
_EMPTY_ARRAY_KEY = (0, 1)


def sort_value_key(doc, parts: tuple[str, ...], descending: bool):
    """The key a document sorts by on `parts`: over arrays, the smallest element
    (ascending) or the largest (descending); missing sorts as null."""
    if len(parts) == 1:
        value = doc.get(parts[0], MISSING) if type(doc) is dict else MISSING
        if type(value) is not list:
            return sort_key(value)
        candidates = [value]
    else:
        candidates = path_values(doc, parts)
        if len(candidates) == 1 and type(candidates[0]) is not list:
            return sort_key(candidates[0])
    keys = []
    for value in candidates:
        if type(value) is list:
            if value:
                keys.extend(sort_key(e) for e in value)
            else:
                keys.append(_EMPTY_ARRAY_KEY)
        else:
            keys.append(sort_key(value))
    if not keys:  # the path ends in arrays without documents (`c.x` of `{c: [1]}`): missing, as null
        return sort_key(None)
    return max(keys) if descending else min(keys)


def parse_sort_spec(spec, stage: str = "$sort") -> list[tuple[tuple[str, ...], bool]]:
    """[(path parts, descending)] of a `{field: 1|-1}` specification."""
    if type(spec) is not dict or not spec:
        raise ExecutionError(f"the {stage} key specification must be a non-empty object")
    keys = []
    for field, direction in spec.items():
        if type(direction) is dict:
            if "$meta" in direction:
                raise UnsupportedOperatorError(f"the embedded engine does not support sorting by "
                                               f"{{$meta: {direction['$meta']!r}}} (text/search score)")
            raise ExecutionError(f"invalid {stage} key ordering for '{field}': {direction}")
        if not is_number(direction) or isinstance(direction, bool) or number_value(direction) not in (1, -1):
            raise ExecutionError(f"{stage} key ordering must be 1 (for ascending) or -1 (for descending)")
        keys.append((field_parts(field, stage, ()), number_value(direction) == -1))
    return keys


# Documents keyed, or sorted, between two deadline checks: a sort of a million documents is
# seconds of C code that cannot be stopped, so it runs as sorted runs of this size, merged
# two by two (timsort merges two sorted runs in one linear pass), with a check between any
# two steps: the longest step left is the last linear merge.
_SORT_RUN = 1 << 15


def sort_documents(docs: list, keys, check=None) -> list:
    """Stable multi-key sort (in place) by MongoDB order; returns docs.
    `check()` (the deadline) runs every _SORT_RUN documents."""
    n = len(docs)
    for parts, descending in reversed(keys):
        if check is not None:
            check()
        if check is None or n <= _SORT_RUN:
            decorated = [(sort_value_key(doc, parts, descending), i) for i, doc in enumerate(docs)]
            decorated.sort(key=lambda pair: pair[0], reverse=descending)
            docs[:] = [docs[i] for _, i in decorated]
            continue
        sort_keys: list = []
        for start in range(0, n, _SORT_RUN):
            check()
            sort_keys.extend([sort_value_key(doc, parts, descending) for doc in docs[start:start + _SORT_RUN]])
        key = sort_keys.__getitem__
        runs = []
        for start in range(0, n, _SORT_RUN):
            check()
            runs.append(sorted(range(start, min(n, start + _SORT_RUN)), key=key, reverse=descending))
        while len(runs) > 1:  # merge neighbours, a round at a time (stable: the left run wins ties)
            merged = []
            for i in range(0, len(runs) - 1, 2):
                check()
                pair = runs[i] + runs[i + 1]
                pair.sort(key=key, reverse=descending)  # timsort merges the two sorted runs in one pass
                merged.append(pair)
            if len(runs) % 2:
                merged.append(runs[-1])
            runs = merged
        docs[:] = [docs[i] for i in runs[0]]
    return docs


class Descending:
    """A sort key that orders descending inside a compound key."""

    __slots__ = ("key",)

    def __init__(self, key):
        self.key = key

    def __lt__(self, other):
        return other.key < self.key

    def __gt__(self, other):
        return other.key > self.key

    def __eq__(self, other):
        return self.key == other.key


class _Kept:
    """A document kept by `top_documents`; the heap's smallest entry is the worst kept one."""

    __slots__ = ("key", "doc")

    def __init__(self, key: tuple, doc):
        self.key, self.doc = key, doc

    def __lt__(self, other):
        return other.key < self.key


def top_documents(stream, keys, limit: int, check) -> list:
    """The first `limit` documents of `sort_documents(list(stream), keys)`, in that order, without
    sorting the stream: a heap of the best `limit` so far under the compound key (each field's
    key, descending ones reversed, then the arrival position, which keeps the order stable).
    A document whose first field's key is worse than the worst kept one's is dropped before
    its other keys are computed."""
    (first_parts, first_descending), rest = keys[0], keys[1:]
    first_name = first_parts[0] if len(first_parts) == 1 else None
    heap: list[_Kept] = []
    worst_first = None  # the unwrapped first key of heap[0] once the heap is full
    for position, doc in enumerate(stream):
        check()
        value = doc.get(first_name, MISSING) if first_name is not None and type(doc) is dict else MISSING
        t = type(value)
        if t is str:  # `sort_key` of a string or an int, built in place (the first key of most documents)
            first = (STRING, value)
        elif t is int:
            first = (NUMBER, (1, value))
        else:
            first = sort_value_key(doc, first_parts, first_descending)
        if worst_first is not None and (first < worst_first if first_descending else first > worst_first):
            continue
        key = [Descending(first) if first_descending else first]
        for parts, descending in rest:
            k = sort_value_key(doc, parts, descending)
            key.append(Descending(k) if descending else k)
        key.append(position)
        entry = _Kept(tuple(key), doc)
        if len(heap) < limit:
            heapq.heappush(heap, entry)
            if len(heap) < limit:
                continue
        elif heap[0].key > entry.key:
            heapq.heapreplace(heap, entry)
        else:
            continue
        top = heap[0].key[0]
        worst_first = top.key if first_descending else top
    heap.sort(key=lambda kept: kept.key)
    return [kept.doc for kept in heap]


@implements(STAGE, "$sort")
def compile_sort(spec, ctx, *, limit: int | None = None):
    """`limit` (a `$limit` right after the `$sort`, as MongoDB coalesces them) bounds
    the work: only the best `limit` documents are kept while reading (`top_documents`)."""
    keys = parse_sort_spec(spec)
    check = ctx.check

    def sort(stream):
        if limit is None:
            yield from sort_documents(materialize(stream, check), keys, check)
        else:
            yield from top_documents(stream, keys, limit, check)
    return sort


# ---------------------------------------------------------------------------
# $skip / $limit / $count


@implements(STAGE, "$skip")
def compile_skip(spec, ctx):
    n = non_negative_int(spec, "$skip")
    check = ctx.check

    def skip(stream):
        return checked(islice(stream, n, None), check)
    return skip


@implements(STAGE, "$limit")
def compile_limit(spec, ctx):
    n = non_negative_int(spec, "$limit", positive=True)
    check = ctx.check

    def limit(stream):
        return checked(islice(stream, n), check)
    return limit
