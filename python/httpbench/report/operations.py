"""The report's sentences and table on operations under load (issue 29), in the issue's words:
"Through 5 reloads at 5,000 requests/s (7B, keep-alive, 1 CPU), nginx/tuned failed no request (3
retryable closes); apache2-event/tuned failed 41 (reset)".

Each server is told on its own figures (results.operations): requests failed in its events'
windows by error class, closes a client may retry on its own (RFC 9110 9.2.2) apart and never
called failures, the latency spike against the level's undisturbed stretch, and how long the
server took. An event the server refused (a reload of a configuration it would not load) or that
was never performed is said so, never averaged in.
"""

from __future__ import annotations

from statistics import median
from typing import Dict, List, Sequence

from httpbench.report.summary import cell_name
from httpbench.report.tables import Column, Table, count_text, duration_text
from httpbench.results.comparison import groups
from httpbench.results.model import CellResult, LevelResult, RunResults
from httpbench.results.operations import ActionSummary, by_action

# How a sentence names each action, counted.
NAMES = {
    "reload": ("reload", "reloads"),
    "graceful-restart": ("graceful restart", "graceful restarts"),
    "restart": ("restart", "restarts"),
    "reopen-logs": ("log reopening", "log reopenings"),
}
# A window's p99 this many times the undisturbed stretch's is a spike worth a clause; below it,
# two 100 ms stretches' p99s differ by as much on their own.
SPIKE = 2.0


def _count(n: int, action: str) -> str:
    one, many = NAMES[action]
    return f"{n:,} {one if n == 1 else many}"


def _failed(summary: ActionSummary) -> str:
    """ "failed no request", "failed 41 (reset)", "failed 45 (41 reset, 4 refused)"."""
    by_class = summary.failed_requests
    total = sum(by_class.values())
    if not total:
        return "failed no request"
    if len(by_class) == 1:
        return f"failed {total:,} ({next(iter(by_class))})"
    parts = ", ".join(f"{n:,} {kind}" for kind, n in sorted(by_class.items(), key=lambda kv: -kv[1]))
    return f"failed {total:,} ({parts})"


def clause(cell: CellResult, level: LevelResult, summary: ActionSummary, several: bool) -> str:
    """One server's fate through one action's events at one level."""
    if not summary.measured:
        # No window was measured: "failed no request" would be a clean number the data lacks.
        why = summary.events[0].problem or "no fine series was recorded"
        return f"{cell_name(cell, several)}: no {NAMES[summary.action][0]} was measured ({why})"
    said = f"{cell_name(cell, several)} {_failed(summary)}"
    paced = level.report["open_loop"]
    if paced and paced["fell_short"]:
        # Requests never sent cannot fail: "failed no request" alone would hide a stalled server.
        said += (
            f" but sent only {paced['sent_share']:.0%} of the requests due at {paced['target_rate']:,.0f} "
            "requests/s (its connections held)"
        )
    extras = []
    if summary.retryable:
        extras.append(f"{summary.retryable:,} retryable close{'s' if summary.retryable != 1 else ''}")
    retried = level.report["requests"].get("retried") or 0
    if retried:
        # The engine counts retries over the level, not per event: said once, of the level.
        extras.append(f"{retried:,} retried on a new connection over the level")
    if extras:
        said += f" ({'; '.join(extras)})"
    took = summary.took_s
    if took:
        said += f", each done in {median(took):.2f} s (median; {took[-1]:.2f} s at most)"
    spike = summary.worst_p99_ratio
    if spike is not None and spike >= SPIKE:
        before = next(e.before.p99_us for e in summary.events if e.before and e.before.p99_us)
        said += f", p99 up to {spike:.0f} times the undisturbed {duration_text(before)}"
    refused = [e for e in summary.failed_events if e.at_s is not None]
    if refused:
        said += f"; {len(refused):,} of them failed: {refused[0].problem}"
    missed = len(summary.failed_events) - len(refused)
    if missed:
        said += (
            f"; {missed:,} not performed: the level ended first, each {NAMES[summary.action][0]} taking longer "
            "than the plan's time between them"
        )
    return said


def _at(level: LevelResult) -> str:
    closed = level.report["open_loop"] is None
    return f"{level.level:,} connections" if closed else f"{level.level:,} requests/s"


def sentences(runs: Sequence[RunResults]) -> List[str]:
    """A sentence per group of cells through the same events and action, at the highest level
    all of them measured."""
    several = len(runs) > 1
    out = []
    for group in groups([c for run in runs for c in run.measured if c.events]):
        level = max(group.levels, default=None)
        if level is None:
            continue
        what = group.name.removesuffix(f", through {group.cells[0].events}")
        told: Dict[str, List[str]] = {}
        performed: Dict[str, int] = {}
        at = ""
        for cell in group.cells:
            lv = next(lv for lv in cell.levels if lv.level == level)
            at = _at(lv)
            for summary in by_action(lv.operations):
                told.setdefault(summary.action, []).append(clause(cell, lv, summary, several))
                performed[summary.action] = max(performed.get(summary.action, 0), summary.performed)
        for action, clauses in told.items():
            out.append(f"Through {_count(performed[action], action)} at {at} ({what}), " + "; ".join(clauses) + ".")
    return out


COLUMNS = [
    Column("server", "server"),
    Column("cells", "cells"),
    Column("level", "level"),
    Column("action", "action"),
    Column("performed", "performed", count_text),
    Column("events_failed", "events failed", count_text),
    Column("requests_failed", "requests failed", count_text),
    Column("retryable", "retryable", count_text),
    Column("p99_spike", "p99 spike (times)", lambda v: "-" if v is None else f"{v:.1f}"),
    Column("took_median_s", "took (median)", lambda v: "-" if v is None else f"{v:.2f} s"),
    Column("took_max_s", "took (max)", lambda v: "-" if v is None else f"{v:.2f} s"),
]


def table(runs: Sequence[RunResults]) -> Table:
    """Per server and action: events performed and failed, requests failed and retryable in their
    windows, the worst p99 against the undisturbed stretch, and the time the server took."""
    several = len(runs) > 1
    out = Table(COLUMNS)
    for run in runs:
        for cell in run.measured:
            for lv in cell.levels:
                for s in by_action(lv.operations):
                    took = s.took_s
                    out.add(
                        [
                            cell_name(cell, several),
                            cell.group,
                            lv.level,
                            s.action,
                            s.performed,
                            len(s.failed_events),
                            sum(s.failed_requests.values()),
                            s.retryable,
                            s.worst_p99_ratio,
                            median(took) if took else None,
                            took[-1] if took else None,
                        ]
                    )
    return out


def records(runs: Sequence[RunResults]) -> List[dict]:
    """Every performed event of every round, with its window's figures: what the JSON export
    carries (`events`)."""
    out = []
    for run in runs:
        for cell in run.measured:
            for lv in cell.levels:
                for e in lv.operations:
                    window, before = e.window, e.before
                    out.append(
                        {
                            "run": run.id,
                            "cell": cell.key,
                            "level": lv.level,
                            "action": e.action,
                            "due_s": e.due_s,
                            "at_s": e.at_s,
                            "took_s": e.took_s,
                            "ok": e.ok,
                            "problem": e.problem,
                            "master": e.master,
                            "workers_replaced": e.workers_replaced,
                            "certificate_renewed": e.certificate_renewed,
                            "window_s": window and window.seconds,
                            "requests": window and window.requests,
                            "errors": window and window.errors,
                            "closed_by_server": window and window.closed_by_server,
                            "rps": window and window.rps,
                            "p99_us": window and window.p99_us,
                            "rps_before": before and before.rps,
                            "p99_before_us": before and before.p99_us,
                        }
                    )
    return out
