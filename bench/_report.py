"""Results: figures and same-run ratios per case, printed as a table and written as Markdown."""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass, field

from _timing import Sample

_OPS: dict[str, Callable[[float, float], bool]] = {
    "<=": operator.le,
    ">=": operator.ge,
    "<": operator.lt,
}
_SHOWN = {"<=": "≤", ">=": "≥", "<": "<"}


@dataclass(frozen=True, slots=True)
class Target:
    """A bound the median must meet, e.g. `Target("<=", 1.15, "×")`."""

    op: str
    bound: float
    unit: str = "×"

    def met(self, value: float) -> bool:
        return _OPS[self.op](value, self.bound)

    def __str__(self) -> str:
        unit = "×" if self.unit == "×" else f" {self.unit}"
        return f"{_SHOWN[self.op]} {self.bound:g}{unit}"


@dataclass(frozen=True, slots=True)
class Row:
    """One figure (or ratio) of a case."""

    label: str
    sample: Sample
    unit: str
    target: Target | None = None

    @property
    def verdict(self) -> str:
        if self.target is None:
            return ""
        return "met" if self.target.met(self.sample.median) else "MISSED"


@dataclass(slots=True)
class Section:
    """One case: its rows and the notes that say what was measured."""

    title: str
    notes: list[str] = field(default_factory=list[str])
    rows: list[Row] = field(default_factory=list[Row])
    error: str | None = None

    def add(self, label: str, sample: Sample, unit: str, target: Target | None = None) -> None:
        self.rows.append(Row(label, sample, unit, target))


def fmt(value: float) -> str:
    """A few significant digits, never scientific notation."""
    size = abs(value)
    if size >= 1000:
        return f"{value:,.0f}"
    if size >= 100:
        return f"{value:.0f}"
    if size >= 10:
        return f"{value:.1f}"
    if size >= 1:
        return f"{value:.2f}"
    return f"{value:.3f}"


def spread(sample: Sample) -> str:
    return f"{fmt(sample.low)}–{fmt(sample.high)}"


def console_table(sections: list[Section]) -> str:
    """Plain fixed-width text for the terminal."""
    lines: list[str] = []
    for section in sections:
        lines.append("")
        lines.append(f"== {section.title}")
        for note in section.notes:
            lines.append(f"   {note}")
        if section.error is not None:
            lines.append(f"   FAILED: {section.error}")
        for row in section.rows:
            target = "" if row.target is None else f"target {row.target}: {row.verdict}"
            lines.append(
                f"   {row.label:<52} {fmt(row.sample.median):>10} {row.unit:<9} "
                f"[{spread(row.sample):>19}] n={len(row.sample.values):<3} {target}"
            )
    return "\n".join(lines)


def markdown_sections(sections: list[Section]) -> str:
    parts: list[str] = []
    for section in sections:
        parts.append(f"### {section.title}\n")
        for note in section.notes:
            parts.append(f"- {note}")
        if section.notes:
            parts.append("")
        if section.error is not None:
            parts.append(f"**The case failed:** {section.error}\n")
        if section.rows:
            parts.append("| figure | median | min–max | unit | n | target |")
            parts.append("|---|---:|---:|---|---:|---|")
            for row in section.rows:
                target = "" if row.target is None else f"{row.target}: **{row.verdict}**"
                parts.append(
                    f"| {row.label} | {fmt(row.sample.median)} | {spread(row.sample)} | "
                    f"{row.unit} | {len(row.sample.values)} | {target} |"
                )
            parts.append("")
    return "\n".join(parts)


def target_rows(sections: list[Section]) -> list[tuple[Section, Row]]:
    return [(s, row) for s in sections for row in s.rows if row.target is not None]
