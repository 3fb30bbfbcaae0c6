"""A server's workers restarting: noticed by the monitor (httpbench.observe.monitor) from its samples of
the server's process tree, told with its windows, flagged `server_restarted` by honesty."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Iterable, List, Optional

# An exit and a start seen in different windows (or between them) are a restart only this close:
# a master replaces a crashed worker as soon as it has reaped it (nginx's, lighttpd's), within a
# sample or two. apache2 grows or shrinks its pool by one step a second at most, so its pool
# shrinking once a level's load stops and growing at the next level's (an exit, then a start a
# second or more later) is not taken for one.
RESTART_GAP = 0.8


@dataclass(frozen=True)
class _Change:
    t: float  # the sample that saw it
    exited: bool  # a worker left the tree, or `count` joined it
    count: int
    event: str
    planned: bool = False  # seen while the suite performed an action on the server


class WorkerChanges:
    """Workers leaving and joining the server's tree, noted at every sample, in windows and
    between them, and told with the window a restart completes in.

    A restart is an exit and a start. A worker that dies in a window's last 100 ms is replaced in
    the next one, and one that dies between windows (a warm-up, a round being stored) in neither:
    each window alone would hold half of it, or nothing. So a window also tells the changes seen
    since the last window ended ("before the window") and those the last window left unmatched in
    its last RESTART_GAP seconds ("at the end of the previous window"), each only when it is half
    of a restart, its other half within RESTART_GAP of it.

    Changes seen while the suite performs an action on the server (a reload: `planned` names it)
    are told apart, in figures of their own: what the action did, never a restart to flag."""

    def __init__(self, leader: int) -> None:
        # The server's main processes: one, or each a planned restart started.
        self.leaders = {leader}
        self.noted: List[_Change] = []  # since the last window ended
        self.carried: List[_Change] = []  # the last window's unmatched ones, near its end

    def note(self, before_pids: Iterable[int], pids: Iterable[int], t: float, planned: Optional[str] = None) -> None:
        """Two successive samples of the server's tree: its pids, and the later one's time;
        `planned`: when the suite performed an action on the server meanwhile, which one ("during
        the planned reload", "just after the planned reload"); None otherwise."""
        before, now = set(before_pids), set(pids)
        during = f" {planned}" if planned else ""
        exited = sorted(before - now - self.leaders)
        self.noted += [_Change(t, True, 1, f"worker pid {pid} exited{during}", bool(planned)) for pid in exited]
        new = sorted(now - before - self.leaders)
        if new:
            workers = f"{len(new)} new worker{'s' if len(new) > 1 else ''}"
            event = f"{workers} appeared (pid {', '.join(map(str, new))}){during}"
            self.noted.append(_Change(t, False, len(new), event, bool(planned)))

    def close(self, start: float, end: float) -> dict:
        """The worker figures of the window from sample time `start` to `end`."""
        planned = [c for c in self.noted if c.planned]
        self.noted = [c for c in self.noted if not c.planned]
        earlier = [replace(c, event=c.event + " at the end of the previous window") for c in self.carried] + [
            replace(c, event=c.event + " before the window") for c in self.noted if c.t <= start
        ]
        during = [c for c in self.noted if c.t > start]
        halves = [
            c for c in earlier if any(o.exited != c.exited and abs(o.t - c.t) <= RESTART_GAP for o in earlier + during)
        ]
        changes = halves + during
        exited = sum(c.count for c in changes if c.exited)
        started = sum(c.count for c in changes if not c.exited)
        self.carried = [] if exited and started else [c for c in self.noted if end - c.t <= RESTART_GAP]
        self.noted = []
        return {
            "events": [c.event for c in changes],
            "workers_exited": exited,
            "workers_started": started,
            "planned_events": [c.event for c in planned],
            "planned_workers_exited": sum(c.count for c in planned if c.exited),
            "planned_workers_started": sum(c.count for c in planned if not c.exited),
        }
