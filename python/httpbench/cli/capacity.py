"""What `show`, the end of `run` and `compare` print of a capacity plan's cells: each cell's
probes and verdict, the cells of each group ranked by capacity, capacity against capacity. The
words are httpbench.report.capacity's; `table` is the console's table maker."""

from __future__ import annotations

import sys
from dataclasses import replace
from typing import Callable, List, Tuple

from rich.console import Console
from rich.padding import Padding
from rich.text import Text

from httpbench.report import capacity as words
from httpbench.report import tables
from httpbench.results.compare import Comparison
from httpbench.results.model import CellResult, RunResults


def split(run: RunResults) -> Tuple[RunResults, List[CellResult]]:
    """`run` without its capacity cells (what the level tables and verdicts read), and those
    cells: levels at rates a search chose are no levels to rank by."""
    searched = [c for c in run.cells if c.capacity is not None]
    return replace(run, cells=[c for c in run.cells if c.capacity is None]), searched


def probes(cell: CellResult, out: Console, table: Callable) -> None:
    """A capacity cell's probes, its verdict, and each probe's honesty flags."""
    title = f"{cell.key} ({cell.server_version}): capacity at {words.objective(cell.capacity)}"
    out.print(table(title, words.headings(cell.capacity), words.probe_rows(cell.capacity)))
    out.print(Text(words.verdict(cell)))
    for lv, flags in zip(cell.levels, tables.levels(cell).flags):
        for kind, reason in flags.items():
            out.print(Padding(Text(f"{words.rate(lv.level)} req/s: {kind}: {reason}"), (0, 0, 0, 2)))


def summary(run: RunResults, out: Console, table: Callable) -> None:
    """Per group, its capacity cells ranked (rank, cell, capacity, share of the best, flags, or
    the status of a cell that did not finish), the reference server's as the ceiling, the
    sentence for the pair that matters, each verdict."""
    for s in words.standings([run]):
        rows = [[s.rank(c), c.series, words.shown_rate(c), s.share(c), s.flags(c) or _unfinished(c)] for c in s.cells]
        headings = ["rank", "server/profile", "req/s", "of best", "flags"]
        out.print(table(f"capacity, {s.group}", headings, rows))
        if s.sentence:
            out.print(Text(s.sentence))
        for cell in s.cells:
            out.print(Text(f"{cell.series}: {words.verdict(cell)}"))
            if cell.error:
                out.print(Text(f"{cell.key} {cell.status}: {cell.error}", style="red"))


def _unfinished(cell: CellResult) -> str:
    return "" if cell.status == "done" else cell.status


def comparison(cmp: Comparison, out: Console, table: Callable) -> None:
    """Capacity against capacity, cell by cell."""
    if not cmp.capacities:
        return
    rows = [
        [
            c.cell,
            words.rate(c.before) if c.before is not None else "none",
            words.rate(c.after) if c.after is not None else "none",
            "-" if c.ratio is None else f"{c.ratio:.3f}",
            "-" if c.interval is None else f"{c.interval[0]:.3f} to {c.interval[1]:.3f}",
            c.verdict,
        ]
        for c in cmp.capacities
    ]
    headings = ["cell", f"run {cmp.before.id} req/s", f"run {cmp.after.id} req/s", "ratio", "interval", "verdict"]
    out.print(table(f"capacity, run {cmp.after.id} against run {cmp.before.id}", headings, rows))


def regressions(cmp: Comparison, threshold: float) -> int:
    """Says each capacity that fell by more than `threshold` beyond the search's bracket; their count."""
    fallen = cmp.capacity_regressions(threshold)
    for c in fallen:
        after = f"{c.after:,.0f}" if c.after is not None else "no rate met"
        print(f"regression: {c.cell}: capacity {c.before:,.0f} -> {after} req/s ({c.why})", file=sys.stderr)
    return len(fallen)
