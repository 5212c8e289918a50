"""Credentials an endpoint echoes never reach a run's error, the API, the inspector or the
database file (docs/host.md#secrets-in-errors-and-logs)."""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterator
from pathlib import Path

import anyio
import pytest

from afp_runtime.agents import Agent
from afp_runtime.models import AnthropicModel, OpenAICompatModel
from afp_runtime.models._http import HttpModel
from tests.api.conftest import Api, settle
from tests.echoing import (
    ANTHROPIC_KEY,
    BASIC_PASSWORD,
    BASIC_USER,
    OPENAI_KEY,
    echoing_provider,
)


@pytest.fixture(name="echoing")
def fixture_echoing() -> Iterator[str]:
    """The base URL of an echoing endpoint (started and stopped off the event loop)."""
    with echoing_provider() as url:
        yield url


BASIC_TOKEN = base64.b64encode(f"{BASIC_USER}:{BASIC_PASSWORD}".encode()).decode()


def _openai_key(url: str) -> HttpModel:
    return OpenAICompatModel(base_url=url + "/v1", model="gpt-echo", api_key=OPENAI_KEY)


def _anthropic_key(url: str) -> HttpModel:
    return AnthropicModel(model="claude-echo", api_key=ANTHROPIC_KEY, base_url=url)


def _openai_basic(url: str) -> HttpModel:
    with_user = url.replace("://", f"://{BASIC_USER}:{BASIC_PASSWORD}@")
    return OpenAICompatModel(base_url=with_user + "/v1", model="gpt-echo")


@pytest.mark.parametrize(
    ("make", "secrets", "shown"),
    [
        (_openai_key, [OPENAI_KEY], "Authorization: Bearer ***"),
        (_anthropic_key, [ANTHROPIC_KEY], "x-api-key: ***"),
        (_openai_basic, [BASIC_PASSWORD, BASIC_TOKEN], "Authorization: Basic ***"),
    ],
    ids=["openai-bearer", "anthropic-x-api-key", "basic-in-base-url"],
)
async def test_an_echoed_credential_is_in_no_error_answer_page_or_row(
    api: Api,
    tmp_path: Path,
    echoing: str,
    make: Callable[[str], HttpModel],
    secrets: list[str],
    shown: str,
) -> None:
    """The endpoint refuses the key and quotes it: the turn is held with the refusal, which
    names the header with ``***`` in place of the credential everywhere it is read."""
    model = make(echoing)
    try:
        async with api.running(Agent("ops", model)) as (host, client):
            await host.post("ops", "hello")
            await settle(host)
            runs = await client.get("/v1/agents/ops/runs")
            run_id = runs.json()["items"][0]["runId"]
            answers = [
                runs,
                await client.get("/v1/agents/ops/inbox"),
                await client.get("/v1/agents/ops"),
                await client.get(f"/v1/runs/{run_id}"),
                await client.get(f"/v1/runs/{run_id}/commits"),
                await client.get("/"),
                await client.get("/agents/ops"),
            ]
    finally:
        await model.aclose()
    run = answers[3].json()
    assert run["status"] == "held" and run["errorKind"] == "auth"
    assert shown in run["error"]
    assert all(a.status_code == 200 for a in answers), [a.status_code for a in answers]
    stored = b"".join(
        [
            await p.read_bytes()
            async for p in anyio.Path(tmp_path).iterdir()
            if p.name.startswith("afp.db")
        ]
    )
    assert b"credentials were refused" in stored
    for secret in secrets:
        for answer in answers:
            assert secret not in answer.text, (secret, str(answer.url))
        assert secret.encode() not in stored
