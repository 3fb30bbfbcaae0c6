"""The report's files: the HTML page of one or more stored runs, and every chart as a PNG or SVG
file."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import TYPE_CHECKING, List, Optional, Sequence

from httpbench.errors import Error
from httpbench.results.model import RunResults

# The charts (Altair, vl-convert) are imported where a chart is drawn, not with the package:
# `show`, `export`, `compare` and `runs` read the report's summary and tables, and importing Altair
# would cost each of them more than half of its start-up.
if TYPE_CHECKING:
    from httpbench.report.charts import Chart, Choices

FORMATS = ("png", "svg")


class NothingToChart(Error):
    """The runs have no measured round: one line saying so."""


def _require_rounds(runs: Sequence[RunResults]) -> None:
    if not any(r.measured for r in runs):
        ids = ", ".join(str(r.id) for r in runs)
        failed = sum(len(r.failed) for r in runs)
        why = f"its {failed} cell(s) failed before measuring" if failed else "no round was stored"
        raise NothingToChart(
            f"run {ids} has nothing to chart: {why}; 'httpbench show {runs[0].id}' prints what is stored"
        )


@functools.lru_cache(maxsize=1)
def _vega_bundle() -> str:
    import vl_convert

    # Vega, Vega-Lite and vega-embed in one script, inlined so the page opens offline.
    return vl_convert.javascript_bundle()


def html(runs: Sequence[RunResults], choices: Optional[Choices] = None) -> str:
    from httpbench.report import page
    from httpbench.report.charts import Choices, Measured, every_chart

    _require_rounds(runs)
    measured = Measured(runs, choices or Choices())
    return page.render(measured, every_chart(measured), _vega_bundle())


def write_html(runs: Sequence[RunResults], path: Path, choices: Optional[Choices] = None) -> Path:
    text = html(runs, choices)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def write_charts(
    runs: Sequence[RunResults], directory: Path, fmt: str, choices: Optional[Choices] = None
) -> List[Path]:
    """Every chart as `<name>.png` or `<name>.svg` in `directory`."""
    import vl_convert

    from httpbench.report.charts import Choices, all_charts, vega

    if fmt not in FORMATS:
        raise Error(f"unknown chart format {fmt!r}: choose {' or '.join(FORMATS)}")
    _require_rounds(runs)
    drawn = all_charts(runs, choices or Choices())  # refuses bad choices before anything is written
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for chart in drawn:
        spec = vega(chart_spec(chart))
        path = directory / f"{chart.name}.{fmt}"
        if fmt == "png":
            path.write_bytes(vl_convert.vega_to_png(spec, scale=2))
        else:
            path.write_text(vl_convert.vega_to_svg(spec), encoding="utf-8")
        written.append(path)
    return written


def chart_spec(chart: Chart) -> dict:
    """The Vega-Lite spec of a chart's files, with its title on it (the page gives it its own)."""
    spec = chart.vega_lite
    return {
        **spec,
        "title": {"text": chart.title, "anchor": "start", "fontSize": 15},
        "config": {**spec.get("config", {}), "background": "white"},
    }
