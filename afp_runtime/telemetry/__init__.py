"""Traces and metrics in OpenTelemetry (docs/telemetry.md): ``Telemetry`` says what to export;
the host turns the loop's events into spans of the GenAI semantic conventions and into metrics.

Nothing here imports OpenTelemetry: ``Telemetry.start`` does (the ``otel`` extra), in a
worker thread, when a host with telemetry starts.
"""

from __future__ import annotations

from afp_runtime.telemetry._options import Telemetry, TelemetryConfig, TelemetrySink

__all__ = ["Telemetry", "TelemetryConfig", "TelemetrySink"]
