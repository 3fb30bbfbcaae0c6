"""The verdict of each group, as TechEmpower and HttpArena print theirs: its cells ranked on one
figure (rank, cell, the figure, its share of the best's, flags), then sentences only for the pairs
that matter (the best against the next, and against the plan's baseline), not every pair.

A cell ties the one that leads its rank when compare's interval arithmetic says so (report.summary's
Ratio): it shares that rank, so no winner is printed that the data does not back. The reference
server (our own) is the client's ceiling, not a contender: it is printed apart as the ceiling line,
and "fastest" names the best server a user can deploy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence

from httpbench.report import tables
from httpbench.report.summary import Ratio, and_text, cell_name, detail, ratio_bound, rps_ratio, saturated
from httpbench.results.comparison import Group, groups
from httpbench.results.model import CellResult, RunResults, levels_text
from httpbench.servers.adapters.reference import Reference


@dataclass(frozen=True)
class Figure:
    """What a group is ranked on: its heading in the table, its unit on the ceiling line, a cell's
    value in its group (None: not ranked), and a cell's against another's with its tie."""

    heading: str
    unit: str
    of: Callable[[Group, CellResult], Optional[float]]
    ratio: Callable[[Group, CellResult, CellResult], Ratio]


MEAN_RPS = Figure(
    "mean req/s",
    "req/s",
    lambda group, cell: group.figures(cell).mean_rps,
    lambda group, best, other: rps_ratio(group.figures(best), group.figures(other)),
)


@dataclass(frozen=True)
class Place:
    """A ranked cell: its rank (shared by the cells that tie the one leading it), its value and
    its share of the best's."""

    rank: int
    cell: CellResult
    name: str
    value: float
    share: float
    tied: bool


@dataclass(frozen=True)
class Verdict:
    group: Group
    figure: Figure
    places: List[Place]
    unranked: List[CellResult]  # measured cells the group does not rank (not finished, no figure)
    ceiling: Optional[str]  # the reference server's line, outside the ranking
    headline: Optional[str]  # the fastest, or the cells that tie for first; None under two contenders
    details: List[str]  # the best against the next, and against the baseline

    def table(self, several_runs: bool) -> tables.Table:
        """The ranking as a table: TechEmpower's share of the best ("61.3%"), flag kinds by cell."""
        table = tables.Table(
            [
                tables.Column("rank", "rank"),
                tables.Column("cell", "server/profile"),
                tables.Column("value", self.figure.heading, lambda v: "-" if v is None else f"{v:,.0f}"),
                tables.Column("share", "of best", lambda v: "-" if v is None else f"{v:.1%}"),
                tables.Column("flags", "flags"),
            ]
        )
        for place in self.places:
            rank = f"={place.rank}" if place.tied else str(place.rank)
            table.add([rank, place.name, place.value, place.share, None], self.group.flags(place.cell))
        for cell in self.unranked:
            table.add(["-", cell_name(cell, several_runs), None, None, "not ranked"], self.group.flags(cell))
        for row, flags in zip(table.rows, table.flags):
            row[-1] = ", ".join(filter(None, [row[-1], *flags])) or None
        return table


def _places(group: Group, cells: Sequence[CellResult], figure: Figure, several: bool) -> List[Place]:
    """`cells` ranked on `figure`, best first; a cell whose gap to the leader of the rank above is
    within the noise shares that rank."""
    valued = sorted(((figure.of(group, c), c) for c in cells if figure.of(group, c)), key=lambda v: -v[0])
    out: List[Place] = []
    leader = None
    for position, (value, cell) in enumerate(valued):
        shares = leader is not None and figure.ratio(group, leader.cell, cell).tie
        rank = leader.rank if shares else position + 1
        name = cell_name(cell, several, group)
        out.append(Place(rank, cell, name, value, value / valued[0][0], tied=False))
        if not shares:
            leader = out[-1]
    ranks = [p.rank for p in out]
    return [Place(p.rank, p.cell, p.name, p.value, p.share, ranks.count(p.rank) > 1) for p in out]


def _headline(group: Group, places: List[Place]) -> str:
    """The fastest and its figure, or the cells that tie for first, on the levels compared."""
    best = group.figures(places[0].cell)
    winner = places[0].name
    tied = [p for p in places[1:] if p.rank == 1]
    over = (
        f"{levels_text(group.levels)}, the levels every cell measured"
        if group.levels != group.every_level
        else "every level"
    )
    held = saturated(best)
    at_least = "at least " if held else ""
    if tied:
        bounds = {ratio_bound(best, group.figures(p.cell)) for p in tied}
        bound = "at least " if bounds == {"at least "} else ""
        headline = (
            f"{and_text([winner, *(p.name for p in tied)])} tie, {at_least or 'about '}{places[0].value:,.0f} "
            f"requests/s on average over {over}: {winner} serves {bound}as many requests per second on "
            f"average as {and_text([p.name for p in tied])}"
        )
    else:
        headline = f"{winner} is fastest, {at_least}{places[0].value:,.0f} requests/s on average over {over}"
    if held:
        headline += (
            f"; the client, not the server, set {winner}'s pace at {levels_text(held)}, so it may be faster still"
        )
    return headline + "."


def _baseline(places: List[Place], baseline: Optional[str]) -> Optional[Place]:
    """The plan's baseline (a server, or server/profile) among the ranked cells."""
    return next((p for p in places if baseline in (p.cell.server, p.cell.series)), None) if baseline else None


def verdicts(runs: Sequence[RunResults], figure: Figure = MEAN_RPS) -> List[Verdict]:
    """Per group of measured cells: its deployable servers ranked on `figure`, the reference
    server's figure as the client's ceiling, and with two or more ranked, the headline and the
    sentences for the best against the next and against the baseline (the plan's, when ranked),
    all on the levels every cell of the group measured."""
    several = len(runs) > 1
    baseline = next((r.baseline for r in runs if r.baseline), None)
    out = []
    # A capacity cell's levels are the rates its search chose, no levels to rank on: its
    # capacity ranks it (report/capacity.py).
    for group in groups([c for r in runs for c in r.measured if c.capacity is None]):
        # Ranked as the group's own ranking ranks (`Group.ranked`: finished, every level, not
        # kept out by a flag such as not_resumed); the others are listed, unranked.
        finished = [c for c in group.ranked() if figure.of(group, c)]
        places = _places(group, [c for c in finished if c.server != Reference.name], figure, several)
        ceilings = _places(group, [c for c in finished if c.server == Reference.name], figure, several)
        ceiling = (
            f"ceiling ({ceilings[0].name}): {ceilings[0].value:,.0f} {figure.unit}, the client's limit, not ranked"
            if ceilings
            else None
        )
        unranked = [c for c in group.cells if all(c is not f for f in finished)]
        if len(places) < 2:
            out.append(Verdict(group, figure, places, unranked, ceiling, None, []))
            continue
        best = group.figures(places[0].cell)
        pairs: Dict[int, Place] = {id(places[1].cell): places[1]}
        base = _baseline(places, baseline)
        if base is not None and base is not places[0]:
            pairs.setdefault(id(base.cell), base)
        details = [detail(best, group.figures(p.cell), places[0].name, p.name) for p in pairs.values()]
        out.append(Verdict(group, figure, places, unranked, ceiling, _headline(group, places), details))
    return out
