"""``afp recall AGENT QUERY`` as a person runs it: a real process on a real database file that a
folding agent wrote (docs/recall.md#for-people, docs/api.md#the-afp-command)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import anyio

from tests.api.conftest import Api
from tests.api.test_recall import HOSTILE, desks


def afp(*args: str) -> subprocess.CompletedProcess[bytes]:
    # Wide enough that no content cell folds, so a whole content can be looked for.
    return subprocess.run(
        [sys.executable, "-m", "afp_runtime.cli", *args],
        capture_output=True,
        timeout=120,
        check=False,
        env={**os.environ, "COLUMNS": "1000"},
    )


async def run(*args: str) -> subprocess.CompletedProcess[bytes]:
    return await anyio.to_thread.run_sync(lambda: afp(*args))


async def test_json_is_the_api_body_and_the_table_shows_the_original(tmp_path: Path) -> None:
    """``--json`` prints ``GET …/recall``'s body byte for byte (time range and limit too); the
    table shows when (UTC), role, source and the content verbatim, with its escape and bidi
    characters made visible rather than sent to the terminal."""
    api = Api(tmp_path / "afp.db")
    async with desks(api) as (_, client):
        params = {"q": "zanzibar 7781"}
        body = (await client.get("/v1/agents/keep/recall", params=params)).content
        ranged = {
            "q": "order",
            "since": "2025-06-16",
            "until": "2025-06-18T00:00:00Z",
            "limit": "3",
        }
        ranged_body = (await client.get("/v1/agents/keep/recall", params=ranged)).content
        fold = (await client.get("/v1/agents/keep/folded")).json()["items"][0]
    db = str(api.path)
    as_json = await run("recall", "keep", "zanzibar 7781", "--json", "--db", db)
    assert as_json.returncode == 0, as_json.stderr
    assert as_json.stdout == body + b"\n"
    assert json.loads(as_json.stdout)["items"][0]["content"] == HOSTILE
    in_range = await run(
        "recall", "keep", "order", "--since", "2025-06-16", "--until", "2025-06-18T00:00:00Z",
        "--limit", "3", "--json", "--db", db,
    )  # fmt: skip
    assert in_range.stdout == ranged_body + b"\n"
    assert b'"items":[' in ranged_body and ranged_body.count(b'"saidAtMs"') == 3
    shown = await run("recall", "keep", "zanzibar", "--db", db)
    assert shown.returncode == 0, shown.stderr
    text = shown.stdout.decode()
    assert "\x1b" not in text and "\u202e" not in text
    assert "␛[31m" in text and "⟨U+202E⟩evil" in text
    assert '<script>alert(1)</script><img src=x onerror="alert(2)">' in text
    said = json.loads(body)["items"][0]["saidAtMs"]
    assert datetime.fromtimestamp(said / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S") in text
    assert f"fold {fold['summaryFingerprint'][:12]}" in text
    none = await run("recall", "keep", "walrus", "--db", db)
    assert (
        none.returncode == 0 and "nothing that left keep's window matches" in none.stdout.decode()
    )


async def test_a_refused_query_is_usage_and_an_unknown_agent_missing(tmp_path: Path) -> None:
    """A query the rule refuses (a NUL, 100,000 characters, no word, a bad time, a limit past
    50) exits 2 naming why; an agent the store does not know exits 1 naming it; FTS syntax is
    searched as words (exit 0)."""
    api = Api(tmp_path / "afp.db")
    async with desks(api):
        pass
    db = str(api.path)
    refused = {
        "x" * 100_000: "at most 1000",
        '"*"': "no word",
        "\x01\x02": "no word",
    }
    for query, why in refused.items():
        done = await run("recall", "keep", query, "--db", db)
        assert done.returncode == 2, (query[:20], done.stderr)
        assert why in done.stderr.decode() and "QUERY refused" in done.stderr.decode()
    for option, value, why in (
        ("--since", "April", "--since refused"),
        ("--limit", "51", "at most 50"),
        ("--limit", "0", "at least 1"),
    ):
        done = await run("recall", "keep", "order", option, value, "--db", db)
        assert done.returncode == 2, done.stderr
        assert why in done.stderr.decode()
    for syntax in ("NEAR(", '"order', "order*", "a OR b NOT c"):
        done = await run("recall", "keep", syntax, "--db", db)
        assert done.returncode == 0, (syntax, done.stderr)
    missing = await run("recall", "nobody", "order", "--db", db)
    assert missing.returncode == 1
    assert "no agent 'nobody'" in missing.stderr.decode()
