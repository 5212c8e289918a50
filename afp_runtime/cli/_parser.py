"""The ``afp`` argument parser. Commands are named as ``module:function`` of this package and
imported only when run, so ``afp --help`` and a read command load no more than they need
(docs/api.md#the-afp-command)."""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from afp_runtime import __version__
from afp_runtime.api.constants import DEFAULT_HOST, DEFAULT_PORT

DEFAULT_DB = "afp.db"
DB_HELP = (
    "the store: a SQLite file or a database URL (default: the AFP_DB environment variable, "
    f"else ./{DEFAULT_DB}); a URL's password is never printed"
)
STORE_HELP = "a SQLite file or a database URL; a URL's password is never printed"
API_URL = f"http://{DEFAULT_HOST}:{DEFAULT_PORT}"

RUN_HELP = "a run id, a unique prefix of one, or AGENT:last"
TOKENS_HELP = (
    "the principals' token file (default: AFP_TOKENS, else the --db file's name + .tokens, "
    "used when it exists)"
)
_GROUPS = ("scenario", "token")
"""The commands with commands of their own."""
_WITHOUT_JSON = frozenset({"demo", "receipt", "export", "checkpoint", "import", "serve"})
"""The commands that take no ``--json``."""


def _count(text: str) -> int:
    """A number argument: a whole number from 0 to 2**63 - 1 (what a store can hold)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if not 0 <= value <= 2**63 - 1:
        raise argparse.ArgumentTypeError(f"{text} is not from 0 to 2**63 - 1")
    return value


def command_named(argv: Sequence[str]) -> str | None:
    """The command word of ``argv`` (its first positional), or None when there is none."""
    words = iter(argv)
    for word in words:
        if word == "--log-format":
            next(words, None)
        elif word == "--":
            return None
        elif not word.startswith("-"):
            return word
    return None


class _Arg(NamedTuple):
    """One ``add_argument`` call: its names and its keywords."""

    names: tuple[str, ...]
    options: Mapping[str, Any]


def _arg(*names: str, **options: Any) -> _Arg:
    return _Arg(names, options)


class _Command(NamedTuple):
    """One command of ``afp``: its word, its ``module:function``, its help, its arguments in
    order, the defaults it sets, and whether it takes ``--db``."""

    name: str
    ref: str
    help: str
    arguments: tuple[_Arg, ...] = ()
    defaults: Mapping[str, Any] = {}
    db: bool = True


_RUN = _arg("run", help=RUN_HELP)
_AGENT = _arg("agent")
_API = _arg("--api", default=API_URL, help="the host's API URL")
_QUESTION = _arg("question", help="a question id or a unique prefix of one")
_FROM_SEQ = _arg("--from-seq", type=_count, default=0)
_GO_ON = _arg(
    "--run",
    dest="config",
    metavar="CONFIG",
    help="then go on with the turn here, as afp run CONFIG would (AGENT picks the agent of the "
    "file); refused when a running host holds the agent",
)

# Declarative: the commands in the order ``afp --help`` lists them.
_COMMANDS: tuple[_Command, ...] = (
    _Command(
        "run",
        "run:cmd_run",
        "Run an agent config once: finish unfinished work, answer a message.",
        (
            _arg("config", help="agent config file (TOML)"),
            _arg("--message", "-m", help="a person's message to answer"),
            _arg("--agent", help="which agent of the file (default: the first)"),
        ),
    ),
    _Command(
        "demo",
        "run:cmd_demo",
        "Run the demo standing agent with its scripted model.",
        (
            _arg("--config", default="configs/demo.toml", help="the demo config"),
            _arg("--turns", type=_count, default=2, help="messages to send this time"),
        ),
        {"agent": None},
    ),
    _Command("agents", "reads:cmd_agents", "List agents."),
    _Command(
        "agent",
        "reads:cmd_agent",
        "One agent's summary (status, turn, inbox, open questions).",
        (_AGENT,),
    ),
    _Command(
        "health",
        "writes:cmd_health",
        "Ask the running host whether it is up (GET /v1/health).",
        (_API,),
    ),
    _Command(
        "runs",
        "reads:cmd_runs",
        "List runs, newest first (all, one agent's, or one by --id).",
        (_arg("agent", nargs="?"), _arg("--id", help=RUN_HELP)),
    ),
    _Command(
        "commits",
        "reads:cmd_commits",
        "Show a run's commit log.",
        (_RUN, _FROM_SEQ, _arg("--expand", action="store_true", help="resolve message references")),
    ),
    _Command("inbox", "reads:cmd_inbox", "List an agent's inbox.", (_AGENT, _arg("--status"))),
    _Command(
        "send",
        "writes:cmd_send",
        "Post a message to an agent's durable inbox (no host needed).",
        (
            _AGENT,
            _arg("text"),
            _arg(
                "--idempotency-key", help="a retry with the same key and text is not stored twice"
            ),
            _arg("--zone", help="the person's zone for this message (time-enabled agents)"),
            _arg("--now", help="the instant the message speaks from (strict ISO 8601)"),
            _arg("--from", dest="sender", help="the sending principal (the owner check)"),
            _arg(
                "--wait",
                action="store_true",
                help="wait until it is answered, paused, held or dismissed (a host must hold the "
                "agent)",
            ),
            _arg(
                "--timeout",
                type=float,
                default=None,
                help="seconds --wait waits at most (default 300); given, it waits even with no "
                "host yet",
            ),
        ),
    ),
    _Command(
        "questions",
        "writes:cmd_questions",
        "List an agent's open check-in questions.",
        (_AGENT, _arg("--all", action="store_true", help="every question, closed ones too")),
    ),
    _Command(
        "answer",
        "writes:cmd_answer",
        "Answer a check-in question (text, approve/decline, JSON).",
        (
            _AGENT,
            _QUESTION,
            _arg("value"),
            _arg("--from", dest="sender", help="the answering principal"),
            _GO_ON,
        ),
        {"abandon": False},
    ),
    _Command(
        "abandon",
        "writes:cmd_answer",
        "Close a check-in question without an answer.",
        (_AGENT, _QUESTION, _arg("--from", dest="sender", help="the principal closing it"), _GO_ON),
        {"abandon": True, "value": None},
    ),
    _Command(
        "dismiss",
        "writes:cmd_dismiss",
        "Dismiss a held turn (by a run) so the queue moves on.",
        (_RUN,),
    ),
    _Command(
        "resume",
        "writes:cmd_resume",
        "Ask the running host to resume a held or stalled run.",
        (_RUN, _API),
    ),
    _Command(
        "schedules",
        "schedules:cmd_schedules",
        "List an agent's schedules; set, remove, pause or resume one.",
        (
            _AGENT,
            _arg(
                "action",
                nargs="?",
                choices=("list", "set", "remove", "pause", "resume"),
                help="what to do (default: list)",
            ),
            _arg(
                "name", nargs="?", help="the schedule's name (its messages come from schedule:NAME)"
            ),
            _arg("--at", help="set: once, at a local time in --zone or an instant with an offset"),
            _arg("--cron", help="set: a 5-field cron expression on --zone's wall clock"),
            _arg("--every", help='set: an English rule, e.g. "weekday at 09:00"'),
            _arg("--zone", help="set: the zone name (default UTC)"),
            _arg("--text", help="set: the inbox message delivered at each due instant"),
            _arg(
                "--catch-up",
                choices=("latest", "all", "none"),
                help="set: what is delivered of instants missed while no host ran (default latest)",
            ),
        ),
    ),
    _Command(
        "window",
        "reads:cmd_window",
        "Show window records (what left, what refused, pins).",
        (_arg("run", nargs="?", help=RUN_HELP), _arg("--agent", help="every run of this agent")),
    ),
    _Command(
        "folded",
        "reads:cmd_folded",
        "List folded spans; recover one span's originals.",
        (
            _AGENT,
            _arg("fingerprint", nargs="?", help="a summary fingerprint or a unique prefix"),
            _arg("--messages", action="store_true", help="print the retained originals"),
        ),
    ),
    _Command(
        "recall",
        "recall:cmd_recall",
        "Search what left an agent's window (folded or dropped messages) by words.",
        (
            _AGENT,
            _arg("query", help="the words to search for (text, never syntax)"),
            _arg("--since", help="said at or after: an instant, a UTC date or epoch ms"),
            _arg("--until", help="said before: an instant, a UTC date or epoch ms"),
            _arg("--limit", type=_count, help="hits at most (default 10, at most 50)"),
        ),
    ),
    _Command(
        "findings",
        "reads:cmd_findings",
        "List the findings ledger: rows, standings, conflicts.",
        (
            _AGENT,
            _arg("--kind", help="only rows of this kind (basis, standing, conflict, ...)"),
            _arg("--turn", type=_count, help="only rows of this turn"),
        ),
    ),
    _Command("epochs", "served:cmd_epochs", "List a run's model calls (epochs).", (_RUN,)),
    _Command(
        "served",
        "served:cmd_served",
        "Rebuild exactly what the model was sent at an epoch.",
        (
            _arg("run", nargs="?", help=RUN_HELP),
            _arg("epoch", nargs="?", type=int),
            _arg("--all", action="store_true", help="every epoch of the run"),
            _arg("--file", help="read a run export instead of the store"),
            _arg(
                "--diff",
                nargs=2,
                type=int,
                metavar=("A", "B"),
                help="what changed from epoch A to B",
            ),
        ),
    ),
    _Command(
        "receipt",
        "served:cmd_receipt",
        "Print the receipt digested when an epoch was sent.",
        (_RUN, _arg("epoch", type=int)),
    ),
    _Command(
        "conform",
        "served:cmd_conform",
        "Check epochs against their receipts (exit 3 if damaged).",
        (
            _RUN,
            _arg("epoch", nargs="?", type=int),
            _arg("--wire", action="store_true", help="re-encode and check the bytes (the default)"),
            _arg("--no-wire", action="store_true", help="skip re-encoding the request bytes"),
        ),
    ),
    _Command(
        "call",
        "served:cmd_call",
        "Show the agent's n-th model call (agent-wide number).",
        (_AGENT, _arg("n", type=int)),
    ),
    _Command(
        "diff",
        "served:cmd_diff",
        "What changed between two of the agent's model calls (agent-wide numbers).",
        (
            _AGENT,
            _arg("n", type=int, help="the later call"),
            _arg("m", nargs="?", type=int, help="the call compared against (default: N-1)"),
        ),
    ),
    _Command(
        "export",
        "served:cmd_export",
        "Export a run's log as JSON (bodies inlined).",
        (_RUN, _FROM_SEQ),
    ),
    _Command(
        "checkpoint",
        "admin:cmd_checkpoint",
        "Print an agent's conversation checkpoint as JSON.",
        (_AGENT,),
    ),
    _Command(
        "import",
        "admin:cmd_import",
        "Start an agent's conversation from a checkpoint file.",
        (
            _AGENT,
            _arg("file", help="a portable checkpoint (JSON)"),
            _arg("--replace", action="store_true", help="archive and replace a conversation"),
        ),
    ),
    _Command("migrate", "admin:cmd_migrate", "Apply the store's migrations; print its schema."),
    _Command(
        "doctor",
        "admin:cmd_doctor",
        "Check the database's integrity and stored bodies.",
        (
            _arg(
                "--reindex",
                action="store_true",
                help="first add to the recall index what the commit log shows left a window "
                "(a store made before the index)",
            ),
        ),
    ),
    _Command(
        "copy",
        "moving:cmd_copy",
        "Copy agents with their whole history into another store (SQLite or Postgres).",
        (
            _arg("--from", dest="source", required=True, metavar="STORE", help=STORE_HELP),
            _arg("--to", dest="destination", required=True, metavar="STORE", help=STORE_HELP),
            _arg(
                "--agents",
                help="only these agents, comma-separated (default: every agent of --from)",
            ),
        ),
        db=False,
    ),
    _Command(
        "serve",
        "serve:cmd_serve",
        "Run the standing host and the local HTTP API.",
        (
            _arg("--agents", required=True, help="agents file (TOML, like configs/demo.toml)"),
            _arg("--host", default=DEFAULT_HOST, help=f"address to bind (default {DEFAULT_HOST})"),
            _arg("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT})"),
            _arg(
                "--host-id",
                help="this host's lease id, one per host on a shared store (default: the file's "
                "[host] hostId, else the machine's name)",
            ),
            _arg(
                "--token-file",
                help="file holding the admin token (else AFP_API_TOKEN; >= 32 chars)",
            ),
            _arg("--tokens", help=TOKENS_HELP),
            _arg(
                "--grace",
                type=float,
                default=None,
                help="seconds running work may finish after SIGTERM/SIGINT (default: the file's "
                "[host] shutdownGraceS, else 30); a second signal skips the rest",
            ),
            _arg(
                "--processes",
                type=int,
                default=1,
                help="host processes sharing the agents and the port (default 1), each with "
                "the host id HOSTID-N; a process that dies is restarted",
            ),
            _arg(
                "--loop",
                choices=("auto", "uvloop", "asyncio"),
                default=None,
                help="the event loop (default: AFP_LOOP, else auto: uvloop when installed)",
            ),
            # A child of ``--processes``: the parent's listening socket, inherited.
            _arg("--listen-fd", type=int, default=None, help=argparse.SUPPRESS),
        ),
    ),
)


def _add_command(sub: Any, command: _Command) -> None:
    """One command's parser from its row of the table (building all of them costs about as much
    as reading a small store, so only the one asked for is built)."""
    p = sub.add_parser(command.name, help=command.help, description=command.help)
    if command.db:
        p.add_argument("--db", default=os.environ.get("AFP_DB") or DEFAULT_DB, help=DB_HELP)
    for argument in command.arguments:
        p.add_argument(*argument.names, **argument.options)
    p.set_defaults(command_ref=command.ref, **command.defaults)
    if command.name not in _WITHOUT_JSON:  # last, after the command's own options
        p.add_argument("--json", action="store_true", help="print data as JSON")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The ``afp`` argument parser; with ``only``, just the command of that name is built (the
    others are left out; a word naming no command builds them all, for the error listing them)."""
    parser = argparse.ArgumentParser(prog="afp", description="Run and inspect standing agents.")
    parser.add_argument("--version", action="version", version=f"afp {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress to stderr")
    parser.add_argument(
        "--log-format",
        choices=("console", "json"),
        help="how logs on stderr look (default: AFP_LOG_FORMAT, else console)",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    chosen = [c for c in _COMMANDS if only is None or c.name == only]
    for command in chosen:
        _add_command(sub, command)
    if only is not None and only not in _GROUPS:
        # A word that names no command gets the full parser, so its error lists them all.
        return parser if chosen else build_parser()
    if only in (None, "token"):
        _token_commands(sub)
    if only in (None, "scenario"):
        _scenario_commands(sub)
    return parser


def _scenario_commands(sub: Any) -> None:
    """``afp scenario run``: offline scenarios (docs/scenarios.md)."""
    text = "Offline scenarios: a scripted conversation, model, tools and clock."
    group = sub.add_parser("scenario", help=text, description=text)
    scenario_sub = group.add_subparsers(dest="scenario_command", required=True, metavar="COMMAND")
    text = "Run a scenario file and print its result JSON (or write it with --out)."
    p = scenario_sub.add_parser("run", help=text, description=text)
    p.add_argument("file", help="a scenario file (afp-scenario/1 JSON)")
    p.add_argument("--out", help="write the result JSON to this file instead of printing it")
    p.add_argument(
        "--db",
        help="the store to run on: a SQLite file to create, or a Postgres database URL holding "
        "no scenario yet (default: a temporary SQLite file, deleted afterwards)",
    )
    p.set_defaults(command_ref="scenario:cmd_scenario_run")


def _token_commands(sub: Any) -> None:
    """``afp token add``: the principals of the API (docs/api.md#principals-and-tokens)."""
    text = "The API's principals and their tokens."
    group = sub.add_parser("token", help=text, description=text)
    token_sub = group.add_subparsers(dest="token_command", required=True, metavar="COMMAND")
    text = "Add a principal with a new random token, printed once (only its hash is kept)."
    p = token_sub.add_parser("add", help=text, description=text)
    p.add_argument("name", help="the principal's name (what from and the owner spell)")
    p.add_argument(
        "--admin", action="store_true", help="may act for any principal (name anyone in from)"
    )
    p.add_argument("--tokens", help=TOKENS_HELP.replace(", used when it exists", ""))
    p.add_argument("--db", default=os.environ.get("AFP_DB") or DEFAULT_DB, help=DB_HELP)
    p.set_defaults(command_ref="tokens:cmd_token_add")
