"""Two runs' planned events side by side (issue 29): per cell, level and action, the requests
failed in the events' windows in each run. Failures are counts of rare outcomes, so a change is
beyond the noise only when the two counts differ by more than two Poisson standard deviations of
their sum (about 95 %): 3 against 5 is a tie, 0 against 41 is not. A retryable close is no failure
(RFC 9110 9.2.2: a client retries it on its own) and never makes a change."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Dict, List, Tuple

from httpbench.results.model import CellResult, RunResults
from httpbench.results.operations import by_action


@dataclass(frozen=True)
class EventsChange:
    cell: str
    level: int
    action: str
    before: int  # requests failed through the action's events, all rounds
    after: int
    retryable: Tuple[int, int]  # retryable closes before and after, told beside
    # Events whose window was measured, before and after: failures through 5 reloads are no
    # count to set against those through 3, or through none performed.
    measured: Tuple[int, int] = (0, 0)

    @property
    def verdict(self) -> str:
        if self.measured[0] != self.measured[1] or not self.measured[0]:
            return "not compared: {} events measured against {}".format(*self.measured)
        if abs(self.after - self.before) <= 2 * math.sqrt(self.before + self.after):
            return "within the noise"
        return "more failed" if self.after > self.before else "fewer failed"

    @property
    def regressed(self) -> bool:
        return self.verdict == "more failed"


def _failed(cell: CellResult) -> Dict[Tuple[int, str], Tuple[int, int, int]]:
    out = {}
    for lv in cell.levels:
        for s in by_action(lv.operations):
            out[(lv.level, s.action)] = (sum(s.failed_requests.values()), s.retryable, s.measured)
    return out


def changes(before: RunResults, after: RunResults) -> List[EventsChange]:
    """Every cell, level and action with events in both runs, matched by the cell's key (which
    names its events: other events are other cells)."""
    later = {c.key: c for c in after.measured if c.events}
    out = []
    for old in before.measured:
        new = later.get(old.key)
        if not old.events or new is None:
            continue
        now = _failed(new)
        for (level, action), (failed, retryable, measured) in _failed(old).items():
            if (level, action) in now:
                failed_after, retryable_after, measured_after = now[(level, action)]
                out.append(
                    EventsChange(
                        old.key, level, action, failed, failed_after, (retryable, retryable_after),
                        (measured, measured_after),
                    )
                )  # fmt: skip
    return out
