"""What every chart of a report is drawn from and with: the runs' rows (`Measured`), the
reader's `Choices`, and the marks and encodings that keep the honesty rules (report.charts):
quantity axes from 0, flagged rows outlined in black with their reasons, a legend that hides a
series' every mark.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence

import altair as alt

from httpbench.errors import Error
from httpbench.results.comparison import Group, groups
from httpbench.results.model import CellResult, LevelResult, RunResults

WIDTH, HEIGHT = 380, 240
WIDE = 760
MIB = 2**20
# Black is in no series palette (tableau10/20), so the outline shows on every series' colour,
# where a red one vanished on the red series.
FLAG_OUTLINE = "black"
# The legend selection: the series a reader clicked away. Vega-Lite keeps its tuples in a
# dataset named after it.
HIDDEN = "hidden"


@dataclass(frozen=True)
class Choices:
    """What a reader picks: the baseline of the ratings (a server, or server/profile) and the
    level whose latency spectrum and timeline are drawn (None: each series' highest)."""

    baseline: Optional[str] = None
    level: Optional[int] = None


@dataclass(frozen=True)
class Chart:
    name: str  # file name of its PNG/SVG and anchor in the page
    title: str
    spec: alt.TopLevelMixin
    note: str = ""  # one sentence under the chart: how to read it
    missing: str = ""  # with nothing to draw, why, where a reader would look for the chart

    @functools.cached_property
    def vega_lite(self) -> dict:
        """The spec as Vega-Lite JSON, made once (Altair validates the whole spec on every
        to_dict()): whether the chart is drawn and what the page and the files draw read this.
        Not to be changed: copy what is changed."""
        return self.spec.to_dict()

    @property
    def drawn(self) -> bool:
        data = self.vega_lite.get("data") or {}
        return bool(data.get("values"))


class Measured:
    """The runs being reported, flattened into the rows charts are drawn from."""

    def __init__(self, runs: Sequence[RunResults], choices: Choices) -> None:
        self.runs = list(runs)
        self.choices = choices
        measured = [c for r in self.runs for c in r.measured]
        several = len(self.runs) > 1
        self.label: Dict[int, str] = {id(c): c.series + (f" (run {c.run_id})" if several else "") for c in measured}
        self.series = list(dict.fromkeys(self.label[id(c)] for c in measured))
        # A capacity cell's levels are the rates its search chose: drawn by the capacity charts
        # only, never as levels beside other cells'.
        self.cells: List[CellResult] = [c for c in measured if c.capacity is None]
        self.groups: List[Group] = groups(self.cells)
        self.searched: List[Group] = groups([c for c in measured if c.capacity is not None])
        self._check()

    def _check(self) -> None:
        """A baseline or level the runs do not have would silently drop charts: refuse it."""
        choices = self.choices
        runs = f"run{'s' if len(self.runs) > 1 else ''} {', '.join(str(r.id) for r in self.runs)}"
        if choices.baseline is not None and not any(choices.baseline in self._names(c) for c in self.cells):
            names = dict.fromkeys(name for c in self.cells for name in self._names(c))
            raise Error(f"--baseline {choices.baseline} is not a server of {runs}: choose one of {', '.join(names)}")
        if choices.level is not None and not any(choices.level in c.level_numbers for c in self.cells):
            levels = sorted({n for c in self.cells for n in c.level_numbers})
            raise Error(
                f"--level {choices.level} was not measured in {runs}: choose one of {', '.join(map(str, levels))}"
            )

    def _names(self, cell: CellResult) -> tuple:
        """What a baseline may be given as: the server, server/profile, or the legend's label."""
        return tuple(dict.fromkeys((cell.server, cell.series, self.series_of(cell))))

    def series_of(self, cell: CellResult) -> str:
        return self.label[id(cell)]

    def color(self) -> alt.Color:
        # Ten colours repeat beyond ten series; twenty keep every server apart.
        scheme = "tableau10" if len(self.series) <= 10 else "tableau20"
        return alt.Color(
            "series:N",
            title="server/profile",
            scale=alt.Scale(domain=self.series, scheme=scheme),
            legend=alt.Legend(orient="bottom", columns=4, symbolOpacity=1),
        )

    def level_rows(self) -> List[dict]:
        rows = []
        for cell in self.cells:
            for lv in cell.levels:
                rows.append(
                    {
                        "series": self.series_of(cell),
                        "cpus": f"{cell.cpus} CPU",
                        "context": panel_context(cell),
                        "level": lv.level,
                        "rps": lv.rps.mean,
                        "rps_min": lv.rps.min,
                        "rps_max": lv.rps.max,
                        "rounds": lv.rps.n,
                        "p50_ms": _ms(lv.latency.p50_us),
                        "p99_ms": _ms(lv.latency.p99_us),
                        "cpu_user": lv.server_cpu_user,
                        "cpu_sys": lv.server_cpu_sys,
                        "memory_mib": lv.server_memory_bytes / MIB if lv.server_memory_bytes else None,
                        "errors": lv.errors,
                        **flagged(lv.flags),
                    }
                )
        return rows

    @property
    def wanted_baseline(self) -> Optional[str]:
        """The baseline asked for: the chosen one, else the plan's."""
        return self.choices.baseline or next((r.baseline for r in self.runs if r.baseline), None)

    def baseline_of(self, group: Group) -> CellResult:
        """The group's cell the ratings are relative to: the wanted one, else the first finished
        one (the wanted one measured nothing in this group or did not finish, or none was asked
        for). A cell that did not finish is no 100 to rate others by."""
        wanted = self.wanted_baseline
        rated = self.rated(group)
        return next((cell for cell in rated if wanted and wanted in self._names(cell)), rated[0])

    def baseline_fallbacks(self) -> List[str]:
        """A sentence for each rated group the wanted baseline has no finished cell in, naming
        the cell that stands in for it, so a reader does not take one for the other."""
        wanted = self.wanted_baseline
        if not wanted:
            return []
        sentences = []
        for group in self.rated_groups:
            base = self.baseline_of(group)
            if wanted not in self._names(base):
                unfinished = any(wanted in self._names(c) for c in group.cells)
                sentences.append(
                    f"{wanted} {'did not finish' if unfinished else 'has no measured cell'} in "
                    f"{group.name}, so that group's baseline is its first finished cell, "
                    f"{self.series_of(base)}."
                )
        return sentences

    def rated(self, group: Group) -> List[CellResult]:
        """The cells of `group` ratings and differences show: the finished ones (a cell whose
        server died, say, is no result to set beside the others)."""
        return [cell for cell in group.cells if cell.finished]

    def left_out(self) -> List[str]:
        """A sentence naming the cells that ratings leave out, as they did not finish (a group
        left with one cell is not rated at all)."""
        names = [
            f"{self.series_of(c)} ({group.name})"
            for group in self.groups
            if len(group.cells) > 1
            for c in group.cells
            if not c.finished
        ]
        return [f"Left out, as their cells did not finish: {', '.join(names)}."] if names else []

    @property
    def baseline_label(self) -> str:
        """What ratings and differences are relative to, as their titles say it."""
        names = list(dict.fromkeys(self.series_of(self.baseline_of(group)) for group in self.rated_groups))
        return names[0] if len(names) == 1 else f"each group's baseline ({', '.join(names)})"

    @property
    def rated_groups(self) -> List[Group]:
        """The groups with something to rate: two finished cells or more (alone, a cell rates 100)."""
        return [group for group in self.groups if len(self.rated(group)) > 1]

    def chosen_level(self, cell: CellResult) -> Optional[LevelResult]:
        if self.choices.level is None:
            return cell.levels[-1] if cell.levels else None
        return next((lv for lv in cell.levels if lv.level == self.choices.level), None)


def panel_context(cell: CellResult) -> str:
    """A cell's group without its CPU count: panels are per CPU count within it. Its protocol is
    part of it, so a server's http and https levels are never one line."""
    parts = [cell.workload, *cell.connection]
    return ", ".join(parts + ([cell.budget] if cell.budget else []))


def _ms(us: Optional[float]) -> Optional[float]:
    return None if us is None else us / 1000


def flagged(flags: Dict[str, str]) -> dict:
    """A row's flag fields: whether to mark it, and the reasons its tooltip gives."""
    return {"flagged": bool(flags), "flags": "; ".join(f"{kind}: {reason}" for kind, reason in sorted(flags.items()))}


def panel_width(rows: List[dict], panel_field: str) -> int:
    """A chart with one panel gets the page's width; several share it."""
    return WIDE if len({r[panel_field] for r in rows}) <= 1 else WIDTH


def in_panels(chart: alt.TopLevelMixin, rows: List[dict]) -> alt.FacetChart:
    """`chart` drawn a panel per row's group, two panels a row."""
    return chart.properties(width=panel_width(rows, "group"), height=HEIGHT).facet(
        facet=alt.Facet("group:N", title=None), columns=2
    )


def quantity(field: str, title: str, **kwargs) -> alt.Y:
    """The y encoding of a quantity: its axis starts at 0, always (readers' first complaint)."""
    return alt.Y(field, title=title, scale=alt.Scale(zero=True), **kwargs)


def legend_toggle():
    """The series hidden from a chart: clicking a legend entry hides that series, shift-click
    hides more, double-click shows them all again (an empty selection hides nothing)."""
    return alt.selection_point(fields=["series"], bind="legend", name=HIDDEN)


def unless_hidden(hidden, opacity: float = 1.0) -> alt.OpacityValue:
    """Every mark of a series follows this, so a hidden series leaves nothing behind."""
    return alt.condition(hidden, alt.value(0.0), alt.value(opacity), empty=False)


def outlined_if_flagged() -> dict:
    """The encoding of the flag's outline on a flagged row's bar or dot."""
    return dict(
        stroke=alt.condition("datum.flagged", alt.value(FLAG_OUTLINE), alt.value(None)), strokeWidth=alt.value(2)
    )


def dots(base: alt.Chart, y: str, hidden, tooltip: Sequence[alt.Tooltip]) -> alt.Chart:
    """A dot per row in its series' colour with the row's values on hover; a flagged row's dot
    is larger and ringed in black, with the reasons. Every row gets one, not the flagged ones
    only: a layer left without data gives its scales an empty extent, which Vega warns about."""
    return base.mark_point(filled=True).encode(
        y=alt.Y(y),
        opacity=unless_hidden(hidden),
        size=alt.condition("datum.flagged", alt.value(130), alt.value(36)),
        tooltip=list(tooltip),
        **outlined_if_flagged(),
    )
