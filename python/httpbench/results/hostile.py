"""Cells with clients beside their load that are not a benchmark (issue 28), each level read
against the same level of the same cell without them: the normal clients' fate under slow
clients (their succeeded share, latency and requests/s against the cell without the attack), the
slow connections the server cut and when, and what idle connections cost the server's memory
(the monitor's PSS peak of its process tree, with them against without, per connection held).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

from httpbench.plan.model import attack_label
from httpbench.results.model import CellResult, LevelResult, RunResults


def without(
    cell: CellResult, cells: Sequence[CellResult], idle: bool = False, slow: bool = False
) -> Optional[CellResult]:
    """The cell of `cells` that is `cell` without its idle connections (`idle`) or its slow
    clients (`slow`), everything else the same; None when the plan measured none."""
    own = attack_label(cell.idle, cell.slow, cell.slow_clients)
    base = cell.key[: len(cell.key) - len(own)] if own else cell.key
    key = base + attack_label(0 if idle else cell.idle, None if slow else cell.slow, 0 if slow else cell.slow_clients)
    return next((c for c in cells if c.key == key and c.run_id == cell.run_id), None)


def _level(cell: Optional[CellResult], number: int) -> Optional[LevelResult]:
    return next((lv for lv in cell.levels if lv.level == number), None) if cell else None


@dataclass(frozen=True)
class SlowFigures:
    """A level under slow clients."""

    level: LevelResult
    unattacked: Optional[LevelResult]  # the same level without them; None when not measured

    @property
    def rps_share(self) -> Optional[float]:
        """Its requests/s served over the same level's without slow clients."""
        if self.unattacked is None or self.unattacked.rps.mean <= 0:
            return None
        return self.level.rps.mean / self.unattacked.rps.mean

    @property
    def cut(self) -> int:
        """Slow connections the server closed while they still trickled."""
        return (self.level.slow_clients or {}).get("cut_by_server") or 0

    @property
    def cut_after_ms(self) -> tuple:
        """How long those had been open: (median, max) in milliseconds; (None, None) if none."""
        after = (self.level.slow_clients or {}).get("cut_after_ms") or {}
        return (after.get("p50"), after.get("max")) if self.cut else (None, None)


@dataclass(frozen=True)
class IdleFigures:
    """A level beside idle connections."""

    level: LevelResult
    alone: Optional[LevelResult]  # the same level without them; None when not measured

    @property
    def held(self) -> int:
        return (self.level.idle_connections or {}).get("held") or 0

    @property
    def closed_by_server(self) -> int:
        return (self.level.idle_connections or {}).get("closed_by_server") or 0

    @property
    def memory_bytes(self) -> Optional[int]:
        """What they cost the server's memory: its PSS peak with them less without them."""
        if self.alone is None or None in (self.level.server_memory_bytes, self.alone.server_memory_bytes):
            return None
        return self.level.server_memory_bytes - self.alone.server_memory_bytes

    @property
    def bytes_per_connection(self) -> Optional[float]:
        memory = self.memory_bytes
        return memory / self.held if memory is not None and self.held else None


def slow_figures(cell: CellResult, cells: Sequence[CellResult]) -> List[SlowFigures]:
    """Each level of an attacked `cell` against the same level without the attack; [] for a cell
    without slow clients."""
    if not cell.slow:
        return []
    alone = without(cell, cells, slow=True)
    return [SlowFigures(lv, _level(alone, lv.level)) for lv in cell.levels]


def idle_figures(cell: CellResult, cells: Sequence[CellResult]) -> List[IdleFigures]:
    """Each level of `cell` beside its idle connections against the same level without them; []
    for a cell without idle connections."""
    if not cell.idle:
        return []
    alone = without(cell, cells, idle=True)
    return [IdleFigures(lv, _level(alone, lv.level)) for lv in cell.levels]


def level_figures(
    cell: CellResult, cells: Sequence[CellResult], lv: LevelResult
) -> Tuple[Optional[SlowFigures], Optional[IdleFigures]]:
    """Level `lv` of `cell` under its slow clients and beside its idle connections (None for
    what the cell has not)."""
    slow = next((f for f in slow_figures(cell, cells) if f.level is lv), None)
    return slow, next((f for f in idle_figures(cell, cells) if f.level is lv), None)


@dataclass(frozen=True)
class AttackChange:
    """An attacked cell's level in two runs: its figures under the attack in each."""

    cell: str
    level: int
    before: Tuple[Optional[SlowFigures], Optional[IdleFigures]]
    after: Tuple[Optional[SlowFigures], Optional[IdleFigures]]


def attack_changes(before: RunResults, after: RunResults) -> List[AttackChange]:
    """Each attacked cell's levels measured in both runs, matched by key and level: the key names
    the attack, so a cell under attack is only ever set beside the same attack, never beside a
    cell without it."""
    later = {c.key: c for c in after.measured if c.idle or c.slow}
    out = []
    for old in before.measured:
        new = later.get(old.key)
        if new is None:
            continue
        levels = {lv.level: lv for lv in new.levels}
        for lv in old.levels:
            if lv.level in levels:
                out.append(
                    AttackChange(
                        old.key,
                        lv.level,
                        level_figures(old, before.measured, lv),
                        level_figures(new, after.measured, levels[lv.level]),
                    )
                )
    return out
