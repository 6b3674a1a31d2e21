"""A small hand-written SVG line chart (no plotting library is a dependency of the workspace).

`panels(...)` draws side-by-side panels sharing a log2 x axis; each panel has one line per
series, with the median as a point and the min–max as a vertical bar.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

WIDTH, HEIGHT = 300, 230
LEFT, RIGHT, TOP, BOTTOM = 58, 12, 30, 40
COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd")


@dataclass(frozen=True, slots=True)
class Series:
    name: str
    points: Sequence[tuple[float, float, float, float]]
    """(x, median, low, high) per x."""


@dataclass(frozen=True, slots=True)
class Panel:
    title: str
    unit: str
    series: Sequence[Series]


def _nice_top(value: float) -> float:
    if value <= 0:
        return 1.0
    power = 10 ** math.floor(math.log10(value))
    for step in (1, 2, 2.5, 5, 10):
        if value <= step * power:
            return step * power
    return 10 * power


def _label(value: float) -> str:
    return f"{value:g}" if value < 10_000 else f"{value:,.0f}"


def _panel(panel: Panel, xs: Sequence[float], left: float) -> list[str]:
    plot_w = WIDTH - LEFT - RIGHT
    plot_h = HEIGHT - TOP - BOTTOM
    high = max((p[3] for s in panel.series for p in s.points), default=1.0)
    top = _nice_top(high)
    lo_x, hi_x = math.log2(min(xs)), math.log2(max(xs))
    span = (hi_x - lo_x) or 1.0

    def px(x: float) -> float:
        return left + LEFT + (math.log2(x) - lo_x) / span * plot_w

    def py(y: float) -> float:
        return TOP + plot_h - max(0.0, y) / top * plot_h

    out = [
        f'<text x="{left + WIDTH / 2:.1f}" y="16" text-anchor="middle" '
        f'font-weight="bold">{escape(panel.title)} ({escape(panel.unit)})</text>',
        f'<line x1="{left + LEFT}" y1="{TOP + plot_h}" x2="{left + LEFT + plot_w}" '
        f'y2="{TOP + plot_h}" stroke="black"/>',
        f'<line x1="{left + LEFT}" y1="{TOP}" x2="{left + LEFT}" y2="{TOP + plot_h}" '
        'stroke="black"/>',
    ]
    for i in range(5):
        value = top * i / 4
        y = py(value)
        out.append(
            f'<line x1="{left + LEFT - 4}" y1="{y:.1f}" x2="{left + LEFT + plot_w}" '
            f'y2="{y:.1f}" stroke="#ddd"/>'
        )
        out.append(
            f'<text x="{left + LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{_label(value)}</text>'
        )
    for x in xs:
        out.append(
            f'<text x="{px(x):.1f}" y="{TOP + plot_h + 16}" text-anchor="middle">{x:g}</text>'
        )
    out.append(
        f'<text x="{left + LEFT + plot_w / 2:.1f}" y="{HEIGHT - 6}" text-anchor="middle">'
        "N concurrent runs</text>"
    )
    for index, series in enumerate(panel.series):
        colour = COLOURS[index % len(COLOURS)]
        path = " ".join(f"{px(x):.1f},{py(m):.1f}" for x, m, _, _ in series.points)
        out.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"/>')
        for x, m, lo, hi in series.points:
            out.append(
                f'<line x1="{px(x):.1f}" y1="{py(lo):.1f}" x2="{px(x):.1f}" y2="{py(hi):.1f}" '
                f'stroke="{colour}"/>'
            )
            out.append(f'<circle cx="{px(x):.1f}" cy="{py(m):.1f}" r="3" fill="{colour}"/>')
    return out


def panels(title: str, items: Sequence[Panel], xs: Sequence[float]) -> str:
    """The SVG document text."""
    width = WIDTH * len(items)
    body: list[str] = []
    for index, panel in enumerate(items):
        body += _panel(panel, xs, index * WIDTH)
    names = [s.name for s in items[0].series] if items else []
    legend = [
        f'<text x="{10 + 110 * i}" y="{HEIGHT + 18}" fill="{COLOURS[i % len(COLOURS)]}">'
        f"■ {escape(name)}</text>"
        for i, name in enumerate(names)
    ]
    return "\n".join(
        [
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{HEIGHT + 28}" '
            f'font-family="sans-serif" font-size="11">',
            f"<title>{escape(title)}</title>",
            f'<rect width="{width}" height="{HEIGHT + 28}" fill="white"/>',
            *body,
            *legend,
            "</svg>",
            "",
        ]
    )
