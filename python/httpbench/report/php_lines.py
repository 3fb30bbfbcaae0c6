"""Dynamic pages as charts against concurrency, a line per PHP cell: the server's memory with its
PHP-FPM pool's share apart, and what a page cost the server in CPU time. Drawn only for runs with
PHP cells.
"""

from __future__ import annotations

from typing import List

from httpbench.report.lines import per_level
from httpbench.report.marks import MIB, Chart, Measured, flagged, panel_context
from httpbench.results.model import CellResult, LevelResult

ALL, POOL = "all its processes", "its PHP-FPM pool"


def _row(m: Measured, cell: CellResult, lv: LevelResult, **values) -> dict:
    return {
        "series": m.series_of(cell),
        "cpus": f"{cell.cpus} CPU",
        "context": panel_context(cell),
        "level": lv.level,
        **values,
        **flagged(lv.flags),
    }


def _levels(m: Measured):
    return [(cell, lv) for cell in m.cells if cell.php for lv in cell.levels]


def php_memory(m: Measured) -> Chart:
    rows: List[dict] = []
    for cell, lv in _levels(m):
        shares = {ALL: lv.server_memory_bytes, POOL: lv.php_memory_bytes}
        rows += [_row(m, cell, lv, mib=v / MIB, memory=which) for which, v in shares.items() if v]
    return Chart(
        "php_memory",
        "Memory of servers running PHP against concurrency, PHP-FPM's share apart",
        per_level(m, rows, "mib", "memory (MiB, PSS)", dash="memory"),
        "The solid line: every process of the server, its PHP-FPM pool included (peak PSS of the level, RSS where "
        "PSS cannot be read); the dashed one: the pool alone (its peak, likewise). A server running PHP "
        "inside its own processes (apache2-prefork's mod_php) has no pool to show apart.",
    )


def php_cpu_per_page(m: Measured) -> Chart:
    rows = [
        _row(m, cell, lv, cpu_us=lv.server_cpu_per_request_us)
        for cell, lv in _levels(m)
        if lv.server_cpu_per_request_us is not None
    ]
    return Chart(
        "php_cpu_per_page",
        "Server CPU per PHP page against concurrency",
        per_level(m, rows, "cpu_us", "server CPU per page (us)"),
        "CPU time (user and system) of the server's processes, PHP's included, over the level, divided by the "
        "pages it served: what a page costs, which a server limited by PHP's workers can keep low while its "
        "pages per second stop rising.",
    )
