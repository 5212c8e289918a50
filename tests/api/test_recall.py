"""Recall over HTTP (docs/api.md#recall, docs/recall.md#for-people): what left an agent's
window, searched by words, with its source and when it was said; refused queries of every
hostile kind are 400 naming ``q`` (never a 500), bounds hold, an unknown agent is 404, and a
read is open to every principal as the other per-agent reads."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from afp_runtime.agents import Agent
from afp_runtime.api.principals import Principals, add_token, parse_tokens
from afp_runtime.api.recall_answer import instant_ms
from afp_runtime.demo import LOOKUP_ORDER, SHIPPING_STATUS, demo_script
from afp_runtime.errors import InvalidValue
from afp_runtime.host import Host
from afp_runtime.models import ScriptedModel
from afp_runtime.testing import FakeClock
from afp_runtime.window import sliding_window

from .conftest import Api, error_of, settle
from .test_folded import desk

HOSTILE = (
    'Where is order 7781? <script>alert(1)</script><img src=x onerror="alert(2)"> '
    '"zanzibar" \x1b[31m NEAR( * \u202eevil'
)
ASKED = (
    HOSTILE,
    "Can you also check order 2210?",
    "And order 3315 - has it shipped yet?",
    "Please look at order 4520 for me.",
)


def slider(agent_id: str = "slide") -> Agent:
    """The demo desk keeping only its last turn: older turns are dropped, not folded."""
    return Agent(
        agent_id,
        ScriptedModel(demo_script, model="demo-scripted"),
        tools=[LOOKUP_ORDER, SHIPPING_STATUS],
        system_prompt="You are the order desk.",
        max_iterations=6,
        window=sliding_window(keep_recent_turns=1),
    )


DAY_S = 86_400.0


async def talked(host: Host, *agent_ids: str, clock: FakeClock | None = None) -> None:
    """Every question of ``ASKED`` to each agent, one settled turn at a time (a day apart on
    ``clock`` when given)."""
    for question in ASKED:
        if clock is not None:
            clock.advance(DAY_S)
        for agent_id in agent_ids:
            await host.post(agent_id, question)
            await settle(host, agent_id)


@asynccontextmanager
async def desks(api: Api, **app: Any) -> AsyncIterator[tuple[Host, httpx.AsyncClient]]:
    """A folding desk keeping its originals, one discarding them, and a sliding window, each
    asked every question."""
    async with api.running(desk("keep", "conversation"), desk("drop", "discard"), slider()) as (
        host,
        client,
    ):
        await talked(host, "keep", "drop", "slide", clock=api.clock)
        if app:
            async with api.client(host, **app) as other:
                yield host, other
                return
        yield host, client


async def test_a_search_answers_the_original_with_its_source_and_when(api: Api) -> None:
    """``q`` finds the folded question verbatim, hostile markup and controls included, with
    its fold's fingerprint (one ``GET …/folded`` lists), its role and when it was said; a
    discard span and a sliding window's drop are found alike."""
    async with desks(api) as (host, client):
        kept = await client.get("/v1/agents/keep/recall", params={"q": "7781 zanzibar"})
        dropped = await client.get("/v1/agents/drop/recall", params={"q": "zanzibar"})
        slid = await client.get("/v1/agents/slide/recall", params={"q": "zanzibar"})
        folds = (await client.get("/v1/agents/keep/folded")).json()["items"]
        nothing = await client.get("/v1/agents/keep/recall", params={"q": "walrus"})
        accepted = (await host.reader.inbox("keep"))[0].accepted_at_ms
    assert kept.status_code == 200, kept.text
    body = kept.json()
    assert set(body) == {"agentId", "query", "items"}
    assert body["agentId"] == "keep" and body["query"] == "7781 zanzibar"
    first = body["items"][0]
    assert first["content"] == HOSTILE  # verbatim
    assert first["role"] == "user"
    assert first["saidAtMs"] == accepted
    assert first["source"]["kind"] == "fold"
    assert first["source"]["fingerprint"] in {fold["summaryFingerprint"] for fold in folds}
    assert first["source"]["stageId"].startswith("window#")
    assert dropped.json()["items"][0]["content"] == HOSTILE
    assert dropped.json()["items"][0]["source"]["kind"] == "fold"
    slid_first = slid.json()["items"][0]
    assert slid_first["content"] == HOSTILE
    assert slid_first["source"]["kind"] == "drop" and "fingerprint" not in slid_first["source"]
    assert nothing.status_code == 200 and nothing.json()["items"] == []


async def test_time_range_and_limit_bound_the_answer(api: Api) -> None:
    """``since`` is inclusive and ``until`` exclusive on ``saidAtMs`` (an instant, a UTC date
    or epoch ms); ``limit`` caps the hits at 1 to 50."""
    async with desks(api) as (_, client):
        every = (
            await client.get("/v1/agents/keep/recall", params={"q": "order", "limit": "50"})
        ).json()
        said = sorted({hit["saidAtMs"] for hit in every["items"]})
        assert len(said) >= 2
        cut = said[1]
        after = await client.get(
            "/v1/agents/keep/recall", params={"q": "order", "since": str(cut), "limit": "50"}
        )
        before = await client.get(
            "/v1/agents/keep/recall", params={"q": "order", "until": str(cut), "limit": "50"}
        )
        one = await client.get("/v1/agents/keep/recall", params={"q": "order", "limit": "1"})
        future = await client.get(
            "/v1/agents/keep/recall", params={"q": "order", "since": "2999-01-01"}
        )
        past = await client.get(
            "/v1/agents/keep/recall", params={"q": "order", "until": "1971-01-01T00:00:00+01:00"}
        )
        too_many = await client.get("/v1/agents/keep/recall", params={"q": "order", "limit": "51"})
        backwards = await client.get(
            "/v1/agents/keep/recall",
            params={"q": "order", "since": "2026-05-01", "until": "2026-04-01"},
        )
        not_a_time = await client.get(
            "/v1/agents/keep/recall", params={"q": "order", "since": "April"}
        )
    assert all(hit["saidAtMs"] >= cut for hit in after.json()["items"])
    assert all(hit["saidAtMs"] < cut for hit in before.json()["items"])
    assert after.json()["items"] and before.json()["items"]
    assert len(after.json()["items"]) + len(before.json()["items"]) == len(every["items"])
    assert len(one.json()["items"]) == 1
    assert future.json()["items"] == [] and past.json()["items"] == []
    for refused, field in ((too_many, "limit"), (backwards, "since"), (not_a_time, "since")):
        assert refused.status_code == 400, refused.text
        assert error_of(refused)["code"] == "invalid-query"
        assert error_of(refused)["field"] == field


@pytest.mark.parametrize(
    ("raw", "why"),
    [
        ("%00", "NUL"),
        ("order%00", "NUL"),
        ("x" * 60_000, "1000"),  # httpx sends at most 64 KiB of URL; afp recall takes 100k
        ("%22", "no word"),
        ("*", "no word"),
        ("NEAR(", None),
        ("%22order", None),
        ("order*", None),
        ("a%20OR%20b%20NOT%20c%20AND%20d", None),
        ("%E2%80%AE%F0%9F%98%80", "no word"),
        ("%FF%FE", "no word"),
        ("'%3B%20DROP%20TABLE%20recall_entries%3B--", None),
        ("", "no word"),
    ],
)
async def test_no_query_is_a_500(api: Api, raw: str, why: str | None) -> None:
    """Hostile queries (NULs, 100k characters, FTS syntax, quotes, bidi, invalid UTF-8, SQL)
    are either searched as words (200) or refused naming ``q`` and why (400); never a 500."""
    async with api.running(desk("keep", "conversation")) as (host, client):
        await talked(host, "keep")
        answer = await client.get(f"/v1/agents/keep/recall?q={raw}")
        again = await client.get("/v1/agents/keep/recall", params={"q": "order 2210"})
    if why is None:
        assert answer.status_code == 200, answer.text
        assert isinstance(answer.json()["items"], list)
    else:
        assert answer.status_code == 400, answer.text
        error = error_of(answer)
        assert error["code"] == "invalid-query" and error["field"] == "q"
        assert why in error["message"]
        assert len(error["value"]) <= 200  # the query echoed, cut like every value
    assert again.status_code == 200 and again.json()["items"]  # the store is unharmed


async def test_an_unknown_agent_is_404_and_a_missing_q_400(api: Api) -> None:
    """An agent no one has is 404 ``agent-not-found``; a search without ``q`` is 400."""
    async with api.running(desk("keep", "conversation")) as (_, client):
        missing = await client.get("/v1/agents/nobody/recall", params={"q": "order"})
        bad_id = await client.get("/v1/agents/No%20Body/recall", params={"q": "order"})
        no_q = await client.get("/v1/agents/keep/recall")
        fresh = await client.get("/v1/agents/keep/recall", params={"q": "order"})
    assert missing.status_code == 404 and error_of(missing)["code"] == "agent-not-found"
    assert bad_id.status_code == 400 and error_of(bad_id)["field"] == "agentId"
    assert no_q.status_code == 400 and error_of(no_q)["field"] == "q"
    assert fresh.status_code == 200 and fresh.json()["items"] == []  # hosted, nothing left yet


@pytest.fixture(name="people")
def fixture_people(tmp_path: Path) -> tuple[str, str, Principals]:
    """Tokens of alice and bob (users), and the principals of their token file."""
    tokens = tmp_path / "afp.db.tokens"
    alice = add_token(tokens, "alice", admin=False)
    bob = add_token(tokens, "bob", admin=False)
    return alice, bob, parse_tokens(tokens.read_text(encoding="utf-8"), source=str(tokens))


async def test_a_read_open_to_every_principal_and_closed_without_a_token(
    api: Api, people: tuple[str, str, Principals]
) -> None:
    """With tokens, recall is a read like ``GET …/folded``: a user principal other than the
    conversation's owner reads it (as it reads the folds), a request without a token is 401."""
    alice, bob, principals = people
    async with api.running(desk("keep", "conversation"), principals=principals) as (host, client):
        for question in ASKED:
            posted = await client.post(
                "/v1/agents/keep/inbox",
                json={"text": question},
                headers={"Authorization": f"Bearer {alice}"},
            )
            assert posted.status_code == 202, posted.text
            await settle(host, "keep")
        as_bob = {"Authorization": f"Bearer {bob}"}
        recall = await client.get("/v1/agents/keep/recall?q=zanzibar", headers=as_bob)
        folded = await client.get("/v1/agents/keep/folded", headers=as_bob)
        anonymous = await client.get("/v1/agents/keep/recall?q=7781")
        owner = await host.reader.owner("keep")
    assert owner == "alice"
    assert folded.status_code == 200 and recall.status_code == 200
    assert recall.json()["items"][0]["content"] == HOSTILE
    assert anonymous.status_code == 401


def test_the_documented_bounds_are_the_use_cases() -> None:
    """The OpenAPI document's ``limit`` default and maximum are ``app.recall``'s."""
    from afp_runtime.api import recall
    from afp_runtime.app import recalling

    assert (recall.DEFAULT_LIMIT, recall.MAX_LIMIT) == (
        recalling.DEFAULT_LIMIT,
        recalling.MAX_LIMIT,
    )


@given(
    moment=st.datetimes(
        min_value=datetime(2, 1, 1), max_value=datetime(9998, 12, 31), timezones=st.just(UTC)
    ),
    offset_min=st.integers(min_value=-23 * 60 - 59, max_value=23 * 60 + 59),
)
def test_an_instant_reads_as_the_milliseconds_it_names(moment: datetime, offset_min: int) -> None:
    """An instant written with any offset, seconds and milliseconds reads as the epoch
    milliseconds of that moment (the reading ``since`` and ``until`` share on every door)."""
    zone = timezone(timedelta(minutes=offset_min))
    local = moment.astimezone(zone)
    sign = "-" if offset_min < 0 else "+"
    hours, minutes = divmod(abs(offset_min), 60)
    text = local.strftime("%Y-%m-%dT%H:%M:%S") + f".{local.microsecond // 1000:03d}"
    text = f"{local.year:04d}" + text[text.index("-") :] + f"{sign}{hours:02d}:{minutes:02d}"
    expected = (moment - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(milliseconds=1)
    assert instant_ms("since", text) == expected
    assert instant_ms("since", str(max(expected, 0))) == max(expected, 0)


@pytest.mark.parametrize(
    "text", ["2026-02-30", "2026-13-01", "2026-04-01T24:00Z", "2026-04-01T09:30", "1e3", "٣"]
)
def test_a_time_that_names_no_instant_is_refused(text: str) -> None:
    """An impossible day or hour, an instant without its offset, other digits: refused."""
    with pytest.raises(InvalidValue) as caught:
        instant_ms("until", text)
    assert caught.value.context["field"] == "until"
