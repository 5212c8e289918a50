"""The English reader's parser: tokens grouped into expressions, a point (date and/or time of
day and a zone), a two-sided range or a span ending now
(docs/time.md#what-the-english-reader-understands)."""

from __future__ import annotations

from dataclasses import dataclass

from afp_runtime.time._english_tokens import D_KINDS, T_KINDS, Tok
from afp_runtime.time._english_words import LOOK_TAIL
from afp_runtime.time._parts import DateParts, Relative, Wall


@dataclass(slots=True)
class Node:
    """An expression found in the tokens ``[start, end)``."""

    start: int
    end: int
    date: DateParts | None = None
    relative: Relative | None = None
    wall: Wall | None = None
    zone: str | None = None
    zone_own_token: bool = False
    has_d: bool = False
    has_t: bool = False
    bad: bool = False
    iso: bool = False
    num: int | None = None
    look: Relative | None = None
    sides: tuple[Node, Node] | None = None
    char_end: int | None = None


class Parser:
    """Groups tokens into expressions (one ``Node`` each)."""

    def __init__(self, text: str, tokens: list[Tok]) -> None:
        self.text = text
        self.toks = tokens

    def kind(self, i: int) -> str | None:
        return self.toks[i].kind if i < len(self.toks) else None

    def skip_glue(self, i: int, allowed: frozenset[str]) -> int:
        while i < len(self.toks) and self.toks[i].kind == "glue" and self.toks[i].value in allowed:
            i += 1
        return i

    # points

    def take_d(self, i: int, node: Node) -> int:
        """Take the date-like token at ``i`` into ``node``; a weekday absorbs a date after it."""
        tok = self.toks[i]
        node.has_d = True
        if tok.kind == "badD":
            node.bad = True
            j = self.skip_glue(i + 1, frozenset({","}))
            return j + 1 if self.kind(j) in ("date", "badD") else i + 1
        if tok.kind == "date":
            node.date = tok.value
        elif tok.kind == "day":
            node.relative = tok.value
        elif tok.kind == "iso":
            node.date = tok.value[0]
            node.iso = True
        return i + 1

    def take_t(self, i: int, node: Node) -> int:
        tok = self.toks[i]
        node.has_t = True
        if tok.kind == "badT":
            node.bad = True
        else:
            node.wall, zone = tok.value
            if zone is not None:
                node.zone = zone
        return i + 1

    def is_d(self, i: int) -> bool:
        kind = self.kind(i)
        if kind == "iso":
            return self.toks[i].value[1] is None
        return kind in D_KINDS

    def is_t(self, i: int) -> bool:
        return self.kind(i) in T_KINDS

    def point(self, i: int) -> Node | None:
        node = Node(start=i, end=i)
        kind = self.kind(i)
        if kind == "iso" and self.toks[i].value[1] is not None:
            date, wall, zone = self.toks[i].value
            node.date, node.wall, node.zone = date, wall, zone
            node.has_d = node.has_t = node.iso = True
            j = i + 1
        elif self.is_d(i):
            j = self.take_d(i, node)
            k = self.skip_glue(j, frozenset({",", "at", "@", "on"}))
            if self.is_t(k):
                j = self.take_t(k, node)
            elif self.kind(k) == "num" and k > j and self.toks[k - 1].value in ("at", "@"):
                # "today at 8": a lone hour is no time, so the whole is unreadable
                node.bad, node.has_t, j = True, True, k + 1
        elif self.is_t(i):
            j = self.take_t(i, node)
            k = self.skip_glue(j, frozenset({",", "on"}))
            if self.is_d(k):
                j = self.take_d(k, node)
        elif kind == "pod" and self.kind(i + 1) == "glue" and self.toks[i + 1].value == "of":
            if not self.is_d(i + 2):
                return None
            node.bad = True
            j = self.take_d(i + 2, node)
        else:
            return None
        # A part of the day or an unreadable phrase right after makes the whole point unreadable.
        while self.kind(j) in ("pod", "badD", "badT"):
            node.bad = True
            j += 1
        j = self.attach_zone(j, node)
        node.end = j
        return node

    def attach_zone(self, j: int, node: Node) -> int:
        if node.zone is not None and node.iso:
            return j
        k = self.skip_glue(j, frozenset({",", "in"}))
        paren = self.kind(k) == "lparen"
        if paren:
            k += 1
        if self.kind(k) != "zone" or node.zone is not None:
            return j
        node.zone = self.toks[k].value
        node.zone_own_token = True
        k += 1
        if paren and self.kind(k) == "rparen":
            k += 1
        return k

    # ranges

    def side(self, i: int) -> Node | None:
        kind = self.kind(i)
        if kind == "look":
            return Node(start=i, end=i + 1, look=self.toks[i].value)
        if kind == "badS":
            return Node(start=i, end=i + 1, bad=True)
        if kind == "num":
            return Node(start=i, end=i + 1, num=self.toks[i].value)
        return self.point(i)

    def range(self, i: int) -> Node | None:
        opener = self.kind(i) if self.kind(i) in ("between", "from") else None
        first = self.side(i + 1 if opener else i)
        if first is None:
            return None
        k = first.end
        if self.kind(k) != "join":
            return None
        joiner = self.toks[k].value
        if opener == "between":
            allowed = {"and"}
        elif opener == "from":
            allowed = {"to", "until", "till", "til", "through", "thru", "dash"}
        else:
            allowed = {"to", "until", "till", "til", "through", "thru", "dash", "dotdot", "slash"}
        if joiner not in allowed:
            return None
        second = self.side(k + 1)
        if second is None:
            return None
        if joiner == "slash" and not (
            self.kind(first.start) == "iso" and self.kind(second.start) == "iso"
        ):
            return None
        bad = first.bad or second.bad
        if first.num is not None or second.num is not None:
            if first.num is not None and second.num is not None:
                return None  # two numbers: not a time
            if second.num is not None:
                if not first.has_t:
                    return None
                bad = True  # "8 AM to 9"
            elif not second.has_t:
                return None
            elif second.wall is None or second.wall.meridiem is None:
                bad = True  # "8 to 9:30": the unmarked start has no AM/PM to borrow
            elif first.num is not None and not 1 <= first.num <= 12:
                bad = True
        node = Node(start=i, end=second.end, bad=bad, sides=(first, second))
        if second.zone is not None and second.zone_own_token and first.zone is None:
            node.zone, node.zone_own_token = second.zone, True
            second.zone = None
        return node

    # expressions

    def expression(self, i: int) -> Node | None:
        kind = self.kind(i)
        if self.is_d(i):
            prefix = Node(start=i, end=i)
            j = self.take_d(i, prefix)
            k = self.skip_glue(j, frozenset({",", "at", "on"}))
            ranged = self.range(k)
            if ranged is not None and ranged.sides is not None:
                first, second = ranged.sides
                if not first.has_d and first.look is None:
                    ranged.start = i
                    ranged.bad = ranged.bad or prefix.bad
                    if second.has_d:
                        _lend_date(prefix, first)
                    else:
                        ranged.date, ranged.relative = prefix.date, prefix.relative
                        ranged.has_d = True
                    return ranged
        ranged = self.range(i)
        if ranged is not None:
            return ranged
        if kind in ("look", "badS"):
            node = Node(start=i, end=i + 1, bad=kind == "badS")
            if kind == "look":
                node.look = self.toks[i].value
                # "the last 2 hours of yesterday", "last 2 hours and 30 minutes"
                tail = LOOK_TAIL.match(self.text, self.toks[i].end)
                if tail is not None:
                    node.bad, node.char_end = True, tail.end()
            return node
        return self.point(i)

    def expressions(self) -> list[Node]:
        found: list[Node] = []
        i = 0
        while i < len(self.toks):
            node = self.expression(i)
            if node is None:
                i += 1
                continue
            found.append(node)
            i = node.end
        return found


def _lend_date(prefix: Node, side: Node) -> None:
    side.date, side.relative, side.has_d = prefix.date, prefix.relative, True
    side.bad = side.bad or prefix.bad
