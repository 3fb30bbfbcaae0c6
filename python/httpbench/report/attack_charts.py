"""The charts of clients that are not a benchmark (issue 28), drawn only for runs with such
cells: how the normal clients fared under each kind of slow client beside the same level without
it, the slow connections' states each second as slowhttptest draws them, what an idle
connection costs each server's memory, and how soon each server cut its slow connections.

Each attacked level is read against its own twin without the attack (results.hostile), never
ranked against another server's cell without it.
"""

from __future__ import annotations

from typing import Iterator, List, Tuple

import altair as alt

from httpbench.plan.model import ATTACKS
from httpbench.report.bars import per_group, series_bars, series_beside
from httpbench.report.marks import (
    Chart,
    Measured,
    flagged,
    in_panels,
    legend_toggle,
    panel_context,
    quantity,
    unless_hidden,
)
from httpbench.results import hostile
from httpbench.results.model import CellResult, LevelResult

NO_ATTACK = "no attack"
ORDER = [NO_ATTACK, *ATTACKS.values()]
STATES = ("pending", "connected", "closed by the server")


def _panel(cell: CellResult, level: LevelResult) -> str:
    return f"{panel_context(cell)}, {cell.cpus} CPU, level {level.level:,}"


def _attacked(m: Measured) -> Iterator[Tuple[CellResult, hostile.SlowFigures]]:
    """Each cell under slow clients with its figures at the chosen level (the highest without
    one chosen)."""
    for cell in m.cells:
        chosen = m.chosen_level(cell)
        for f in hostile.slow_figures(cell, m.cells):
            if chosen is not None and f.level.level == chosen.level:
                yield cell, f


def _normal_rows(m: Measured) -> List[dict]:
    """The normal clients' succeeded share and p99 under each attack, and once per cell at the
    same level without it."""
    rows, twins = [], set()
    for cell, f in _attacked(m):
        pairs = [(ATTACKS[cell.slow], f.level)]
        if f.unattacked is not None and (m.series_of(cell), _panel(cell, f.level)) not in twins:
            twins.add((m.series_of(cell), _panel(cell, f.level)))
            pairs.append((NO_ATTACK, f.unattacked))
        for attack, lv in pairs:
            share, p99 = lv.succeeded_share, lv.latency.p99_us
            reasons = dict(lv.flags)
            if p99 is None:
                # A starved server's bar must not read as a fast one: drawn at 0, outlined, and why.
                reasons["no answer"] = "no normal request was answered: no latency to draw"
            rows.append(
                {
                    "series": m.series_of(cell),
                    "group": _panel(cell, f.level),
                    "attack": attack,
                    "share": None if share is None else share * 100,
                    "p99_ms": 0.0 if p99 is None else p99 / 1000,
                    **flagged(reasons),
                }
            )
    return rows


def _normal(m: Measured, name: str, field: str, title: str, what: str) -> Chart:
    rows = [r for r in _normal_rows(m) if r[field] is not None]
    spec = series_beside(
        m,
        rows,
        alt.X("attack:N", title=None, sort=ORDER),
        field,
        title,
        [alt.Tooltip("attack:N"), alt.Tooltip(f"{field}:Q", title=title, format=",.2f")],
    )
    return Chart(
        name,
        f"Normal clients under slow clients: {what}",
        spec,
        "Each server's normal clients at the same level with no attack and under each kind of slow client; "
        "a server is read against itself without the attack, never against another's cell without it.",
    )


def slow_share(m: Measured) -> Chart:
    return _normal(m, "slow_share", "share", "requests answered (%)", "the share of requests answered")


def slow_p99(m: Measured) -> Chart:
    return _normal(m, "slow_p99", "p99_ms", "p99 latency (ms)", "their p99 latency")


def _state_rows(m: Measured) -> List[dict]:
    rows = []
    for cell, f in _attacked(m):
        group = f"{cell.slow_clients:,} {ATTACKS[cell.slow]}, {_panel(cell, f.level)}"
        for point in (f.level.slow_clients or {}).get("series") or []:
            for state, count in zip(STATES, (point["pending"], point["connected"], point["closed"])):
                second = point["second"]
                rows.append({"series": m.series_of(cell), "group": group, "second": second, "state": state, "n": count})
    return rows


def slow_states(m: Measured) -> Chart:
    rows = _state_rows(m)
    hidden = legend_toggle()
    lines = (
        alt.Chart(alt.Data(values=rows))
        .mark_line()
        .encode(
            x=alt.X("second:Q", title="seconds from the measured window's start"),
            y=quantity("n:Q", "slow connections"),
            color=m.color(),
            strokeDash=alt.StrokeDash("state:N", title="state", sort=list(STATES)),
            detail="state:N",
            opacity=unless_hidden(hidden),
            tooltip=[
                alt.Tooltip("series:N"),
                alt.Tooltip("second:Q"),
                alt.Tooltip("state:N"),
                alt.Tooltip("n:Q", title="connections", format=","),
            ],
        )
        .add_params(hidden)
    )
    spec = in_panels(lines, rows).resolve_scale(y="independent")
    return Chart(
        "slow_states",
        "Slow connections each second: pending, connected, closed by the server",
        spec,
        "As slowhttptest draws them: connecting (pending), open and trickling (connected), and the running "
        "total the server closed; seconds before 0 are the attack opening before the measured window.",
    )


def _cut_rows(m: Measured) -> List[dict]:
    rows = []
    for cell, f in _attacked(m):
        p50, most = f.cut_after_ms
        for stat, ms in (("median", p50), ("max", most)):
            if ms is not None:
                rows.append(
                    {
                        "series": m.series_of(cell),
                        "group": _panel(cell, f.level),
                        "what": f"{ATTACKS[cell.slow]} {stat}",
                        "ms": ms,
                        "cut": f.cut,
                        **flagged(f.level.flags),
                    }
                )
    return rows


def slow_cut(m: Measured) -> Chart:
    order = [f"{attack} {stat}" for attack in ATTACKS.values() for stat in ("median", "max")]
    rows = _cut_rows(m)
    spec = series_beside(
        m,
        rows,
        alt.X("what:N", title=None, sort=order),
        "ms",
        "open for (ms) when cut",
        [alt.Tooltip("what:N"), alt.Tooltip("ms:Q", format=",.0f"), alt.Tooltip("cut:Q", format=",")],
    )
    return Chart(
        "slow_cut",
        "How soon each server cut its slow connections",
        spec,
        "How long the slow connections a server closed had been open, median and longest; a server that cut "
        "none within the level has no bar (it held them all).",
        # Said only where slow clients were measured: a run without them has no such chart to miss.
        missing=""
        if rows or next(_attacked(m), None) is None
        else "No server cut a slow connection within these levels: each held them all (a timeout longer than "
        "a level is not reached in it).",
    )


def _idle_rows(m: Measured) -> List[dict]:
    rows = []
    for cell in m.cells:
        chosen = m.chosen_level(cell)
        for f in hostile.idle_figures(cell, m.cells):
            each = f.bytes_per_connection
            if chosen is None or f.level.level != chosen.level or each is None:
                continue
            reasons = dict(f.level.flags)
            if each <= 0:
                # Less memory with them than without: the monitor's noise, drawn as no cost.
                reasons["noise"] = f"{f.memory_bytes:,} bytes with them against without: no more memory"
            if f.closed_by_server:
                reasons["closed"] = f"the server closed {f.closed_by_server:,} of them: {f.held:,} held"
            rows.append(
                {
                    "series": m.series_of(cell),
                    "group": f"{cell.idle:,} idle, {_panel(cell, f.level)}",
                    "bytes": max(each, 0.0),
                    "held": f.held,
                    **flagged(reasons),
                }
            )
    return rows


def idle_memory(m: Measured) -> Chart:
    spec = per_group(
        series_bars(m, _idle_rows(m), "bytes", "bytes per idle connection", tooltip=[alt.Tooltip("held:Q", format=",")])
    )
    return Chart(
        "idle_memory",
        "Memory per idle keep-alive connection",
        spec,
        "The server's memory (PSS peak of its process tree) with the idle connections less without them, "
        "over the connections it still held; outlined where it closed some of them.",
    )
