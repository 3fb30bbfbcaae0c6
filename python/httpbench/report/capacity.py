"""A capacity cell in words: each probe's figures for the tables, and the verdict, which is the
engine's (`Capacity::verdict`, what `httpbench-load --capacity` prints): "capacity: 41,200 req/s
at p99 <= 10 ms, errors <= 0.1% (p99 there 8.70 ms; 42,000 req/s broke it at p99 31.00 ms)",
"at least" where the client or the connections set the pace, "no rate met ..." where none did,
with the plan's remedy where it is a floor. `show`, the end of `run` and the exports read them
here.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence

from httpbench.load import engine
from httpbench.results.comparison import groups
from httpbench.results.model import CellResult, RunResults

_NAMES = {50.0: "p50", 90.0: "p90", 99.0: "p99", 99.9: "p99.9"}
_KEYS = {50.0: "p50_us", 90.0: "p90_us", 99.0: "p99_us", 99.9: "p99_9_us"}
PROBE_HEADINGS = ["offered req/s", "achieved", "p50", "p99", "errors", "met"]


def rate(r: float) -> str:
    """41200.4 -> "41,200"."""
    return f"{max(r, 0.0):,.0f}"


def ms(us: Optional[float]) -> str:
    if us is None:
        return "none"
    return f"{us / 1e3:.0f} ms" if us >= 100_000 else f"{us / 1e3:.2f} ms"


def objective(capacity: dict) -> str:
    """ "p99 <= 10 ms, errors <= 0.1%", as the engine writes an objective."""
    return engine.capacity_words(capacity).objective


def top(capacity: dict) -> float:
    """The highest percentile the objective bounds."""
    bounds = capacity["objective"]["percentiles"]
    return bounds[-1]["percentile"] if bounds else 99.0


def _at(figures, percentile: float) -> Optional[float]:
    """A probe's (dict) or a level's latency (results.Latency) at `percentile`."""
    key = _KEYS[percentile]
    return figures.get(key) if isinstance(figures, dict) else getattr(figures, key)


def probe_rows(capacity: dict) -> List[List[str]]:
    """Each probe in order: offered, achieved, p50, the objective's highest percentile, errors,
    met (PROBE_HEADINGS, whose p99 is that percentile's name)."""
    highest = top(capacity)
    return [
        [
            rate(p["offered"]),
            rate(p["achieved"]),
            ms(p["p50_us"]),
            ms(_at(p, highest)),
            f"{p['errors']:,}",
            ("met" if p["met"] else "not met") + (", client busy" if p["client_bound"] else ""),
        ]
        for p in capacity["probes"]
    ]


def headings(capacity: dict) -> List[str]:
    return [*PROBE_HEADINGS[:3], _NAMES[top(capacity)], *PROBE_HEADINGS[4:]]


def at_least(capacity: dict) -> bool:
    """Whether the capacity is a floor, not the server's: the client or the connections set the
    pace, or the largest rate searched met the objective."""
    return capacity["rate"] is not None and (
        capacity["limited_by"] in ("client", "connections") or capacity["bound"] == "max_rate"
    )


# What a plan can do where the capacity is a floor, in its own keys.
_REMEDIES = {
    "client": ": give the client more CPUs (--client-cpus)",
    "connections": ": raise the open-file limit, or capacity.connections",
    "max_rate": ": raise capacity.max_rate",
}


def verdict(cell: CellResult) -> str:
    """The cell's verdict, one line, in the engine's words (`Capacity::verdict`), with what the
    plan can do where the capacity is a floor."""
    c = cell.capacity
    said = engine.capacity_words(c).verdict
    if not at_least(c):
        return said
    return said + _REMEDIES.get(c["limited_by"], _REMEDIES["max_rate"] if c["bound"] == "max_rate" else "")


def cells(runs: Sequence[RunResults]) -> List[CellResult]:
    """The capacity cells of `runs` with a search stored, in the order they were measured."""
    return [c for r in runs for c in r.cells if c.capacity is not None]


def ranked(runs: Sequence[RunResults]) -> Dict[str, List[CellResult]]:
    """Per group, its capacity cells, finished ones with a rate highest first, then the others
    as they were measured (shown, never ranked)."""
    out: Dict[str, List[CellResult]] = {}
    for group in groups(cells(runs)):
        found = sorted(
            (c for c in group.cells if c.finished and c.capacity["rate"] is not None),
            key=lambda c: -c.capacity["rate"],
        )
        out[group.name] = found + [c for c in group.cells if c not in found]
    return out


def shown_rate(cell: CellResult) -> str:
    """Its capacity as a table shows it: "at least 5,000" where it is a floor, "none" where no rate met."""
    found = cell.capacity["rate"]
    return ("at least " if at_least(cell.capacity) else "") + rate(found) if found is not None else "none"


def share_of_best(cell: CellResult, cells: Sequence[CellResult]) -> str:
    """Its capacity as a share of its group's highest ("-" when either is not ranked)."""
    best = next((c.capacity["rate"] for c in cells if c.finished and c.capacity["rate"]), None)
    found = cell.capacity["rate"]
    return f"{found / best:.0%}" if best and found is not None and cell.finished else "-"


def rankings(runs: Sequence[RunResults]) -> List[dict]:
    """Per group of capacity cells, its table (rank, cell, capacity, share of the best) and each
    cell's verdict: what the report's summary opens with."""
    out = []
    for group, cells in ranked(runs).items():
        rows = [
            [
                str(n) if c.finished and c.capacity["rate"] is not None else "-",
                c.series + (f" (run {c.run_id})" if len(runs) > 1 else ""),
                shown_rate(c),
                share_of_best(c, cells),
            ]
            for n, c in enumerate(cells, 1)
        ]
        out.append({"group": group, "rows": rows, "verdicts": [f"{c.series}: {verdict(c)}" for c in cells]})
    return out


def markdown(runs: Sequence[RunResults]) -> List[str]:
    """Per group of capacity cells, a Markdown table of them ranked, with their verdicts."""
    lines: List[str] = []
    for group, cells in ranked(runs).items():
        lines += [f"### Capacity, {group}", "", "| cell | capacity (req/s) | of the best | verdict |"]
        lines.append("| :--- | ---: | ---: | :--- |")
        lines += [f"| `{c.series}` | {shown_rate(c)} | {share_of_best(c, cells)} | {verdict(c)} |" for c in cells]
        lines.append("")
    return lines


def record(cell: CellResult) -> dict:
    """A capacity cell as an export carries it: its capacity object (every probe in it) and verdict."""
    return {
        "run_id": cell.run_id,
        "cell": cell.key,
        "server": cell.server,
        "profile": cell.profile,
        "group": cell.group,
        "status": cell.status,
        "capacity": cell.capacity,
        "verdict": verdict(cell),
    }
