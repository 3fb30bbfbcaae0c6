"""Every chart of a report, as Altair specs: the same spec becomes an interactive chart in the
HTML page and a PNG or SVG file. The charts are in `lines` (against concurrency, over a level)
and `bars` (a bar per cell); `marks` holds what they are drawn from and with.

Honesty rules kept for every chart: a quantity axis (requests/s, latency, CPU, memory,
time, rating) always starts at 0 (`quantity`), a flagged level (the client set the pace, the
rounds disagree...) or a cell lacking levels is outlined in black wherever it is drawn (a ringed
dot, an outlined bar) and says why on hover, and clicking a legend entry hides that series,
every mark of it.
"""

from __future__ import annotations

from typing import Callable, List, Sequence

import vl_convert

from httpbench.report import attack_charts, codings
from httpbench.report.bars import differences, end_memory, rating, ratings, rps_bars, total_time
from httpbench.report.capacity_charts import capacity_bars, latency_by_rate
from httpbench.report.h2_bars import http1_beside, streams
from httpbench.report.lines import latency, server_cpu, server_memory, spectrum, throughput, timeline
from httpbench.report.marks import FLAG_OUTLINE, HIDDEN, Chart, Choices, Measured
from httpbench.report.operations_charts import events_timeline
from httpbench.report.php_lines import php_cpu_per_page, php_memory
from httpbench.report.size_classes import latency_by_size
from httpbench.report.tls_bars import handshakes, share
from httpbench.results.model import RunResults

__all__ = [
    "FLAG_OUTLINE",
    "HIDDEN",
    "Chart",
    "Choices",
    "Measured",
    "LegendToggleLost",
    "all_charts",
    "charts_of",
    "every_chart",
    "ratings",
    "vega",
]

BUILDERS: Sequence[Callable[[Measured], Chart]] = (
    capacity_bars,
    latency_by_rate,
    throughput,
    latency,
    server_cpu,
    server_memory,
    rps_bars,
    total_time,
    end_memory,
    rating,
    differences,
    share,
    handshakes,
    streams,
    http1_beside,
    php_memory,
    php_cpu_per_page,
    latency_by_size,
    codings.chart,
    spectrum,
    timeline,
    events_timeline,
    attack_charts.slow_share,
    attack_charts.slow_p99,
    attack_charts.slow_states,
    attack_charts.slow_cut,
    attack_charts.idle_memory,
)


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
                update["opacity"] = [
                    {**faded, "test": f'length(data("{store}")) && ({shown["test"]})'},
                    {k: v for k, v in shown.items() if k != "test"},
                ]
                faded_parts.append(part)
    clicked = [s for s in compiled.get("signals", []) if s["name"] == f"{HIDDEN}_series_legend"]
    for signal in clicked:  # the clicked entry's value, null for none
        signal["on"].append({"events": [{"source": "view", "type": "dblclick"}], "update": "null", "force": True})
    lost = [f"the opacity rule of the legend's {part}" for part in ("symbols", "labels") if part not in faded_parts] + (
        [] if clicked else [f"the signal {HIDDEN}_series_legend"]
    )
    if lost:
        raise LegendToggleLost(
            f"vl-convert {vl_convert.__version__} compiled the legend selection "
            f"{HIDDEN!r} without {' or '.join(lost)}: charts.vega must be updated for it"
        )
    return compiled
