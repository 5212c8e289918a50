"""Digest vectors 1 to 7 of docs/served.md#how-this-is-tested, through the public messages and
receipt helpers."""

from __future__ import annotations

import pytest

from afp_runtime.errors import InvalidValue
from afp_runtime.messages import (
    Message,
    ToolCall,
    ToolSchema,
    canonical_json,
    fingerprint,
    message_body,
    salted,
    user,
)
from afp_runtime.served import (
    check,
    extend_digest,
    receipt_at,
    schema_hash,
    served_at,
    start_digest,
)

from ._log import RunSim, TestEncoder

HI_FP = "9017285104d1b249960a30732b8e92f6e2fb3acf8d8e4b2a16c116ad0c1ed211"
TOOL_FP = "79c5d1dada92d1da971d6e1f49a737ebb9e7f9e6aab9232b4e9a53b8fe5bdcc0"


def _digest(run_id: str, messages: list[Message]) -> str:
    fps = [fingerprint(m) for m in messages]
    return extend_digest(run_id, start_digest(run_id), messages, fps).digest


def _tool_message(call_id: str = "c1") -> Message:
    return Message(role="tool", content="ok", tool_call_id=call_id, tool_name="lookup")


def test_salted_vectors() -> None:
    """Case 1: the salted digest H of a few texts under run-a, run-b and run-1."""
    text = "You are a helpful assistant."
    assert salted("run-a", text) == (
        "c5950bac09d98c6e47fb22614df6e225813d6d76d64ed29dd44a2dc25c4b4ea3"
    )
    assert salted("run-b", text) == (
        "5c3eff942669665f8b64b1e9cc5dd2e4058f164372b1de8273b97b9daa126aed"
    )
    assert salted("run-1", "") == (
        "5b69656befee33b3ae5b21327c2ab96020b015ef6178ab58586add5d080e807d"
    )
    assert salted("run-1", "You are a bot.\n\nBe brief.") == (
        "83a03216147f4c77a1236e66df61675beee561aa7d6eedca1ab7f76aae4e152d"
    )


def test_user_message_vector() -> None:
    """Case 2: a user message's canonical bytes, fingerprint and salted digest."""
    message = Message(role="user", content="hi")
    assert canonical_json(message) == b'{"content":"hi","role":"user"}'
    assert fingerprint(message) == HI_FP
    assert salted("run-1", message_body(message)) == (
        "a58acf47945916f9bd446939afc3d0a7fee1b4b1f412097184155ac0d4921db7"
    )


def test_assistant_tool_call_vector() -> None:
    """Case 3: an assistant tool call's canonical bytes do not depend on the args' key order."""
    expected = (
        b'{"content":"","role":"assistant","toolCalls":[{"args":{"limit":3,'
        b'"q":"weather in Paris"},"id":"c1","name":"lookup"}]}'
    )
    first = Message(
        role="assistant",
        tool_calls=(ToolCall(id="c1", name="lookup", args={"q": "weather in Paris", "limit": 3}),),
    )
    second = Message(
        role="assistant",
        tool_calls=(ToolCall(id="c1", name="lookup", args={"limit": 3, "q": "weather in Paris"}),),
    )
    assert message_body(first) == expected
    assert message_body(second) == expected
    assert fingerprint(first) == (
        "24ff623e61b034427cb635ee123dc4e005706d4628511fbf4b15e9e22d5b8f3b"
    )


def test_tool_message_and_running_digest_vectors() -> None:
    """Case 4: a tool message's digests, its running-digest entry, and messages.digest values."""
    tool = _tool_message()
    assert canonical_json(tool) == (
        b'{"content":"ok","role":"tool","toolCallId":"c1","toolName":"lookup"}'
    )
    assert salted("run-1", message_body(tool)) == (
        "d3ac0e8e0767ea1b8d619e891d933cdd9df9dfce658e12c576497129fe146833"
    )
    assert salted("run-1", message_body(_tool_message("c2"))) == (
        "e4d7758f92e32e177bb2b220aba1cca99883f2e31df8da2867aa2d513bd3a797"
    )
    assert fingerprint(tool) == TOOL_FP
    hi = user("hi")
    assert _digest("run-1", []) == salted("run-1", "")
    assert _digest("run-1", [hi]) == (
        "fdbc62bebea8cffc7e4d65dd5ea1968d5bab0e57fb35a62320fb6b5295db8cec"
    )
    assert _digest("run-1", [hi, tool]) == (
        "e07ab0bc943d0a99ee4f614fdf061b59549452c5934d372b53916c065459d35a"
    )
    assert _digest("run-2", [hi]) == (
        "919d6bec74af5a04c4e904863c9af49033bdd7368d934408b4cc01e5de01ec63"
    )
    # The entry of the tool message is {"fingerprint", "key", "role"}, chained after d_1.
    d1 = _digest("run-1", [hi])
    entry = b'{"fingerprint":"' + TOOL_FP.encode() + b'","key":"c1","role":"tool"}'
    assert salted("run-1", (d1 + "\x1f").encode() + entry) == _digest("run-1", [hi, tool])


def test_schema_vector() -> None:
    """Case 5: a schema's canonical bytes and salted digest, whatever the dict key order."""
    expected = (
        b'{"description":"looks things up","inputSchema":{"properties":{"q":{"type":"string"}},'
        b'"type":"object"},"name":"lookup"}'
    )
    first = ToolSchema(
        name="lookup",
        description="looks things up",
        input_schema={"type": "object", "properties": {"q": {"type": "string"}}},
    )
    second = ToolSchema(
        input_schema={"properties": {"q": {"type": "string"}}, "type": "object"},
        description="looks things up",
        name="lookup",
    )
    assert canonical_json(first) == expected
    digest = "988cae9838273cfc556387a22dbe49ef053a93a572cac5091d898e148ae7de73"
    assert schema_hash("run-1", first) == digest
    assert schema_hash("run-1", second) == digest


def test_system_text_counts_code_points() -> None:
    """Case 6: system.chars counts code points (39, never the UTF-16 length 40), law holds."""
    text = "π ≈ 3.14159 — multibyte, and an emoji 🐛"
    sim = RunSim("run-1", system=text, encoder=TestEncoder()).run([])
    sim.step(None)
    view = served_at(sim.log, 1)
    receipt = receipt_at(sim.log, 1)
    assert view is not None and receipt is not None
    assert view.system.text == text
    assert len(view.system.text) == 39
    assert receipt.system.chars == 39
    assert receipt.system.hash == (
        "f97ed48a3f4e4438a099d3df7ccc86e6a7a8cce4d4bd183daafffe63e4e4a421"
    )
    assert check(view, receipt, encoder=TestEncoder()).verdict == "verified"


def test_refusals_name_the_field() -> None:
    """Case 7: a lone surrogate and a NaN argument are refused, naming the field."""
    with pytest.raises(InvalidValue) as surrogate:
        Message(role="user", content="\ud800")
    assert surrogate.value.context["field"] == "content"
    with pytest.raises(InvalidValue) as nan:
        ToolCall(id="c1", name="lookup", args={"limit": float("nan")})
    # The messages layer names the path without the call's index (see the served report).
    assert nan.value.context["field"].startswith("toolCalls")
    assert nan.value.context["field"].endswith("args.limit")
