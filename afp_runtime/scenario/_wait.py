"""Schedules in scenarios (docs/scenarios.md#schedules): the agent's declared schedules checked
by their JSON path, and ``wait`` steps, which move the virtual clock through due instants,
deliver them as a host would and run the turns they start.

Decisions where docs/scenarios.md is silent:

* Declared schedules are synced when a host opens (as a host does at start); a wait step
  delivers what is due at each due instant on its way, then drives the agent until the turns
  the deliveries started are done, before looking for the next due instant.
* A ``down`` wait closes the host first, moves the clock with nothing running, opens a fresh
  host and delivers what is due then: the catch-up rule's choice, once.
* A crash step before a wait step arms the first turn the wait runs; a wait that runs no turn
  leaves it unreached (refused, as for any step).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import msgspec

from afp_runtime.agents import deliver_due_schedules, sync_declared
from afp_runtime.agents.schedules import check_declared_schedules
from afp_runtime.errors import AgentDefinitionError, InvalidValue
from afp_runtime.records import ledger_row_kind, ledger_row_to_wire
from afp_runtime.scenario._specs import AGENT_ID, AgentSpec, WaitStep
from afp_runtime.scenario.result import DeliveryView, ScheduleState, StepResult
from afp_runtime.schedules import Schedule
from afp_runtime.store import Store

if TYPE_CHECKING:
    from afp_runtime.scenario.runner import _Runner

_DAY_MS = 86_400_000
_HOUR_MS = 3_600_000


def declared_of(agent: AgentSpec) -> tuple[Schedule, ...]:
    """The agent's declared schedules, checked as an agent's ``schedules`` option is.

    Raises:
        AgentDefinitionError: an entry is wrong; the message starts with its JSON path
            (``$.agent.schedules[1].every``).
    """
    path = "$.agent.schedules"
    try:
        return check_declared_schedules(path, agent.schedules)
    except AgentDefinitionError as exc:
        field = str(exc.context.get("field") or path)
        if exc.message.startswith(field):
            raise
        # A rule across entries (two of one name) says only what is wrong: the path leads.
        raise AgentDefinitionError(f"{field}: {exc.message}", field=field) from None


def check_wait(step: WaitStep, path: str) -> None:
    """A wait step holds exactly one of ``days``, ``hours`` and ``until``, and ``until`` is an
    instant with its offset.

    Raises:
        InvalidValue: naming the step or ``until`` by its JSON path.
    """
    given = [key for key in ("days", "hours", "until") if getattr(step, key) is not None]
    if len(given) != 1:
        raise InvalidValue(
            f"{path}: a wait step holds exactly one of days, hours or until, not "
            f"{', '.join(given) or 'none'}",
            field=path,
        )
    if step.until is not None:
        _until_ms(step.until, f"{path}.until")


def _until_ms(text: str, path: str) -> int:
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        when = None
    if when is None or when.tzinfo is None:
        raise InvalidValue(
            f"{path}: {text!r} is not an instant with its offset, such as "
            '"2026-04-06T09:00:00Z" or "2026-04-06T11:00:00+02:00"',
            field=path,
        )
    return int(when.timestamp() * 1000)


def _utc_text(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat().replace("+00:00", "Z")


async def sync_at_open(store: Store, declared: Sequence[Schedule], *, now_ms: int) -> None:
    """What a host does at start with an agent's declaration (docs/host.md#schedules); nothing
    for an agent without declared schedules (its store is left as it was)."""
    if not declared:
        return
    await store.ensure_agent(AGENT_ID, now_ms=now_ms)
    await sync_declared(store, AGENT_ID, declared, now_ms=now_ms)


async def run_wait(runner: _Runner, index: int, step: WaitStep, path: str) -> StepResult:
    """Run one wait step (see the module's decisions).

    Raises:
        InvalidValue: ``until`` lies before the virtual clock.
    """
    world = runner.world
    now = world.clock.now_ms()
    if step.until is not None:
        target = _until_ms(step.until, f"{path}.until")
        if target < now:
            raise InvalidValue(
                f"{path}.until: {step.until!r} is before the virtual clock ({_utc_text(now)})",
                field=f"{path}.until",
            )
    else:
        target = now + (step.days or 0) * _DAY_MS + (step.hours or 0) * _HOUR_MS
    deliveries: list[DeliveryView] = []
    # Crash steps before this one arm the first turn it runs (checked when it ends).
    world.arms, runner.pending = runner.pending, []
    if step.down:
        await runner.host.close()
        world.advance_to(target)
        await runner.host.open()
        deliveries += await _deliver(runner, index)
    else:
        while True:
            deliveries += await _deliver(runner, index)
            store, _ = runner.host.live()
            following = await store.next_schedule_due([AGENT_ID])
            if following is None or following > target:
                break
            world.advance_to(following)
        world.advance_to(target)
    runner.require_fired(path)
    store, _ = runner.host.live()
    states = [
        ScheduleState(
            name=row.name,
            source=row.source,
            delivered=row.delivered,
            last_due_ms=row.last_due_ms,
            next_due_ms=row.next_due_ms if row.next_due_ms is not None else msgspec.UNSET,
        )
        for row in await store.schedules(AGENT_ID)
    ]
    return StepResult(
        index=index,
        kind="wait",
        clock_ms=world.clock.now_ms(),
        deliveries=tuple(deliveries),
        schedules=tuple(states),
    )


async def _deliver(runner: _Runner, index: int) -> list[DeliveryView]:
    """Deliver what is due now and run the turns it starts; one entry per due instant."""
    store, _ = runner.host.live()
    world = runner.world
    now = world.clock.now_ms()
    await store.ensure_agent(AGENT_ID, now_ms=now)
    done = await deliver_due_schedules(store, [AGENT_ID], now_ms=now, new_id=world.ids.message_id)
    posted = [(item.name, due_ms, ack.message_id) for item in done for due_ms, ack in item.acks]
    if not posted:
        return []
    ran = await runner.drive()
    store, _ = runner.host.live()
    by_message = {row.run_id: row.message_id for row in await store.runs(AGENT_ID)}
    first = posted[0][2]
    entries = []
    for name, due_ms, message_id in posted:
        # A run a crash cut before its row was written belongs to the first message's turn.
        own = [(r, kind) for r, kind in ran if by_message.get(r, first) == message_id]
        report = await runner.report(index, "wait", message_id, own)
        entries.append(
            DeliveryView(
                schedule=name,
                sender=f"schedule:{name}",
                due_ms=due_ms,
                due=_utc_text(due_ms),
                delivered_at_ms=now,
                message_id=message_id,
                outcome=report.outcome,
                run_id=report.run_id,
                runs=report.runs,
                answer=report.answer,
                schedule_rows=report.schedule_rows,
            )
        )
    return entries


def schedule_rows(rows: Sequence[Any]) -> tuple[dict[str, Any], ...] | msgspec.UnsetType:
    """The ``schedule`` ledger rows among a step's rows, in wire form; left out when none, so
    results without them keep their bytes."""
    found = tuple(ledger_row_to_wire(row) for row in rows if ledger_row_kind(row) == "schedule")
    return found or msgspec.UNSET
