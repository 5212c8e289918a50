"""The ``afp`` argument parser. Commands are named as ``module:function`` of this package and
imported only when run, so ``afp --help`` and a read command load no more than they need
(docs/api.md#the-afp-command)."""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from typing import Any

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


class _Unbuilt:
    """Stands in for the parser of a command that was not asked for: its arguments are not built
    (building all 28 costs about as much as reading a small store)."""

    def add_argument(self, *args: Any, **kwargs: Any) -> None:
        pass

    def set_defaults(self, **kwargs: Any) -> None:
        pass


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

    built: dict[str, argparse.ArgumentParser] = {}

    def add(name: str, command: str, help_text: str, *, db: bool = True) -> Any:
        if only is not None and name != only:
            return _Unbuilt()
        p = built[name] = sub.add_parser(name, help=help_text, description=help_text)
        if db:
            p.add_argument("--db", default=os.environ.get("AFP_DB") or DEFAULT_DB, help=DB_HELP)
        p.set_defaults(command_ref=command)
        return p

    p = add(
        "run", "run:cmd_run", "Run an agent config once: finish unfinished work, answer a message."
    )
    p.add_argument("config", help="agent config file (TOML)")
    p.add_argument("--message", "-m", help="a person's message to answer")
    p.add_argument("--agent", help="which agent of the file (default: the first)")

    p = add("demo", "run:cmd_demo", "Run the demo standing agent with its scripted model.")
    p.add_argument("--config", default="configs/demo.toml", help="the demo config")
    p.add_argument("--turns", type=_count, default=2, help="messages to send this time")
    p.set_defaults(agent=None)

    p = add("agents", "reads:cmd_agents", "List agents.")

    p = add(
        "agent", "reads:cmd_agent", "One agent's summary (status, turn, inbox, open questions)."
    )
    p.add_argument("agent")

    p = add(
        "health", "writes:cmd_health", "Ask the running host whether it is up (GET /v1/health)."
    )
    p.add_argument("--api", default=API_URL, help="the host's API URL")

    p = add("runs", "reads:cmd_runs", "List runs, newest first (all, one agent's, or one by --id).")
    p.add_argument("agent", nargs="?")
    p.add_argument("--id", help=RUN_HELP)

    p = add("commits", "reads:cmd_commits", "Show a run's commit log.")
    p.add_argument("run", help=RUN_HELP)
    p.add_argument("--from-seq", type=_count, default=0)
    p.add_argument("--expand", action="store_true", help="resolve message references")

    p = add("inbox", "reads:cmd_inbox", "List an agent's inbox.")
    p.add_argument("agent")
    p.add_argument("--status")

    p = add(
        "send", "writes:cmd_send", "Post a message to an agent's durable inbox (no host needed)."
    )
    p.add_argument("agent")
    p.add_argument("text")
    p.add_argument(
        "--idempotency-key", help="a retry with the same key and text is not stored twice"
    )
    p.add_argument("--zone", help="the person's zone for this message (time-enabled agents)")
    p.add_argument("--now", help="the instant the message speaks from (strict ISO 8601)")
    p.add_argument("--from", dest="sender", help="the sending principal (the owner check)")
    p.add_argument(
        "--wait",
        action="store_true",
        help="wait until it is answered, paused, held or dismissed (a host must hold the agent)",
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=None,
        help="seconds --wait waits at most (default 300); given, it waits even with no host yet",
    )

    p = add("questions", "writes:cmd_questions", "List an agent's open check-in questions.")
    p.add_argument("agent")
    p.add_argument("--all", action="store_true", help="every question, closed ones too")

    p = add(
        "answer", "writes:cmd_answer", "Answer a check-in question (text, approve/decline, JSON)."
    )
    p.add_argument("agent")
    p.add_argument("question", help="a question id or a unique prefix of one")
    p.add_argument("value")
    p.add_argument("--from", dest="sender", help="the answering principal")
    p.set_defaults(abandon=False)

    p = add("abandon", "writes:cmd_answer", "Close a check-in question without an answer.")
    p.add_argument("agent")
    p.add_argument("question", help="a question id or a unique prefix of one")
    p.add_argument("--from", dest="sender", help="the principal closing it")
    p.set_defaults(abandon=True, value=None)

    p = add(
        "dismiss", "writes:cmd_dismiss", "Dismiss a held turn (by a run) so the queue moves on."
    )
    p.add_argument("run", help=RUN_HELP)

    p = add("resume", "writes:cmd_resume", "Ask the running host to resume a held or stalled run.")
    p.add_argument("run", help=RUN_HELP)
    p.add_argument("--api", default=API_URL, help="the host's API URL")

    p = add("window", "reads:cmd_window", "Show window records (what left, what refused, pins).")
    p.add_argument("run", nargs="?", help=RUN_HELP)
    p.add_argument("--agent", help="every run of this agent")

    p = add("folded", "reads:cmd_folded", "List folded spans; recover one span's originals.")
    p.add_argument("agent")
    p.add_argument("fingerprint", nargs="?", help="a summary fingerprint or a unique prefix")
    p.add_argument("--messages", action="store_true", help="print the retained originals")

    p = add(
        "findings", "reads:cmd_findings", "List the findings ledger: rows, standings, conflicts."
    )
    p.add_argument("agent")
    p.add_argument("--kind", help="only rows of this kind (basis, standing, conflict, ...)")
    p.add_argument("--turn", type=_count, help="only rows of this turn")

    p = add("epochs", "served:cmd_epochs", "List a run's model calls (epochs).")
    p.add_argument("run", help=RUN_HELP)

    p = add("served", "served:cmd_served", "Rebuild exactly what the model was sent at an epoch.")
    p.add_argument("run", nargs="?", help=RUN_HELP)
    p.add_argument("epoch", nargs="?", type=int)
    p.add_argument("--all", action="store_true", help="every epoch of the run")
    p.add_argument("--file", help="read a run export instead of the store")
    p.add_argument(
        "--diff", nargs=2, type=int, metavar=("A", "B"), help="what changed from epoch A to B"
    )

    p = add("receipt", "served:cmd_receipt", "Print the receipt digested when an epoch was sent.")
    p.add_argument("run", help=RUN_HELP)
    p.add_argument("epoch", type=int)

    p = add(
        "conform", "served:cmd_conform", "Check epochs against their receipts (exit 3 if damaged)."
    )
    p.add_argument("run", help=RUN_HELP)
    p.add_argument("epoch", nargs="?", type=int)
    p.add_argument(
        "--wire", action="store_true", help="re-encode and check the bytes (the default)"
    )
    p.add_argument("--no-wire", action="store_true", help="skip re-encoding the request bytes")

    p = add("call", "served:cmd_call", "Show the agent's n-th model call (agent-wide number).")
    p.add_argument("agent")
    p.add_argument("n", type=int)

    p = add("export", "served:cmd_export", "Export a run's log as JSON (bodies inlined).")
    p.add_argument("run", help=RUN_HELP)
    p.add_argument("--from-seq", type=_count, default=0)

    p = add(
        "checkpoint", "admin:cmd_checkpoint", "Print an agent's conversation checkpoint as JSON."
    )
    p.add_argument("agent")

    p = add("import", "admin:cmd_import", "Start an agent's conversation from a checkpoint file.")
    p.add_argument("agent")
    p.add_argument("file", help="a portable checkpoint (JSON)")
    p.add_argument("--replace", action="store_true", help="archive and replace a conversation")

    p = add("migrate", "admin:cmd_migrate", "Apply the store's migrations; print its schema.")

    p = add("doctor", "admin:cmd_doctor", "Check the database's integrity and stored bodies.")

    p = add(
        "copy",
        "moving:cmd_copy",
        "Copy agents with their whole history into another store (SQLite or Postgres).",
        db=False,
    )
    p.add_argument("--from", dest="source", required=True, metavar="STORE", help=STORE_HELP)
    p.add_argument("--to", dest="destination", required=True, metavar="STORE", help=STORE_HELP)
    p.add_argument(
        "--agents", help="only these agents, comma-separated (default: every agent of --from)"
    )

    p = add("serve", "serve:cmd_serve", "Run the standing host and the local HTTP API.")
    p.add_argument("--agents", required=True, help="agents file (TOML, like configs/demo.toml)")
    p.add_argument("--host", default=DEFAULT_HOST, help=f"address to bind (default {DEFAULT_HOST})")
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT})")
    p.add_argument(
        "--host-id",
        help="this host's lease id, one per host on a shared store (default: the file's "
        "[host] hostId, else the machine's name)",
    )
    p.add_argument(
        "--token-file",
        help="file holding the admin token (else AFP_API_TOKEN; >= 32 chars)",
    )
    p.add_argument("--tokens", help=TOKENS_HELP)
    p.add_argument(
        "--grace",
        type=float,
        default=None,
        help="seconds running work may finish after SIGTERM/SIGINT (default: the file's "
        "[host] shutdownGraceS, else 30); a second signal skips the rest",
    )

    for name, p in built.items():
        if name not in _WITHOUT_JSON:  # last, after the command's own options
            p.add_argument("--json", action="store_true", help="print data as JSON")
    if only is not None and only not in _GROUPS:
        # A word that names no command gets the full parser, so its error lists them all.
        return parser if built else build_parser()
    if only in (None, "token"):
        _token_commands(sub)
    if only not in (None, "scenario"):
        return parser
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
    return parser


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
