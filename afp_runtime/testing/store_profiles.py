"""The conformance contracts of definition summaries (docs/storage.md#definition-summaries):
what ``ensure_agent`` records of an agent's definition, and that a copy carries it. Part of
``store_conformance.CONTRACTS``."""

from __future__ import annotations

from collections.abc import AsyncIterator

import msgspec

from afp_runtime.store import AgentDump, DefinitionSummary, Store
from afp_runtime.testing.store_conformance import (
    T0,
    Backend,
    Capability,
    fresh,
    requires,
)
from afp_runtime.testing.store_moving import renamed

FIRST = DefinitionSummary(
    model="model-a",
    provider="scripted",
    tool_names=("lookup_order", "shipping_status"),
    max_iterations=6,
    durability="sync",
    window_strategy="summarize-oldest",
    time_zone="Europe/Berlin",
)
SECOND = DefinitionSummary(
    model="model-b",
    provider="openai-compatible",
    tool_names=(),
    max_iterations=3,
    durability="turn",
)


async def _definition(store: Store, agent_id: str) -> DefinitionSummary | None:
    [row] = [row for row in await store.agents() if row.agent_id == agent_id]
    return row.definition


async def test_ensure_agent_records_the_definition_summary(store: Store) -> None:
    """An agent ensured without a definition has none; one given is recorded, a changed one
    replaces it, and an ensure without one leaves it as it is."""
    agent_id = fresh("agent")
    await store.ensure_agent(agent_id, now_ms=T0)
    assert await _definition(store, agent_id) is None

    await store.ensure_agent(agent_id, now_ms=T0 + 1, definition=FIRST)
    assert await _definition(store, agent_id) == FIRST
    await store.ensure_agent(agent_id, now_ms=T0 + 2, definition=SECOND)
    assert await _definition(store, agent_id) == SECOND
    await store.ensure_agent(agent_id, now_ms=T0 + 3)
    assert await _definition(store, agent_id) == SECOND
    [row] = [row for row in await store.agents() if row.agent_id == agent_id]
    assert (row.created_at_ms, row.turn) == (T0, 0)

    created = fresh("agent")  # recorded in the transaction that creates the agent
    await store.ensure_agent(created, now_ms=T0, definition=FIRST)
    assert await _definition(store, created) == FIRST


@requires(Capability.REOPEN)
async def test_a_definition_summary_outlives_the_store_object(
    store: Store, backend: Backend
) -> None:
    """The summary is read back by a reader and after reopening, field for field."""
    agent_id = fresh("agent")
    await store.ensure_agent(agent_id, now_ms=T0, definition=FIRST)
    reader = await store.open_reader()
    try:
        assert await _definition(reader, agent_id) == FIRST
    finally:
        await reader.aclose()
    reopened = await backend.reopen(store)
    assert await _definition(reopened, agent_id) == FIRST
    assert msgspec.json.encode(await _definition(reopened, agent_id)) == msgspec.json.encode(FIRST)


async def test_an_export_carries_the_definition_summary(store: Store) -> None:
    """A dump holds the stored summary; the imported agent reads it back; an agent without
    one exports None."""
    agent_id = fresh("agent")
    await store.ensure_agent(agent_id, now_ms=T0, definition=FIRST)
    dump = await store.export_agent(agent_id)
    assert dump.profile is not None
    assert msgspec.json.decode(dump.profile, type=DefinitionSummary) == FIRST
    copy = renamed(dump)
    await _import(store, copy)
    assert await _definition(store, copy.agent_id) == FIRST

    bare = fresh("agent")
    await store.ensure_agent(bare, now_ms=T0)
    assert (await store.export_agent(bare)).profile is None


async def _import(store: Store, dump: AgentDump) -> None:
    async def one() -> AsyncIterator[AgentDump]:
        yield dump

    await store.import_agents(one())
