"""``GET /v1/agents/{agentId}/calls/{n}/diff?against=m``: the diff between two of an agent's
calls by agent-wide number, across runs and turns (docs/api.md#served-reads). The store is
``tests/crossed_calls.py``'s: calls 1-2 in turn 1, call 3 abandoned by a crash in turn 2,
calls 4-5 in its recovery run."""

from __future__ import annotations

import pytest

from afp_runtime.app import call_diff, encode_served
from afp_runtime.store.sqlite import SqliteStore

from ..crossed_calls import AGENT, SECOND, crossed, support
from .conftest import Api, error_of

CALLS = f"/v1/agents/{AGENT}/calls"


async def test_the_diff_crosses_runs_and_turns_and_is_the_python_answer(api: Api) -> None:
    """Call 5 against call 2 names both sides' runs and turns, and is exactly the body of the
    one implementation the Python surface and ``afp diff`` call."""
    runs = await crossed(api.path)
    async with api.running(support()) as (_, client):
        response = await client.get(f"{CALLS}/5/diff?against=2")
    store = await SqliteStore.open(api.path, now_ms=api.clock.now_ms())
    try:
        expected = await call_diff(store, AGENT, 5, 2)
    finally:
        await store.aclose()
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["before"] == {
        "agentCall": 2,
        "runId": runs[0],
        "turn": 1,
        "epoch": 2,
        "outcome": "replied",
    }
    assert (body["after"]["agentCall"], body["after"]["runId"], body["after"]["turn"]) == (
        5,
        runs[2],
        2,
    )
    assert [m["role"] for m in body["diff"]["added"]] == ["assistant", "user", "assistant", "tool"]
    assert body["diff"]["added"][1]["content"] == SECOND
    assert body["diff"]["removed"] == [] and body["diff"]["kept"] == 3
    assert response.content == encode_served(expected)


async def test_against_defaults_to_the_call_before_an_abandoned_one(api: Api) -> None:
    """Without ``against`` call 4 is compared with call 3, the crashed run's abandoned epoch,
    whose side says so."""
    runs = await crossed(api.path)
    async with api.running(support()) as (_, client):
        body = (await client.get(f"{CALLS}/4/diff")).json()
    assert body["before"] == {
        "agentCall": 3,
        "runId": runs[1],
        "turn": 2,
        "epoch": 1,
        "outcome": "abandoned",
    }
    assert (body["after"]["agentCall"], body["after"]["runId"]) == (4, runs[2])
    assert (body["diff"]["added"], body["diff"]["removed"], body["diff"]["kept"]) == ([], [], 5)


@pytest.mark.parametrize(
    ("path", "field", "value", "missing"),
    [
        ("20/diff", "n", "20", 20),
        ("0/diff", "n", "0", 0),
        ("4/diff?against=9", "against", "9", 9),
        ("4/diff?against=0", "against", "0", 0),
        ("1/diff", "against", "0", 0),
    ],
)
async def test_a_call_that_does_not_exist_is_404_naming_the_ones_that_do(
    api: Api, path: str, field: str, value: str, missing: int
) -> None:
    """A number past the agent's calls, 0, or call 1 without ``against`` (so 0) is 404
    ``call-not-found`` naming calls 1 to 5, with the field at fault."""
    await crossed(api.path)
    async with api.running(support()) as (_, client):
        response = await client.get(f"{CALLS}/{path}")
    assert response.status_code == 404
    assert error_of(response) == {
        "code": "call-not-found",
        "message": f"agent 'support' has made calls 1 to 5; there is no call {missing}",
        "field": field,
        "value": value,
    }


@pytest.mark.parametrize(
    ("path", "status", "code", "field"),
    [
        ("two/diff", 400, "invalid-path-param", "n"),
        ("2/diff?against=one", 400, "invalid-query", "against"),
        ("2/diff?against=-1", 400, "invalid-query", "against"),
        ("2/diff?against=1.5", 400, "invalid-query", "against"),
    ],
)
async def test_a_bad_number_is_400_naming_it(
    api: Api, path: str, status: int, code: str, field: str
) -> None:
    """Text that is not a number, in the path or in ``against``, is refused naming it."""
    await crossed(api.path)
    async with api.running(support()) as (_, client):
        response = await client.get(f"{CALLS}/{path}")
    assert response.status_code == status
    assert (error_of(response)["code"], error_of(response)["field"]) == (code, field)


async def test_an_agent_that_does_not_exist_is_404(api: Api) -> None:
    """An agent neither stored nor hosted is 404 ``agent-not-found``."""
    async with api.running(support()) as (_, client):
        response = await client.get("/v1/agents/nobody/calls/2/diff")
    assert response.status_code == 404 and error_of(response)["code"] == "agent-not-found"
