"""A stored run read back as results: per cell, per level, the statistics of its rounds, latency
merged from their histograms, the server's CPU and memory, errors and honesty flags.

Everything that shows a run (the terminal summary, the HTML report, exports, comparisons) reads
these; none of them re-runs anything or looks into raw measurements itself.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Dict, List, Optional, Sequence

from httpbench.judge import honesty
from httpbench.judge.stats import LevelStats
from httpbench.load import engine
from httpbench.load.fields import Status
from httpbench.load.report import Report
from httpbench.results import operations
from httpbench.results.model import CellResult, Latency, LevelResult, RunResults


def _level(number: int, measurements: Sequence[dict]) -> LevelResult:
    """A level from its rounds: its counts (LevelResult.report) and latency from the one report the
    engine merges them into, one after another; requests/s served, the server's windows, the
    client's busiest share, flags and the per-second series round by round."""
    parts = [_part(m) for m in measurements]
    merged = engine.merge_reports(None, parts, "sequential")
    values = [served_per_second(part) for part in parts]
    flags: Dict[str, str] = {}
    for m in measurements:
        for f in m["flags"]:
            flags.setdefault(f["kind"], f["reason"])
    noisy = honesty.noisy(values)
    if noisy:
        flags[noisy.kind] = noisy.reason
    servers = [m["server"] for m in measurements if m["server"]]
    busy = [m["client"]["busy_share"] for m in measurements]
    return LevelResult(
        level=number,
        rps_values=tuple(values),
        rps=LevelStats.of(values),
        latency=_latency(merged, measurements),
        report=merged,
        server_cpu_user=_mean([s["cpu_user_cores"] for s in servers]),
        server_cpu_sys=_mean([s["cpu_sys_cores"] for s in servers]),
        server_memory_bytes=peak_memory(servers, "pss_peak_bytes", "rss_peak_bytes"),
        client_busy=max((b for b in busy if b is not None), default=None),
        flags=flags,
        timeseries=_series(measurements),
        server_processes=max((s["processes_max"] for s in servers if s.get("processes_max")), default=None),
        server_threads=max((s["threads_peak"] for s in servers if s.get("threads_peak")), default=None),
        operations=tuple(cost for i, m in enumerate(measurements) for cost in operations.costs(m, i)),
        fine_series=tuple(operations.fine_series(measurements)),
        **_tls(merged, measurements),
        **_php(servers),
    )


def served_per_second(m: dict) -> float:
    """The figure a round is ranked, charted and compared on: its requests per second as its
    client measured them, times the share of its answers that succeeded (an expected status, as
    the engine reads the round: one stored before the field counts its 2xx answers). For the
    engine's rounds that is `requests.succeeded_per_second`; a tool's keeps the tool's own rate.
    A server answering 503 quickly serves nothing. Where the client could not tell which answers
    succeeded (wrk counts 2xx and 3xx together), its completed requests per second; its `errors`
    flag says what it did count."""
    rate, completed = m["requests"]["per_second"] or 0.0, m["requests"]["completed"] or 0
    succeeded = engine.goodput(m).succeeded
    if succeeded is None:
        return rate
    return rate * succeeded / completed if completed else 0.0


def _part(m: dict) -> dict:
    """A round as the engine's merge takes it. A client tool that measured no duration ran for its
    wall time; the status groups a tool names its own way (ab's `non_2xx`, wrk's `non_2xx_3xx`)
    are none of them 2xx, all a level tells of its responses, so they count as `other`."""
    own = sum(v or 0 for k, v in m["status"].items() if k not in Status.__annotations__)
    return {
        **m,
        "duration_s": m["duration_s"] or m["client"].get("wall_s"),
        "status": {**m["status"], "other": (m["status"]["other"] or 0) + own},
    }


def _series(measurements: Sequence[dict]) -> List[dict]:
    """Per second, the rounds one after another, each point with its round and as rates."""
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
    return series


def peak_memory(windows: Sequence[dict], pss: str, rss: str) -> Optional[int]:
    """The highest of the windows' peaks: PSS where every window has it, else RSS for all. A mix
    would let one round's RSS, which counts shared pages once per process (opcache, a prefork's
    interpreter), stand for the level."""
    key = pss if all(w.get(pss) is not None for w in windows) else rss
    return max((w.get(key) or 0 for w in windows), default=0) or None


def _php(servers: Sequence[dict]) -> dict:
    """A PHP-FPM pool's figures over a level's rounds (the LevelResult fields), from the monitor's
    windows; nothing where no window watched a pool."""
    pools = [s for s in servers if s.get("php_processes_max") is not None]
    if not pools:
        return {}
    return {
        # A peak, as the server's figure beside it is: the two are drawn on one chart.
        "php_memory_bytes": peak_memory(pools, "php_pss_peak_bytes", "php_rss_peak_bytes"),
        "php_cpu_cores": _mean([s["php_cpu_cores"] for s in pools]),
        "php_processes": max(s["php_processes_max"] for s in pools),
    }


def _tls(merged: Report, measurements: Sequence[dict]) -> dict:
    """A TLS level's handshakes' latency and the versions its rounds negotiated (the LevelResult
    fields); nothing for plain HTTP."""
    if merged["tls"] is None:
        return {}
    return {
        "handshake": _latency(merged, measurements, "tls_handshake"),
        "tls_versions": tuple(sorted({m["tls"]["version"] for m in measurements if m["tls"] and m["tls"]["version"]})),
    }


def _mean(values: Sequence[Optional[float]]) -> Optional[float]:
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if known else None


def _latency(merged: Report, measurements: Sequence[dict], kind: str = "total") -> Latency:
    """The level's latency `kind`: exact from the merged histograms, else (rounds of a client tool,
    which keeps none) the median of the rounds' own percentiles."""
    summary = merged["latency"][kind]
    if summary["hdr"]:
        if not summary["count"]:
            # Every request failed: the histograms' zeros are no latency, and there is no spectrum.
            return Latency(None, None, None, None, None, None, exact=True)
        return Latency(
            summary["p50_us"],
            summary["p90_us"],
            summary["p99_us"],
            summary["p99_9_us"],
            summary["mean_us"],
            summary["max_us"],
            exact=True,
            summaries=(summary,),
        )
    summaries = [m["latency"][kind] for m in measurements]

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
    from httpbench.plan import builtin as plans
    from httpbench.plan.model import Budget, PlanError

    try:
        plan = plans.parse(run["plan_text"], f"run {run['id']}")
        baseline, client, budget = plan.baseline, plan.client, plan.budget.requests
    except PlanError:
        # A plan this httpbench no longer accepts still has results worth showing.
        baseline, client, budget = None, "engine", None
    results = RunResults(
        id=run["id"],
        plan_name=run["plan_name"],
        plan_text=run["plan_text"],
        status=run["status"],
        started=run["started"],
        ended=run["ended"],
        host=run["host"],
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
            Budget(cell["budget_requests"], cell["budget_seconds"])
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
                protocol=cell["protocol"],
                tls_key=cell["tls_key"],
                tls_version=cell["tls_version"],
                resumption=cell["resumption"],
                streams=cell["streams"] or 1,
                capacity=cell["capacity"],
                encoding=cell.get("encoding"),
                idle=cell.get("idle_connections") or 0,
                slow=cell.get("slow_mode"),
                slow_clients=cell.get("slow_clients") or 0,
                events=cell.get("events") or "",
            )
        )
    return results


def load(store, run_id: int) -> RunResults:
    return of_run(store.run(run_id))
