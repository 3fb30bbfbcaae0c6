"""The charts against concurrency and over a level: a line per series (throughput, latency,
server CPU and memory), the latency percentile spectrum and the timeline of a level's seconds.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence

import altair as alt

from httpbench.load import engine
from httpbench.report.marks import (
    HEIGHT,
    Chart,
    Measured,
    dots,
    flagged,
    legend_toggle,
    panel_width,
    quantity,
    unless_hidden,
)
from httpbench.servers.adapters.reference import Reference

# Percentile spectrum ticks: x = 1 / (1 - p), so 50% -> 2, 99.999% -> 100,000 (HdrHistogram's plot).
SPECTRUM_TICKS = [2, 10, 100, 1000, 10000, 100000]
# Fewer seconds of a level draw a dot or two, no course over time (the quick plan's levels are one
# round of 1 s): those are left out of the timeline, and it says so.
TIMELINE_SECONDS = 3


def per_level(
    m: Measured,
    rows: List[dict],
    y_field: str,
    y_title: str,
    band: Optional[tuple] = None,
    dash: Optional[str] = None,
    extra_tooltip: Sequence[alt.Tooltip] = (),
    ceiling: bool = False,
) -> alt.FacetChart:
    """Lines against concurrency, a panel per CPU count (as the 2016 write-up drew them) and per
    workload / keep-alive; with `ceiling`, the rows whose `ceiling` is true dashed."""
    hidden = legend_toggle()
    base = alt.Chart().encode(
        x=alt.X("level:Q", title="concurrent connections", scale=alt.Scale(zero=True)), color=m.color()
    )
    tooltip = [
        alt.Tooltip("series:N"),
        alt.Tooltip("level:Q", title="connections"),
        alt.Tooltip(f"{y_field}:Q", title=y_title, format=",.2f"),
        *extra_tooltip,
        alt.Tooltip("flags:N", title="flagged"),
    ]
    line = dict(y=quantity(f"{y_field}:Q", y_title), opacity=unless_hidden(hidden))
    if dash:
        line["strokeDash"] = alt.StrokeDash(f"{dash}:N", title=None)
    elif ceiling:
        line["strokeDash"] = alt.condition("datum.ceiling", alt.value([6, 4]), alt.value([1, 0]))
    layers = []
    if band:
        layers.append(
            base.mark_area().encode(
                y=alt.Y(f"{band[0]}:Q"), y2=alt.Y2(f"{band[1]}:Q"), opacity=unless_hidden(hidden, 0.18)
            )
        )
    layers.append(base.mark_line().encode(**line).add_params(hidden))
    layers.append(dots(base, f"{y_field}:Q", hidden, tooltip))
    return (
        alt.layer(*layers, data=alt.Data(values=rows))
        .properties(width=panel_width(rows, "cpus"), height=HEIGHT)
        .facet(
            column=alt.Column("cpus:N", title=None),
            # Above its panel, level: a TLS row's words (protocol, version, key, handshakes) are
            # longer than a panel is high.
            row=alt.Row(
                "context:N", title=None, header=alt.Header(labelAngle=0, labelOrient="top", labelAnchor="start")
            ),
        )
    )


def throughput(m: Measured) -> Chart:
    # The reference server is the client's ceiling, not a contender: its line is drawn dashed.
    ceilings = {m.series_of(c) for c in m.cells if c.server == Reference.name}
    spec = per_level(
        m,
        [{**row, "ceiling": row["series"] in ceilings} for row in m.level_rows()],
        "rps",
        "requests/s",
        band=("rps_min", "rps_max"),
        extra_tooltip=[
            alt.Tooltip("rps_min:Q", title="min of rounds", format=",.0f"),
            alt.Tooltip("rps_max:Q", title="max of rounds", format=",.0f"),
            alt.Tooltip("rounds:Q"),
            alt.Tooltip("errors:Q"),
        ],
        ceiling=True,
    )
    return Chart(
        "throughput",
        "Requests per second against concurrency",
        spec,
        "Mean of the rounds; the shaded band runs from the slowest to the fastest round."
        + (
            f" Dashed: {', '.join(sorted(ceilings))}, httpbench's own server, the client's ceiling, not a contender."
            if ceilings
            else ""
        ),
    )


def _melt(rows: List[dict], fields: Dict[str, str], value: str, kind: str) -> List[dict]:
    """Long form: one row per (row, field), for a line per field."""
    return [{**row, value: row[f], kind: name} for row in rows for f, name in fields.items() if row[f] is not None]


def latency(m: Measured) -> Chart:
    rows = _melt(m.level_rows(), {"p50_ms": "p50", "p99_ms": "p99"}, "ms", "percentile")
    exact = all(lv.latency.exact for c in m.cells for lv in c.levels)
    return Chart(
        "latency",
        "Latency (p50 and p99) against concurrency",
        per_level(m, rows, "ms", "latency (ms)", dash="percentile"),
        "Percentiles of all rounds' histograms added together."
        if exact
        else "Where the client gives no histogram (ab, wrk, h2load), the median of its rounds' percentiles.",
    )


def server_cpu(m: Measured) -> Chart:
    rows = _melt(m.level_rows(), {"cpu_user": "user", "cpu_sys": "system"}, "cores", "cpu")
    return Chart(
        "server_cpu",
        "Server CPU (user and system) against concurrency",
        per_level(m, rows, "cores", "server CPU (cores)", dash="cpu"),
        "CPU time of the server's processes over each round, in cores (1 = one core busy).",
    )


def server_memory(m: Measured) -> Chart:
    rows = [r for r in m.level_rows() if r["memory_mib"] is not None]
    return Chart(
        "server_memory",
        "Server memory against concurrency",
        per_level(m, rows, "memory_mib", "server memory (MiB, PSS)"),
        "Peak proportional set size of the server's processes during the level (RSS where PSS cannot be read).",
    )


def _flagged_at_end(points: List[dict], level: int, flags: Dict[str, str]) -> List[dict]:
    """A series' points at `level`, the last one marked `end` and carrying the level's flags."""
    last = len(points) - 1
    return [
        {**p, "level": level, "end": i == last, **flagged(flags if i == last else {})} for i, p in enumerate(points)
    ]


def _lines_and_dots(
    m: Measured,
    rows: List[dict],
    line: dict,
    x: alt.X,
    y: alt.Y,
    tooltip: Sequence[alt.Tooltip],
    dotted: Optional[str] = None,
) -> alt.LayerChart:
    """A line per series, with dots on the rows the expression `dotted` picks (default all)."""
    hidden = legend_toggle()
    base = alt.Chart().encode(x=x, color=m.color())
    lines = base.mark_line(**line).encode(y=y, opacity=unless_hidden(hidden)).add_params(hidden)
    marked = dots(
        base.transform_filter(dotted) if dotted else base,
        y.shorthand,
        hidden,
        [*tooltip, alt.Tooltip("level:Q", title="connections"), alt.Tooltip("flags:N", title="flagged")],
    )
    return alt.layer(lines, marked, data=alt.Data(values=rows))


def spectrum(m: Measured) -> Chart:
    rows = []
    for cell in m.cells:
        lv = m.chosen_level(cell)
        if lv is None or not lv.latency.summaries:  # no histogram, or none holding a request
            continue
        rows += _flagged_at_end(
            [
                {
                    "series": m.series_of(cell),
                    "context": f"{cell.group}, {lv.level} connections",
                    "x": 1 / (1 - percentile / 100),
                    "percentile": percentile,
                    "ms": us / 1000,
                }
                for percentile, us in engine.latency_spectrum(list(lv.latency.summaries))
                if percentile < 100
            ],
            lv.level,
            lv.flags,
        )
    spec = (
        _lines_and_dots(
            m,
            rows,
            dict(interpolate="step-after", clip=True),
            alt.X(
                "x:Q",
                title="percentile",
                scale=alt.Scale(type="log", domain=[2, 100000]),
                axis=alt.Axis(values=SPECTRUM_TICKS, labelExpr="format(100 - 100 / datum.value, '.3~f') + '%'"),
            ),
            quantity("ms:Q", "latency (ms)"),
            [
                alt.Tooltip("series:N"),
                alt.Tooltip("percentile:Q", format=".4~f"),
                alt.Tooltip("ms:Q", title="latency (ms)", format=",.3f"),
            ],
            dotted="datum.end",
        )
        .properties(width=panel_width(rows, "context"), height=HEIGHT)
        .facet(facet=alt.Facet("context:N", title=None), columns=2)
    )
    level = m.choices.level
    return Chart(
        "spectrum",
        "Latency percentile spectrum" + (f" at {level} connections" if level else ""),
        spec,
        "All rounds' histograms added; the x axis stretches the tail: 90%, 99%, 99.9%... The dot ends "
        "the line, ringed in black when the level is flagged. "
        + ("" if level else "Each series at its highest level (choose one with --level)."),
    )


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
            points = [
                {
                    "series": m.series_of(cell),
                    "context": context,
                    "second": p["second"],
                    "round": p["round"],
                    "metric": metric,
                    "count": p[field],
                }
                for p in lv.timeseries
            ]
            # Ringed once, on the throughput: the errors below are of the same level.
            rows += _flagged_at_end(points, lv.level, lv.flags if metric == "requests/s" else {})
    spec = (
        _lines_and_dots(
            m,
            rows,
            {},
            alt.X(
                "second:Q",
                title="second of the level (its rounds one after another)",
                scale=alt.Scale(zero=True),
                axis=alt.Axis(tickMinStep=1, format="d"),
            ),
            quantity("count:Q", "per second"),
            [
                alt.Tooltip("series:N"),
                alt.Tooltip("second:Q"),
                alt.Tooltip("round:Q"),
                alt.Tooltip("metric:N"),
                alt.Tooltip("count:Q", format=",.0f"),
            ],
        )
        .properties(width=panel_width(rows, "context"), height=HEIGHT // 2 + 40)
        .facet(
            row=alt.Row("metric:N", title=None, sort=["requests/s", "errors/s"]),
            column=alt.Column("context:N", title=None),
        )
        .resolve_scale(y="independent")
    )
    level = m.choices.level
    too_short = (
        f"Not drawn for {'; '.join(short)}: fewer than {TIMELINE_SECONDS} seconds of the level were "
        "recorded, all rounds together, which draw a dot, not a line; longer levels or more rounds give one."
        if short
        else ""
    )
    return Chart(
        "timeline",
        "Requests and errors per second" + (f" at {level} connections" if level else ""),
        spec,
        " ".join(
            [
                "Each second of the chosen level as the engine recorded it (a flagged level is ringed in "
                "black at its last second); other clients give no timeline.",
                too_short,
            ]
        ).rstrip(),
        missing=too_short,
    )
