"""Edges of a store fault (docs/host.md#hosts-and-a-failing-store,
docs/storage.md#store-faults): an operator resume, which the worker carries out after the
request returns, a fault only an API read meets, and opening a new database file on a full
disk (``afp serve``, ``afp migrate``). The full disk is tests/host/full_disk.py's."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from afp_runtime.errors import ModelCallError, StoreUnavailable
from afp_runtime.host import Host
from afp_runtime.models import ScriptedModel
from afp_runtime.testing import answer
from tests.api.conftest import Api, agent, error_of, settle, until
from tests.host.full_disk import Disk
from tests.host.processes import REPO, serve_env


def _held_first() -> Any:
    """An agent whose first run is held (the model's key refused), the next answers."""
    refused = ModelCallError("the key was refused", error_kind="auth", provider="scripted")
    return agent(ScriptedModel([refused, answer("after all")], model="mock"))


async def _status(host: Host) -> str:
    rows = await host.reader.inbox("ops")
    return rows[0].status


async def _answered(host: Host) -> bool:
    return await _status(host) == "answered"


async def test_a_resume_during_a_full_disk_is_503_and_the_turn_stays_held(disk: Disk) -> None:
    """While the host knows its store cannot be written, a resume is 503 ``store-unavailable``
    (reason ``disk-full``) with ``Retry-After`` like every other write, not 202 and then
    nothing; once the store is back a resume is accepted and the operator run answers."""
    api = Api(disk.path)
    async with api.running(_held_first()) as (host, client):
        await client.post("/v1/agents/ops/inbox", json={"text": "go"})
        await settle(host)
        held = await _status(host)
        await disk.fill(host.store)
        for n in range(2_000):  # a write the disk refuses puts the host into the fault
            body = {"text": "x" * 1_000, "idempotencyKey": f"k{n}"}
            if (await client.post("/v1/agents/ops/inbox", json=body)).status_code == 503:
                break
        refused = await client.post("/v1/runs/run-1/resume")
        still = await _status(host)
        await disk.free(host.store)
        await client.post("/v1/agents/ops/inbox", json={"text": "space is back"})
        accepted = await client.post("/v1/runs/run-1/resume")
        await settle(host)
        after = await _status(host)
    assert held == "held" and still == "held"
    assert refused.status_code == 503, refused.text
    assert refused.headers["Retry-After"] == "5"
    assert (error_of(refused)["code"], error_of(refused).get("reason")) == (
        "store-unavailable",
        "disk-full",
    )
    assert accepted.status_code == 202, accepted.text
    assert after == "answered"


async def test_a_resume_the_store_fault_cut_off_is_carried_out_once_it_is_back(
    disk: Disk,
) -> None:
    """A resume accepted while the host did not yet know of the fault, whose operator run then
    meets the full disk, is not dropped: the worker asks it again and, once space is back, the
    operator run answers the turn without a second resume."""
    api = Api(disk.path)
    async with api.host(_held_first()) as host:
        await host.post("ops", "go")
        await settle(host)
        await disk.fill(host.store)
        await host.resume("ops")  # accepted: nothing has failed yet
        await until(lambda: host.store_fault is not None)
        during = await _status(host)
        await disk.free(host.store)
        host.wake("ops")
        await until(lambda: _answered(host), within_s=20)
        runs = await host.reader.runs("ops")
    assert during == "held"
    assert [run.kind for run in runs].count("operator") == 1


AGENTS_TOML = """
[[agents]]
id = "ops"
systemPrompt = "You answer."

[agents.model]
provider = "scripted"
model = "demo-scripted"
script = "afp_runtime.demo:demo_script"
"""


async def test_a_fault_only_a_request_met_is_degraded_health(api: Api) -> None:
    """A fault the host's own writes and passes never meet (here: the reader's inbox query
    fails) is answered 503 and still reported by health, through the host's store state, until
    a write succeeds again."""
    async with api.running(agent([answer("ok")])) as (host, client):
        await client.post("/v1/agents/ops/inbox", json={"text": "go"})
        await settle(host)
        before = (await client.get("/v1/health")).json()

        async def unreadable(*args: Any, **kwargs: Any) -> Any:
            raise StoreUnavailable("the disk returned an I/O error", cause="io-error")

        host.reader.inbox = unreadable  # type: ignore[method-assign]
        refused = await client.get("/v1/agents/ops/inbox")
        health = (await client.get("/v1/health")).json()
        del host.reader.inbox  # the reader's own method again
        await client.post("/v1/agents/ops/inbox", json={"text": "again"})
        healed = (await client.get("/v1/health")).json()
    assert before["status"] == "ok"
    assert refused.status_code == 503 and error_of(refused)["reason"] == "io-error"
    assert health["status"] == "degraded" and health["storeFault"]["cause"] == "io-error"
    assert healed["status"] == "ok" and healed["storeFault"] is None


@pytest.mark.parametrize("command", ["serve", "migrate"])
def test_a_new_database_on_a_full_disk_exits_4_and_leaves_no_file(
    real_disk: Disk, tmp_path: Path, command: str
) -> None:
    """``afp serve`` and ``afp migrate`` with a new file on a full disk: SQLite cannot
    initialise it, which is ``StoreUnavailable`` (``disk-full``), exit 4 with one line, not an
    internal error (70); and the empty file the open made is removed again."""
    agents = tmp_path / "agents.toml"
    agents.write_text(AGENTS_TOML, encoding="utf-8")
    anyio.run(real_disk.fill, None)
    new = real_disk.folder / "new.db"
    args = ["--db", str(new)]
    if command == "serve":
        args += ["--agents", str(agents), "--port", "0", "--host-id", "h1"]
    done = subprocess.run(
        [sys.executable, "-m", "afp_runtime.cli", command, *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**serve_env(tmp_path / "invocations"), "AFP_LOG_FORMAT": "console"},
        cwd=REPO,
        check=False,
    )
    assert done.returncode == 4, done.stderr
    assert done.stderr.count("\n") == 1 and "disk is full" in done.stderr, done.stderr
    assert not [p.name for p in real_disk.folder.iterdir() if p.name.startswith("new.db")]
