"""The receipt's digests as the hot path computes them (cached entry encodings, cached body
hashes, extension step by step) equal the formulas of docs/served.md#the-running-digest and
docs/served.md#entries-new-since-the-base-receipt computed from scratch."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from hypothesis import given
from hypothesis import strategies as st

from afp_runtime.messages import (
    Message,
    ToolCall,
    canonical_json,
    fingerprint,
    message_body,
    salted,
)
from afp_runtime.served import body_hash, extend_digest, new_entries, start_digest

# Text without surrogates (a message refuses them), ids with quotes and non-ASCII included.
text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)


@st.composite
def message(draw: st.DrawFn) -> Message:
    role = draw(st.sampled_from(["user", "assistant", "tool", "system"]))
    if role == "tool":
        return Message(role="tool", content=draw(text), tool_call_id=draw(text) or "c")
    if role == "assistant":
        ids = draw(st.lists(text, max_size=2))
        calls = tuple(ToolCall(id=i, name="t", args={"n": n}) for n, i in enumerate(ids))
        return Message(role="assistant", content=draw(text), tool_calls=calls)
    return Message(role=role, content=draw(text))  # type: ignore[arg-type]


histories = st.lists(message(), max_size=12)
run_ids = st.sampled_from(["run-1", "run-ü", "r\x1f"])


def from_scratch(run_id: str, messages: Sequence[Message]) -> str:
    """The running digest exactly as docs/served.md writes it."""

    def entry(m: Message) -> bytes:
        value: dict[str, str] = {"role": m.role, "fingerprint": fingerprint(m)}
        if m.role == "tool" and m.tool_call_id is not None:
            value["key"] = m.tool_call_id
        return canonical_json(value)

    digest = hashlib.sha256(run_id.encode() + b"\x1f").hexdigest()
    for m in messages:
        data = (digest + "\x1f").encode() + entry(m)
        digest = hashlib.sha256(run_id.encode() + b"\x1f" + data).hexdigest()
    return digest


@given(run_ids, histories, st.lists(st.integers(0, 12), max_size=4))
def test_running_digest_extended_in_steps_is_the_digest_from_scratch(
    run_id: str, messages: list[Message], cuts: list[int]
) -> None:
    """Extending by the appended messages, step after step, ends where the formula does."""
    fps = [fingerprint(m) for m in messages]
    state = start_digest(run_id)
    for cut in sorted(min(c, len(messages)) for c in cuts):
        state = extend_digest(run_id, state, messages[:cut], fps[:cut])
    state = extend_digest(run_id, state, messages, fps)
    assert state.count == len(messages)
    assert state.digest == from_scratch(run_id, messages)


@given(run_ids, histories, st.integers(0, 6), st.integers(0, 6))
def test_digest_after_a_rebase_is_the_digest_of_the_new_window(
    run_id: str, messages: list[Message], head: int, drop: int
) -> None:
    """After a window change the digest of the new window, computed right after the old one
    (its encodings cached), is still the formula's."""
    fps = [fingerprint(m) for m in messages]
    extend_digest(run_id, start_digest(run_id), messages, fps)
    window = messages[:head] + messages[head + drop :]
    again = extend_digest(run_id, start_digest(run_id), window, [fingerprint(m) for m in window])
    assert again.digest == from_scratch(run_id, window)


@given(run_ids, histories, st.lists(st.integers(0, 11), max_size=6))
def test_new_entries_with_a_body_hash_cache_are_the_uncached_ones(
    run_id: str, messages: list[Message], base_picks: list[int]
) -> None:
    """A cache of body hashes, filled by earlier calls, changes no new entry."""
    fps = [fingerprint(m) for m in messages]
    base: dict[str, int] = {}
    for pick in base_picks:
        if pick < len(fps):
            base[fps[pick]] = base.get(fps[pick], 0) + 1
    cache: dict[str, str] = {}
    new_entries(run_id, messages[: len(messages) // 2], fps[: len(fps) // 2], {}, cache)
    cached = new_entries(run_id, messages, fps, base, cache)
    assert cached == new_entries(run_id, messages, fps, base)
    for entry in cached:
        assert entry.hash == salted(run_id, message_body(messages[entry.index]))
    assert all(
        body_hash(run_id, m, fp, cache) == salted(run_id, message_body(m))
        for m, fp in zip(messages, fps, strict=True)
    )
