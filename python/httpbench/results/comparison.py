"""Cells compared: a group is the cells that differ only by server and profile, ranked on the
levels every one of them measured, with their figures of merit over those levels."""

from __future__ import annotations

import functools
import statistics
from dataclasses import dataclass
from typing import Collection, Dict, List, Optional, Sequence, Tuple

from httpbench.judge.honesty import UNRANKED
from httpbench.plan.protocol import HANDSHAKES
from httpbench.results.model import CellResult, LevelResult, levels_text

# A requests budget shared by every cell of a group makes "total time" a measured wall time (as in
# the 2016 and 2011 write-ups); with a duration budget every cell runs equally long (and cells
# under different budgets serve different requests), so the time to serve this many requests at
# each level is derived from the throughput instead, and the ratios between servers are the same.
SAME_REQUESTS = 100_000


@dataclass(frozen=True)
class Figures:
    """A cell's figures of merit over some of its levels: the ones every cell of its group
    measured, so that cells are compared on the same levels."""

    levels: Tuple[LevelResult, ...]
    requests_budget: Optional[int]  # the requests every round of the group served, if it was the same for all

    @property
    def mean_rps(self) -> Optional[float]:
        """The mean of the level means (the 2011 write-up's average): every level weighs the same,
        however many rounds it took."""
        return statistics.fmean(lv.rps.mean for lv in self.levels) if self.levels else None

    @property
    def min_rps(self) -> Optional[float]:
        """The slowest round."""
        return min(lv.rps.min for lv in self.levels) if self.levels else None

    @property
    def max_rps(self) -> Optional[float]:
        return max(lv.rps.max for lv in self.levels) if self.levels else None

    @property
    def noise(self) -> Optional[float]:
        """How much a level's rounds differ: their coefficient of variation, averaged over the
        levels that had two or more. The spread between levels is the load's doing, not noise."""
        repeated = [lv.rps.cv for lv in self.levels if lv.rps.n > 1]
        return statistics.fmean(repeated) if repeated else None

    @property
    def time_for_same_requests(self) -> Optional[float]:
        """Seconds to serve the same requests at every level: with the group's one requests budget
        the measured time of a round (as the 2016 and 2011 write-ups report; per round, since a
        level that took more rounds did not serve its requests more slowly), otherwise
        SAME_REQUESTS per level at the measured rate."""
        if not self.levels or any(lv.rps.mean <= 0 for lv in self.levels):
            return None
        if self.requests_budget:
            return sum(lv.duration_s / lv.rps.n for lv in self.levels)
        return sum(SAME_REQUESTS / lv.rps.mean for lv in self.levels)

    @property
    def end_memory_bytes(self) -> Optional[int]:
        """The server's memory at the end of the test (the 2016 write-up's chart): at the highest of
        these levels."""
        return self.levels[-1].server_memory_bytes if self.levels else None

    @property
    def cpu_per_request_us(self) -> Optional[float]:
        """What a request cost the server in CPU time (user and system, microseconds), the mean of
        these levels' (LevelResult.server_cpu_per_request_us); None when a level has none."""
        costs = [lv.server_cpu_per_request_us for lv in self.levels]
        return statistics.fmean(costs) if costs and None not in costs else None

    @property
    def flagged(self) -> Dict[str, List[LevelResult]]:
        """Each honesty flag raised at these levels, with the levels that raised it."""
        out: Dict[str, List[LevelResult]] = {}
        for lv in self.levels:
            for kind in sorted(lv.flags):
                out.setdefault(kind, []).append(lv)
        return out


@dataclass(frozen=True)
class Group:
    """Cells that differ only by server and profile (and run), in the order they were measured.
    Only finished cells are ranked, on the levels every one of them measured: a cell that failed
    partway (its server died) is no result, and a cell of another run lacking some levels would
    otherwise be averaged over other levels than the rest, and its total time summed over fewer,
    making it look faster than it was."""

    name: str
    cells: Tuple[CellResult, ...]

    # Cached: every chart, table and sentence asks again, and the cells never change.
    @functools.cached_property
    def levels(self) -> Tuple[int, ...]:
        """The levels every finished cell measured (every cell, if none finished): the ones they
        are compared on."""
        compared = [c for c in self.cells if c.finished] or self.cells
        return tuple(sorted(set.intersection(*(set(c.level_numbers) for c in compared))))

    @functools.cached_property
    def every_level(self) -> Tuple[int, ...]:
        return tuple(sorted({n for c in self.cells for n in c.level_numbers}))

    @functools.cached_property
    def requests_budget(self) -> Optional[int]:
        """The requests budget every cell had; None when one ran for a duration or they differ
        (cells of runs under different plans), as their measured times then serve different requests."""
        budgets = {c.requests_budget for c in self.cells}
        return budgets.pop() if len(budgets) == 1 else None

    def figures(self, cell: CellResult, levels: Optional[Collection[int]] = None) -> Figures:
        """`cell`'s figures over those of `levels` (default: the compared ones) it measured."""
        levels = self.levels if levels is None else levels
        return Figures(tuple(lv for lv in cell.levels if lv.level in levels), self.requests_budget)

    def ranked(self) -> List[CellResult]:
        """Its finished cells with a throughput on the common levels and no flag there that keeps
        them out (honesty.UNRANKED), fastest first."""
        return sorted(
            (c for c in self.cells if c.finished and self.figures(c).mean_rps and not self.unranked_by(c)),
            key=lambda c: -self.figures(c).mean_rps,
        )

    def unranked_by(self, cell: CellResult) -> List[str]:
        """What keeps `cell` out of the ranking at the compared levels: "resumed under 95% of its
        handshakes at levels 100, 500"."""
        flagged = self.figures(cell).flagged
        return [
            f"{what} {levels_text([lv.level for lv in flagged[kind]])}"
            for kind, what in UNRANKED.items()
            if kind in flagged
        ]

    def incomplete(self, cell: CellResult) -> Optional[str]:
        """How `cell` did not finish, or lacks levels that others of its group measured; None if
        neither."""
        measured = f"measured {levels_text(cell.level_numbers)} of {levels_text(self.every_level)}"
        if cell.status == "done" and cell.stopped_by:
            return f"{' and '.join(cell.stopped_by)} ({measured}), so it is not ranked"
        if not cell.finished:
            ended = {"interrupted": "was interrupted", "stopped": "was stopped", "running": "has not finished"}
            return f"its cell {ended.get(cell.status, cell.status)} ({measured}), so it is not ranked"
        if cell.capacity is not None:
            return None  # its levels are the rates its search chose: none is missing
        if self.unranked_by(cell):
            flagged = self.figures(cell).flagged
            named = [HANDSHAKES[cell.resumption]] if cell.resumption and "not_resumed" in flagged else []
            named += [f"serving {cell.encoding}"] if "not_encoded" in flagged else []
            return f"{' and '.join(self.unranked_by(cell))}, so it is not ranked as {' and '.join(named)}"
        if cell.level_numbers == self.every_level:
            return None
        if not self.levels:
            return f"{measured}; its group's cells share no level, so they are not compared"
        return f"{measured}; its group is compared on {levels_text(self.levels)}"

    def flags(self, cell: CellResult, levels: Optional[Collection[int]] = None) -> Dict[str, str]:
        """What to read with care in `cell`'s figures: kind -> the reason at each of `levels`
        (default: the compared ones) that raised it, and `incomplete` when it lacks levels."""
        out = {
            kind: "; ".join(f"level {lv.level}: {lv.flags[kind]}" for lv in flagged)
            for kind, flagged in self.figures(cell, levels).flagged.items()
        }
        why = self.incomplete(cell)
        if why:
            out["incomplete"] = why
        return out


def groups(cells: Sequence[CellResult]) -> List[Group]:
    """Cells by group, groups and cells in the order they were measured."""
    members: Dict[str, List[CellResult]] = {}
    for cell in cells:
        members.setdefault(cell.group, []).append(cell)
    return [Group(name, tuple(group)) for name, group in members.items()]
