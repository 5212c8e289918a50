"""Stores written by earlier versions of the runtime, and what they show, for the versioned
decoding tests (docs/storage.md#typed-bundle-writes, docs/storage.md#the-writes-codec).

``tests/store/data/main-<commit>/`` holds one gzipped SQLite file per case below, each written
by the code of that commit running an offline scenario on its fake clock and scripted model,
and ``shown.json``: what that code showed of them (``summary``). ``main-94e2ff2`` was written
before commit writes were typed, ``main-3cb80bf`` before the writes codec (its bundle rows are
the compact form of version 1). The tests open copies with today's code and check it shows the
same. To make a set again, from a checkout of this repository:

    git worktree add /tmp/old 3cb80bf
    cp tests/store/_old_store.py /tmp/old/tests/store/
    (cd /tmp/old && PYTHONPATH=$PWD python -m tests.store._old_store OUT_DIR)
    git worktree remove /tmp/old

``summary`` uses only what every version has, and shows every value as builtins, so the typed
writes of today's code and the wire maps of an earlier one compare equal when they encode
alike.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import sqlite3
import sys
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import msgspec

from afp_runtime import models
from afp_runtime.loop import load_folded_spans
from afp_runtime.records import RunLog
from afp_runtime.scenario import run_scenario
from afp_runtime.served import check, encode_served, epochs, receipt_at, served_at, served_views
from afp_runtime.store import Store

SCENARIOS = Path(__file__).resolve().parents[1] / "scenarios"

# case: (scenario, how many of its turns run)
CASES = {
    "folds": ("summarize_oldest_conversation", None),
    "findings": ("findings_restart_ledger", None),
    "time-rows": ("time_zone_asked_then_range", 3),  # one question answered, one open
    "pause-answer": ("checkin_tool_ask_answered", None),
    "crashed": ("crash_during_send", None),
    "halted": ("cost_budget_halt", None),
    "wrap-up": ("wrap_up_at_max_iterations", None),
}


def _digest(value: Any) -> str:
    """A short digest of ``value``'s canonical JSON."""
    text = json.dumps(msgspec.to_builtins(value), sort_keys=True, ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _run_shown(log: RunLog) -> dict[str, Any]:
    """Every served view of one run, each epoch's receipt and its conformance verdict."""
    shown: dict[str, Any] = {
        "views": _digest([encode_served(v).decode() for v in served_views(log)]),
        "epochs": {},
    }
    for location in epochs(log):
        k = location.epoch
        view = served_at(log, k)
        receipt = receipt_at(log, k)
        encoder = None
        if receipt is not None and receipt.wire is not None:
            encoder = models.encoder_for(receipt.wire.encoder, receipt.basis.model)
        assert view is not None
        report = check(view, receipt, encoder=encoder, log=log)
        verdict = msgspec.json.decode(encode_served(report))["verdict"]
        shown["epochs"][str(k)] = {
            "view": _digest(encode_served(view).decode()),
            "receipt": _digest(encode_served(receipt).decode()),
            "verdict": verdict,
        }
    return shown


async def summary(store: Store) -> dict[str, Any]:
    """What ``store`` shows of its agents: digests of every row kind read through the port,
    plain verdicts and counts."""
    result: dict[str, Any] = {}
    for agent in await store.agents():
        agent_id = agent.agent_id
        runs = await store.runs(agent_id)
        bundles = {r.run_id: await store.bundles(r.run_id) for r in runs}
        ledger = await store.ledger(agent_id)
        result[agent_id] = {
            "conversation": _digest(await store.load_conversation(agent_id)),
            "questions": _digest(await store.questions(agent_id)),
            "ledger": _digest(ledger),
            "ledgerKinds": sorted({str(msgspec.to_builtins(row)["kind"]) for row in ledger}),
            "folded": _digest(await load_folded_spans(store, agent_id)),
            "runs": _digest(runs),
            "bundleCount": sum(len(b) for b in bundles.values()),
            "keys": sorted(
                {
                    msgspec.to_builtins(w)["key"]
                    for run in bundles.values()
                    for b in run
                    for w in b.writes
                }
            ),
            "bundles": {run_id: _digest(b) for run_id, b in bundles.items()},
            "served": {r.run_id: await store.read_run(r.run_id, _run_shown) for r in runs},
        }
    return result


def _pack(path: Path, packed: Path) -> None:
    """Store the SQLite file ``path`` as one gzipped, vacuumed file ``packed``."""
    db = sqlite3.connect(path)  # a script, not the runtime: the file is small
    try:
        # One self-contained file: no WAL beside it, free pages dropped.
        db.execute("PRAGMA journal_mode=DELETE")
        db.execute("VACUUM")
    finally:
        db.close()
    # Mostly empty pages: gzipped, a case is a few KB instead of 140.
    packed.write_bytes(gzip.compress(path.read_bytes(), mtime=0))
    path.unlink()


async def build(out: Path) -> None:
    """Write each case's store under ``out`` and what it shows to ``out/shown.json``."""
    from afp_runtime.store import open_store

    await anyio.Path(out).mkdir(parents=True, exist_ok=True)
    shown: dict[str, Any] = {}
    for case, (name, turns) in CASES.items():
        raw = json.loads(await anyio.Path(SCENARIOS / f"{name}.json").read_text())
        if turns is not None:
            raw["turns"] = raw["turns"][:turns]
        path = out / f"{case}.sqlite"
        await anyio.Path(path).unlink(missing_ok=True)
        await run_scenario(json.dumps(raw), db_path=path)
        store = await open_store(path, now_ms=0)
        try:
            shown[case] = await summary(store)
        finally:
            await store.aclose()
        await anyio.to_thread.run_sync(_pack, path, out / f"{case}.sqlite.gz")
    text = json.dumps(shown, indent=1, sort_keys=True) + "\n"
    await anyio.Path(out / "shown.json").write_text(text)


if __name__ == "__main__":
    anyio.run(build, Path(sys.argv[1]))
