"""Random value trees and the record kinds that carry a bundle row's bytes (receipts, window
records), for the writes codec's tests (docs/storage.md#the-writes-codec)."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from afp_runtime.messages import ModelParams, Usage
from afp_runtime.served.receipt import (
    Basis,
    MessagesDigest,
    NewEntry,
    OmittedForAttention,
    PieceDigest,
    Receipt,
    RequestOnlyDigest,
    SystemDigest,
    ToolsDigest,
    WireDigest,
)
from afp_runtime.store.codec_compact import WORDS
from afp_runtime.window.observations import PinnedTurn, WindowObservations
from afp_runtime.window.records import (
    CustomRecord,
    DroppedStanding,
    SlidingWindowRecord,
    SummarizeOldestRecord,
    TokenBudgetRecord,
)
from afp_runtime.window.refusals import REFUSAL_REASONS, Refusal

digests = st.binary(min_size=32, max_size=32).map(bytes.hex)
texts = st.one_of(
    st.text(max_size=8),
    st.sampled_from(WORDS),
    digests,
    digests.map(str.upper),  # not spelled back by ``hex()``: stays text
    st.text(alphabet="0123456789abcdef", min_size=64, max_size=64),
    st.tuples(st.sampled_from(["run-", "", "msg-", "ünï-"]), st.uuids()).map(
        lambda p: p[0] + str(p[1])
    ),
    st.uuids().map(lambda u: "run-" + str(u).upper()),
)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**64 - 1),
    st.floats(),
    texts,
    st.binary(max_size=8),
)
keys = st.one_of(st.sampled_from(WORDS), st.text(max_size=6))
columns = st.one_of(
    st.integers(min_value=-3, max_value=300),
    st.booleans(),
    st.sampled_from(["inside-keep-window", "x"]),
    st.just(0.0) | st.just(-0.0),
)


def like_maps(children: st.SearchStrategy[Any]) -> st.SearchStrategy[list[dict[str, Any]]]:
    """Lists of two or more maps with the same keys in the same order (the tables)."""
    return st.lists(keys, min_size=1, max_size=3, unique=True).flatmap(
        lambda names: st.lists(
            st.fixed_dictionaries({name: columns | children for name in names}),
            min_size=2,
            max_size=6,
        )
    )


trees = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(keys, children, max_size=4),
        st.dictionaries(st.integers(-9, 9), children, min_size=1, max_size=2),
        like_maps(children),
    ),
    max_leaves=30,
)

big_ints = st.one_of(st.integers(min_value=2**64), st.integers(max_value=-(2**63) - 1))

refusals = st.lists(
    st.builds(
        Refusal,
        reason=st.sampled_from(sorted(REFUSAL_REASONS)),
        turn_index=st.integers(0, 500),
        message_index=st.integers(0, 5000),
    ),
    max_size=30,
).map(tuple)
pins = st.builds(
    WindowObservations,
    pinned=st.lists(
        st.builds(
            PinnedTurn,
            tool_name=st.text(max_size=5),
            turn_index=st.integers(0, 50),
            chars=st.integers(0, 10**6),
        ),
        max_size=4,
    ).map(tuple),
    yielded=st.integers(0, 5),
    limit=st.integers(0, 5),
)
optional = {
    "dropped_observations": st.lists(st.text(max_size=5), max_size=3).map(tuple),
    "observations": pins,
    "ledger_facts": pins,
    "dropped_standings": st.lists(
        st.builds(
            DroppedStanding,
            tool_call_id=st.text(max_size=5),
            tool_name=st.text(max_size=5),
            standing=st.sampled_from(["fact", "open", "noise", "ruled-out"]),
        ),
        max_size=3,
    ).map(tuple),
}
small = st.integers(0, 10**6)
common = {
    "iteration": small,
    "removed_stage_ids": st.lists(st.sampled_from(["seed#0", "tool-calls#3"]), max_size=3).map(
        tuple
    ),
    "removed_message_count": small,
    "window_chars_before": small,
    "window_chars_after": small,
    "refusals": refusals,
}
records = st.one_of(
    st.builds(
        SlidingWindowRecord,
        keep_recent_turns=small,
        turns_before=small,
        turns_after=small,
        **common,
        **optional,
    ),
    st.builds(
        TokenBudgetRecord,
        measured_tokens=small,
        threshold_tokens=st.floats(0, 10**6),
        over_budget=st.booleans(),
        keep_recent_turns=small,
        **common,
        **optional,
    ),
    st.builds(
        SummarizeOldestRecord,
        measured_tokens=small,
        threshold_tokens=st.floats(0, 10**6),
        over_budget=st.booleans(),
        summary_chars=small,
        summarizer_tokens=st.builds(Usage, input=small, output=small),
        summarizer_skipped=st.booleans(),
        **common,
        **optional,
    ),
    st.builds(
        CustomRecord,
        strategy=st.text(min_size=1, max_size=8),
        extra=st.dictionaries(st.text(max_size=5), scalars, max_size=3),
        **common,
        **optional,
    ),
)

receipts = st.builds(
    Receipt,
    version=st.just(1),
    basis=st.builds(
        Basis,
        epoch=small,
        run_id=st.uuids().map(lambda u: f"run-{u}"),
        model=st.text(max_size=5),
        provider=st.text(max_size=5),
    ),
    agent_call=small,
    call_runtime_stage_id=st.just("call-model#4"),
    system=st.builds(
        SystemDigest,
        hash=digests,
        chars=small,
        pieces=st.lists(
            st.builds(
                PieceDigest, hash=digests, slot=st.text(max_size=5), source=st.text(max_size=5)
            ),
            max_size=3,
        ).map(tuple),
    ),
    messages=st.builds(
        MessagesDigest,
        count=small,
        digest=digests,
        new_entries=st.lists(
            st.builds(
                NewEntry,
                index=small,
                role=st.sampled_from(["user", "assistant", "tool"]),
                hash=digests,
                key=st.none() | st.text(max_size=5),
            ),
            max_size=5,
        ).map(tuple),
        request_only=st.lists(
            st.builds(
                RequestOnlyDigest, role=st.just("user"), hash=digests, reason=st.text(max_size=5)
            ),
            max_size=2,
        ).map(tuple),
    ),
    tools=st.builds(
        ToolsDigest,
        names=st.lists(st.text(max_size=5), max_size=3).map(tuple),
        schema_hashes=st.dictionaries(st.text(max_size=5), digests, max_size=3),
        forced=st.none() | st.text(max_size=5),
        withheld=st.none() | st.just("wrap-up"),
    ),
    params=st.builds(
        ModelParams, temperature=st.none() | st.floats(0, 2), max_tokens=st.none() | small
    ),
    omitted_for_attention=st.none()
    | st.builds(OmittedForAttention, count=small, hashes=st.lists(digests, max_size=4).map(tuple)),
    wire=st.none()
    | st.builds(
        WireDigest,
        hash=digests,
        bytes=small,
        encoder=st.text(max_size=5),
        settings=digests,
        deterministic=st.booleans(),
    ),
)
