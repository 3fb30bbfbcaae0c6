"""The capacity charts: a bar per cell at the most requests/s it carried within the objective,
with its interval, and every probe's latency against its offered rate, the "hockey stick" people
draw by hand, the objective a line across it and each cell's capacity marked on it.
"""

from __future__ import annotations

from typing import Iterator, List, Tuple

import altair as alt

from httpbench.report import capacity as words
from httpbench.report.bars import per_group, series_bars
from httpbench.report.marks import Chart, Measured, flagged, in_panels, legend_toggle, quantity, unless_hidden
from httpbench.results.model import CellResult

PERCENTILES = (("p50_us", "p50"), ("p99_us", "p99"))


def _floor(capacity: dict) -> str:
    """Why the capacity is a lower bound, or "" when it is the server's."""
    if not words.at_least(capacity):
        return ""
    return {
        "client": "the client set the pace: the server carries at least this",
        "connections": "the connection pool's cap set the pace: the server carries at least this",
    }.get(capacity["limited_by"], "the largest rate searched met the objective: the server carries at least this")


def _searches(m: Measured) -> Iterator[Tuple[str, CellResult, dict]]:
    """Each searched cell with its group's name and its capacity object (every cell of
    `m.searched` has one)."""
    for group in m.searched:
        for cell in group.cells:
            yield group.name, cell, cell.capacity


def _capacity_rows(m: Measured) -> List[dict]:
    rows = []
    for group, cell, c in _searches(m):
        reasons = {} if c["rate"] is not None else {"none met": "no rate met the objective"}
        if _floor(c):
            reasons["at least"] = _floor(c)
        rows.append(
            {
                "series": m.series_of(cell),
                "group": group,
                "rate": c["rate"] or 0.0,
                "low": c["interval"]["low"] or 0.0,
                "high": c["interval"]["high"],
                "label": "no rate met" if c["rate"] is None else "",
                **flagged(reasons),
            }
        )
    return rows


def capacity_bars(m: Measured) -> Chart:
    rows = _capacity_rows(m)
    bracket = (
        lambda base: base.mark_rule(color="black").encode(y="low:Q", y2="high:Q"),
        lambda base: base.mark_tick(color="black", thickness=2).encode(y="high:Q"),
        lambda base: base.mark_text(dy=-8, color="black").encode(y="rate:Q", text="label:N"),
    )
    spec = per_group(
        series_bars(
            m,
            rows,
            "rate",
            "requests/s within the objective",
            extra=bracket,
            tooltip=[alt.Tooltip("high:Q", title="lowest rate that failed", format=",.0f")],
        )
    )
    return Chart(
        "capacity",
        "Capacity: the most requests per second within the latency objective",
        spec,
        "The bar is the highest rate whose probes all met the objective, the whisker runs up to the lowest "
        "rate that failed; an outlined bar is a lower bound (the client or the connection pool set the pace), "
        "and a cell that met no rate has no bar.",
        missing="" if rows else "No cell of these runs searched a capacity.",
    )


def _probe_rows(m: Measured) -> List[dict]:
    rows = []
    for group, cell, c in _searches(m):
        for p in c["probes"]:
            for field, name in PERCENTILES:
                if p[field] is not None:
                    rows.append(
                        {
                            "series": m.series_of(cell),
                            "group": group,
                            "offered": p["offered"],
                            "percentile": name,
                            "ms": p[field] / 1000,
                            "met": "met" if p["met"] else "not met",
                            "capacity": c["rate"],
                        }
                    )
    return rows


def _objective_rows(m: Measured) -> List[dict]:
    rows = {}
    for group, _, c in _searches(m):
        for bound in c["objective"]["percentiles"]:
            name = f"p{bound['percentile']:g}"
            rows[(group, name)] = {"group": group, "ms": bound["latency_us"] / 1000, "bound": name}
    return list(rows.values())


def latency_by_rate(m: Measured) -> Chart:
    probes = _probe_rows(m)
    # One dataset for every layer (a faceted layer chart takes its data at the top): the probes,
    # and the objective's bounds, told apart by `bound`.
    rows = probes + _objective_rows(m)
    hidden = legend_toggle()
    base = alt.Chart().encode(
        x=alt.X("offered:Q", title="offered requests/s", scale=alt.Scale(zero=True)),
        color=m.color(),
        opacity=unless_hidden(hidden),
    )
    measured = base.transform_filter("!datum.bound")
    # The median of a rate's probes (a confirmed rate has several) joined up, every probe a dot.
    lines = measured.mark_line().encode(
        y=quantity("median(ms):Q", "corrected latency (ms)"),
        strokeDash=alt.StrokeDash("percentile:N", title="percentile"),
        detail="percentile:N",
    )
    dots = measured.mark_point(filled=True).encode(
        y="ms:Q",
        shape=alt.Shape("met:N", title="probe", scale=alt.Scale(domain=["met", "not met"], range=["circle", "cross"])),
        tooltip=[
            alt.Tooltip("series:N"),
            alt.Tooltip("offered:Q", format=",.0f"),
            alt.Tooltip("percentile:N"),
            alt.Tooltip("ms:Q", format=",.2f"),
            alt.Tooltip("met:N"),
        ],
    )
    capacity = measured.mark_rule(strokeDash=[2, 2]).encode(x="capacity:Q").transform_filter("datum.capacity != null")
    objective = (
        alt.Chart()
        .transform_filter("datum.bound")
        .mark_rule(color="black")
        .encode(y="ms:Q", tooltip=[alt.Tooltip("bound:N", title="objective"), alt.Tooltip("ms:Q", format=",.2f")])
    )
    layers = alt.layer(lines, dots, capacity, objective, data=alt.Data(values=rows)).add_params(hidden)
    spec = in_panels(layers, rows).resolve_scale(y="independent")
    return Chart(
        "latency_by_rate",
        "Latency against offered rate, every probe of each capacity search",
        spec,
        "Each cell's p50 (solid) and p99 (dashed) at every rate its search probed, the objective as a black "
        "line; the dotted vertical line is the cell's capacity. Near the capacity the latency turns up.",
        missing="" if probes else "No cell of these runs searched a capacity.",
    )
