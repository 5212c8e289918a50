"""Stores with real history for the copy tests (docs/storage.md#moving-between-stores), and
everything a store shows of its agents, gathered to compare a copy with its source.

A source is one SQLite file holding three agents: ``scenario``, the agent of an offline
scenario (folds, findings, time rows, questions, an archived conversation, a tool journal,
crashed runs, depending on the case); ``demo``, the demo agent after eight turns (its
summarize-oldest window folds with ``retain = "conversation"``); and ``waiting``, an agent
with one queued message that named its owner.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import msgspec

from afp_runtime import agents as agents_layer
from afp_runtime import models
from afp_runtime.agents import read_config
from afp_runtime.demo import QUESTIONS
from afp_runtime.errors import AfpError
from afp_runtime.loop import AgentDriver, Emitter, SystemClock, TimeOrderedIds, load_folded_spans
from afp_runtime.records import RunLog, ledger_row_to_wire
from afp_runtime.scenario import run_scenario
from afp_runtime.served import check, encode_served, epochs, receipt_at, served_at, served_views
from afp_runtime.store import Store, open_store

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "configs" / "demo.toml"

# (scenario, how many of its turns run): what the ``scenario`` agent holds.
CASES = {
    "folds-conversation": ("summarize_oldest_conversation", None),
    "findings": ("findings_restart_ledger", None),
    "time-rows-and-questions": ("time_zone_asked_then_range", 3),  # one answered, one open
    "tool-journal": ("checkin_tool_ask_answered", 1),  # paused mid-batch: journal rows kept
    "archived": ("continue_from_import", None),
    "crashed-runs": ("crash_during_send", None),
}


async def build_source(path: Path, case: str) -> None:
    """Write the three agents of ``case`` into a new SQLite file at ``path``."""
    name, turns = CASES[case]
    raw = json.loads(await anyio.Path(REPO / "tests" / "scenarios" / f"{name}.json").read_text())
    if turns is not None:
        raw["turns"] = raw["turns"][:turns]
    await run_scenario(json.dumps(raw), db_path=path)
    _, [demo] = await anyio.to_thread.run_sync(read_config, DEMO)
    clock = SystemClock()
    store = await open_store(path, now_ms=clock.now_ms())
    try:
        ids = TimeOrderedIds(clock.now_ms)
        driver = AgentDriver(store, demo, clock=clock, ids=ids, emitter=Emitter([]))
        for i in range(8):
            await driver.post(QUESTIONS[i % len(QUESTIONS)])
        await driver.work()
        await store.ensure_agent("waiting", now_ms=clock.now_ms())
        await store.post(
            "waiting",
            "Anything new?",
            message_id="msg-waiting-1",
            now_ms=clock.now_ms(),
            idempotency_key="k-1",
            sender="ann",
            time={"zone": "Europe/Paris"},
        )
    finally:
        await demo.aclose()
        await store.aclose()


def _runs_shown(log: RunLog) -> dict[str, Any]:
    """Everything served of one run: each epoch's view (``served_at`` and the one-pass
    ``served_views``), receipt and conformance report, as bytes."""
    shown: dict[str, Any] = {"views": [encode_served(v) for v in served_views(log)]}
    for location in epochs(log):
        k = location.epoch
        view = served_at(log, k)
        receipt = receipt_at(log, k)
        encoder = None
        if receipt is not None and receipt.wire is not None:
            encoder = models.encoder_for(receipt.wire.encoder, receipt.basis.model)
        assert view is not None
        report = check(view, receipt, encoder=encoder, log=log)
        shown[f"epoch {k}"] = [encode_served(view), encode_served(receipt), encode_served(report)]
    return shown


async def shown(store: Store) -> dict[str, Any]:
    """What ``store`` shows of its agents through the port, comparable across backends."""
    result: dict[str, Any] = {"agents": msgspec.to_builtins(await store.agents())}
    for agent in await store.agents():
        agent_id = agent.agent_id
        loaded = await store.load_conversation(agent_id)
        inbox = await store.inbox(agent_id)
        runs = await store.runs(agent_id)
        result[agent_id] = {
            "conversation": msgspec.to_builtins(loaded),
            "owner": await store.owner(agent_id),
            "inbox": msgspec.to_builtins(inbox),
            "journal": {
                m.message_id: msgspec.to_builtins(await store.journal(agent_id, m.message_id))
                for m in inbox
            },
            "questions": msgspec.to_builtins(await store.questions(agent_id)),
            "ledger": [ledger_row_to_wire(r) for r in await store.ledger(agent_id)],
            "folded": msgspec.to_builtins(await load_folded_spans(store, agent_id)),
            "checkpoint": msgspec.to_builtins(
                await agents_layer.export_checkpoint(store, agent_id)
            ),
            "runs": msgspec.to_builtins(runs),
            "bundles": {r.run_id: msgspec.to_builtins(await store.bundles(r.run_id)) for r in runs},
            "served": {r.run_id: await store.read_run(r.run_id, _runs_shown) for r in runs},
            # Every row, as stored (the archive and the key index show nowhere else).
            "rows": msgspec.to_builtins(await store.export_agent(agent_id)),
        }
    return result


def verdicts(found: dict[str, Any]) -> list[str]:
    """The conformance verdict of every epoch of every run in ``shown``'s answer."""
    return [
        msgspec.json.decode(epoch[2])["verdict"]
        for agent_id, agent in found.items()
        if agent_id != "agents"
        for run in agent["served"].values()
        for key, epoch in run.items()
        if key.startswith("epoch ")
    ]


async def _ledger_problem(store: Store, agent_id: str) -> str | None:
    try:
        agents_layer.validate_ledger([ledger_row_to_wire(r) for r in await store.ledger(agent_id)])
    except AfpError as exc:
        return f"{agent_id}: {exc}"
    return None


async def doctor(store: Store) -> dict[str, Any]:
    """``afp doctor``'s three checks and the host's quick check, through the port."""
    found = [await _ledger_problem(store, a.agent_id) for a in await store.agents()]
    return {
        "quick": await store.quick_check(),
        "integrity": await store.integrity_check(),
        "damagedBodies": await store.body_check(),
        "ledgerProblems": [problem for problem in found if problem is not None],
    }


HEALTHY = {"quick": ["ok"], "integrity": ["ok"], "damagedBodies": [], "ledgerProblems": []}
