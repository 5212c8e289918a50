"""Permission rules and verdicts, and how a call is judged (docs/permissions.md).

Pure: a rule table or a gate function decides; nothing here runs a tool or asks anyone.
"""

from __future__ import annotations

import fnmatch
import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import msgspec

from afp_runtime.errors import AgentDefinitionError, shown
from afp_runtime.messages import ToolCall
from afp_runtime.records import PermissionDecision

Decision = PermissionDecision
DECISIONS: tuple[Decision, ...] = ("allow", "deny", "ask", "halt")

_json = msgspec.json.Encoder(order="sorted")


class Rule(msgspec.Struct, frozen=True, kw_only=True, rename="camel", forbid_unknown_fields=True):
    """One row of a permission table: calls it matches get its decision.

    Attributes:
        tool: the tool name, or a glob over it (``fnmatch``: ``*``, ``?``, ``[...]``).
        decision: ``allow``, ``deny``, ``ask`` (a check-in question first) or ``halt`` (the
            turn ends ``halted``).
        args: argument patterns, all of which must match: a glob over the argument's value
            (a string as it is, anything else as compact sorted JSON); a missing argument
            does not match.
        name: how decisions name the rule (default ``permissions[i]``).
        reason: words the refusal, the question or the halt repeats.
    """

    tool: str
    decision: Decision
    args: dict[str, str] = {}
    name: str | None = None
    reason: str | None = None


class Verdict(msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    """What a gate decided for one call, and why.

    Attributes:
        decision: ``allow``, ``deny``, ``ask`` or ``halt``.
        rule: which rule or gate decided (a table's rule name, ``default`` when no rule
            matched, ``gate`` for a function).
        reason: words shown with a refusal, a question or a halt.
    """

    decision: Decision
    rule: str = "gate"
    reason: str | None = None


GateFn = Callable[[ToolCall], Any]
"""A gate function: ``(call) -> "allow" | "deny" | "ask" | "halt" | Verdict``, sync or async."""


class Permissions:
    """An agent's gate: a rule table (first match wins, no match allows) or a function."""

    def __init__(self, gate: Sequence[Rule] | GateFn) -> None:
        if callable(gate):
            self.rules: tuple[Rule, ...] = ()
            self.function: GateFn | None = gate
        else:
            self.rules = check_rules(gate)
            self.function = None

    def shape(self) -> Any:
        """What the definition's fingerprint holds of the gate."""
        if self.function is not None:
            return {"function": getattr(self.function, "__qualname__", "gate")}
        return [msgspec.to_builtins(rule) for rule in self.rules]

    async def judge(self, call: ToolCall) -> Verdict:
        """The verdict on ``call``. A gate function that raises, or answers something that is
        not a decision, denies the call, naming what went wrong; it never fails the turn."""
        if self.function is None:
            return self._by_rules(call)
        try:
            answer = self.function(call)
            if inspect.isawaitable(answer):
                answer = await answer
        except Exception as exc:  # a gate's failure is the call's refusal, never the host's
            return Verdict(
                decision="deny",
                rule="gate",
                reason=f"the permission gate raised {type(exc).__name__}: {exc}"[:500],
            )
        if isinstance(answer, Verdict) and answer.decision in DECISIONS:
            return answer
        if isinstance(answer, str) and answer in DECISIONS:
            return Verdict(decision=answer, rule="gate")
        return Verdict(
            decision="deny",
            rule="gate",
            reason=f"the permission gate answered {shown(answer)}, not allow, deny, ask or halt",
        )

    def _by_rules(self, call: ToolCall) -> Verdict:
        for index, rule in enumerate(self.rules):
            if matches(rule, call):
                return Verdict(
                    decision=rule.decision,
                    rule=rule.name or f"permissions[{index}]",
                    reason=rule.reason,
                )
        return Verdict(decision="allow", rule="default")


def matches(rule: Rule, call: ToolCall) -> bool:
    """Whether ``rule`` matches ``call``: its tool glob and every argument pattern."""
    if not fnmatch.fnmatchcase(call.name, rule.tool):
        return False
    args: Mapping[str, Any] = call.args if isinstance(call.args, Mapping) else {}
    for key, pattern in rule.args.items():
        if key not in args:
            return False
        value = args[key]
        text = value if isinstance(value, str) else _json.encode(value).decode()
        if not fnmatch.fnmatchcase(text, pattern):
            return False
    return True


def check_rules(rules: object) -> tuple[Rule, ...]:
    """A rule table as the agent keeps it, else ``AgentDefinitionError`` naming the entry."""
    if isinstance(rules, (str, bytes)) or not isinstance(rules, Sequence):
        raise AgentDefinitionError(
            "permissions must be a list of afp.permissions.Rule or a gate function, "
            f"not {shown(rules)}",
            field="permissions",
        )
    for index, rule in enumerate(rules):
        field = f"permissions[{index}]"
        if not isinstance(rule, Rule):
            raise AgentDefinitionError(
                f"{field} must be an afp.permissions.Rule, not {shown(rule)}", field=field
            )
        if not isinstance(rule.tool, str) or not rule.tool:
            raise AgentDefinitionError(
                f"{field}.tool must be a tool name or glob", field=f"{field}.tool"
            )
        if rule.decision not in DECISIONS:
            raise AgentDefinitionError(
                f"{field}.decision must be allow, deny, ask or halt, not {shown(rule.decision)}",
                field=f"{field}.decision",
            )
        for key, pattern in rule.args.items():
            if not isinstance(pattern, str):
                raise AgentDefinitionError(
                    f"{field}.args.{key} must be a glob string, not {shown(pattern)}",
                    field=f"{field}.args.{key}",
                )
    return tuple(rules)
