"""The report's sentences on dynamic pages, in the write-ups' words: "With PHP (php-page,
keep-alive, 1 CPU), nginx/tuned serves 1.52 times as many pages per second as
apache2-prefork/tuned", then what a page cost each server in CPU time and how much of its memory
PHP's processes held.

As in the verdicts (report.verdict), only finished cells are ranked, on the levels every one of
them measured: a cell whose server or PHP pool died is shown, never ranked; a gap within the noise
is a tie, a figure the client limited a bound.
"""

from __future__ import annotations

from typing import List, Optional, Sequence

from httpbench.report.summary import cell_name, ratio_bound, rps_ratio
from httpbench.report.tables import duration_text, mib_text
from httpbench.results.comparison import Group, groups
from httpbench.results.model import CellResult, RunResults, levels_text


def _pages(group: Group, best: CellResult, other: CellResult, winner: str, loser: str) -> str:
    """The winner's pages per second against another cell's, a tie said as one."""
    a, b = group.figures(best), group.figures(other)
    ratio = rps_ratio(a, b)
    bound = ratio_bound(a, b)
    if ratio.tie:
        return f"With PHP ({group.name}), {winner} serves {bound}as many pages per second as {loser}{ratio.why_tie()}."
    return (
        f"With PHP ({group.name}), {winner} serves {bound}{ratio.value:.2f} times as many pages per second as {loser}."
    )


def _memory(cell: CellResult, group: Group) -> Optional[str]:
    """Where the memory went at the highest level compared: PHP-FPM's pool apart, or PHP inside
    the server's own processes."""
    level = next((lv for lv in reversed(cell.levels) if lv.level in group.levels), None)
    if level is None or not level.server_memory_bytes:
        return None
    at = f"at {level.level} connections"
    if level.php_memory_bytes is None:
        return f"{at} its processes, PHP inside them, peaked at {mib_text(level.server_memory_bytes)}"
    return (
        f"{at} its PHP-FPM pool ({level.php_processes} processes) peaked at {mib_text(level.php_memory_bytes)}, "
        f"and all its processes together at {mib_text(level.server_memory_bytes)}"
    )


def _cost(cell: CellResult, group: Group, name: str) -> str:
    """A cell's pages per second, CPU per page and memory, on the levels its group is compared on."""
    figures = group.figures(cell)
    over = levels_text(group.levels) if group.levels != group.every_level else "every level"
    line = f"{name} ({group.name}) serves {figures.mean_rps:,.0f} pages per second on average over {over}"
    if figures.cpu_per_request_us is not None:
        line += f", at {duration_text(figures.cpu_per_request_us)} of server CPU per page"
    if not cell.finished:
        line += " (it did not finish, so it is not ranked)"
    memory = _memory(cell, group)
    return line + (f"; {memory}" if memory else "") + "."


def dynamic_pages(runs: Sequence[RunResults]) -> List[str]:
    """Per group of PHP cells: the fastest's pages per second against each other finished
    cell's, then each cell's throughput, CPU per page and memory."""
    several = len(runs) > 1
    out = []
    for group in groups([c for r in runs for c in r.measured if c.php]):
        if not group.levels:
            continue
        ranked = group.ranked()
        if len(ranked) > 1:
            winner = cell_name(ranked[0], several, group)
            out += [_pages(group, ranked[0], other, winner, cell_name(other, several, group)) for other in ranked[1:]]
        out += [_cost(cell, group, cell_name(cell, several)) for cell in group.cells if group.figures(cell).levels]
    return out
