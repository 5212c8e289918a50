"""The loop's events as OpenTelemetry spans and metrics (docs/telemetry.md#spans,
docs/telemetry.md#metrics).

A run is an ``invoke_agent`` span, its model calls ``chat`` spans and its tool calls
``execute_tool`` spans under it, timed by the events' clock. A run's trace id comes from its
agent and turn and its span id from its run id, so every run of a turn shares a trace, across
restarts too, and a recovery run links to the span of the run it recovers.
"""

from __future__ import annotations

import contextvars
import hashlib
import os
import random
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import (
    ConsoleMetricExporter,
    InMemoryMetricReader,
    MetricReader,
    PeriodicExportingMetricReader,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Span, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    ConsoleSpanExporter,
    SimpleSpanProcessor,
    SpanExporter,
)
from opentelemetry.sdk.trace.id_generator import IdGenerator
from opentelemetry.trace import Link, SpanContext, SpanKind, Status, StatusCode, TraceFlags

from afp_runtime._logging import get_logger
from afp_runtime.loop import Event
from afp_runtime.telemetry import Telemetry
from afp_runtime.telemetry._prometheus import prometheus_text

__all__ = ["OtelSink", "run_span_context"]

log = get_logger()

# The ids the next root span takes (a run's); unset, the generator draws random ones.
_NEXT_IDS: contextvars.ContextVar[tuple[int, int] | None] = contextvars.ContextVar(
    "afp_next_span_ids", default=None
)


class _RunIds(IdGenerator):
    """Random ids, except for a run's span: derived from its agent, turn and run."""

    def __init__(self) -> None:
        self._random = random.Random()

    def generate_span_id(self) -> int:
        chosen = _NEXT_IDS.get()
        return chosen[1] if chosen is not None else self._random.getrandbits(64) or 1

    def generate_trace_id(self) -> int:
        chosen = _NEXT_IDS.get()
        return chosen[0] if chosen is not None else self._random.getrandbits(128) or 1


def _number(text: str, bits: int) -> int:
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[: bits // 8]) or 1


def run_span_context(agent_id: str, turn: int, run_id: str) -> SpanContext:
    """The trace and span id a run's ``invoke_agent`` span has, in any process."""
    return SpanContext(
        trace_id=_number(f"afp-turn\0{agent_id}\0{turn}", 128),
        span_id=_number(f"afp-run\0{run_id}", 64),
        is_remote=False,
        trace_flags=TraceFlags(TraceFlags.SAMPLED),
    )


def _ns(ms: int) -> int:
    return ms * 1_000_000


def _exporter_choice(given: str | None, variable: str) -> str:
    chosen = given or os.environ.get(variable, "otlp")
    return chosen.split(",")[0].strip() or "otlp"


class _Run:
    """The open spans of one run."""

    def __init__(self, span: Span) -> None:
        self.span = span
        self.chat: Span | None = None
        self.tools: dict[str, Span] = {}
        self.receipt: dict[str, Any] = {}


class OtelSink:
    """Receives the host's events (an ``EventSink``); owns the providers it made."""

    def __init__(self, options: Telemetry) -> None:
        self.options = options
        service = options.service_name or os.environ.get("OTEL_SERVICE_NAME") or "afp-runtime"
        resource = Resource.create({"service.name": service})
        self.tracer_provider = TracerProvider(resource=resource, id_generator=_RunIds())
        exporter = self._span_exporter()
        if exporter is not None:
            processor = (
                SimpleSpanProcessor(exporter)
                if options.span_exporter is not None
                else BatchSpanProcessor(exporter)
            )
            self.tracer_provider.add_span_processor(processor)
        # Always one reader for GET /v1/metrics; another exports where configured.
        self.metrics_reader = InMemoryMetricReader()
        readers: list[MetricReader] = [self.metrics_reader]
        other = self._metric_reader()
        if other is not None:
            readers.append(other)
        self.meter_provider = MeterProvider(resource=resource, metric_readers=readers)
        self.tracer = self.tracer_provider.get_tracer("afp_runtime")
        meter = self.meter_provider.get_meter("afp_runtime")
        self._iterations = meter.create_counter(
            "afp.iterations", unit="{iteration}", description="ReAct iterations ended"
        )
        self._runs = meter.create_counter("afp.runs", unit="{run}", description="runs ended")
        self._model_duration = meter.create_histogram(
            "gen_ai.client.operation.duration", unit="s", description="model call duration"
        )
        self._tokens = meter.create_histogram(
            "gen_ai.client.token.usage", unit="{token}", description="tokens per model call"
        )
        self._tool_duration = meter.create_histogram(
            "afp.tool.duration", unit="s", description="tool call duration"
        )
        self._commits = meter.create_counter(
            "afp.commits", unit="{transaction}", description="store transactions committed"
        )
        self._commit_duration = meter.create_histogram(
            "afp.commit.duration", unit="s", description="store transaction latency (wall time)"
        )
        self._cost = meter.create_counter(
            "afp.cost", unit="1", description="known cost of model calls (pricing table currency)"
        )
        self._cost_unknown = meter.create_counter(
            "afp.cost.unknown", unit="{call}", description="model calls whose cost is unknown"
        )
        self._runs_open: dict[str, _Run] = {}

    def _span_exporter(self) -> SpanExporter | None:
        if self.options.span_exporter is not None:
            exporter: SpanExporter = self.options.span_exporter
            return exporter
        choice = _exporter_choice(self.options.traces, "OTEL_TRACES_EXPORTER")
        if choice == "console":
            return ConsoleSpanExporter()
        if choice == "otlp":
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

            return OTLPSpanExporter()
        return None

    def _metric_reader(self) -> MetricReader | None:
        if self.options.metric_reader is not None:
            reader: MetricReader = self.options.metric_reader
            return reader
        choice = _exporter_choice(self.options.metrics, "OTEL_METRICS_EXPORTER")
        if choice == "console":
            return PeriodicExportingMetricReader(ConsoleMetricExporter())
        if choice == "otlp":
            from opentelemetry.exporter.otlp.proto.http.metric_exporter import (
                OTLPMetricExporter,
            )

            return PeriodicExportingMetricReader(OTLPMetricExporter())
        return None

    # -- events ---------------------------------------------------------------------------------

    def __call__(self, event: Event) -> None:
        """Take one event; a failure here is logged, never the loop's."""
        try:
            handler = _HANDLERS.get(event.type)
            if handler is not None:
                handler(self, event)
        except Exception:
            log.exception("telemetry could not record an event", event_type=event.type)

    def _run_started(self, event: Event) -> None:
        payload = event.payload
        run_id, turn = str(payload["runId"]), int(payload["turn"])
        own = run_span_context(event.agent_id, turn, run_id)
        links = []
        recovered = payload.get("recoveredFrom")
        if recovered:
            crashed = run_span_context(event.agent_id, turn, str(recovered))
            links.append(Link(crashed, {"afp.link": "recovers"}))
        token = _NEXT_IDS.set((own.trace_id, own.span_id))
        try:
            span = self.tracer.start_span(
                f"invoke_agent {event.agent_id}",
                kind=SpanKind.INTERNAL,
                start_time=_ns(event.at_ms),
                links=links,
                attributes={
                    "gen_ai.operation.name": "invoke_agent",
                    "gen_ai.agent.id": event.agent_id,
                    "gen_ai.agent.name": event.agent_id,
                    "gen_ai.conversation.id": event.agent_id,
                    "afp.agent.id": event.agent_id,
                    "afp.run.id": run_id,
                    "afp.run.kind": str(payload.get("kind", "")),
                    "afp.turn": turn,
                    **({"afp.run.recovered_from": str(recovered)} if recovered else {}),
                },
            )
        finally:
            _NEXT_IDS.reset(token)
        assert isinstance(span, Span)
        self._runs_open[run_id] = _Run(span)

    def _run_ended(self, event: Event) -> None:
        payload = event.payload
        run = self._runs_open.pop(str(payload.get("runId", event.run_id)), None)
        if run is None:
            return
        status = str(payload.get("status", ""))
        run.span.set_attribute("afp.run.status", status)
        if self.options.capture_content and payload.get("answer") is not None:
            run.span.set_attribute("gen_ai.output.messages", str(payload["answer"]))
        error = payload.get("errorKind")
        if error:
            run.span.set_attribute("error.type", str(error))
            run.span.set_status(Status(StatusCode.ERROR, str(payload.get("error", error))))
        for open_span in [*run.tools.values(), *([run.chat] if run.chat else [])]:
            open_span.end(end_time=_ns(event.at_ms))
        run.span.end(end_time=_ns(event.at_ms))
        self._runs.add(1, {"afp.run.status": status})

    def _child(self, event: Event, name: str, attributes: dict[str, Any]) -> Span | None:
        run = self._runs_open.get(event.run_id or "")
        if run is None:
            return None
        context = trace.set_span_in_context(run.span)
        span = self.tracer.start_span(
            name,
            context=context,
            kind=SpanKind.CLIENT,
            start_time=_ns(event.at_ms),
            attributes={
                "afp.agent.id": event.agent_id,
                "afp.run.id": event.run_id or "",
                **attributes,
            },
        )
        assert isinstance(span, Span)
        return span

    def _receipt_minted(self, event: Event) -> None:
        run = self._runs_open.get(event.run_id or "")
        if run is not None:
            run.receipt = dict(event.payload)

    def _model_started(self, event: Event) -> None:
        run = self._runs_open.get(event.run_id or "")
        payload = event.payload
        model = str(payload.get("model", ""))
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": str(payload.get("provider", "")),
            "gen_ai.request.model": model,
            "afp.epoch": int(payload.get("epoch", 0)),
        }
        receipt = run.receipt if run is not None else {}
        if receipt.get("epoch") == payload.get("epoch"):
            call = receipt.get("agentCall")
            if call is not None:
                attributes["afp.agent_call"] = int(call)
                attributes["afp.inspector.path"] = f"/agents/{event.agent_id}/calls/{call}"
            if receipt.get("wireDigest"):
                attributes["afp.receipt.wire_digest"] = str(receipt["wireDigest"])
        span = self._child(event, f"chat {model}", attributes)
        if run is not None and span is not None:
            run.chat = span

    def _model_ended(self, event: Event) -> None:
        run = self._runs_open.get(event.run_id or "")
        if run is None or run.chat is None:
            return
        span, run.chat = run.chat, None
        payload = event.payload
        usage = payload.get("usage") or {}
        span.set_attribute("gen_ai.response.finish_reasons", [str(payload.get("stopReason"))])
        started = dict(span.attributes or {})
        attributes = {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": str(started.get("gen_ai.request.model", "")),
            "gen_ai.provider.name": str(started.get("gen_ai.provider.name", "")),
        }
        for key, kind in (("input", "input"), ("output", "output")):
            tokens = usage.get(key)
            if isinstance(tokens, int):
                span.set_attribute(f"gen_ai.usage.{kind}_tokens", tokens)
                self._tokens.record(tokens, {**attributes, "gen_ai.token.type": kind})
        span.set_attribute("afp.attempts", int(payload.get("attempts", 1)))
        span.end(end_time=_ns(event.at_ms))
        self._model_duration.record(int(payload.get("durationMs", 0)) / 1000, attributes)

    def _model_failed(self, event: Event) -> None:
        run = self._runs_open.get(event.run_id or "")
        if run is None or run.chat is None:
            return
        span, run.chat = run.chat, None
        kind = str(event.payload.get("errorKind", "model-error"))
        span.set_attribute("error.type", kind)
        span.set_status(Status(StatusCode.ERROR, str(event.payload.get("message", kind))))
        span.end(end_time=_ns(event.at_ms))

    def _tool_started(self, event: Event) -> None:
        payload = event.payload
        name, call_id = str(payload.get("toolName", "")), str(payload.get("toolCallId", ""))
        span = self._child(
            event,
            f"execute_tool {name}",
            {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": name,
                "gen_ai.tool.call.id": call_id,
            },
        )
        run = self._runs_open.get(event.run_id or "")
        if run is not None and span is not None:
            run.tools[call_id] = span

    def _tool_ended(self, event: Event) -> None:
        run = self._runs_open.get(event.run_id or "")
        payload = event.payload
        span = run.tools.pop(str(payload.get("toolCallId", "")), None) if run else None
        status = str(payload.get("status", ""))
        name = str(payload.get("toolName", ""))
        if span is not None:
            span.set_attribute("afp.tool.status", status)
            if status != "ok":
                span.set_attribute("error.type", status)
                span.set_status(Status(StatusCode.ERROR, status))
            span.end(end_time=_ns(event.at_ms))
        self._tool_duration.record(
            int(payload.get("durationMs", 0)) / 1000,
            {"gen_ai.tool.name": name, "afp.tool.status": status},
        )

    def _cost_spent(self, event: Event) -> None:
        """docs/cost.md#figures: an agent with pricing; a summarizer call without one has no
        amount and no unknown either, so it is not counted."""
        payload = event.payload
        attributes = {
            "afp.agent.id": event.agent_id,
            "gen_ai.request.model": str(payload.get("model", "")),
        }
        amount = payload.get("amount")
        if isinstance(amount, (int, float)):
            self._cost.add(float(amount), attributes)
        elif payload.get("unknown") is not None:
            self._cost_unknown.add(1, {**attributes, "afp.cost.unknown": str(payload["unknown"])})

    def _iteration_ended(self, event: Event) -> None:
        self._iterations.add(
            1, {"afp.agent.id": event.agent_id, "afp.route": str(event.payload.get("route", ""))}
        )

    def committed(self, seconds: float, *, ok: bool) -> None:
        """One store transaction ended: counted, its latency recorded."""
        attributes = {"afp.commit.outcome": "ok" if ok else "error"}
        self._commits.add(1, attributes)
        self._commit_duration.record(seconds, attributes)

    # -- reading and closing ------------------------------------------------------------------

    def prometheus(self) -> str:
        """Every metric now, in the Prometheus text format."""
        return prometheus_text(self.metrics_reader.get_metrics_data())

    def shutdown(self) -> None:
        """End what is open and flush the exporters (blocking: a worker thread)."""
        for run in self._runs_open.values():
            run.span.end()
        self._runs_open.clear()
        self.tracer_provider.shutdown()
        self.meter_provider.shutdown()


_HANDLERS = {
    "run.started": OtelSink._run_started,
    "run.ended": OtelSink._run_ended,
    "receipt.minted": OtelSink._receipt_minted,
    "model.started": OtelSink._model_started,
    "model.ended": OtelSink._model_ended,
    "model.failed": OtelSink._model_failed,
    "tool.started": OtelSink._tool_started,
    "tool.ended": OtelSink._tool_ended,
    "iteration.ended": OtelSink._iteration_ended,
    "cost.spent": OtelSink._cost_spent,
}
