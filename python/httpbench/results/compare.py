"""Two stored runs side by side: per cell and level, the ratio of their mean throughputs with its
95% confidence interval, and whether the change is beyond the noise; what run B lacks of run A
(cells or levels missing, cells failed); a regression check a server's CI can run (`httpbench
compare A B --fail-on-regression 5%`), for which anything B lacks counts as a regression.

The noise arithmetic (`spread`, `ratio_interval`, `within_noise`) is the one definition of a tie:
the report's verdicts between servers use it too.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, List, Optional, Sequence, Tuple

from httpbench.errors import Error
from httpbench.judge.honesty import CELL_STOPPERS, NOISY_CV
from httpbench.judge.stats import LevelStats
from httpbench.load import engine
from httpbench.results import events_compare
from httpbench.results.events_compare import EventsChange
from httpbench.results.model import CellResult, RunResults, levels_text


@dataclass(frozen=True)
class Change:
    cell: str
    level: int
    before: LevelStats
    after: LevelStats
    ratio: float  # after / before mean requests/s
    interval: Optional[Tuple[float, float]]  # 95% interval of the ratio; None with one round on a side

    @property
    def beyond_noise(self) -> bool:
        return not within_noise(self.ratio, self.interval)

    @property
    def verdict(self) -> str:
        if not self.beyond_noise:
            return "within the noise"
        return "faster" if self.ratio > 1 else "slower"

    def regressed(self, threshold: float) -> bool:
        """Throughput fell by more than `threshold` (0.05 = 5%), beyond the noise."""
        return self.beyond_noise and self.ratio < 1 - threshold


def _spread(levels: Sequence[LevelStats], weight: Callable[[float], float]) -> Optional[float]:
    """The relative 95% half-width of a sum over levels whose terms are `weight(the level's mean
    requests/s)` and err as much, relatively, as that mean (levels independent: half-widths add in
    quadrature); None when a level had one round (it gives no interval) or a mean is not positive."""
    if not levels or any(s.n < 2 or s.mean <= 0 for s in levels):
        return None
    terms = [weight(s.mean) for s in levels]
    return math.hypot(*(term * s.ci95 / s.mean for term, s in zip(terms, levels))) / sum(terms)


def spread(levels: Sequence[LevelStats]) -> Optional[float]:
    """The relative 95% half-width of the mean of these levels' mean requests/s (a cell's mean,
    or one level's); None when a level had one round."""
    return _spread(levels, lambda mean: mean)


def time_spread(levels: Sequence[LevelStats]) -> Optional[float]:
    """The relative 95% half-width of the time to serve the same requests at each of these levels:
    each level's time goes as 1 / its requests/s."""
    return _spread(levels, lambda mean: 1 / mean)


def ratio_interval(ratio: float, *spreads: Optional[float]) -> Optional[Tuple[float, float]]:
    """The 95% interval of a ratio of independent means, each known to its relative half-width
    `spreads` (delta method: they add in quadrature); None when one of them has none."""
    if any(s is None for s in spreads):
        return None
    relative = math.hypot(*spreads)
    return max(0.0, ratio * (1 - relative)), ratio * (1 + relative)


def within_noise(ratio: float, interval: Optional[Tuple[float, float]]) -> bool:
    """The interval contains 1; with no interval (one round), the ratio is within the noisy
    threshold (5%) of 1."""
    if interval is None:
        return abs(ratio - 1) <= NOISY_CV
    low, high = interval
    return low <= 1 <= high


@dataclass(frozen=True)
class Missing:
    """A cell measured in run A that run B lacks: not stored, failed, or short of some levels.
    A CI guard must not read a server that stopped answering as one that kept its speed."""

    cell: str
    # "not in run 7", "did not finish in run 7 (...); level 20 not measured", "levels 20, 50 not measured in run 7"
    why: str

    def __str__(self) -> str:
        return f"{self.cell}: {self.why}"


@dataclass(frozen=True)
class CapacityChange:
    """A capacity plan's cell in both runs: its capacity in each (None: no rate met), and their
    ratio with an interval from the searches' brackets (a search knows its capacity only to
    within its bracket: the rate found and the lowest that failed above it)."""

    cell: str
    before: Optional[float]
    after: Optional[float]
    ratio: Optional[float]  # None unless both found a rate and they compare
    interval: Optional[Tuple[float, float]]
    unlike: Optional[str] = None  # why the two do not compare: other objectives, or a floor

    @property
    def verdict(self) -> str:
        if self.unlike:
            return f"not compared: {self.unlike}"
        if self.ratio is None:
            return "no rate met" if self.after is None and self.before is not None else "not compared"
        if within_noise(self.ratio, self.interval):
            return "within the noise"
        return "more" if self.ratio > 1 else "less"

    def regressed(self, threshold: float) -> bool:
        """The capacity fell by more than `threshold` beyond the brackets, or none was met any more
        (under the same objective)."""
        if self.unlike:
            return False
        if self.ratio is None:
            return self.before is not None and self.after is None
        return not within_noise(self.ratio, self.interval) and self.ratio < 1 - threshold

    @property
    def why(self) -> str:
        if self.ratio is None:
            return "no rate met the objective any more"
        return f"{self.ratio - 1:+.1%}, beyond the searches' brackets"


def bracket(capacity: dict) -> Optional[float]:
    """How wide a search's bracket is, relative to the rate it found; None without one (no rate
    met, or none failed above it)."""
    low, high = capacity["interval"]["low"], capacity["interval"]["high"]
    return (high - low) / low if low and high else None


def _unlike(before: dict, after: dict) -> Optional[str]:
    """Why two searches' capacities do not compare: other objectives, or a floor (the client or
    the pool set the pace, or the search did not settle) where a capacity is no server's."""
    a, b = engine.capacity_words(before), engine.capacity_words(after)
    if a.objective != b.objective:
        return f"searched at other objectives ({a.objective}; {b.objective})"
    floors = [run for run, words in (("before", a), ("after", b)) if words.at_least]
    if floors:
        return f"the capacity {' and '.join(floors)} is a floor, not the server's (see its verdict)"
    return None


def capacity_change(key: str, before: dict, after: dict) -> CapacityChange:
    old, new = before["rate"], after["rate"]
    unlike = _unlike(before, after)
    if old is None or new is None or unlike:
        return CapacityChange(key, old, new, None, None, unlike)
    ratio = new / old
    return CapacityChange(key, old, new, ratio, ratio_interval(ratio, bracket(before), bracket(after)))


@dataclass(frozen=True)
class Comparison:
    before: RunResults
    after: RunResults
    changes: List[Change]
    missing: List[Missing]  # measured in A, missing or failed in B
    only_after: List[str]  # cells measured in B only
    capacities: List[CapacityChange] = field(default_factory=list)  # capacity plans' cells in both
    events: List[EventsChange] = field(default_factory=list)  # cells with events in both: failures

    def regressions(self, threshold: float) -> List[Change]:
        return [c for c in self.changes if c.regressed(threshold)]

    def capacity_regressions(self, threshold: float) -> List[CapacityChange]:
        return [c for c in self.capacities if c.regressed(threshold)]


def _missing(before: CellResult, cell: Optional[CellResult], after: RunResults) -> Optional[Missing]:
    """What B's `cell` lacks of A's `before`; None if it has it whole. A cell that did not finish
    (CellResult.finished: it failed, or its server died in a level it still holds) is no result,
    whatever its status says; one that did not finish in A either is no new failure, but levels
    it measured there and not in B are still lost."""
    if cell is None:
        return Missing(before.key, f"not in run {after.id}")
    if before.capacity is not None:
        # A search probes the rates it chooses: its cell is whole when its search finished.
        if before.finished and not (cell.finished and cell.capacity is not None):
            why = cell.error or f"its cell {cell.status}"
            return Missing(before.key, f"its capacity search did not finish in run {after.id} ({why})")
        return None
    lost = tuple(n for n in before.level_numbers if n not in cell.level_numbers)
    unmeasured = f"{levels_text(lost)} not measured" if lost else "every level measured"
    if not cell.finished and before.finished:
        why = cell.error or "; ".join(cell.stopped_by) or f"its cell {cell.status}"
        return Missing(before.key, f"did not finish in run {after.id} ({why}); {unmeasured}")
    if lost:
        state = "" if cell.finished else " (its cell did not finish)"
        return Missing(before.key, f"{unmeasured} in run {after.id}{state}")
    return None


def compare(before: RunResults, after: RunResults) -> Comparison:
    """Cells are matched by key (server/profile/workload/keep-alive/CPUs), levels by number."""
    later = {c.key: c for c in after.cells}
    changes, missing, capacities = [], [], []
    for old_cell in before.measured:
        cell = later.get(old_cell.key)
        gap = _missing(old_cell, cell, after)
        if gap:
            missing.append(gap)
        if old_cell.capacity is not None:
            if not gap and old_cell.finished:
                capacities.append(capacity_change(old_cell.key, old_cell.capacity, cell.capacity))
            continue
        new_levels = {lv.level: lv for lv in cell.levels} if cell else {}
        for old in old_cell.levels:
            lv = new_levels.get(old.level)
            # A level whose server died (or whose load ended early) holds no figure of the server's.
            if lv is None or old.rps.mean <= 0 or CELL_STOPPERS.keys() & {*old.flags, *lv.flags}:
                continue
            # Answers in other codings are other work: a server that stopped sending br is no
            # faster or slower at br (rounds stored before the engine counted codings have none).
            if old.encodings and lv.encodings and set(old.encodings) != set(lv.encodings):
                was, now = (", ".join(sorted(x.encodings)) for x in (old, lv))
                why = (
                    f"level {lv.level} sent {was} in run {before.id} and {now} in run {after.id}, so it is not compared"
                )
                missing.append(Missing(old_cell.key, why))
                continue
            ratio = lv.rps.mean / old.rps.mean
            interval = ratio_interval(ratio, spread([old.rps]), spread([lv.rps]))
            changes.append(Change(old_cell.key, lv.level, old.rps, lv.rps, ratio, interval))
    earlier = {c.key for c in before.measured}
    only_after = [c.key for c in after.measured if c.key not in earlier]
    return Comparison(before, after, changes, missing, only_after, capacities, events_compare.changes(before, after))


def parse_threshold(text: str) -> float:
    """ "5%" or "5" (percent) -> 0.05."""
    try:
        value = float(text.strip().rstrip("%"))
    except ValueError:
        value = -1
    if not 0 < value < 100:
        raise Error(f"--fail-on-regression takes a percentage between 0 and 100, like 5%; got {text!r}")
    return value / 100
