"""HTTP/2 against HTTP/1.1, per server and profile: the cells of a run that differ only by protocol
and streams per connection, set side by side at each connection count both measured. An h2 cell
is set against the https cell (h2c against http) of the same server, profile, workload, CPUs and
budget: what HTTP/2 changes with TLS the same on both sides."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

from httpbench.plan.protocol import http1_twin, is_http2
from httpbench.results.model import CellResult, LevelResult


@dataclass(frozen=True)
class Point:
    """One cell at one connection count."""

    cell: CellResult
    level: LevelResult

    @property
    def rps(self) -> float:
        return self.level.rps.mean

    @property
    def clamped(self) -> Optional[int]:
        """The streams the server granted each connection, when fewer than the cell asked for."""
        granted = self.level.streams_granted
        return granted if granted is not None and granted < self.cell.streams else None


@dataclass(frozen=True)
class Comparison:
    """A server/profile's HTTP/2 cells (by streams) and its HTTP/1.1 twin, at one connection count."""

    series: str
    run_id: int
    context: str  # workload, CPUs, budget: what both sides share, in words
    protocol: str  # "h2" or "h2c"
    connections: int
    http1: Optional[Point]  # None when the twin was not measured at this count, or not at all
    http2: Tuple[Tuple[int, Point], ...]  # (streams, point), fewest streams first

    @property
    def best(self) -> Tuple[int, Point]:
        """The streams count at which HTTP/2 served the most, and its point."""
        return max(self.http2, key=lambda streams_point: streams_point[1].rps)


def _place(cell: CellResult) -> tuple:
    """What an HTTP/2 cell and its HTTP/1.1 twin share, but for the protocol and streams."""
    shared = (cell.run_id, cell.server, cell.profile, cell.workload, cell.cpus, cell.budget)
    return shared + (cell.keep_alive, cell.encoding)


def _context(cell: CellResult) -> str:
    words = [cell.workload, f"{cell.cpus} CPU"] + ([f"{cell.encoding} asked"] if cell.encoding else [])
    return ", ".join(words + ([cell.budget] if cell.budget else []))


def comparisons(cells: Sequence[CellResult]) -> List[Comparison]:
    """For each server/profile with a finished HTTP/2 cell, one comparison per protocol and
    connection count its HTTP/2 cells measured, in the order measured."""
    finished = [c for c in cells if c.finished and c.levels]
    twins = {(_place(c), c.protocol): c for c in finished if not is_http2(c.protocol)}
    by_place: Dict[tuple, List[CellResult]] = {}
    for cell in finished:
        if is_http2(cell.protocol):
            by_place.setdefault((_place(cell), cell.protocol), []).append(cell)
    out = []
    for (place, protocol), h2_cells in by_place.items():
        twin = twins.get((place, http1_twin(protocol)))
        twin_levels = {lv.level: lv for lv in twin.levels} if twin else {}
        first = h2_cells[0]
        connections = dict.fromkeys(lv.level for c in h2_cells for lv in c.levels)
        for level in connections:
            http2 = sorted(
                ((c.streams, Point(c, lv)) for c in h2_cells for lv in c.levels if lv.level == level),
                key=lambda streams_point: streams_point[0],
            )
            out.append(
                Comparison(
                    series=first.series,
                    run_id=first.run_id,
                    context=_context(first),
                    protocol=protocol,
                    connections=level,
                    http1=Point(twin, twin_levels[level]) if level in twin_levels else None,
                    http2=tuple(http2),
                )
            )
    return out
