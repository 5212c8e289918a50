"""``afp diff AGENT N [M]`` as a person runs it: a real process on a real database file holding
``tests/crossed_calls.py``'s store (calls 1-2 in turn 1, call 3 abandoned by a crash in turn 2,
calls 4-5 in its recovery run); docs/api.md#command-reference."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from afp_runtime.app import call_diff, encode_served
from afp_runtime.store.sqlite import SqliteStore

from .crossed_calls import AGENT, SECOND, crossed

MADE = "afp: agent 'support' has made calls 1 to 5"


def afp(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "afp_runtime.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture(name="db", scope="module")
def fixture_db(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, list[str]]:
    """The crossed store, written once for the module's reads, and its run ids."""
    path = tmp_path_factory.mktemp("diff") / "afp.db"
    return str(path), anyio.run(crossed, path)


async def _python_answer(path: str, n: int, m: int) -> bytes:
    store = await SqliteStore.open(Path(path), now_ms=0, read_only=True)
    try:
        return encode_served(await call_diff(store, AGENT, n, m))
    finally:
        await store.aclose()


def test_the_diff_across_turns_names_both_sides_and_shows_content_as_data(
    db: tuple[str, list[str]],
) -> None:
    """Call 5 against call 2: each side's run, turn and epoch, then what came, the markup-like
    message printed as typed."""
    path, runs = db
    done = afp("diff", AGENT, "5", "2", "--db", path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"before call 2: run {runs[0]}, turn 1, epoch 2"
    assert lines[1] == f"after  call 5: run {runs[2]}, turn 2, epoch 2"
    assert lines[2] == "epoch 2 -> 2: 3 kept, 0 left, 4 came, 0 changed"
    assert f"+ user: {SECOND}" in lines


def test_m_defaults_to_the_call_before_and_json_is_the_api_body(
    db: tuple[str, list[str]],
) -> None:
    """``afp diff support 4 --json`` compares call 3 (abandoned, in the crashed run) with call
    4, and prints exactly the bytes the API answers (the one implementation's value)."""
    path, runs = db
    done = afp("diff", AGENT, "4", "--db", path, "--json")
    assert done.returncode == 0, done.stderr
    body = json.loads(done.stdout)
    assert body["before"] == {
        "agentCall": 3,
        "runId": runs[1],
        "turn": 2,
        "epoch": 1,
        "outcome": "abandoned",
    }
    assert done.stdout.encode().rstrip(b"\n") == anyio.run(_python_answer, path, 4, 3)
    text = afp("diff", AGENT, "4", "--db", path)
    assert (
        text.stdout.splitlines()[0] == f"before call 3: run {runs[1]}, turn 2, epoch 1 (abandoned)"
    )


@pytest.mark.parametrize(
    ("args", "code", "said"),
    [
        (("support", "20"), 1, "afp: agent 'support' has made calls 1 to 5; there is no call 20"),
        (("support", "1"), 1, "afp: agent 'support' has made calls 1 to 5; there is no call 0"),
        (
            ("support", "4", "0"),
            1,
            "afp: agent 'support' has made calls 1 to 5; there is no call 0",
        ),
        (("nobody", "2"), 1, "afp: no agent 'nobody' in "),
        (("support", "two"), 2, "argument n: invalid int value: 'two'"),
        (("support", "2", "one"), 2, "argument m: invalid int value: 'one'"),
    ],
)
def test_what_does_not_exist_exits_1_naming_what_does(
    db: tuple[str, list[str]], args: tuple[str, ...], code: int, said: str
) -> None:
    """A call past the agent's calls, N=1 without M, call 0 or an unknown agent exits 1 naming
    what exists; text for a number is a usage error (exit 2)."""
    path, _ = db
    done = afp("diff", *args, "--db", path)
    assert (done.returncode, done.stdout) == (code, "")
    assert said in done.stderr
