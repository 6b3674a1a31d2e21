"""Timing primitives: warm-up, then interleaved repeated rounds, summarized by the median.

Every subject of a case times itself (so it can leave set-up out) and returns seconds. The
subjects of one case run in the same round, in an order shuffled each round (seeded, so a run is
repeatable), so a burst of load from elsewhere on the machine hits every side alike and no
subject always runs right after the same other one: a rotation keeps the cyclic order, and the
subject after a blocking baseline (the guard's blocking round trip leaves the guard server
re-forking its spare) paid for it in every round (process_execute read 1.08× its floor that
way, 1.04× with the two measured alone). A ratio is computed round by round from the pair
measured together, then summarized like any other figure.
"""

from __future__ import annotations

import random
import statistics
import subprocess
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass

Subject = Callable[[], Awaitable[float]]


@dataclass(frozen=True, slots=True)
class Sample:
    """Repeated measurements of one figure."""

    values: tuple[float, ...]

    @property
    def median(self) -> float:
        return statistics.median(self.values)

    @property
    def low(self) -> float:
        return min(self.values)

    @property
    def high(self) -> float:
        return max(self.values)

    def scaled(self, factor: float) -> Sample:
        return Sample(tuple(value * factor for value in self.values))

    def inverted(self, numerator: float = 1.0) -> Sample:
        """`numerator / value` for each value (seconds per run -> runs per second)."""
        return Sample(tuple(numerator / value for value in self.values))


def ratios(numerators: Sample, denominators: Sample) -> Sample:
    """Pair-by-pair ratios of two samples measured in the same rounds."""
    if len(numerators.values) != len(denominators.values):
        raise ValueError("ratios need samples from the same rounds")
    return Sample(tuple(a / b for a, b in zip(numerators.values, denominators.values, strict=True)))


async def paired(subjects: Mapping[str, Subject], *, warmup: int, repeat: int) -> dict[str, Sample]:
    """Runs every subject `warmup` times (discarded), then `repeat` interleaved rounds, each in
    a freshly shuffled order."""
    names = list(subjects)
    for _ in range(warmup):
        for name in names:
            await subjects[name]()
    values: dict[str, list[float]] = {name: [] for name in names}
    order = random.Random(0x5EED)
    for _ in range(repeat):
        order.shuffle(names)
        for name in names:
            values[name].append(await subjects[name]())
    return {name: Sample(tuple(found)) for name, found in values.items()}


def time_process(argv: Sequence[str]) -> float:
    """Wall seconds of one child process run to its exit, output discarded.

    Deliberately blocking `subprocess.run`: that is the baseline a user would write.
    """
    started = time.perf_counter()
    subprocess.run(list(argv), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, check=True)
    return time.perf_counter() - started


def process_subject(argv: Sequence[str]) -> Subject:
    """A subject timing one run of `argv`."""

    async def subject() -> float:
        return time_process(argv)

    return subject
