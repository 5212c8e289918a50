"""``afp.open`` and ``afp.Store``: running turns, their events and questions, finishing cut-off
work, and every read, on a real SQLite file."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

import afp_runtime as afp
from afp_runtime.errors import (
    ConfigError,
    InvalidValue,
    NotFound,
    QuestionClosed,
    StoreUnavailable,
)
from afp_runtime.messages import ModelRequest
from afp_runtime.records import ModelDelta
from afp_runtime.testing import FakeClock, answer, call, tool_reply


@afp.tool(idempotent=True)
def lookup_order(order_id: str) -> dict[str, str]:
    """Look an order up by its id."""
    return {"orderId": order_id, "status": "shipped"}


def support(*replies: afp.ModelReply, **options: Any) -> afp.Agent:
    model = afp.ScriptedModel(list(replies))
    return afp.Agent("support", model, tools=options.pop("tools", [lookup_order]), **options)


LOOKUP = tool_reply(call("c1", "lookup_order", order_id="1042"))


async def test_run_answers_and_every_read_shows_it(tmp_path: Path) -> None:
    """One call runs the turn to its answer; runs, epochs, served views and conformance read
    it back from the file."""
    agent = support(LOOKUP, answer("Order 1042 has shipped."))
    async with afp.open(tmp_path / "afp.db") as store:
        result = await store.run(agent, "Where is order 1042?")
        assert (result.status, result.answer) == ("answered", "Order 1042 has shipped.")
        assert result.turn == 1 and result.run_id is not None
        assert [run.run_id for run in result.runs] == [result.run_id]
        [run] = await store.runs(agent)
        assert (run.run_id, run.status, run.message_id) == (
            result.run_id,
            "answered",
            result.message_id,
        )
        epochs = await store.epochs(result.run_id)
        assert [(e.epoch, e.agent_call, e.tool_call_count) for e in epochs] == [
            (1, 1, 1),
            (2, 2, 0),
        ]
        view = await store.served(result.run_id, 2)
        assert [m.role for m in view.messages.as_sent] == ["user", "assistant", "tool"]
        assert '"shipped"' in view.messages.as_sent[2].content
        assert [r.verdict for r in await store.conform(result.run_id)] == [
            "verified",
            "verified",
        ]
        run_id, epoch, again = await store.call("support", 2)
        assert (run_id, epoch, again) == (result.run_id, 2, view)


async def test_stream_gives_the_turns_events_then_its_result(tmp_path: Path) -> None:
    """``stream`` yields the turn's events as they happen; the result follows."""
    agent = support(LOOKUP, answer("Shipped."))
    async with afp.open(tmp_path / "afp.db") as store:
        async with store.stream(agent, "Where is order 1042?") as events:
            types = [event.type async for event in events]
        assert types[0] == "inbox.accepted"
        assert {"turn.started", "tool.started", "tool.ended", "turn.ended"} <= set(types)
        assert types.index("tool.started") < types.index("tool.ended") < types.index("turn.ended")
        assert events.result.answer == "Shipped."


async def test_stream_gives_a_streamed_replys_fragments_as_they_arrive(tmp_path: Path) -> None:
    """A streamed reply's ``model.delta`` events reach the block while the model is still
    sending (its second fragment waits until the block saw the first); they assemble the
    answer, and the result is the committed reply."""
    seen_first = anyio.Event()

    async def pause(index: int) -> None:
        if index == 1:
            await seen_first.wait()

    streamed = afp.models.StreamedReply(reply=answer("Shipped on Monday."), sizes=(8,), pause=pause)
    agent = afp.Agent("support", afp.ScriptedModel([streamed]))
    texts: list[str] = []
    async with afp.open(tmp_path / "afp.db") as store:
        with anyio.fail_after(10):
            async with store.stream(agent, "Where is order 1042?") as events:
                async for event in events:
                    if isinstance(event.payload, ModelDelta):
                        texts.append(event.payload.text or "")
                        seen_first.set()
    assert texts == ["Shipped ", "on Monda", "y."]
    assert events.result.answer == "".join(texts)


async def test_stream_left_early_still_finishes_the_turn(tmp_path: Path) -> None:
    """Leaving the block after the first event waits for the turn, which still answers."""
    agent = support(LOOKUP, answer("Shipped."))
    async with afp.open(tmp_path / "afp.db") as store:
        async with store.stream(agent, "Where is order 1042?") as events:
            async for _ in events:
                break
        assert events.result.status == "answered"
        assert [r.status for r in await store.runs(agent)] == ["answered"]


async def test_result_before_the_turn_stops_is_an_error(tmp_path: Path) -> None:
    """Reading ``result`` while the turn still runs says so."""
    agent = support(LOOKUP, answer("Shipped."))
    async with afp.open(tmp_path / "afp.db") as store, store.stream(agent, "Where?") as events:
        with pytest.raises(RuntimeError, match="not stopped yet"):
            _ = events.result


async def test_a_tool_question_pauses_and_the_answer_finishes_the_turn(tmp_path: Path) -> None:
    """A tool that asks the person pauses the turn with its question; answering runs it on."""

    @afp.tool
    def confirm_address(order_id: str, ctx: afp.ToolContext) -> str:
        """Ask which address to ship to."""
        ctx.ask_person(f"Ship order {order_id} to which address?")

    agent = support(
        tool_reply(call("c1", "confirm_address", order_id="7")),
        answer("Noted."),
        tools=[confirm_address],
    )
    async with afp.open(tmp_path / "afp.db") as store:
        paused = await store.run(agent, "Change my address")
        assert paused.status == "paused" and paused.answer is None
        [question] = paused.questions
        assert (question.kind, question.prompt) == ("tool-ask", "Ship order 7 to which address?")
        assert [q.question_id for q in await store.questions(agent)] == [question.question_id]
        done = await store.answer(agent, question.question_id, "12 Canal Street")
        assert (done.status, done.answer, done.message_id) == (
            "answered",
            "Noted.",
            paused.message_id,
        )
        assert [run.kind for run in done.runs] == ["answer"]
        [epoch] = await store.epochs(done.run_id or "")
        view = await store.served(done.run_id or "", epoch.epoch)
        assert any("12 Canal Street" in m.content for m in view.messages.as_sent)
        with pytest.raises(QuestionClosed):
            await store.answer(agent, question.question_id, "again")


async def test_an_approval_declined_never_runs_the_tool(tmp_path: Path) -> None:
    """A check-in tool pauses for approval; declining it answers without running it."""
    ran: list[str] = []

    @afp.tool(check_in=True)
    def refund(order_id: str) -> str:
        """Refund an order."""
        ran.append(order_id)
        return "refunded"

    agent = support(
        tool_reply(call("c1", "refund", order_id="9")), answer("Not refunded."), tools=[refund]
    )
    async with afp.open(tmp_path / "afp.db") as store:
        paused = await store.run(agent, "Refund order 9")
        [question] = paused.questions
        assert question.kind == "approval"
        done = await store.answer(agent, question.question_id, {"decision": "decline"})
        assert done.status == "answered" and ran == []


async def test_abandon_closes_the_question_and_the_turn_goes_on(tmp_path: Path) -> None:
    """An abandoned question lets the turn finish (the tool hears there was no reply)."""

    @afp.tool
    def ask(ctx: afp.ToolContext) -> str:
        """Ask."""
        ctx.ask_person("Which one?")

    agent = support(tool_reply(call("c1", "ask")), answer("I will wait."), tools=[ask])
    async with afp.open(tmp_path / "afp.db") as store:
        paused = await store.run(agent, "Help")
        done = await store.abandon(agent, paused.questions[0].question_id)
        assert (done.status, done.answer) == ("answered", "I will wait.")
        with pytest.raises(NotFound):
            await store.abandon(agent, "q-nope")


async def test_work_finishes_a_turn_cut_off_mid_tool(tmp_path: Path) -> None:
    """A turn cancelled while its tool runs (as a crash would cut it) is finished by the next
    ``work()``, in a new ``Store`` on the same file."""
    started = anyio.Event()
    blocked = {"on": True}

    @afp.tool(idempotent=True)
    async def slow_lookup(order_id: str) -> str:
        """Look an order up, slowly."""
        if blocked["on"]:
            started.set()
            await anyio.sleep_forever()
        return f"order {order_id}: shipped"

    def script(request: ModelRequest, number: int) -> afp.ModelReply:
        if request.messages[-1].role == "tool":
            return answer(f"Done: {request.messages[-1].content}")
        return tool_reply(call("c1", "slow_lookup", order_id="5"))

    agent = afp.Agent("support", afp.ScriptedModel(script), tools=[slow_lookup])
    path = tmp_path / "afp.db"
    async with afp.open(path) as store, anyio.create_task_group() as group:
        group.start_soon(store.run, agent, "Where is order 5?")
        await started.wait()
        group.cancel_scope.cancel()
    blocked["on"] = False
    async with afp.open(path) as store:
        [result] = await store.work(agent)
        assert (result.status, result.answer) == ("answered", "Done: order 5: shipped")
        assert [run.kind for run in await store.runs(agent)] == ["initial", "recovery"]


async def test_a_held_turn_queues_the_next_message(tmp_path: Path) -> None:
    """A message behind a held turn is queued, and the result says why the turn is held."""
    agent = support()  # no replies: the first call exhausts the script and holds the turn
    async with afp.open(tmp_path / "afp.db") as store:
        held = await store.run(agent, "first")
        assert (held.status, held.error_kind) == ("held", "script-exhausted")
        queued = await store.run(agent, "second")
        assert queued.status == "queued" and queued.run_id is None and queued.runs == ()


async def test_a_retried_send_is_the_same_message_with_its_answer(tmp_path: Path) -> None:
    """The same idempotency key and text give the first message's result, answer included."""
    agent = support(LOOKUP, answer("Shipped."))
    async with afp.open(tmp_path / "afp.db") as store:
        first = await store.run(agent, "Where?", idempotency_key="k-1")
        again = await store.run(agent, "Where?", idempotency_key="k-1")
        assert (again.message_id, again.status, again.answer) == (
            first.message_id,
            "answered",
            "Shipped.",
        )
        assert again.runs == () and len(await store.runs(agent)) == 1


async def test_folds_and_their_originals_come_back(tmp_path: Path) -> None:
    """A summarize-oldest fold is listed with its originals, byte-identical to what was
    folded, also by its summary's fingerprint."""

    @afp.tool
    def order_history(order_id: str) -> str:
        """An order's long history."""
        return f"order {order_id}: " + "packed, moved, scanned; " * 40

    def script(request: ModelRequest, number: int) -> afp.ModelReply:
        last = request.messages[-1]
        usage = afp.Usage(input=50 * len(request.messages), output=5)
        if last.role == "user":
            return tool_reply(
                call(f"c{number}", "order_history", order_id=str(number)), usage=usage
            )
        return answer(f"Order {number} looked up.", usage=usage)

    window = afp.summarize_oldest(
        threshold_tokens=200,
        summarizer=afp.ExtractiveSummarizer(),
        model="extractive/1",
        keep_recent_turns=1,
    )
    agent = afp.Agent("support", afp.ScriptedModel(script), tools=[order_history], window=window)
    async with afp.open(tmp_path / "afp.db", clock=FakeClock()) as store:
        for n in range(4):
            assert (await store.run(agent, f"Where is order {n}?")).status == "answered"
        spans = await store.folded(agent)
        assert spans
        span = spans[0]
        originals = await store.originals(agent, span.summary_fingerprint)
        assert tuple(originals) == span.messages
        assert originals[0].content == "Where is order 0?"
        with pytest.raises(NotFound):
            await store.originals(agent, "0" * 64)


async def test_the_findings_ledger_is_read_back(tmp_path: Path) -> None:
    """An armed agent's declarations are filed; ``findings`` lists the rows."""
    declared = call("c1", "lookup_order", order_id="1", _findings={"basis": "direct"})
    agent = support(tool_reply(declared), answer("ok"), findings=afp.FindingsConfig())
    async with afp.open(tmp_path / "afp.db") as store:
        await store.run(agent, "Check order 1")
        rows = await store.findings(agent)
        assert [(r["kind"], r["toolCallId"], r["basis"]) for r in rows] == [
            ("basis", "c1", "direct")
        ]
        assert await store.findings(agent, kind="standing") == []


async def test_unknown_names_are_not_found(tmp_path: Path) -> None:
    """Reads of an agent, run or epoch that does not exist raise NotFound naming it."""
    agent = support(LOOKUP, answer("ok"))
    async with afp.open(tmp_path / "afp.db") as store:
        with pytest.raises(NotFound, match="no agent 'nobody'"):
            await store.runs("nobody")
        with pytest.raises(NotFound, match="no run 'run-x'"):
            await store.epochs("run-x")
        result = await store.run(agent, "Where?")
        with pytest.raises(NotFound, match="no epoch 9"):
            await store.served(result.run_id or "", 9)
        with pytest.raises(NotFound, match="no model call 7"):
            await store.call(agent, 7)


@pytest.mark.parametrize("bad", ["1", True, 1.0, None])
async def test_a_call_or_epoch_number_that_is_no_whole_number_is_refused_naming_it(
    tmp_path: Path, bad: Any
) -> None:
    """Epoch, call and turn numbers of every read are checked before anything is read: a
    string, a bool or a float is an InvalidValue naming the argument, not a TypeError from
    deep inside a read."""
    agent = support(answer("ok"))
    async with afp.open(tmp_path / "afp.db") as store:
        run_id = (await store.run(agent, "Where?")).run_id or ""
        reads = {
            "epoch": [lambda: store.served(run_id, bad)],
            "before": [lambda: store.diff(run_id, bad, 1)],
            "after": [lambda: store.diff(run_id, 1, bad)],
            "n": [lambda: store.call(agent, bad)],
        }
        if bad is not None:  # None there means every epoch, every turn
            reads["epoch"].append(lambda: store.conform(run_id, bad))
            reads["turn"] = [lambda: store.findings(agent, turn=bad)]
        for name, calls in reads.items():
            for read in calls:
                with pytest.raises(InvalidValue, match=f"^{name} must be a whole number") as err:
                    await read()
                assert err.value.context == {"field": name}


async def test_urls_name_a_sqlite_file_and_other_schemes_are_refused(tmp_path: Path) -> None:
    """``sqlite:///`` URLs open the file they name; a Postgres URL goes to the Postgres backend
    (here nobody listens: StoreUnavailable); unknown schemes are refused."""
    target = tmp_path / "url.db"
    async with afp.open(f"sqlite:///{target}") as store:
        assert store.path == target
    assert await anyio.Path(target).exists()
    with pytest.raises(ConfigError):
        async with afp.open("redis://x"):
            pass
    with pytest.raises(StoreUnavailable):
        async with afp.open("postgresql://ann:pw@127.0.0.1:1/afp"):
            pass


async def test_host_answers_posted_messages(tmp_path: Path) -> None:
    """``store.host`` runs a standing host inside the block; a posted message is answered."""
    agent = support(LOOKUP, answer("Shipped."))
    async with afp.open(tmp_path / "afp.db") as store:
        async with store.host([agent], poll_interval_s=0.05) as host:
            with host.events.subscribe(types=["turn.ended"]) as ended:
                ack = await host.post("support", "Where is order 1042?")
                with anyio.fail_after(20):
                    event = await ended.__anext__()
        assert isinstance(event, afp.Event) and event.payload.status == "answered"
        [run] = await store.runs(agent)
        assert (run.message_id, run.status) == (ack.message_id, "answered")


async def test_serve_runs_the_host_and_the_api_until_cancelled(tmp_path: Path) -> None:
    """``store.serve`` answers over HTTP and stops when its task is cancelled."""
    agent = support(LOOKUP, answer("Shipped."))
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    async with afp.open(tmp_path / "afp.db") as store, anyio.create_task_group() as group:
        with anyio.fail_after(30):
            group.start_soon(lambda: store.serve([agent], port=port, handle_signals=False))
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:
                while True:
                    try:
                        if (await client.get("/v1/health")).status_code == 200:
                            break
                    except httpx.TransportError:
                        await anyio.sleep(0.05)
                posted = await client.post(
                    "/v1/agents/support/inbox", json={"text": "Where is order 1042?"}
                )
                assert posted.status_code == 202
                message_id = posted.json()["messageId"]
                status = ""
                while status != "answered":
                    reply = await client.get(f"/v1/agents/support/inbox/{message_id}")
                    status = reply.json()["status"]
                    await anyio.sleep(0.05)
        group.cancel_scope.cancel()


async def test_an_argument_beyond_64_bits_reaches_the_tool_and_is_kept(tmp_path: Path) -> None:
    """A model's integer argument that MessagePack cannot hold (10**30) is committed with the
    reply, reaches the tool as that int, and every epoch still conforms after reopening."""
    seen: list[int] = []

    @afp.tool
    def count(n: int) -> str:
        """Count to n."""
        seen.append(n)
        return "counted"

    agent = support(tool_reply(call("c1", "count", n=10**30)), answer("done"), tools=[count])
    async with afp.open(tmp_path / "afp.db") as store:
        result = await store.run(agent, "count")
    assert result.status == "answered" and seen == [10**30]
    async with afp.open(tmp_path / "afp.db") as store:
        verdicts = [r.verdict for r in await store.conform(result.run_id)]
        replayed = (await store.served(result.run_id, 2)).messages.as_sent
    assert verdicts == ["verified", "verified"]
    assert replayed[1].tool_calls[0].args == {"n": 10**30}


async def test_questions_refuses_a_status_that_is_none_of_them(tmp_path: Path) -> None:
    """``store.questions(agent, status=...)`` with a word that is no question status is an
    InvalidValue naming it, where it used to answer an empty list as if none were open."""
    agent = support(answer("hi"))
    async with afp.open(tmp_path / "afp.db") as store:
        await store.run(agent, "hello")
        assert await store.questions(agent, status=None) == []
        with pytest.raises(InvalidValue, match="status must be one of open"):
            await store.questions(agent, status="weird")
