"""Two stored runs side by side: per cell and level, the ratio of their mean throughputs with its
95% confidence interval, and whether the change is beyond the noise; a regression check a
server's CI can run (`httpbench compare A B --fail-on-regression 5%`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import List, Optional, Tuple

from httpbench.honesty import NOISY_CV
from httpbench.results import RunResults
from httpbench.stats import LevelStats


@dataclass(frozen=True)
class Change:
    cell: str
    level: int
    before: LevelStats
    after: LevelStats
    ratio: float                          # after / before mean requests/s
    interval: Optional[Tuple[float, float]]  # 95% interval of the ratio; None with one round on a side

    @property
    def beyond_noise(self) -> bool:
        """The interval excludes 1; with no interval, the change exceeds the noisy threshold (5%)."""
        if self.interval is None:
            return abs(self.ratio - 1) > NOISY_CV
        low, high = self.interval
        return high < 1 or low > 1

    @property
    def verdict(self) -> str:
        if not self.beyond_noise:
            return "within the noise"
        return "faster" if self.ratio > 1 else "slower"

    def regressed(self, threshold: float) -> bool:
        """Throughput fell by more than `threshold` (0.05 = 5%), beyond the noise."""
        return self.beyond_noise and self.ratio < 1 - threshold


def _interval(before: LevelStats, after: LevelStats, ratio: float) -> Optional[Tuple[float, float]]:
    # Delta method for a ratio of independent means: relative half-widths add in quadrature.
    if before.n < 2 or after.n < 2 or before.mean <= 0 or after.mean <= 0:
        return None
    relative = math.hypot(before.ci95 / before.mean, after.ci95 / after.mean)
    return max(0.0, ratio * (1 - relative)), ratio * (1 + relative)


@dataclass(frozen=True)
class Comparison:
    before: RunResults
    after: RunResults
    changes: List[Change]
    only_before: List[str]   # cells measured in one run only
    only_after: List[str]

    def regressions(self, threshold: float) -> List[Change]:
        return [c for c in self.changes if c.regressed(threshold)]


def compare(before: RunResults, after: RunResults) -> Comparison:
    """Cells are matched by key (server/profile/workload/keep-alive/CPUs), levels by number."""
    earlier = {c.key: c for c in before.measured}
    later = {c.key: c for c in after.measured}
    changes = []
    for key, cell in later.items():
        if key not in earlier:
            continue
        old_levels = {lv.level: lv for lv in earlier[key].levels}
        for lv in cell.levels:
            old = old_levels.get(lv.level)
            if old is None or old.rps.mean <= 0:
                continue
            ratio = lv.rps.mean / old.rps.mean
            changes.append(Change(key, lv.level, old.rps, lv.rps, ratio, _interval(old.rps, lv.rps, ratio)))
    return Comparison(before, after, changes, [k for k in earlier if k not in later], [k for k in later if k not in earlier])


def parse_threshold(text: str) -> float:
    """"5%" or "5" (percent) -> 0.05."""
    try:
        value = float(text.strip().rstrip("%"))
    except ValueError:
        value = -1
    if not 0 < value < 100:
        raise ValueError(f"--fail-on-regression takes a percentage between 0 and 100, like 5%; got {text!r}")
    return value / 100
