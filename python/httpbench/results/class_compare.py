"""Two stored runs' site cells size class by size class: at each level compared (compare.Change),
each class's answers and p99 in both runs, so a change confined to large files shows even where
the requests/s hardly moved. A class's p99 comes from one histogram, with no interval: these are
shown beside the verdicts, never made verdicts themselves."""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional

from httpbench.results.compare import Comparison
from httpbench.results.model import RunResults


@dataclass(frozen=True)
class ClassChange:
    cell: str
    level: int
    before: dict  # the size class in run A (the report's `classes` entry)
    after: dict  # the same class in run B

    @property
    def p99_ratio(self) -> Optional[float]:
        """Run B's p99 of the class over run A's; None where either has none."""
        a, b = (c["latency"]["p99_us"] if c["requests"] else None for c in (self.before, self.after))
        return b / a if a and b is not None else None


def _levels(run: RunResults) -> dict:
    return {(cell.key, lv.level): lv for cell in run.measured for lv in cell.levels}


def class_changes(cmp: Comparison) -> List[ClassChange]:
    """Each compared level's classes, run A's beside run B's (bounds matched: a class whose bounds
    changed between the runs is not the same class), but those neither run had an answer in."""
    before, after = _levels(cmp.before), _levels(cmp.after)
    out = []
    for change in cmp.changes:
        old, new = before[(change.cell, change.level)], after[(change.cell, change.level)]
        theirs = {(c["bytes_from"], c["bytes_to"]): c for c in new.classes}
        for c in old.classes:
            match = theirs.get((c["bytes_from"], c["bytes_to"]))
            if match is not None and (c["requests"] or match["requests"]):
                out.append(ClassChange(change.cell, change.level, c, match))
    return out
