"""The report's sentences on clients that are not a benchmark (issue 28), in the write-ups'
words: "With 300 slowloris connections open (7B, keep-alive, 1 CPU, at 10 connections),
apache2-prefork/default answered 0% of normal requests; nginx/default answered all of them, at
p99 4.1 ms", and "5,000 idle connections cost nginx/default 2.6 MB (520 bytes each, 5,000 held);
it closed none of them".

An attacked cell is never ranked against one without (results.model.CellResult.attack keeps them
in groups of their own): these sentences read it against its own level without the attack
(results.hostile), each server on its own figures.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple

from httpbench.plan.model import ATTACKS
from httpbench.report.summary import Ratio, cell_name
from httpbench.report.tables import duration_text
from httpbench.results import hostile
from httpbench.results.compare import spread
from httpbench.results.comparison import groups
from httpbench.results.model import CellResult, RunResults


def against_unattacked(figures: hostile.SlowFigures) -> str:
    """Its requests/s against the same level's without the attack, judged as every ratio the
    summary prints is: within the noise it is "as many", never a bare 97%."""
    share = figures.rps_share
    if share is None:
        return ""
    ratio = Ratio.of(share, spread([figures.level.rps]), spread([figures.unattacked.rps]))
    if ratio.tie:
        why = ratio.why_tie()  # " (0.97 times: within ...)", or nothing at 1.00
        return f" (as many requests/s as without them{'; ' + why[2:-1] if why else ''})"
    return f" ({share:.0%} of its requests/s without them)"


def _normal(cell: CellResult, figures: hostile.SlowFigures, several: bool) -> str:
    """How one server's normal clients fared at a level under attack."""
    lv, name = figures.level, cell_name(cell, several)
    share = lv.succeeded_share
    if share is None:
        said = f"{name} was sent no normal request"
    elif share == 1.0:
        said = f"{name} answered all of them"
    else:
        said = f"{name} answered {share:.0%} of normal requests"
    if lv.latency.p99_us is not None:
        said += f", at p99 {duration_text(lv.latency.p99_us)}"
    if share:
        said += against_unattacked(figures)
    if lv.server_processes and lv.server_processes > 1:
        said += f" with {lv.server_processes:,} processes"
    if figures.cut:
        p50, most = figures.cut_after_ms
        said += f", and cut {figures.cut:,} slow connections after {p50:,.0f} ms (median; {most:,.0f} ms at most)"
    return said


def slow_clients(runs: Sequence[RunResults]) -> List[str]:
    """A sentence per group of cells under the same slow clients, at the highest level all of
    them measured."""
    several = len(runs) > 1
    cells = [c for run in runs for c in run.measured]
    out = []
    for group in groups([c for c in cells if c.slow]):
        level = max(group.levels, default=None)
        if level is None:
            continue
        first = group.cells[0]
        what = group.name.removesuffix(", " + first.attack[-1])
        clauses = []
        for cell in group.cells:
            figures = next((f for f in hostile.slow_figures(cell, cells) if f.level.level == level), None)
            if figures is not None:
                clauses.append(_normal(cell, figures, several))
        out.append(
            f"With {first.slow_clients:,} {ATTACKS[first.slow]} connections open ({what}, at level {level:,}), "
            + "; ".join(clauses)
            + "."
        )
    return out


def idle_connections(runs: Sequence[RunResults]) -> List[str]:
    """A sentence per cell beside idle connections, at its highest level."""
    several = len(runs) > 1
    cells = [c for run in runs for c in run.measured]
    out = []
    for cell in cells:
        figures = hostile.idle_figures(cell, cells)
        if not figures:
            continue
        last = figures[-1]
        name, memory, each = cell_name(cell, several), last.memory_bytes, last.bytes_per_connection
        if memory is None:
            cost = f"{cell.idle:,} idle connections beside {name}'s load (no level without them to weigh against)"
        elif each is None:
            cost = f"{cell.idle:,} idle connections beside {name}'s load, none held at its end (no cost per connection)"
        elif memory <= 0:
            # Less memory with them than without is the monitor's noise, no cost to print.
            cost = f"{cell.idle:,} idle connections ({last.held:,} held) left {name}'s memory where it was without them"
        else:
            cost = f"{cell.idle:,} idle connections cost {name} {memory / 1e6:.1f} MB ({each:,.0f} bytes each"
            cost += f", {last.held:,} held)"
        closed = last.closed_by_server
        after = (last.level.idle_connections or {}).get("closed_after_ms") or {}
        closing = f"it closed {closed:,} of them" + (
            f" after {after['p50'] / 1000:,.1f} s idle (median)" if closed and after.get("p50") is not None else ""
        )
        out.append(f"{cost} at level {last.level.level:,}; {closing if closed else 'it closed none of them'}.")
    return out


def _figures(figures: Tuple[Optional[hostile.SlowFigures], Optional[hostile.IdleFigures]]) -> Dict[str, str]:
    """An attacked level's figures as `compare` prints them."""
    slow, idle = figures
    lv = (slow or idle).level
    share = lv.succeeded_share
    said = {"normal requests answered": "-" if share is None else f"{share:.0%}"}
    said["p99"] = duration_text(lv.latency.p99_us)
    if slow:
        p50, most = slow.cut_after_ms
        after = f" after {p50:,.0f} ms (median; {most:,.0f} ms at most)" if slow.cut else ""
        said["slow connections cut"] = f"{slow.cut:,}{after}"
    if idle:
        said["idle connections held"] = f"{idle.held:,} ({idle.closed_by_server:,} closed by the server)"
        each = idle.bytes_per_connection
        said["memory per idle connection"] = "-" if each is None or each <= 0 else f"{each:,.0f} bytes"
    return said


def comparison(changes: Sequence[hostile.AttackChange]) -> List[List[str]]:
    """`compare`'s rows for attacked levels in both runs: cell, level, figure, run A's, run B's;
    side by side, no verdict (a figure under attack has no interval to judge a change by)."""
    rows = []
    for change in changes:
        before, after = _figures(change.before), _figures(change.after)
        for name, was in before.items():
            rows.append([change.cell, str(change.level), name, was, after.get(name, "-")])
    return rows


def sentences(runs: Sequence[RunResults]) -> List[str]:
    return slow_clients(runs) + idle_connections(runs)
