"""A capacity cell in words, as `httpbench-load --capacity` says it (crates/load/src/verdict.rs,
whose wording this keeps): each probe's figures, and the verdict "capacity: 41,200 req/s at
p99 <= 10 ms, errors <= 0.1% (p99 there 8.70 ms; 42,000 req/s broke it at p99 31 ms)", "at
least" where the client or the connections set the pace, "no rate met ..." where none did.
`show`, the end of `run` and the exports read them here.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence

from httpbench.plan.capacity import level_of
from httpbench.results.comparison import groups
from httpbench.results.model import CellResult, RunResults

# The engine's share of the offered rate a probe must send (capacity::MIN_ACHIEVED_SHARE).
MIN_ACHIEVED_SHARE = 0.98
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


def _number(x: float) -> str:
    """As Rust prints an f64: 10.0 -> "10", 0.1 -> "0.1"."""
    text = repr(float(x))
    return text[:-2] if text.endswith(".0") else text


def _bound(us: int) -> str:
    if us < 1_000:
        return f"{us} us"
    return f"{_number(us / 1e3)} ms" if us < 1_000_000 else f"{_number(us / 1e6)} s"


def objective(capacity: dict) -> str:
    """ "p99 <= 10 ms, errors <= 0.1%", as the engine writes an objective."""
    o = capacity["objective"]
    terms = [f"{_NAMES[b['percentile']]} <= {_bound(b['latency_us'])}" for b in o["percentiles"]]
    return ", ".join(terms + [f"errors <= {_number(o['max_error_share'] * 100)}%"])


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


def _broke(p: dict, capacity: dict) -> str:
    """Why a probe did not meet the objective: the first thing it broke."""
    for b in reversed(capacity["objective"]["percentiles"]):
        us = _at(p, b["percentile"])
        if us is None or us > b["latency_us"]:
            return f"at {_NAMES[b['percentile']]} {ms(us)}"
    if p["achieved"] < MIN_ACHIEVED_SHARE * p["offered"]:
        return f"sending only {rate(p['achieved'])} req/s"
    return f"with {p['errors']} errors"


def at_least(capacity: dict) -> bool:
    """Whether the capacity is a floor, not the server's: the client or the connections set the pace."""
    return capacity["limited_by"] in ("client", "connections")


def verdict(cell: CellResult) -> str:
    """The cell's verdict, one line (see the module's docstring)."""
    c = cell.capacity
    wanted, highest = objective(c), top(c)
    name = _NAMES[highest]
    if c["rate"] is None:
        if not c["probes"]:
            return f"no rate met {wanted}: no probe ran"
        lowest = min(c["probes"], key=lambda p: p["offered"])
        why = _broke(lowest, c)
        said = "" if why.startswith("at ") else f" ({why.removeprefix('with ')})"
        return f"no rate met {wanted}: at {rate(lowest['offered'])} req/s, {name} was {ms(_at(lowest, highest))}{said}"
    levels = {lv.level: lv for lv in cell.levels}
    there = levels.get(level_of(c["rate"]))
    high = c["interval"]["high"]
    failed = next((p for p in c["probes"] if high is not None and p["offered"] == high and not p["met"]), None)
    above = f"; {rate(high)} req/s broke it {_broke(failed, c)}" if failed else ""
    detail = f"({name} there {ms(_at(there.latency, highest) if there else None)}{above})"
    limits = {
        "client": " — the client set the pace (an engine thread at 90% busy or more): give it more CPUs",
        "connections": " — the connection pool set the pace (its cap, or capacity.connections): raise the "
        "open-file limit or capacity.connections",
    }
    floor = limits.get(c["limited_by"]) or (
        " — the largest rate searched (capacity.max_rate) met it" if c["bound"] == "max_rate" else ""
    )
    unsettled = {
        "probes": ", unsettled: the search ran out of probes",
        "time": ", unsettled: the search ran out of time",
    }
    return (
        f"capacity: {'at least ' if floor else ''}{rate(c['rate'])} req/s at {wanted} {detail}"
        f"{unsettled.get(c['bound'], '')}{floor}"
    )


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
