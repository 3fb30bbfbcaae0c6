"""The cost of TLS as charts, a bar per server/profile (results.tls_cost pairs the cells): with
keep-alive, its https requests/s as a share of its http ones; without keep-alive, the full and the
resumed TLS handshakes it completed per second. Drawn only for runs with both protocols.
"""

from __future__ import annotations

from typing import Dict, List

import altair as alt

from httpbench.plan.protocol import HANDSHAKES, uses_tls
from httpbench.report.bars import per_group, series_bars, series_beside
from httpbench.report.marks import (
    Chart,
    Measured,
    flagged,
)
from httpbench.results import tls_cost
from httpbench.results.comparison import Figures

# The summary's sentences (report.summary.tls_costs) say which figures the client bounded; a bar
# carries its levels' flags on hover.
OUTLINED = (
    "a level it stands on is flagged (hover for why; where the client set the pace, the summary says "
    "whether the figure is a lower or an upper bound)"
)


def _flags(named: Dict[str, Figures]) -> Dict[str, str]:
    """The honesty flags of each figure's levels, the kind marked with whose figure it is."""
    return {
        f"{kind} ({which})": "; ".join(f"level {lv.level}: {lv.flags[kind]}" for lv in levels)
        for which, figures in named.items()
        for kind, levels in figures.flagged.items()
    }


def _costs(m: Measured) -> List[tls_cost.Cost]:
    return tls_cost.costs(m.cells)


def _missing(m: Measured, what: str) -> str:
    """Why a TLS chart is not drawn, said only for runs with TLS cells (the others never had one)."""
    if not any(uses_tls(c.protocol) for c in m.cells):
        return ""
    return f"Not drawn: no server has {what} that finished, to set side by side."


def share(m: Measured) -> Chart:
    rows = []
    for cost in _costs(m):
        if cost.keep_alive_figures is None:
            continue
        https, http = cost.keep_alive_figures
        pair = cost.keep_alive
        rows.append(
            {
                "series": m.series_of(pair.cell),
                "group": cost.context,
                "share": https.mean_rps / http.mean_rps,
                "https": https.mean_rps,
                "http": http.mean_rps,
                "levels": ", ".join(map(str, pair.levels)),
                **flagged(_flags({"https": https, "http": http})),
            }
        )
    bars = series_bars(
        m,
        rows,
        "share",
        "HTTPS req/s / HTTP req/s (keep-alive)",
        # As many as over HTTP: the line no server's HTTPS reaches without a tie.
        extra=[lambda base: alt.Chart().mark_rule(strokeDash=[4, 3], color="gray").encode(y=alt.datum(1))],
        tooltip=[
            alt.Tooltip("https:Q", title="HTTPS req/s", format=",.0f"),
            alt.Tooltip("http:Q", title="HTTP req/s", format=",.0f"),
            alt.Tooltip("levels:N", title="over levels"),
        ],
    )
    return Chart(
        "tls_share",
        "Requests per second over HTTPS as a share of HTTP, keep-alive on",
        per_group(bars),
        "Each server's mean HTTPS requests/s over the levels both its cells measured, divided by its HTTP "
        "requests/s on the same levels (1, the dashed line: as many). With keep-alive a connection makes one "
        f"handshake, so this is mostly the record layer's cost per request. An outlined bar: {OUTLINED}.",
        missing=_missing(m, "both an http and an https cell with keep-alive"),
    )


def handshakes(m: Measured) -> Chart:
    rows = []
    for cost in _costs(m):
        full = cost.full_figures
        if full is None:
            continue
        # A resumed cell's rate is all its handshakes: each connection's first is still full.
        measured = [("full handshakes", full, "full")] + [
            (HANDSHAKES[pair.cell.resumption], pair.figures(pair.cell), "all") for pair in cost.resumed
        ]
        for kind, figures, which in measured:
            rate = tls_cost.handshake_rate(figures, which)
            if rate is not None:
                rows.append(
                    {
                        "series": m.series_of(cost.full),
                        "group": cost.context,
                        "kind": kind,
                        "rate": rate,
                        **flagged(_flags({kind: figures})),
                    }
                )
    spec = series_beside(
        m,
        rows,
        alt.X("kind:N", title=None, sort=list(HANDSHAKES.values()), axis=alt.Axis(labelAngle=0)),
        "rate",
        "TLS handshakes per second (no keep-alive)",
        [alt.Tooltip("kind:N", title="handshakes"), alt.Tooltip("rate:Q", title="per second", format=",.0f")],
    )
    return Chart(
        "tls_handshakes",
        "TLS handshakes per second without keep-alive, full and resumed",
        spec,
        "Without keep-alive every request makes a new connection and a handshake: the handshakes each server "
        "completed per second of measurement, the mean over its levels, every one full, and offered a session "
        f"to resume (a server that resumes none shows no bar). An outlined bar: {OUTLINED}.",
        missing=_missing(m, "an https cell without keep-alive"),
    )
