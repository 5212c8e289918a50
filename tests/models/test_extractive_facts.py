"""``extractive/2``: the offline summarizer's digest keeps the facts of the turns it folds
(ids, amounts, names, calls with their arguments, results' key values) within its budget,
while ``extractive/1`` stays byte for byte (docs/window.md#the-extractive-summarizer)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from afp_runtime.agents import read_config
from afp_runtime.errors import ConfigError
from afp_runtime.messages import Message, ModelRequest, ToolCall
from afp_runtime.models import ExtractiveSummarizer
from afp_runtime.models.extractive_facts import SUMMARY_PREFIX
from afp_runtime.models.transcript_read import budget_of, parse_transcript
from afp_runtime.window.folds import build_summary_message, transcript
from afp_runtime.window.strategies import summarizer_request
from afp_runtime.window.texts import SUMMARY_PREFIX as WINDOW_SUMMARY_PREFIX

REPO = Path(__file__).resolve().parents[2]


def refund_span() -> list[Message]:
    """A person asks for a refund; the desk looks the order up and refunds it."""
    return [
        Message(
            role="user",
            content="Please refund order 4520 - the headlamp arrived broken. Ann Lee "
            "(ann@example.com) paid $12.40 three days ago; refund within 3 days.",
        ),
        Message(
            role="assistant",
            tool_calls=(ToolCall(id="c1", name="lookup_order", args={"orderId": "4520"}),),
        ),
        Message(
            role="tool",
            content='{"orderId":"4520","customer":"CUST-7956","totalCents":1240,'
            '"lines":[{"sku":"SKU-4482","name":"headlamp 400lm"}]}',
            tool_call_id="c1",
            tool_name="lookup_order",
        ),
        Message(
            role="assistant",
            tool_calls=(
                ToolCall(
                    id="c2",
                    name="refund_order",
                    args={"orderId": "4520", "amount": "12.40", "reason": "arrived broken"},
                ),
            ),
        ),
        Message(
            role="tool",
            content="Refund RF-2231 issued for order 4520: $12.40 back to the card ending 4242.",
            tool_call_id="c2",
            tool_name="refund_order",
        ),
        Message(
            role="assistant",
            content="I refunded $12.40 for order 4520 (refund RF-2231). Ann should see it "
            "within 3 days.",
        ),
    ]


async def digest_of(span: list[Message], model: str) -> str:
    request = summarizer_request(span, span, model)
    return (await ExtractiveSummarizer(model).send(request)).content


class TestVersions:
    """The model id picks the version; version 1 is unchanged."""

    async def test_version_1_is_byte_for_byte_what_it_was(self) -> None:
        """``extractive/1`` (the default) writes the digest it always wrote."""
        assert await digest_of(refund_span(), "extractive/1") == (
            "Digest of 6 messages:\nasked: Please refund o…\n"
            'called: lookup_order({"…\nlookup_order returned: 4520, CUST-7956\n'
            'called: refund_order({"…\nrefund_order returned: RF-2231, 4520\n'
            "said: I refunded $12.…"
        )
        assert ExtractiveSummarizer().model == "extractive/1"

    def test_version_2_names_itself(self) -> None:
        model = ExtractiveSummarizer("extractive/2")
        assert (model.provider, model.model, model.encoder) == (
            "extractive",
            "extractive/2",
            "extractive/2",
        )

    def test_an_unknown_version_is_refused_naming_the_known_ones(self) -> None:
        with pytest.raises(ConfigError, match=r"extractive/3.*extractive/1, extractive/2"):
            ExtractiveSummarizer("extractive/3")

    def test_a_config_picks_the_version_by_its_model_id(self, tmp_path: Path) -> None:
        """``[agents.window.summarizer]`` with ``model = "extractive/2"`` builds version 2; an
        unknown id is refused naming the key."""
        body = (REPO / "configs" / "demo.toml").read_text()
        assert 'model = "extractive/2"' in body
        config = tmp_path / "demo.toml"
        config.write_text(body)
        _, [agent] = read_config(config)
        summarizer = agent.window.summarizer  # type: ignore[union-attr]
        assert summarizer.model == "extractive/2"
        config.write_text(body.replace('model = "extractive/2"', 'model = "extractive/9"'))
        with pytest.raises(ConfigError, match=r"summarizer\.model.*extractive/9"):
            read_config(config)

    def test_the_summary_prefix_is_the_windows(self) -> None:
        assert SUMMARY_PREFIX == WINDOW_SUMMARY_PREFIX


class TestFacts:
    """What version 2 keeps that version 1 cut off."""

    async def test_the_refunded_order_and_its_amount_survive(self) -> None:
        """Even in a tight budget (about 190 chars) the order id, the amount, the name, the
        e-mail and the refund call are in the digest; version 1 lost the amount and the name."""
        text = await digest_of(refund_span(), "extractive/2")
        for fact in ("4520", "$12.40", "Ann Lee", "ann@example.com", "refund_order"):
            assert fact in text, fact
        old = await digest_of(refund_span(), "extractive/1")
        assert "$12.40" not in old and "Ann Lee" not in old

    async def test_with_room_it_keeps_every_fact_of_a_turn(self) -> None:
        """A span with room to spare keeps the ask, the call's arguments, the result's fields
        and the amounts, units and percentages."""
        span = [*refund_span(), Message(role="user", content="x " * 400)]
        span[0] = Message(role="user", content=span[0].content + " Discount 15% on SKU-4482.")
        text = await digest_of(span, "extractive/2")
        for fact in (
            "Please refund order 4520",
            "refund_order(orderId=4520",
            "amount=12.40",
            "reason=arrived broken",
            "totalCents=1240",
            "customer=CUST-7956",
            "15%",
            "3 days",
            "RF-2231",
        ):
            assert fact in text, fact

    async def test_an_earlier_summary_gives_its_digest_not_its_frame(self) -> None:
        """Folding a summary again keeps its facts and drops the runtime's frame."""
        inner = await digest_of(refund_span(), "extractive/2")
        summary = build_summary_message(inner, 6, 2, "extractive/2", "conversation")
        span = [summary, *refund_span()[1:]]
        text = await digest_of(span, "extractive/2")
        assert "Written by the runtime" not in text
        assert "earlier:" in text and "4520" in text

    async def test_when_facts_do_not_fit_the_newest_stay_and_the_rest_are_counted(self) -> None:
        """Eight lookups whose facts do not all fit: the newest order's facts stay, and the
        digest says how many facts were left out."""
        span: list[Message] = []
        for n in range(8):
            order = str(5000 + n)
            span += [
                Message(role="user", content=f"Check order {order}"),
                Message(
                    role="assistant",
                    tool_calls=(ToolCall(id=f"c{n}", name="lookup", args={"orderId": order}),),
                ),
                Message(
                    role="tool",
                    content=json.dumps(
                        {
                            "orderId": order,
                            "totalCents": 100 + n,
                            "customer": f"CUST-{7000 + n}",
                            "carrier": "Northpost",
                            "note": "nothing unusual about this order " * 3,
                        }
                    ),
                    tool_call_id=f"c{n}",
                    tool_name="lookup",
                ),
            ]
        text = await digest_of(span, "extractive/2")
        source = transcript(span, span)
        assert len(text) <= budget_of(parse_transcript(source))
        for fact in ("5007", "totalCents=107", "CUST-7007", "carrier=Northpost"):
            assert fact in text, (fact, text)
        assert "totalCents=100" not in text
        assert re.search(r"\(\+\d+ facts left out\)", text)

    async def test_a_long_span_keeps_its_newest_turns_whole(self) -> None:
        """A span far over the ceiling leaves out its oldest lines, counted, and the newest
        refunds keep their order ids and amounts (no line is left bare)."""
        span: list[Message] = []
        for n in range(120):
            order = str(10000 + n)
            span += [
                Message(role="user", content=f"Please refund order {order}: ${n}.40. " * 8),
                Message(
                    role="assistant",
                    tool_calls=(ToolCall(id=f"c{n}", name="refund", args={"orderId": order}),),
                ),
            ]
        text = await digest_of(span, "extractive/2")
        assert len(text) <= 2000
        assert "10119" in text and "$119.40" in text and "refund(orderId=10119)" in text
        assert re.search(r"\(\+\d+ lines left out\)$", text)
        assert "asked:\n" not in text and "10000" not in text


# --- properties -------------------------------------------------------------------------------

_VOCABULARY = frozenset(
    {"Digest", "of", "messages", "asked", "called", "returned", "said", "earlier", "system"}
    | {"text", "facts", "lines", "left", "out", "user", "assistant"}
)
_OWN = re.compile(r"Digest of \d+ messages:|\(\+\d+ (?:facts|lines) left out\)")
_PIECES = re.compile(r"[\s,()\[\]=:;…]+")
_SPACE = re.compile(r"\s+")

words = st.sampled_from(
    [
        "order",
        "4520",
        "$12.40",
        "3 days",
        "15%",
        "Ann",
        "Lee",
        "ann@example.com",
        "ORD-77",
        "refund",
        "the",
        "Parcelway.",
        "a=b",
        "x_y",
        "(",
        "]",
        "…",
        "\n",
        "Digest of 3 messages:",
    ]
)
prose = st.lists(words | st.text(max_size=12), max_size=40).map(" ".join)
scalars = st.text(max_size=12) | st.integers().map(str) | st.sampled_from(["4520", "12.40"])
json_values = st.recursive(
    scalars
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.booleans()
    | st.none(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=12,
)
names = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=14)


@st.composite
def spans(draw: st.DrawFn) -> list[Message]:
    """Asks, remarks, calls with JSON arguments, JSON and prose results, earlier summaries."""
    out: list[Message] = []
    for index in range(draw(st.integers(min_value=1, max_value=14))):
        kind = draw(st.sampled_from(["user", "assistant", "call", "json", "tool", "summary"]))
        if kind == "call":
            args = draw(st.dictionaries(names, json_values, max_size=3))
            call = ToolCall(id=f"c{index}", name=draw(names), args=args)
            out.append(Message(role="assistant", content=draw(prose), tool_calls=(call,)))
        elif kind in ("json", "tool"):
            body = json.dumps(draw(json_values)) if kind == "json" else draw(prose)
            name = draw(st.none() | names)
            out.append(Message(role="tool", content=body, tool_call_id="c", tool_name=name))
        elif kind == "summary":
            out.append(build_summary_message(draw(prose), 3, 2, "extractive/2", "conversation"))
        else:
            out.append(Message(role=kind, content=draw(prose)))
    return out


@settings(max_examples=80, deadline=None)
@given(span=spans())
async def test_the_digest_fits_its_budget_and_invents_nothing(span: list[Message]) -> None:
    """The digest never exceeds its budget, is the same every time, and every piece of it
    outside its own words (labels, header, counts) is verbatim in the transcript it read."""
    source = transcript(span, span)
    request = ModelRequest(model="extractive/2", messages=(Message(role="user", content=source),))
    text = (await ExtractiveSummarizer("extractive/2").send(request)).content
    again = (await ExtractiveSummarizer("extractive/2").send(request)).content
    assert text == again
    entries = parse_transcript(source)
    assert len(text) <= (budget_of(entries) if entries else 0)
    flat = _SPACE.sub(" ", source)
    for line in text.split("\n"):
        for piece in _PIECES.split(_OWN.sub(" ", line)):
            assert not piece or piece in _VOCABULARY or piece in flat, (piece, line)


def test_the_demo_fold_keeps_each_order_and_its_total(tmp_path: Path) -> None:
    """Through the ``afp`` process: the demo's own fold names the orders it folded, their
    totals and tracking numbers (``extractive/1`` kept no total)."""
    db = str(tmp_path / "afp.db")
    config = str(REPO / "configs" / "demo.toml")
    command = ["demo", "--turns", "6", "--db", db, "--config", config]
    demo = subprocess.run(
        [sys.executable, "-m", "afp_runtime.cli", *command],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert demo.returncode == 0, demo.stderr
    shown = subprocess.run(
        [sys.executable, "-m", "afp_runtime.cli", "checkpoint", "demo", "--db", db],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    summaries = [
        m["content"]
        for m in json.loads(shown)["history"]
        if m["role"] == "user" and m["content"].startswith(SUMMARY_PREFIX)
    ]
    assert summaries, "the demo folded nothing"
    digest = summaries[0].split("\n\n", 1)[1]
    for fact in ("4520", "totalCents=16880", "SW70554956", "Swift Freight"):
        assert fact in digest, (fact, digest)
