"""A host killed with SIGKILL while MCP calls are in flight, then started again
(docs/mcp.md#annotations-and-durability): a call the server does not say is idempotent is
answered ``interrupted`` and never runs twice; one declared idempotent runs again."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from afp_runtime.tools import interrupted_text
from tests.host.processes import Served, until
from tests.mcp.conftest import LAB, Lab

HERE = Path(__file__).resolve().parent

AGENTS = """
[[agents]]
id = "{agent}"
maxIterations = 3
[agents.model]
provider = "scripted"
model = "lab-script"
script = "lab_script:slow_then_answer"
[[agents.mcp]]
name = "lab"
command = "{python}"
args = ["{lab}"]
env = {{ LAB_NOTES = "{notes}", LAB_RELEASE = "{release}" }}
{options}
"""


def _agents(tmp_path: Path, lab: Lab) -> Path:
    text = "".join(
        AGENTS.format(
            agent=agent,
            python=sys.executable,
            lab=LAB,
            notes=lab.notes,
            release=lab.release,
            options=options,
        )
        for agent, options in (
            ("once", ""),
            ("again", "[agents.mcp.tools.slow]\nidempotent = true"),
        )
    )
    path = tmp_path / "agents.toml"
    path.write_text(text, encoding="utf-8")
    return path


def _answer(served: Served, agent: str, message_id: str) -> str | None:
    row = served.client.get(f"/v1/agents/{agent}/inbox/{message_id}").json()
    return row.get("answer") if row.get("status") == "answered" else None


def test_a_sigkill_mid_call_keeps_the_journal_rules(tmp_path: Path, lab: Lab) -> None:
    """Both agents' calls are in flight when the host is killed; after the restart the
    not-idempotent one is answered ``interrupted`` (started once), the idempotent one ran
    again (started twice) and its result is the answer."""
    agents = _agents(tmp_path, lab)
    path = os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])
    env = {**os.environ, "PYTHONPATH": path}
    env.pop("AFP_API_TOKEN", None)
    db = str(tmp_path / "afp.db")
    log = tmp_path / "serve.log"
    first = Served(agents, db, "h1", env, log).wait_ready()
    try:
        ids = {
            agent: first.client.post(f"/v1/agents/{agent}/inbox", json={"text": agent}).json()[
                "messageId"
            ]
            for agent in ("once", "again")
        }
        until(
            lambda: {"slow started once", "slow started again"} <= set(lab.lines_now()),
            30,
            lambda: f"the calls did not start: {lab.lines_now()}",
        )
    finally:
        first.end()  # SIGKILL
    lab.release.touch()
    second = Served(agents, db, "h1", env, log).wait_ready()
    try:
        until(
            lambda: all(_answer(second, agent, ids[agent]) for agent in ids),
            30,
            lambda: log.read_text(encoding="utf-8")[-3000:],
        )
        once, again = (_answer(second, agent, ids[agent]) for agent in ("once", "again"))
    finally:
        second.end()
    notes = lab.lines_now()
    assert notes.count("slow started once") == 1 and notes.count("slow started again") == 2
    assert once == f"said: {interrupted_text('lab_slow')}"
    assert again == 'said: {"result":"slow done again"}'
