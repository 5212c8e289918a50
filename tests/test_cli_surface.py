"""The ``afp`` command as a person lives in it: content shown verbatim, ids a person can type,
exit codes that tell, one behaviour for every command, and a start that loads only what the
command needs. Real processes on real database files."""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

import afp_runtime.store.sqlite as _sqlite_backend
from afp_runtime.cli._parser import build_parser, command_named
from afp_runtime.cli._show import visible
from afp_runtime.store import shown_location

REPO = Path(__file__).resolve().parent.parent
DEMO = REPO / "configs" / "demo.toml"

# Markup-like text, ANSI colour, a bell, an emoji code and a right-to-left override.
NASTY = "x[bold]y[/bold] [/] \x1b[31mR\x1b[0m\x07 :smile: \u202eZ"

ECHO_TOOLS = '''
import afp_runtime as afp
from afp_runtime.testing import answer, call, tool_reply


@afp.tool(idempotent=True)
def echo(text: str) -> str:
    """Say it back."""
    return "tool saw: " + text


@afp.tool
def confirm(text: str, ctx: afp.ToolContext) -> str:
    """Ask the person first."""
    ctx.ask_person("ok to use " + text + "?")


def script(request, number):
    person = [m for m in request.messages if m.role == "user"][-1].content
    last = request.messages[-1]
    if last.role == "user":
        name = "confirm" if person.startswith("ask ") else "echo"
        return tool_reply(call("c%d" % number, name, text=person))
    return answer("you said: " + person)
'''

ECHO_AGENT = """
[[agents]]
id = "echo"
[agents.model]
provider = "scripted"
model = "m"
script = "echo_tools:script"
[[agents.tools]]
ref = "echo_tools:echo"
[[agents.tools]]
ref = "echo_tools:confirm"
"""


def afp(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None):
    return subprocess.run(
        [sys.executable, "-m", "afp_runtime.cli", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=cwd,
        env={**os.environ, **(env or {})},
    )


@pytest.fixture(name="echo")
def fixture_echo(tmp_path: Path) -> Path:
    """An agents file for the echo agent, its tools beside it."""
    (tmp_path / "echo_tools.py").write_text(ECHO_TOOLS, encoding="utf-8")
    config = tmp_path / "agents.toml"
    config.write_text(ECHO_AGENT, encoding="utf-8")
    return config


def _no_raw_controls(text: str) -> None:
    assert "\x1b" not in text and "\x07" not in text and "\u202e" not in text


class TestVerbatim:
    def test_visible_makes_controls_and_overrides_visible(self) -> None:
        """ESC, BEL and bidi overrides become pictures; newlines stay; nothing is dropped."""
        assert visible("a\x1b[31mb\x07\nc\u202ed") == "a␛[31mb␇\nc⟨U+202E⟩d"
        assert visible("tab\there", keep_lines=False) == "tab␉here"

    def test_every_command_that_shows_content_shows_it_exactly(
        self, echo: Path, tmp_path: Path
    ) -> None:
        """Markup, ANSI, controls and emoji codes from a conversation, a tool and a question
        come out as data through run, inbox, commits, served, call, questions, agent and
        findings; nothing crashes, nothing is interpreted, no raw control reaches stdout."""
        db = str(tmp_path / "afp.db")
        shown = visible(NASTY)
        ran = afp("run", str(echo), "--db", db, "-m", NASTY)
        assert ran.returncode == 0, ran.stderr
        assert f"you said: {shown}" in ran.stdout
        run_id = json.loads(afp("runs", "echo", "--db", db, "--json").stdout)["items"][0]["runId"]
        outputs = {
            "inbox": afp("inbox", "echo", "--db", db),
            "commits": afp("commits", run_id, "--db", db, "--expand"),
            "served": afp("served", run_id, "2", "--db", db),
            "call": afp("call", "echo", "2", "--db", db),
            "diff": afp("served", run_id, "--diff", "1", "2", "--db", db),
        }
        asked = afp("run", str(echo), "--db", db, "-m", "ask " + NASTY)
        assert asked.returncode == 6, asked.stderr
        outputs["questions"] = afp("questions", "echo", "--db", db)
        outputs["agent"] = afp("agent", "echo", "--db", db)
        for name, done in outputs.items():
            assert done.returncode == 0, (name, done.stderr)
            _no_raw_controls(done.stdout)
            compact = re.sub(r"\s*│\s*", " ", done.stdout)
            assert "x[bold]y[/bold] [/] ␛[31mR␛[0m␇ :smile:" in compact, (name, done.stdout)
        assert "tool saw: " in outputs["served"].stdout

    def test_error_messages_keep_their_brackets(self, tmp_path: Path) -> None:
        """An error naming a pattern shows it whole: ``[a-z0-9]`` is not markup."""
        config = tmp_path / "bad.toml"
        config.write_text(
            ECHO_AGENT.replace('id = "echo"', 'id = "Bad Id"').split("[[agents.tools]]")[0],
            encoding="utf-8",
        )
        (tmp_path / "echo_tools.py").write_text(ECHO_TOOLS, encoding="utf-8")
        done = afp("run", str(config), "--db", str(tmp_path / "afp.db"), "-m", "hi")
        assert done.returncode == 2
        assert "^[a-z0-9][a-z0-9._-]{0,63}$" in done.stderr
        assert "agents[0].id" in done.stderr

    def test_the_folded_summary_prefix_is_shown(self, tmp_path: Path) -> None:
        """The runtime's own ``[afp:folded-summary]`` prefix survives ``afp folded --messages``
        and ``afp served``."""
        db = str(tmp_path / "afp.db")
        assert afp("demo", "--db", db, "--config", str(DEMO), "--turns", "8").returncode == 0
        spans = json.loads(afp("folded", "demo", "--db", db, "--json").stdout)
        latest = spans[-1]["summaryFingerprint"]
        originals = afp("folded", "demo", latest[:12], "--messages", "--db", db)
        assert originals.returncode == 0, originals.stderr
        assert "[afp:folded-summary]" in originals.stdout


class TestIds:
    def test_prefixes_and_agent_last_name_runs(self, echo: Path, tmp_path: Path) -> None:
        """A unique prefix (with or without ``run-``) and ``AGENT:last`` name a run; the table
        shows prefixes the commands take back."""
        db = str(tmp_path / "afp.db")
        for text in ("one", "two"):
            assert afp("run", str(echo), "--db", db, "-m", text).returncode == 0
        runs = json.loads(afp("runs", "--db", db, "--json").stdout)["items"]
        newest = runs[0]["runId"]
        table = afp("runs", "--db", db).stdout
        shown = [s for s in re.findall(r"run-[0-9a-f-]+", table)]
        assert len(shown) == 2 and all(len(s) < len(newest) for s in shown)
        by_table = json.loads(afp("runs", "--id", shown[0], "--db", db, "--json").stdout)
        assert by_table["runId"] == newest
        for name in (newest, shown[0], shown[0].removeprefix("run-"), "echo:last"):
            done = afp("epochs", name, "--db", db, "--json")
            assert done.returncode == 0, (name, done.stderr)
            assert (
                json.loads(afp("runs", "--id", name, "--db", db, "--json").stdout)["runId"]
                == newest
            )

    def test_an_ambiguous_prefix_lists_the_candidates(self, echo: Path, tmp_path: Path) -> None:
        """A prefix naming several runs is a usage error (exit 2) that lists them."""
        db = str(tmp_path / "afp.db")
        for text in ("one", "two"):
            afp("run", str(echo), "--db", db, "-m", text)
        runs = [r["runId"] for r in json.loads(afp("runs", "--db", db, "--json").stdout)["items"]]
        done = afp("commits", "run-", "--db", db)
        assert done.returncode == 2
        assert "names 2 runs" in done.stderr and all(r in done.stderr for r in runs)
        assert afp("commits", "run-ffff", "--db", db).returncode == 1

    def test_questions_and_folds_take_prefixes(self, echo: Path, tmp_path: Path) -> None:
        """``afp answer`` takes a question id prefix; ``afp folded`` a fingerprint prefix."""
        db = str(tmp_path / "afp.db")
        assert afp("run", str(echo), "--db", db, "-m", "ask me").returncode == 6
        [question] = json.loads(afp("questions", "echo", "--db", db, "--json").stdout)["items"]
        done = afp("answer", "echo", question["questionId"][:3], "yes", "--db", db)
        assert done.returncode == 0, done.stderr
        assert f"{question['questionId']} answered" in done.stdout


class TestExitCodes:
    def test_run_exits_by_how_the_turn_stopped(self, echo: Path, tmp_path: Path) -> None:
        """answered 0, paused 6, held 8; --json rows always carry errorKind and error."""
        db = str(tmp_path / "afp.db")
        answered = afp("run", str(echo), "--db", db, "-m", "hi", "--json")
        assert answered.returncode == 0
        [row] = json.loads(answered.stdout)
        assert (row["errorKind"], row["error"]) == (None, None)
        assert afp("run", str(echo), "--db", db, "-m", "ask hi").returncode == 6
        held_dir = tmp_path / "held"
        held_dir.mkdir()
        (held_dir / "empty_script.py").write_text("SCRIPT = []\n", encoding="utf-8")
        (held_dir / "agents.toml").write_text(
            '[[agents]]\nid = "quiet"\n[agents.model]\nprovider = "scripted"\nmodel = "m"\n'
            'script = "empty_script:SCRIPT"\n',
            encoding="utf-8",
        )
        held = afp("run", str(held_dir / "agents.toml"), "--db", db, "-m", "hi", "--json")
        assert held.returncode == 8, held.stderr
        [row] = json.loads(held.stdout)
        assert (row["status"], row["errorKind"]) == ("held", "script-exhausted")
        assert "no reply left" in row["error"]

    def test_send_wait_with_no_host_says_so_at_once(self, echo: Path, tmp_path: Path) -> None:
        """``afp send --wait`` when no host holds the agent exits 4 at once, storing nothing."""
        db = str(tmp_path / "afp.db")
        afp("run", str(echo), "--db", db, "-m", "hi")
        started = time.monotonic()
        done = afp("send", "echo", "again", "--wait", "--db", db)
        assert done.returncode == 4
        assert "no host holds agent 'echo'" in done.stderr
        assert time.monotonic() - started < 20
        inbox = json.loads(afp("inbox", "echo", "--db", db, "--json").stdout)["items"]
        assert [m["text"] for m in inbox] == ["hi"]


class TestOneBehaviour:
    @pytest.mark.parametrize(
        "command",
        [
            ["runs", "nobody"],
            ["inbox", "nobody"],
            ["window", "--agent", "nobody"],
            ["call", "nobody", "1"],
            ["questions", "nobody"],
            ["folded", "nobody"],
            ["findings", "nobody"],
            ["checkpoint", "nobody"],
            ["agent", "nobody"],
            ["send", "nobody", "hi"],
            ["answer", "nobody", "q-1", "x"],
        ],
        ids=lambda c: c[0],
    )
    def test_an_unknown_agent_is_exit_1_everywhere(
        self, command: list[str], echo: Path, tmp_path: Path
    ) -> None:
        """Every command naming an agent that does not exist exits 1, saying so."""
        db = str(tmp_path / "afp.db")
        afp("run", str(echo), "--db", db, "-m", "hi")
        done = afp(*command, "--db", db)
        assert done.returncode == 1, (command, done.stdout, done.stderr)
        assert "no agent 'nobody'" in done.stderr

    def test_tables_and_json_list_in_the_same_order(self, echo: Path, tmp_path: Path) -> None:
        """``afp runs`` shows newest first in both forms."""
        db = str(tmp_path / "afp.db")
        for text in ("one", "two", "three"):
            afp("run", str(echo), "--db", db, "-m", text)
        listed = [r["runId"] for r in json.loads(afp("runs", "--db", db, "--json").stdout)["items"]]
        shown = re.findall(r"run-[0-9a-f-]+", afp("runs", "--db", db).stdout)
        assert [full for full in listed] == [
            next(r for r in listed if r.startswith(s)) for s in shown
        ]

    def test_an_empty_result_says_so(self, echo: Path, tmp_path: Path) -> None:
        """No open questions, no folds: a sentence, not an empty table."""
        db = str(tmp_path / "afp.db")
        afp("run", str(echo), "--db", db, "-m", "hi")
        assert "has no open questions" in afp("questions", "echo", "--db", db).stdout
        assert "has no folded spans" in afp("folded", "echo", "--db", db).stdout

    def test_version(self) -> None:
        """``afp --version`` names the package version."""
        done = afp("--version")
        assert done.returncode == 0 and re.fullmatch(r"afp \d+\.\d+\.\d+\n", done.stdout)

    def test_diff_is_readable_and_has_a_json_form(self, echo: Path, tmp_path: Path) -> None:
        """``afp served RUN --diff A B`` says what entered and left; ``--json`` the same."""
        db = str(tmp_path / "afp.db")
        afp("run", str(echo), "--db", db, "-m", "hello")
        text = afp("served", "echo:last", "--diff", "1", "2", "--db", db)
        assert text.returncode == 0, text.stderr
        assert "epoch 1 -> 2: 1 kept, 0 left, 2 came, 0 changed" in text.stdout
        assert "+ tool: tool saw: hello" in text.stdout
        body = json.loads(
            afp("served", "echo:last", "--diff", "1", "2", "--db", db, "--json").stdout
        )
        assert (body["before"], body["after"], body["kept"]) == (1, 2, 1)
        assert [m["role"] for m in body["added"]] == ["assistant", "tool"]

    def test_run_refuses_duplicate_agent_ids(self, echo: Path, tmp_path: Path) -> None:
        """Two agents with one id are refused by ``afp run`` too, naming the key."""
        echo.write_text(ECHO_AGENT + ECHO_AGENT.split("[[agents.tools]]")[0], encoding="utf-8")
        done = afp("run", str(echo), "--db", str(tmp_path / "afp.db"), "-m", "hi")
        assert done.returncode == 2
        assert "agents[1].id 'echo' is already the id of agents[0]" in done.stderr

    def test_errors_name_the_whole_key_path(self, echo: Path, tmp_path: Path) -> None:
        """An invalid value names ``agents[0].maxIterations``, not just ``maxIterations``."""
        echo.write_text(ECHO_AGENT.replace('id = "echo"', 'id = "echo"\nmaxIterations = 0'))
        done = afp("run", str(echo), "--db", str(tmp_path / "afp.db"), "-m", "hi")
        assert done.returncode == 2
        assert "agents[0].maxIterations" in done.stderr


HEAVY = ("litestar", "uvicorn", "httpx", "afp_runtime.loop", "afp_runtime.time")


@pytest.mark.parametrize("argv", [["--help"], ["runs"], ["inbox", "echo"], ["epochs", "echo:last"]])
def test_help_and_reads_load_only_what_they_need(
    argv: list[str], echo: Path, tmp_path: Path
) -> None:
    """``afp --help`` and read commands import no HTTP stack and no loop."""
    db = str(tmp_path / "afp.db")
    afp("run", str(echo), "--db", db, "-m", "hi")
    extra = [] if argv == ["--help"] else ["--db", db]
    probe = (
        "import sys, json\nfrom afp_runtime.cli import main\n"
        f"try:\n    main({[*argv, *extra]!r})\nexcept SystemExit:\n    pass\n"
        f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]), file=sys.stderr)"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=False
    )
    loaded = json.loads(done.stderr.strip().splitlines()[-1])
    assert loaded == [], (argv, loaded)


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    actions = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(actions[0].choices) if actions else {}


def test_a_parser_built_for_one_command_parses_it_as_the_full_parser_does() -> None:
    """Building only the command asked for leaves none of its options or help out."""
    full = _subcommands(build_parser())
    assert len(full) > 20
    for name, whole in full.items():
        alone = _subcommands(build_parser(name))
        assert list(alone) == [name]
        assert alone[name].format_help() == whole.format_help(), name
    assert command_named(["--log-format", "json", "-v", "runs", "--db", "x"]) == "runs"
    assert command_named(["--", "runs"]) is None


def test_a_word_naming_no_command_lists_every_command() -> None:
    """An unknown command's error names all the commands, not an empty choice."""
    probe = "from afp_runtime.cli import main\nmain(['nope'])"
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 2
    assert "'runs'" in done.stderr and "'serve'" in done.stderr and "'scenario'" in done.stderr


def test_the_store_comes_from_afp_db_and_migrate_reports_its_version(
    echo: Path, tmp_path: Path
) -> None:
    """Without --db every command uses AFP_DB; afp migrate prints the schema it applied."""
    db = tmp_path / "from-env.db"
    env = {**os.environ, "AFP_DB": str(db)}

    def afp_in_env(*argv: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "afp_runtime.cli", *argv]
        return subprocess.run(
            command, capture_output=True, text=True, timeout=60, check=False, env=env, cwd=tmp_path
        )

    done = afp_in_env("migrate", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["schemaVersion"] == _sqlite_backend.SCHEMA_VERSION
    assert Path(report["store"]).resolve() == db.resolve() and db.exists()
    listed = afp_in_env("runs")
    assert listed.returncode == 0 and "no runs" in listed.stdout.lower(), listed


def test_a_url_password_is_never_shown() -> None:
    """shown_location hides a URL's password, in its user part and in a password parameter."""
    assert shown_location("postgresql://afp:s3cret@db.example:5432/afp") == (
        "postgresql://afp:***@db.example:5432/afp"
    )
    assert shown_location("postgresql://db/afp?user=afp&password=s3cret&x=1") == (
        "postgresql://db/afp?user=afp&password=***&x=1"
    )
    assert shown_location("postgresql://afp@db/afp") == "postgresql://afp@db/afp"
    assert shown_location("runs/afp.db") == "runs/afp.db"
    # A password holding an unencoded @ or / is masked whole (the driver splits at the last @).
    assert shown_location("postgresql://u:p@ss@db:1/x") == "postgresql://u:***@db:1/x"
    assert shown_location("postgresql://u:pa/ss@db:1/x") == "postgresql://u:***@db:1/x"


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://u:pa/ss@127.0.0.1:1/x",
        "postgresql://u:secret@127.0.0.1:notaport/x",
        "postgresql://u:secret@127.0.0.1:99999/x",
        "postgres://u:secret@[::1/x",
    ],
)
def test_a_store_url_that_cannot_be_parsed_is_one_line_without_the_password(url: str) -> None:
    """A URL whose host or port cannot be read is a usage error (exit 2) in one line with the
    password masked; it used to be a traceback whose last line could quote the password."""
    result = subprocess.run(
        [sys.executable, "-m", "afp_runtime.cli", "agents", "--db", url],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "cannot be parsed" in result.stderr
    assert "secret" not in result.stderr and "u:pa" not in result.stderr
