"""The ``afp`` command as a person uses it: a real process on a real database file."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
DEMO = REPO / "configs" / "demo.toml"
COMMANDS = (
    "run",
    "demo",
    "agents",
    "runs",
    "commits",
    "inbox",
    "doctor",
    "window",
    "folded",
    "checkpoint",
    "import",
)


def afp(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "afp_runtime.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=cwd,
    )


def test_run_answers_and_the_store_shows_it(tmp_path: Path) -> None:
    """`afp run` answers a message; agents, runs, commits and inbox read it back."""
    db = str(tmp_path / "afp.db")
    first = afp("run", str(DEMO), "--db", db, "--message", "Where is order 1042?", "--json")
    assert first.returncode == 0, first.stderr
    [outcome] = json.loads(first.stdout)
    assert outcome["status"] == "answered" and "1042" in outcome["finalAnswer"]
    second = afp("run", str(DEMO), "--db", db, "--message", "And order 7?", "--json")
    assert json.loads(second.stdout)[0]["turn"] == 2

    [agent] = json.loads(afp("agents", "--db", db, "--json").stdout)
    assert (agent["agentId"], agent["turn"], agent["messages"]) == ("demo", 2, 10)
    runs = json.loads(afp("runs", "demo", "--db", db, "--json").stdout)["items"]
    assert [r["status"] for r in runs] == ["answered", "answered"]
    assert [r["turn"] for r in runs] == [2, 1]  # newest first, as the API lists them
    run_id = runs[-1]["runId"]
    one = json.loads(afp("runs", "--id", run_id, "--db", db, "--json").stdout)
    assert one["runId"] == run_id

    bundles = json.loads(afp("commits", run_id, "--db", db, "--json").stdout)
    assert [b["runtimeStageId"] for b in bundles][-1] == "final#10"
    expanded = json.loads(afp("commits", run_id, "--db", db, "--json", "--expand").stdout)
    seed_history = next(w for w in expanded[0]["writes"] if w["key"] == "history")
    assert seed_history["value"] == [{"role": "user", "content": "Where is order 1042?"}]
    table = afp("commits", run_id, "--db", db)
    assert table.returncode == 0 and "tool-calls#5" in table.stdout

    inbox = json.loads(afp("inbox", "demo", "--db", db, "--json").stdout)["items"]
    assert [r["status"] for r in inbox] == ["answered", "answered"]
    doctor = afp("doctor", "--db", db)
    assert doctor.returncode == 0 and "ok" in doctor.stdout


def test_demo_continues_the_same_conversation(tmp_path: Path) -> None:
    """A second demo run continues the conversation: the turn count grows, nothing is lost."""
    db = str(tmp_path / "afp.db")
    first = afp("demo", "--db", db, "--config", str(DEMO))
    assert first.returncode == 0, first.stderr
    assert "2 turns, 10 messages" in first.stdout
    second = afp("demo", "--db", db, "--config", str(DEMO))
    assert "4 turns, 20 messages" in second.stdout
    assert "afp commits" in second.stdout  # says what to run next


def test_the_demos_hints_run_as_printed_in_a_shell_without_afp_on_its_path(
    tmp_path: Path,
) -> None:
    """In a fresh shell ``afp`` is not on PATH (the demo installs it in ``.venv``): the demo's
    ``next:`` commands name the installation's ``afp`` so that each one, pasted into such a
    shell, runs."""
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    demo = subprocess.run(
        [sys.executable, "-m", "afp_runtime.cli", "demo", "--db", "afp.db", "--config", str(DEMO)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=tmp_path,
        env=env,
    )
    assert demo.returncode == 0, demo.stderr
    hints = demo.stdout.split("next:\n", 1)[1].splitlines()
    commands = [line.split("#", 1)[0].strip() for line in hints if "--db" in line]
    assert len(commands) == 3 and not commands[0].startswith("afp ")
    for command in commands:
        ran = subprocess.run(
            ["/bin/sh", "-c", command],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            cwd=tmp_path,
            env=env,
        )
        assert ran.returncode == 0, (command, ran.stderr)


def test_missing_things_exit_1_and_unreadable_stores_exit_4(tmp_path: Path) -> None:
    """A missing run exits 1; a missing or damaged database exits 4 with a clear message."""
    db = tmp_path / "afp.db"
    assert afp("run", str(DEMO), "--db", str(db), "--message", "hi").returncode == 0
    missing = afp("commits", "run-nope", "--db", str(db))
    assert missing.returncode == 1 and "run-nope" in missing.stderr
    absent = afp("agents", "--db", str(tmp_path / "absent.db"))
    assert absent.returncode == 4 and "absent.db" in absent.stderr
    assert not (tmp_path / "absent.db").exists()
    damaged = tmp_path / "damaged.db"
    damaged.write_bytes(b"this is not a database" * 100)
    result = afp("run", str(DEMO), "--db", str(damaged), "--message", "hi")
    assert result.returncode == 4 and "not" in result.stderr
    assert damaged.read_bytes() == b"this is not a database" * 100


@pytest.mark.parametrize(
    ("body", "named"),
    [
        (
            '[[agents]]\nid = "x"\nbogus = 1\n[agents.model]\nprovider = "scripted"\nmodel = "m"\n',
            "bogus",
        ),
        (
            '[[agents]]\nid = "x"\nmaxIterations = "ten"\n[agents.model]\nprovider = "scripted"\n'
            'model = "m"\n',
            "maxIterations",
        ),
        (
            '[[agents]]\nid = "x"\n[agents.model]\nprovider = "scripted"\nmodel = "m"\n'
            'baseUrll = "http://x"\n',
            "baseUrll",
        ),
        (
            '[[agents]]\nid = "Bad Id"\n[agents.model]\nprovider = "scripted"\nmodel = "m"\n'
            'script = "afp_runtime.demo:demo_script"\n',
            "agent id",
        ),
        (
            '[[agents]]\nid = "x"\n[agents.model]\nprovider = "scripted"\nmodel = "m"\n'
            'script = "no_such_module:thing"\n',
            "agents[0].model.script",
        ),
    ],
)
def test_config_errors_name_the_key(tmp_path: Path, body: str, named: str) -> None:
    """A bad config exits 2 with a message naming the offending key."""
    config = tmp_path / "agent.toml"
    config.write_text(body)
    result = afp("run", str(config), "--db", str(tmp_path / "afp.db"), "--message", "hi")
    assert result.returncode == 2
    assert named in result.stderr


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help(command: str) -> None:
    """Every command answers --help."""
    result = afp(command, "--help")
    assert result.returncode == 0 and "usage: afp" in result.stdout


def test_demo_folds_and_recovers_the_originals(tmp_path: Path) -> None:
    """The demo folds its oldest turns; `afp folded` recovers one fold's originals."""
    db = str(tmp_path / "afp.db")
    for _ in range(4):
        assert afp("demo", "--db", db, "--config", str(DEMO)).returncode == 0
    spans = json.loads(afp("folded", "demo", "--db", db, "--json").stdout)
    assert spans and all(s["retained"] == "conversation" for s in spans)
    span = spans[0]
    result = afp("folded", "demo", span["summaryFingerprint"], "--messages", "--db", db, "--json")
    messages = json.loads(result.stdout)
    assert len(messages) == span["messageCount"]
    assert messages[0]["role"] == "user" and "order" in messages[0]["content"]
    records = json.loads(afp("window", "--agent", "demo", "--db", db, "--json").stdout)
    assert any(r["removedMessageCount"] > 0 for r in records)
    assert all(r["strategy"] == "summarize-oldest" for r in records)
    missing = afp("folded", "demo", "0" * 64, "--messages", "--db", db)
    assert missing.returncode == 1


def test_doctor_names_a_damaged_ledger_row_and_changes_nothing(tmp_path: Path) -> None:
    """docs/findings.md case 20: `afp doctor` names a bad stored ledger row; the file is
    unchanged."""
    import sqlite3

    import msgspec

    db = tmp_path / "afp.db"
    assert afp("run", str(DEMO), "--db", str(db), "--message", "hi").returncode == 0
    row = {
        "kind": "standing",
        "toolCallId": "c1",
        "standing": "maybe",
        "assertions": [],
        "declaredOn": "answer",
        "turn": 1,
        "iteration": 1,
    }
    with sqlite3.connect(db) as conn:
        conn.execute(
            "INSERT INTO ledger_rows VALUES (1, 0, 'standing', 1, ?)",
            (msgspec.msgpack.encode(row),),
        )
    before = db.read_bytes()
    result = afp("doctor", "--db", str(db), "--json")
    assert result.returncode == 4
    report = json.loads(result.stdout)
    assert report["ledgerProblems"] and "standing" in report["ledgerProblems"][0]
    assert db.read_bytes() == before


@pytest.mark.parametrize(
    ("damage", "named"),
    [
        pytest.param("DELETE FROM bodies", "which is missing", id="bodies-gone"),
        pytest.param("DELETE FROM items WHERE pos = 1", "are stored", id="an-item-gone"),
        pytest.param("UPDATE bundles SET writes = x'deadbeef'", "does not decode", id="log"),
        pytest.param("UPDATE bodies SET body = 'text'", "not bytes", id="a-body-as-text"),
        pytest.param("DROP TABLE bundles", "no such table", id="a-table-gone"),
        pytest.param("UPDATE runs SET usage = x'c1'", "usage of run", id="a-usage-cell"),
        pytest.param("UPDATE runs SET usage = 'text'", "not bytes", id="a-usage-as-text"),
    ],
)
def test_doctor_reads_what_the_readers_read(tmp_path: Path, damage: str, named: str) -> None:
    """Damage that ``integrity_check`` passes (rows gone, a log that does not decode, a body
    stored as text) is found by doctor, which reads every conversation and commit log as the
    other commands do: exit 4 naming it; the read commands meeting it say so in one line."""
    import sqlite3

    db = tmp_path / "afp.db"
    assert afp("run", str(DEMO), "--db", str(db), "--message", "hi").returncode == 0
    assert afp("doctor", "--db", str(db)).returncode == 0
    with sqlite3.connect(db) as conn:
        conn.executescript(damage)
    result = afp("doctor", "--db", str(db), "--json")
    report = json.loads(result.stdout)
    assert result.returncode == 4 and not report["healthy"]
    found = report["unreadable"] + report["damagedBodies"]
    assert found and (named in " ".join(report["unreadable"]) or report["damagedBodies"])
    for command in (
        ("checkpoint", "demo"),
        ("epochs", "demo:last"),
        ("conform", "demo:last"),
        ("runs",),
        ("inbox", "demo"),
    ):
        read = afp(*command, "--db", str(db))
        assert "Traceback" not in read.stderr and read.returncode in (0, 1, 3, 4), (command, read)


def test_served_views_conform_and_tampering_is_named(tmp_path: Path) -> None:
    """Every epoch of a real run is verified (bytes re-encoded too); tampering with one stored
    message body makes that epoch damaged, naming the index, and `afp conform` exits 3."""
    import sqlite3

    db = tmp_path / "afp.db"
    first = afp("run", str(DEMO), "--db", str(db), "--message", "Where is order 1042?", "--json")
    run_id = json.loads(first.stdout)[0]["runId"]
    reports = json.loads(afp("conform", run_id, "--wire", "--db", str(db), "--json").stdout)
    assert [r["verdict"] for r in reports] == ["verified", "verified"]
    assert all(c["status"] == "pass" for r in reports for c in r["clauses"])

    view = json.loads(afp("served", run_id, "2", "--db", str(db), "--json").stdout)
    tool_message = view["messages"]["asSent"][2]
    assert tool_message["role"] == "tool"
    again = afp("served", run_id, "2", "--db", str(db), "--json")
    assert json.loads(again.stdout) == view  # reading never changes anything
    assert afp("served", run_id, "7", "--db", str(db)).returncode == 1

    with sqlite3.connect(db) as conn:
        for fp, body in conn.execute("SELECT fp, body FROM bodies").fetchall():
            if b'"role":"tool"' in body and b"1042" in body:
                tampered = bytes(body).replace(b"1042", b"9999", 1)
                conn.execute("UPDATE bodies SET body=? WHERE fp=?", (tampered, fp))
                break
    damaged = afp("conform", run_id, "--db", str(db), "--json")
    assert damaged.returncode == 3
    verdicts = json.loads(damaged.stdout)
    assert verdicts[0]["verdict"] == "verified"  # epoch 1 never sent the tool results
    clauses = {c["clause"]: c for c in verdicts[1]["clauses"]}
    assert verdicts[1]["verdict"] == "damaged"
    assert clauses["messages.digest"]["detail"].startswith("index-2")


def test_epochs_call_receipt_and_export(tmp_path: Path) -> None:
    """`afp epochs`, `afp call`, `afp receipt` and `afp export` read what the run committed."""
    db = tmp_path / "afp.db"
    run_id = json.loads(
        afp("run", str(DEMO), "--db", str(db), "--message", "order 7?", "--json").stdout
    )[0]["runId"]
    listing = json.loads(afp("epochs", run_id, "--db", str(db), "--json").stdout)["items"]
    assert [(e["epoch"], e["agentCall"], e["outcome"]) for e in listing] == [
        (1, 1, "replied"),
        (2, 2, "replied"),
    ]
    call = json.loads(afp("call", "demo", "2", "--db", str(db), "--json").stdout)
    assert (call["runId"], call["epoch"]) == (run_id, 2)
    assert afp("call", "demo", "3", "--db", str(db)).returncode == 1
    receipt = json.loads(afp("receipt", run_id, "1", "--db", str(db)).stdout)
    assert receipt["basis"]["epoch"] == 1 and "wire" in receipt
    export = tmp_path / "run.json"
    export.write_text(afp("export", run_id, "--db", str(db)).stdout)
    from_file = afp("served", "--file", str(export), "--json")
    from_store = afp("served", run_id, "--all", "--db", str(db), "--json")
    assert json.loads(from_file.stdout) == json.loads(from_store.stdout)
    # With --file a lone positional is the epoch (the export names its run).
    one = afp("served", "--file", str(export), "2", "--json")
    assert one.returncode == 0, one.stderr
    assert json.loads(one.stdout) == json.loads(from_store.stdout)[1]
    assert afp("served", "--file", str(export), run_id, "2").returncode == 2
    # --diff reads an export as it reads the store (it used to be ignored with --file).
    diffs = [
        afp("served", *where, "--diff", "1", "2", "--json")
        for where in (("--file", str(export)), (run_id, "--db", str(db)))
    ]
    assert diffs[0].returncode == 0 and json.loads(diffs[0].stdout) == json.loads(diffs[1].stdout)
    assert afp("served", "--file", str(export), "--diff", "1", "9").returncode == 1


def test_runs_show_cost_and_findings_show_permission_decisions(tmp_path: Path) -> None:
    """A priced agent's runs carry a cost column; permission rows list by kind; a ledger with
    them is healthy to `afp doctor`."""
    (tmp_path / "gated.toml").write_text(
        """
[pricing."demo"]
input = 0.000001
output = 0.000002

[[agents]]
id = "ops"
model = {provider = "scripted", model = "demo", script = "afp_runtime.demo:demo_script"}
tools = [{ref = "afp_runtime.demo:LOOKUP_ORDER"}, {ref = "afp_runtime.demo:SHIPPING_STATUS"}]
permissions = [{tool = "lookup_order", decision = "deny", name = "no-lookups", reason = "closed"}]
""",
        encoding="utf-8",
    )
    db = str(tmp_path / "afp.db")
    ran = afp("run", str(tmp_path / "gated.toml"), "--db", db, "--message", "Where is 1042?")
    assert ran.returncode == 0, ran.stderr
    runs = afp("runs", "--db", db)
    assert "cost" in runs.stdout
    rows = json.loads(afp("findings", "ops", "--db", db, "--kind", "permission", "--json").stdout)
    assert [(r["toolName"], r["decision"], r["rule"]) for r in rows] == [
        ("lookup_order", "deny", "no-lookups"),
        ("shipping_status", "allow", "default"),
    ]
    doctor = afp("doctor", "--db", db, "--json")
    assert doctor.returncode == 0 and json.loads(doctor.stdout)["healthy"]


@pytest.mark.parametrize("timeout", ["nan", "-1", "inf"])
def test_send_checks_its_timeout_before_it_posts(tmp_path: Path, timeout: str) -> None:
    """``send --wait --timeout`` with a value that is not a number of seconds >= 0 is a usage
    error (exit 2) and posts nothing; it used to store the message and then fail."""
    db = tmp_path / "afp.db"
    assert afp("run", str(DEMO), "--db", str(db), "--message", "hi").returncode == 0
    before = afp("inbox", "demo", "--db", str(db), "--json").stdout
    result = afp("send", "demo", "again", "--wait", "--timeout", timeout, "--db", str(db))
    assert result.returncode == 2 and "--timeout" in result.stderr, result
    assert "Traceback" not in result.stderr
    assert afp("inbox", "demo", "--db", str(db), "--json").stdout == before


def test_unwritable_out_and_unreachable_api_urls_are_usage_errors(tmp_path: Path) -> None:
    """``scenario run --out`` into a folder that does not exist and ``health --api`` with a URL
    that cannot be parsed are one-line usage errors (exit 2), not tracebacks."""
    scenario = Path(__file__).parent / "scenarios" / "checkin_abandoned.json"
    out = afp("scenario", "run", str(scenario), "--out", str(tmp_path / "no" / "x.json"))
    assert out.returncode == 2 and "cannot write --out" in out.stderr, out
    api = afp("health", "--api", "http://[::1")
    assert api.returncode == 2 and "--api" in api.stderr, api
    assert "Traceback" not in out.stderr + api.stderr


def test_an_exception_with_no_rule_is_one_line_and_exit_70(tmp_path: Path) -> None:
    """A failure afp has no rule for (a bug) is named in one line with exit 70, and ``-v`` logs
    its traceback; never a bare traceback."""
    program = (
        "import sys, types\n"
        "from afp_runtime.cli import _main\n"
        "async def broken(args):\n"
        "    raise RuntimeError('the bug')\n"
        "args = types.SimpleNamespace(verbose=len(sys.argv) > 1)\n"
        "sys.exit(_main._run(broken, args))\n"
    )
    quiet = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, cwd=tmp_path
    )
    assert quiet.returncode == 70 and "Traceback" not in quiet.stderr
    assert "internal error, RuntimeError: the bug" in quiet.stderr
    loud = subprocess.run(
        [sys.executable, "-c", program, "-v"], capture_output=True, text=True, cwd=tmp_path
    )
    assert loud.returncode == 70 and "Traceback" in loud.stderr


@pytest.mark.parametrize(
    "words",
    [
        ("commits", "demo:last", "--from-seq", "99999999999999999999999"),
        ("export", "demo:last", "--from-seq", "-5"),
        ("findings", "demo", "--turn", "99999999999999999999"),
        ("demo", "--turns", "-3"),
    ],
)
def test_a_count_argument_out_of_range_is_a_usage_error(tmp_path: Path, words: tuple) -> None:
    """A count argument below 0 or beyond what a store holds is refused by argparse, exit 2,
    naming the argument (it was a traceback from SQLite, or taken silently)."""
    db = tmp_path / "afp.db"
    assert afp("run", str(DEMO), "--db", str(db), "--message", "hi").returncode == 0
    result = afp(*words, "--db", str(db))
    assert result.returncode == 2 and words[-2] in result.stderr
    assert "Traceback" not in result.stderr


def test_run_behind_a_stalled_turn_says_so_and_exits_stalled(tmp_path: Path) -> None:
    """A second ``afp run -m`` while the turn is stalled (its retry not yet due) runs nothing:
    it says the turn is stalled and the message waits, and exits 7, where it used to say
    "nothing to do" and exit 0."""
    config = tmp_path / "dead.toml"
    config.write_text(
        '[[agents]]\nid = "dead"\n[agents.model]\nprovider = "openai-compatible"\nmodel = "m"\n'
        'baseUrl = "http://127.0.0.1:1/v1"\ntimeoutS = 2\n[agents.retry]\nmaxAttempts = 1\n'
    )
    db = str(tmp_path / "afp.db")
    assert afp("run", str(config), "-m", "hi", "--db", db).returncode == 7
    again = afp("run", str(config), "-m", "hi again", "--db", db)
    assert again.returncode == 7
    assert "turn 1 is stalled (network)" in again.stdout and "waits behind it" in again.stdout
    queued = json.loads(afp("inbox", "dead", "--db", db, "--json").stdout)["items"]
    assert [m["status"] for m in queued] == ["stalled", "queued"]


def test_demo_elsewhere_names_the_missing_config_and_leaves_no_store(tmp_path: Path) -> None:
    """``afp demo`` outside the project folder (its default config is relative) says the
    config is missing, exit 2, and creates no database file; it used to leave an empty one."""
    result = afp("demo", "--db", "x.db", cwd=tmp_path)
    assert result.returncode == 2 and "cannot read config" in result.stderr
    assert list(tmp_path.iterdir()) == []
