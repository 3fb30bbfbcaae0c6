"""A stored run read back as results: per cell, per level, the statistics of its rounds, latency
merged from their histograms, the server's CPU and memory, errors and honesty flags.

Everything that shows a run (the terminal summary, the HTML report, exports, comparisons) reads
these; none of them re-runs anything or looks into raw measurements itself.
"""

from __future__ import annotations

import functools
import statistics
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Collection, Dict, List, Optional, Sequence, Tuple

from httpbench import engine
from httpbench.honesty import CELL_STOPPERS, NOISY_CV
from httpbench.stats import LevelStats

# A requests budget shared by every cell of a group makes "total time" a measured wall time (as in
# the 2016 and 2011 write-ups); with a duration budget every cell runs equally long (and cells
# under different budgets serve different requests), so the time to serve this many requests at
# each level is derived from the throughput instead, and the ratios between servers are the same.
SAME_REQUESTS = 100_000


@dataclass(frozen=True)
class Latency:
    """Total latency of a level in microseconds. `exact`: added from the rounds' HdrHistograms
    (all None when they hold no request: every one failed); otherwise the median of the rounds'
    own percentiles (ab, wrk and h2load give no histogram)."""

    p50_us: Optional[float]
    p90_us: Optional[float]
    p99_us: Optional[float]
    p99_9_us: Optional[float]
    mean_us: Optional[float]
    max_us: Optional[float]
    exact: bool
    summaries: tuple = ()  # the rounds' summaries with histograms, for the percentile spectrum


@dataclass(frozen=True)
class LevelResult:
    level: int
    rps_values: tuple  # requests/s of each round
    rps: LevelStats  # their statistics
    latency: Latency
    completed: int
    errors: int
    errors_by_class: Dict[str, int]
    non_2xx: int
    duration_s: float  # measured seconds, all rounds
    server_cpu_user: Optional[float]  # cores, mean over the rounds
    server_cpu_sys: Optional[float]
    server_memory_bytes: Optional[int]  # PSS peak (RSS where PSS is unreadable), highest round
    client_busy: Optional[float]  # busiest client thread, highest round
    flags: Dict[str, str]  # kind -> reason, any round's, plus noisy across rounds
    timeseries: List[dict]  # per second, rounds one after another: second, round, requests/s, errors/s


@dataclass(frozen=True)
class CellResult:
    run_id: int
    key: str
    server: str
    profile: str
    workload: str
    keep_alive: bool
    cpus: int
    budget: str  # "" for the plan's one budget, "n100" when the plan sweeps several
    requests_budget: Optional[int]
    status: str
    error: Optional[str]
    seconds: Optional[float]  # wall time of the whole cell: start, verify, warm-up, levels, stop
    server_version: str
    config_text: str
    levels: List[LevelResult]
    sessions: int = 1  # how many times it was started: more than 1 when resumed

    @property
    def series(self) -> str:
        """What a line on a chart is: one server in one profile."""
        return f"{self.server}/{self.profile}"

    @property
    def group(self) -> str:
        """Cells in one group differ only by server and profile, so they can be compared."""
        parts = [self.workload, "keep-alive" if self.keep_alive else "no keep-alive", f"{self.cpus} CPU"]
        return ", ".join(parts + ([self.budget] if self.budget else []))

    @property
    def level_numbers(self) -> Tuple[int, ...]:
        return tuple(lv.level for lv in self.levels)

    @property
    def finished(self) -> bool:
        """Whether every level was measured whole on a server alive to the end: a cell that
        failed (its server died, or a load ended early), was interrupted or stopped is shown,
        never ranked; so is one marked done that still holds a level that stopped it (a resume
        measures such a level again, but an older httpbench kept it)."""
        return self.status == "done" and not self.stopped_by

    @property
    def stopped_by(self) -> List[str]:
        """What stopped the cell in a level still stored: "its server died during level 1"."""
        levels = {kind: tuple(lv.level for lv in self.levels if kind in lv.flags) for kind in CELL_STOPPERS}
        return [f"{CELL_STOPPERS[kind]} {levels_text(at)}" for kind, at in levels.items() if at]


@dataclass(frozen=True)
class Figures:
    """A cell's figures of merit over some of its levels: the ones every cell of its group
    measured, so that cells are compared on the same levels."""

    levels: Tuple[LevelResult, ...]
    requests_budget: Optional[int]  # the requests every round of the group served, if it was the same for all

    @property
    def mean_rps(self) -> Optional[float]:
        """The mean of the level means (the 2011 write-up's average): every level weighs the same,
        however many rounds it took."""
        return statistics.fmean(lv.rps.mean for lv in self.levels) if self.levels else None

    @property
    def min_rps(self) -> Optional[float]:
        """The slowest round."""
        return min(lv.rps.min for lv in self.levels) if self.levels else None

    @property
    def max_rps(self) -> Optional[float]:
        return max(lv.rps.max for lv in self.levels) if self.levels else None

    @property
    def noise(self) -> Optional[float]:
        """How much a level's rounds differ: their coefficient of variation, averaged over the
        levels that had two or more. The spread between levels is the load's doing, not noise."""
        repeated = [lv.rps.cv for lv in self.levels if lv.rps.n > 1]
        return statistics.fmean(repeated) if repeated else None

    @property
    def time_for_same_requests(self) -> Optional[float]:
        """Seconds to serve the same requests at every level: with the group's one requests budget
        the measured time of a round (as the 2016 and 2011 write-ups report; per round, since a
        level that took more rounds did not serve its requests more slowly), otherwise
        SAME_REQUESTS per level at the measured rate."""
        if not self.levels or any(lv.rps.mean <= 0 for lv in self.levels):
            return None
        if self.requests_budget:
            return sum(lv.duration_s / lv.rps.n for lv in self.levels)
        return sum(SAME_REQUESTS / lv.rps.mean for lv in self.levels)

    @property
    def end_memory_bytes(self) -> Optional[int]:
        """The server's memory at the end of the test (the 2016 write-up's chart): at the highest of
        these levels."""
        return self.levels[-1].server_memory_bytes if self.levels else None

    @property
    def flagged(self) -> Dict[str, List[LevelResult]]:
        """Each honesty flag raised at these levels, with the levels that raised it."""
        out: Dict[str, List[LevelResult]] = {}
        for lv in self.levels:
            for kind in sorted(lv.flags):
                out.setdefault(kind, []).append(lv)
        return out


@dataclass(frozen=True)
class Group:
    """Cells that differ only by server and profile (and run), in the order they were measured.
    Only finished cells are ranked, on the levels every one of them measured: a cell that failed
    partway (its server died) is no result, and a cell of another run lacking some levels would
    otherwise be averaged over other levels than the rest, and its total time summed over fewer,
    making it look faster than it was."""

    name: str
    cells: Tuple[CellResult, ...]

    # Cached: every chart, table and sentence asks again, and the cells never change.
    @functools.cached_property
    def levels(self) -> Tuple[int, ...]:
        """The levels every finished cell measured (every cell, if none finished): the ones they
        are compared on."""
        compared = [c for c in self.cells if c.finished] or self.cells
        return tuple(sorted(set.intersection(*(set(c.level_numbers) for c in compared))))

    @functools.cached_property
    def every_level(self) -> Tuple[int, ...]:
        return tuple(sorted({n for c in self.cells for n in c.level_numbers}))

    @functools.cached_property
    def requests_budget(self) -> Optional[int]:
        """The requests budget every cell had; None when one ran for a duration or they differ
        (cells of runs under different plans), as their measured times then serve different requests."""
        budgets = {c.requests_budget for c in self.cells}
        return budgets.pop() if len(budgets) == 1 else None

    def figures(self, cell: CellResult, levels: Optional[Collection[int]] = None) -> Figures:
        """`cell`'s figures over those of `levels` (default: the compared ones) it measured."""
        levels = self.levels if levels is None else levels
        return Figures(tuple(lv for lv in cell.levels if lv.level in levels), self.requests_budget)

    def ranked(self) -> List[CellResult]:
        """Its finished cells with a throughput on the common levels, fastest first."""
        return sorted(
            (c for c in self.cells if c.finished and self.figures(c).mean_rps), key=lambda c: -self.figures(c).mean_rps
        )

    def incomplete(self, cell: CellResult) -> Optional[str]:
        """How `cell` did not finish, or lacks levels that others of its group measured; None if
        neither."""
        measured = f"measured {levels_text(cell.level_numbers)} of {levels_text(self.every_level)}"
        if cell.status == "done" and cell.stopped_by:
            return f"{' and '.join(cell.stopped_by)} ({measured}), so it is not ranked"
        if not cell.finished:
            ended = {"interrupted": "was interrupted", "stopped": "was stopped", "running": "has not finished"}
            return f"its cell {ended.get(cell.status, cell.status)} ({measured}), so it is not ranked"
        if cell.level_numbers == self.every_level:
            return None
        if not self.levels:
            return f"{measured}; its group's cells share no level, so they are not compared"
        return f"{measured}; its group is compared on {levels_text(self.levels)}"

    def flags(self, cell: CellResult, levels: Optional[Collection[int]] = None) -> Dict[str, str]:
        """What to read with care in `cell`'s figures: kind -> the reason at each of `levels`
        (default: the compared ones) that raised it, and `incomplete` when it lacks levels."""
        out = {
            kind: "; ".join(f"level {lv.level}: {lv.flags[kind]}" for lv in flagged)
            for kind, flagged in self.figures(cell, levels).flagged.items()
        }
        why = self.incomplete(cell)
        if why:
            out["incomplete"] = why
        return out


def levels_text(levels: Sequence[int]) -> str:
    """(1,) -> "level 1", (1, 20) -> "levels 1, 20"."""
    return f"level{'s' if len(levels) != 1 else ''} {', '.join(map(str, levels))}"


@dataclass
class RunResults:
    id: int
    plan_name: str
    plan_text: str
    status: str
    started: object
    ended: object
    host: dict
    versions: dict
    baseline: Optional[str]
    client: str
    cells: List[CellResult] = field(default_factory=list)

    @property
    def measured(self) -> List[CellResult]:
        return [c for c in self.cells if c.levels]

    @property
    def failed(self) -> List[CellResult]:
        return [c for c in self.cells if c.status == "failed"]

    @property
    def unfinished(self) -> List[CellResult]:
        """The cells that did not finish (CellResult.finished): the run is no whole result
        until a resume measures them."""
        return [c for c in self.cells if not c.finished]


def _level(number: int, measurements: Sequence[dict]) -> LevelResult:
    values = [m["requests"]["per_second"] or 0.0 for m in measurements]
    stats = LevelStats.of(values)
    flags: Dict[str, str] = {}
    for m in measurements:
        for f in m["flags"]:
            flags.setdefault(f["kind"], f["reason"])
    if stats.n > 1 and stats.cv > NOISY_CV:
        flags["noisy"] = (
            f"rounds vary by {stats.cv:.1%} (coefficient of variation > {NOISY_CV:.0%}): "
            f"{stats.min:,.0f} to {stats.max:,.0f} req/s"
        )
    errors_by_class: Dict[str, int] = defaultdict(int)
    for m in measurements:
        for kind, count in (m["errors"] or {}).items():
            errors_by_class[kind] += count or 0
    servers = [m["server"] for m in measurements if m["server"]]
    memory = [s["pss_peak_bytes"] or s["rss_peak_bytes"] for s in servers]
    busy = [m["client"]["busy_share"] for m in measurements]
    series, offset = [], 0
    for index, m in enumerate(measurements):
        points = m["timeseries"] or []
        duration = m["duration_s"] or len(points)
        for p in points:
            # The last second of a round is usually partial: counts become rates over its length.
            span = min(1.0, max(duration - p["second"], 1e-3))
            series.append(
                {
                    "second": offset + p["second"],
                    "round": index,
                    "requests": p["requests"] / span,
                    "errors": p["errors"] / span,
                }
            )
        offset += len(points)
    return LevelResult(
        level=number,
        rps_values=tuple(values),
        rps=stats,
        latency=_latency(measurements),
        completed=sum(m["requests"]["completed"] or 0 for m in measurements),
        errors=sum(m["errors_total"] or 0 for m in measurements),
        errors_by_class={k: v for k, v in errors_by_class.items() if v},
        non_2xx=sum(v or 0 for m in measurements for k, v in m["status"].items() if k != "2xx"),
        # A client tool's wall time where it measured no duration.
        duration_s=sum(m["duration_s"] or m["client"].get("wall_s") or 0 for m in measurements),
        server_cpu_user=_mean([s["cpu_user_cores"] for s in servers]),
        server_cpu_sys=_mean([s["cpu_sys_cores"] for s in servers]),
        server_memory_bytes=max((v for v in memory if v), default=None),
        client_busy=max((b for b in busy if b is not None), default=None),
        flags=flags,
        timeseries=series,
    )


def _mean(values: Sequence[Optional[float]]) -> Optional[float]:
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if known else None


def _latency(measurements: Sequence[dict]) -> Latency:
    summaries = [m["latency"]["total"] for m in measurements]
    if summaries and all(s["hdr"] for s in summaries):
        merged = engine.merge_latency(summaries)
        if not merged["count"]:
            # Every request failed: the histograms' zeros are no latency, and there is no spectrum.
            return Latency(None, None, None, None, None, None, exact=True)
        return Latency(
            merged["p50_us"],
            merged["p90_us"],
            merged["p99_us"],
            merged["p99_9_us"],
            merged["mean_us"],
            merged["max_us"],
            exact=True,
            summaries=tuple(summaries),
        )

    def median(key):
        known = sorted(s[key] for s in summaries if s[key] is not None)
        return known[len(known) // 2] if known else None

    return Latency(
        median("p50_us"),
        median("p90_us"),
        median("p99_us"),
        median("p99_9_us"),
        median("mean_us"),
        median("max_us"),
        exact=False,
    )


def of_run(run: dict) -> RunResults:
    """Results of a run as `Store.run` returns it."""
    from httpbench import plan as plans

    try:
        plan = plans.parse(run["plan_text"], f"run {run['id']}")
        baseline, client, budget = plan.baseline, plan.client, plan.budget.requests
    except plans.PlanError:
        # A plan this httpbench no longer accepts still has results worth showing.
        baseline, client, budget = None, "engine", None
    results = RunResults(
        id=run["id"],
        plan_name=run["plan_name"],
        plan_text=run["plan_text"],
        status=run["status"],
        started=run["started"],
        ended=run["ended"],
        host=run["host"] or {},
        versions=run["versions"] or {},
        baseline=baseline,
        client=client,
    )
    for cell in run["cells"]:
        by_level: Dict[int, List[dict]] = defaultdict(list)
        for r in cell["rounds"]:
            by_level[r["level"]].append(r["measurement"])
        # A cell of a plan sweeping several budgets has its own; the others have the plan's one.
        own = (
            plans.Budget(cell["budget_requests"], cell["budget_seconds"])
            if cell["budget_requests"] is not None or cell["budget_seconds"] is not None
            else None
        )
        results.cells.append(
            CellResult(
                run_id=run["id"],
                key=cell["key"],
                server=cell["server"],
                profile=cell["profile"],
                workload=cell["workload"],
                keep_alive=cell["keep_alive"],
                cpus=cell["cpus"],
                budget=own.label if own else "",
                requests_budget=own.requests if own else budget,
                status=cell["status"],
                error=cell["error"],
                seconds=cell["seconds"],
                server_version=cell["server_version"] or "",
                config_text=cell["config_text"] or "",
                levels=[_level(n, ms) for n, ms in sorted(by_level.items())],
                sessions=cell["sessions"] or 1,
            )
        )
    return results


def groups(cells: Sequence[CellResult]) -> List[Group]:
    """Cells by group, groups and cells in the order they were measured."""
    members: Dict[str, List[CellResult]] = {}
    for cell in cells:
        members.setdefault(cell.group, []).append(cell)
    return [Group(name, tuple(group)) for name, group in members.items()]


def load(store, run_id: int) -> RunResults:
    return of_run(store.run(run_id))
