"""The conformance contracts of ``MovingStore`` (docs/storage.md#moving-between-stores): an
agent exported whole, imported whole or not at all. Part of ``store_conformance.CONTRACTS``.

One storage serves every contract, so an import brings a dump *renamed* to fresh agent, run and
message ids (``renamed``) rather than the exported agent itself.
"""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator, Sequence

import msgspec

from afp_runtime.errors import CopyRefused, NotFound
from afp_runtime.records import ConversationState, QuestionRow, Txn
from afp_runtime.store import AgentDump, CopyCounts, Store
from afp_runtime.testing.store_conformance import T0, fresh, raises, turn_txn

_state = msgspec.msgpack.Decoder(ConversationState)
_encoder = msgspec.msgpack.Encoder()


async def agent_with_history(store: Store) -> str:
    """A fresh agent with a run, a bundle, an item, a journal row, an inbox message naming its
    owner, a ledger row and an open question."""
    agent_id, run_id = fresh("agent"), fresh("run")
    await store.ensure_agent(agent_id, now_ms=T0)
    await store.commit(turn_txn(agent_id, run_id))
    ack = await store.post(
        agent_id, "are you there?", message_id=fresh("msg"), now_ms=T0, sender="ann"
    )
    question = QuestionRow(
        question_id=fresh("q"),
        agent_id=agent_id,
        message_id=ack.message_id,
        run_id=run_id,
        turn=1,
        kind="approval",
        prompt="go on?",
        tool_call_ids=("c1",),
        asked_at_ms=T0,
        status="open",
    )
    await store.commit(
        Txn(agent_id=agent_id, ledger=[{"kind": "note", "turn": 1}], questions=[question])
    )
    return agent_id


def renamed(dump: AgentDump) -> AgentDump:
    """``dump`` as a fresh agent's: new agent, run, inbox message and question ids."""
    agent_id = fresh("agent")
    state = msgspec.structs.replace(_state.decode(dump.state), agent_id=agent_id)
    runs = {r.run_id: fresh("run") for r in dump.runs}
    messages = {m.message_id: fresh("msg") for m in dump.inbox}

    def new(records: Sequence[msgspec.Struct], **ids: dict[str, str]) -> tuple[msgspec.Struct, ...]:
        return tuple(
            msgspec.structs.replace(r, **{k: m[getattr(r, k)] for k, m in ids.items()})
            for r in records
        )

    return msgspec.structs.replace(
        dump,
        agent_id=agent_id,
        state=_encoder.encode(state),
        runs=new(dump.runs, run_id=runs),
        bundles=new(dump.bundles, run_id=runs),
        key_index=new(dump.key_index, run_id=runs),
        inbox=new(dump.inbox, message_id=messages),
        tool_journal=new(dump.tool_journal, run_id=runs),
        questions=tuple(
            msgspec.structs.replace(q, question_id=fresh("q"), run_id=runs[q.run_id])
            for q in dump.questions
        ),
    )


async def _stream(*dumps: AgentDump, then: BaseException | None = None) -> AsyncIterator[AgentDump]:
    for dump in dumps:
        yield dump
    if then is not None:
        raise then


async def test_an_agent_exports_every_row_it_committed(store: Store) -> None:
    """export_agent answers every row of the agent, bodies matching their fingerprints, and
    NotFound for an unknown agent."""
    agent_id = await agent_with_history(store)
    dump = await store.export_agent(agent_id)
    [run] = await store.runs(agent_id)
    assert dump.agent_id == agent_id and dump.owner == "ann" and dump.created_at_ms == T0
    assert _state.decode(dump.state) == await store.conversation_state(agent_id)
    assert [i.pos for i in dump.items] == [0]
    assert [b.fp for b in dump.bodies] == [i.fp for i in dump.items]
    assert all(hashlib.sha256(b.body).digest() == b.fp for b in dump.bodies)
    assert [(r.run_id, r.status) for r in dump.runs] == [(run.run_id, "running")]
    assert [(b.run_id, b.seq, b.stage) for b in dump.bundles] == [(run.run_id, 0, "seed")]
    assert [(k.key, k.verb) for k in dump.key_index] == [("turn", "set")]
    assert [m.text for m in dump.inbox] == ["are you there?"]
    assert [(j.message_id, j.state) for j in dump.tool_journal] == [(f"m-{run.run_id}", "started")]
    assert [r.kind for r in dump.ledger_rows] == ["note"]
    assert [q.status for q in dump.questions] == ["open"]
    with raises(NotFound, match="nobody"):
        await store.export_agent(fresh("nobody"))


async def test_an_imported_agent_reads_back_as_it_was_exported(store: Store) -> None:
    """import_agents writes a dump whole: it exports again equal, its conversation, log,
    inbox, questions and ledger read back, it is unclaimed, and shared bodies are not new."""
    source = await agent_with_history(store)
    dump = renamed(await store.export_agent(source))
    counts = await store.import_agents(_stream(dump))
    assert (counts.agents, counts.runs, counts.bundles) == (1, 1, 1)
    assert (counts.bodies, counts.new_bodies, counts.inbox, counts.questions) == (1, 0, 1, 1)
    assert await store.export_agent(dump.agent_id) == dump
    copied = await store.load_conversation(dump.agent_id)
    assert copied.history == (await store.load_conversation(source)).history
    [run] = await store.runs(dump.agent_id)
    assert [b.stage for b in await store.bundles(run.run_id)] == ["seed"]
    assert await store.owner(dump.agent_id) == "ann"
    assert [q.run_id for q in await store.questions(dump.agent_id)] == [run.run_id]
    assert await store.ledger(dump.agent_id) == await store.ledger(source)
    [claim] = await store.agent_claims([dump.agent_id], now_ms=T0)
    assert (claim.host_id, claim.live) == (None, False)


async def test_an_import_is_written_whole_or_not_at_all(store: Store) -> None:
    """An import naming an agent the store holds is refused whole (CopyRefused naming it), and
    one whose dumps fail midway writes nothing of the dumps before."""
    source = await agent_with_history(store)
    exported = await store.export_agent(source)
    first, second = renamed(exported), renamed(exported)
    with raises(CopyRefused, match=source):
        await store.import_agents(_stream(first, exported))
    with raises(RuntimeError, match="source went away"):
        await store.import_agents(_stream(second, then=RuntimeError("source went away")))
    for dump in (first, second):
        assert await store.conversation_state(dump.agent_id) is None
        assert await store.runs(run_id=dump.runs[0].run_id) == []
        assert await store.inbox_message(dump.inbox[0].message_id) is None
    assert await store.import_agents(_stream()) == CopyCounts()
