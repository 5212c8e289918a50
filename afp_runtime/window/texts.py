"""Every text the runtime writes into a window, authored here in our own words, defined once.

Prefixes are ASCII, at least 8 code points, open with a bracket (a character a person rarely
types first), and none is a prefix of another. Builders are pure functions of their arguments.
"""

from __future__ import annotations

DROP_NOTICE_PREFIX = "[afp:window-notice]"
SUMMARY_PREFIX = "[afp:folded-summary]"
WRAP_UP_PREFIX = "[afp:wrap-up]"

AUTHORED_PREFIXES: tuple[str, ...] = (DROP_NOTICE_PREFIX, SUMMARY_PREFIX, WRAP_UP_PREFIX)

WRAP_UP_TEXT = (
    f"{WRAP_UP_PREFIX} The step budget for this request is spent: no further tools can be "
    "used. Give your best final answer now from what you already have, and say plainly what "
    "remains undone."
)
