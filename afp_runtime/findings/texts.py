"""Every text the findings family writes, authored here in our own words, defined once.

Descriptions go into the served tool schemas (``_findings``,
docs/findings.md#how-the-schema-is-served); the instruction and the ledger piece are system pieces
(docs/findings.md#what-later-requests-see). Builders are pure functions of their arguments: no
clock, locale or randomness, so a request can be recomposed byte for byte.
"""

from __future__ import annotations

from afp_runtime.findings.limits import TEXT_CAP

FINDINGS_INSTRUCTION_VERSION = "findings/1"
"""The version tag carried by ``FINDINGS_INSTRUCTION``; bump it whenever the text changes."""

FINDINGS_INSTRUCTION = (
    f"[afp:{FINDINGS_INSTRUCTION_VERSION}] Findings: an optional way to say what you stand on.\n"
    'Every tool accepts an optional argument "_findings". The runtime takes it off before the '
    "tool runs, so it never changes what the tool does.\n"
    '- "basis" describes the call you are making: "direct" when it looks up what the task '
    'needs, "exploratory" when it probes to learn where to look. Along with it you may give '
    '"expect" (low, medium or high: how likely this call is to settle what it is for), '
    '"proposition" (the claim this call tests) and "predicts" (the result that would support '
    "that claim).\n"
    '- "previous" judges results you have already read, each named by its toolCallId, with '
    "one standing:\n"
    '  "fact": you stand on it; list what you stand on as "assertions" (a subject with its '
    "kind and id, a predicate, a value).\n"
    '  "open": suggestive but not settled; say in "settles" what would decide it.\n'
    '  "noise": nothing useful in it.\n'
    '  "ruled-out": it closes a hypothesis; state in one "line" what was ruled out.\n'
    "Saying nothing is allowed: a result you do not judge stays undeclared, and nothing is "
    "assumed about it. A later judgment of the same result replaces the earlier one. Results "
    "you judge noise or ruled-out are withheld from later requests: a short marker keeps "
    "their place, and your ledger keeps what you said about them.\n"
    'A final answer that is a JSON object may carry "_findings" with "previous" too; that '
    "member is taken off before the answer is delivered.\n"
    f"Texts longer than {TEXT_CAP} characters are cut."
)
"""The system instruction sent with every call of an armed agent
(docs/findings.md#the-findings-instruction)."""

# --- schema descriptions (docs/findings.md#how-the-schema-is-served)
# -----------------------------------------------------------------

FINDINGS_DESCRIPTION = (
    "Optional. What you stand on: how this call relates to the task, and your judgment of "
    "results you already read. Removed before the tool runs."
)
BASIS_DESCRIPTION = (
    "direct: this call looks up what the task needs. exploratory: this call probes to learn "
    "where to look."
)
EXPECT_DESCRIPTION = "How likely this call is to settle what it is for."
PROPOSITION_DESCRIPTION = "The claim this call tests."
PREDICTS_DESCRIPTION = "The result that would support the proposition."
PREVIOUS_DESCRIPTION = (
    "Your standings on earlier tool results, each named by its toolCallId. A later standing "
    "on the same result replaces the earlier one; leaving a result out leaves it undeclared."
)
TOOL_CALL_ID_DESCRIPTION = "The id of the earlier tool result you are judging."
STANDING_DESCRIPTION = (
    "fact: you stand on it (give assertions). open: suggestive, not settled (give settles). "
    "noise: nothing useful here. ruled-out: it closes a hypothesis (give line)."
)
SOUGHT_DESCRIPTION = "Whether that result was what its call looked for."
ASSERTIONS_DESCRIPTION = "For a fact: what you stand on, one subject, predicate and value each."
SUBJECT_DESCRIPTION = "What the assertion is about."
SUBJECT_KIND_DESCRIPTION = "The kind of thing, such as host or file."
SUBJECT_ID_DESCRIPTION = "Which one of that kind."
PREDICATE_DESCRIPTION = "The property asserted, such as status."
VALUE_DESCRIPTION = "The value of that property: a string, a number or a boolean."
SETTLES_DESCRIPTION = "For an open result only: what would decide it."
LINE_DESCRIPTION = "For a ruled-out result only: one line stating what was ruled out."


def offer_left_out(count: int) -> str:
    """The sentence added to the ``toolCallId`` description when the offer is clipped
    (docs/findings.md#the-offer-of-result-ids)."""
    return (
        f"The listed ids are the newest results you may judge; {count} older ones are left out "
        "of the list and can still be named by id."
    )


# --- the ledger piece (docs/findings.md#the-ledger-piece)
# -------------------------------------------------------------------

LEDGER_PIECE_VERSION = "findings-ledger/1"
"""The version tag that opens every ledger piece."""

LEDGER_HEADER = (
    f"[afp:{LEDGER_PIECE_VERSION}] Your findings ledger: the runtime's record of the standings "
    "you declared on tool results. It is your own earlier judgment, not instructions and not "
    "the person's words."
)
FACTS_LABEL = "Facts you stand on:"
CONFLICTS_LABEL = "Conflicting facts (one subject and predicate, different values):"
RULED_OUT_LABEL = "Ruled out:"
OPEN_LABEL = "Open:"
ENTRY_MARK = "- "
WITNESS_SEPARATOR = "; "
NO_LINE = "(no line given)"
NO_SETTLES = "(nothing named that would decide it)"
QUOTE_FACTS_ASK = "When you give your final answer, quote the ledger facts it relies on."


def fact_line(kind: str, ident: str, predicate: str, value: str, provenance: str) -> str:
    """One asserted fact: subject kind and id, predicate, value, and where it came from."""
    return f"{ENTRY_MARK}{kind} {ident} {predicate} {value} ({provenance})"


def bare_fact_line(tool_name: str | None, tool_call_id: str) -> str:
    """A current fact that carries no assertions: the tool and the result id."""
    tool = f"{tool_name} result" if tool_name else "result"
    return f"{ENTRY_MARK}{tool} tool:{tool_call_id} stands as a fact, with no assertions"


def conflict_line(kind: str, ident: str, predicate: str, witnesses: list[str]) -> str:
    """One conflicting key and its witnesses (each ``value (tool:<id>)``)."""
    return f"{ENTRY_MARK}{kind} {ident} {predicate}: {WITNESS_SEPARATOR.join(witnesses)}"


def witness_text(value: str, provenance: str) -> str:
    """One witness of a conflict: its value and where it came from."""
    return f"{value} ({provenance})"


def more_witnesses(count: int) -> str:
    """Closes a conflict's witnesses when more than the cap disagree."""
    return f"and {count} more not shown"


def ruled_out_line(tool_call_id: str, line: str | None, proposition: str | None) -> str:
    """A current ruled-out result: its line, and the proposition its call tested, if any."""
    text = f"{ENTRY_MARK}tool:{tool_call_id}: {line if line is not None else NO_LINE}"
    if proposition is not None:
        text += f" (the call tested: {proposition})"
    return text


def open_line(tool_call_id: str, settles: str | None) -> str:
    """A current open result and what would decide it."""
    decides = f"would be decided by: {settles}" if settles is not None else NO_SETTLES
    return f"{ENTRY_MARK}tool:{tool_call_id}: {decides}"


def not_shown(count: int) -> str:
    """The closing entry of a list clipped at its cap."""
    return f"{ENTRY_MARK}(and {count} more not shown)"


def counts_line(noise: int, undeclared: int) -> str:
    """The counts of the piece: current noise results, served results with no standing."""
    return f"Counts: results judged noise {noise}; results in view with no standing {undeclared}."
