"""List references sliced and joined by ranges give what slicing their positions gives."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from afp_runtime.records import ListRef

# Ranges over an item log, possibly adjacent, possibly empty, in any order.
ranges = st.lists(
    st.tuples(st.integers(0, 60), st.integers(0, 6)).map(lambda r: (r[0], r[0] + r[1])),
    max_size=8,
)


@given(ranges, st.integers(-3, 40), st.integers(-3, 40))
def test_sliced_is_the_slice_of_positions(spans: list[tuple[int, int]], a: int, b: int) -> None:
    """``sliced(a, b)`` is the run-length encoding of ``positions()[a:b]``."""
    ref = ListRef(ranges=tuple(spans))
    assert ref.sliced(a, b) == ListRef.of_positions(ref.positions()[a:b])


@given(st.lists(ranges, max_size=4))
def test_joined_is_the_concatenation_of_positions(parts: list[list[tuple[int, int]]]) -> None:
    """``joined`` is the run-length encoding of the lists' positions one after the other."""
    refs = [ListRef(ranges=tuple(spans)) for spans in parts]
    whole = [pos for ref in refs for pos in ref.positions()]
    assert ListRef().joined(*refs) == ListRef.of_positions(whole)
