"""What each planned event cost the load (issue 29), read from a round's fine series.

An event's window runs from its signal until the server finished it (old workers gone, new ones
serving) and a grace after, for the requests the old workers still held; it ends at the next
event at the latest, so no request is counted twice. It is read against the stretch of load
before the level's first event, the server undisturbed. The figures are the engine's: counts and
latency percentiles of the window come from its `ticks` (engine.ticks_window), never re-derived
here. A round stored without `ticks` (a level without events) has no event costs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence

from httpbench.load import engine
from httpbench.servers.operate import BOUND

# After the server says it is done, its old workers' last answers and closes are still arriving.
GRACE_S = 0.5
# The first moments of a level are its connections opening, not the server undisturbed.
OPENING_S = 0.5
# Failures of a request the client may retry on its own (RFC 9110 9.2.2): counted, never failed.
RETRYABLE = "retryable"


@dataclass(frozen=True)
class Window:
    """The engine's figures of a stretch of a round's load."""

    seconds: float
    requests: int
    errors: Dict[str, int]
    closed_by_server: int
    p99_us: Optional[float]
    max_us: Optional[float]

    @property
    def rps(self) -> float:
        return self.requests / self.seconds if self.seconds > 0 else 0.0

    @property
    def failed(self) -> int:
        """Requests that failed in the window, a retryable close apart."""
        return sum(n for kind, n in self.errors.items() if kind != RETRYABLE)

    @property
    def retryable(self) -> int:
        return self.errors.get(RETRYABLE, 0)


@dataclass(frozen=True)
class EventCost:
    """One performed event of one round, as the server host verified it and the load felt it."""

    round: int  # of its level, from 0
    action: str
    due_s: float  # when the plan wanted it, from the load's start
    at_s: Optional[float]  # when it was performed, from the load's start; None: not performed
    took_s: Optional[float]  # signal to old workers gone and new ones serving; None: not seen
    ok: bool
    problem: Optional[str]
    master: Optional[str]  # "kept" or "replaced", as observed
    workers_replaced: int
    certificate_renewed: bool
    window: Optional[Window]  # None: not performed, or a round without a fine series
    before: Optional[Window]  # the undisturbed stretch before the level's first event

    @property
    def failed(self) -> int:
        return self.window.failed if self.window else 0

    @property
    def retryable(self) -> int:
        return self.window.retryable if self.window else 0

    @property
    def p99_ratio(self) -> Optional[float]:
        """The window's p99 over the undisturbed stretch's: the latency spike."""
        if not (self.window and self.before and self.window.p99_us and self.before.p99_us):
            return None
        return self.window.p99_us / self.before.p99_us


def _window(report: dict, start: float, end: float) -> Optional[Window]:
    """The figures of the fine series' points from the one `start` falls in to the one `end`
    falls in, that one left out: whole points, so that what failed in the point of an event's
    signal is its own, and the point of the next event's signal the next one's."""
    step = report["ticks"]["interval_ms"]
    first, last = int(start * 1000) // step * step, int(end * 1000) // step * step
    if last <= first:
        return None
    figures = engine.ticks_window(report, first, last)
    return Window(
        seconds=(last - first) / 1000,
        requests=figures["requests"],
        errors={kind: n for kind, n in figures["errors"].items() if n},
        closed_by_server=figures["closed_by_server"],
        # The engine's 0 is a window without an answer: no latency, not a fast one.
        p99_us=figures["p99_us"] or None,
        max_us=figures["max_us"] or None,
    )


def costs(measurement: dict, round: int) -> List[EventCost]:
    """Each event of round number `round`, `measurement`, in the order performed; [] without
    events."""
    performed = measurement.get("operations") or []
    if not performed:
        return []
    ticks = measurement.get("ticks")
    end = measurement["duration_s"] or 0.0
    # Where each performed event sits in the load: its signal's wall time from the load's start.
    at = [None if p["at"] is None else p["at"] - measurement["started_at"] for p in performed]
    starts = sorted(t for t in at if t is not None)
    before = _window(measurement, OPENING_S, starts[0]) if ticks and starts else None
    result = []
    for p, start in zip(performed, at):
        window = None
        if ticks and start is not None:
            later = [t for t in starts if t > start]
            # An action not seen done within its bound may still be costing the load until then.
            took = p["took_s"] if p["took_s"] is not None else (0.0 if p["ok"] else BOUND)
            stop = min([start + took + GRACE_S, end, *later[:1]])
            window = _window(measurement, start, stop)
        result.append(
            EventCost(
                round=round,
                action=p["action"],
                due_s=p["due_s"],
                at_s=start,
                took_s=p["took_s"],
                ok=p["ok"],
                problem=p["problem"],
                master=p["master"],
                workers_replaced=p["workers_replaced"],
                certificate_renewed=p["certificate_renewed"],
                window=window,
                before=before,
            )
        )
    return result


def fine_series(measurements: Sequence[dict]) -> List[dict]:
    """The rounds' fine series, each point as rates with its latency p99: what the timeline of
    events is drawn from; [] for rounds without one."""
    rows = []
    for index, m in enumerate(measurements):
        ticks = m.get("ticks")
        if not ticks:
            continue
        seconds = ticks["interval_ms"] / 1000
        for at_ms, point in engine.ticks_points(m):
            errors = point["errors"]
            rows.append(
                {
                    "round": index,
                    "second": at_ms / 1000,
                    "requests": point["requests"] / seconds,
                    "failed": sum(n for kind, n in errors.items() if kind != RETRYABLE) / seconds,
                    "retryable": errors.get(RETRYABLE, 0) / seconds,
                    "p99_us": point["p99_us"] or None,
                }
            )
    return rows


@dataclass(frozen=True)
class ActionSummary:
    """Every event of one action in a level's rounds."""

    action: str
    events: Sequence[EventCost]

    @property
    def performed(self) -> int:
        return sum(1 for e in self.events if e.at_s is not None)

    @property
    def measured(self) -> int:
        """Events whose window the fine series measured: what failed counts are counts of."""
        return sum(1 for e in self.events if e.window is not None)

    @property
    def failed_events(self) -> List[EventCost]:
        """Those the server host saw fail (a refused configuration) or that were not performed."""
        return [e for e in self.events if not e.ok]

    @property
    def failed_requests(self) -> Dict[str, int]:
        """Requests failed in the events' windows, by error class, a retryable close apart."""
        total: Dict[str, int] = {}
        for e in self.events:
            for kind, n in (e.window.errors if e.window else {}).items():
                if kind != RETRYABLE:
                    total[kind] = total.get(kind, 0) + n
        return total

    @property
    def retryable(self) -> int:
        return sum(e.retryable for e in self.events)

    @property
    def took_s(self) -> List[float]:
        return sorted(e.took_s for e in self.events if e.took_s is not None)

    @property
    def worst_p99_ratio(self) -> Optional[float]:
        return max((r for r in (e.p99_ratio for e in self.events) if r is not None), default=None)


def by_action(events: Sequence[EventCost]) -> List[ActionSummary]:
    """`events` grouped by action, in the order each action first happened."""
    order = list(dict.fromkeys(e.action for e in events))
    return [ActionSummary(action, [e for e in events if e.action == action]) for action in order]
