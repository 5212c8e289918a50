"""Observation texts: what the model reads in a tool message for each outcome
(docs/loop.md#observations).

All of them are authored here, in our own words, and are deterministic: the same inputs always
give the same text. None ever carries a traceback (tracebacks go to the structured log).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from afp_runtime._secrets import redact

ERROR_MESSAGE_LIMIT = 2_000
"""Code points of an exception's message kept in an error observation."""

PROBLEM_LIMIT = 20
"""Argument problems listed in an invalid-args observation; the rest are counted."""

_NAME_LIMIT = 100

NO_OUTPUT = "The tool finished without producing any output."
"""The ok observation when a tool returned ``None``."""

ARGS_NOT_OBJECT = "(arguments): the text given could not be read as a JSON object"
"""The problem reported when a call's arguments did not parse (``argsText`` present)."""

ARGS_NOT_JSON = "(arguments): they hold values that are not JSON"
"""The problem reported when a call built in code carries arguments JSON cannot hold."""


def _name(tool_name: str) -> str:
    """A tool name as quoted in a text; a model-made name is cut to 100 code points."""
    if len(tool_name) > _NAME_LIMIT:
        tool_name = tool_name[:_NAME_LIMIT] + "…"
    return f'"{tool_name}"'


def truncation_note(kept: int, original: int) -> str:
    """The note appended to a result cut to its first ``kept`` of ``original`` code points."""
    return (
        f"\n\n[Result shortened: only the first {kept:,} of its {original:,} characters are "
        "shown above; the rest was cut.]"
    )


REPEATED_CALL_PREFIX = "[afp:repeated-call]"
"""Opening of the note the runtime appends to a result repeated within a turn."""


def repeated_call_note(count: int) -> str:
    """The note appended to a tool message when the same call (same tool, same arguments) has
    returned exactly the same result ``count`` >= 2 times in this turn
    (docs/loop.md#repeated-calls). Its length depends only on the digit count of ``count``."""
    return (
        f"\n\n{REPEATED_CALL_PREFIX} Written by the runtime: this exact call has now returned "
        f"this same result in this turn (count {count}). You already have it above; use it "
        "rather than calling again."
    )


def error_text(tool_name: str, error: BaseException) -> str:
    """The observation for a tool that raised: its name, that it failed, the exception's type
    and message (cut to its first 2,000 code points)."""
    kind = type(error).__name__
    try:
        # A credential the runtime holds, or one a server echoed, is not shown to the model
        # nor stored (docs/host.md#secrets-in-errors-and-logs).
        message = redact(str(error))
    except Exception:  # an exception whose __str__ itself fails still gets an observation
        message = ""
    if len(message) > ERROR_MESSAGE_LIMIT:
        message = message[:ERROR_MESSAGE_LIMIT] + " […]"
    if not message:
        return f"The tool {_name(tool_name)} failed with {kind} (no message)."
    return f"The tool {_name(tool_name)} failed with {kind}: {message}"


def timeout_text(tool_name: str, timeout_s: float) -> str:
    """The observation for a call stopped at its time limit; its effect is unknown."""
    return (
        f"The tool {_name(tool_name)} did not finish within its time limit of {timeout_s:g} s "
        "and was stopped. Whether it had any effect is unknown."
    )


def invalid_args_text(tool_name: str, problems: Sequence[str]) -> str:
    """The observation for a call whose arguments were wrong: each path and why; not run."""
    lines = [f"The tool {_name(tool_name)} was not run because its arguments were invalid:"]
    lines.extend(f"- {problem}" for problem in problems[:PROBLEM_LIMIT])
    if len(problems) > PROBLEM_LIMIT:
        lines.append(f"- and {len(problems) - PROBLEM_LIMIT} more problems")
    return "\n".join(lines)


def unknown_tool_text(tool_name: str, available: Iterable[str]) -> str:
    """The observation for a call to a name no tool has; lists the names that exist."""
    names = sorted(available)
    head = f"No tool named {_name(tool_name)} is available."
    if not names:
        return f"{head} No tools are available here."
    return f"{head} The available tools are: {', '.join(names)}."


def not_dispatched_text(tool_name: str) -> str:
    """The observation for a call that was never run; it may be asked for again."""
    return (
        f"This call to {_name(tool_name)} was not run. "
        "It may be requested again if it is still needed."
    )


def interrupted_text(tool_name: str) -> str:
    """The observation for a call cut off by a restart before its result was recorded."""
    return (
        f"This call to {_name(tool_name)} was cut off by a restart before its result was "
        "recorded. Treat it as not carried out; any effects it may have had are unknown."
    )


def unencodable_text(tool_name: str, type_name: str) -> str:
    """The observation for a result that could not be turned into text."""
    return (
        f"The tool {_name(tool_name)} returned a value (of type {type_name}) "
        "that could not be turned into text."
    )


def halted_text(tool_name: str, reason: str) -> str:
    """The observation for a call a halted turn never ran (docs/cost.md#budgets)."""
    return (
        f"The call to {_name(tool_name)} was not run: the runtime halted the turn ({reason}). "
        "Nothing the call would have done has happened."
    )


def permission_denied_text(tool_name: str, rule: str, reason: str | None) -> str:
    """The observation for a call a permission rule denied (docs/permissions.md)."""
    why = f": {reason}" if reason else ""
    return (
        f"The call to {_name(tool_name)} was not run: permission rule {_name(rule)} denies it{why}."
    )


def permission_ask_text(tool_name: str, args_json: str, rule: str, reason: str | None) -> str:
    """The approval question of a call a permission rule asks about (docs/permissions.md)."""
    why = f": {reason}" if reason else ""
    return f"{approval_prompt(tool_name, args_json)} (permission rule {_name(rule)}{why})"


def declined_text(tool_name: str) -> str:
    """The observation for a call the person declined (or never answered); not run."""
    return f"The person declined this call to {_name(tool_name)}, so the tool was not run."


def refused_text(tool_name: str, reason: str) -> str:
    """The observation for a call refused before dispatch; ``reason`` is authored by the caller
    (docs/time.md#refused-calls)."""
    return f"This call to {_name(tool_name)} did not run: {reason}"


def person_reply_text(tool_name: str, question: str, reply: str) -> str:
    """The result of a call that asked the person: their reply, framed as theirs."""
    return f"The tool {_name(tool_name)} asked the person: {question}\nThe person replied: {reply}"


def no_reply_text(tool_name: str, question: str) -> str:
    """The result of a call whose question the person closed without replying."""
    return (
        f"The tool {_name(tool_name)} asked the person: {question}\n"
        "The person did not reply; the question was closed without an answer."
    )


def approval_prompt(tool_name: str, args_json: str) -> str:
    """The question of an approval check-in: may this call run, with these arguments?"""
    return f"May the agent run {_name(tool_name)} with these arguments? {args_json}"
