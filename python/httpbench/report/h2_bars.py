"""HTTP/2 as charts (results.h2_compare sets the cells side by side): requests/s against streams
per connection, a bar per server at each streams count; and HTTP/1.1 over the same transport
(https for h2, http for h2c) beside h2 at each streams count, per server. A panel per connection
count: the two protocols are only set side by side at the same number of connections. Drawn only
for runs with HTTP/2 cells.
"""

from __future__ import annotations

from typing import List

import altair as alt

from httpbench.plan.protocol import is_http2
from httpbench.report.bars import series_beside
from httpbench.report.marks import Chart, Measured, flagged
from httpbench.results import h2_compare

OUTLINED = "a level it stands on is flagged (hover for why)"


def _group(c: h2_compare.Comparison) -> str:
    return f"{c.protocol.upper()}, {c.context}, {c.connections} connections"


def _missing(m: Measured, what: str) -> str:
    """Why an HTTP/2 chart is not drawn, said only for runs with HTTP/2 cells."""
    if not any(is_http2(c.protocol) for c in m.cells):
        return ""
    return f"Not drawn: no server has {what} that finished."


def _row(m: Measured, c: h2_compare.Comparison, kind: str, point: h2_compare.Point) -> dict:
    granted = point.clamped
    return {
        "series": m.series_of(point.cell),
        "group": _group(c),
        "kind": kind,
        "streams": point.cell.streams,
        "rps": point.rps,
        "granted": "as asked" if granted is None else f"{granted} (server's limit)",
        **flagged(point.level.flags),
    }


def _comparisons(m: Measured) -> List[h2_compare.Comparison]:
    return h2_compare.comparisons(m.cells)


def _bars(m: Measured, rows: List[dict], x: alt.X, first: alt.Tooltip):
    """At each value of `x`, a bar per server; a panel per connection count."""
    granted = alt.Tooltip("granted:N", title="streams granted")
    return series_beside(m, rows, x, "rps", "requests/s", [first, granted, alt.Tooltip("rps:Q", format=",.0f")])


def streams(m: Measured) -> Chart:
    rows = [_row(m, c, f"{n}", point) for c in _comparisons(m) for n, point in c.http2]
    x = alt.X("streams:O", title="streams per connection", axis=alt.Axis(labelAngle=0))
    return Chart(
        "h2_streams",
        "Requests per second against streams per HTTP/2 connection",
        _bars(m, rows, x, alt.Tooltip("streams:O", title="streams asked")),
        "Each server's requests/s (the mean of its rounds) at each number of streams a connection keeps open "
        "at once, a panel per connection count. A server that grants fewer streams than asked was loaded with "
        f"what it granted (hover: streams granted). An outlined bar: {OUTLINED}.",
        missing=_missing(m, "an HTTP/2 cell"),
    )


def http1_beside(m: Measured) -> Chart:
    rows = []
    for c in _comparisons(m):
        if c.http1 is None:
            continue
        over = "HTTP/1.1 over TLS" if c.protocol == "h2" else "HTTP/1.1"
        measured = [(over, c.http1)] + [
            (f"{c.protocol}, {n} stream{'s' if n > 1 else ''}", point) for n, point in c.http2
        ]
        rows += [_row(m, c, kind, point) for kind, point in measured]
    x = alt.X("kind:N", title=None, sort=list(dict.fromkeys(r["kind"] for r in rows)), axis=alt.Axis(labelAngle=0))
    return Chart(
        "h2_against_http1",
        "HTTP/1.1 beside HTTP/2 at the same connections",
        _bars(m, rows, x, alt.Tooltip("kind:N", title="protocol")),
        "Each server's requests/s over HTTP/1.1 (one request at a time per connection; over TLS for h2) beside "
        "its HTTP/2 cells, at the same number of connections (a panel each) and the same transport. "
        f"An outlined bar: {OUTLINED}.",
        missing=_missing(m, "both an HTTP/1.1 and an HTTP/2 cell"),
    )
