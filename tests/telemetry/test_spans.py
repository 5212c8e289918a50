"""Spans and metrics of a host's work in OpenTelemetry (docs/telemetry.md): one turn's span
tree with the GenAI attributes and ours, a recovery run linked to the run it recovers, the
Prometheus text of ``GET /v1/metrics``, and no OpenTelemetry import without telemetry."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import afp_runtime as afp
from afp_runtime.loop import SequentialIds
from afp_runtime.messages import ModelReply, ModelRequest, Usage
from afp_runtime.models import ScriptedModel
from afp_runtime.store.sqlite import SqliteStore
from afp_runtime.telemetry import Telemetry
from afp_runtime.telemetry._otel import run_span_context
from afp_runtime.testing import FakeClock, answer, call, tool_reply
from tests.api.conftest import agent, settle, watched_host


def _telemetry(exporter: InMemorySpanExporter, **options: Any) -> Telemetry:
    return Telemetry(span_exporter=exporter, metrics="none", **options)


async def _host(path: Path, clock: FakeClock, definition: afp.Agent, **options: Any) -> Any:
    store = await SqliteStore.open(path, now_ms=clock.now_ms())
    return store, watched_host(store, [definition], clock=clock, ids=SequentialIds(), **options)


def _by_name(spans: tuple[ReadableSpan, ...]) -> dict[str, list[ReadableSpan]]:
    named: dict[str, list[ReadableSpan]] = {}
    for span in spans:
        named.setdefault(span.name, []).append(span)
    return named


async def test_one_turn_is_a_span_tree_with_the_genai_attributes(tmp_path: Path) -> None:
    """A turn that calls a tool and answers: ``invoke_agent ops`` over two ``chat mock`` spans
    and one ``execute_tool alpha_tool``, each with its conventions' attributes and ours."""
    exporter = InMemorySpanExporter()
    clock = FakeClock()
    usage = Usage(input=120, output=7)
    definition = agent(
        [tool_reply(call("c1", "alpha_tool"), usage=usage), answer("done", usage=usage)]
    )
    store, host = await _host(
        tmp_path / "afp.db", clock, definition, telemetry=_telemetry(exporter)
    )
    try:
        async with host:
            await host.post("ops", "go")
            await settle(host)
            metrics = host.telemetry.prometheus() if host.telemetry else ""
    finally:
        await store.aclose()
    spans = _by_name(exporter.get_finished_spans())
    [run] = spans["invoke_agent ops"]
    chats, [tool] = spans["chat mock"], spans["execute_tool alpha_tool"]
    assert len(chats) == 2
    assert run.attributes is not None and chats[0].attributes and tool.attributes
    assert run.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert run.attributes["gen_ai.agent.id"] == "ops" == run.attributes["gen_ai.conversation.id"]
    run_id = str(run.attributes["afp.run.id"])
    expected = run_span_context("ops", 1, run_id)
    assert (run.context.trace_id, run.context.span_id) == (expected.trace_id, expected.span_id)
    for child in (*chats, tool):
        assert child.parent is not None and child.parent.span_id == run.context.span_id
        assert child.context.trace_id == run.context.trace_id
    first = chats[0].attributes
    assert first["gen_ai.operation.name"] == "chat" and first["gen_ai.request.model"] == "mock"
    assert first["gen_ai.provider.name"] == "scripted"
    assert tuple(first["gen_ai.response.finish_reasons"]) == ("tool-calls",)
    assert first["gen_ai.usage.input_tokens"] == 120 and first["gen_ai.usage.output_tokens"] == 7
    assert first["afp.epoch"] == 1 and first["afp.inspector.path"] == "/agents/ops/calls/1"
    assert tool.attributes["gen_ai.tool.name"] == "alpha_tool"
    assert tool.attributes["gen_ai.tool.call.id"] == "c1"
    assert "gen_ai.output.messages" not in run.attributes  # content is opt-in
    assert 'afp_iterations_total{afp_agent_id="ops",afp_route="tool-calls"} 1' in metrics
    assert "gen_ai_client_token_usage_count" in metrics and "afp_runs_total" in metrics


async def test_content_is_on_spans_only_when_opted_in(tmp_path: Path) -> None:
    """With ``capture_content`` the run's span carries its answer."""
    exporter = InMemorySpanExporter()
    clock = FakeClock()
    store, host = await _host(
        tmp_path / "afp.db",
        clock,
        agent([answer("the <answer>")]),
        telemetry=_telemetry(exporter, capture_content=True),
    )
    try:
        async with host:
            await host.post("ops", "go")
            await settle(host)
    finally:
        await store.aclose()
    [run] = _by_name(exporter.get_finished_spans())["invoke_agent ops"]
    assert run.attributes is not None
    assert run.attributes["gen_ai.output.messages"] == "the <answer>"


async def test_a_recovery_run_links_to_the_run_it_recovers(tmp_path: Path) -> None:
    """A host that ends while its model call hangs; the next host's recovery run is in the
    same trace as the cut-off run and links to its span."""
    clock = FakeClock()
    path = tmp_path / "afp.db"
    cut_spans, recovered_spans = InMemorySpanExporter(), InMemorySpanExporter()
    calling = anyio.Event()

    async def hang(request: ModelRequest, number: int) -> ModelReply:
        calling.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    store, host = await _host(
        path, clock, agent(ScriptedModel(hang, model="mock")), telemetry=_telemetry(cut_spans)
    )
    try:
        async with host:
            await host.post("ops", "go")
            with anyio.fail_after(20):
                await calling.wait()
    finally:
        await store.aclose()
    store, host = await _host(
        path, clock, agent([answer("done")]), telemetry=_telemetry(recovered_spans)
    )
    try:
        # The cut-off turn is taken up again at the worker's next look, on the clock.
        async with clock.autojump(), host:
            await settle(host)
    finally:
        await store.aclose()
    [cut] = _by_name(cut_spans.get_finished_spans())["invoke_agent ops"]
    runs = _by_name(recovered_spans.get_finished_spans())["invoke_agent ops"]
    [recovery] = [r for r in runs if r.attributes and r.attributes["afp.run.kind"] == "recovery"]
    assert recovery.context.trace_id == cut.context.trace_id
    [link] = recovery.links
    assert link.context.span_id == cut.context.span_id
    assert recovery.attributes is not None and cut.attributes is not None
    assert recovery.attributes["afp.run.recovered_from"] == cut.attributes["afp.run.id"]


def test_without_telemetry_opentelemetry_is_never_imported(tmp_path: Path) -> None:
    """A turn on an open store, without telemetry: no ``opentelemetry`` module is loaded."""
    code = (
        "import sys, anyio, afp_runtime as afp\n"
        "from afp_runtime.testing import answer\n"
        "async def main():\n"
        f"    async with afp.open({str(tmp_path / 'afp.db')!r}) as store:\n"
        "        agent = afp.Agent('a', afp.ScriptedModel([answer('hi')], model='m'))\n"
        "        print((await store.run(agent, 'hello')).answer)\n"
        "anyio.run(main)\n"
        "print(sorted(m for m in sys.modules if m.startswith('opentelemetry')))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["hi", "[]"]
