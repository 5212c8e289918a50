"""Fingerprints: stable across encodings, sensitive to every body field, blind to markers."""

from __future__ import annotations

import hashlib
from typing import Any

import msgspec
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from afp_runtime.messages import (
    Message,
    ToolCall,
    canonical_json,
    fingerprint,
    message_body,
    message_from_body,
    salted,
    user,
)

ROLES = ("system", "user", "assistant", "tool")

# Characters the generic alphabet rarely draws but real conversations hold: combining marks,
# emoji (with a ZWJ sequence and a flag), JSON's escapes and a NUL.
_AWKWARD = ("\u0301", "\u0308", "\u20dd", "🐛", "👩\u200d🔬", "🇳🇴", "é", "\x00", "\n", '"', "\\")
_PIECES = st.one_of(st.characters(exclude_categories=("Cs",)), st.sampled_from(_AWKWARD))
TEXT = st.lists(_PIECES, max_size=12).map("".join)
NON_EMPTY_TEXT = st.lists(_PIECES, min_size=1, max_size=12).map("".join)

JSON_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    TEXT,
)
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
    max_leaves=8,
)
ARGS = st.dictionaries(TEXT, JSON_VALUES, max_size=4)
TOOL_CALLS = st.builds(ToolCall, id=TEXT, name=TEXT, args=ARGS, args_text=st.none() | TEXT)
CALL_TUPLES = st.lists(TOOL_CALLS, max_size=3).map(tuple)


def tool_call_ids(role: str) -> st.SearchStrategy[str | None]:
    """Call ids a message of ``role`` may carry: required (non-empty) for tool messages."""
    return NON_EMPTY_TEXT if role == "tool" else st.none() | TEXT


@st.composite
def messages(draw: st.DrawFn, roles: tuple[str, ...] = ROLES, min_calls: int = 0) -> Message:
    """Any valid message of one of ``roles``, markers included."""
    role = draw(st.sampled_from(roles))
    calls: tuple[ToolCall, ...] = ()
    if role == "assistant":
        calls = tuple(draw(st.lists(TOOL_CALLS, min_size=min_calls, max_size=3)))
    return Message(
        role=role,  # type: ignore[arg-type]
        content=draw(TEXT),
        tool_calls=calls,
        tool_call_id=draw(tool_call_ids(role)),
        tool_name=draw(st.none() | TEXT),
        not_dispatched=draw(st.booleans()),
        injected_by=draw(st.none() | TEXT),
    )


def reordered(value: Any) -> Any:
    """``value`` with the insertion order of every dict reversed, at every depth."""
    if isinstance(value, dict):
        return {key: reordered(value[key]) for key in reversed(list(value))}
    if isinstance(value, list):
        return [reordered(item) for item in value]
    return value


EMOJI_CALL = Message(
    role="assistant",
    content="e\u0301 🐛",
    tool_calls=(ToolCall(id="c1", name="f", args={"z": [1, 2.5, None], "a": {"b": True}}),),
)


class TestStability:
    """A fingerprint survives every encoding a message goes through."""

    @given(message=messages())
    @example(message=EMOJI_CALL)
    def test_json_round_trip_keeps_fingerprint(self, message: Message) -> None:
        """Encoding a message to JSON and decoding it back leaves its fingerprint unchanged."""
        again = msgspec.json.decode(msgspec.json.encode(message), type=Message)
        assert fingerprint(again) == fingerprint(message)

    @given(message=messages())
    @example(message=EMOJI_CALL)
    def test_msgpack_round_trip_keeps_fingerprint(self, message: Message) -> None:
        """A MessagePack encode/decode round trip leaves a message's fingerprint unchanged."""
        again = msgspec.msgpack.decode(msgspec.msgpack.encode(message), type=Message)
        assert fingerprint(again) == fingerprint(message)

    @given(message=messages())
    @example(message=EMOJI_CALL)
    def test_body_round_trip_keeps_fingerprint(self, message: Message) -> None:
        """A message rebuilt from its stored body has the same fingerprint."""
        assert fingerprint(message_from_body(message_body(message))) == fingerprint(message)

    @given(message=messages())
    def test_body_round_trip_with_markers_rebuilds_the_message(self, message: Message) -> None:
        """A body plus the markers of its list reference rebuilds exactly the original message."""
        again = message_from_body(
            message_body(message),
            not_dispatched=message.not_dispatched,
            injected_by=message.injected_by,
        )
        assert again == message

    @given(message=messages())
    def test_fingerprint_is_the_hash_of_the_body(self, message: Message) -> None:
        """A fingerprint is 64 lower-case hex digits of SHA-256 over the stored body bytes."""
        value = fingerprint(message)
        assert value == hashlib.sha256(message_body(message)).hexdigest()
        assert len(value) == 64
        assert value == value.lower()


class TestSensitivity:
    """Any change to a fingerprinted field changes the fingerprint."""

    @given(data=st.data())
    def test_role_change_changes_fingerprint(self, data: st.DataObject) -> None:
        """Two messages that differ only in role have different fingerprints."""
        message = data.draw(messages().filter(lambda m: not m.tool_calls))
        # Only a message that carries a toolCallId can become a tool message.
        others = [r for r in ROLES if r != message.role and (r != "tool" or message.tool_call_id)]
        role = data.draw(st.sampled_from(others))
        mutated = msgspec.structs.replace(message, role=role)
        assert fingerprint(mutated) != fingerprint(message)

    @given(data=st.data())
    def test_content_change_changes_fingerprint(self, data: st.DataObject) -> None:
        """Two messages that differ only in content have different fingerprints."""
        message = data.draw(messages())
        content = data.draw(TEXT.filter(lambda text: text != message.content))
        mutated = msgspec.structs.replace(message, content=content)
        assert fingerprint(mutated) != fingerprint(message)

    @given(data=st.data())
    def test_tool_calls_change_changes_fingerprint(self, data: st.DataObject) -> None:
        """Assistant messages that differ only in tool calls have different fingerprints."""
        message = data.draw(messages(roles=("assistant",)))
        calls = data.draw(CALL_TUPLES.filter(lambda calls: calls != message.tool_calls))
        mutated = msgspec.structs.replace(message, tool_calls=calls)
        assert fingerprint(mutated) != fingerprint(message)

    @pytest.mark.parametrize("field", ["id", "name", "args", "args_text"])
    @given(data=st.data())
    def test_one_call_field_change_changes_fingerprint(
        self, field: str, data: st.DataObject
    ) -> None:
        """Changing id, name, args or argsText of one tool call changes the fingerprint."""
        message = data.draw(messages(roles=("assistant",), min_calls=1))
        index = data.draw(st.integers(min_value=0, max_value=len(message.tool_calls) - 1))
        call = message.tool_calls[index]
        choices = {"id": TEXT, "name": TEXT, "args": ARGS, "args_text": st.none() | TEXT}
        old = getattr(call, field)
        new = data.draw(choices[field].filter(lambda value: value != old))
        calls = list(message.tool_calls)
        calls[index] = msgspec.structs.replace(call, **{field: new})
        mutated = msgspec.structs.replace(message, tool_calls=tuple(calls))
        assert fingerprint(mutated) != fingerprint(message)

    @given(data=st.data())
    def test_tool_call_id_change_changes_fingerprint(self, data: st.DataObject) -> None:
        """Two messages that differ only in toolCallId have different fingerprints."""
        message = data.draw(messages())
        new = data.draw(
            tool_call_ids(message.role).filter(lambda value: value != message.tool_call_id)
        )
        mutated = msgspec.structs.replace(message, tool_call_id=new)
        assert fingerprint(mutated) != fingerprint(message)

    @given(data=st.data())
    def test_tool_name_change_changes_fingerprint(self, data: st.DataObject) -> None:
        """Two messages that differ only in toolName have different fingerprints."""
        message = data.draw(messages())
        new = data.draw((st.none() | TEXT).filter(lambda value: value != message.tool_name))
        mutated = msgspec.structs.replace(message, tool_name=new)
        assert fingerprint(mutated) != fingerprint(message)


class TestInvariance:
    """What must not move a fingerprint: markers and dict insertion order."""

    @given(message=messages(), not_dispatched=st.booleans(), injected_by=st.none() | TEXT)
    def test_markers_are_not_fingerprinted(
        self, message: Message, not_dispatched: bool, injected_by: str | None
    ) -> None:
        """Setting or clearing notDispatched and injectedBy leaves body and fingerprint alone."""
        marked = msgspec.structs.replace(
            message, not_dispatched=not_dispatched, injected_by=injected_by
        )
        assert message_body(marked) == message_body(message)
        assert fingerprint(marked) == fingerprint(message)

    @given(message=messages(roles=("assistant",), min_calls=1))
    @example(message=EMOJI_CALL)
    def test_args_insertion_order_is_not_fingerprinted(self, message: Message) -> None:
        """Tool-call args built with keys in another order, at any depth, hash the same."""
        calls = tuple(
            msgspec.structs.replace(call, args=reordered(call.args)) for call in message.tool_calls
        )
        shuffled = msgspec.structs.replace(message, tool_calls=calls)
        assert fingerprint(shuffled) == fingerprint(message)


class TestVectors:
    """Known messages pinned to known hex (docs/served.md digest vectors): the encoding cannot
    drift."""

    @pytest.mark.parametrize(
        ("message", "canonical", "expected"),
        [
            pytest.param(
                user("hi"),
                b'{"content":"hi","role":"user"}',
                "9017285104d1b249960a30732b8e92f6e2fb3acf8d8e4b2a16c116ad0c1ed211",
                id="user-hi",
            ),
            pytest.param(
                Message(
                    role="assistant",
                    content="",
                    tool_calls=(
                        ToolCall(
                            id="c1", name="lookup", args={"q": "weather in Paris", "limit": 3}
                        ),
                    ),
                ),
                b'{"content":"","role":"assistant","toolCalls":[{"args":{"limit":3,'
                b'"q":"weather in Paris"},"id":"c1","name":"lookup"}]}',
                "24ff623e61b034427cb635ee123dc4e005706d4628511fbf4b15e9e22d5b8f3b",
                id="assistant-call",
            ),
            pytest.param(
                Message(role="tool", content="ok", tool_call_id="c1", tool_name="lookup"),
                b'{"content":"ok","role":"tool","toolCallId":"c1","toolName":"lookup"}',
                "79c5d1dada92d1da971d6e1f49a737ebb9e7f9e6aab9232b4e9a53b8fe5bdcc0",
                id="tool-result",
            ),
            pytest.param(
                Message(
                    role="assistant",
                    content="π 🐛",
                    tool_calls=(ToolCall(id="c2", name="f", args_text="{oops"),),
                ),
                '{"content":"π 🐛","role":"assistant","toolCalls":[{"argsText":"{oops",'
                '"id":"c2","name":"f"}]}'.encode(),
                "63afe22645b4434d99f133694e0dc22593ddd359e99553042e120dd4a57e583e",
                id="unparsed-args",
            ),
        ],
    )
    def test_known_message_has_known_fingerprint(
        self, message: Message, canonical: bytes, expected: str
    ) -> None:
        """A pinned message encodes to its pinned canonical body and fingerprint."""
        assert message_body(message) == canonical
        assert fingerprint(message) == expected

    def test_markers_do_not_move_a_pinned_fingerprint(self) -> None:
        """The pinned user message keeps its fingerprint when it carries both markers."""
        marked = Message(role="user", content="hi", not_dispatched=True, injected_by="host")
        assert fingerprint(marked) == (
            "9017285104d1b249960a30732b8e92f6e2fb3acf8d8e4b2a16c116ad0c1ed211"
        )

    @pytest.mark.parametrize(
        ("run_id", "data", "expected"),
        [
            pytest.param(
                "run-a",
                "You are a helpful assistant.",
                "c5950bac09d98c6e47fb22614df6e225813d6d76d64ed29dd44a2dc25c4b4ea3",
                id="run-a",
            ),
            pytest.param(
                "run-b",
                "You are a helpful assistant.",
                "5c3eff942669665f8b64b1e9cc5dd2e4058f164372b1de8273b97b9daa126aed",
                id="run-b",
            ),
            pytest.param(
                "run-1",
                "",
                "5b69656befee33b3ae5b21327c2ab96020b015ef6178ab58586add5d080e807d",
                id="empty",
            ),
            pytest.param(
                "run-1",
                "You are a bot.\n\nBe brief.",
                "83a03216147f4c77a1236e66df61675beee561aa7d6eedca1ab7f76aae4e152d",
                id="multiline",
            ),
            pytest.param(
                "run-1",
                canonical_json(user("hi")),
                "a58acf47945916f9bd446939afc3d0a7fee1b4b1f412097184155ac0d4921db7",
                id="user-hi-bytes",
            ),
        ],
    )
    def test_salted_has_known_digest(self, run_id: str, data: str | bytes, expected: str) -> None:
        """salted(run_id, data) hashes run id, unit separator and data to the pinned hex."""
        assert salted(run_id, data) == expected

    def test_salted_encodes_text_as_utf8(self) -> None:
        """salted() of a str equals salted() of its UTF-8 bytes."""
        text = "π ≈ 3.14159 — multibyte, and an emoji 🐛"
        assert salted("run-1", text) == salted("run-1", text.encode("utf-8"))
        assert salted("run-1", text) == (
            "f97ed48a3f4e4438a099d3df7ccc86e6a7a8cce4d4bd183daafffe63e4e4a421"
        )

    def test_args_key_order_gives_identical_bytes(self) -> None:
        """The pinned tool call built with its args keys in the other order has the same body."""
        first = ToolCall(id="c1", name="lookup", args={"q": "weather in Paris", "limit": 3})
        second = ToolCall(id="c1", name="lookup", args={"limit": 3, "q": "weather in Paris"})
        one = Message(role="assistant", tool_calls=(first,))
        two = Message(role="assistant", tool_calls=(second,))
        assert list(first.args) != list(second.args)
        assert message_body(one) == message_body(two)
