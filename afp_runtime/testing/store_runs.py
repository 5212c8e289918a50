"""The conformance contracts of runs, their logs and the store's health: run rows and bundles,
agents' summaries, a cancelled commit, the run-log reader, read-only readers and the
clean-shutdown marker. Part of ``store_conformance.CONTRACTS``."""

from __future__ import annotations

from typing import Any

import anyio
import anyio.lowlevel

from afp_runtime.errors import NotFound, StoreError
from afp_runtime.messages import Usage, assistant, fingerprint, user
from afp_runtime.records import (
    UNKNOWN,
    FinalAnswerWrite,
    HistoryWrite,
    ListRef,
    OpenTurn,
    RunEnd,
    RunLog,
    Txn,
)
from afp_runtime.store import Store
from afp_runtime.testing.store_conformance import (
    T0,
    Backend,
    Capability,
    bundle,
    cancel_after,
    fresh,
    items_at,
    new_agent,
    raises,
    requires,
    run_start,
    state,
)

# -- contracts: runs, bundles, agents --------------------------------------------------------


async def test_a_run_ends_with_whatever_text_its_model_wrote(store: Store) -> None:
    """A run's answer and error commit whatever the model or tool wrote: a U+0000 in them
    reads back as itself, or as U+FFFD where the backend's text cannot hold it (Postgres),
    never a commit that fails (docs/storage.md#postgres-text-and-u0000)."""
    agent_id = await new_agent(store)
    run_id = fresh("run")
    await store.commit(
        Txn(
            agent_id=agent_id,
            run_start=run_start(agent_id, run_id),
            bundles=[bundle(run_id, 0, "seed")],
            conversation=state(agent_id, turn=1, ranges=(), next_pos=0),
        )
    )
    end = RunEnd(
        run_id=run_id,
        status="held",
        ended_at_ms=T0 + 50,
        usage=Usage(),
        answer="bad\x00answer",
        error_kind="tool",
        error="tool said \x00",
    )
    await store.commit(Txn(agent_id=agent_id, run_end=end))
    (row,) = await store.runs(run_id=run_id)
    assert row.answer in ("bad\x00answer", "bad\ufffdanswer")
    assert row.error in ("tool said \x00", "tool said \ufffd")


async def test_all_agents_runs_are_listed_by_when_they_started(store: Store) -> None:
    """Listed for every agent, runs come in start order even where row ids do not follow it
    (an imported agent's older runs are written after the runs already there); one agent's
    runs come in the order they were written."""
    later_agent, earlier_agent = await new_agent(store), await new_agent(store)
    later, earlier = fresh("run"), fresh("run")
    for agent_id, run_id, at in ((later_agent, later, T0 + 100), (earlier_agent, earlier, T0)):
        await store.commit(
            Txn(
                agent_id=agent_id,
                run_start=run_start(agent_id, run_id, at=at),
                bundles=[bundle(run_id, 0, "seed")],
                conversation=state(agent_id, turn=1, ranges=(), next_pos=0),
            )
        )
    listed = [r.run_id for r in await store.runs() if r.run_id in (later, earlier)]
    assert listed == [earlier, later]


async def test_runs_bundles_and_agents_summaries(store: Store) -> None:
    """runs() shows status and usage after a RunEnd, last_bundle the top seq, agents() a summary."""
    agent_id = await new_agent(store)
    run_id = fresh("run")
    messages = [user(f"hi {run_id}"), assistant(f"hello {run_id}")]
    open_turn = OpenTurn(
        turn=1, message_id=fresh("msg"), status="running", last_run_id=run_id, next_iteration=0
    )
    usage = Usage(input=120, output=30, cache_read=100)
    await store.commit(
        Txn(
            agent_id=agent_id,
            run_start=run_start(agent_id, run_id),
            items=items_at(0, messages),
            bundles=[bundle(run_id, 0, "seed")],
            conversation=state(agent_id, turn=1, ranges=((0, 2),), next_pos=2, open_turn=open_turn),
        )
    )
    assert await store.last_bundle(run_id) == (await store.bundles(run_id))[0]
    (summary,) = [row for row in await store.agents() if row.agent_id == agent_id]
    assert (summary.turn, summary.messages, summary.status) == (1, 2, "running")

    for seq, stage in ((1, "settle"), (2, "final")):
        await store.commit(Txn(agent_id=agent_id, bundles=[bundle(run_id, seq, stage)]))
    await store.commit(
        Txn(
            agent_id=agent_id,
            run_end=RunEnd(run_id=run_id, status="answered", ended_at_ms=T0 + 50, usage=usage),
            conversation=state(
                agent_id,
                turn=1,
                ranges=((0, 2),),
                next_pos=2,
                model_calls=1,
                usage_totals=usage,
                last_run_id=run_id,
            ),
        )
    )
    next_run = fresh("run")
    await store.commit(
        Txn(agent_id=agent_id, run_start=run_start(agent_id, next_run, turn=2, at=T0 + 60))
    )

    last = await store.last_bundle(run_id)
    assert last is not None
    assert (last.seq, last.stage, last.runtime_stage_id) == (2, "final", "final#2")
    assert await store.last_bundle(next_run) is None
    runs = await store.runs(agent_id)
    assert [r.run_id for r in runs] == [run_id, next_run]
    ended, started = runs
    assert (ended.status, ended.ended_at_ms, ended.usage, ended.bundles) == (
        "answered",
        T0 + 50,
        usage,
        3,
    )
    assert (ended.turn, ended.kind, ended.started_at_ms) == (1, "initial", T0)
    assert (started.status, started.ended_at_ms, started.usage, started.bundles) == (
        "running",
        None,
        None,
        0,
    )
    assert await store.runs(run_id=next_run) == [started]
    (summary,) = [row for row in await store.agents() if row.agent_id == agent_id]
    assert (summary.turn, summary.messages, summary.status) == (1, 2, "idle")
    assert (summary.model_calls, summary.usage_totals) == (1, usage)


# -- contracts: cancellation --------------------------------------------------------------------


async def _committed_parts(store: Store, agent_id: str, run_id: str, pos: int) -> list[bool]:
    """Which parts of the turn txn at ``pos`` are visible: run, bundle, items, checkpoint."""
    state_now = await store.conversation_state(agent_id)
    assert state_now is not None
    try:
        await store.resolve(agent_id, ListRef(ranges=((pos, pos + 2),)))
        items_present = True
    except StoreError:
        items_present = False
    return [
        bool(await store.runs(run_id=run_id)),
        bool(await store.bundles(run_id)),
        items_present,
        state_now.next_pos == pos + 2,
    ]


@requires(Capability.REOPEN)
async def test_cancelled_commit_is_all_or_nothing(store: Store, backend: Backend) -> None:
    """Cancelling the caller during commit leaves its txn fully present or fully absent."""
    agent_id = await new_agent(store)
    pos = 0
    run_ids: list[str] = []
    for checkpoints in range(12):
        run_id = fresh("run")
        messages = [user(f"go {run_id}"), assistant(f"done {run_id}")]
        txn = Txn(
            agent_id=agent_id,
            run_start=run_start(agent_id, run_id),
            items=items_at(pos, messages),
            bundles=[bundle(run_id, 0, "seed"), bundle(run_id, 1, "final")],
            conversation=state(agent_id, turn=1, ranges=((0, pos + 2),), next_pos=pos + 2),
        )
        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as tg:
                tg.start_soon(cancel_after, scope, checkpoints)
                await store.commit(txn)

        parts = await _committed_parts(store, agent_id, run_id, pos)
        assert parts in ([True] * 4, [False] * 4), f"half-written txn: {parts}"
        if not parts[0]:
            await store.commit(txn)  # nothing of it was left behind to collide with
        run_ids.append(run_id)
        pos += 2

    store = await backend.reopen(store)
    loaded = await store.load_conversation(agent_id)
    assert loaded.state.next_pos == pos
    assert len(loaded.history) == pos
    for run_id in run_ids:
        assert [b.seq for b in await store.bundles(run_id)] == [0, 1]


# -- contracts: reading a run's log, readers, health -------------------------------------------


async def test_a_runs_log_is_read_through_the_store(store: Store) -> None:
    """read_run hands served code a RunLog of the run (bundles, values as of a seq, bodies);
    an unknown run is NotFound."""
    agent_id = await new_agent(store)
    run_id = fresh("run")
    messages = [user(f"hi {run_id}"), assistant(f"hello {run_id}")]
    await store.commit(
        Txn(
            agent_id=agent_id,
            run_start=run_start(agent_id, run_id),
            items=items_at(0, messages),
            bundles=[
                bundle(run_id, 0, "seed", HistoryWrite(verb="set", value=ListRef())),
                bundle(run_id, 1, "settle", FinalAnswerWrite(value="draft")),
                bundle(
                    run_id,
                    2,
                    "final",
                    HistoryWrite(verb="append", value=ListRef(ranges=((0, 2),))),
                    FinalAnswerWrite(value=f"answer {run_id}"),
                ),
            ],
        )
    )

    def read(log: RunLog) -> tuple[Any, ...]:
        history = log.value_at("history", 2)
        return (
            (log.run_id, log.has_base, log.live),
            [b.seq for b in log.bundles()],
            [log.value_at("finalAnswer", seq) for seq in (0, 1, 2)],
            [ref.fingerprint for ref in history],
            log.body(fingerprint(messages[0])) is not None,
        )

    found = await store.read_run(run_id, read)
    assert found[0] == (run_id, True, True)
    assert found[1] == [0, 1, 2]
    assert found[2][1:] == ["draft", f"answer {run_id}"]
    assert found[2][0] is UNKNOWN
    assert found[3] == [fingerprint(m) for m in messages]
    assert found[4]
    with raises(NotFound, match="no run"):
        await store.read_run(fresh("run"), read)


async def test_a_reader_sees_commits_and_refuses_writes(store: Store) -> None:
    """open_reader gives a read-only store on the same storage: it reads what the writer
    committed and refuses to write; the store names its location and schema version."""
    assert store.location and store.schema_version >= 1
    reader = await store.open_reader()
    try:
        agent_id = await new_agent(store)
        assert await reader.conversation_state(agent_id) is not None
        with raises(StoreError):
            await reader.ensure_agent(fresh("agent"), now_ms=T0)
    finally:
        await reader.aclose()


async def test_the_clean_shutdown_marker_and_the_health_checks(store: Store) -> None:
    """begin_serving clears the clean-shutdown marker and mark_clean_shutdown sets it; a
    healthy storage passes every check."""
    await store.begin_serving()
    assert not await store.clean_shutdown()
    await store.mark_clean_shutdown()
    assert await store.clean_shutdown()
    assert await store.quick_check() == ["ok"]
    assert await store.integrity_check() == ["ok"]
    assert await store.body_check() == []
