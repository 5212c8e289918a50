"""The persistent maps under the fold behave like dicts and never change once made."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from afp_runtime.findings._persist import PMap, PSet, SeqMap


class Clash:
    """A key whose hash collides with every other Clash, to exercise collision buckets."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __hash__(self) -> int:
        return 42

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Clash) and other.name == self.name

    def __repr__(self) -> str:
        return f"Clash({self.name!r})"


keys = st.one_of(
    st.integers(-50, 50),
    st.text(max_size=3),
    st.sampled_from("abcd").map(Clash),
    st.integers(0, 3).map(lambda n: n * 2**40),
)
operations = st.lists(st.tuples(st.booleans(), keys, st.integers()), max_size=60)


@settings(max_examples=300)
@given(ops=operations)
def test_pmap_matches_a_dict_and_keeps_old_versions(ops: list[tuple[bool, Any, int]]) -> None:
    """After any sets and deletes a PMap equals the dict model, and earlier maps are unchanged."""
    current: PMap[Any, int] = PMap()
    model: dict[Any, int] = {}
    history: list[tuple[PMap[Any, int], dict[Any, int]]] = []
    for is_set, key, value in ops:
        history.append((current, dict(model)))
        if is_set:
            current = current.set(key, value)
            model[key] = value
        else:
            current = current.delete(key)
            model.pop(key, None)
        assert len(current) == len(model)
        assert current == model
        assert all(k in current and current[k] == v for k, v in model.items())
    for old, snapshot in history:
        assert old == snapshot


@settings(max_examples=200)
@given(ops=st.lists(st.tuples(st.booleans(), st.integers(0, 2**64 - 1)), max_size=60))
def test_seqmap_iterates_in_key_order(ops: list[tuple[bool, int]]) -> None:
    """A SeqMap iterates its keys, and its values, in ascending key order."""
    current: SeqMap[int] = SeqMap()
    model: dict[int, int] = {}
    for is_set, key in ops:
        current = current.set(key, key) if is_set else current.delete(key)
        if is_set:
            model[key] = key
        else:
            model.pop(key, None)
    assert list(current) == sorted(model)
    assert list(current.values_ascending()) == sorted(model.values())


def test_setting_the_same_value_returns_the_same_map() -> None:
    """Binding a key to the object it already holds changes nothing."""
    value = object()
    one: PMap[str, object] = PMap[str, object]().set("a", value)
    assert one.set("a", value) is one
    assert one.delete("zz") is one


def test_pset_adds_without_changing_the_old_set() -> None:
    """Adding to a PSet returns a new set; the old one keeps its members."""
    empty: PSet[str] = PSet()
    one = empty.add("a")
    assert (set(empty), set(one)) == (set(), {"a"})
    assert one.add("a") is one
    assert "a" in one and "b" not in one
