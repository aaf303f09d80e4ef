"""`nlq.index.dumps`, the index writer of `nlq index`: the bytes of `io.dumps`, for every value."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given, settings, strategies as st

from nlq import index as grounding
from nlq import io
from nlq.backends import EmbeddedBackend
from nlq.mql.values import MISSING, Decimal128, Int64, ObjectId
from tests.conftest import ATLAS, TEND_V1, WORLDS, need

UTC = dt.timezone.utc

STORED = st.one_of(
    st.text(max_size=8), st.booleans(), st.none(),
    st.integers(min_value=-(1 << 64), max_value=1 << 64),  # beyond 64 bits too: both refuse alike
    st.floats(allow_nan=True, allow_infinity=True),
    st.builds(Int64, st.integers(min_value=-(1 << 63), max_value=(1 << 63) - 1)),
    st.datetimes(timezones=st.just(UTC)).map(lambda d: d.replace(microsecond=d.microsecond // 1000 * 1000)),
    st.binary(min_size=12, max_size=12).map(ObjectId),
    st.decimals(allow_nan=False, places=2, min_value=-10**6, max_value=10**6).map(lambda d: Decimal128(str(d))),
)
MATCH = st.fixed_dictionaries(
    {"stored": STORED, "kind": st.sampled_from(["value", "key"]), "collection": st.just("c"),
     "path": st.sampled_from(["a", "b.<*>"]), "frequency": st.one_of(st.integers(1, 99), st.builds(Int64, st.integers(1, 9)))},
    optional={"part": st.just("year")})


def encoded(encode, record) -> bytes:
    """The line `io.write_records` writes for a record with this encoder (a failure when it cannot)."""
    return io._encode_line(record, 1, encode)


@settings(max_examples=200, deadline=None)
@given(values=st.dictionaries(st.text(max_size=4), st.lists(MATCH, min_size=1, max_size=3), max_size=6),
       extra=st.one_of(st.just(1), st.just(MISSING), st.floats(allow_nan=True), st.datetimes(timezones=st.just(UTC))))
def test_the_index_writer_writes_the_bytes_of_the_general_writer(values, extra):
    index = {"db": "w", "params": {"sample": 400, "seed": 0, "max_depth": 12}, "extra": extra, "values": values}
    assert encoded(grounding.dumps, index) == encoded(io.dumps, index)


@pytest.mark.parametrize("index", [
    {"db": "w", "values": {"inf": [{"stored": float("inf"), "frequency": 1}, {"stored": None}]}},
    {"db": "w", "values": {"t": [{"stored": "a:null,[null"}, {"stored": float("nan")}]}},
    {"values": {"t": [{"stored": MISSING}]}},
    {"values": {"t": [{"stored": 1 << 64}]}, "db": "w"},
    {"db": "w", "values": {"t": [{"stored": 1}, "not a match"]}},
    {"db": "w", "values": {"t": {"stored": 1}}},
    {"db": "w", "values": [1]},
    {"db": "w"},
    [1, 2],
])
def test_records_not_shaped_as_an_index_are_written_by_the_general_writer(index):
    assert encoded(grounding.dumps, index) == encoded(io.dumps, index)


@pytest.mark.parametrize("root", [WORLDS, TEND_V1 / "mongodb_data", ATLAS])
def test_the_index_writer_writes_the_general_writers_bytes_of_real_indexes(root):
    need(root)
    for index in grounding.build(EmbeddedBackend(root)):
        assert grounding.dumps(index) == io.dumps(index)
