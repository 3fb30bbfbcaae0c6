"""Every chart of a report, as Altair specs: the same spec becomes an interactive chart in the
HTML page and a PNG or SVG file.

Honesty rules kept here for every chart: a quantity axis (requests/s, latency, CPU, memory,
time, rating) always starts at 0 (`quantity`), a level flagged as measuring the client or the
noise is drawn with a red ring and says why on hover, and clicking a legend entry hides or shows
that series.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence

import altair as alt

from httpbench import engine
from httpbench.results import SAME_REQUESTS, CellResult, LevelResult, RunResults, groups

WIDTH, HEIGHT = 380, 240
WIDE = 760
MIB = 2 ** 20
FLAG_COLOR = "#d62728"
# Percentile spectrum ticks: x = 1 / (1 - p), so 50% -> 2, 99.999% -> 100,000 (HdrHistogram's plot).
SPECTRUM_TICKS = [2, 10, 100, 1000, 10000, 100000]


@dataclass(frozen=True)
class Choices:
    """What a reader picks: the baseline of the ratings (a server, or server/profile) and the
    level whose latency spectrum and timeline are drawn (None: each series' highest)."""

    baseline: Optional[str] = None
    level: Optional[int] = None


@dataclass(frozen=True)
class Chart:
    name: str        # file name of its PNG/SVG and anchor in the page
    title: str
    spec: alt.TopLevelMixin
    note: str = ""   # one sentence under the chart: how to read it


class Measured:
    """The runs being reported, flattened into the rows charts are drawn from."""

    def __init__(self, runs: Sequence[RunResults], choices: Choices) -> None:
        self.runs = list(runs)
        self.choices = choices
        self.cells: List[CellResult] = [c for r in self.runs for c in r.measured]
        several = len(self.runs) > 1
        self.label: Dict[int, str] = {id(c): c.series + (f" (run {c.run_id})" if several else "") for c in self.cells}
        self.series = list(dict.fromkeys(self.label[id(c)] for c in self.cells))

    def series_of(self, cell: CellResult) -> str:
        return self.label[id(cell)]

    def color(self) -> alt.Color:
        # Ten colours repeat beyond ten series; twenty keep every server apart.
        scheme = "tableau10" if len(self.series) <= 10 else "tableau20"
        return alt.Color("series:N", title="server/profile", scale=alt.Scale(domain=self.series, scheme=scheme),
                                          legend=alt.Legend(orient="bottom", columns=4, symbolOpacity=1))

    def level_rows(self) -> List[dict]:
        rows = []
        for cell in self.cells:
            for lv in cell.levels:
                rows.append({
                    "series": self.series_of(cell), "cpus": f"{cell.cpus} CPU", "context": _context(cell),
                    "level": lv.level, "rps": lv.rps.mean, "rps_min": lv.rps.min, "rps_max": lv.rps.max,
                    "rounds": lv.rps.n, "p50_ms": _ms(lv.latency.p50_us), "p99_ms": _ms(lv.latency.p99_us),
                    "cpu_user": lv.server_cpu_user, "cpu_sys": lv.server_cpu_sys,
                    "memory_mib": lv.server_memory_bytes / MIB if lv.server_memory_bytes else None,
                    "errors": lv.errors, "flagged": bool(lv.flags), "flags": _flag_text(lv)})
        return rows

    def baseline_of(self, group: List[CellResult]) -> Optional[CellResult]:
        """The group's cell the ratings are relative to: the chosen one, the plan's, or the first."""
        wanted = self.choices.baseline or next((r.baseline for r in self.runs if r.baseline), None)
        if wanted:
            for cell in group:
                if wanted in (cell.server, cell.series, self.series_of(cell)):
                    return cell
            return None
        return group[0] if group else None

    def chosen_level(self, cell: CellResult) -> Optional[LevelResult]:
        if self.choices.level is None:
            return cell.levels[-1] if cell.levels else None
        return next((lv for lv in cell.levels if lv.level == self.choices.level), None)


def _context(cell: CellResult) -> str:
    """A cell's group without its CPU count: panels are per CPU count within it."""
    parts = [cell.workload, "keep-alive" if cell.keep_alive else "no keep-alive"]
    return ", ".join(parts + ([cell.budget] if cell.budget else []))


def _ms(us: Optional[float]) -> Optional[float]:
    return None if us is None else us / 1000


def _flag_text(lv: LevelResult) -> str:
    return "; ".join(f"{kind}: {reason}" for kind, reason in sorted(lv.flags.items()))


def _width(rows: List[dict], panel_field: str) -> int:
    """A chart with one panel gets the page's width; several share it."""
    return WIDE if len({r[panel_field] for r in rows}) <= 1 else WIDTH


def quantity(field: str, title: str, **kwargs) -> alt.Y:
    """The y encoding of a quantity: its axis starts at 0, always (readers' first complaint)."""
    return alt.Y(field, title=title, scale=alt.Scale(zero=True), **kwargs)


def _legend_toggle():
    return alt.selection_point(fields=["series"], bind="legend", name="shown")


def _faded(selection) -> alt.OpacityValue:
    return alt.condition(selection, alt.value(1.0), alt.value(0.08))


def _flag_marks(base: alt.Chart, y_field: str) -> alt.Chart:
    """A red ring on every flagged level, with its reasons on hover."""
    return base.transform_filter("datum.flagged").mark_point(
        shape="circle", size=140, filled=False, strokeWidth=2).encode(
        y=alt.Y(y_field), color=alt.value(FLAG_COLOR), tooltip=[alt.Tooltip("series:N"), alt.Tooltip("level:Q", title="connections"),
                                   alt.Tooltip("flags:N", title="flagged")])


def _per_level(m: Measured, rows: List[dict], y_field: str, y_title: str, band: Optional[tuple] = None,
               dash: Optional[str] = None, extra_tooltip: Sequence[alt.Tooltip] = ()) -> alt.FacetChart:
    """Lines against concurrency, a panel per CPU count (000) and per workload / keep-alive."""
    shown = _legend_toggle()
    base = alt.Chart().encode(x=alt.X("level:Q", title="concurrent connections", scale=alt.Scale(zero=True)),
                              color=m.color())
    tooltip = [alt.Tooltip("series:N"), alt.Tooltip("level:Q", title="connections"),
               alt.Tooltip(f"{y_field}:Q", title=y_title, format=",.2f"), *extra_tooltip]
    encoding = dict(y=quantity(f"{y_field}:Q", y_title), opacity=_faded(shown), tooltip=tooltip)
    if dash:
        encoding["strokeDash"] = alt.StrokeDash(f"{dash}:N", title=None)
    layers = []
    if band:
        layers.append(base.mark_area(opacity=0.18).encode(
            y=alt.Y(f"{band[0]}:Q"), y2=alt.Y2(f"{band[1]}:Q"), opacity=alt.value(0.18)))
    layers.append(base.mark_line(point=True).encode(**encoding).add_params(shown))
    layers.append(_flag_marks(base, f"{y_field}:Q"))
    return alt.layer(*layers, data=alt.Data(values=rows)).properties(width=_width(rows, "cpus"), height=HEIGHT).facet(
        column=alt.Column("cpus:N", title=None), row=alt.Row("context:N", title=None))


def throughput(m: Measured) -> Chart:
    spec = _per_level(m, m.level_rows(), "rps", "requests/s", band=("rps_min", "rps_max"),
                      extra_tooltip=[alt.Tooltip("rps_min:Q", title="min of rounds", format=",.0f"),
                                     alt.Tooltip("rps_max:Q", title="max of rounds", format=",.0f"),
                                     alt.Tooltip("rounds:Q"), alt.Tooltip("errors:Q")])
    return Chart("throughput", "Requests per second against concurrency", spec,
                 "Mean of the rounds; the shaded band runs from the slowest to the fastest round.")


def _melt(rows: List[dict], fields: Dict[str, str], value: str, kind: str) -> List[dict]:
    """Long form: one row per (row, field), for a line per field."""
    return [{**row, value: row[f], kind: name} for row in rows for f, name in fields.items() if row[f] is not None]


def latency(m: Measured) -> Chart:
    rows = _melt(m.level_rows(), {"p50_ms": "p50", "p99_ms": "p99"}, "ms", "percentile")
    exact = all(lv.latency.exact for c in m.cells for lv in c.levels)
    return Chart("latency", "Latency (p50 and p99) against concurrency",
                 _per_level(m, rows, "ms", "latency (ms)", dash="percentile"),
                 "Percentiles of all rounds' histograms added together." if exact else
                 "Where the client gives no histogram (ab, wrk, h2load), the median of its rounds' percentiles.")


def server_cpu(m: Measured) -> Chart:
    rows = _melt(m.level_rows(), {"cpu_user": "user", "cpu_sys": "system"}, "cores", "cpu")
    return Chart("server_cpu", "Server CPU (user and system) against concurrency",
                 _per_level(m, rows, "cores", "server CPU (cores)", dash="cpu"),
                 "CPU time of the server's processes over each round, in cores (1 = one core busy).")


def server_memory(m: Measured) -> Chart:
    rows = [r for r in m.level_rows() if r["memory_mib"] is not None]
    return Chart("server_memory", "Server memory against concurrency",
                 _per_level(m, rows, "memory_mib", "server memory (MiB, PSS)"),
                 "Peak proportional set size of the server's processes during the level (RSS where PSS cannot be read).")


def _bars(m: Measured, rows: List[dict], y_field: str, y_title: str, extra: Sequence[alt.Chart] = (),
          tooltip: Sequence[alt.Tooltip] = ()) -> alt.FacetChart:
    """A bar per series, a panel per group (workload, keep-alive, CPUs)."""
    shown = _legend_toggle()
    base = alt.Chart().encode(x=alt.X("series:N", title=None, sort=m.series, axis=alt.Axis(labelAngle=-30)))
    bars = base.mark_bar().encode(
        y=quantity(f"{y_field}:Q", y_title), color=m.color(), opacity=_faded(shown),
        tooltip=[alt.Tooltip("series:N"), alt.Tooltip(f"{y_field}:Q", title=y_title, format=",.2f"), *tooltip]
    ).add_params(shown)
    return alt.layer(bars, *[layer(base) for layer in extra], data=alt.Data(values=rows)).properties(
        width=max(WIDTH // 2, 42 * len(m.series)), height=HEIGHT).facet(
        column=alt.Column("group:N", title=None)).resolve_scale(y="independent")


def _cell_row(m: Measured, cell: CellResult) -> dict:
    stats = cell.rps_stats
    return {"series": m.series_of(cell), "group": cell.group, "mean": stats.mean, "min": stats.min, "max": stats.max,
            "flags": ", ".join(cell.flag_kinds)}


def rps_bars(m: Measured) -> Chart:
    rows = [_cell_row(m, c) for c in m.cells]
    whiskers = (lambda base: base.mark_rule(color="black").encode(y="min:Q", y2="max:Q"),
                lambda base: base.mark_tick(color="black", thickness=2).encode(y="min:Q"),
                lambda base: base.mark_tick(color="black", thickness=2).encode(y="max:Q"))
    spec = _bars(m, rows, "mean", "requests/s", extra=whiskers,
                 tooltip=[alt.Tooltip("min:Q", format=",.0f"), alt.Tooltip("max:Q", format=",.0f"),
                          alt.Tooltip("flags:N", title="flagged levels")])
    return Chart("rps_bars", "Minimum, mean and maximum requests per second", spec,
                 "Over every level and round of each cell, as 002 charted them; whiskers run from min to max.")


def total_time(m: Measured) -> Chart:
    rows = [{**_cell_row(m, c), "seconds": c.time_for_same_requests} for c in m.cells
            if c.time_for_same_requests is not None]
    measured = all(c.requests_budget for c in m.cells)
    note = ("Wall time of every round of each cell (the same requests for every server)." if measured else
            f"Rounds ran for a fixed time, so this is the time to serve {SAME_REQUESTS:,} requests at each level "
            "at the measured rates: ratios compare like 000's and 002's total times.")
    return Chart("total_time", "Total time to serve the same requests", _bars(m, rows, "seconds", "seconds"), note)


def end_memory(m: Measured) -> Chart:
    rows = [{**_cell_row(m, c), "mib": c.end_memory_bytes / MIB} for c in m.cells if c.end_memory_bytes]
    return Chart("end_memory", "Server memory at the end of each test", _bars(m, rows, "mib", "MiB (PSS)"),
                 "The server's peak PSS during its last level; each cell starts a fresh server, so nothing carries over.")


def ratings(m: Measured) -> List[dict]:
    """003's rating table: each cell's mean requests/s with the baseline's in its group = 100."""
    rows = []
    for group, cells in groups(m.cells).items():
        base = m.baseline_of(cells)
        if base is None or not base.mean_rps:
            continue
        for cell in cells:
            rows.append({"series": m.series_of(cell), "group": group, "keep_alive": cell.keep_alive,
                         "context": group.replace(", no keep-alive", "").replace(", keep-alive", ""),
                         "rating": 100 * cell.mean_rps / base.mean_rps, "mean": cell.mean_rps,
                         "baseline": m.series_of(base)})
    return rows


def rating(m: Measured) -> Chart:
    rows = [{**r, "keep-alive": "keep-alive on" if r["keep_alive"] else "keep-alive off"} for r in ratings(m)]
    shown = _legend_toggle()
    base = alt.Chart().encode(x=alt.X("series:N", title=None, sort=m.series, axis=alt.Axis(labelAngle=-30)))
    bars = base.mark_bar().encode(
        y=quantity("rating:Q", "rating (baseline = 100)"), color=m.color(), opacity=_faded(shown),
        tooltip=[alt.Tooltip("series:N"), alt.Tooltip("rating:Q", format=".0f"),
                 alt.Tooltip("mean:Q", title="requests/s", format=",.0f"), alt.Tooltip("baseline:N")]).add_params(shown)
    hundred = alt.Chart().mark_rule(strokeDash=[4, 3], color="gray").encode(y=alt.datum(100))
    spec = alt.layer(bars, hundred, data=alt.Data(values=rows)).properties(
        width=max(WIDTH // 2, 42 * len(m.series)), height=HEIGHT).facet(
        column=alt.Column("keep-alive:N", title=None), row=alt.Row("context:N", title=None))
    return Chart("rating", "Rating: the baseline = 100, keep-alive on and off side by side", spec,
                 "Mean requests/s over all levels relative to the baseline's in the same workload and CPU count (003).")


def differences(m: Measured) -> Chart:
    """004's table as a chart: each series' percentage over the baseline at every level."""
    rows = []
    for group, cells in groups(m.cells).items():
        base = m.baseline_of(cells)
        if base is None:
            continue
        by_level = {lv.level: lv.rps.mean for lv in base.levels}
        for cell in cells:
            if cell is base:
                continue
            for lv in cell.levels:
                if by_level.get(lv.level):
                    rows.append({"series": m.series_of(cell), "group": group, "level": str(lv.level),
                                 "percent": 100 * (lv.rps.mean / by_level[lv.level] - 1),
                                 "baseline": m.series_of(base), "flagged": bool(lv.flags), "flags": _flag_text(lv)})
    shown = _legend_toggle()
    spec = alt.Chart(alt.Data(values=rows)).mark_bar().encode(
        x=alt.X("level:O", title="concurrent connections", sort=None), xOffset=alt.XOffset("series:N", sort=m.series),
        y=quantity("percent:Q", "difference to the baseline (%)"), color=m.color(), opacity=_faded(shown),
        stroke=alt.condition("datum.flagged", alt.value(FLAG_COLOR), alt.value(None)),
        tooltip=[alt.Tooltip("series:N"), alt.Tooltip("level:N", title="connections"),
                 alt.Tooltip("percent:Q", format="+.1f"), alt.Tooltip("baseline:N"), alt.Tooltip("flags:N")]
    ).add_params(shown).properties(width=_width(rows, "group"), height=HEIGHT).facet(
        facet=alt.Facet("group:N", title=None), columns=2)
    return Chart("differences", "Difference to the baseline at each level", spec,
                 "Positive: faster than the baseline at that level and budget (004's percentages).")


def spectrum(m: Measured) -> Chart:
    rows = []
    for cell in m.cells:
        lv = m.chosen_level(cell)
        if lv is None or not lv.latency.exact:
            continue
        for percentile, us in engine.latency_spectrum(list(lv.latency.summaries)):
            if percentile < 100:
                rows.append({"series": m.series_of(cell), "context": f"{cell.group}, {lv.level} connections",
                             "x": 1 / (1 - percentile / 100), "percentile": percentile, "ms": us / 1000})
    shown = _legend_toggle()
    spec = alt.Chart(alt.Data(values=rows)).mark_line(interpolate="step-after", clip=True).encode(
        x=alt.X("x:Q", title="percentile", scale=alt.Scale(type="log", domain=[2, 100000]),
                axis=alt.Axis(values=SPECTRUM_TICKS, labelExpr="format(100 - 100 / datum.value, '.3~f') + '%'")),
        y=quantity("ms:Q", "latency (ms)"), color=m.color(), opacity=_faded(shown),
        tooltip=[alt.Tooltip("series:N"), alt.Tooltip("percentile:Q", format=".4~f"),
                 alt.Tooltip("ms:Q", title="latency (ms)", format=",.3f")]
    ).add_params(shown).properties(width=_width(rows, "context"), height=HEIGHT).facet(
        facet=alt.Facet("context:N", title=None), columns=2)
    level = m.choices.level
    return Chart("spectrum", "Latency percentile spectrum" + (f" at {level} connections" if level else ""), spec,
                 "All rounds' histograms added; the x axis stretches the tail: 90%, 99%, 99.9%... "
                 + ("" if level else "Each series at its highest level (choose one with --level)."))


def timeline(m: Measured) -> Chart:
    rows = []
    for cell in m.cells:
        lv = m.chosen_level(cell)
        if lv is None:
            continue
        context = f"{cell.group}, {lv.level} connections"
        rows += [{"series": m.series_of(cell), "context": context, "second": p["second"], "round": p["round"],
                  "metric": metric, "count": p[field]}
                 for p in lv.timeseries for field, metric in (("requests", "requests/s"), ("errors", "errors/s"))]
    shown = _legend_toggle()
    spec = alt.Chart(alt.Data(values=rows)).mark_line(point=True).encode(
        x=alt.X("second:Q", title="second of the level (its rounds one after another)", scale=alt.Scale(zero=True),
                axis=alt.Axis(tickMinStep=1, format="d")),
        y=quantity("count:Q", "per second"), color=m.color(), opacity=_faded(shown),
        tooltip=[alt.Tooltip("series:N"), alt.Tooltip("second:Q"), alt.Tooltip("round:Q"),
                 alt.Tooltip("metric:N"), alt.Tooltip("count:Q", format=",.0f")]
    ).add_params(shown).properties(width=_width(rows, "context"), height=HEIGHT // 2 + 40).facet(
        row=alt.Row("metric:N", title=None, sort=["requests/s", "errors/s"]),
        column=alt.Column("context:N", title=None)).resolve_scale(y="independent")
    level = m.choices.level
    return Chart("timeline", "Requests and errors per second" + (f" at {level} connections" if level else ""), spec,
                 "Each second of the chosen level as the engine recorded it; other clients give no timeline.")


BUILDERS: Sequence[Callable[[Measured], Chart]] = (
    throughput, latency, server_cpu, server_memory, rps_bars, total_time, end_memory, rating, differences,
    spectrum, timeline)


def all_charts(runs: Sequence[RunResults], choices: Choices = Choices()) -> List[Chart]:
    """Every chart the runs have data for (an engine-less run has no spectrum, one server no rating)."""
    m = Measured(runs, choices)
    charts = []
    for build in BUILDERS:
        chart = build(m)
        if _has_data(chart.spec):
            charts.append(chart)
    return charts


def _has_data(spec: alt.TopLevelMixin) -> bool:
    data = spec.to_dict().get("data") or {}
    return bool(data.get("values"))
