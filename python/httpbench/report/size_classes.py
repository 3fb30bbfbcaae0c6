"""A site's answers by size class (the engine's `classes`, a level's rounds added): their names
("1-10 KB"), one record per class for the exports, and the chart of their latency. Drawn and
exported only for cells that served a site; a single file has no classes.
"""

from __future__ import annotations

from typing import List, Sequence

import altair as alt

from httpbench.report.marks import (
    HEIGHT,
    WIDE,
    Chart,
    Measured,
    dots,
    flagged,
    legend_toggle,
    panel_context,
    quantity,
    unless_hidden,
)
from httpbench.report.tables import duration_text
from httpbench.results.model import LevelResult, RunResults

KB = 1024


def _size(n: int) -> str:
    # SPECweb99's classes are in powers of 1024 and named so (1 KB, 10 KB, 100 KB, 1 MB).
    if n >= KB * KB and n % (KB * KB) == 0:
        return f"{n // (KB * KB)} MB"
    return f"{n // KB} KB" if n >= KB and n % KB == 0 else f"{n} B"


def label(size_class: dict) -> str:
    """A class's body lengths in words: "under 1 KB", "1-10 KB", "1 MB and over" (a class holds
    `bytes_from` to `bytes_to` bytes, both included)."""
    low, high = size_class["bytes_from"], size_class["bytes_to"]
    if high is None:
        return f"{_size(low)} and over"
    if low == 0:
        return f"under {_size(high + 1)}"
    below, top = _size(low), _size(high + 1)
    unit = below.split()[1]
    return f"{below.split()[0]}-{top}" if top.endswith(unit) else f"{below}-{top}"


def percentile(size_class: dict, name: str):
    """A class's latency percentile, None for a class no answer fell in (its empty histogram
    reports 0)."""
    return size_class["latency"][name] if size_class["requests"] else None


def records(runs: Sequence[RunResults]) -> List[dict]:
    """Every class of every site level: its requests, bytes and latency p50/p99 (microseconds)."""
    return [
        {
            "run": run.id,
            "cell": cell.key,
            "level": lv.level,
            "class": label(c),
            "bytes_from": c["bytes_from"],
            "bytes_to": c["bytes_to"],
            "requests": c["requests"],
            "bytes": c["bytes"],
            "p50_us": percentile(c, "p50_us"),
            "p99_us": percentile(c, "p99_us"),
        }
        for run in runs
        for cell in run.measured
        for lv in cell.levels
        for c in lv.classes
    ]


def text(lv: LevelResult) -> str:
    """A level's classes on one line, for a CSV field: "under 1 KB: 350 requests, p50 120 us, p99
    900 us; ..." ("" without classes)."""
    return "; ".join(
        f"{label(c)}: {c['requests']} requests"
        + (f", p50 {c['latency']['p50_us']} us, p99 {c['latency']['p99_us']} us" if c["requests"] else "")
        for c in lv.classes
    )


def latency_by_size(m: Measured) -> Chart:
    """p50 and p99 of each size class, a line per series, at each site cell's chosen level (the
    highest, or the reader's)."""
    rows = []
    for cell in m.cells:
        lv = m.chosen_level(cell) if cell.site else None
        for order, c in enumerate(lv.classes if lv else ()):
            for percentile in ("p50", "p99"):
                us = c["latency"][f"{percentile}_us"]
                if c["requests"] and us is not None:
                    rows.append(
                        {
                            "series": m.series_of(cell),
                            "context": f"{panel_context(cell)}, {cell.cpus} CPU, {lv.level} connections",
                            "class": label(c),
                            "order": order,
                            "percentile": percentile,
                            "ms": us / 1000,
                            "requests": c["requests"],
                            **flagged(lv.flags),
                        }
                    )
    hidden = legend_toggle()
    base = alt.Chart().encode(
        x=alt.X("class:N", title="body size", sort=alt.EncodingSortField("order"), axis=alt.Axis(labelAngle=0)),
        color=m.color(),
    )
    tooltip = [
        alt.Tooltip("series:N"),
        alt.Tooltip("class:N", title="body size"),
        alt.Tooltip("percentile:N"),
        alt.Tooltip("ms:Q", title="latency (ms)", format=",.3f"),
        alt.Tooltip("requests:Q", format=","),
        alt.Tooltip("flags:N", title="flagged"),
    ]
    line = base.mark_line().encode(
        y=quantity("ms:Q", "latency (ms)"),
        strokeDash=alt.StrokeDash("percentile:N", title=None),
        opacity=unless_hidden(hidden),
        detail="percentile:N",
    )
    spec = (
        alt.layer(line.add_params(hidden), dots(base, "ms:Q", hidden, tooltip), data=alt.Data(values=rows))
        .properties(width=WIDE, height=HEIGHT)
        .facet(
            row=alt.Row(
                "context:N", title=None, header=alt.Header(labelAngle=0, labelOrient="top", labelAnchor="start")
            )
        )
    )
    return Chart(
        "latency_by_size",
        "Latency by body size, sites' cells",
        spec,
        "Each size class's median (solid) and 99th percentile (dashed) latency, from its own histogram, at the "
        "highest level of each cell (or the level chosen): a server slow on large files and quick on small ones "
        "shows as a line rising to the right.",
    )


def markdown(runs: Sequence[RunResults]) -> List[str]:
    """The site cells' classes as a Markdown table, level by level ([] without site cells)."""
    rows = records(runs)
    if not rows:
        return []
    several = len(runs) > 1
    lines = [
        "### Size classes",
        "",
        "| cell | level | body size | requests | p50 | p99 |",
        "| :--- | ---: | :--- | ---: | ---: | ---: |",
    ]
    for r in rows:
        cell = f"`{r['cell']}`" + (f" (run {r['run']})" if several else "")
        latency = f"{duration_text(r['p50_us'])} | {duration_text(r['p99_us'])}"
        lines.append(f"| {cell} | {r['level']} | {r['class']} | {r['requests']:,} | {latency} |")
    return lines + [""]
