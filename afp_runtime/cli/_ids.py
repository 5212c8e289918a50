"""Ids a person can type (docs/api.md#ids-on-the-command-line).

Every argument that names a run, an inbox message, a question or a summary fingerprint takes
the whole id or any prefix of it that names exactly one (with or without the ``run-``,
``msg-``, ``q-`` kind prefix); a prefix that names several is a usage error (exit 2) listing
them, one that names none is exit 1. ``AGENT:last`` names the agent's latest run. Tables show
each id cut to its shortest unique prefix (at least ``MIN_SHOWN`` characters), which these
commands accept back.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from afp_runtime.cli._exits import UsageError
from afp_runtime.errors import NotFound
from afp_runtime.store import Store

MIN_SHOWN = 12
_SHOWN_CANDIDATES = 8
_KIND_PREFIXES = ("run-", "msg-", "q-")


def pick(text: str, ids: Sequence[str], *, what: str) -> str:
    """The one id of ``ids`` that ``text`` names (whole, or a unique prefix).

    Raises:
        NotFound: none matches (exit 1).
        UsageError: several match; the message lists them (exit 2).
    """
    if text in ids:
        return text
    matches = [
        candidate
        for candidate in ids
        if candidate.startswith(text)
        or any(candidate.startswith(kind + text) for kind in _KIND_PREFIXES)
    ]
    if not matches:
        raise NotFound(f"no {what} {text!r}", what=what, value=text)
    if len(matches) > 1:
        listed = ", ".join(matches[:_SHOWN_CANDIDATES])
        extra = len(matches) - _SHOWN_CANDIDATES
        more = f" and {extra} more" if extra > 0 else ""
        raise UsageError(f"{text!r} names {len(matches)} {what}s: {listed}{more}; type more of it")
    return matches[0]


def _common(a: str, b: str) -> int:
    length = 0
    while length < min(len(a), len(b)) and a[length] == b[length]:
        length += 1
    return length


def shortest(ids: Iterable[str]) -> dict[str, str]:
    """Each id cut to its shortest prefix no other id shares (at least ``MIN_SHOWN``); in
    sorted order an id shares most with its neighbours, so only they are compared."""
    ordered = sorted(set(ids))
    shown: dict[str, str] = {}
    for index, current in enumerate(ordered):
        need = MIN_SHOWN
        for other in (index - 1, index + 1):
            if 0 <= other < len(ordered):
                need = max(need, _common(current, ordered[other]) + 1)
        shown[current] = current[:need]
    return shown


async def known_agent(store: Store, agent_id: str) -> str:
    """``agent_id`` when the store knows that agent.

    Raises:
        NotFound: it does not (exit 1).
    """
    if await store.conversation_state(agent_id) is None:
        raise NotFound(f"no agent {agent_id!r} in {store.location}", what="agent", value=agent_id)
    return agent_id


async def run_id(store: Store, text: str) -> str:
    """The run ``text`` names: a run id or unique prefix of one, or ``AGENT:last``."""
    agent, sep, last = text.rpartition(":")
    if sep and last == "last":
        runs = await store.runs(await known_agent(store, agent))
        if not runs:
            raise NotFound(f"agent {agent!r} has no runs yet", what="run", value=text)
        return runs[-1].run_id
    return pick(text, [run.run_id for run in await store.runs()], what="run")


async def question_id(store: Store, agent_id: str, text: str) -> str:
    """The agent's question ``text`` names (an id or a unique prefix)."""
    questions = await store.questions(agent_id)
    return pick(text, [q.question_id for q in questions], what="question")


async def message_id(store: Store, agent_id: str, text: str) -> str:
    """The agent's inbox message ``text`` names (an id or a unique prefix)."""
    return pick(text, [m.message_id for m in await store.inbox(agent_id)], what="message")


async def fingerprint(store: Store, agent_id: str, text: str) -> str:
    """The summary fingerprint of one of the agent's folds that ``text`` names."""
    spans = await store.folded_spans(agent_id)
    # Folds that wrote the same summary share its fingerprint: one name, not an ambiguity.
    names = list(dict.fromkeys(s.summary_fingerprint for s in spans))
    return pick(text, names, what="folded span")
