"""The one sampling rule of both backends: seeded positions in `_id` order.

A sample of `n` documents out of `count` is the documents at the positions
`random.Random(seed).sample(range(count), n)` of the collection read in
ascending `_id` order (MongoDB's comparison order of BSON values), returned in
that order; all documents when `n >= count`. The embedded backend sorts its
files by `_id`, the MongoDB backend asks the server for those positions, so
the same seed over the same data gives the same documents, hence the same
index and the same card, whichever backend reads them.

A document without `_id` (TEND's files carry none) stands where MongoDB would
put it after an import: an import assigns it a fresh ObjectId, greater than
the ObjectIds already there and increasing in file order.
"""

from __future__ import annotations

import random

from bson.objectid import ObjectId


def positions(count: int, n: int, seed: int) -> list[int]:
    """The ascending positions (in `_id` order) of the sampled documents.

    >>> positions(5, 9, 0)
    [0, 1, 2, 3, 4]
    """
    if n >= count:
        return list(range(count))
    return sorted(random.Random(seed).sample(range(count), n))


_FRESH = ObjectId(b"\xff" * 12)  # what an import assigns sorts after every stored ObjectId


def id_order(ids: list) -> list[int] | None:
    """The positions of documents with these `_id`s (MISSING: no `_id`) in ascending `_id` order,
    as `find().sort({_id: 1})` returns them; None (the file order) when none has an `_id`.

    Documents without `_id` keep their file order after every ObjectId (before
    booleans, dates and the later types)."""
    from nlq.mql.values import MISSING, sort_key

    return key_order([None if v is MISSING else sort_key(v) for v in ids])


def key_order(keys: list) -> list[int] | None:
    """`id_order` of the `_id`s' `nlq.mql.values.sort_key`s (None: no `_id`)."""
    if all(k is None for k in keys):
        return None
    from nlq.mql.values import sort_key

    fresh = sort_key(_FRESH)
    decorated = [(fresh if k is None else k, i) for i, k in enumerate(keys)]
    decorated.sort()
    return [i for _, i in decorated]


def in_id_order(docs: list[dict]) -> list[dict]:
    """The documents in ascending `_id` order (`id_order`); a collection without any `_id` is
    returned as it is, without sorting."""
    from nlq.mql.values import MISSING

    order = id_order([doc.get("_id", MISSING) for doc in docs])
    return docs if order is None else [docs[i] for i in order]


def sample(docs: list[dict], n: int, seed: int) -> list[dict]:
    """`n` documents of an in-memory collection by the rule above."""
    ordered = in_id_order(docs)
    return [ordered[i] for i in positions(len(ordered), n, seed)]
