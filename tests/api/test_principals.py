"""Only the owner, proven (docs/api.md#principals-and-tokens, docs/host.md#the-owner-check): a
token is a principal, ``from`` names only the caller's own (an admin's may name anyone), an owned
conversation's questions, resume and dismiss are its owner's; every ``POST`` under ``/v1`` is
refused from another site's page or as a form, with or without a body."""

from __future__ import annotations

import os
import random
import stat
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from afp_runtime.api.principals import Principals, add_token, parse_tokens
from afp_runtime.errors import ConfigError, ModelCallError
from afp_runtime.host import Host
from afp_runtime.loop import TimeOrderedIds
from afp_runtime.models import ScriptedModel
from afp_runtime.testing import answer, call, tool_reply

from .conftest import TOKEN, Api, agent, error_of, settle, until, watch_of
from .test_questions import asking_tool, paused


class People:
    """A token file of alice and bob (users) and root (admin), written by ``add_token``."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.tokens = {
            name: add_token(path, name, admin=name == "root") for name in ("alice", "bob", "root")
        }
        self.principals = parse_tokens(path.read_text(encoding="utf-8"), source=str(path))

    def auth(self, name: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.tokens[name]}"}


@pytest.fixture(name="people")
def fixture_people(tmp_path: Path) -> People:
    return People(tmp_path / "afp.db.tokens")


@asynccontextmanager
async def _as(
    api: Api, people: People, *definitions: Any
) -> AsyncIterator[tuple[Host, httpx.AsyncClient]]:
    async with api.running(*definitions, principals=people.principals) as (host, client):
        yield host, client


async def _held(host: Host, agent_id: str = "ops") -> bool:
    rows = await host.reader.inbox(agent_id)
    return bool(rows) and rows[0].status == "held" and not watch_of(host).working(agent_id)


async def test_a_user_token_posts_as_its_principal_and_names_no_one_else(
    api: Api, people: People
) -> None:
    """alice's token posting without ``from`` makes alice the owner; bob's naming alice is 403
    ``not-your-principal`` and stores nothing; bob's own message is 403 ``not-owner`` naming
    bob; root (admin) may name alice. No token, or an unknown one, is 401."""
    async with _as(api, people, agent([answer("one"), answer("two")])) as (host, client):
        first = await client.post(
            "/v1/agents/ops/inbox", json={"text": "hi"}, headers=people.auth("alice")
        )
        await settle(host)
        owner = await host.reader.owner("ops")
        posing = await client.post(
            "/v1/agents/ops/inbox",
            json={"text": "it is me, alice", "from": "alice"},
            headers=people.auth("bob"),
        )
        own = await client.post(
            "/v1/agents/ops/inbox", json={"text": "me"}, headers=people.auth("bob")
        )
        admin = await client.post(
            "/v1/agents/ops/inbox",
            json={"text": "for alice", "from": "alice"},
            headers=people.auth("root"),
        )
        await settle(host)
        nobody = await client.get("/v1/agents")
        stranger = await client.get("/v1/agents", headers={"Authorization": "Bearer " + "x" * 43})
        inbox = [row.text for row in await host.reader.inbox("ops")]
    assert first.status_code == 202 and owner == "alice"
    assert posing.status_code == 403
    assert error_of(posing)["code"] == "not-your-principal"
    assert error_of(posing)["field"] == "from" and "'bob'" in error_of(posing)["message"]
    assert own.status_code == 403 and error_of(own)["code"] == "not-owner"
    assert "'bob'" in error_of(own)["message"]
    assert admin.status_code == 202
    assert (nobody.status_code, stranger.status_code) == (401, 401)
    assert inbox == ["hi", "for alice"]


async def test_a_principal_answering_anothers_question_is_refused_naming_it(
    api: Api, people: People
) -> None:
    """bob's token answering or abandoning alice's question is 403 naming bob (and naming alice
    in ``from`` is no way round it); the question stays open, and alice's token answers it."""
    script = [tool_reply(call("c1", "beta_tool")), answer("done")]
    async with _as(api, people, agent(script, tools=[asking_tool()])) as (host, client):
        await client.post("/v1/agents/ops/inbox", json={"text": "go"}, headers=people.auth("alice"))
        await until(lambda: paused(host))
        [question] = (
            await client.get("/v1/agents/ops/questions", headers=people.auth("bob"))
        ).json()["items"]
        base = f"/v1/agents/ops/questions/{question['questionId']}"
        bob_answers = await client.post(
            base + "/answer", json={"value": "db-9"}, headers=people.auth("bob")
        )
        bob_poses = await client.post(
            base + "/answer",
            json={"value": {"decision": "approve"}, "from": "alice"},
            headers=people.auth("bob"),
        )
        bob_abandons = await client.post(base + "/abandon", headers=people.auth("bob"))
        still_open = await host.reader.questions("ops", status="open")
        alice_answers = await client.post(
            base + "/answer", json={"value": "db-1"}, headers=people.auth("alice")
        )
    assert bob_answers.status_code == 403 and error_of(bob_answers)["code"] == "not-owner"
    assert "'bob'" in error_of(bob_answers)["message"]
    assert bob_poses.status_code == 403 and error_of(bob_poses)["code"] == "not-your-principal"
    assert bob_abandons.status_code == 403 and error_of(bob_abandons)["code"] == "not-owner"
    assert [q.question_id for q in still_open] == [question["questionId"]]
    assert alice_answers.status_code == 200


async def test_resume_and_dismiss_by_a_non_owner_are_refused(api: Api, people: People) -> None:
    """On alice's held turn bob's resume and dismiss are 403 ``not-owner`` naming bob and the
    turn stays held; root (admin) may resume it, alice may dismiss it."""
    refused = ModelCallError("the key was refused", error_kind="auth", provider="scripted")
    model = ScriptedModel([refused, refused], model="mock")
    async with _as(api, people, agent(model)) as (host, client):
        await client.post("/v1/agents/ops/inbox", json={"text": "go"}, headers=people.auth("alice"))
        await until(lambda: _held(host))
        bob = [
            await client.post(f"/v1/runs/run-1/{action}", headers=people.auth("bob"))
            for action in ("resume", "dismiss")
        ]
        after_bob = [row.status for row in await host.reader.inbox("ops")]
        root = await client.post("/v1/runs/run-1/resume", headers=people.auth("root"))
        await until(lambda: _held(host))
        latest = (await host.reader.runs("ops"))[-1].run_id
        alice = await client.post(f"/v1/runs/{latest}/dismiss", headers=people.auth("alice"))
    assert [r.status_code for r in bob] == [403, 403]
    assert {error_of(r)["code"] for r in bob} == {"not-owner"}
    assert all("'bob'" in error_of(r)["message"] for r in bob)
    assert after_bob == ["held"]
    assert root.status_code == 202
    assert alice.status_code == 200


async def test_the_single_token_is_the_admin_beside_a_token_file(api: Api, people: People) -> None:
    """The ``--token-file`` token still works beside a token file, as the admin: it may name
    any principal."""
    async with api.running(agent([answer("one")]), token=TOKEN, principals=people.principals) as (
        host,
        client,
    ):
        posted = await client.post(
            "/v1/agents/ops/inbox",
            json={"text": "hi", "from": "alice"},
            headers={"Authorization": f"Bearer {TOKEN}"},
        )
        await settle(host)
        owner = await host.reader.owner("ops")
    assert posted.status_code == 202 and owner == "alice"


@pytest.mark.parametrize(
    "origin", ["http://evil.example", "null", "https://127.0.0.1:8765", "127.0.0.1:8765"]
)
async def test_a_post_from_another_sites_page_is_refused_with_or_without_a_body(
    api: Api, origin: str
) -> None:
    """Without tokens, an empty ``POST`` carrying another site's ``Origin`` (or ``null``) is 403
    ``cross-origin``, and one naming a form's content type is 415, on abandon, resume and dismiss
    alike; nothing changes. A ``POST`` from the API's own origin passes."""
    script = [tool_reply(call("c1", "beta_tool")), answer("done")]
    refused = ModelCallError("the key was refused", error_kind="auth", provider="scripted")
    definitions = [
        agent(script, tools=[asking_tool()]),
        agent(ScriptedModel([refused], model="mock"), agent_id="desk"),
    ]
    async with api.running(*definitions) as (host, client):
        await client.post("/v1/agents/ops/inbox", json={"text": "go", "from": "alice"})
        await client.post("/v1/agents/desk/inbox", json={"text": "go", "from": "alice"})
        await until(lambda: paused(host))
        await until(lambda: _held(host, "desk"))
        [question] = await host.reader.questions("ops")
        held_run = (await host.reader.runs("desk"))[-1].run_id
        paths = [
            f"/v1/agents/ops/questions/{question.question_id}/abandon",
            f"/v1/runs/{held_run}/resume",
            f"/v1/runs/{held_run}/dismiss",
        ]
        foreign = [await client.post(path, headers={"Origin": origin}) for path in paths]
        forms = [
            await client.post(path, headers={"Content-Type": kind})
            for path in paths
            for kind in ("text/plain", "application/x-www-form-urlencoded")
        ]
        unchanged = (
            [q.status for q in await host.reader.questions("ops")],
            [row.status for row in await host.reader.inbox("desk")],
        )
        same_site = await client.post(
            paths[0], json={"from": "alice"}, headers={"Origin": "http://127.0.0.1:8765"}
        )
    assert [r.status_code for r in foreign] == [403, 403, 403]
    assert {error_of(r)["code"] for r in foreign} == {"cross-origin"}
    assert {error_of(r)["field"] for r in foreign} == {"Origin"}
    assert [r.status_code for r in forms] == [415] * 6
    assert unchanged == (["open"], ["held"])
    assert same_site.status_code == 200


def test_a_token_file_keeps_only_hashes(tmp_path: Path) -> None:
    """``add_token`` makes a 43-character random token, writes only its hash to a file only its
    owner may read, refuses a name twice; the hash proves the token and nothing else."""
    path = tmp_path / "afp.db.tokens"
    token = add_token(path, "alice", admin=False)
    root = add_token(path, "root", admin=True)
    text = path.read_text(encoding="utf-8")
    principals = parse_tokens(text, source=str(path))
    with pytest.raises(ConfigError, match="'alice' already"):
        add_token(path, "alice", admin=False)
    assert len(token) >= 43 and token != root
    assert token not in text and root not in text
    assert [line.split()[:2] for line in text.splitlines()] == [
        ["alice", "user"],
        ["root", "admin"],
    ]
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    alice = principals.authenticate(token.encode())
    assert alice is not None and (alice.name, alice.admin) == ("alice", False)
    found = principals.authenticate(root.encode())
    assert found is not None and found.admin
    assert principals.authenticate(b"x" * 43) is None
    assert principals.authenticate(text.split()[2].encode()) is None  # the hash is no token


@pytest.mark.parametrize(
    ("line", "wrong"),
    [
        ("alice user", "NAME ROLE SHA256"),
        ("alice owner " + "0" * 64, "user or admin"),
        ("al ice user " + "0" * 64, "NAME ROLE SHA256"),
        ("alice user 1234", "SHA-256"),
        ("ålice user " + "0" * 64, "name"),
        ("alice user " + "0" * 64 + "\nalice admin " + "1" * 64, "named twice"),
    ],
)
def test_a_damaged_token_file_is_refused_naming_its_line(line: str, wrong: str) -> None:
    with pytest.raises(ConfigError, match=wrong) as caught:
        parse_tokens("# principals\n\n" + line + "\n", source="t.tokens")
    assert "t.tokens line 3" in caught.value.message or "line 4" in caught.value.message
    assert caught.value.context == {"field": "api.tokens"}


def test_an_empty_token_file_knows_no_one() -> None:
    assert len(parse_tokens("# nobody yet\n", source="t")) == 0
    assert len(Principals.of_token(TOKEN) + Principals([])) == 1


def test_ids_come_from_the_operating_systems_random_source(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Run, message and question ids take their random bits from ``os.urandom`` (here made to
    answer zeros, so they show), unless a seeded source is injected (repeatable ids)."""
    monkeypatch.setattr(random, "_urandom", lambda n: b"\x00" * n)
    ids = TimeOrderedIds(lambda: 0)
    drawn = [ids.run_id(), ids.message_id(), ids.question_id()]
    monkeypatch.undo()
    zero = "00000000-0000-7000-8000-000000000000"
    assert drawn == ["run-" + zero, "msg-" + zero, "q-" + zero]
    seeded = [TimeOrderedIds(lambda: 0, random.Random(7)).run_id() for _ in range(2)]
    assert seeded[0] == seeded[1] != "run-" + zero
