"""The charts with a bar per cell, on the levels its group is compared on: requests/s with the
rounds' spread, total time, memory at the end, and the ratings and differences against a
baseline, which only finished cells take part in.
"""

from __future__ import annotations

from typing import Callable, List, Sequence

import altair as alt

from httpbench.report.marks import (
    HEIGHT,
    MIB,
    WIDTH,
    Chart,
    Measured,
    flagged,
    in_panels,
    legend_toggle,
    outlined_if_flagged,
    quantity,
    unless_hidden,
)
from httpbench.results.comparison import SAME_REQUESTS, Figures


def series_bars(
    m: Measured,
    rows: List[dict],
    y_field: str,
    y_title: str,
    extra: Sequence[Callable[[alt.Chart], alt.Chart]] = (),
    tooltip: Sequence[alt.Tooltip] = (),
) -> alt.LayerChart:
    """A bar per series, outlined in black when flagged; `extra` layers are drawn from the same
    base, so they hide with their series."""
    hidden = legend_toggle()
    base = alt.Chart().encode(
        x=alt.X("series:N", title=None, sort=m.series, axis=alt.Axis(labelAngle=-30)), opacity=unless_hidden(hidden)
    )
    bars = (
        base.mark_bar()
        .encode(
            y=quantity(f"{y_field}:Q", y_title),
            color=m.color(),
            **outlined_if_flagged(),
            tooltip=[
                alt.Tooltip("series:N"),
                alt.Tooltip(f"{y_field}:Q", title=y_title, format=",.2f"),
                *tooltip,
                alt.Tooltip("flags:N", title="flagged"),
            ],
        )
        .add_params(hidden)
    )
    return alt.layer(bars, *[layer(base) for layer in extra], data=alt.Data(values=rows)).properties(
        width=max(WIDTH // 2, 42 * len(m.series)), height=HEIGHT
    )


def series_beside(
    m: Measured, rows: List[dict], x: alt.X, y_field: str, y_title: str, tooltip: Sequence[alt.Tooltip]
) -> alt.FacetChart:
    """At each value of `x`, a bar per series side by side, outlined in black when flagged; a
    panel per group."""
    hidden = legend_toggle()
    bars = (
        alt.Chart(alt.Data(values=rows))
        .mark_bar()
        .encode(
            x=x,
            xOffset=alt.XOffset("series:N", sort=m.series),
            y=quantity(f"{y_field}:Q", y_title),
            color=m.color(),
            opacity=unless_hidden(hidden),
            **outlined_if_flagged(),
            tooltip=[alt.Tooltip("series:N"), *tooltip, alt.Tooltip("flags:N", title="flagged")],
        )
        .add_params(hidden)
    )
    return in_panels(bars, rows)


def per_group(bars: alt.LayerChart) -> alt.FacetChart:
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
                rows.append({"series": m.series_of(cell), "group": group.name, **row, **flagged(flags)})
    return rows


def rps_bars(m: Measured) -> Chart:
    rows = _cell_rows(m, lambda f: {"mean": f.mean_rps, "min": f.min_rps, "max": f.max_rps})
    whiskers = (
        lambda base: base.mark_rule(color="black").encode(y="min:Q", y2="max:Q"),
        lambda base: base.mark_tick(color="black", thickness=2).encode(y="min:Q"),
        lambda base: base.mark_tick(color="black", thickness=2).encode(y="max:Q"),
    )
    spec = per_group(
        series_bars(
            m,
            rows,
            "mean",
            "requests/s",
            extra=whiskers,
            tooltip=[alt.Tooltip("min:Q", format=",.0f"), alt.Tooltip("max:Q", format=",.0f")],
        )
    )
    return Chart(
        "rps_bars",
        "Minimum, mean and maximum requests per second",
        spec,
        "The bar is the mean of the level means, the whiskers run from the slowest to the fastest round "
        "(the 2011 write-up's chart), over the levels every cell of the group measured.",
    )


def total_time(m: Measured) -> Chart:
    rows = _cell_rows(m, lambda f: {"seconds": f.time_for_same_requests})
    measured = {group.requests_budget is not None for group in m.groups}
    wall = "the wall time of a round of each level, every cell of the group serving the same requests"
    derived = (
        f"the time to serve {SAME_REQUESTS:,} requests at each level at the measured rates, "
        "whose ratios compare like the 2016 and 2011 write-ups' total times"
    )
    if measured == {True}:
        note = f"Measured: {wall}"
    elif measured == {False}:
        note = (
            f"The cells did not all serve one requests budget (they ran for a time, or under several), "
            f"so this is {derived}"
        )
    else:
        note = f"Measured where every cell of a group served one requests budget: {wall}; elsewhere {derived}"
    spec = per_group(series_bars(m, rows, "seconds", "seconds"))
    return Chart(
        "total_time",
        "Total time to serve the same requests",
        spec,
        note + ", summed over the levels every cell of the group measured.",
    )


def end_memory(m: Measured) -> Chart:
    rows = _cell_rows(m, lambda f: {"mib": f.end_memory_bytes and f.end_memory_bytes / MIB}, at_end=True)
    return Chart(
        "end_memory",
        "Server memory at the end of each test",
        per_group(series_bars(m, rows, "mib", "MiB (PSS)")),
        "The server's peak PSS during the highest level every cell of the group measured; each cell starts "
        "a fresh server, so nothing carries over.",
    )


def ratings(m: Measured) -> List[dict]:
    """The 2010 LiteSpeed write-up's rating table: each cell's mean requests/s with the baseline's
    in its group = 100, on the levels every cell of the group measured."""
    rows = []
    for group in m.rated_groups:
        base = m.baseline_of(group)
        hundred = group.figures(base).mean_rps
        if not hundred:
            continue
        for cell in m.rated(group):
            mean = group.figures(cell).mean_rps
            rows.append(
                {
                    "series": m.series_of(cell),
                    "group": group.name,
                    "keep_alive": cell.keep_alive,
                    "context": group.name.replace(", no keep-alive", "").replace(", keep-alive", ""),
                    "rating": 100 * mean / hundred,
                    "mean": mean,
                    "baseline": m.series_of(base),
                    **flagged(group.flags(cell)),
                }
            )
    return rows


def rating(m: Measured) -> Chart:
    rows = [{**r, "keep-alive": "keep-alive on" if r["keep_alive"] else "keep-alive off"} for r in ratings(m)]
    both = len({r["keep_alive"] for r in rows}) == 2
    bars = series_bars(
        m,
        rows,
        "rating",
        f"rating ({m.baseline_label} = 100)",
        # The baseline's line belongs to no series: drawn apart from the bars' base, it stays.
        extra=[lambda base: alt.Chart().mark_rule(strokeDash=[4, 3], color="gray").encode(y=alt.datum(100))],
        tooltip=[alt.Tooltip("mean:Q", title="requests/s", format=",.0f"), alt.Tooltip("baseline:N")],
    )
    spec = bars.facet(column=alt.Column("keep-alive:N", title=None), row=alt.Row("context:N", title=None))
    # The page's rating table has this title and note too.
    title = f"Rating: {m.baseline_label} = 100" + (", keep-alive on and off side by side" if both else "")
    return Chart(
        "rating",
        title,
        spec,
        " ".join(
            [
                "Mean requests/s over the levels every cell of the group measured, relative to "
                f"{m.baseline_label} in the same workload and CPU count, as the 2010 LiteSpeed write-up "
                "rated servers.",
                *m.baseline_fallbacks(),
                *m.left_out(),
            ]
        ),
    )


def differences(m: Measured) -> Chart:
    """The 2007 write-up's table as a chart: each series' percentage over the baseline at every level."""
    rows = []
    for group in m.rated_groups:
        base = m.baseline_of(group)
        by_level = {lv.level: lv.rps.mean for lv in base.levels}
        for cell in m.rated(group):
            if cell is base:
                continue
            for lv in cell.levels:
                if by_level.get(lv.level):
                    rows.append(
                        {
                            "series": m.series_of(cell),
                            "group": group.name,
                            "level": str(lv.level),
                            "percent": 100 * (lv.rps.mean / by_level[lv.level] - 1),
                            "baseline": m.series_of(base),
                            **flagged(lv.flags),
                        }
                    )
    spec = series_beside(
        m,
        rows,
        alt.X("level:O", title="concurrent connections", sort=None),
        "percent",
        f"difference to {m.baseline_label} (%)",
        [
            alt.Tooltip("level:N", title="connections"),
            alt.Tooltip("percent:Q", format="+.1f"),
            alt.Tooltip("baseline:N"),
        ],
    )
    return Chart(
        "differences",
        f"Difference to {m.baseline_label} at each level",
        spec,
        " ".join(
            [
                "Positive: faster than the baseline at that level and budget (the 2007 write-up's percentages).",
                *m.baseline_fallbacks(),
                *m.left_out(),
            ]
        ),
    )
