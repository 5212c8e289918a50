"""docs/served.md case 35: the CLI prints exactly what the API answers."""

from __future__ import annotations

import subprocess
import sys

import anyio

from afp_runtime.testing import answer, call, tool_reply

from ..crossed_calls import crossed, support
from .conftest import Api, agent, post, settle


def afp(*args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "afp_runtime.cli", *args], capture_output=True, timeout=60
    )


async def test_cli_served_json_is_the_api_body(api: Api) -> None:
    """`afp served RUN 2 --json` prints the API's served body; a missing epoch exits 1;
    `afp conform` on a healthy run exits 0 with one verified row per epoch."""
    script = [tool_reply(call("c1", "alpha_tool")), answer("done")]
    async with api.running(agent(script)) as (host, client):
        await post(client)
        await settle(host)
        body = (await client.get("/v1/runs/run-1/epochs/2/served")).content
        report = (await client.get("/v1/runs/run-1/epochs/2/conformance?wire=true")).json()
    db = str(api.path)
    cli = await anyio.to_thread.run_sync(afp, "served", "run-1", "2", "--json", "--db", db)
    assert cli.returncode == 0, cli.stderr
    assert cli.stdout.strip() == body.strip()
    missing = await anyio.to_thread.run_sync(afp, "served", "run-1", "7", "--db", db)
    assert missing.returncode == 1
    conform = await anyio.to_thread.run_sync(afp, "conform", "run-1", "--db", db)
    assert conform.returncode == 0
    assert conform.stdout.decode().count("verified") == 2
    assert report["verdict"] == "verified"


async def test_cli_inbox_runs_and_questions_json_are_the_api_bodies(api: Api) -> None:
    """`afp inbox`, `afp runs AGENT`, `afp runs --id` and `afp questions` print, with --json,
    the same JSON values as the API's list and summary endpoints."""
    import json

    script = [answer("one"), answer("two")]
    async with api.running(agent(script)) as (host, client):
        await post(client, "first")
        await settle(host)
        await post(client, "second")
        await settle(host)
        inbox = (await client.get("/v1/agents/ops/inbox")).json()
        runs = (await client.get("/v1/agents/ops/runs")).json()
        one = (await client.get("/v1/runs/run-1")).json()
        questions = (await client.get("/v1/agents/ops/questions")).json()
    db = str(api.path)

    async def cli(*args: str) -> object:
        done = await anyio.to_thread.run_sync(lambda: afp(*args, "--json", "--db", db))
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    assert await cli("inbox", "ops") == inbox
    assert await cli("runs", "ops") == runs
    assert await cli("runs", "--id", "run-1") == one
    assert await cli("questions", "ops") == questions


async def test_cli_diff_json_is_the_api_body(api: Api) -> None:
    """`afp diff support 5 2 --json` prints exactly `GET …/calls/5/diff?against=2`'s body, a
    diff across two turns and the crashed run between them (``tests/crossed_calls.py``)."""
    await crossed(api.path)
    async with api.running(support()) as (_, client):
        body = (await client.get("/v1/agents/support/calls/5/diff?against=2")).content
    db = str(api.path)
    cli = await anyio.to_thread.run_sync(afp, "diff", "support", "5", "2", "--json", "--db", db)
    assert cli.returncode == 0, cli.stderr
    assert b'"turn":1' in body and b'"turn":2' in body
    assert cli.stdout.strip() == body.strip()
