"""OpenTelemetry metrics as the Prometheus text format (docs/telemetry.md#metrics): what
``GET /v1/metrics`` answers, from the host's own in-memory reader (no global registry)."""

from __future__ import annotations

import math
import re
from typing import Any

from opentelemetry.sdk.metrics.export import Histogram, MetricsData, Sum

__all__ = ["prometheus_text"]

_NOT_NAME = re.compile(r"[^a-zA-Z0-9_]")
_UNITS = {"s": "seconds", "ms": "milliseconds", "By": "bytes"}


def _name(name: str, unit: str) -> str:
    base = _NOT_NAME.sub("_", name)
    suffix = _UNITS.get(unit)
    return f"{base}_{suffix}" if suffix and not base.endswith(suffix) else base


def _escaped(value: object) -> str:
    text = str(value)
    return text.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels(attributes: Any, extra: dict[str, str] | None = None) -> str:
    pairs = {_NOT_NAME.sub("_", str(k)): v for k, v in dict(attributes or {}).items()}
    pairs.update(extra or {})
    if not pairs:
        return ""
    return "{" + ",".join(f'{k}="{_escaped(v)}"' for k, v in sorted(pairs.items())) + "}"


def _number(value: float) -> str:
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value)) if isinstance(value, float) else str(value)


def prometheus_text(data: MetricsData | None) -> str:
    """Counters as ``NAME_total``, histograms as ``_bucket``/``_sum``/``_count``, each with a
    ``# HELP`` and ``# TYPE`` line; names with ``.`` written ``_``, a seconds unit suffixed."""
    lines: list[str] = []
    for resource in data.resource_metrics if data is not None else ():
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                name = _name(metric.name, metric.unit or "")
                points = metric.data
                if isinstance(points, Sum):
                    total = name if name.endswith("_total") else f"{name}_total"
                    kind = "counter" if points.is_monotonic else "gauge"
                    lines.append(f"# HELP {total} {_escaped(metric.description)}")
                    lines.append(f"# TYPE {total} {kind}")
                    for number in points.data_points:
                        lines.append(f"{total}{_labels(number.attributes)} {number.value}")
                elif isinstance(points, Histogram):
                    lines.append(f"# HELP {name} {_escaped(metric.description)}")
                    lines.append(f"# TYPE {name} histogram")
                    for point in points.data_points:
                        cumulative = 0
                        bounds = [*point.explicit_bounds, math.inf]
                        for bound, count in zip(bounds, point.bucket_counts, strict=False):
                            cumulative += count
                            labels = _labels(point.attributes, {"le": _number(bound)})
                            lines.append(f"{name}_bucket{labels} {cumulative}")
                        lines.append(f"{name}_sum{_labels(point.attributes)} {point.sum}")
                        lines.append(f"{name}_count{_labels(point.attributes)} {point.count}")
    return "\n".join(lines) + "\n"
