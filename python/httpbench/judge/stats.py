"""Statistics of one level across its rounds: what the 2011 write-up's charts showed (min, mean,
max) plus what a reader needs to judge the spread (median, standard deviation, 95% confidence
interval, cv).

Pure Python on purpose: a handful of values per level needs no numpy or scipy.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Sequence

# Two-sided 95% Student t quantiles by degrees of freedom (n - 1), for n up to 30. Beyond that the
# normal quantile is within 2.5% of t, and levels rarely get that many rounds.
_T95 = (
    12.706,
    4.303,
    3.182,
    2.776,
    2.571,
    2.447,
    2.365,
    2.306,
    2.262,
    2.228,
    2.201,
    2.179,
    2.160,
    2.145,
    2.131,
    2.120,
    2.110,
    2.101,
    2.093,
    2.086,
    2.080,
    2.074,
    2.069,
    2.064,
    2.060,
    2.056,
    2.052,
    2.048,
    2.045,
)
_Z95 = 1.96


def t95(n: int) -> float:
    """The t quantile for a 95% interval around the mean of n values (n >= 2)."""
    return _T95[n - 2] if n - 2 < len(_T95) else _Z95


@dataclass(frozen=True)
class LevelStats:
    n: int
    min: float
    mean: float
    max: float
    median: float
    stdev: float  # sample standard deviation (n - 1); 0 for one value
    ci95: float  # half-width of the 95% interval of the mean; NaN for one value: one round gives no interval
    cv: float  # stdev / mean; 0 for one value

    @classmethod
    def of(cls, values: Sequence[float]) -> "LevelStats":
        values = [float(v) for v in values]
        n = len(values)
        if n == 0:
            raise ValueError("LevelStats.of needs at least one value")
        mean = statistics.fmean(values)
        stdev = statistics.stdev(values) if n >= 2 else 0.0
        ci95 = t95(n) * stdev / math.sqrt(n) if n >= 2 else math.nan
        if n < 2 or stdev == 0:
            cv = 0.0
        else:
            cv = stdev / mean if mean else math.inf
        return cls(
            n=n,
            min=min(values),
            mean=mean,
            max=max(values),
            median=statistics.median(values),
            stdev=stdev,
            ci95=ci95,
            cv=cv,
        )
