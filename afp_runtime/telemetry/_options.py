"""What a host exports (docs/telemetry.md#turning-it-on): ``Telemetry``, its agents-file
table, and what a started one is to the host. Nothing here imports OpenTelemetry."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Protocol

import msgspec

from afp_runtime.errors import ConfigError
from afp_runtime.loop import Event

__all__ = ["Telemetry", "TelemetryConfig", "TelemetrySink"]

Exporter = Literal["otlp", "console", "none"]


class TelemetrySink(Protocol):
    """What a started ``Telemetry`` is to the host: an event sink it can read and close."""

    def __call__(self, event: Event) -> None:
        """Take one event."""
        ...

    def prometheus(self) -> str:
        """Every metric now, in the Prometheus text format."""
        ...

    def committed(self, seconds: float, *, ok: bool) -> None:
        """One store transaction ended after ``seconds`` of wall time."""
        ...

    def shutdown(self) -> None:
        """End open spans and flush the exporters (blocking)."""
        ...


class TelemetryConfig(
    msgspec.Struct, frozen=True, kw_only=True, rename="camel", forbid_unknown_fields=True
):
    """``[host.telemetry]`` of an agents file; see ``Telemetry`` for each key."""

    enabled: bool = True
    traces: Exporter | None = None
    metrics: Exporter | None = None
    capture_content: bool = False
    service_name: str | None = None

    def telemetry(self) -> Telemetry | None:
        """The options it describes (None when not enabled)."""
        if not self.enabled:
            return None
        return Telemetry(
            traces=self.traces,
            metrics=self.metrics,
            capture_content=self.capture_content,
            service_name=self.service_name,
        )


@dataclass(frozen=True, slots=True)
class Telemetry:
    """What a host exports.

    Args:
        traces: where spans go: ``otlp`` (OTLP over HTTP, configured by the standard
            ``OTEL_EXPORTER_OTLP_*`` variables), ``console`` or ``none``; None reads
            ``OTEL_TRACES_EXPORTER`` (default ``otlp``).
        metrics: the same for metrics (``OTEL_METRICS_EXPORTER``); ``GET /v1/metrics`` serves
            them in Prometheus text whatever this says.
        capture_content: put the answer, tool arguments and results on spans (the
            conventions' opt-in attributes); off by default.
        service_name: the ``service.name`` resource attribute; None reads
            ``OTEL_SERVICE_NAME`` (default ``afp-runtime``).
        span_exporter: an exporter object of your own (an in-memory one in tests); wins over
            ``traces``.
        metric_reader: a metric reader of your own; wins over ``metrics``.
    """

    traces: Exporter | None = None
    metrics: Exporter | None = None
    capture_content: bool = False
    service_name: str | None = None
    span_exporter: Any = None
    metric_reader: Any = None

    def __post_init__(self) -> None:
        for key in ("traces", "metrics"):
            value = getattr(self, key)
            if value is not None and value not in ("otlp", "console", "none"):
                raise ConfigError(
                    f"telemetry {key} must be otlp, console or none, not {value!r}", field=key
                )

    def start(self) -> TelemetrySink:
        """The sink that turns events into spans and metrics. Imports OpenTelemetry (reads
        files): call it in a worker thread.

        Raises:
            ConfigError: the ``otel`` extra is not installed.
        """
        try:
            from afp_runtime.telemetry._otel import OtelSink
        except ImportError as exc:
            raise ConfigError(
                "telemetry is enabled but OpenTelemetry is not installed: "
                "pip install 'afp-runtime[otel]'"
            ) from exc
        return OtelSink(self)
