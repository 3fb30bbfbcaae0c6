"""The timeline of a level through its planned events (issue 29): requests/s, failed and
retryable requests/s and latency p99, ten points a second from the engine's fine series, each
event a rule at the moment it was performed, labelled with its action (red when it failed).
"""

from __future__ import annotations

from typing import List

import altair as alt

from httpbench.report.marks import HEIGHT, WIDE, Chart, Measured, quantity

METRICS = (("requests", "requests/s"), ("failed", "failed/s"), ("retryable", "retryable/s"), ("p99_ms", "p99 (ms)"))


def _rows(m: Measured) -> List[dict]:
    rows = []
    for cell in m.cells:
        lv = m.chosen_level(cell)
        if lv is None or not lv.fine_series:
            continue
        context = f"{m.series_of(cell)}: {cell.group}, level {lv.level:,}"
        for point in lv.fine_series:
            p99 = point["p99_us"]
            values = {**point, "p99_ms": None if p99 is None else p99 / 1000}
            for field, metric in METRICS:
                rows.append(
                    {
                        "context": context,
                        "round": point["round"],
                        "second": point["second"],
                        "metric": metric,
                        "value": values[field],
                    }
                )
        for e in lv.operations:
            if e.at_s is None:
                continue
            for _, metric in METRICS:
                rows.append(
                    {
                        "context": context,
                        "round": e.round,
                        "second": e.at_s,
                        "metric": metric,
                        "event": e.action + ("" if e.ok else " (failed)"),
                        "ok": e.ok,
                    }
                )
    return rows


def events_timeline(m: Measured) -> Chart:
    rows = _rows(m)
    base = alt.Chart(alt.Data(values=rows))
    lines = (
        base.transform_filter("isValid(datum.value)")
        .mark_line(interpolate="step-after")
        .encode(
            x=alt.X("second:Q", title="second of the round's load", scale=alt.Scale(zero=True)),
            y=quantity("value:Q", ""),
            detail="round:N",
            color=alt.Color("round:N", title="round"),
            tooltip=[
                alt.Tooltip("round:N"),
                alt.Tooltip("second:Q", format=".1f"),
                alt.Tooltip("metric:N"),
                alt.Tooltip("value:Q", format=",.1f"),
            ],
        )
    )
    rules = (
        base.transform_filter("isValid(datum.event)")
        .mark_rule(strokeDash=[4, 3])
        .encode(
            x="second:Q",
            color=alt.condition("datum.ok", alt.value("gray"), alt.value("red")),
            tooltip=[alt.Tooltip("event:N"), alt.Tooltip("round:N"), alt.Tooltip("second:Q", format=".2f")],
        )
    )
    spec = (
        alt.layer(lines, rules)
        .properties(width=WIDE, height=HEIGHT // 2)
        .facet(
            row=alt.Row("metric:N", title=None, sort=[metric for _, metric in METRICS]),
            column=alt.Column("context:N", title=None),
        )
        .resolve_scale(y="independent")
    )
    return Chart(
        "events",
        "Through the planned events: requests, failures and p99 every 100 ms",
        spec,
        "Each dashed rule is an event, at the moment it was performed (red: the server refused it or it was "
        "not performed); retryable requests were lost to a close as their connection was reused, which a "
        "browser retries on its own, and are not counted failed.",
    )
