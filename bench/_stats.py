"""How every benchmark here reports a figure: the median of several repetitions, with the spread.

A ratio is taken per repetition (lovia and its baseline measured back to back, so a noisy
moment on a shared machine hits both) and reported as the median of those ratios with their
lowest and highest, e.g. ``1.21x (1.10-1.35)``.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Figure:
    """The median of some samples and their range."""

    median: float
    low: float
    high: float

    @classmethod
    def of(cls, samples: Sequence[float]) -> Figure:
        if not samples:
            raise ValueError("a figure needs at least one sample")
        return cls(statistics.median(samples), min(samples), max(samples))

    def ms(self) -> str:
        """Seconds shown as milliseconds, with the spread."""
        return f"{self.median * 1000:.1f} ms ({self.low * 1000:.1f}-{self.high * 1000:.1f})"

    def times(self) -> str:
        """A ratio, with the spread."""
        return f"{self.median:.2f}x ({self.low:.2f}-{self.high:.2f})"


def ratios(measured: Sequence[float], baseline: Sequence[float]) -> Figure:
    """Per-repetition ratios of two paired sample lists."""
    if len(measured) != len(baseline):
        raise ValueError("ratios need paired samples: one baseline per measurement")
    return Figure.of([m / b for m, b in zip(measured, baseline, strict=True)])


TUI_COLUMNS = ("measure", "lovia", "baseline", "ratio")
"""The columns of every ``bench/tui*.py`` table, as the README's tables have them."""


def print_table(columns: Sequence[str], rows: Iterable[Sequence[str]]) -> None:
    """Print ``rows`` as a Markdown table under ``columns``, ready to paste into the README."""
    print("| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))
    for row in rows:
        print("| " + " | ".join(row) + " |")
