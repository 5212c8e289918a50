"""The digest of ``extractive/2``: the facts of the folded turns, within the same budget as
``extractive/1`` (docs/window.md#the-extractive-summarizer).

Version 1 clips each message to a width, so a long ask loses its order number. Version 2 builds
each digest line from the message's prose, clipped, *and* the facts the clip cut off: ids and
numbers (tokens holding a digit, ``key=value`` pairs, paths and snake_case names), amounts
(``$12.40``, ``15%``, ``3 days``), names (capitalised words not opening a sentence), e-mail
addresses; each call as ``name(key=value, …)`` and each tool result as its JSON scalar fields
``key=value`` (or its fact tokens when it is not JSON). An earlier summary folded again gives
its own digest, not its frame.

Every fact is a verbatim piece of the transcript, so the digest never states what the turns did
not. When the lines do not fit, the prose is clipped narrower (the person's asks keep the most),
then repeated facts are shown only once, at their newest place in the most kept kind of line,
then facts are left out (fields of nested JSON first, then the oldest, then the least repeated,
the facts of the person's asks last) and counted; only then are whole lines left out
(assistant remarks first, the person's asks last), and counted. A span whose bare lines alone
would fill more than half the budget first leaves out its oldest lines, so that the newest keep
room for their facts. Pure: no I/O, no clock, no
randomness.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field

from afp_runtime.models.transcript_read import Entry, budget_of, clip, parse_transcript

SUMMARY_PREFIX = "[afp:folded-summary]"
"""How an earlier fold's summary opens (the window's frame; this layer may not import it)."""

# (asks, other prose) widths in code points, widest first; 0 shows facts only. Narrower asks
# than the last are tried only once facts must be left out (digest_facts).
_WIDTHS = ((240, 200), (160, 120), (120, 80), (100, 48), (80, 24), (64, 0), (40, 0))
_MAX_FACTS = 24
_ASK_WORDS = 40
_FACT_WIDTH = 48

_FACT = re.compile(
    r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+"  # e-mail
    r"|[$€£¥]\s?\d[\d,]*(?:\.\d+)?"  # money with its sign
    r"|\d[\d,]*(?:\.\d+)?\s?(?:%|(?:percent|USD|EUR|GBP|cents?|days?|hours?|minutes?|"
    r"weeks?|months?|years?|items?|units?|pcs|kg|km|lbs?)\b)"  # amounts with their unit
    r"|[\w.-]+=[^\s,;()\[\]{}\"']+"  # key=value
    r"|[\w./:#@-]*\d[\w./:#@-]*"  # ids and numbers
    r"|[\w.-]*[_/#@][\w./#@-]*"  # paths and snake_case names
    r"|[A-Z][\w'-]*[a-z][\w'-]*(?: [A-Z][\w'-]*[a-z][\w'-]*)*"  # capitalised names
)
_OWN_LINE = re.compile(r"Digest of \d+ messages:|\(\+\d+ (?:facts|lines) left out\)")
_LONE_WORD = re.compile(r"[A-Z][a-z'-]*")
_SPACE = re.compile(r"\s+")
_JSON = json.JSONDecoder(parse_float=str, parse_int=str)
_CALL_NAME = re.compile(r"([^\s(),]+)\(")

# Lower ranks survive longest when whole lines must be left out.
_RANK = {"user": 0, "summary": 1, "calls": 1, "tool": 2, "text": 2, "assistant": 3, "system": 4}
_LABELS = {"user": "asked", "summary": "earlier", "assistant": "said", "system": "system"}


@dataclass
class _Line:
    """One digest line in the making: its label, prose, facts and calls (name, argument facts)."""

    kind: str
    label: str
    prose: str
    facts: list[str]
    calls: list[tuple[str, list[str]]] = field(default_factory=list)
    minor: frozenset[str] = frozenset()  # fields of nested JSON objects: left out first


def _trim(token: str) -> str:
    return token.strip(".,:;-/'")


def _opens_sentence(token: str, text: str, start: int) -> bool:
    """A lone capitalised word opening a sentence: grammar, not a name."""
    if not _LONE_WORD.fullmatch(token):
        return False
    before = text[max(0, start - 16) : start].rstrip()
    return not before or before.endswith((".", "!", "?", ":"))


def fact_tokens(text: str) -> list[str]:
    """The facts of free text, first appearance first, each at most ``_FACT_WIDTH`` long."""
    found: dict[str, None] = {}
    for match in _FACT.finditer(text):
        token = _trim(match.group(0))
        if not token or len(token) > _FACT_WIDTH:
            continue
        if _opens_sentence(token, text, match.start()):
            continue
        found.setdefault(token, None)
        if len(found) == _MAX_FACTS:
            break
    return list(found)


def _scalars(value: object, source: str) -> list[tuple[str, bool]]:
    """``key=value`` for each JSON scalar in ``value`` whose text is verbatim in ``source``,
    first appearance first, each with whether it lies below a nested object or array."""
    out: dict[str, bool] = {}

    def walk(node: object, key: str, depth: int) -> None:
        if isinstance(node, dict):
            for name, inner in node.items():
                walk(inner, str(name), depth + 1)
        elif isinstance(node, list):
            for inner in node:
                walk(inner, key, depth + 1)
        elif isinstance(node, str) and key and node.strip():
            # Numbers arrive as their text too (parse_int/parse_float): verbatim.
            text = _SPACE.sub(" ", node).strip()
            if len(text) <= _FACT_WIDTH and text in source and key in source:
                out.setdefault(f"{key}={text}", depth > 1)

    walk(value, "", 0)
    return list(out.items())


def _json_facts(text: str) -> list[tuple[str, bool]] | None:
    """The ``key=value`` facts of a JSON object or array result; None when it is not JSON."""
    stripped = text.strip()
    if not stripped.startswith(("{", "[")):
        return None
    try:
        value = _JSON.decode(stripped)
    except ValueError:
        return None
    return _scalars(value, text)[: _MAX_FACTS * 2]


def _calls(label: str) -> list[tuple[str, list[str]]] | None:
    """Each rendered call of a head label, ``name({json}), …``: its name and its args as
    ``key=value`` facts; None when the label is not of that shape."""
    out: list[tuple[str, list[str]]] = []
    pos = 0
    while pos < len(label):
        match = _CALL_NAME.match(label, pos)
        if match is None:
            return None
        try:
            args, end = _JSON.raw_decode(label, match.end())
        except ValueError:
            return None
        if not label.startswith(")", end):
            return None
        found = [fact for fact, _ in _scalars(args, label)]
        out.append((match.group(1), found[:_MAX_FACTS]))
        pos = end + 1
        if label.startswith(", ", pos):
            pos += 2
    return out


def _line_of(entry: Entry) -> _Line:
    if entry.kind == "calls":
        calls = _calls(entry.label)
        if calls is None:
            facts = fact_tokens(entry.label) + fact_tokens(entry.content)
            return _Line("calls", "called", entry.content, list(dict.fromkeys(facts)))
        return _Line("calls", "called", entry.content, fact_tokens(entry.content), calls)
    if entry.kind == "tool":
        label = f"{clip(entry.label, 48)} returned"
        found = _json_facts(entry.content)
        if found is None:
            return _Line("tool", label, "", fact_tokens(entry.content))
        minor = frozenset(fact for fact, nested in found if nested)
        return _Line("tool", label, "", [fact for fact, _ in found], minor=minor)
    content = entry.content
    kind = entry.kind
    if kind == "user" and content.startswith(SUMMARY_PREFIX):
        # An earlier summary folded again: its digest, not its frame.
        kind = "summary"
        body = content.split("\n\n", 1)[1] if "\n\n" in content else ""
        content = "\n".join(x for x in body.split("\n") if not _OWN_LINE.fullmatch(x))
    return _Line(kind, _LABELS.get(kind, kind), content, fact_tokens(content))


def _render(line: _Line, width: int, shown: set[str] | None) -> str:
    """One digest line: label, prose clipped to ``width``, then the facts the prose lacks
    (only those in ``shown`` when it is given)."""
    prose = clip(line.prose, width) if width and line.prose.strip() else ""
    visible = prose[:-1] if prose.endswith("…") else prose

    def keep(fact: str) -> bool:
        return (shown is None or fact in shown) and fact not in visible

    parts: list[str] = []
    for name, args in line.calls:
        kept = [a for a in args if shown is None or a in shown]
        parts.append(f"{name}({', '.join(kept) or ('…' if args else '')})")
    facts = [f for f in line.facts if keep(f)]
    text = ", ".join(parts)
    if prose:
        text = f"{text}; said: {prose}" if parts else prose
    if facts:
        text = f"{text} [{', '.join(facts)}]" if text else ", ".join(facts)
    if not text and line.kind not in ("user", "calls"):
        return ""  # a remark or result with nothing left to show is no line
    return f"{line.label}: {text}".rstrip()


def _join(*parts: str) -> str:
    return "\n".join(part for part in parts if part)


def _all_facts(lines: list[_Line]) -> list[tuple[int, str]]:
    """Every (line index, fact) shown at width 0, in order."""
    out: list[tuple[int, str]] = []
    for index, line in enumerate(lines):
        out.extend((index, arg) for _, args in line.calls for arg in args)
        out.extend((index, fact) for fact in line.facts)
    return out


def _homes(lines: list[_Line]) -> dict[str, int]:
    """Where each fact is shown once: its most kept line (the person's asks first), newest
    among those."""
    home: dict[str, int] = {}
    for index, fact in _all_facts(lines):
        rank = _RANK.get(lines[index].kind, 5)
        if fact not in home or rank <= _RANK.get(lines[home[fact]].kind, 5):
            home[fact] = index
    return home


def _fit_facts(
    lines: list[_Line], header: str, budget: int, ask_width: int
) -> tuple[list[str], int, bool]:
    """Lines with asks clipped to ``ask_width`` and no other prose, each fact shown once at
    its home, leaving out facts until the lines fit: fields of nested JSON first, then the oldest
    (a repeated fact lives at its newest place), then the least repeated, the facts of the
    person's asks last. Returns the lines, how many facts were left out and
    whether any of them was a fact of an ask."""
    counts = Counter(fact for _, fact in _all_facts(lines))
    home = _homes(lines)
    by_line: dict[int, set[str]] = {}
    for fact, index in home.items():
        by_line.setdefault(index, set()).add(fact)

    def shown(index: int) -> str:
        line = lines[index]
        width = ask_width if line.kind == "user" else 0
        return _render(line, width, by_line.get(index, set()))

    out = [shown(i) for i in range(len(lines))]
    size = len(header) + sum(len(o) + 1 for o in out)

    def worth(fact: str) -> tuple[bool, bool, int, int, int]:
        line = lines[home[fact]]
        rank = _RANK.get(line.kind, 5)
        return (rank == 0, fact not in line.minor, home[fact], counts[fact], -rank)

    order = sorted(home, key=worth)
    dropped = 0
    asks_lost = False
    for fact in order:
        note = len(f"\n(+{dropped} facts left out)") if dropped else 0
        if size + note <= budget:
            break
        index = home[fact]
        by_line[index].discard(fact)
        dropped += 1
        asks_lost = asks_lost or lines[index].kind == "user"
        before, out[index] = out[index], shown(index)
        size += len(out[index]) - len(before)
    return out, dropped, asks_lost


def digest_facts(text: str) -> str:
    """The ``extractive/2`` digest of a transcript (see the module docstring for its rules)."""
    entries = parse_transcript(text)
    if not entries:
        return ""
    budget = budget_of(entries)
    header = f"Digest of {len(entries)} messages:"
    lines = [_line_of(e) for e in entries]
    for asks, other in _WIDTHS:
        out = [_render(line, asks if line.kind == "user" else other, None) for line in lines]
        joined = _join(header, *out)
        if len(joined) <= budget:
            return joined
    # A long span: its oldest lines leave first, so that the newest keep room for their facts.
    start, shed = _oldest_out(lines, budget // 2)
    lines_note = f"(+{shed} lines left out)" if shed else ""
    room = budget - (len(lines_note) + 1 if shed else 0)
    kept = lines[start:]
    # Some of an ask's words are worth more than other lines' facts, not more than its own.
    out, dropped, asks_lost = _fit_facts(kept, header, room, _ASK_WORDS)
    if asks_lost:
        out, dropped, _ = _fit_facts(kept, header, room, 0)
    facts_note = f"(+{dropped} facts left out)" if dropped else ""
    joined = _join(header, *out, facts_note, lines_note)
    if len(joined) <= budget:
        return joined
    return _shed_lines(kept, out, header, facts_note, shed, budget)


def _oldest_out(lines: list[_Line], room: int) -> tuple[int, int]:
    """Where the kept lines start so that their bare lines (no prose, no facts) fit ``room``,
    and how many shown lines that leaves out (the newest line always stays)."""
    sizes = [len(_render(line, 0, set())) + 1 for line in lines]
    total = sum(sizes)
    start = 0
    while total > room and start < len(lines) - 1:
        total -= sizes[start]
        start += 1
    return start, sum(1 for size in sizes[:start] if size > 1)


def _shed_lines(
    lines: list[_Line], out: list[str], header: str, facts_note: str, shed: int, budget: int
) -> str:
    """Leave out whole lines, highest rank (least kept) and oldest first, and count them
    (``shed`` were left out before)."""
    chosen = {i for i, text in enumerate(out) if text}
    by_rank = sorted(chosen, key=lambda i: (-_RANK.get(lines[i].kind, 5), i))
    for left_out, index in enumerate(by_rank, start=shed + 1):
        chosen.discard(index)
        note = f"(+{left_out} lines left out)"
        joined = _join(header, *(out[i] for i in sorted(chosen)), facts_note, note)
        if len(joined) <= budget:
            return joined
    return header
