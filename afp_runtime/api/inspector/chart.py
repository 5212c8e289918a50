"""The window chart of an agent's page (docs/inspector.md#window-chart): its newest calls'
characters sent and tokens reported as two lines on two axes, folds and drops marked, each call
a point that links to its page and names its figures (cost too when the agent is priced). Laid
out here, drawn as inline SVG by ``_window_chart.html``: no script, nothing fetched, every text
escaped by the template engine."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final

from afp_runtime.api._context import ApiContext
from afp_runtime.app import WindowPoint, WindowSeries, window_series

__all__ = ["chart_layout", "window_chart"]

WIDTH: Final = 960
HEIGHT: Final = 280
# Room for the left axis (chars), the right one (tokens), and the call numbers below.
_LEFT, _RIGHT, _TOP, _BOTTOM = 72, 72, 24, 40
_PLOT_W = WIDTH - _LEFT - _RIGHT
_PLOT_H = HEIGHT - _TOP - _BOTTOM
# Call numbers written under the axis, at most.
_X_LABELS = 10


def _nice(top: int) -> int:
    """The axis' top: ``top`` rounded up to 1, 2 or 5 times a power of ten (1 at least)."""
    scale = 1
    while True:
        for step in (1, 2, 5):
            if step * scale >= top:
                return step * scale
        scale *= 10


def _ticks(top: int, y: Callable[[float], float]) -> list[dict[str, Any]]:
    return [{"y": y(top * part / 2), "label": f"{top * part // 2:,}"} for part in (0, 1, 2)]


def _path(coordinates: Sequence[tuple[float, float] | None]) -> str:
    """An SVG path through the coordinates, broken where one is missing."""
    parts, pen_down = [], False
    for found in coordinates:
        if found is None:
            pen_down = False
            continue
        parts.append(f"{'L' if pen_down else 'M'}{found[0]:.1f},{found[1]:.1f}")
        pen_down = True
    return " ".join(parts)


def _cost(point: WindowPoint) -> str | None:
    if point.cost is not None:
        return f"cost {point.cost:.6g}"
    if point.cost_unknown is not None:
        return f"cost unknown ({point.cost_unknown})"
    return None


def _title(point: WindowPoint) -> str:
    """What a point says on hover: the call, its figures, how it ended, what shaped it."""
    tokens = (
        "no tokens reported"
        if point.input_tokens is None
        else f"{point.input_tokens:,} tokens in, {point.output_tokens or 0:,} out"
    )
    parts = [f"call {point.agent_call}", f"{point.chars_sent:,} chars sent", tokens]
    cost = _cost(point)
    if cost is not None:
        parts.append(cost)
    if point.outcome != "replied":
        parts.append(point.outcome)
    if point.fold is not None:
        parts.append(f"after the fold {point.fold[:12]}")
    if point.dropped:
        parts.append(f"after {point.dropped} messages dropped")
    return " · ".join(parts)


def _caption(series: WindowSeries) -> str:
    shown = series.points
    if not shown:
        return "No model call yet."
    first, last = shown[0].agent_call, shown[-1].agent_call
    if series.calls > len(shown):
        return (
            f"Calls {first} to {last} of {series.calls}: the newest {series.limit} are shown "
            "(older calls are on their call pages)."
        )
    return f"Calls {first} to {last}."


def chart_layout(series: WindowSeries) -> dict[str, Any]:
    """Where everything of the chart sits, in the SVG's own units (a ``WIDTH`` by ``HEIGHT``
    view box); the template draws it."""
    points = series.points
    layout: dict[str, Any] = {
        "width": WIDTH,
        "height": HEIGHT,
        "caption": _caption(series),
        "points": [],
        "priced": any(p.cost is not None or p.cost_unknown is not None for p in points),
    }
    if not points:
        return layout
    chars_top = _nice(max(p.chars_sent for p in points))
    tokens_top = _nice(max((p.input_tokens or 0 for p in points), default=0))

    def x(index: int) -> float:
        return _LEFT + _PLOT_W * (index + 0.5) / len(points)

    def y_chars(value: float) -> float:
        return _TOP + _PLOT_H * (1 - value / chars_top)

    def y_tokens(value: float) -> float:
        return _TOP + _PLOT_H * (1 - value / tokens_top)

    laid = [
        {
            "call": p.agent_call,
            "chars": p.chars_sent,
            "tokens": p.input_tokens,
            "x": x(i),
            # The whole column is the point's target: hovering anywhere in it names the call.
            "column_x": _LEFT + _PLOT_W * i / len(points),
            "y_chars": y_chars(p.chars_sent),
            "y_tokens": None if p.input_tokens is None else y_tokens(p.input_tokens),
            "title": _title(p),
            "outcome": p.outcome,
        }
        for i, p in enumerate(points)
    ]
    every = max(1, -(-len(points) // _X_LABELS))
    layout.update(
        points=laid,
        column_width=_PLOT_W / len(points),
        left=_LEFT,
        right=WIDTH - _RIGHT,
        top=_TOP,
        bottom=HEIGHT - _BOTTOM,
        chars_ticks=_ticks(chars_top, y_chars),
        tokens_ticks=_ticks(tokens_top, y_tokens),
        x_labels=[p for i, p in enumerate(laid) if i % every == 0 or i == len(laid) - 1],
        chars_path=_path([(x(i), y_chars(p.chars_sent)) for i, p in enumerate(points)]),
        tokens_path=_path(
            [
                None if p.input_tokens is None else (x(i), y_tokens(p.input_tokens))
                for i, p in enumerate(points)
            ]
        ),
        folds=[
            {"x": x(i), "call": p.agent_call, "fingerprint": p.fold}
            for i, p in enumerate(points)
            if p.fold is not None
        ],
        drops=[
            {"x": x(i), "call": p.agent_call, "dropped": p.dropped}
            for i, p in enumerate(points)
            if p.dropped
        ],
    )
    return layout


async def window_chart(ctx: ApiContext, agent_id: str) -> dict[str, Any]:
    """The agent page's chart of its newest calls (as many as ``window_series`` gives by
    default: 100)."""
    return chart_layout(await window_series(ctx.reader, agent_id))
