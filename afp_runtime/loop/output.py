"""Typed final answers (docs/loop.md#typed-answers): an agent's output schema, the instruction
that tells the model about it, and the decoding of an answer against it.

Decoding is pure: the answer's text in, the decoded value (plain JSON values) or the problem out.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import msgspec

from afp_runtime.errors import AgentDefinitionError, shown
from afp_runtime.messages import canonical_json
from afp_runtime.tools import check_schema, validate_args
from afp_runtime.window import texts

PROBLEM_LIMIT = 2_000
"""Code points of a decoding problem kept in the retry message and the outcome."""

# One fenced block, ```json or bare, around the whole answer (models often add one).
_FENCE = re.compile(r"\A\s*```(?:json)?\s*\n(.*?)\n?```\s*\Z", re.DOTALL)


class OutputError(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """Why a turn's answer has no typed value: the last problem and how many answers were
    tried (the first and each retry)."""

    kind: str
    problem: str
    attempts: int


class OutputSpec:
    """An agent's output schema: a msgspec Struct, a dataclass, or a JSON schema (a dict).

    Raises:
        AgentDefinitionError: ``output`` is none of these, or the JSON schema is not usable
            (field ``output``), or ``retries`` is not an int >= 0 (field ``outputRetries``).
    """

    def __init__(self, output: object, retries: object = 2) -> None:
        if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
            raise AgentDefinitionError(
                f"outputRetries must be an int of at least 0, not {shown(retries)}",
                field="outputRetries",
            )
        self.retries = retries
        self.type: type | None = None
        if isinstance(output, dict):
            problems = check_schema(output)
            if problems:
                raise AgentDefinitionError(
                    f"output is not a usable JSON schema: {'; '.join(problems)}", field="output"
                )
            self.schema: dict[str, Any] = output
        elif isinstance(output, type) and (
            issubclass(output, msgspec.Struct) or dataclasses.is_dataclass(output)
        ):
            self.type = output
            self.schema = msgspec.json.schema(output)
        else:
            raise AgentDefinitionError(
                "output must be a msgspec Struct class, a dataclass or a JSON schema (dict), "
                f"not {shown(output)}",
                field="output",
            )
        self.instruction = (
            "Your final answer must be one JSON value, and nothing else, that matches this JSON "
            f"schema: {canonical_json(self.schema).decode()}"
        )

    def shape(self) -> Any:
        """What the definition's fingerprint holds of the output (it shapes every request)."""
        return {"schema": self.schema, "retries": self.retries}

    def decode(self, text: str) -> tuple[Any, str | None]:
        """The answer's value as plain JSON values, or ``(None, problem)``."""
        fenced = _FENCE.match(text)
        body = (fenced.group(1) if fenced else text).strip()
        try:
            if self.type is not None:
                value = msgspec.to_builtins(msgspec.json.decode(body, type=self.type))
            else:
                value = msgspec.json.decode(body)
                problems = validate_args(self.schema, value)
                if problems:
                    return None, _cut("; ".join(problems))
        except msgspec.ValidationError as exc:
            return None, _cut(str(exc))
        except msgspec.DecodeError as exc:
            return None, _cut(f"the answer is not JSON ({exc})")
        return value, None

    def typed(self, value: Any) -> Any:
        """A decoded value as the Python surface returns it: an instance of the Struct or
        dataclass, else the JSON value."""
        return msgspec.convert(value, self.type) if self.type is not None else value


def retry_text(problem: str, attempt: int, retries: int) -> str:
    """The runtime's message asking for the answer again, saying precisely what was wrong."""
    return (
        f"{texts.OUTPUT_RETRY_PREFIX} Written by the runtime, not the person. Your answer could "
        f"not be read as the required output: {problem}. Reply again with only the JSON value that "
        f"matches the schema (retry {attempt} of {retries})."
    )


def _cut(problem: str) -> str:
    return problem if len(problem) <= PROBLEM_LIMIT else problem[:PROBLEM_LIMIT] + " […]"
