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
from afp_runtime.records import (
    CostSpent,
    IterationEnded,
    ModelEnded,
    ModelFailed,
    ModelStarted,
    ReceiptMinted,
    RunEnded,
    RunStarted,
    ToolEnded,
    ToolStarted,
)
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
        self.receipt: ReceiptMinted | None = None


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
            match event.payload:
                case RunStarted() as payload:
                    self._run_started(event, payload)
                case RunEnded() as payload:
                    self._run_ended(event, payload)
                case ReceiptMinted() as payload:
                    self._receipt_minted(event, payload)
                case ModelStarted() as payload:
                    self._model_started(event, payload)
                case ModelEnded() as payload:
                    self._model_ended(event, payload)
                case ModelFailed() as payload:
                    self._model_failed(event, payload)
                case ToolStarted() as payload:
                    self._tool_started(event, payload)
                case ToolEnded() as payload:
                    self._tool_ended(event, payload)
                case IterationEnded() as payload:
                    self._iterations.add(
                        1, {"afp.agent.id": event.agent_id, "afp.route": payload.route}
                    )
                case CostSpent() as payload:
                    self._cost_spent(event, payload)
        except Exception:
            log.exception("telemetry could not record an event", event_type=event.type)

    def _run_started(self, event: Event, payload: RunStarted) -> None:
        run_id, turn = payload.run_id, payload.turn
        own = run_span_context(event.agent_id, turn, run_id)
        links = []
        recovered = payload.recovered_from or None
        if recovered:
            crashed = run_span_context(event.agent_id, turn, recovered)
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
                    "afp.run.kind": payload.kind,
                    "afp.turn": turn,
                    **({"afp.run.recovered_from": recovered} if recovered else {}),
                },
            )
        finally:
            _NEXT_IDS.reset(token)
        assert isinstance(span, Span)
        self._runs_open[run_id] = _Run(span)

    def _run_ended(self, event: Event, payload: RunEnded) -> None:
        run = self._runs_open.pop(payload.run_id, None)
        if run is None:
            return
        status = payload.status
        run.span.set_attribute("afp.run.status", status)
        if self.options.capture_content and isinstance(payload.answer, str):
            run.span.set_attribute("gen_ai.output.messages", payload.answer)
        error = payload.error_kind or None
        if error:
            run.span.set_attribute("error.type", error)
            message = payload.error if isinstance(payload.error, str) else error
            run.span.set_status(Status(StatusCode.ERROR, message))
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

    def _receipt_minted(self, event: Event, payload: ReceiptMinted) -> None:
        run = self._runs_open.get(event.run_id or "")
        if run is not None:
            run.receipt = payload

    def _model_started(self, event: Event, payload: ModelStarted) -> None:
        run = self._runs_open.get(event.run_id or "")
        model = payload.model
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": payload.provider,
            "gen_ai.request.model": model,
            "afp.epoch": payload.epoch,
        }
        receipt = run.receipt if run is not None else None
        if receipt is not None and receipt.epoch == payload.epoch:
            call = receipt.agent_call
            attributes["afp.agent_call"] = call
            attributes["afp.inspector.path"] = f"/agents/{event.agent_id}/calls/{call}"
            if receipt.wire_digest:
                attributes["afp.receipt.wire_digest"] = receipt.wire_digest
        span = self._child(event, f"chat {model}", attributes)
        if run is not None and span is not None:
            run.chat = span

    def _model_ended(self, event: Event, payload: ModelEnded) -> None:
        run = self._runs_open.get(event.run_id or "")
        if run is None or run.chat is None:
            return
        span, run.chat = run.chat, None
        span.set_attribute("gen_ai.response.finish_reasons", [payload.stop_reason])
        started = dict(span.attributes or {})
        attributes = {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": str(started.get("gen_ai.request.model", "")),
            "gen_ai.provider.name": str(started.get("gen_ai.provider.name", "")),
        }
        for kind, tokens in (("input", payload.usage.input), ("output", payload.usage.output)):
            if not tokens:
                # As on the wire, where a count of 0 is left out: nothing is recorded.
                continue
            span.set_attribute(f"gen_ai.usage.{kind}_tokens", tokens)
            self._tokens.record(tokens, {**attributes, "gen_ai.token.type": kind})
        span.set_attribute("afp.attempts", payload.attempts)
        span.end(end_time=_ns(event.at_ms))
        self._model_duration.record(payload.duration_ms / 1000, attributes)

    def _model_failed(self, event: Event, payload: ModelFailed) -> None:
        run = self._runs_open.get(event.run_id or "")
        if run is None or run.chat is None:
            return
        span, run.chat = run.chat, None
        span.set_attribute("error.type", payload.error_kind)
        span.set_status(Status(StatusCode.ERROR, payload.message))
        span.end(end_time=_ns(event.at_ms))

    def _tool_started(self, event: Event, payload: ToolStarted) -> None:
        name, call_id = payload.tool_name, payload.tool_call_id
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

    def _tool_ended(self, event: Event, payload: ToolEnded) -> None:
        run = self._runs_open.get(event.run_id or "")
        span = run.tools.pop(payload.tool_call_id, None) if run else None
        status, name = payload.status, payload.tool_name
        if span is not None:
            span.set_attribute("afp.tool.status", status)
            if status != "ok":
                span.set_attribute("error.type", status)
                span.set_status(Status(StatusCode.ERROR, status))
            span.end(end_time=_ns(event.at_ms))
        self._tool_duration.record(
            payload.duration_ms / 1000, {"gen_ai.tool.name": name, "afp.tool.status": status}
        )

    def _cost_spent(self, event: Event, payload: CostSpent) -> None:
        """docs/cost.md#figures: an agent with pricing; a summarizer call without one has no
        amount and no unknown either, so it is not counted."""
        attributes = {"afp.agent.id": event.agent_id, "gen_ai.request.model": payload.model}
        if isinstance(payload.amount, float | int):
            self._cost.add(float(payload.amount), attributes)
        elif isinstance(payload.unknown, str):
            self._cost_unknown.add(1, {**attributes, "afp.cost.unknown": payload.unknown})

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
