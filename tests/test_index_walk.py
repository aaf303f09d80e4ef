"""The lattice walk's fast paths give the index of the value-by-value walk, byte for byte:
columns of common JSON types scanned type by type, fields split one field at a time, and the
value index built without ordering each path's values first."""

from __future__ import annotations

import datetime as dt
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from nlq import index as grounding
from nlq import io
from nlq.backends import EmbeddedBackend
from nlq.mql.values import Decimal128, Int64, ObjectId
from tests.conftest import ATLAS, TEND_V1, WORLDS, need

UTC = dt.timezone.utc

KEYS = st.sampled_from(["_id", "a", "b", "name", "2019", "2020", "HBA1C", "x.y", "a[]", "<*>", ""])
SCALARS = st.one_of(
    st.text(alphabet="abAB 1.-", max_size=5), st.sampled_from(["", "x" * 70, "2019", "a"]), st.booleans(), st.none(),
    st.integers(min_value=-(1 << 40), max_value=1 << 40), st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0, 1, 1.0, -0.0, 2**31, -2**31 - 1, 2.5]),
    st.builds(Int64, st.integers(-3, 3)),
    st.datetimes(min_value=dt.datetime(1990, 1, 1), max_value=dt.datetime(1992, 1, 1), timezones=st.just(UTC))
    .map(lambda d: d.replace(microsecond=0)),
    st.sampled_from([ObjectId("0" * 23 + "1"), ObjectId("0" * 23 + "2"), Decimal128("1"), Decimal128("2.50")]),
)
VALUES = st.recursive(SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                       st.dictionaries(KEYS, inner, max_size=4)), max_leaves=12)
DOCS = st.lists(st.dictionaries(KEYS, VALUES, max_size=5), max_size=12)


def index_bytes(collections: dict[str, list], **kw) -> bytes:
    return io.dumps(grounding.index_documents("w", collections, sample=len(collections), **kw))


def value_by_value(monkeypatch):
    """Every column scanned value by value and split object by object."""
    monkeypatch.setattr(grounding, "_SCANNED_BY_TYPE", frozenset())
    monkeypatch.setattr(grounding, "_DENSE_FIELDS", 0)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(a=DOCS, b=DOCS, max_depth=st.sampled_from([1, 2, 12]))
def test_the_fast_walk_gives_the_index_of_the_value_by_value_walk(monkeypatch, a, b, max_depth):
    collections = {"a": a, "b": b}
    fast = index_bytes(collections, max_depth=max_depth)
    with monkeypatch.context() as m:
        m.setattr(grounding, "_DENSE_FIELDS", 10**9)  # every field column read from every object
        assert index_bytes(collections, max_depth=max_depth) == fast
    with monkeypatch.context() as m:
        value_by_value(m)
        assert index_bytes(collections, max_depth=max_depth) == fast


@pytest.mark.parametrize("root", [WORLDS, TEND_V1 / "mongodb_data", ATLAS])
def test_the_fast_walk_gives_the_index_of_the_value_by_value_walk_on_real_data(monkeypatch, root):
    need(root)
    fast = [io.dumps(doc) for doc in grounding.build(EmbeddedBackend(root), sample=60)]
    value_by_value(monkeypatch)
    assert [io.dumps(doc) for doc in grounding.build(EmbeddedBackend(root), sample=60)] == fast


@settings(max_examples=100, deadline=None)
@given(stored=st.lists(st.one_of(st.sampled_from(["a", "A", "a.", "1", 1, 1.5, "1.5", Decimal128("1"), "1990"]),
                                  SCALARS.filter(lambda v: not isinstance(v, (bool, type(None))))), max_size=20))
def test_the_value_index_does_not_depend_on_the_order_the_values_were_counted_in(stored):
    hashable = [grounding._Decimal(v) if isinstance(v, Decimal128) else v for v in stored]
    keys = {("c", "m"): Counter(["2019", "a", "2019"])}
    forward = {("c", "p"): Counter(hashable)}
    backward = {("c", "p"): Counter(dict(reversed(list(Counter(hashable).items()))))}
    assert io.dumps(grounding._value_index(forward, keys)) == io.dumps(grounding._value_index(backward, keys))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(counts=st.dictionaries(st.sampled_from(["a", "b", "c", "d", "A", "1", "e f", "2"]) | st.integers(0, 6),
                              st.integers(1, 4), max_size=12), cut=st.integers(1, 6))
def test_the_term_cut_keeps_the_most_frequent_terms_ties_in_term_order(monkeypatch, counts, cut):
    scalars = {("c", "p"): Counter(counts), ("c", "q"): Counter({k: 1 for k in list(counts)[::2]})}
    full = grounding._value_index(scalars, {})
    ranked = sorted(full, key=lambda term: (-sum(m["frequency"] for m in full[term]), term))
    with monkeypatch.context() as m:
        m.setattr(grounding, "MAX_TERMS", cut)
        assert grounding._value_index(scalars, {}) == {term: full[term] for term in sorted(ranked[:cut])}
