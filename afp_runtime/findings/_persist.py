"""Persistent (immutable, structurally shared) maps for the ledger fold.

The fold is updated once per appended row and must cost O(rows + keys they touch), never
O(ledger) (docs/architecture.md#decision-13-folds-are-incremental), while every earlier fold stays
valid. Both maps here are bitwise tries over a 64-bit path: a write copies only the nodes on one
root-to-leaf path (at most 13 small dicts), and the old map is left untouched.

* ``PMap`` places a key by its hash: lookups and writes are O(log n); iteration order is
  unspecified (it follows hashes, which vary between processes), so nothing that must be
  deterministic iterates a ``PMap``.
* ``SeqMap`` places a non-negative int key by its value, most significant bits first, so
  iteration is in ascending key order and a walk can stop after the first few entries without
  visiting the rest.

Equality is by contents (the ``Mapping`` rule), whatever the trie shapes.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Set
from typing import Any, Generic, Self, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

_WIDTH = 5
_MASK = (1 << _WIDTH) - 1
_TOP = 60  # shifts 60, 55, ..., 0 cover the 64 path bits (the top level uses four).
_PATH_BITS = (1 << 64) - 1


class _Leaf:
    """One entry: its path, key and value."""

    __slots__ = ("key", "path", "value")

    def __init__(self, path: int, key: Any, value: Any) -> None:
        self.path = path
        self.key = key
        self.value = value


class _Bucket:
    """Entries whose keys share one full path (a hash collision)."""

    __slots__ = ("leaves", "path")

    def __init__(self, path: int, leaves: tuple[_Leaf, ...]) -> None:
        self.path = path
        self.leaves = leaves


# A node maps a 5-bit slot to a leaf, a bucket or a child node; nodes are never mutated once
# they are reachable from a map.
_Node = dict[int, Any]


def _slot(path: int, shift: int) -> int:
    return (path >> shift) & _MASK


def _find(node: _Node, path: int, key: Any) -> _Leaf | None:
    shift = _TOP
    while True:
        entry = node.get(_slot(path, shift))
        if entry is None:
            return None
        if isinstance(entry, dict):
            node = entry
            shift -= _WIDTH
            continue
        if isinstance(entry, _Leaf):
            return entry if entry.path == path and entry.key == key else None
        if entry.path != path:
            return None
        return next((leaf for leaf in entry.leaves if leaf.key == key), None)


def _put(node: _Node, shift: int, leaf: _Leaf) -> tuple[_Node, bool]:
    """A copy of ``node`` holding ``leaf``; the flag is True when the key is new."""
    index = _slot(leaf.path, shift)
    entry = node.get(index)
    added = True
    if entry is None:
        replacement: Any = leaf
    elif isinstance(entry, dict):
        replacement, added = _put(entry, shift - _WIDTH, leaf)
    elif entry.path == leaf.path:
        leaves = (entry,) if isinstance(entry, _Leaf) else entry.leaves
        kept = tuple(old for old in leaves if old.key != leaf.key)
        added = len(kept) == len(leaves)
        replacement = leaf if not kept else _Bucket(leaf.path, (*kept, leaf))
    else:
        # Different paths part at some deeper level: push the old entry down one level.
        child: _Node = {_slot(entry.path, shift - _WIDTH): entry}
        replacement, added = _put(child, shift - _WIDTH, leaf)
    copy = dict(node)
    copy[index] = replacement
    return copy, added


def _drop(node: _Node, shift: int, path: int, key: Any) -> _Node | None:
    """A copy of ``node`` without ``key``, or None when the key is absent."""
    index = _slot(path, shift)
    entry = node.get(index)
    if entry is None:
        return None
    replacement: Any
    if isinstance(entry, dict):
        child = _drop(entry, shift - _WIDTH, path, key)
        if child is None:
            return None
        if len(child) == 1 and not isinstance(next(iter(child.values())), dict):
            # A lone leaf or bucket moves up: lookups stop at the first non-node entry.
            replacement = next(iter(child.values()))
        else:
            replacement = child or None
    elif entry.path != path:
        return None
    elif isinstance(entry, _Leaf):
        if entry.key != key:
            return None
        replacement = None
    else:
        kept = tuple(leaf for leaf in entry.leaves if leaf.key != key)
        if len(kept) == len(entry.leaves):
            return None
        replacement = kept[0] if len(kept) == 1 else _Bucket(path, kept)
    copy = dict(node)
    if replacement is None:
        del copy[index]
    else:
        copy[index] = replacement
    return copy


def _walk(node: _Node) -> Iterator[_Leaf]:
    for index in sorted(node):
        entry = node[index]
        if isinstance(entry, dict):
            yield from _walk(entry)
        elif isinstance(entry, _Leaf):
            yield entry
        else:
            yield from entry.leaves


class _Trie(Mapping[K, V], Generic[K, V]):
    """The shared machinery: a root node, a size and a key → path rule."""

    __slots__ = ("_root", "_size")
    _path: Callable[[Any], int]

    def __init__(self, items: Iterable[tuple[K, V]] = ()) -> None:
        self._root: _Node = {}
        self._size = 0
        for key, value in items:
            self._root, added = _put(self._root, _TOP, _Leaf(self._path(key), key, value))
            self._size += added

    def _make(self, root: _Node, size: int) -> Self:
        made = object.__new__(type(self))
        made._root = root
        made._size = size
        return made

    def set(self, key: K, value: V) -> Self:
        """A map with ``key`` bound to ``value``; this map is unchanged."""
        path = self._path(key)
        found = _find(self._root, path, key)
        if found is not None and found.value is value:
            return self
        root, added = _put(self._root, _TOP, _Leaf(path, key, value))
        return self._make(root, self._size + added)

    def delete(self, key: K) -> Self:
        """A map without ``key`` (this map itself when the key is absent)."""
        root = _drop(self._root, _TOP, self._path(key), key)
        return self if root is None else self._make(root, self._size - 1)

    def __getitem__(self, key: K) -> V:
        found = _find(self._root, self._path(key), key)
        if found is None:
            raise KeyError(key)
        return found.value

    def __contains__(self, key: object) -> bool:
        try:
            return _find(self._root, self._path(key), key) is not None
        except TypeError:
            return False

    def __iter__(self) -> Iterator[K]:
        return (leaf.key for leaf in _walk(self._root))

    def __len__(self) -> int:
        return self._size

    def __repr__(self) -> str:
        return f"{type(self).__name__}({dict(self.items())!r})"


def _hash_path(key: Any) -> int:
    return hash(key) & _PATH_BITS


def _int_path(key: Any) -> int:
    if isinstance(key, bool) or not isinstance(key, int) or not 0 <= key <= _PATH_BITS:
        raise TypeError(f"SeqMap keys are ints in [0, 2**64), not {key!r}")
    return key


class PMap(_Trie[K, V]):
    """A persistent hash map: ``set`` and ``delete`` return new maps in O(log n)."""

    __slots__ = ()
    _path = staticmethod(_hash_path)


class SeqMap(_Trie[int, V]):
    """A persistent map from non-negative ints, iterated in ascending key order."""

    __slots__ = ()
    _path = staticmethod(_int_path)

    def values_ascending(self) -> Iterator[V]:
        """Values in ascending key order, lazily."""
        return (leaf.value for leaf in _walk(self._root))


class PSet(Set[K], Generic[K]):
    """A persistent set: ``add`` returns a new set in O(log n)."""

    __slots__ = ("_map",)

    def __init__(self, items: Iterable[K] = ()) -> None:
        self._map: PMap[K, None] = PMap((item, None) for item in items)

    def add(self, item: K) -> PSet[K]:
        """A set that also holds ``item``; this set is unchanged."""
        if item in self._map:
            return self
        made: PSet[K] = object.__new__(PSet)
        made._map = self._map.set(item, None)
        return made

    def __contains__(self, item: object) -> bool:
        return item in self._map

    def __iter__(self) -> Iterator[K]:
        return iter(self._map)

    def __len__(self) -> int:
        return len(self._map)

    def __repr__(self) -> str:
        return f"PSet({set(self._map)!r})"
