"""The conformance contracts of list references (docs/storage.md#the-conformance-suite): markers
live in the reference, not the body, and ranges resolve in the reference's own order. Part of
``store_conformance.CONTRACTS``.
"""

from __future__ import annotations

import msgspec

from afp_runtime.errors import StoreDamaged, StoreError
from afp_runtime.messages import fingerprint, tool_result, user
from afp_runtime.records import ListRef, Txn
from afp_runtime.store import Store
from afp_runtime.testing.store_conformance import (
    Backend,
    Capability,
    fresh,
    items_at,
    new_agent,
    raises,
    requires,
    state,
)


@requires(Capability.COUNT_BODIES)
async def test_markers_live_in_the_list_reference(store: Store, backend: Backend) -> None:
    """One message with and without markers has one fingerprint and one body; only flags differ."""
    agent_id = await new_agent(store)
    call_id = fresh("call")
    marked = tool_result(call_id, "alpha_tool", "not run: bad arguments", not_dispatched=True)
    plain = msgspec.structs.replace(marked, not_dispatched=False)
    injected = msgspec.structs.replace(marked, not_dispatched=False, injected_by="operator")
    assert fingerprint(marked) == fingerprint(plain) == fingerprint(injected)
    before = await backend.body_count(store)

    await store.commit(Txn(agent_id=agent_id, items=items_at(0, [marked, plain, injected])))

    assert await backend.body_count(store) == before + 1
    messages, fps = await store.resolve(agent_id, ListRef(ranges=((0, 3),)))
    assert fps == (fingerprint(plain),) * 3
    assert messages == (marked, plain, injected)
    assert messages[0].not_dispatched and not messages[1].not_dispatched
    assert messages[2].injected_by == "operator" and messages[1].injected_by is None
    assert msgspec.structs.replace(messages[0], not_dispatched=False) == messages[1]
    assert msgspec.structs.replace(messages[2], injected_by=None) == messages[1]


async def test_list_ref_ranges_resolve_in_order(store: Store) -> None:
    """A history of ranges [(0,3),(5,7)] resolves to exactly those items, in that order."""
    agent_id = await new_agent(store)
    tag = fresh("ranges")
    messages = [user(f"{tag} #{n}") for n in range(8)]
    ranges = ((0, 3), (5, 7))
    await store.commit(
        Txn(
            agent_id=agent_id,
            items=items_at(0, messages),
            conversation=state(agent_id, turn=1, ranges=ranges, next_pos=8),
        )
    )

    expected = tuple(messages[pos] for pos in (0, 1, 2, 5, 6))
    resolved, fps = await store.resolve(agent_id, ListRef(ranges=ranges))
    assert resolved == expected
    assert fps == tuple(fingerprint(m) for m in expected)
    loaded = await store.load_conversation(agent_id)
    assert loaded.history == expected
    assert [row.messages for row in await store.agents() if row.agent_id == agent_id] == [5]


async def test_a_reference_of_many_ranges_resolves_in_its_own_order(store: Store) -> None:
    """A reference's ranges resolve in the reference's order, not the items' positions, also
    past one read's worth of ranges; a range naming items never stored reads as damage, and
    an unknown agent is refused."""
    agent_id = await new_agent(store)
    tag = fresh("many")
    messages = [user(f"{tag} #{n}") for n in range(600)]
    await store.commit(
        Txn(
            agent_id=agent_id,
            items=items_at(0, messages),
            conversation=state(agent_id, turn=1, ranges=((0, 600),), next_pos=600),
        )
    )
    # 450 one-item ranges in scrambled order (7 and 600 share no factor), then a longer one.
    ranges = (*(((n * 7) % 600, (n * 7) % 600 + 1) for n in range(450)), (590, 594))
    expected = tuple(messages[pos] for start, end in ranges for pos in range(start, end))
    resolved, fps = await store.resolve(agent_id, ListRef(ranges=ranges))
    assert resolved == expected and len(resolved) == sum(e - s for s, e in ranges)
    assert fps == tuple(fingerprint(m) for m in expected)
    assert await store.fingerprints(agent_id, ListRef(ranges=ranges)) == fps
    with raises(StoreDamaged, "names items 599..600"):
        await store.resolve(agent_id, ListRef(ranges=((0, 2), (599, 601))))
    for read in (store.resolve, store.fingerprints):
        for ref in (ListRef(), ListRef(ranges=((0, 2),))):
            with raises(StoreError, "no agent"):
                await read(fresh("nobody"), ref)
