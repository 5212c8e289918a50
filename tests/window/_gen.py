"""Hypothesis generators of random windows for the window property tests.

A window is a list of turns of mixed kinds: person and authored user messages, tool rounds
(single and batched, named and unnamed), unanswered and half-answered calls, system messages,
plain assistant messages and, optionally, orphan tool results.
"""

from __future__ import annotations

import itertools

from hypothesis import strategies as st

from afp_runtime.messages import Message
from afp_runtime.window.texts import DROP_NOTICE_PREFIX, SUMMARY_PREFIX
from tests.window._build import TASK, A, S, T, U

TOOL_NAMES = ("look", "move", "whats_here", "pan_view")
PERSON_TEXTS = (TASK, "what changed?", "go", "again")
KINDS = (
    "person",
    "round",
    "round",
    "batch",
    "unanswered",
    "partial",
    "system",
    "assistant",
    "notice",
    "summary",
)

texts = st.one_of(
    st.text(alphabet="abxyz \n", max_size=12),
    st.integers(100, 900).map(lambda n: "r" * n),
)


@st.composite
def windows(draw: st.DrawFn, max_turns: int = 12, orphans: bool = False) -> list[Message]:
    """A random window of up to ``max_turns`` turns with unique call ids."""
    kinds = KINDS + (("orphan",) if orphans else ())
    ids = (f"c{i}" for i in itertools.count())
    out: list[Message] = []
    for _ in range(draw(st.integers(0, max_turns))):
        kind = draw(st.sampled_from(kinds))
        if kind == "person":
            out.append(U(draw(st.sampled_from(PERSON_TEXTS))))
        elif kind == "round":
            call = next(ids)
            name = draw(st.sampled_from(TOOL_NAMES))
            named = draw(st.booleans())
            out += [A([call], names=[name]), T(call, draw(texts), name if named else None)]
        elif kind == "batch":
            calls = [next(ids) for _ in range(draw(st.integers(2, 3)))]
            names = [draw(st.sampled_from(TOOL_NAMES)) for _ in calls]
            out.append(A(calls, draw(texts), names=names))
            out += [
                T(c, draw(texts), n if draw(st.booleans()) else None)
                for c, n in zip(calls, names, strict=True)
            ]
        elif kind == "unanswered":
            out.append(A([next(ids)], draw(texts)))
        elif kind == "partial":
            first, second = next(ids), next(ids)
            out += [A([first, second]), T(first, draw(texts))]
        elif kind == "system":
            out.append(S(draw(texts)))
        elif kind == "assistant":
            out.append(A([], draw(texts)))
        elif kind == "notice":
            out.append(U(DROP_NOTICE_PREFIX + draw(texts)))
        elif kind == "summary":
            out.append(U(SUMMARY_PREFIX + draw(texts)))
        else:
            out.append(T(next(ids), draw(texts), draw(st.sampled_from(TOOL_NAMES))))
    return out
