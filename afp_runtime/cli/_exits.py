"""Exit codes of ``afp`` and the command-line errors that choose them
(docs/api.md#exit-codes).

| code | meaning |
| --- | --- |
| 0 | success; for a turn: answered (or nothing to do) |
| 1 | the named agent, run, message, question, epoch or span does not exist |
| 2 | usage or config error (an ambiguous id prefix included) |
| 3 | a conformance verdict ``damaged`` |
| 4 | the store cannot be opened or is damaged; no host answers or holds the agent |
| 5 | refused: ownership, a closed question, a turn in the wrong state |
| 6 | the turn is paused on a question |
| 7 | the turn is stalled (a retry is scheduled) |
| 8 | the turn is held for an operator |
| 9 | the turn was dismissed |
| 10 | the turn was cut off (crashed or cancelled; the next start recovers it) |
| 11 | the turn was halted (a budget or a permission rule stopped it; docs/cost.md#budgets) |
| 70 | an internal error: an exception with no rule of its own (a bug; ``-v`` logs it) |
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_MISSING = 1
EXIT_USAGE = 2
EXIT_DAMAGED = 3
EXIT_UNAVAILABLE = 4
EXIT_REFUSED = 5
EXIT_PAUSED = 6
EXIT_STALLED = 7
EXIT_HELD = 8
EXIT_DISMISSED = 9
EXIT_CUT_OFF = 10
EXIT_HALTED = 11
EXIT_INTERNAL = 70  # sysexits' EX_SOFTWARE

TURN_EXITS = {
    "answered": EXIT_OK,
    "paused": EXIT_PAUSED,
    "stalled": EXIT_STALLED,
    "held": EXIT_HELD,
    "dismissed": EXIT_DISMISSED,
    "halted": EXIT_HALTED,
    "crashed": EXIT_CUT_OFF,
    "cancelled": EXIT_CUT_OFF,
    "running": EXIT_CUT_OFF,
}
"""The exit code for the status a turn (or the run that ended it) stopped in."""


class UsageError(Exception):
    """The command's arguments do not fit together (exit code 2)."""


class Refused(Exception):
    """The host refused the request (auth, ownership, conflict: exit code 5)."""


class Unavailable(Exception):
    """No host answers, or none holds the agent (exit code 4)."""
