"""Folded spans over HTTP: list, one by fingerprint, originals from the span or from the log
(docs/api.md#endpoints, case 33)."""

from __future__ import annotations

from typing import Any

import httpx
import msgspec

from afp_runtime.agents import Agent
from afp_runtime.demo import LOOKUP_ORDER, QUESTIONS, SHIPPING_STATUS, demo_script
from afp_runtime.messages import Message, fingerprint
from afp_runtime.models import ExtractiveSummarizer, ScriptedModel
from afp_runtime.window import summarize_oldest

from .conftest import Api, error_of, post, settle


def desk(agent_id: str, retain: str) -> Agent:
    """The demo order desk folding its oldest turns (keep 1) with the offline summarizer."""
    return Agent(
        agent_id,
        ScriptedModel(demo_script, model="demo-scripted"),
        tools=[LOOKUP_ORDER, SHIPPING_STATUS],
        system_prompt="You are the order desk.",
        max_iterations=6,
        window=summarize_oldest(
            threshold_tokens=150,
            summarizer=ExtractiveSummarizer(),
            model="extractive/1",
            keep_recent_turns=1,
            retain=retain,  # type: ignore[arg-type]
        ),
    )


async def _folded(client: httpx.AsyncClient, agent_id: str) -> list[dict[str, Any]]:
    page = (await client.get(f"/v1/agents/{agent_id}/folded")).json()
    assert page["next"] is None
    return page["items"]


def _fingerprints(items: list[dict[str, Any]]) -> list[str]:
    return [fingerprint(msgspec.convert(item, Message)) for item in items]


async def test_case_33_originals_from_the_span_and_from_the_log(api: Api) -> None:
    """Case 33: a retained span answers messageCount messages with source span; a discard span
    is 404 messages-not-retained, and with fromLog=true answers the same messages from the log
    with source log."""
    async with api.running(desk("keep", "conversation"), desk("drop", "discard")) as (
        host,
        client,
    ):
        for question in QUESTIONS:
            for agent_id in ("keep", "drop"):
                await post(client, question, agent_id=agent_id)
                await settle(host, agent_id)
        kept = await _folded(client, "keep")
        dropped = await _folded(client, "drop")
        assert kept and len(kept) == len(dropped)
        span = kept[0]
        fp = span["summaryFingerprint"]
        one = (await client.get(f"/v1/agents/keep/folded/{fp}")).json()
        retained = (await client.get(f"/v1/agents/keep/folded/{fp}/messages?limit=500")).json()
        drop_fp = dropped[0]["summaryFingerprint"]
        refused = await client.get(f"/v1/agents/drop/folded/{drop_fp}/messages")
        from_log = (
            await client.get(f"/v1/agents/drop/folded/{drop_fp}/messages?fromLog=true&limit=500")
        ).json()
        paged = (await client.get(f"/v1/agents/keep/folded/{fp}/messages?limit=1")).json()
        bad_flag = await client.get(f"/v1/agents/drop/folded/{drop_fp}/messages?fromLog=maybe")
    assert one == span
    assert set(span) == {
        "summaryFingerprint",
        "runId",
        "iteration",
        "foldedAtMs",
        "model",
        "messageCount",
        "removedStageIds",
        "retained",
    }
    assert (span["retained"], dropped[0]["retained"]) == ("conversation", "discard")
    assert retained["source"] == "span" and retained["next"] is None
    assert len(retained["items"]) == span["messageCount"] > 0
    assert retained["items"][0]["role"] == "user"
    assert refused.status_code == 404
    assert error_of(refused)["code"] == "messages-not-retained"
    assert from_log["source"] == "log"
    assert from_log["items"] == retained["items"]
    assert _fingerprints(from_log["items"]) == _fingerprints(retained["items"])
    assert len(paged["items"]) == 1 and paged["next"] is not None
    assert bad_flag.status_code == 400 and error_of(bad_flag)["field"] == "fromLog"
