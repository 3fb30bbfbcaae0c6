"""Every chart of a report, as Altair specs: the same spec becomes an interactive chart in the
HTML page and a PNG or SVG file.

Honesty rules kept here for every chart: a quantity axis (requests/s, latency, CPU, memory,
time, rating) always starts at 0 (`quantity`), a flagged level (the client set the pace, the
rounds disagree...) or a cell lacking levels is outlined in black wherever it is drawn (a ringed
dot, an outlined bar) and says why on hover, and clicking a legend entry hides that series,
every mark of it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence

import altair as alt
import vl_convert

from httpbench import engine
from httpbench.errors import Error
from httpbench.results import SAME_REQUESTS, CellResult, Figures, Group, LevelResult, RunResults, groups

WIDTH, HEIGHT = 380, 240
WIDE = 760
MIB = 2 ** 20
# Black is in no series palette (tableau10/20), so the outline shows on every series' colour,
# where a red one vanished on the red series.
FLAG_OUTLINE = "black"
# The legend selection: the series a reader clicked away. Vega-Lite keeps its tuples in a
# dataset named after it.
HIDDEN = "hidden"
# Percentile spectrum ticks: x = 1 / (1 - p), so 50% -> 2, 99.999% -> 100,000 (HdrHistogram's plot).
SPECTRUM_TICKS = [2, 10, 100, 1000, 10000, 100000]
# Fewer seconds of a level draw a dot or two, no course over time (the quick plan's levels are one
# round of 1 s): those are left out of the timeline, and it says so.
TIMELINE_SECONDS = 3


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
    note: str = ""      # one sentence under the chart: how to read it
    missing: str = ""   # with nothing to draw, why, where a reader would look for the chart

    @property
    def drawn(self) -> bool:
        return _has_data(self.spec)


class Measured:
    """The runs being reported, flattened into the rows charts are drawn from."""

    def __init__(self, runs: Sequence[RunResults], choices: Choices) -> None:
        self.runs = list(runs)
        self.choices = choices
        self.cells: List[CellResult] = [c for r in self.runs for c in r.measured]
        several = len(self.runs) > 1
        self.label: Dict[int, str] = {id(c): c.series + (f" (run {c.run_id})" if several else "") for c in self.cells}
        self.series = list(dict.fromkeys(self.label[id(c)] for c in self.cells))
        self.groups: List[Group] = groups(self.cells)
        self._check()

    def _check(self) -> None:
        """A baseline or level the runs do not have would silently drop charts: refuse it."""
        choices = self.choices
        runs = f"run{'s' if len(self.runs) > 1 else ''} {', '.join(str(r.id) for r in self.runs)}"
        if choices.baseline is not None and not any(choices.baseline in self._names(c) for c in self.cells):
            names = dict.fromkeys(name for c in self.cells for name in self._names(c))
            raise Error(f"--baseline {choices.baseline} is not a server of {runs}: "
                             f"choose one of {', '.join(names)}")
        if choices.level is not None and not any(choices.level in c.level_numbers for c in self.cells):
            levels = sorted({n for c in self.cells for n in c.level_numbers})
            raise Error(f"--level {choices.level} was not measured in {runs}: "
                             f"choose one of {', '.join(map(str, levels))}")

    def _names(self, cell: CellResult) -> tuple:
        """What a baseline may be given as: the server, server/profile, or the legend's label."""
        return tuple(dict.fromkeys((cell.server, cell.series, self.series_of(cell))))

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
                    "errors": lv.errors, **_flagged(lv.flags)})
        return rows

    @property
    def wanted_baseline(self) -> Optional[str]:
        """The baseline asked for: the chosen one, else the plan's."""
        return self.choices.baseline or next((r.baseline for r in self.runs if r.baseline), None)

    def baseline_of(self, group: Group) -> CellResult:
        """The group's cell the ratings are relative to: the wanted one, else the first (the
        wanted one measured nothing in this group, or none was asked for)."""
        wanted = self.wanted_baseline
        return next((cell for cell in group.cells if wanted and wanted in self._names(cell)), group.cells[0])

    def baseline_fallbacks(self) -> List[str]:
        """A sentence for each rated group the wanted baseline has no measured cell in, naming
        the cell that stands in for it, so a reader does not take one for the other."""
        wanted = self.wanted_baseline
        if not wanted:
            return []
        sentences = []
        for group in self.rated_groups:
            base = self.baseline_of(group)
            if wanted not in self._names(base):
                sentences.append(f"{wanted} has no measured cell in {group.name}, so that group's baseline is "
                                 f"its first cell, {self.series_of(base)}.")
        return sentences

    @property
    def baseline_label(self) -> str:
        """What ratings and differences are relative to, as their titles say it."""
        names = list(dict.fromkeys(self.series_of(self.baseline_of(group)) for group in self.rated_groups))
        return names[0] if len(names) == 1 else f"each group's baseline ({', '.join(names)})"

    @property
    def rated_groups(self) -> List[Group]:
        """The groups with something to rate: two cells or more (alone, a cell rates 100)."""
        return [group for group in self.groups if len(group.cells) > 1]

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


def _flagged(flags: Dict[str, str]) -> dict:
    """A row's flag fields: whether to mark it, and the reasons its tooltip gives."""
    return {"flagged": bool(flags), "flags": "; ".join(f"{kind}: {reason}" for kind, reason in sorted(flags.items()))}


def _width(rows: List[dict], panel_field: str) -> int:
    """A chart with one panel gets the page's width; several share it."""
    return WIDE if len({r[panel_field] for r in rows}) <= 1 else WIDTH


def quantity(field: str, title: str, **kwargs) -> alt.Y:
    """The y encoding of a quantity: its axis starts at 0, always (readers' first complaint)."""
    return alt.Y(field, title=title, scale=alt.Scale(zero=True), **kwargs)


def _legend_toggle():
    """The series hidden from a chart: clicking a legend entry hides that series, shift-click
    hides more, double-click shows them all again (an empty selection hides nothing)."""
    return alt.selection_point(fields=["series"], bind="legend", name=HIDDEN)


def _unless_hidden(hidden, opacity: float = 1.0) -> alt.OpacityValue:
    """Every mark of a series follows this, so a hidden series leaves nothing behind."""
    return alt.condition(hidden, alt.value(0.0), alt.value(opacity), empty=False)


def _outlined_if_flagged() -> dict:
    """The encoding of the flag's outline on a flagged row's bar or dot."""
    return dict(stroke=alt.condition("datum.flagged", alt.value(FLAG_OUTLINE), alt.value(None)),
                strokeWidth=alt.value(2))


def _dots(base: alt.Chart, y: str, hidden, tooltip: Sequence[alt.Tooltip]) -> alt.Chart:
    """A dot per row in its series' colour with the row's values on hover; a flagged row's dot
    is larger and ringed in black, with the reasons. Every row gets one, not the flagged ones
    only: a layer left without data gives its scales an empty extent, which Vega warns about."""
    return base.mark_point(filled=True).encode(
        y=alt.Y(y), opacity=_unless_hidden(hidden), size=alt.condition("datum.flagged", alt.value(130), alt.value(36)),
        tooltip=list(tooltip), **_outlined_if_flagged())


def _per_level(m: Measured, rows: List[dict], y_field: str, y_title: str, band: Optional[tuple] = None,
               dash: Optional[str] = None, extra_tooltip: Sequence[alt.Tooltip] = ()) -> alt.FacetChart:
    """Lines against concurrency, a panel per CPU count (000) and per workload / keep-alive."""
    hidden = _legend_toggle()
    base = alt.Chart().encode(x=alt.X("level:Q", title="concurrent connections", scale=alt.Scale(zero=True)),
                              color=m.color())
    tooltip = [alt.Tooltip("series:N"), alt.Tooltip("level:Q", title="connections"),
               alt.Tooltip(f"{y_field}:Q", title=y_title, format=",.2f"), *extra_tooltip,
               alt.Tooltip("flags:N", title="flagged")]
    line = dict(y=quantity(f"{y_field}:Q", y_title), opacity=_unless_hidden(hidden))
    if dash:
        line["strokeDash"] = alt.StrokeDash(f"{dash}:N", title=None)
    layers = []
    if band:
        layers.append(base.mark_area().encode(
            y=alt.Y(f"{band[0]}:Q"), y2=alt.Y2(f"{band[1]}:Q"), opacity=_unless_hidden(hidden, 0.18)))
    layers.append(base.mark_line().encode(**line).add_params(hidden))
    layers.append(_dots(base, f"{y_field}:Q", hidden, tooltip))
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


def _bars(m: Measured, rows: List[dict], y_field: str, y_title: str,
          extra: Sequence[Callable[[alt.Chart], alt.Chart]] = (), tooltip: Sequence[alt.Tooltip] = ()) -> alt.LayerChart:
    """A bar per series, outlined in black when flagged; `extra` layers are drawn from the same
    base, so they hide with their series."""
    hidden = _legend_toggle()
    base = alt.Chart().encode(x=alt.X("series:N", title=None, sort=m.series, axis=alt.Axis(labelAngle=-30)),
                              opacity=_unless_hidden(hidden))
    bars = base.mark_bar().encode(
        y=quantity(f"{y_field}:Q", y_title), color=m.color(), **_outlined_if_flagged(),
        tooltip=[alt.Tooltip("series:N"), alt.Tooltip(f"{y_field}:Q", title=y_title, format=",.2f"), *tooltip,
                 alt.Tooltip("flags:N", title="flagged")]
    ).add_params(hidden)
    return alt.layer(bars, *[layer(base) for layer in extra], data=alt.Data(values=rows)).properties(
        width=max(WIDTH // 2, 42 * len(m.series)), height=HEIGHT)


def _per_group(bars: alt.LayerChart) -> alt.FacetChart:
    """A panel per group (workload, keep-alive, CPUs), each on its own scale."""
    return bars.facet(column=alt.Column("group:N", title=None)).resolve_scale(y="independent")


def _cell_rows(m: Measured, values: Callable[[Figures], dict], at_end: bool = False) -> List[dict]:
    """A row per measured cell: `values` of its figures on the levels its group is compared on
    (cells with a None among them left out), flagged by those levels, or with `at_end` by the
    highest of them only (the level an end-of-test figure is of)."""
    rows = []
    for group in m.groups:
        for cell in group.cells:
            row = values(group.figures(cell))
            if None not in row.values():
                flags = group.flags(cell, group.levels[-1:] if at_end else group.levels)
                rows.append({"series": m.series_of(cell), "group": group.name, **row, **_flagged(flags)})
    return rows


def rps_bars(m: Measured) -> Chart:
    rows = _cell_rows(m, lambda f: {"mean": f.mean_rps, "min": f.min_rps, "max": f.max_rps})
    whiskers = (lambda base: base.mark_rule(color="black").encode(y="min:Q", y2="max:Q"),
                lambda base: base.mark_tick(color="black", thickness=2).encode(y="min:Q"),
                lambda base: base.mark_tick(color="black", thickness=2).encode(y="max:Q"))
    spec = _per_group(_bars(m, rows, "mean", "requests/s", extra=whiskers,
                            tooltip=[alt.Tooltip("min:Q", format=",.0f"), alt.Tooltip("max:Q", format=",.0f")]))
    return Chart("rps_bars", "Minimum, mean and maximum requests per second", spec,
                 "The bar is the mean of the level means, the whiskers run from the slowest to the fastest round "
                 "(002's chart), over the levels every cell of the group measured.")


def total_time(m: Measured) -> Chart:
    rows = _cell_rows(m, lambda f: {"seconds": f.time_for_same_requests})
    measured = {group.requests_budget is not None for group in m.groups}
    wall = "the wall time of a round of each level, every cell of the group serving the same requests"
    derived = (f"the time to serve {SAME_REQUESTS:,} requests at each level at the measured rates, "
               "whose ratios compare like 000's and 002's total times")
    if measured == {True}:
        note = f"Measured: {wall}"
    elif measured == {False}:
        note = (f"The cells did not all serve one requests budget (they ran for a time, or under several), "
                f"so this is {derived}")
    else:
        note = f"Measured where every cell of a group served one requests budget: {wall}; elsewhere {derived}"
    spec = _per_group(_bars(m, rows, "seconds", "seconds"))
    return Chart("total_time", "Total time to serve the same requests", spec,
                 note + ", summed over the levels every cell of the group measured.")


def end_memory(m: Measured) -> Chart:
    rows = _cell_rows(m, lambda f: {"mib": f.end_memory_bytes and f.end_memory_bytes / MIB}, at_end=True)
    return Chart("end_memory", "Server memory at the end of each test", _per_group(_bars(m, rows, "mib", "MiB (PSS)")),
                 "The server's peak PSS during the highest level every cell of the group measured; each cell starts "
                 "a fresh server, so nothing carries over.")


def ratings(m: Measured) -> List[dict]:
    """003's rating table: each cell's mean requests/s with the baseline's in its group = 100,
    on the levels every cell of the group measured."""
    rows = []
    for group in m.rated_groups:
        base = m.baseline_of(group)
        hundred = group.figures(base).mean_rps
        if not hundred:
            continue
        for cell in group.cells:
            mean = group.figures(cell).mean_rps
            rows.append({"series": m.series_of(cell), "group": group.name, "keep_alive": cell.keep_alive,
                         "context": group.name.replace(", no keep-alive", "").replace(", keep-alive", ""),
                         "rating": 100 * mean / hundred, "mean": mean,
                         "baseline": m.series_of(base), **_flagged(group.flags(cell))})
    return rows


def rating(m: Measured) -> Chart:
    rows = [{**r, "keep-alive": "keep-alive on" if r["keep_alive"] else "keep-alive off"} for r in ratings(m)]
    both = len({r["keep_alive"] for r in rows}) == 2
    bars = _bars(m, rows, "rating", f"rating ({m.baseline_label} = 100)",
                 # The baseline's line belongs to no series: drawn apart from the bars' base, it stays.
                 extra=[lambda base: alt.Chart().mark_rule(strokeDash=[4, 3], color="gray").encode(y=alt.datum(100))],
                 tooltip=[alt.Tooltip("mean:Q", title="requests/s", format=",.0f"), alt.Tooltip("baseline:N")])
    spec = bars.facet(column=alt.Column("keep-alive:N", title=None), row=alt.Row("context:N", title=None))
    title = f"Rating: {m.baseline_label} = 100" + (", keep-alive on and off side by side" if both else "")
    return Chart("rating", title, spec,
                 " ".join(["Mean requests/s over the levels every cell of the group measured, relative to the "
                           "baseline's in the same workload and CPU count (003).", *m.baseline_fallbacks()]))


def differences(m: Measured) -> Chart:
    """004's table as a chart: each series' percentage over the baseline at every level."""
    rows = []
    for group in m.rated_groups:
        base = m.baseline_of(group)
        by_level = {lv.level: lv.rps.mean for lv in base.levels}
        for cell in group.cells:
            if cell is base:
                continue
            for lv in cell.levels:
                if by_level.get(lv.level):
                    rows.append({"series": m.series_of(cell), "group": group.name, "level": str(lv.level),
                                 "percent": 100 * (lv.rps.mean / by_level[lv.level] - 1),
                                 "baseline": m.series_of(base), **_flagged(lv.flags)})
    hidden = _legend_toggle()
    spec = alt.Chart(alt.Data(values=rows)).mark_bar().encode(
        x=alt.X("level:O", title="concurrent connections", sort=None), xOffset=alt.XOffset("series:N", sort=m.series),
        y=quantity("percent:Q", f"difference to {m.baseline_label} (%)"), color=m.color(),
        opacity=_unless_hidden(hidden),
        **_outlined_if_flagged(),
        tooltip=[alt.Tooltip("series:N"), alt.Tooltip("level:N", title="connections"),
                 alt.Tooltip("percent:Q", format="+.1f"), alt.Tooltip("baseline:N"),
                 alt.Tooltip("flags:N", title="flagged")]
    ).add_params(hidden).properties(width=_width(rows, "group"), height=HEIGHT).facet(
        facet=alt.Facet("group:N", title=None), columns=2)
    return Chart("differences", f"Difference to {m.baseline_label} at each level", spec,
                 " ".join(["Positive: faster than the baseline at that level and budget (004's percentages).",
                           *m.baseline_fallbacks()]))


def _flagged_at_end(points: List[dict], level: int, flags: Dict[str, str]) -> List[dict]:
    """A series' points at `level`, the last one marked `end` and carrying the level's flags."""
    last = len(points) - 1
    return [{**p, "level": level, "end": i == last, **_flagged(flags if i == last else {})}
            for i, p in enumerate(points)]


def _lines_and_dots(m: Measured, rows: List[dict], line: dict, x: alt.X, y: alt.Y, tooltip: Sequence[alt.Tooltip],
                    dotted: Optional[str] = None) -> alt.LayerChart:
    """A line per series, with dots on the rows the expression `dotted` picks (default all)."""
    hidden = _legend_toggle()
    base = alt.Chart().encode(x=x, color=m.color())
    lines = base.mark_line(**line).encode(y=y, opacity=_unless_hidden(hidden)).add_params(hidden)
    dots = _dots(base.transform_filter(dotted) if dotted else base, y.shorthand, hidden,
                 [*tooltip, alt.Tooltip("level:Q", title="connections"), alt.Tooltip("flags:N", title="flagged")])
    return alt.layer(lines, dots, data=alt.Data(values=rows))


def spectrum(m: Measured) -> Chart:
    rows = []
    for cell in m.cells:
        lv = m.chosen_level(cell)
        if lv is None or not lv.latency.summaries:   # no histogram, or none holding a request
            continue
        rows += _flagged_at_end([{"series": m.series_of(cell), "context": f"{cell.group}, {lv.level} connections",
                                  "x": 1 / (1 - percentile / 100), "percentile": percentile, "ms": us / 1000}
                                 for percentile, us in engine.latency_spectrum(list(lv.latency.summaries))
                                 if percentile < 100], lv.level, lv.flags)
    spec = _lines_and_dots(
        m, rows, dict(interpolate="step-after", clip=True),
        alt.X("x:Q", title="percentile", scale=alt.Scale(type="log", domain=[2, 100000]),
              axis=alt.Axis(values=SPECTRUM_TICKS, labelExpr="format(100 - 100 / datum.value, '.3~f') + '%'")),
        quantity("ms:Q", "latency (ms)"),
        [alt.Tooltip("series:N"), alt.Tooltip("percentile:Q", format=".4~f"),
         alt.Tooltip("ms:Q", title="latency (ms)", format=",.3f")], dotted="datum.end"
    ).properties(width=_width(rows, "context"), height=HEIGHT).facet(
        facet=alt.Facet("context:N", title=None), columns=2)
    level = m.choices.level
    return Chart("spectrum", "Latency percentile spectrum" + (f" at {level} connections" if level else ""), spec,
                 "All rounds' histograms added; the x axis stretches the tail: 90%, 99%, 99.9%... The dot ends "
                 "the line, ringed in black when the level is flagged. "
                 + ("" if level else "Each series at its highest level (choose one with --level)."))


def timeline(m: Measured) -> Chart:
    rows, short = [], []
    for cell in m.cells:
        lv = m.chosen_level(cell)
        if lv is None or not lv.timeseries:
            continue
        context = f"{cell.group}, {lv.level} connections"
        if len(lv.timeseries) < TIMELINE_SECONDS:
            short.append(f"{m.series_of(cell)} ({context})")
            continue
        for field, metric in (("requests", "requests/s"), ("errors", "errors/s")):
            points = [{"series": m.series_of(cell), "context": context, "second": p["second"], "round": p["round"],
                       "metric": metric, "count": p[field]} for p in lv.timeseries]
            # Ringed once, on the throughput: the errors below are of the same level.
            rows += _flagged_at_end(points, lv.level, lv.flags if metric == "requests/s" else {})
    spec = _lines_and_dots(
        m, rows, {},
        alt.X("second:Q", title="second of the level (its rounds one after another)", scale=alt.Scale(zero=True),
              axis=alt.Axis(tickMinStep=1, format="d")),
        quantity("count:Q", "per second"),
        [alt.Tooltip("series:N"), alt.Tooltip("second:Q"), alt.Tooltip("round:Q"),
         alt.Tooltip("metric:N"), alt.Tooltip("count:Q", format=",.0f")]
    ).properties(width=_width(rows, "context"), height=HEIGHT // 2 + 40).facet(
        row=alt.Row("metric:N", title=None, sort=["requests/s", "errors/s"]),
        column=alt.Column("context:N", title=None)).resolve_scale(y="independent")
    level = m.choices.level
    too_short = (f"Not drawn for {'; '.join(short)}: fewer than {TIMELINE_SECONDS} seconds of the level were "
                 "recorded, all rounds together, which draw a dot, not a line; longer levels or more rounds give one."
                 if short else "")
    return Chart("timeline", "Requests and errors per second" + (f" at {level} connections" if level else ""), spec,
                 " ".join(["Each second of the chosen level as the engine recorded it (a flagged level is ringed in "
                           "black at its last second); other clients give no timeline.", too_short]).rstrip(),
                 missing=too_short)


BUILDERS: Sequence[Callable[[Measured], Chart]] = (
    throughput, latency, server_cpu, server_memory, rps_bars, total_time, end_memory, rating, differences,
    spectrum, timeline)


def all_charts(runs: Sequence[RunResults], choices: Choices = Choices()) -> List[Chart]:
    return charts_of(Measured(runs, choices))


def every_chart(m: Measured) -> List[Chart]:
    """Every chart, drawn or not (a chart with nothing to draw may say why in `missing`)."""
    return [build(m) for build in BUILDERS]


def charts_of(m: Measured) -> List[Chart]:
    """Every chart the runs have data for (an engine-less run has no spectrum, one server no rating)."""
    return [chart for chart in every_chart(m) if chart.drawn]


class LegendToggleLost(RuntimeError):
    """The compiled Vega no longer has what `vega` patches (Vega-Lite renamed or reshaped it):
    without the patch the legend would fade the shown series instead of the hidden ones."""


def vega(spec: dict) -> dict:
    """A chart's Vega-Lite spec compiled to the Vega spec the page draws and the files are
    rendered from, with the legend toggle Vega-Lite does not give: its legend fades the entries
    outside a legend-bound selection, and this selection holds the hidden series, so the
    entries inside it are the ones faded; and it clears the selection only on a click outside
    every mark, so a double-click anywhere clears it too. These patches go by Vega-Lite's
    internal names: a chart with the selection whose compiled Vega lacks them raises
    LegendToggleLost rather than drawing the legend backwards."""
    compiled = vl_convert.vegalite_to_vega(spec)
    store = f"{HIDDEN}_store"
    if not any(data.get("name") == store for data in compiled.get("data", [])):
        return compiled
    faded_parts = []
    for legend in compiled.get("legends", []):
        for part in ("symbols", "labels"):
            update = legend.get("encode", {}).get(part, {}).get("update", {})
            rule = update.get("opacity")
            # Vega-Lite's rule: [full when the selection is empty or holds the entry, faded otherwise].
            if isinstance(rule, list) and f'data("{store}")' in rule[0].get("test", ""):
                shown, faded = rule
                update["opacity"] = [{**faded, "test": f'length(data("{store}")) && ({shown["test"]})'},
                                     {k: v for k, v in shown.items() if k != "test"}]
                faded_parts.append(part)
    clicked = [s for s in compiled.get("signals", []) if s["name"] == f"{HIDDEN}_series_legend"]
    for signal in clicked:   # the clicked entry's value, null for none
        signal["on"].append({"events": [{"source": "view", "type": "dblclick"}], "update": "null", "force": True})
    lost = ([f"the opacity rule of the legend's {part}" for part in ("symbols", "labels") if part not in faded_parts]
            + ([] if clicked else [f"the signal {HIDDEN}_series_legend"]))
    if lost:
        raise LegendToggleLost(f"vl-convert {vl_convert.__version__} compiled the legend selection "
                               f"{HIDDEN!r} without {' or '.join(lost)}: charts.vega must be updated for it")
    return compiled


def _has_data(spec: alt.TopLevelMixin) -> bool:
    data = spec.to_dict().get("data") or {}
    return bool(data.get("values"))
