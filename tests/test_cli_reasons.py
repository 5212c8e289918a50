"""Codes in words on the command line (docs/api.md#reasons-in-words): `afp window`, `afp epochs`,
`afp served` and `afp call` print each refusal reason and gap they show with its sentence from
the one table, beside the code, and their ``--json`` carries the API's ``reasons``."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from afp_runtime.app import reason_text

REPO = Path(__file__).resolve().parent.parent
DEMO = REPO / "configs" / "demo.toml"


def afp(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    # Wide enough that the table never folds a refusal across lines.
    env = {**os.environ, "COLUMNS": "240"}
    done = subprocess.run(
        [sys.executable, "-m", "afp_runtime.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
        cwd=cwd,
    )
    assert done.returncode == 0, done.stderr
    return done


def desk(folder: Path) -> str:
    """The demo agent with a window that engages on every visit and keeps one turn, after
    two short turns: its records refuse with ``replacement-not-smaller`` (the summary of the
    first short turn is longer than it is), ``current-request`` and ``inside-keep-window``, as in
    issue 38. Returns the store's path."""
    config = folder / "desk.toml"
    text = DEMO.read_text(encoding="utf-8")
    text = text.replace("thresholdTokens = 400", "thresholdTokens = 1")
    config.write_text(text.replace("keepRecentTurns = 3", "keepRecentTurns = 1"), "utf-8")
    db = str(folder / "afp.db")
    for message in ("hi", "Where is order 1042?"):
        afp("run", str(config), "--db", db, "--message", message)
    return db


@pytest.fixture(name="db", scope="module")
def fixture_db(tmp_path_factory: pytest.TempPathFactory) -> str:
    return desk(tmp_path_factory.mktemp("desk"))


def _sentence_beside(stdout: str, code: str) -> None:
    """``code`` is in the output, and a legend line holds it with its whole sentence."""
    text = reason_text(code)
    assert text is not None
    lines = [line.strip() for line in stdout.splitlines()]
    assert any(line.startswith(code) and line.endswith(text) for line in lines), (code, stdout)


def test_window_prints_each_refusal_reason_with_its_sentence(db: str) -> None:
    """The table keeps the codes and positions of issue 38; under it each reason that
    appears is named once with its sentence, and the positions are explained."""
    shown = afp("window", "--agent", "demo", "--db", db).stdout
    assert re.search(r"replacement-not-smaller\(0,0\), current-request\(\d+,\d+\)", shown)
    for code in ("replacement-not-smaller", "current-request", "inside-keep-window"):
        _sentence_beside(shown, code)
        assert shown.count(f"  {code}  ") == 1  # once in the legend, however many rows
    assert "reason(turn,message)" in shown


def test_window_json_records_carry_the_reasons_of_their_refusals(db: str) -> None:
    records = json.loads(afp("window", "--agent", "demo", "--db", db, "--json").stdout)
    assert records
    for record in records:
        codes = [r["reason"] for r in record["refusals"]]
        assert record["reasons"] == {code: reason_text(code) for code in codes}
    assert "replacement-not-smaller" in records[-1]["reasons"]


def test_epochs_served_and_call_print_the_gap_with_its_sentence(db: str) -> None:
    """Every call's ``provider-defaults`` gap is explained where the CLI shows it, once under
    all the views shown."""
    for command in (
        ("epochs", "demo:last"),
        ("served", "demo:last", "1"),
        ("served", "demo:last"),
        ("call", "demo", "1"),
    ):
        shown = afp(*command, "--db", db).stdout
        assert "provider-defaults" in shown
        _sentence_beside(shown, "provider-defaults")
        assert shown.count("what the codes mean:") == 1, command


def test_epochs_served_and_call_json_carry_the_reasons_of_their_gaps(db: str) -> None:
    run_id = "demo:last"
    epochs = json.loads(afp("epochs", run_id, "--db", db, "--json").stdout)["items"]
    view = json.loads(afp("served", run_id, "1", "--db", db, "--json").stdout)
    views = json.loads(afp("served", run_id, "--db", db, "--json").stdout)
    call = json.loads(afp("call", "demo", "1", "--db", db, "--json").stdout)
    explained = {"provider-defaults": reason_text("provider-defaults")}
    assert [e["reasons"] for e in epochs] == [explained] * len(epochs)
    for served in (view, *views, call["view"]):
        assert served["reasons"] == {g["gap"]: reason_text(g["gap"]) for g in served["gaps"]}
        assert served["reasons"] == explained


# A model that calls a tool its agent does not have, then gives up.
CLUMSY = """
from afp_runtime.testing import answer, call, tool_reply


def clumsy(request, number):
    if request.messages[-1].role == "user":
        return tool_reply(call("c1", "no_such_tool"))
    return answer("sorry")
"""

CLUMSY_AGENT = """
[[agents]]
id = "clumsy"
[agents.model]
provider = "scripted"
model = "clumsy-scripted"
script = "clumsy_tools:clumsy"
"""


def test_commits_print_refusal_reasons_and_unrun_tool_statuses_in_words(
    db: str, tmp_path: Path
) -> None:
    """`afp commits` explains the refusal reasons of the window records it shows, and a tool
    call that never ran (``unknown-tool``), under its table."""
    shown = afp("commits", "demo:last", "--db", db).stdout
    _sentence_beside(shown, "replacement-not-smaller")
    (tmp_path / "clumsy_tools.py").write_text(CLUMSY, encoding="utf-8")
    (tmp_path / "clumsy.toml").write_text(CLUMSY_AGENT, encoding="utf-8")
    afp("run", "clumsy.toml", "--db", "afp.db", "--message", "hello", cwd=tmp_path)
    shown = afp("commits", "clumsy:last", "--db", "afp.db", cwd=tmp_path).stdout
    assert "unknown-tool" in shown
    _sentence_beside(shown, "unknown-tool")
    assert "  ok  " not in shown  # a tool call that ran is not a reason
