"""Field paths: the two-part fast path resolves exactly as the general `traverse`."""

from hypothesis import given, settings
from hypothesis import strategies as st

from nlq.mql.expressions import compile_expression, traverse

_values = st.recursive(
    st.one_of(st.none(), st.integers(-3, 3), st.sampled_from(["x", "y"])),
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.dictionaries(st.sampled_from(["a", "b"]), inner, max_size=2)),
    max_leaves=12)


@settings(max_examples=300, deadline=None)
@given(_values, st.sampled_from(["a.b", "b.a", "a.a"]))
def test_two_part_path_matches_traverse(doc, path):
    assert compile_expression("$" + path)({"CURRENT": doc, "ROOT": doc}) == traverse(doc, tuple(path.split(".")))


def test_two_part_path_through_arrays_keeps_nesting_and_skips_missing():
    doc = {"a": [{"b": 1}, {}, [{"b": 2}, 5], 7, {"b": None}]}
    assert compile_expression("$a.b")({"CURRENT": doc, "ROOT": doc}) == [1, [2], None]
