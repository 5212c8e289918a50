"""The inspector's sessions (docs/inspector.md#signing-in): signed with a secret of the serving
process, so the token file cannot forge one; new on every sign-in; revoked by ``POST /logout``;
ended by their maximum age on the host's clock."""

from __future__ import annotations

import hashlib
import hmac
from pathlib import Path

import anyio
import httpx

from afp_runtime.api.inspector.session import COOKIE, SESSION_MAX_AGE_S, Sessions
from afp_runtime.api.principals import Principals, add_token, parse_tokens
from afp_runtime.testing import answer
from tests.api.conftest import Api, agent

TOKEN = "s" * 40


def _value(set_cookie: str) -> str:
    return set_cookie.split(";", 1)[0].split("=", 1)[1]


def _carry(client: httpx.AsyncClient, value: str) -> None:
    """From now on the client sends exactly this session (whatever the server set before)."""
    client.cookies.clear()
    client.cookies.set(COOKIE, value)


async def test_a_cookie_made_from_the_token_files_hash_opens_nothing(
    api: Api, tmp_path: Path
) -> None:
    """What the probe did: the HMAC of the old label keyed by the hash the token file holds,
    for an admin, is refused like any stranger's cookie."""
    tokens = tmp_path / "afp.db.tokens"

    def write() -> str:
        add_token(tokens, "root", admin=True)
        return tokens.read_text(encoding="utf-8")

    text = await anyio.to_thread.run_sync(write)
    principals = parse_tokens(text, source=str(tokens))
    digest = bytes.fromhex(text.split()[2])
    forged = hmac.new(digest, b"afp inspector session v1", hashlib.sha256).hexdigest()
    async with api.running(agent([answer("hi")]), principals=principals) as (_, client):
        _carry(client, forged)
        page = await client.get("/")
        form = await client.post("/logout")
    assert page.status_code == 303 and page.headers["location"] == "/login"
    assert form.status_code == 401


async def test_each_sign_in_is_a_new_session_with_a_max_age(api: Api) -> None:
    async with api.running(agent([answer("hi")]), token=TOKEN) as (_, client):
        first = (await client.post("/login", data={"token": TOKEN})).headers["set-cookie"]
        second = (await client.post("/login", data={"token": TOKEN})).headers["set-cookie"]
    assert _value(first) != _value(second)
    assert f"Max-Age={SESSION_MAX_AGE_S}" in first


async def test_a_session_replayed_after_logout_is_refused(api: Api) -> None:
    """Logout revokes the session on the server: a copy of the cookie kept from before opens
    no page; another sign-in of the same principal still works."""
    async with api.running(agent([answer("hi")]), token=TOKEN) as (_, client):
        kept = _value((await client.post("/login", data={"token": TOKEN})).headers["set-cookie"])
        other = _value((await client.post("/login", data={"token": TOKEN})).headers["set-cookie"])
        _carry(client, kept)
        before = await client.get("/")
        out = await client.post("/logout")
        _carry(client, kept)
        replayed = await client.get("/")
        replayed_form = await client.post("/logout")
        _carry(client, other)
        still = await client.get("/")
    assert before.status_code == 200
    assert out.status_code == 303 and "Max-Age=0" in out.headers["set-cookie"]
    assert replayed.status_code == 303 and replayed.headers["location"] == "/login"
    assert replayed_form.status_code == 401
    assert still.status_code == 200


async def test_a_session_ends_at_its_max_age_on_the_hosts_clock(api: Api) -> None:
    async with api.running(agent([answer("hi")]), token=TOKEN) as (_, client):
        await client.post("/login", data={"token": TOKEN})
        api.clock.advance(SESSION_MAX_AGE_S - 1)
        late = await client.get("/")
        api.clock.advance(1)
        expired = await client.get("/")
    assert late.status_code == 200
    assert expired.status_code == 303 and expired.headers["location"] == "/login"


async def test_a_restart_ends_every_session(api: Api) -> None:
    """The signing secret lives in the serving process: an app made anew (a restart) refuses
    the sessions of the one before."""
    async with api.host(agent([answer("hi")])) as host:
        async with api.client(host, token=TOKEN) as client:
            kept = _value(
                (await client.post("/login", data={"token": TOKEN})).headers["set-cookie"]
            )
        async with api.client(host, token=TOKEN) as restarted:
            _carry(restarted, kept)
            refused = await restarted.get("/")
    assert refused.status_code == 303 and refused.headers["location"] == "/login"


async def test_a_session_is_bound_to_the_token_name_and_role(tmp_path: Path) -> None:
    """A session names its principal by the token's hash, name and role: once the file gives
    the name another token, or the token another role, the old session opens nothing."""
    tokens = tmp_path / "afp.db.tokens"

    def write() -> tuple[str, str]:
        token = add_token(tokens, "ana", admin=False)
        return token, tokens.read_text(encoding="utf-8")

    token, text = await anyio.to_thread.run_sync(write)
    digest = text.split()[2]
    before = parse_tokens(text, source="before")
    promoted = parse_tokens(text.replace(" user ", " admin "), source="promoted")
    replaced = parse_tokens(text.replace(digest, "0" * 64), source="replaced")
    [(ana, _)] = before.entries()

    def sessions(principals: Principals) -> Sessions:
        return Sessions(principals, now_ms=lambda: 1_000, secret=b"k" * 32)

    cookie = sessions(before).cookie(ana)
    header = cookie.split(";", 1)[0]
    assert token not in cookie and digest not in cookie
    assert sessions(before).signed_in(header) == ana
    assert sessions(promoted).signed_in(header) is None
    assert sessions(replaced).signed_in(header) is None
