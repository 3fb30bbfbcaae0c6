"""A capacity cell in words: each probe's figures for the tables, and the verdict, which is the
engine's (`Capacity::verdict`, what `httpbench-load --capacity` prints): "capacity: 41,200 req/s
at p99 <= 10 ms, errors <= 0.1% (p99 there 8.70 ms; 42,000 req/s broke it at p99 31.00 ms)",
"at least" where the client or the connections set the pace, "no rate met ..." where none did,
with the plan's remedy where it is a floor. `show`, the end of `run` and the exports read them
here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

from httpbench.load import engine
from httpbench.plan.capacity import level_of
from httpbench.report import codings
from httpbench.results.comparison import groups
from httpbench.results.model import CellResult, RunResults
from httpbench.servers.adapters.reference import Reference

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
    """Whether the capacity is a floor, not the server's (the engine's `Capacity::at_least`): the
    client or the connections set the pace, or the search did not settle."""
    return engine.capacity_words(capacity).at_least


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


def shown_rate(cell: CellResult) -> str:
    """Its capacity as a table shows it: "at least 5,000" where it is a floor, "none" where no rate met."""
    found = cell.capacity["rate"]
    return ("at least " if at_least(cell.capacity) else "") + rate(found) if found is not None else "none"


@dataclass
class Standing:
    """A group's capacity cells as the verdict ranks them: `places` (rank, cell), best first, a
    cell whose search's bracket reaches the capacity of the one ranked above it sharing its rank
    ("=1"); `others`, not ranked (unfinished, or no rate met); the reference server's cell, the
    client's ceiling rather than a contender; and the sentence for the best against the next (and,
    where those tie, against the first cell below for sure)."""

    group: str
    places: List[Tuple[str, CellResult]]
    others: List[CellResult]
    ceiling: Optional[CellResult]
    sentence: Optional[str]

    @property
    def cells(self) -> List[CellResult]:
        return [c for _, c in self.places] + self.others + ([self.ceiling] if self.ceiling else [])

    def rank(self, cell: CellResult) -> str:
        return next((r for r, c in self.places if c is cell), "ceiling" if cell is self.ceiling else "-")

    def flags(self, cell: CellResult) -> str:
        """The honesty flags of its probes where the search stopped (at its capacity and at the
        rate that broke it): what to read its capacity with."""
        c = cell.capacity
        there = {level_of(r) for r in (c["rate"], c["interval"]["high"]) if r is not None}
        return " ".join(sorted({kind for lv in cell.levels if lv.level in there for kind in lv.flags}))

    def share(self, cell: CellResult) -> str:
        """Its capacity as a share of the best's, as TechEmpower prints it ("-": not ranked)."""
        if not self.places or all(c is not cell for _, c in self.places):
            return "-"
        return f"{cell.capacity['rate'] / self.places[0][1].capacity['rate']:.1%}"


def _below_for_sure(lower: dict, upper: dict) -> bool:
    """`lower`'s capacity is below `upper`'s whatever the noise: its search failed at a rate at or
    under the rate `upper` carried, and it is the server's (a floor may carry more)."""
    high = lower["interval"]["high"]
    return not at_least(lower) and high is not None and high <= upper["rate"]


def _sentence(found: List[CellResult], several: bool) -> str:
    """The best against the next, in the write-ups' words; where those tie, that, then the best
    against the first cell below it for sure: a tie at the top still says how far ahead of the
    rest it is."""
    best, next_ = found[0], found[1]
    a, b = best.capacity, next_.capacity
    name = lambda c: c.series + (f" (run {c.run_id})" if several else "")  # noqa: E731
    if _below_for_sure(b, a):
        return _ahead(best, next_, name)
    tie = (
        f"{name(best)} and {name(next_)} tie at {objective(a)}: {rate(a['rate'])} and {rate(b['rate'])} "
        f"req/s, within what their searches can tell apart{codings.clause(best, next_, name(best), name(next_))}"
    )
    below = next((c for c in found[2:] if _below_for_sure(c.capacity, a)), None)
    return tie + (f". {_ahead(best, below, name)}" if below else "")


def _ahead(best: CellResult, other: CellResult, name) -> str:
    a, b = best.capacity, other.capacity
    times = f"{'at least ' if at_least(a) else ''}{a['rate'] / b['rate']:.1f} times as many as"
    return (
        f"At {objective(a)}, {name(best)} carries {shown_rate(best)} requests per second, "
        f"{times} {name(other)} ({rate(b['rate'])}){codings.clause(best, other, name(best), name(other))}"
    )


def standings(runs: Sequence[RunResults]) -> List[Standing]:
    """Each group of capacity cells ranked (see Standing)."""
    several = len(runs) > 1
    out = []
    for group in groups(cells(runs)):
        contenders = [c for c in group.cells if c.server != Reference.name]
        found = sorted(
            (c for c in contenders if c.finished and c.capacity["rate"] is not None),
            key=lambda c: -c.capacity["rate"],
        )
        places: List[Tuple[str, CellResult]] = []
        for n, cell in enumerate(found, 1):
            if places and not _below_for_sure(cell.capacity, places[-1][1].capacity):
                places.append(("=" + places[-1][0].lstrip("="), cell))
                places[-2] = ("=" + places[-2][0].lstrip("="), places[-2][1])
            else:
                places.append((str(n), cell))
        ceiling = next((c for c in group.cells if c.server == Reference.name), None)
        sentence = _sentence(found, several) if len(found) > 1 else None
        out.append(Standing(group.name, places, [c for c in contenders if c not in found], ceiling, sentence))
    return out


def rankings(runs: Sequence[RunResults]) -> List[dict]:
    """Per group of capacity cells, its table (rank, cell, capacity, share of the best), the pair
    that matters in a sentence, and each cell's verdict: what the report's summary opens with."""
    several = len(runs) > 1
    return [
        {
            "group": s.group,
            "rows": [
                [s.rank(c), c.series + (f" (run {c.run_id})" if several else ""), shown_rate(c), s.share(c), s.flags(c)]
                for c in s.cells
            ],
            "sentence": s.sentence,
            "verdicts": [f"{c.series}: {verdict(c)}" for c in s.cells],
        }
        for s in standings(runs)
    ]


def markdown(runs: Sequence[RunResults]) -> List[str]:
    """Per group of capacity cells, a Markdown table of them ranked, with their verdicts."""
    lines: List[str] = []
    for s in standings(runs):
        lines += [f"### Capacity, {s.group}", "", "| rank | cell | capacity (req/s) | of the best | verdict |"]
        lines.append("| :--- | :--- | ---: | ---: | :--- |")
        lines += [f"| {s.rank(c)} | `{c.series}` | {shown_rate(c)} | {s.share(c)} | {verdict(c)} |" for c in s.cells]
        lines += ["", s.sentence, ""] if s.sentence else [""]
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
