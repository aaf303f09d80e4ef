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


def in_id_order(docs: list[dict]) -> list[dict]:
    """The documents in ascending `_id` order, as `find().sort({_id: 1})` returns them.

    Documents without `_id` keep their file order after every ObjectId (before
    booleans, dates and the later types); a collection without any `_id` is
    returned as it is, without sorting."""
    if not any("_id" in doc for doc in docs):
        return docs
    from nlq.mql.values import sort_key

    fresh = sort_key(_FRESH)
    keyed = sorted(range(len(docs)),
                   key=lambda i: (sort_key(docs[i]["_id"]) if "_id" in docs[i] else fresh, i))
    return [docs[i] for i in keyed]


def sample(docs: list[dict], n: int, seed: int) -> list[dict]:
    """`n` documents of an in-memory collection by the rule above."""
    ordered = in_id_order(docs)
    return [ordered[i] for i in positions(len(ordered), n, seed)]
