"""The conformance contracts of the durable inbox and the tool journal. Part of
``store_conformance.CONTRACTS``."""

from __future__ import annotations

from typing import Any

from afp_runtime.errors import IdempotencyConflict, InvalidValue
from afp_runtime.records import InboxUpdate, JournalRow, Txn
from afp_runtime.store import Store
from afp_runtime.testing.store_conformance import T0, fresh, new_agent, raises

# -- contracts: the durable inbox -------------------------------------------------------------


async def test_inbox_positions_increase_per_agent(store: Store) -> None:
    """post assigns each agent its own increasing positions and acknowledges what it stored."""
    first, second = await new_agent(store), await new_agent(store)
    acks = [
        await store.post(first, f"message {n}", message_id=fresh("msg"), now_ms=T0 + n)
        for n in range(3)
    ]
    other = await store.post(second, "elsewhere", message_id=fresh("msg"), now_ms=T0)

    positions = [ack.position for ack in acks]
    assert positions == sorted(set(positions))
    assert other.position == positions[0]
    assert not any(ack.duplicate for ack in [*acks, other])
    rows = await store.inbox(first)
    assert [(r.message_id, r.position, r.text, r.status) for r in rows] == [
        (ack.message_id, ack.position, f"message {n}", "queued") for n, ack in enumerate(acks)
    ]
    assert [r.accepted_at_ms for r in rows] == [T0, T0 + 1, T0 + 2]
    assert [r.message_id for r in await store.inbox(second)] == [other.message_id]


async def test_inbox_idempotency_key(store: Store) -> None:
    """The same key and text return the original ack; other text is refused and writes nothing."""
    agent_id = await new_agent(store)
    key = fresh("key")
    original = await store.post(
        agent_id, "deploy", message_id=fresh("msg"), now_ms=T0, idempotency_key=key, sender="ann"
    )

    again = await store.post(
        agent_id,
        "deploy",
        message_id=fresh("msg"),
        now_ms=T0 + 9,
        idempotency_key=key,
        sender="ann",
    )
    assert again.duplicate
    assert (again.message_id, again.position, again.accepted_at_ms) == (
        original.message_id,
        original.position,
        T0,
    )

    refused_id = fresh("msg")
    with raises(IdempotencyConflict):
        await store.post(
            agent_id,
            "rollback",
            message_id=refused_id,
            now_ms=T0 + 10,
            idempotency_key=key,
            sender="ann",
        )
    assert await store.inbox_message(refused_id) is None
    rows = await store.inbox(agent_id)
    assert [(r.message_id, r.text, r.idempotency_key, r.sender) for r in rows] == [
        (original.message_id, "deploy", key, "ann")
    ]


async def test_inbox_refuses_empty_and_overlong_text(store: Store) -> None:
    """Text must hold 1 to 32,000 code points (not bytes) that UTF-8 can hold; anything else (no
    text at all, a lone surrogate, a U+0000 that Postgres text cannot hold) is InvalidValue
    naming ``text``, as is a sender holding U+0000 (``from``), and nothing is stored."""
    agent_id = await new_agent(store)
    refused = [fresh("msg") for _ in range(6)]
    with raises(InvalidValue):
        await store.post(agent_id, "", message_id=refused[0], now_ms=T0)
    with raises(InvalidValue):
        await store.post(agent_id, "é" * 32_001, message_id=refused[1], now_ms=T0)
    with raises(InvalidValue, match="surrogate"):
        await store.post(agent_id, "hi \ud800", message_id=refused[2], now_ms=T0)
    with raises(InvalidValue, match="must be text"):
        await store.post(agent_id, None, message_id=refused[3], now_ms=T0)  # type: ignore[arg-type]
    with raises(InvalidValue, match="U+0000") as nul:
        await store.post(agent_id, "nul \x00 here", message_id=refused[4], now_ms=T0)
    with raises(InvalidValue, match="U+0000") as nul_sender:
        await store.post(agent_id, "ok", message_id=refused[5], now_ms=T0, sender="da\x00na")
    assert nul[0].context["field"] == "text" and nul_sender[0].context["field"] == "from"

    longest = await store.post(agent_id, "é" * 32_000, message_id=fresh("msg"), now_ms=T0)

    assert [r.message_id for r in await store.inbox(agent_id)] == [longest.message_id]
    assert [await store.inbox_message(m) for m in refused] == [None] * 6


async def test_inbox_filters_by_status(store: Store) -> None:
    """inbox(status=...) lists only messages of that status, with the turn that took them."""
    agent_id = await new_agent(store)
    acks = [
        await store.post(agent_id, f"m{n}", message_id=fresh("msg"), now_ms=T0) for n in range(3)
    ]
    await store.commit(
        Txn(
            agent_id=agent_id,
            inbox=[
                InboxUpdate(message_id=acks[0].message_id, status="answered", turn=1),
                InboxUpdate(message_id=acks[1].message_id, status="running", turn=2),
            ],
        )
    )

    running = await store.inbox(agent_id, status="running")
    assert [(r.message_id, r.turn) for r in running] == [(acks[1].message_id, 2)]
    queued = await store.inbox(agent_id, status="queued")
    assert [(r.message_id, r.turn) for r in queued] == [(acks[2].message_id, None)]
    answered = await store.inbox(agent_id, status="answered")
    assert [r.message_id for r in answered] == [acks[0].message_id]
    assert await store.inbox(agent_id, status="dismissed") == []
    assert len(await store.inbox(agent_id)) == 3


# -- contracts: the tool journal --------------------------------------------------------------


async def test_tool_journal_reads_back_per_turn(store: Store) -> None:
    """started and finished rows read back per (agent, turn); a repeated started row is ignored."""
    agent_id = await new_agent(store)
    run_id, recovery_id = fresh("run"), fresh("run")
    outcome = b'{"status":"ok","content":"42"}'

    def row(call: str, journal_state: Any, run: str, result: bytes | None = None) -> JournalRow:
        return JournalRow(
            agent_id=agent_id,
            message_id="m-3",
            tool_call_id=call,
            state=journal_state,
            run_id=run,
            outcome=result,
        )

    await store.commit(
        Txn(agent_id=agent_id, journal=[row("a", "started", run_id), row("b", "started", run_id)])
    )
    await store.commit(Txn(agent_id=agent_id, journal=[row("a", "finished", run_id, outcome)]))
    await store.commit(Txn(agent_id=agent_id, journal=[row("b", "started", recovery_id)]))

    journal = await store.journal(agent_id, "m-3")
    assert set(journal) == {"a", "b"}
    assert (journal["a"].started, journal["a"].finished) == (True, outcome)
    assert (journal["b"].started, journal["b"].finished) == (True, None)
    assert await store.journal(agent_id, "m-4") == {}
    other = await new_agent(store)
    assert await store.journal(other, "m-3") == {}


async def test_inbox_refuses_a_sender_or_key_no_client_could_name(store: Store) -> None:
    """An empty or overlong ``from``, or an idempotency key outside ``[A-Za-z0-9._:-]{1,128}``,
    is InvalidValue naming it and stores nothing: an empty owner would lock the conversation
    against every sender an API client can give."""
    agent_id = await new_agent(store)
    for sender, key, field in [
        ("", None, "from"),
        ("p" * 129, None, "from"),
        ("ann", "has spaces", "idempotencyKey"),
        ("ann", "k" * 129, "idempotencyKey"),
    ]:
        with raises(InvalidValue) as caught:
            await store.post(
                agent_id,
                "hi",
                message_id=fresh("msg"),
                now_ms=T0,
                sender=sender,
                idempotency_key=key,
            )
        assert caught[0].context["field"] == field
    assert await store.inbox(agent_id) == []
    ack = await store.post(
        agent_id,
        "hi",
        message_id=fresh("msg"),
        now_ms=T0,
        sender="p" * 128,
        idempotency_key="web-1f04:a.b_c",
    )
    assert [r.message_id for r in await store.inbox(agent_id)] == [ack.message_id]
