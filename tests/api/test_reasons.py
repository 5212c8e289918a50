"""Codes in words over HTTP (docs/api.md#reasons-in-words): every body that carries refusal
reasons or gaps has ``reasons``, naming exactly the codes it carries with their sentences; the
CLI's ``--json`` prints the same."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio

from afp_runtime.app import reason_text

from ..test_cli_reasons import desk
from .conftest import Api, agent


def _explained(codes: list[str]) -> dict[str, str | None]:
    return {code: reason_text(code) for code in codes}


def _served_reasons(view: dict[str, Any]) -> None:
    assert view["reasons"] == _explained([g["gap"] for g in view["gaps"]])
    assert view["reasons"]


async def test_bodies_with_codes_carry_exactly_their_reasons(api: Api, tmp_path: Path) -> None:
    """Window records (an agent's and a run's), epoch entries (listed and one), served views
    (one and a page), a call's view and a conformance report each hold ``reasons`` for the
    codes they carry."""
    await anyio.to_thread.run_sync(desk, tmp_path)
    async with api.running(agent([])) as (_, client):

        async def body(path: str) -> Any:
            answer = await client.get(path)
            assert answer.status_code == 200, answer.text
            return answer.json()

        records = (await body("/v1/agents/demo/window-records"))["items"]
        run_id = records[-1]["runId"]
        of_run = (await body(f"/v1/runs/{run_id}/window-records"))["items"]
        epochs = await body(f"/v1/runs/{run_id}/epochs")
        one_epoch = await body(f"/v1/runs/{run_id}/epochs/1")
        served = await body(f"/v1/runs/{run_id}/epochs/1/served")
        page = await body(f"/v1/runs/{run_id}/served")
        call = await body("/v1/agents/demo/calls/1")
        report = await body(f"/v1/runs/{run_id}/epochs/1/conformance")
        raw = (await client.get(f"/v1/runs/{run_id}/epochs")).content
    seen: set[str] = set()
    for record in (*records, *of_run):
        codes = [r["reason"] for r in record["refusals"]]
        assert record["reasons"] == _explained(codes)
        seen |= set(codes)
    assert {"replacement-not-smaller", "current-request", "inside-keep-window"} <= seen
    for entry in (*epochs["items"], one_epoch, report):
        assert entry["reasons"] == _explained(entry["gaps"]) == _explained(["provider-defaults"])
    for view in (served, *page["items"], call["view"]):
        _served_reasons(view)
    # The CLI prints the same bodies.
    db = str(api.path)

    def cli(*args: str) -> Any:
        command = [sys.executable, "-m", "afp_runtime.cli", *args, "--db", db, "--json"]
        done = subprocess.run(command, capture_output=True, timeout=60, check=True)
        return json.loads(done.stdout)

    assert await anyio.to_thread.run_sync(cli, "epochs", run_id) == json.loads(raw)
    [checked] = await anyio.to_thread.run_sync(cli, "conform", run_id, "1")
    assert checked["reasons"] == report["reasons"]
